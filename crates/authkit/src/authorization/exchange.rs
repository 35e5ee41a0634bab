//! The token exchange of an access token (RFC 8693): what a gateway asks
//! for to reach a downstream server as its caller rather than as itself.

use http::StatusCode;
use serde_json::json;

use super::{Shared, State, issuer, oauth_error, random};
use crate::http::{self as h, Reply, Seen};
use crate::jwt;

/// The access token type (RFC 8693 §3).
pub(super) const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// Token exchange of an access token (RFC 8693 §2.1): an access token this
/// server issued (to anyone, e.g. for a gateway) for a new one for the same
/// subject at the `resource` (else `audience`) asked for, issued to the
/// authenticated client with an `act` claim naming it (the delegation,
/// RFC 8693 §4.1). The subject token must be valid and unexpired.
pub(super) fn exchange_access_token(
    shared: &Shared,
    st: &State,
    seen: &Seen,
    client_id: &str,
) -> Reply {
    let f = |n: &str| seen.form_param(n).unwrap_or_default().to_owned();
    let requested = f("requested_token_type");
    if !requested.is_empty() && requested != ACCESS_TOKEN_TYPE {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "requested_token_type must be an access token",
        );
    }
    let target = match (f("resource"), f("audience")) {
        (r, _) if !r.is_empty() => r,
        (_, a) if !a.is_empty() => a,
        _ => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "resource or audience is required",
            );
        }
    };
    let claims = match shared.verify(&f("subject_token")) {
        Ok((_, c)) => c,
        Err(e) => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                &format!("the subject token is {e}"),
            );
        }
    };
    let iss = issuer(shared, &st.config);
    if claims["iss"] != iss.as_str() {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "the subject token was issued by another server",
        );
    }
    let scope = match f("scope") {
        s if s.is_empty() => claims["scope"].as_str().unwrap_or_default().to_owned(),
        s => s,
    };
    let now = jwt::now();
    let ttl = st.config.access_token_ttl;
    let token = shared.signer().sign(&json!({
        "iss": iss, "aud": target, "sub": claims["sub"], "client_id": client_id,
        "act": {"sub": client_id}, "scope": scope, "iat": now, "exp": now + ttl,
        "jti": random(12),
    }));
    h::json(
        StatusCode::OK,
        &json!({
            "access_token": token, "issued_token_type": ACCESS_TOKEN_TYPE,
            "token_type": "Bearer", "expires_in": ttl, "scope": scope,
        }),
    )
}
