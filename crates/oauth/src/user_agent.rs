//! The user-agent step of the authorization code flow: take the
//! authorization URL somewhere a person (or a test double of one) can
//! approve it, and bring back the query parameters of the redirect.
//!
//! Two are provided:
//! - [`LoopbackUserAgent`], for people: listens on `127.0.0.1` on a random
//!   (or chosen) port, shows the URL, tries to open a browser, and waits for
//!   the redirect (RFC 8252 §7.3), with a timeout;
//! - [`HeadlessUserAgent`], for authorization servers that approve at once
//!   (conformance mocks, test servers, pre-approved clients): fetches the
//!   authorization URL without following the redirect and reads its
//!   `Location`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::error::OAuthError;
use super::http::OAuthHttp;
use super::uri::HttpUrl;
use switchboard_client::transport::BoxFuture;

/// An authorization request, ready to be shown to the user.
#[derive(Clone)]
pub struct AuthorizationRequest {
    /// The full authorization URL (carries `state` and the PKCE challenge).
    pub url: String,
    /// The `state` the response must carry; responses with another state
    /// are discarded (AUTH-C-15).
    pub state: String,
}

impl fmt::Debug for AuthorizationRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationRequest")
            .field("url", &super::http::shown(&self.url))
            .finish_non_exhaustive()
    }
}

/// The decoded query parameters of the redirect back to the client, in
/// order. `Debug` shows only their names (the code is a secret).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RedirectParams(Vec<(String, String)>);

impl RedirectParams {
    /// Parameters from decoded name/value pairs.
    pub fn new(pairs: Vec<(String, String)>) -> RedirectParams {
        RedirectParams(pairs)
    }

    /// Decodes an `application/x-www-form-urlencoded` query.
    pub fn from_query(query: &str) -> RedirectParams {
        RedirectParams(
            form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The value of `name`: `Ok(None)` when absent, an error when it
    /// appears more than once (RFC 6749 §3.1: parameters are never
    /// repeated; a repeated `iss` or `state` is an attack signal).
    pub fn single(&self, name: &str) -> Result<Option<&str>, String> {
        let mut found = self.0.iter().filter(|(k, _)| k == name);
        let first = found.next().map(|(_, v)| v.as_str());
        if found.next().is_some() {
            return Err(format!("the parameter {name:?} appears more than once"));
        }
        Ok(first)
    }
}

impl fmt::Debug for RedirectParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(k, _)| k))
            .finish()
    }
}

/// Turns an authorization URL into the parameters of the redirect.
pub trait UserAgent: Send + Sync + fmt::Debug {
    /// Gets ready to receive one redirect and says where it must go.
    /// `previous` is a redirect URI registered earlier for this client,
    /// which the agent reuses when it can (so a stored registration stays
    /// valid).
    fn begin<'a>(
        &'a self,
        previous: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Box<dyn PendingRedirect>, OAuthError>>;
}

/// A user agent ready for one authorization.
pub trait PendingRedirect: Send + fmt::Debug {
    /// The `redirect_uri` to register and send.
    fn redirect_uri(&self) -> &str;

    /// Shows the request to the user and waits for the redirect.
    fn complete(
        self: Box<Self>,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<RedirectParams, OAuthError>>;
}

/// Fetches the authorization URL and reads the redirect from `Location`,
/// without following it; for authorization servers that approve without a
/// person (the conformance suite's mocks, tests, pre-consented clients).
#[derive(Clone)]
pub struct HeadlessUserAgent {
    redirect_uri: String,
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: Duration,
}

impl fmt::Debug for HeadlessUserAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeadlessUserAgent")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl Default for HeadlessUserAgent {
    fn default() -> Self {
        HeadlessUserAgent::new()
    }
}

impl HeadlessUserAgent {
    /// Redirects to `http://127.0.0.1/callback` (never actually listened on).
    pub fn new() -> HeadlessUserAgent {
        HeadlessUserAgent {
            redirect_uri: "http://127.0.0.1/callback".into(),
            tls: None,
            timeout: Duration::from_secs(30),
        }
    }

    /// Uses `uri` as the redirect URI.
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> HeadlessUserAgent {
        self.redirect_uri = uri.into();
        self
    }

    /// Uses this TLS configuration for the authorization request.
    pub fn tls_config(mut self, config: Arc<rustls::ClientConfig>) -> HeadlessUserAgent {
        self.tls = Some(config);
        self
    }
}

impl UserAgent for HeadlessUserAgent {
    fn begin<'a>(
        &'a self,
        _previous: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Box<dyn PendingRedirect>, OAuthError>> {
        let pending = HeadlessPending {
            agent: self.clone(),
        };
        Box::pin(async move { Ok(Box::new(pending) as Box<dyn PendingRedirect>) })
    }
}

#[derive(Debug)]
struct HeadlessPending {
    agent: HeadlessUserAgent,
}

impl PendingRedirect for HeadlessPending {
    fn redirect_uri(&self) -> &str {
        &self.agent.redirect_uri
    }

    fn complete(
        self: Box<Self>,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<RedirectParams, OAuthError>> {
        Box::pin(async move {
            let agent = self.agent;
            let http = OAuthHttp::new(agent.tls.clone(), agent.timeout, false)?;
            http.check_url(&request.url, "authorization endpoint")?;
            let reply = http.get(&request.url).await?;
            if !(300..400).contains(&reply.status) {
                return Err(OAuthError::UserAgent(format!(
                    "the authorization endpoint answered HTTP {} instead of redirecting; it needs a person: log in interactively",
                    reply.status
                )));
            }
            let location = reply
                .headers
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    OAuthError::UserAgent("the authorization redirect has no Location".into())
                })?;
            redirect_params(location, &agent.redirect_uri)
        })
    }
}

/// The query parameters of `location`, which must point at `redirect_uri`.
fn redirect_params(location: &str, redirect_uri: &str) -> Result<RedirectParams, OAuthError> {
    let expected = HttpUrl::parse(redirect_uri)
        .map_err(|e| OAuthError::Config(format!("redirect URI {redirect_uri:?}: {e}")))?;
    let target = HttpUrl::parse(location).map_err(|e| {
        OAuthError::UserAgent(format!(
            "the authorization redirect is not a usable URL: {e}"
        ))
    })?;
    if target.origin() != expected.origin() || target.path() != expected.path() {
        return Err(OAuthError::UserAgent(format!(
            "the authorization server redirected to {}{} instead of the registered redirect URI",
            target.origin(),
            target.path()
        )));
    }
    Ok(RedirectParams::from_query(target.query().unwrap_or("")))
}

/// Shows the URL to the user.
pub type Notice = Arc<dyn Fn(&str) + Send + Sync>;

/// Receives the redirect on a `127.0.0.1` listener, for a person with a
/// browser (RFC 8252 §7.3).
#[derive(Clone)]
pub struct LoopbackUserAgent {
    port: Option<u16>,
    path: String,
    timeout: Duration,
    open_browser: bool,
    notice: Notice,
}

impl fmt::Debug for LoopbackUserAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackUserAgent")
            .field("port", &self.port)
            .field("path", &self.path)
            .field("timeout", &self.timeout)
            .field("open_browser", &self.open_browser)
            .finish_non_exhaustive()
    }
}

impl Default for LoopbackUserAgent {
    fn default() -> Self {
        LoopbackUserAgent::new()
    }
}

impl LoopbackUserAgent {
    /// A random port, path `/callback`, five minutes to complete, a browser
    /// opened when one is available, the URL printed on stderr.
    pub fn new() -> LoopbackUserAgent {
        LoopbackUserAgent {
            port: None,
            path: "/callback".into(),
            timeout: Duration::from_secs(300),
            open_browser: true,
            notice: Arc::new(print_notice),
        }
    }

    /// Listens on this port (e.g. one registered with a pre-registered
    /// client) instead of a random one.
    pub fn port(mut self, port: u16) -> LoopbackUserAgent {
        self.port = Some(port);
        self
    }

    /// How long to wait for the redirect.
    pub fn timeout(mut self, timeout: Duration) -> LoopbackUserAgent {
        self.timeout = timeout;
        self
    }

    /// Whether to try `xdg-open` / `open` (default true).
    pub fn open_browser(mut self, open: bool) -> LoopbackUserAgent {
        self.open_browser = open;
        self
    }

    /// Where the authorization URL is shown (default: stderr).
    pub fn on_url(mut self, notice: impl Fn(&str) + Send + Sync + 'static) -> LoopbackUserAgent {
        self.notice = Arc::new(notice);
        self
    }
}

#[allow(clippy::print_stderr)] // Showing the URL to the person logging in is the point.
fn print_notice(url: &str) {
    eprintln!("Open this URL in a browser to authorize Switchboard:\n\n  {url}\n");
}

impl UserAgent for LoopbackUserAgent {
    fn begin<'a>(
        &'a self,
        previous: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Box<dyn PendingRedirect>, OAuthError>> {
        Box::pin(async move {
            let listener = match self.port {
                Some(port) => TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
                    OAuthError::UserAgent(format!("cannot listen on 127.0.0.1:{port}: {e}"))
                })?,
                None => {
                    let reuse = previous.and_then(|p| previous_port(p, &self.path));
                    let reused = match reuse {
                        Some(port) => TcpListener::bind(("127.0.0.1", port)).await.ok(),
                        None => None,
                    };
                    match reused {
                        Some(l) => l,
                        None => TcpListener::bind(("127.0.0.1", 0)).await.map_err(|e| {
                            OAuthError::UserAgent(format!("cannot listen on 127.0.0.1: {e}"))
                        })?,
                    }
                }
            };
            let port = listener
                .local_addr()
                .map_err(|e| {
                    OAuthError::UserAgent(format!("cannot read the listener's port: {e}"))
                })?
                .port();
            Ok(Box::new(LoopbackPending {
                listener,
                redirect_uri: format!("http://127.0.0.1:{port}{}", self.path),
                agent: self.clone(),
            }) as Box<dyn PendingRedirect>)
        })
    }
}

/// The port of a previously registered loopback redirect URI on `path`.
fn previous_port(uri: &str, path: &str) -> Option<u16> {
    let rest = uri.strip_prefix("http://127.0.0.1:")?;
    let (port, tail) = rest.split_once('/')?;
    (format!("/{tail}") == path)
        .then(|| port.parse().ok())
        .flatten()
}

struct LoopbackPending {
    listener: TcpListener,
    redirect_uri: String,
    agent: LoopbackUserAgent,
}

impl fmt::Debug for LoopbackPending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackPending")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl PendingRedirect for LoopbackPending {
    fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    fn complete(
        self: Box<Self>,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<RedirectParams, OAuthError>> {
        Box::pin(async move {
            let agent = &self.agent;
            (agent.notice)(&request.url);
            if agent.open_browser {
                open_browser(&request.url);
            }
            let wait = accept_redirect(&self.listener, &agent.path, &request.state);
            match tokio::time::timeout(agent.timeout, wait).await {
                Ok(result) => result,
                Err(_) => Err(OAuthError::UserAgent(format!(
                    "no authorization response arrived within {} s",
                    agent.timeout.as_secs()
                ))),
            }
        })
    }
}

/// Serves the listener until a request for `path` carrying `state` arrives.
async fn accept_redirect(
    listener: &TcpListener,
    path: &str,
    state: &str,
) -> Result<RedirectParams, OAuthError> {
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| OAuthError::UserAgent(format!("the redirect listener failed: {e}")))?;
        let head = match tokio::time::timeout(Duration::from_secs(10), read_head(&mut stream)).await
        {
            Ok(Some(head)) => head,
            _ => continue,
        };
        let Some(target) = request_target(&head) else {
            respond(&mut stream, "400 Bad Request", "Not an HTTP request.").await;
            continue;
        };
        let (target_path, query) = target.split_once('?').unwrap_or((target, ""));
        if target_path != path {
            respond(&mut stream, "404 Not Found", "Nothing here.").await;
            continue;
        }
        let params = RedirectParams::from_query(query);
        if params.single("state").ok().flatten() != Some(state) {
            // Not the response to this login (a stale tab, or forged):
            // discard it and keep waiting.
            tracing::warn!("discarded a redirect that does not carry this login's state");
            respond(
                &mut stream,
                "400 Bad Request",
                "This response does not belong to the login in progress.",
            )
            .await;
            continue;
        }
        respond(
            &mut stream,
            "200 OK",
            "Switchboard received the authorization response. You can close this window and return to the terminal.",
        )
        .await;
        return Ok(params);
    }
}

/// Reads a request head (up to the blank line), at most 16 KiB.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            return String::from_utf8(buf).ok();
        }
        if buf.len() > 16 * 1024 {
            return None;
        }
    }
}

/// The target of a `GET <target> HTTP/1.x` request line.
fn request_target(head: &str) -> Option<&str> {
    let line = head.lines().next()?;
    let mut parts = line.split(' ');
    let method = parts.next()?;
    let target = parts.next()?;
    let version = parts.next()?;
    (method == "GET" && version.starts_with("HTTP/1.") && target.starts_with('/')).then_some(target)
}

async fn respond(stream: &mut TcpStream, status: &str, message: &str) {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Switchboard</title></head><body><p>{message}</p></body></html>"
    );
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Best effort: hands `url` to a browser, never failing: `$BROWSER` when
/// set (a program taking the URL), else the desktop's opener (`xdg-open`,
/// `open`). The opener is started here and waited for on a detached
/// thread (it can block until the browser exits); one that cannot start
/// is logged at debug level only. Shared by the OAuth login and
/// `switchboard console`.
pub fn open_in_browser(url: &str) {
    open_browser(url);
}

fn open_browser(url: &str) {
    let from_env = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty());
    let opener: &[&str] = if let Some(browser) = &from_env {
        &[browser.as_str()]
    } else if cfg!(target_os = "macos") {
        &["open"]
    } else if cfg!(windows) {
        &["rundll32", "url.dll,FileProtocolHandler"]
    } else {
        &["xdg-open"]
    };
    let program = opener[0].to_owned();
    // A browser is no server of ours: it must outlive this process, so
    // it is not started in our process group nor killed with us.
    #[allow(clippy::disallowed_methods)]
    let child = std::process::Command::new(&program)
        .args(&opener[1..])
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(program, error = %e, "could not open a browser");
            return;
        }
    };
    let spawned = std::thread::Builder::new()
        .name("oauth-browser".into())
        .spawn(move || {
            let _ = child.wait();
        });
    if let Err(e) = spawned {
        tracing::debug!(error = %e, "could not start the browser opener's waiter");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_params_reject_repeats_and_hide_values() {
        let p = RedirectParams::from_query("code=SECRET&state=s%20t&iss=https%3A%2F%2Fas&state=x");
        assert_eq!(p.single("code").unwrap(), Some("SECRET"));
        assert_eq!(p.single("iss").unwrap(), Some("https://as"));
        assert!(p.single("state").is_err());
        assert_eq!(p.single("error").unwrap(), None);
        let shown = format!("{p:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
    }

    #[test]
    fn location_must_target_the_redirect_uri() {
        let ok = redirect_params(
            "http://127.0.0.1/callback?code=c&state=s",
            "http://127.0.0.1/callback",
        )
        .unwrap();
        assert_eq!(ok.single("code").unwrap(), Some("c"));
        for bad in [
            "http://127.0.0.1/other?code=c",
            "http://evil.example/callback?code=c",
            "http://127.0.0.1:8080/callback?code=c",
            "/callback?code=c",
        ] {
            assert!(
                redirect_params(bad, "http://127.0.0.1/callback").is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn request_lines() {
        assert_eq!(
            request_target("GET /callback?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"),
            Some("/callback?x=1")
        );
        assert_eq!(request_target("POST /callback HTTP/1.1\r\n\r\n"), None);
        assert_eq!(request_target("GET http://x/ HTTP/1.1\r\n\r\n"), None);
        assert_eq!(
            previous_port("http://127.0.0.1:4567/callback", "/callback"),
            Some(4567)
        );
        assert_eq!(
            previous_port("http://127.0.0.1:4567/other", "/callback"),
            None
        );
        assert_eq!(
            previous_port("http://localhost:4567/callback", "/callback"),
            None
        );
    }

    async fn get(port: u16, target: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        s.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    // AUTH-C-15: a redirect with the wrong state is discarded and the
    // listener keeps waiting for the right one.
    #[tokio::test]
    async fn loopback_waits_for_the_right_state() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        let agent = LoopbackUserAgent::new()
            .open_browser(false)
            .timeout(Duration::from_secs(60))
            .on_url(move |u| sink.lock().unwrap().push(u.to_owned()));
        let pending = agent.begin(None).await.unwrap();
        let uri = pending.redirect_uri().to_owned();
        assert!(
            uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"),
            "{uri}"
        );
        let port: u16 = previous_port(&uri, "/callback").unwrap();
        let request = AuthorizationRequest {
            url: "http://as/authorize?state=good".into(),
            state: "good".into(),
        };
        let task = tokio::spawn(pending.complete(request));
        assert!(get(port, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        assert!(
            get(port, "/callback?code=x&state=bad")
                .await
                .starts_with("HTTP/1.1 400")
        );
        assert!(
            get(port, "/callback?code=x")
                .await
                .starts_with("HTTP/1.1 400")
        );
        let page = get(port, "/callback?code=c0de&state=good").await;
        assert!(page.starts_with("HTTP/1.1 200"));
        assert!(!page.contains("c0de"));
        let params = task.await.unwrap().unwrap();
        assert_eq!(params.single("code").unwrap(), Some("c0de"));
        assert_eq!(
            seen.lock().unwrap().as_slice(),
            ["http://as/authorize?state=good"]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn loopback_times_out() {
        let agent = LoopbackUserAgent::new()
            .open_browser(false)
            .timeout(Duration::from_secs(5))
            .on_url(|_| {});
        let pending = agent.begin(None).await.unwrap();
        let err = pending
            .complete(AuthorizationRequest {
                url: "http://as/a".into(),
                state: "s".into(),
            })
            .await
            .unwrap_err();
        assert!(matches!(err, OAuthError::UserAgent(_)), "{err}");
    }

    #[tokio::test]
    async fn loopback_reuses_a_registered_port_when_free() {
        let probe = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = probe.local_addr().unwrap().port();
        drop(probe);
        let agent = LoopbackUserAgent::new().open_browser(false);
        let previous = format!("http://127.0.0.1:{port}/callback");
        let pending = agent.begin(Some(&previous)).await.unwrap();
        assert_eq!(pending.redirect_uri(), previous);
    }
}
