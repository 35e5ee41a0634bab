//! The pure steps of the authorization code flow: scope selection, the
//! authorization URL, and validation of the authorization response
//! (RFC 9207 `iss`, `state`, then the code or the error).

use super::discovery::AuthorizationServerMetadata;
use super::error::OAuthError;
use super::secret::Secret;
use super::token::sanitize;
use super::user_agent::RedirectParams;

/// What the client records before sending the user to the authorization
/// server (AUTH-C-12): the validated issuer sits with the PKCE verifier and
/// the state, and is what the response is checked against.
#[derive(Debug)]
pub(crate) struct PendingAuthorization {
    /// The `issuer` of the validated metadata.
    pub(crate) issuer: String,
    /// Whether that metadata advertised `iss` in authorization responses.
    pub(crate) iss_supported: bool,
    pub(crate) state: String,
    pub(crate) verifier: Secret,
    pub(crate) redirect_uri: String,
}

/// Initial scopes (AUTH-C-19): the challenge's `scope`, else all of the
/// Protected Resource Metadata's `scopes_supported`, else none (the
/// parameter is omitted).
pub(crate) fn initial_scopes(
    challenge: Option<&[String]>,
    supported: Option<&[String]>,
) -> Vec<String> {
    match (challenge, supported) {
        (Some(c), _) if !c.is_empty() => c.to_vec(),
        (_, Some(s)) => s.to_vec(),
        _ => Vec::new(),
    }
}

/// `a ∪ b`, keeping first-seen order.
pub(crate) fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(a.len() + b.len());
    for s in a.iter().chain(b) {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

/// Adds `offline_access` when refresh tokens are wanted and the
/// authorization server lists it (spec "Refresh Tokens"); never otherwise.
pub(crate) fn with_offline_access(
    scopes: Vec<String>,
    metadata: &AuthorizationServerMetadata,
    wanted: bool,
) -> Vec<String> {
    if wanted && metadata.lists_scope("offline_access") {
        union(&scopes, &["offline_access".to_owned()])
    } else {
        scopes
    }
}

/// The authorization endpoint with `params` appended to any query it
/// already has (RFC 6749 §3.1 keeps it).
pub(crate) fn authorization_url(endpoint: &str, params: &[(&str, &str)]) -> String {
    let endpoint = endpoint.split_once('#').map_or(endpoint, |(base, _)| base);
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        query.append_pair(k, v);
    }
    let query = query.finish();
    let sep = if endpoint.contains('?') {
        if endpoint.ends_with('?') || endpoint.ends_with('&') {
            ""
        } else {
            "&"
        }
    } else {
        "?"
    };
    format!("{endpoint}{sep}{query}")
}

/// Validates the authorization response and returns the code.
///
/// The order matters: `iss` first (AUTH-C-13/14), so that on a mismatch the
/// `error`, `error_description` and `error_uri` fields are never read;
/// then `state` (AUTH-C-15); only then the error or the code.
pub(crate) fn validate_response(
    params: &RedirectParams,
    pending: &PendingAuthorization,
) -> Result<Secret, OAuthError> {
    let reject = |why: String| OAuthError::AuthorizationResponse(why);
    match params.single("iss").map_err(reject)? {
        // Simple string comparison: no case folding, port, slash or
        // percent-encoding normalisation.
        Some(iss) if iss == pending.issuer => {}
        Some(iss) => {
            return Err(reject(format!(
                "it names issuer {:?}, but the authorization was sent to {:?} (possible mix-up attack)",
                sanitize(iss),
                pending.issuer
            )));
        }
        None if pending.iss_supported => {
            return Err(reject(format!(
                "it carries no iss, but {} advertises authorization_response_iss_parameter_supported",
                pending.issuer
            )));
        }
        None => {}
    }
    match params.single("state").map_err(reject)? {
        Some(state) if state == pending.state => {}
        Some(_) => return Err(reject("its state does not match this login".into())),
        None => return Err(reject("it carries no state".into())),
    }
    if let Some(error) = params.single("error").map_err(reject)? {
        let description = params
            .single("error_description")
            .ok()
            .flatten()
            .map(sanitize);
        return Err(OAuthError::Refused {
            endpoint: "authorization",
            error: sanitize(error),
            description,
        });
    }
    match params.single("code").map_err(reject)? {
        Some(code) if !code.is_empty() => Ok(Secret::new(code)),
        _ => Err(reject("it carries no code".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn scope_selection_order() {
        // AUTH-C-19 / AUTH-C-18: the challenge wins, whatever its relation
        // to scopes_supported.
        assert_eq!(
            initial_scopes(Some(&s(&["x"])), Some(&s(&["a", "b"]))),
            ["x"]
        );
        assert_eq!(initial_scopes(None, Some(&s(&["a", "b"]))), ["a", "b"]);
        assert_eq!(initial_scopes(Some(&[]), Some(&s(&["a"]))), ["a"]);
        assert!(initial_scopes(None, None).is_empty());
        assert_eq!(
            union(&s(&["mcp:basic"]), &s(&["mcp:write", "mcp:basic"])),
            ["mcp:basic", "mcp:write"]
        );
    }

    fn metadata(scopes: Option<&[&str]>) -> AuthorizationServerMetadata {
        AuthorizationServerMetadata {
            issuer: "http://as".into(),
            authorization_endpoint: None,
            token_endpoint: None,
            registration_endpoint: None,
            revocation_endpoint: None,
            scopes_supported: scopes.map(s),
            grant_types_supported: None,
            code_challenge_methods_supported: None,
            token_endpoint_auth_methods_supported: None,
            authorization_response_iss_parameter_supported: false,
            client_id_metadata_document_supported: false,
            dpop_signing_alg_values_supported: None,
            jwks_uri: None,
            introspection_endpoint: None,
            url: "u".into(),
        }
    }

    #[test]
    fn offline_access_only_when_listed() {
        let listed = metadata(Some(&["mcp:basic", "offline_access"]));
        assert_eq!(
            with_offline_access(s(&["mcp:basic"]), &listed, true),
            ["mcp:basic", "offline_access"]
        );
        assert_eq!(
            with_offline_access(s(&["mcp:basic"]), &listed, false),
            ["mcp:basic"]
        );
        assert_eq!(
            with_offline_access(s(&["mcp:basic"]), &metadata(Some(&["mcp:basic"])), true),
            ["mcp:basic"]
        );
        assert_eq!(with_offline_access(s(&["a"]), &metadata(None), true), ["a"]);
    }

    #[test]
    fn authorization_urls_keep_existing_queries() {
        let p = [("client_id", "https://c.example/m.json"), ("scope", "a b")];
        assert_eq!(
            authorization_url("https://as/authorize", &p),
            "https://as/authorize?client_id=https%3A%2F%2Fc.example%2Fm.json&scope=a+b"
        );
        assert_eq!(
            authorization_url("https://as/authorize?tenant=t", &p[..1]),
            "https://as/authorize?tenant=t&client_id=https%3A%2F%2Fc.example%2Fm.json"
        );
        assert_eq!(
            authorization_url("https://as/a#frag", &[("x", "1")]),
            "https://as/a?x=1"
        );
    }

    fn pending(iss_supported: bool) -> PendingAuthorization {
        PendingAuthorization {
            issuer: "http://localhost:4000".into(),
            iss_supported,
            state: "st".into(),
            verifier: Secret::new("v"),
            redirect_uri: "http://127.0.0.1/callback".into(),
        }
    }

    fn check(query: &str, iss_supported: bool) -> Result<Secret, OAuthError> {
        validate_response(&RedirectParams::from_query(query), &pending(iss_supported))
    }

    // AUTH-C-13: the RFC 9207 table, row by row.
    #[test]
    fn iss_table() {
        let iss = "iss=http%3A%2F%2Flocalhost%3A4000";
        assert_eq!(
            check(&format!("code=c&state=st&{iss}"), true)
                .unwrap()
                .expose(),
            "c"
        );
        assert!(matches!(
            check("code=c&state=st", true),
            Err(OAuthError::AuthorizationResponse(_))
        ));
        assert_eq!(
            check(&format!("code=c&state=st&{iss}"), false)
                .unwrap()
                .expose(),
            "c"
        );
        assert!(matches!(
            check("code=c&state=st&iss=https%3A%2F%2Fevil.example.com", false),
            Err(OAuthError::AuthorizationResponse(_))
        ));
        assert_eq!(check("code=c&state=st", false).unwrap().expose(), "c");
    }

    // AUTH-C-14: no normalisation of any kind.
    #[test]
    fn iss_is_compared_without_normalisation() {
        for variant in [
            "http%3A%2F%2Flocalhost%3A4000%2F",
            "HTTP%3A%2F%2Flocalhost%3A4000",
            "http%3A%2F%2FLOCALHOST%3A4000",
            "http%3A%2F%2Flocalhost%3A4000%3F",
            "http%3A%2F%2Flocalhost%3A04000",
            "http%3A%2F%2Flocalhost%253A4000",
        ] {
            let r = check(&format!("code=c&state=st&iss={variant}"), true);
            assert!(
                matches!(r, Err(OAuthError::AuthorizationResponse(_))),
                "{variant}"
            );
        }
    }

    // AUTH-C-14: on an iss failure the error fields are not acted on.
    #[test]
    fn error_fields_are_ignored_when_iss_fails() {
        let r = check(
            "error=access_denied&error_description=CLICK-HERE&state=st&iss=https%3A%2F%2Fevil",
            false,
        )
        .unwrap_err();
        let text = r.to_string();
        assert!(
            !text.contains("access_denied") && !text.contains("CLICK-HERE"),
            "{text}"
        );
        // With a valid iss the error is reported.
        let r = check(
            "error=access_denied&error_description=no&state=st&iss=http%3A%2F%2Flocalhost%3A4000",
            true,
        )
        .unwrap_err();
        assert!(matches!(
            r,
            OAuthError::Refused {
                endpoint: "authorization",
                ..
            }
        ));
        assert!(r.to_string().contains("access_denied"));
    }

    // AUTH-C-15: state must be present and equal; duplicates are refused.
    #[test]
    fn state_checks() {
        assert!(matches!(
            check("code=c", false),
            Err(OAuthError::AuthorizationResponse(_))
        ));
        assert!(matches!(
            check("code=c&state=other", false),
            Err(OAuthError::AuthorizationResponse(_))
        ));
        assert!(matches!(
            check("code=c&state=st&state=st", false),
            Err(OAuthError::AuthorizationResponse(_))
        ));
        assert!(matches!(
            check(
                "code=c&state=st&iss=http%3A%2F%2Flocalhost%3A4000&iss=http%3A%2F%2Flocalhost%3A4000",
                true
            ),
            Err(OAuthError::AuthorizationResponse(_))
        ));
        assert!(matches!(
            check("state=st", false),
            Err(OAuthError::AuthorizationResponse(_))
        ));
        assert!(matches!(
            check("code=&state=st", false),
            Err(OAuthError::AuthorizationResponse(_))
        ));
    }
}
