//! The web console (`serve --http … --console`): server-rendered pages at
//! `/console` for the people who run the gateway — the servers' live
//! state, the tools as a chosen caller sees them (with changed
//! definitions to accept), and the recent calls from the audit log.
//!
//! Security model:
//! - Only principals whose config entry says `"console": true` may open
//!   it; everyone else gets 403, whatever their token. Callers
//!   authenticate as on `/mcp` (bearer token or OAuth): a page may be
//!   fetched with the `Authorization` header, and `POST /console/login`
//!   exchanges the token (form field or header) for a session.
//! - The session is a random id in an `HttpOnly`, `SameSite=Strict`
//!   cookie scoped to `/console` (`Secure` under TLS); what it stands for
//!   is kept here, with its expiry ([`SESSION_TTL`], or the access
//!   token's own when sooner). It stands for the token signed in with:
//!   that token is checked again on every request, so revoking it (taking
//!   it out of the tokens file) ends the session.
//! - Failed sign-ins are limited per peer address ([`SIGN_IN_FAILURES`]
//!   in [`SIGN_IN_WINDOW`], then 429), counted in the shared store when
//!   there is one.
//! - Every state-changing request is a POST carrying the session's CSRF
//!   token in a hidden field, and is refused when the browser says it
//!   comes from another site (`Sec-Fetch-Site`) or another origin
//!   (`Origin`).
//! - Every answer carries a strict Content-Security-Policy: the script
//!   and style are the console's own, embedded in the binary
//!   (`include_str!`); no inline script, no external request.
//! - Every server-supplied string is escaped by one function
//!   (`html::escape`).
//!
//! Nothing runs while nobody has the console open: the pages are computed
//! when asked for, and the live updates (`/console/events`) poll the host
//! only while a page listens.

mod approvals;
mod html;
mod pages;
mod session;
mod signin;
mod wait;

use std::sync::Arc;

use http::Method;
use switchboard_host::Host;
use switchboard_server::http::{AppRequest, AppResponse, AppRoute};
use switchboard_server::{AuthError, PresentedToken, TokenValidator};
use switchboard_wire::shared::lock;

pub use approvals::MAX_PENDING_APPROVALS;
pub(crate) use approvals::{Approvals, Redeemed, digest};
use html::{Frame, message, page, secured};
pub use session::{MAX_SESSIONS, SESSION_TTL};
use session::{Sessions, clear_cookie, cookie_of, lifetime, same_secret, set_cookie};
use signin::SignIns;
pub use signin::{SIGN_IN_FAILURES, SIGN_IN_WINDOW};
pub(crate) use wait::WaitForConsole;

/// Where the console is served.
pub(crate) const PREFIX: &str = "/console";

/// The principal a one-time sign-in token (`switchboard console`) signs
/// in as.
pub const LOCAL_PRINCIPAL: &str = "local";

/// A fresh one-time sign-in token for [`crate::GatewayOptions::console_login`]
/// (256 random bits in hex); `None` when the system has no randomness.
pub fn console_login_token() -> Option<String> {
    session::random_hex()
}

/// The console of one gateway.
#[derive(Clone)]
pub(crate) struct Console {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").finish_non_exhaustive()
    }
}

struct Inner {
    host: Host,
    /// Checks the tokens people sign in with (the gateway's own); `None`
    /// without authentication (then only the one-time token signs in).
    validator: Option<Arc<dyn TokenValidator>>,
    /// The one-time sign-in token, until it is used.
    once: std::sync::Mutex<Option<String>>,
    /// Whether the one-time token's principal may open the console.
    local: bool,
    sessions: Sessions,
    /// Failed sign-ins by peer address.
    sign_ins: SignIns,
    approvals: Approvals,
    /// The eval report last uploaded to the Evals page.
    eval_report: std::sync::Mutex<Option<serde_json::Value>>,
    /// The eval report file shown while nothing was uploaded.
    eval_file: Option<std::path::PathBuf>,
}

/// Why a session is no longer good.
enum Lapsed {
    /// Ended, expired, or never was.
    Gone,
    /// The token it was signed in with is no longer accepted (it was
    /// dropped now).
    Revoked,
    /// Its token cannot be checked now.
    Unavailable(String),
}

/// Who is asking, once authenticated.
struct Viewer {
    principal: String,
    /// The session's id and CSRF token, when signed in with a session
    /// (not with a bearer header).
    session: Option<(String, String)>,
}

impl Console {
    /// The console over `host`, signing people in with `validator`
    /// (failed sign-ins counted in `store` when there is one).
    pub(crate) fn new(
        host: &Host,
        validator: Option<Arc<dyn TokenValidator>>,
        once: Option<String>,
        approvals: Approvals,
        eval_file: Option<std::path::PathBuf>,
        store: Option<crate::state::SharedState>,
    ) -> Console {
        Console {
            inner: Arc::new(Inner {
                host: host.clone(),
                validator,
                local: once.is_some(),
                once: std::sync::Mutex::new(once),
                sessions: Sessions::default(),
                sign_ins: SignIns::new(store),
                approvals,
                eval_report: std::sync::Mutex::new(None),
                eval_file,
            }),
        }
    }

    /// Says where the console is served (`scheme://host:port`), for the
    /// approval links.
    pub(crate) fn serving_at(&self, origin: String) {
        self.inner.approvals.set_base(origin);
    }

    /// The app route serving everything under [`PREFIX`].
    pub(crate) fn route(&self) -> AppRoute {
        let console = self.clone();
        Arc::new(move |req| {
            let console = console.clone();
            Box::pin(async move { console.handle(req).await })
        })
    }

    async fn handle(&self, req: AppRequest) -> AppResponse {
        let path = req
            .path
            .strip_prefix(PREFIX)
            .unwrap_or(&req.path)
            .to_owned();
        let get = req.method == Method::GET || req.method == Method::HEAD;
        if !get && req.method != Method::POST {
            return message(405, "Not allowed", "The console takes GET and POST only.");
        }
        // A page opened from a link elsewhere is a read; anything else
        // must come from the console itself.
        let navigation = get && path != "/events";
        if !navigation {
            if let Some(why) = cross_site(&req) {
                return message(403, "Refused", why);
            }
        }
        match (get, path.as_str()) {
            (true, "/assets/console.js") => asset("text/javascript; charset=utf-8", html::SCRIPT),
            (true, "/assets/console.css") => asset("text/css; charset=utf-8", html::STYLE),
            (true, "/login") if query_value(req.query.as_deref(), "once").is_some() => {
                self.sign_in_once(&req).await
            }
            (true, "" | "/" | "/login") => match self.viewer(&req).await {
                Ok(Some(_)) => redirect("/console/servers"),
                _ => login_page(
                    200,
                    None,
                    query_value(req.query.as_deref(), "next").as_deref(),
                ),
            },
            (get, p) if p.starts_with("/approve/") => {
                let id = &p["/approve/".len()..];
                if get {
                    let viewer = match self.viewer(&req).await {
                        Ok(Some(viewer)) => self.admit(viewer),
                        // Signed in first, then back to this very page.
                        Ok(None) => return login_page(401, None, Some(&req.path)),
                        Err(refusal) if refusal.status == 401 => {
                            return login_page(
                                401,
                                Some("Your session has ended; sign in again."),
                                Some(&req.path),
                            )
                            .header("set-cookie", clear_cookie(req.tls));
                        }
                        Err(refusal) => return refusal,
                    };
                    match viewer {
                        Ok(viewer) => {
                            let frame = Frame {
                                principal: &viewer.principal,
                                csrf: viewer.session.as_ref().map(|(_, c)| c.as_str()),
                            };
                            pages::approval(&self.inner.approvals, &frame, id).await
                        }
                        Err(refusal) => refusal,
                    }
                } else {
                    match self.changing(&req).await {
                        Ok((viewer, form)) => {
                            pages::decide(&self.inner.approvals, &viewer.principal, id, &form).await
                        }
                        Err(refusal) => refusal,
                    }
                }
            }
            (false, "/login") => self.login(&req).await,
            (false, "/logout") => self.logout(&req).await,
            (true, "/servers" | "/tools" | "/calls" | "/approvals" | "/evals" | "/events") => {
                let viewer = match self.admitted(&req).await {
                    Ok(v) => v,
                    Err(refusal) => return refusal,
                };
                let frame = Frame {
                    principal: &viewer.principal,
                    csrf: viewer.session.as_ref().map(|(_, csrf)| csrf.as_str()),
                };
                let host = &self.inner.host;
                match path.as_str() {
                    "/servers" => pages::servers(host, &frame),
                    "/tools" => pages::tools(host, &frame, req.query.as_deref()),
                    "/calls" => pages::calls(host, &frame, req.query.as_deref()),
                    "/approvals" => pages::approvals(&self.inner.approvals, &frame).await,
                    "/evals" => {
                        let report = lock(&self.inner.eval_report).clone();
                        match (report, &self.inner.eval_file) {
                            (Some(report), _) => pages::evals(Some(&report), &frame),
                            (None, Some(path)) => {
                                // Read at each view: a new run shows
                                // without a restart.
                                let read = std::fs::read_to_string(path)
                                    .map_err(|e| format!("cannot read {}: {e}", path.display()))
                                    .and_then(|text| pages::parse_eval_report(&text));
                                match read {
                                    Ok(report) => pages::evals(Some(&report), &frame),
                                    Err(why) => {
                                        message(500, "The eval report cannot be shown", &why)
                                    }
                                }
                            }
                            (None, None) => pages::evals(None, &frame),
                        }
                    }
                    _ => pages::events(host, self.recheck(&req, &viewer)),
                }
            }
            (false, "/evals") => {
                let (_, form) = match self.changing(&req).await {
                    Ok(v) => v,
                    Err(refusal) => return refusal,
                };
                match pages::eval_report(&form) {
                    Ok(report) => {
                        *lock(&self.inner.eval_report) = Some(report);
                        redirect("/console/evals")
                    }
                    Err(why) => message(400, "Not an eval report", &why),
                }
            }
            (false, "/tools/accept") => {
                let (viewer, form) = match self.changing(&req).await {
                    Ok(v) => v,
                    Err(refusal) => return refusal,
                };
                pages::accept(&self.inner.host, &viewer.principal, &form)
            }
            _ => message(404, "Not found", "There is no such console page."),
        }
    }

    /// The signed-in (or bearer-authenticated) viewer, if any: `Err` with
    /// the refusal when a session cookie is stale, or its token is no
    /// longer accepted (then the session is dropped).
    async fn viewer(&self, req: &AppRequest) -> Result<Option<Viewer>, AppResponse> {
        if let Some(principal) = &req.principal {
            return Ok(Some(Viewer {
                principal: principal.subject.clone(),
                session: None,
            }));
        }
        let Some(id) = cookie_of(&req.headers) else {
            return Ok(None);
        };
        let session = match self.live_session(&id).await {
            Ok(session) => session,
            Err(Lapsed::Gone) => return Err(ended(req, "Your session has ended; sign in again.")),
            Err(Lapsed::Revoked) => {
                return Err(ended(
                    req,
                    "Your session has ended: the token you signed in with is no longer accepted.",
                ));
            }
            Err(Lapsed::Unavailable(why)) => {
                return Err(message(
                    503,
                    "Unavailable",
                    &format!("Your sign-in cannot be checked now: {why}"),
                ));
            }
        };
        Ok(Some(Viewer {
            principal: session.principal,
            session: Some((id, session.csrf)),
        }))
    }

    /// Session `id`, while it lasts and the token it was signed in with is
    /// still accepted for the same principal; a session whose token is
    /// refused is dropped.
    async fn live_session(&self, id: &str) -> Result<session::Session, Lapsed> {
        let session = self.inner.sessions.get(id).ok_or(Lapsed::Gone)?;
        let Some(token) = &session.credential else {
            return Ok(session);
        };
        let checked = match &self.inner.validator {
            Some(validator) => validator.validate(token.expose()).await,
            None => Err(AuthError::Unauthorized("no validator".into())),
        };
        match checked {
            Ok(p) if p.subject == session.principal => Ok(session),
            Err(AuthError::Unavailable(why)) => Err(Lapsed::Unavailable(why)),
            _ => {
                self.inner.sessions.close(id);
                tracing::info!(principal = %session.principal, "a console session ended: the token it was signed in with is no longer accepted");
                Err(Lapsed::Revoked)
            }
        }
    }

    /// For an event stream opened by `viewer`: whether it may still see
    /// it, asked again while the stream lasts (its session, or the
    /// bearer token it came with, and its principal). A check that cannot
    /// be made now lets the stream go on.
    fn recheck(&self, req: &AppRequest, viewer: &Viewer) -> pages::Recheck {
        let console = self.clone();
        let principal = viewer.principal.clone();
        let session = viewer.session.as_ref().map(|(id, _)| id.clone());
        let token = bearer(&req.headers).map(PresentedToken::new);
        Box::new(move || {
            let (console, principal) = (console.clone(), principal.clone());
            let (session, token) = (session.clone(), token.clone());
            Box::pin(async move {
                let still = match (&session, &token, &console.inner.validator) {
                    (Some(id), _, _) => match console.live_session(id).await {
                        Ok(_) | Err(Lapsed::Unavailable(_)) => true,
                        Err(_) => false,
                    },
                    (None, Some(token), Some(validator)) => {
                        match validator.validate(token.expose()).await {
                            Ok(p) => p.subject == principal,
                            Err(e) => matches!(e, AuthError::Unavailable(_)),
                        }
                    }
                    _ => true,
                };
                still && console.may_open(&principal)
            })
        })
    }

    /// The viewer, when it may use the console: 401 (the sign-in page)
    /// without one, 403 when its principal is not a console principal
    /// (checked on every request, so a config reload takes it away).
    async fn admitted(&self, req: &AppRequest) -> Result<Viewer, AppResponse> {
        match self.viewer(req).await? {
            Some(viewer) => self.admit(viewer),
            None => Err(login_page(401, None, None)),
        }
    }

    /// `viewer`, when its principal may open the console.
    fn admit(&self, viewer: Viewer) -> Result<Viewer, AppResponse> {
        if !self.may_open(&viewer.principal) {
            return Err(forbidden(&viewer.principal));
        }
        Ok(viewer)
    }

    /// For a state-changing POST: the signed-in viewer (a session is
    /// required) and the form, when the form carries the session's CSRF
    /// token.
    async fn changing(&self, req: &AppRequest) -> Result<(Viewer, Form), AppResponse> {
        let viewer = self.admitted(req).await?;
        let form = Form::parse(&req.body);
        let Some((_, csrf)) = &viewer.session else {
            return Err(message(
                403,
                "Refused",
                "Changes need a console session: sign in first.",
            ));
        };
        match form.get("csrf") {
            Some(given) if same_secret(given, csrf) => Ok((viewer, form)),
            _ => Err(message(
                403,
                "Refused",
                "The form's CSRF token is missing or wrong; reload the page and try again.",
            )),
        }
    }

    fn may_open(&self, principal: &str) -> bool {
        if self.inner.local && principal == LOCAL_PRINCIPAL {
            return true;
        }
        self.inner.host.is_console_principal(principal)
    }

    /// `POST /console/login`: the token (the `token` field, or the
    /// `Authorization` header) checked as on `/mcp`; a console principal
    /// gets a session cookie, bound to that token. Refused with 429 while
    /// the peer address has used up its failed sign-ins.
    async fn login(&self, req: &AppRequest) -> AppResponse {
        if let Some(wait) = self.inner.sign_ins.refused(req.peer.ip()).await {
            return too_many(wait);
        }
        let form = Form::parse(&req.body);
        let (principal, token) = match (&req.principal, form.get("token").map(str::trim)) {
            (Some(p), _) => (Arc::clone(p), bearer(&req.headers)),
            (None, Some(token)) if !token.is_empty() => {
                let checked = match &self.inner.validator {
                    Some(validator) => validator.validate(token).await.ok(),
                    None => None,
                };
                match checked {
                    Some(p) => (Arc::new(p), Some(token)),
                    None => {
                        self.inner.sign_ins.failed(req.peer.ip()).await;
                        return login_page(
                            401,
                            Some("That token is not accepted."),
                            form.get("next"),
                        );
                    }
                }
            }
            _ => {
                return login_page(
                    401,
                    Some("Paste your gateway token to sign in."),
                    form.get("next"),
                );
            }
        };
        let Some(token) = token else {
            return login_page(401, Some("Sign in with a bearer token."), form.get("next"));
        };
        let subject = &principal.subject;
        if !self.may_open(subject) {
            return forbidden(subject);
        }
        let lifetime = lifetime(&principal.claims);
        let credential = Some(PresentedToken::new(token));
        let Some((id, _)) = self.inner.sessions.open(subject, credential, lifetime) else {
            return message(503, "Unavailable", "No randomness for a session id.");
        };
        tracing::info!(principal = %subject, "signed in to the console");
        // Back to the approval page that sent the person here, and
        // nowhere else (never an open redirect).
        let next = form
            .get("next")
            .filter(|n| approval_path(n))
            .unwrap_or("/console/servers");
        redirect(next).header("set-cookie", set_cookie(&id, lifetime, req.tls))
    }

    /// `GET /console/login?once=TOKEN` (`switchboard console`): the
    /// one-time token, used once, signs the browser in as
    /// [`LOCAL_PRINCIPAL`].
    async fn sign_in_once(&self, req: &AppRequest) -> AppResponse {
        if let Some(wait) = self.inner.sign_ins.refused(req.peer.ip()).await {
            return too_many(wait);
        }
        let given = query_value(req.query.as_deref(), "once").unwrap_or_default();
        let valid = {
            let mut once = lock(&self.inner.once);
            let valid = once.as_deref().is_some_and(|t| same_secret(&given, t));
            if valid {
                *once = None;
            }
            valid
        };
        if !valid {
            self.inner.sign_ins.failed(req.peer.ip()).await;
            return login_page(
                401,
                Some("That sign-in link was used already or is not valid."),
                None,
            );
        }
        let Some((id, _)) = self.inner.sessions.open(LOCAL_PRINCIPAL, None, SESSION_TTL) else {
            return message(503, "Unavailable", "No randomness for a session id.");
        };
        redirect("/console/servers").header("set-cookie", set_cookie(&id, SESSION_TTL, req.tls))
    }

    /// `POST /console/logout`: ends the session (CSRF-checked).
    async fn logout(&self, req: &AppRequest) -> AppResponse {
        let (viewer, _) = match self.changing(req).await {
            Ok(v) => v,
            Err(refusal) => return refusal,
        };
        if let Some((id, _)) = &viewer.session {
            self.inner.sessions.close(id);
        }
        redirect("/console/login").header("set-cookie", clear_cookie(req.tls))
    }
}

/// Why a request is refused as coming from another site, if it is: the
/// browser's `Sec-Fetch-Site` says `cross-site` or `same-site`, or its
/// `Origin` is not this host's. Requests without either header (not from
/// a browser) pass; they still need the session and its CSRF token.
fn cross_site(req: &AppRequest) -> Option<&'static str> {
    let header = |name: &str| req.headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = header("sec-fetch-site") {
        if !matches!(site, "same-origin" | "none") {
            return Some("The console does not take requests from other sites.");
        }
    }
    if let Some(origin) = header("origin") {
        let host = header("host").unwrap_or_default();
        let authority = origin
            .strip_prefix("https://")
            .or_else(|| origin.strip_prefix("http://"));
        if authority.is_none_or(|a| !a.eq_ignore_ascii_case(host)) {
            return Some("The console does not take requests from other origins.");
        }
    }
    None
}

/// The origin (`scheme://host[:port]`) of `url`, when it is an
/// `http(s)://` URL.
pub(crate) fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest
        .split(['/', '?', '#'])
        .next()
        .filter(|a| !a.is_empty())?;
    Some(format!("{scheme}://{authority}"))
}

/// A form body (`application/x-www-form-urlencoded`).
pub(crate) struct Form(Vec<(String, String)>);

impl Form {
    fn parse(body: &[u8]) -> Form {
        Form(
            form_urlencoded::parse(body)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The first value of field `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The query string's value of `name`, decoded.
pub(crate) fn query_value(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty())
}

fn asset(content_type: &str, text: &str) -> AppResponse {
    secured(AppResponse::new(200, content_type, text))
}

/// A 303 to `to` (a console path).
pub(crate) fn redirect(to: &str) -> AppResponse {
    secured(AppResponse::new(303, "text/plain; charset=utf-8", "")).header("location", to)
}

/// A session that ended: the sign-in page saying `why`, the cookie
/// cleared.
fn ended(req: &AppRequest, why: &str) -> AppResponse {
    login_page(401, Some(why), None).header("set-cookie", clear_cookie(req.tls))
}

/// A sign-in refused while the peer's failed sign-ins are used up.
fn too_many(wait: std::time::Duration) -> AppResponse {
    let seconds = wait.as_secs().max(1);
    message(
        429,
        "Too many sign-ins",
        &format!("Too many failed sign-ins from your address: try again in {seconds} s."),
    )
    .header("retry-after", seconds.to_string())
}

/// The bearer token of an `Authorization` header.
fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn forbidden(principal: &str) -> AppResponse {
    message(
        403,
        "Not allowed",
        &format!(
            "{principal} may not open the console: its principals entry in the config needs \"console\": true."
        ),
    )
}

/// Whether `path` is an approval page's (the only place sign-in sends a
/// person back to).
fn approval_path(path: &str) -> bool {
    path.strip_prefix("/console/approve/")
        // A sealed link's ID: base64url and a dot, never a `/` (so
        // never a redirect elsewhere).
        .is_some_and(|id| {
            !id.is_empty()
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        })
}

/// The sign-in page: a form posting the token, and `note` (escaped);
/// `next`, an approval page to come back to.
fn login_page(status: u16, note: Option<&str>, next: Option<&str>) -> AppResponse {
    let note = note.map_or_else(String::new, |n| {
        format!("<p class=\"note\">{}</p>", html::escape(n))
    });
    let next = next.filter(|n| approval_path(n)).map_or_else(String::new, |n| {
        format!(
            "<input type=\"hidden\" name=\"next\" value=\"{}\"><p>Sign in to decide a call waiting for approval.</p>",
            html::escape(n)
        )
    });
    let body = format!(
        "{note}<form method=\"post\" action=\"/console/login\" class=\"login\">{next}\
         <label>Gateway token <input type=\"password\" name=\"token\" autocomplete=\"off\" required></label>\
         <button type=\"submit\">Sign in</button></form>\
         <p>Only principals marked <code>\"console\": true</code> in the config may sign in.</p>"
    );
    page(status, "Sign in", None, &body)
}
