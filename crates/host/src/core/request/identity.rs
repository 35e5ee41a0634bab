//! Each caller's identity at a server (`"identity": "exchange"` or
//! `"per-principal"`): the call goes over a connection of its own for that
//! (server, identity), never over the gateway's mount connection nor over
//! another caller's.
//!
//! - **exchange**: the caller's access token (as the gateway received it)
//!   is exchanged (RFC 8693) at the server's authorization server, by the
//!   server's OAuth client authenticated as the gateway's registered
//!   client, for a token for the same user whose audience is the server.
//!   The caller's own token never reaches the server.
//! - **per-principal**: the principal's `credentials` entry for the server
//!   (a secret reference) is its bearer token; without one, the OAuth login
//!   kept for the principal at the server (`switchboard auth login ALIAS
//!   --principal NAME`) is used, refreshed like any login; a principal with
//!   neither is refused with what to run or add.
//!
//! The connections (each holding its token) are kept per server in an
//! [`IdentityLinks`] pool keyed by the identity, reused until the token is
//! about to expire, dropped after [`IDENTITY_IDLE`] unused or when the
//! server refuses the token, and bounded by [`MAX_IDENTITY_LINKS`] (the
//! least recently used goes first).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::CallOptions;
use super::outcome::End;
use crate::audit::Outcome;
use crate::config::{Identity, OAuthSetting, TransportConfig};
use crate::connect;
use crate::core::Host;
use crate::secret::{ConfigValue, Secret};
use crate::upstream::{Link, Upstream};

/// Connections kept per server, one per identity; the least recently used
/// is closed to make room.
pub(crate) const MAX_IDENTITY_LINKS: usize = 256;
/// An identity's connection unused this long is closed.
pub(crate) const IDENTITY_IDLE: Duration = Duration::from_secs(600);
/// A token this close to its expiry is exchanged again first.
const EXPIRY_SKEW_SECS: u64 = 30;

/// One server's connections, by identity label (`exchange:alice`,
/// `principal:alice`).
pub(crate) struct IdentityLinks<T = Link> {
    links: Mutex<HashMap<String, Pooled<T>>>,
}

impl<T> Default for IdentityLinks<T> {
    fn default() -> Self {
        IdentityLinks {
            links: Mutex::new(HashMap::new()),
        }
    }
}

/// What the pool keeps: a connection that can tell it is gone.
pub(crate) trait Pooling: Clone {
    /// Whether the connection is known to be gone.
    fn is_dead(&self) -> bool;
}

impl Pooling for Link {
    fn is_dead(&self) -> bool {
        Link::is_dead(self)
    }
}

impl<T> std::fmt::Debug for IdentityLinks<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.links.lock().map_or(0, |l| l.len());
        f.debug_struct("IdentityLinks")
            .field("count", &count)
            .finish()
    }
}

/// A connection carrying one identity's token.
struct Pooled<T> {
    link: T,
    /// When its token expires (seconds since the epoch), if known.
    expires_at: Option<u64>,
    last_used: Instant,
}

impl<T: Pooling> IdentityLinks<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pooled<T>>> {
        switchboard_wire::shared::lock(&self.links)
    }

    /// The live connection of `label`, unless its token is about to
    /// expire; idle ones are closed on the way.
    fn get(&self, label: &str, now: Instant) -> Option<T> {
        let mut links = self.lock();
        links.retain(|_, p| now.duration_since(p.last_used) < IDENTITY_IDLE);
        let pooled = links.get_mut(label)?;
        let fresh = pooled
            .expires_at
            .is_none_or(|exp| exp > switchboard_wire::shared::unix_secs() + EXPIRY_SKEW_SECS);
        if !fresh || pooled.link.is_dead() {
            links.remove(label);
            return None;
        }
        pooled.last_used = now;
        Some(pooled.link.clone())
    }

    /// Keeps `link` for `label`, closing the least recently used one when
    /// the pool is full.
    fn put(&self, label: &str, link: T, expires_at: Option<u64>, now: Instant) {
        let mut links = self.lock();
        if links.len() >= MAX_IDENTITY_LINKS && !links.contains_key(label) {
            let oldest = links
                .iter()
                .min_by_key(|(_, p)| p.last_used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                links.remove(&oldest);
            }
        }
        links.insert(
            label.to_owned(),
            Pooled {
                link,
                expires_at,
                last_used: now,
            },
        );
    }

    /// Closes the connection of `label` (its token was refused).
    pub(crate) fn forget(&self, label: &str) {
        self.lock().remove(label);
    }

    /// How many connections are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

/// The identity a call of `principal` carries to `server`, as the audit
/// line names it (`exchange:alice`, `principal:alice`); `None` for the
/// gateway's own.
pub(crate) fn identity_label(server: &Upstream, principal: Option<&str>) -> Option<String> {
    let kind = match server.config.identity {
        Identity::Gateway => return None,
        Identity::Exchange => "exchange",
        Identity::PerPrincipal => "principal",
    };
    Some(format!("{kind}:{}", principal.unwrap_or("-")))
}

impl Host {
    /// The connection a call of `options`' caller goes over to `server`
    /// when the server carries each caller's identity: the pooled one of
    /// that identity, else a new one with a token made for it. The end is
    /// what the caller reads when there is no identity to carry.
    pub(super) async fn identity_link<T>(
        &self,
        server: &Upstream,
        gateway_link: Option<&Link>,
        options: &CallOptions,
    ) -> Result<(Link, String), End<T>> {
        let alias = server.alias();
        let identity = server.config.identity;
        let Some(principal) = options.principal.as_deref() else {
            return Err(End::stopped(
                Outcome::AuthRequired,
                format!(
                    "Server {alias} is reached with each caller's own identity ({}), and this call \
                     came without an authenticated caller. Call through a gateway with \
                     authentication (serve --auth oauth), or set the server's identity to \"gateway\".",
                    identity.as_str()
                ),
            ));
        };
        let label = identity_label(server, Some(principal)).unwrap_or_default();
        let now = Instant::now();
        if let Some(link) = server.identity_links.get(&label, now) {
            return Ok((link, label));
        }
        let (link, expires_at) = if identity == Identity::Exchange {
            let (token, expires_at) = self
                .exchanged_token(server, gateway_link, principal, options)
                .await?;
            (self.link_with_token(server, &token).await?, expires_at)
        } else {
            match self.principal_token(server, principal).await? {
                Some(token) => (self.link_with_token(server, &token).await?, None),
                // The login refreshes its own token: no expiry to watch.
                None => (self.principal_login_link(server, principal).await?, None),
            }
        };
        server
            .identity_links
            .put(&label, link.clone(), expires_at, now);
        Ok((link, label))
    }

    /// The caller's token exchanged at the server's authorization server
    /// for one for the same user at the server, and its expiry.
    async fn exchanged_token<T>(
        &self,
        server: &Upstream,
        gateway_link: Option<&Link>,
        principal: &str,
        options: &CallOptions,
    ) -> Result<(Secret, Option<u64>), End<T>> {
        let alias = server.alias();
        let Some(subject) = options.caller_token.as_ref() else {
            return Err(End::stopped(
                Outcome::AuthRequired,
                format!(
                    "Server {alias} takes each caller's identity by token exchange, and {principal} \
                     presented no OAuth access token to exchange (the gateway takes named tokens, or \
                     the call did not come over HTTP). Serve with --auth oauth, or set the server's \
                     identity to \"per-principal\"."
                ),
            ));
        };
        let Some(auth) = gateway_link.and_then(|l| l.auth.as_ref()) else {
            return Err(End::stopped(
                Outcome::AuthRequired,
                format!(
                    "Server {alias} takes each caller's identity by token exchange, but the gateway \
                     has no OAuth client for it (the server did not ask for OAuth when it was \
                     mounted), so there is no authorization server to exchange {principal}'s token at."
                ),
            ));
        };
        let scopes = match &server.config.oauth {
            OAuthSetting::Client(c) => c.scopes.clone(),
            _ => Vec::new(),
        };
        match auth.exchange_for_subject(subject, &scopes).await {
            Ok(tokens) => Ok((tokens.access_token, tokens.expires_at)),
            Err(e) => Err(End::stopped(
                Outcome::AuthRequired,
                format!(
                    "The authorization server of {alias} refused to exchange {principal}'s token for \
                     one at {alias} ({e}), so the call did not run. Tell the user; do not retry."
                ),
            )),
        }
    }

    /// The bearer token of `principal`'s `credentials` entry for the
    /// server; `None` when the config has none (the principal's OAuth
    /// login is then looked for).
    async fn principal_token<T>(
        &self,
        server: &Upstream,
        principal: &str,
    ) -> Result<Option<Secret>, End<T>> {
        let alias = server.alias();
        let value: Option<ConfigValue> = self
            .config_read()
            .principal_credentials
            .get(principal)
            .and_then(|c| c.get(alias))
            .cloned();
        let Some(value) = value else {
            return Ok(None);
        };
        let key = format!("principals.{principal}.credentials.{alias}");
        value.resolve().await.map(Some).map_err(|e| {
            End::stopped(
                Outcome::AuthRequired,
                format!(
                    "The credentials of principal {principal} for {alias} cannot be read ({}), \
                     so the call did not run.",
                    e.within(&key)
                ),
            )
        })
    }

    /// A new connection to `server` with the OAuth login kept for
    /// `principal` (`switchboard auth login ALIAS --principal NAME`), or the
    /// refusal naming the command to run (or the credentials to add).
    async fn principal_login_link<T>(
        &self,
        server: &Upstream,
        principal: &str,
    ) -> Result<Link, End<T>> {
        let alias = server.alias();
        let needs_login = |why: &str| {
            End::stopped(
                Outcome::AuthRequired,
                format!(
                    "needs login: principal {principal} has no credentials for {alias}{why}: run \
                     `{}` (an OAuth login kept for {principal}), or add \
                     principals.{principal}.credentials.{alias} (e.g. {{\"secret\": \"file:PATH\"}}) \
                     to the gateway's config. The call did not run; do not retry before then.",
                    crate::auth::principal_login_command(alias, principal)
                ),
            )
        };
        let Some(store) = self.inner.connect.token_store.clone() else {
            return Err(needs_login(" (and the gateway keeps no OAuth logins)"));
        };
        let Ok(oauth) = crate::auth::oauth_config(&server.config) else {
            return Err(needs_login(""));
        };
        let login =
            match switchboard_oauth::OAuthProvider::new(oauth.principal(principal).store(store)) {
                Ok(held) => held.status().await.ok().flatten(),
                Err(_) => None,
            };
        if login.is_none() {
            return Err(needs_login(""));
        }
        let mut options = self.inner.connect.clone();
        options.principal = Some(principal.to_owned());
        let fail = |e: String| {
            End::stopped(
                Outcome::Transport,
                format!("Server {alias} could not be reached for principal {principal}: {e}"),
            )
        };
        let opened = connect::try_open(&server.config, &options)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let auth = opened.auth.clone();
        let client = self
            .identity_client(server, opened.builder)
            .await
            .map_err(|e| {
                if e.is_auth_failure() {
                    needs_login(" that the server still takes (the login expired or was revoked)")
                } else {
                    fail(crate::upstream::describe(&e))
                }
            })?;
        Ok(Link {
            client,
            stdio: None,
            auth,
        })
    }

    /// The client of a connection made for one caller's identity, with the
    /// server's deadlines, connected.
    async fn identity_client(
        &self,
        server: &Upstream,
        builder: switchboard_client::ClientBuilder,
    ) -> Result<switchboard_client::Client, switchboard_client::ClientError> {
        builder
            .timeout(server.default_call_timeout)
            .probe_timeout(server.startup_timeout)
            .tasks(true)
            .task_timeout(
                server
                    .config
                    .task_timeout
                    .unwrap_or(crate::config::DEFAULT_TASK_TIMEOUT),
            )
            .connect()
            .await
    }

    /// A new connection to `server` sending `token` as its bearer token,
    /// with OAuth off (the token is all it has).
    async fn link_with_token<T>(&self, server: &Upstream, token: &Secret) -> Result<Link, End<T>> {
        let alias = server.alias();
        let mut config = server.config.clone();
        config.oauth = OAuthSetting::Off;
        if let TransportConfig::Http { headers, .. } | TransportConfig::Sse { headers, .. } =
            &mut config.transport
        {
            headers.retain(|k, _| !k.eq_ignore_ascii_case("authorization"));
            headers.insert(
                "Authorization".into(),
                ConfigValue::Plain(Secret::new(format!("Bearer {}", token.expose()))),
            );
        }
        let fail = |e: String| {
            End::stopped(
                Outcome::Transport,
                format!("Server {alias} could not be reached for this caller: {e}"),
            )
        };
        let opened = connect::try_open(&config, &self.inner.connect)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let client = self
            .identity_client(server, opened.builder)
            .await
            .map_err(|e| {
                let outcome = if e.is_auth_failure() {
                    Outcome::AuthRequired
                } else {
                    Outcome::Transport
                };
                End::stopped(
                    outcome,
                    format!(
                        "Server {alias} refused the connection made for this caller: {}",
                        crate::upstream::describe(&e)
                    ),
                )
            })?;
        Ok(Link {
            client,
            stdio: None,
            auth: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Fake(&'static str, bool);

    impl Pooling for Fake {
        fn is_dead(&self) -> bool {
            self.1
        }
    }

    // One identity's connection is reused; another identity's is never
    // handed out for it; idle and expiring ones are closed; the pool is
    // bounded, the least recently used going first.
    #[tokio::test(start_paused = true)]
    async fn pool_keys_by_identity_and_evicts() {
        let pool: IdentityLinks<Fake> = IdentityLinks::default();
        let t0 = Instant::now();
        pool.put("exchange:alice", Fake("alice", false), None, t0);
        assert_eq!(pool.get("exchange:alice", t0), Some(Fake("alice", false)));
        assert_eq!(pool.get("exchange:bob", t0), None);
        // A token about to expire is not reused.
        pool.put(
            "exchange:bob",
            Fake("bob", false),
            Some(switchboard_wire::shared::unix_secs() + 5),
            t0,
        );
        assert_eq!(pool.get("exchange:bob", t0), None);
        // A dead connection is dropped.
        pool.put("principal:carol", Fake("carol", true), None, t0);
        assert_eq!(pool.get("principal:carol", t0), None);
        // Idle past the limit: closed.
        let later = t0 + IDENTITY_IDLE + Duration::from_secs(1);
        assert_eq!(pool.get("exchange:alice", later), None);
        assert_eq!(pool.len(), 0);
        // Bounded: the least recently used goes.
        for i in 0..MAX_IDENTITY_LINKS {
            let at = t0 + Duration::from_millis(u64::try_from(i).unwrap_or(0));
            pool.put(&format!("principal:p{i}"), Fake("p", false), None, at);
        }
        let end = t0 + Duration::from_secs(1);
        pool.put("principal:new", Fake("new", false), None, end);
        assert_eq!(pool.len(), MAX_IDENTITY_LINKS);
        assert_eq!(pool.get("principal:p0", end), None);
        assert!(pool.get("principal:p1", end).is_some());
        pool.forget("principal:new");
        assert_eq!(pool.get("principal:new", end), None);
    }
}
