//! Authorization on HTTP: the bearer token (or DPoP-bound token and its
//! proof) checked, the scopes a request needs, the refusals with their
//! challenges, and a listen stream's token checked again while it lasts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use switchboard_wire::Request;
use switchboard_wire::header::name_member;
use switchboard_wire::types::method;

use super::options::Auth;
use super::respond::refuse;
use super::{HttpResponse, State};
use crate::auth::{AuthError, AuthRequest, Principal, Refusal, quote};
use crate::dpop::{self, DpopError, DpopVerifier, ProofTarget};
use crate::runner::headers;

impl State {
    /// For a `subscriptions/listen` opened with a token: what is needed to
    /// check the token again while the stream lasts.
    pub(super) fn recheck(
        &self,
        request: &Request,
        headers: &HeaderMap,
        principal: Option<&Principal>,
    ) -> Option<Recheck> {
        if request.method != method::SUBSCRIPTIONS_LISTEN {
            return None;
        }
        let auth = self.options.auth.as_ref()?;
        let (token, _) = bearer_token(headers).ok()??;
        Some(Recheck {
            auth: Arc::clone(auth),
            token: token.to_owned(),
            subject: principal?.subject.clone(),
            every: self.options.recheck_streams,
        })
    }

    /// The caller behind the request's token ([`authenticate`]): `None`
    /// when the runner takes no tokens, else the principal or the refusal.
    pub(super) async fn caller(
        &self,
        req: &http::Request<hyper::body::Incoming>,
        peer: SocketAddr,
    ) -> Result<Option<Arc<Principal>>, HttpResponse> {
        let Some(auth) = &self.options.auth else {
            return Ok(None);
        };
        // Boxed: checking a token may wait on an issuer, and hyper moves
        // the request future by value.
        let principal = Box::pin(authenticate(
            auth,
            &self.options.dpop,
            req.method(),
            req.headers(),
            peer,
        ))
        .await?;
        Ok(Some(Arc::new(principal)))
    }

    /// Asks the validator whether `principal` may make `request`: the 403
    /// `insufficient_scope` refusal when not.
    pub(super) fn authorize_request(
        &self,
        request: &Request,
        principal: Option<&Principal>,
    ) -> Option<HttpResponse> {
        let name =
            name_member(&request.method).and_then(|m| request.params.as_ref()?.get(m)?.as_str());
        self.authorize(&request.method, name, principal)
    }

    /// Asks the validator whether `principal` may call `method` (on
    /// `name`): the 403 `insufficient_scope` refusal when not; `None` when
    /// it may, or when the runner takes no tokens.
    pub(super) fn authorize(
        &self,
        method: &str,
        name: Option<&str>,
        principal: Option<&Principal>,
    ) -> Option<HttpResponse> {
        let (Some(auth), Some(p)) = (&self.options.auth, principal) else {
            return None;
        };
        let error = auth
            .validator
            .authorize(p, &AuthRequest { method, name })
            .err()?;
        Some(auth_failure(auth, &error, true, None, None))
    }
}

/// The token a `subscriptions/listen` stream was opened with, checked
/// again while the stream lasts ([`super::HttpOptions::recheck_streams`]). Kept
/// only here, never handed to a handler.
pub(super) struct Recheck {
    pub(super) auth: Arc<Auth>,
    pub(super) token: String,
    /// Whom the token named when the stream was opened.
    pub(super) subject: String,
    pub(super) every: Duration,
}

impl Recheck {
    /// Whether the token no longer admits its caller to this stream:
    /// refused, naming someone else now, or without the scope a listen
    /// needs. A validator that cannot answer now is no refusal.
    pub(super) async fn refused(&self) -> bool {
        let principal = match self.auth.validator.validate(&self.token).await {
            Ok(p) => p,
            Err(AuthError::Unavailable(_)) => return false,
            Err(_) => return true,
        };
        let ask = AuthRequest {
            method: method::SUBSCRIPTIONS_LISTEN,
            name: None,
        };
        principal.subject != self.subject
            || self.auth.validator.authorize(&principal, &ask).is_err()
    }
}

/// Checks the request's bearer token: the principal, or the refusal. A
/// DPoP-bound token (`cnf.jkt`) also needs the `DPoP` scheme and a valid
/// proof for this request (RFC 9449 §7).
pub(super) async fn authenticate(
    auth: &Auth,
    dpop: &DpopVerifier,
    method: &Method,
    headers: &HeaderMap,
    peer: SocketAddr,
) -> Result<Principal, HttpResponse> {
    let (token, dpop_scheme) = match bearer_token(headers) {
        Ok(Some(token)) => token,
        Ok(None) => {
            let error = AuthError::Unauthorized("a bearer token is required".into());
            return Err(unauthorized(auth, headers, &error, false, peer));
        }
        Err(error) => return Err(auth_failure(auth, &error, true, None, Some(peer))),
    };
    // The token itself is never logged, at any level.
    let principal = match auth.validator.validate(token).await {
        Ok(principal) => principal,
        Err(e) => return Err(unauthorized(auth, headers, &e, true, peer)),
    };
    let bound = dpop::bound_key(&principal.claims);
    let refusal =
        |code: &str, why: &str, nonce: Option<String>| dpop_failure(auth, code, why, nonce, peer);
    match (bound, dpop_scheme) {
        (None, false) => {}
        (None, true) => {
            return Err(refusal(
                "invalid_token",
                "the token is not bound to a DPoP key; send it with the Bearer scheme",
                None,
            ));
        }
        (Some(_), false) => {
            return Err(refusal(
                "invalid_token",
                "the token is bound to a DPoP key: send it with the DPoP scheme and a proof",
                None,
            ));
        }
        (Some(jkt), true) => {
            let mut proofs = headers.get_all(DPOP_HEADER).iter();
            let (Some(proof), None) = (proofs.next(), proofs.next()) else {
                return Err(refusal(
                    "invalid_dpop_proof",
                    "exactly one DPoP proof header is required",
                    None,
                ));
            };
            let target = ProofTarget {
                method: method.as_str(),
                url: &auth.metadata.resource,
                access_token: token,
                jkt,
            };
            match dpop.verify(proof.to_str().unwrap_or_default(), &target) {
                Ok(()) => {}
                Err(DpopError::UseNonce(nonce)) => {
                    return Err(refusal(
                        "use_dpop_nonce",
                        "the DPoP proof must carry the server's nonce",
                        Some(nonce),
                    ));
                }
                Err(e) => return Err(refusal("invalid_dpop_proof", &e.to_string(), None)),
            }
        }
    }
    tracing::trace!(%peer, subject = %principal.subject, "authenticated");
    Ok(principal)
}

/// The `DPoP` proof header (RFC 9449 §4.1).
pub(super) const DPOP_HEADER: HeaderName = HeaderName::from_static("dpop");

/// A 401 for a DPoP failure: `WWW-Authenticate: DPoP error=…`, and the
/// nonce to use in `DPoP-Nonce` (RFC 9449 §7.1, §9).
pub(super) fn dpop_failure(
    auth: &Auth,
    code: &str,
    description: &str,
    nonce: Option<String>,
    peer: SocketAddr,
) -> HttpResponse {
    tracing::debug!(%peer, "refused: {description}");
    auth.validator.refused(Refusal::InvalidProof);
    let mut r = refuse(
        StatusCode::UNAUTHORIZED,
        &format!("unauthorized: {description}"),
    );
    let challenge = format!(
        "DPoP error=\"{code}\", error_description=\"{}\", algs=\"ES256\", resource_metadata=\"{}\"",
        quote(description),
        quote(&auth.metadata.metadata_url())
    );
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(WWW_AUTHENTICATE, v);
    }
    if let Some(v) = nonce.and_then(|n| HeaderValue::from_str(&n).ok()) {
        r.headers_mut()
            .insert(HeaderName::from_static("dpop-nonce"), v);
    }
    r
}

/// The bearer token of a request. `Ok(None)` when there is none: no
/// `Authorization` header, or another scheme (RFC 6750 §3.1: a 401 without
/// an error code). A header that is not `Bearer <token68>` (RFC 6750
/// §2.1), or more than one, is [`AuthError::InvalidRequest`] (AUTH-S-06).
/// Error descriptions never quote the header.
pub(super) fn bearer_token(headers: &HeaderMap) -> Result<Option<(&str, bool)>, AuthError> {
    let invalid = |why: &str| Err(AuthError::InvalidRequest(why.to_owned()));
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return invalid("more than one Authorization header");
    }
    let Ok(value) = value.to_str() else {
        return invalid("the Authorization header is not printable ASCII");
    };
    let value = value.trim_matches([' ', '\t']);
    let (scheme, credentials) = value.split_once([' ', '\t']).unwrap_or((value, ""));
    let dpop = scheme.eq_ignore_ascii_case("dpop");
    if !scheme.eq_ignore_ascii_case("bearer") && !dpop {
        return Ok(None);
    }
    let token = credentials.trim_start_matches([' ', '\t']);
    if token.is_empty() {
        return Err(AuthError::InvalidRequest(format!(
            "the Authorization header names the {} scheme but carries no token",
            if dpop { "DPoP" } else { "Bearer" }
        )));
    }
    if !is_token68(token) {
        return Err(AuthError::InvalidRequest(format!(
            "the Authorization header is not of the form `{} <token68>`",
            if dpop { "DPoP" } else { "Bearer" }
        )));
    }
    Ok(Some((token, dpop)))
}

/// RFC 7235 token68: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
pub(super) fn is_token68(s: &str) -> bool {
    let body = s.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

/// The refusal of a request without a usable token: the 401's `scope`
/// names what the validator says this request needs, as far as the
/// `Mcp-Method` / `Mcp-Name` headers tell (the body is not read for a
/// caller not yet known), else `scopes_supported` (AUTH-S-03).
pub(super) fn unauthorized(
    auth: &Auth,
    headers: &HeaderMap,
    error: &AuthError,
    had_token: bool,
    peer: SocketAddr,
) -> HttpResponse {
    let needed = match error {
        AuthError::Unauthorized(_) => {
            let announced = headers::announced(headers);
            let request = announced.as_ref().map(|(method, name)| AuthRequest {
                method,
                name: name.as_deref(),
            });
            auth.validator.scopes_needed(request.as_ref())
        }
        _ => None,
    };
    auth_failure(auth, error, had_token, needed.as_deref(), Some(peer))
}

/// The refusal for `error`: its status, its challenge (naming `needed` on
/// a 401), a JSON-RPC error body; logged with the peer when known.
pub(super) fn auth_failure(
    auth: &Auth,
    error: &AuthError,
    had_token: bool,
    needed: Option<&[String]>,
    peer: Option<SocketAddr>,
) -> HttpResponse {
    match peer {
        Some(peer) => tracing::debug!(%peer, "refused: {error}"),
        None => tracing::debug!("refused: {error}"),
    }
    auth.validator.refused(Refusal::of(error, had_token));
    let status = StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::UNAUTHORIZED);
    let mut r = refuse(status, &error.to_string());
    if let Some(challenge) = auth.metadata.challenge(error, had_token, needed) {
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            r.headers_mut().insert(WWW_AUTHENTICATE, v);
        }
    }
    r
}

/// Whether a query string carries an `access_token` parameter.
pub(super) fn has_query_token(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.split('=').next() == Some("access_token"))
    })
}
