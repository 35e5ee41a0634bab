//! A small Redis client over tokio: a few connections to one server
//! (`redis://` plain, `rediss://` through rustls with the same roots as
//! every server the gateway reaches), each authenticated and on its
//! database as soon as it opens, used for one round trip at a time
//! (commands that go together are pipelined), and opened again on the
//! next use once it broke: the client reconnects by itself.
//!
//! Why not a client crate: the one well-kept async client brings the URL
//! crate's internationalised-domain stack and some twenty other crates for
//! the five commands the gateway sends; RESP2 is a page of code
//! (`resp`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::resp::{self, Reply};

/// How long opening a connection (TCP, TLS, authentication) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one round trip may take before the store counts as
/// unreachable.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections kept to the store.
const POOL: usize = 4;

/// Where the store is: `redis://[USER:PASS@]HOST:PORT/DB`, or `rediss://`
/// for TLS.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) tls: bool,
    user: Option<String>,
    password: Option<String>,
    pub(crate) db: u32,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_string())
    }
}

/// The URL without its credentials (for logs and errors).
impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "rediss" } else { "redis" };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(f, "{scheme}://{host}:{}/{}", self.port, self.db)
    }
}

impl Target {
    /// Reads `url`.
    ///
    /// # Errors
    /// A sentence saying what is wrong and what is expected.
    pub(crate) fn parse(url: &str) -> Result<Target, String> {
        let expected = "expected redis://[USER:PASS@]HOST:PORT/DB or rediss://…";
        let (tls, rest) = if let Some(rest) = url.strip_prefix("redis://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("rediss://") {
            (true, rest)
        } else {
            return Err(format!(
                "the store's URL must start with redis:// or rediss:// ({expected})"
            ));
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((userinfo, hostport)) => (Some(userinfo), hostport),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(info) => {
                let (user, password) = info.split_once(':').unwrap_or(("", info));
                let user = percent_decode(user)?;
                let password = percent_decode(password)?;
                ((!user.is_empty()).then_some(user), Some(password))
            }
        };
        let (host, port) = if let Some(bracketed) = hostport.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| format!("an unclosed [ in the store's host ({expected})"))?;
            (host, after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (hostport, None),
            }
        };
        if host.is_empty() {
            return Err(format!("the store's URL names no host ({expected})"));
        }
        let port = match port {
            None | Some("") => 6379,
            Some(port) => port
                .parse()
                .map_err(|_| format!("the store's port {port:?} is not a port number"))?,
        };
        let db = match path.trim_end_matches('/') {
            "" => 0,
            db => db
                .parse()
                .map_err(|_| format!("the store's database {db:?} is not a number ({expected})"))?,
        };
        Ok(Target {
            host: host.to_owned(),
            port,
            tls,
            user,
            password,
            db,
        })
    }
}

/// `text` with its `%XX` escapes decoded.
fn percent_decode(text: &str) -> Result<String, String> {
    switchboard_wire::percent::decode(text).ok_or_else(|| {
        "a bad %-escape, or credentials that are not UTF-8, in the store's URL: write each special character of the user and password as %XX (e.g. @ as %40)".to_owned()
    })
}

/// Why a round trip with the store failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StoreError {
    /// The connection could not be opened, or broke.
    #[error("{0}")]
    Io(String),
    /// The store did not answer in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The store refused the connection's set-up (authentication, the
    /// database) or spoke something else than RESP.
    #[error("{0}")]
    Refused(String),
}

/// One connection's stream, plain or TLS.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// One open connection and the bytes read past the last reply.
struct Conn {
    io: Box<dyn Io>,
    read: Vec<u8>,
}

impl Conn {
    /// Opens a connection to `target`, authenticated and on its database
    /// (one pipelined round trip).
    async fn open(
        target: &Target,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> Result<Conn, StoreError> {
        let tcp = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
            .await
            .map_err(|e| StoreError::Io(format!("cannot connect: {e}")))?;
        let _ = tcp.set_nodelay(true);
        let io: Box<dyn Io> = match tls {
            None => Box::new(tcp),
            Some(config) => {
                let name = rustls::pki_types::ServerName::try_from(target.host.clone())
                    .map_err(|e| StoreError::Refused(format!("{}: {e}", target.host)))?;
                let stream = tokio_rustls::TlsConnector::from(config.clone())
                    .connect(name, tcp)
                    .await
                    .map_err(|e| StoreError::Io(format!("TLS: {e}")))?;
                Box::new(stream)
            }
        };
        let mut conn = Conn {
            io,
            read: Vec::new(),
        };
        let mut setup: Vec<Vec<&[u8]>> = Vec::new();
        if let Some(password) = &target.password {
            let mut auth: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(user) = &target.user {
                auth.push(user.as_bytes());
            }
            auth.push(password.as_bytes());
            setup.push(auth);
        }
        let db = target.db.to_string();
        if target.db != 0 {
            setup.push(vec![b"SELECT", db.as_bytes()]);
        }
        if !setup.is_empty() {
            for reply in conn.round_trip(&setup).await? {
                if let Reply::Error(e) = reply {
                    return Err(StoreError::Refused(e));
                }
            }
        }
        Ok(conn)
    }

    /// Sends `commands` at once and reads their replies, in order.
    async fn round_trip(&mut self, commands: &[Vec<&[u8]>]) -> Result<Vec<Reply>, StoreError> {
        let mut out = Vec::new();
        for command in commands {
            resp::encode(command, &mut out);
        }
        let broke = |e: std::io::Error| StoreError::Io(format!("the connection broke: {e}"));
        self.io.write_all(&out).await.map_err(broke)?;
        self.io.flush().await.map_err(broke)?;
        let mut replies = Vec::with_capacity(commands.len());
        while replies.len() < commands.len() {
            match resp::parse(&self.read).map_err(|e| StoreError::Refused(e.to_string()))? {
                Some((reply, used)) => {
                    self.read.drain(..used);
                    replies.push(reply);
                }
                None => {
                    let mut chunk = [0u8; 4096];
                    let n = self.io.read(&mut chunk).await.map_err(broke)?;
                    if n == 0 {
                        return Err(StoreError::Io("the store closed the connection".into()));
                    }
                    self.read.extend_from_slice(&chunk[..n]);
                }
            }
        }
        Ok(replies)
    }
}

/// A few connections to one store, opened when needed.
pub(crate) struct Client {
    target: Target,
    tls: Option<Arc<rustls::ClientConfig>>,
    slots: Vec<tokio::sync::Mutex<Option<Conn>>>,
    next: AtomicUsize,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client of `target` (nothing is opened yet); a `rediss://` one
    /// verifies the store with `tls`, else as every server the gateway
    /// reaches.
    ///
    /// # Errors
    /// A sentence when `rediss://` is asked for and TLS cannot be set up.
    pub(crate) fn new(
        target: Target,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<Client, String> {
        let tls = match (target.tls, tls) {
            (false, _) => None,
            (true, Some(tls)) => Some(tls),
            (true, None) => Some(switchboard_client::default_tls()?),
        };
        Ok(Client {
            target,
            tls,
            slots: (0..POOL).map(|_| tokio::sync::Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
        })
    }

    /// Where the store is.
    pub(crate) fn target(&self) -> &Target {
        &self.target
    }

    /// Sends `commands` in one round trip on a free connection, and
    /// returns their replies (a command's error reply among them). A
    /// connection found broken when used is opened again once: a store
    /// that restarted is reached on the first try. A command retried so
    /// may have run before the break; the store's commands are written so
    /// that running one twice only ever refuses more.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be reached or answers nothing
    /// in time.
    pub(crate) async fn run(&self, commands: &[Vec<&[u8]>]) -> Result<Vec<Reply>, StoreError> {
        let mut slot = self.slot().await;
        for _ in 0..2 {
            let fresh = slot.is_none();
            let conn = match slot.as_mut() {
                Some(conn) => conn,
                None => {
                    let opened = tokio::time::timeout(
                        CONNECT_TIMEOUT,
                        Conn::open(&self.target, self.tls.as_ref()),
                    )
                    .await
                    .map_err(|_| StoreError::Timeout(CONNECT_TIMEOUT))??;
                    slot.insert(opened)
                }
            };
            match tokio::time::timeout(COMMAND_TIMEOUT, conn.round_trip(commands)).await {
                Ok(Ok(replies)) => return Ok(replies),
                Ok(Err(e)) => {
                    *slot = None;
                    if fresh || !matches!(e, StoreError::Io(_)) {
                        return Err(e);
                    }
                }
                Err(_) => {
                    // Half a reply may still come: the connection is spent.
                    *slot = None;
                    return Err(StoreError::Timeout(COMMAND_TIMEOUT));
                }
            }
        }
        Err(StoreError::Io("the connection broke twice".into()))
    }

    /// A free connection slot, else the next one in turn once it frees.
    async fn slot(&self) -> tokio::sync::MutexGuard<'_, Option<Conn>> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for i in 0..self.slots.len() {
            if let Ok(slot) = self.slots[(start + i) % self.slots.len()].try_lock() {
                return slot;
            }
        }
        self.slots[start % self.slots.len()].lock().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_read_with_their_defaults_and_credentials() {
        let t = Target::parse("redis://localhost").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.db, t.tls),
            ("localhost", 6379, 0, false)
        );
        assert_eq!((t.user, t.password), (None, None));
        let t = Target::parse("rediss://gw:p%40ss%3Aw@10.0.0.5:6380/3").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.db, t.tls),
            ("10.0.0.5", 6380, 3, true)
        );
        assert_eq!(t.user.as_deref(), Some("gw"));
        assert_eq!(t.password.as_deref(), Some("p@ss:w"));
        // The password alone (the `default` user), and an IPv6 host.
        let t = Target::parse("redis://:secret@[::1]:7000/").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.db), ("::1", 7000, 0));
        assert_eq!(
            (t.user.as_deref(), t.password.as_deref()),
            (None, Some("secret"))
        );
        // Credentials never show.
        assert_eq!(t.to_string(), "redis://[::1]:7000/0");
        assert!(!format!("{t:?}").contains("secret"));
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        for (url, says) in [
            ("http://localhost", "must start with redis://"),
            ("redis://:6379", "no host"),
            ("redis://h:port", "not a port number"),
            ("redis://h:1/db", "not a number"),
            ("redis://u:%zz@h", "%-escape"),
        ] {
            let e = Target::parse(url).unwrap_err();
            assert!(e.contains(says), "{url}: {e}");
        }
    }
}
