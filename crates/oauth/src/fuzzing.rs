//! Entry points for the fuzz targets (`fuzz/`) and their corpus replay on
//! stable; hidden from the documentation and not part of the API. Each
//! returns `Err` describing a broken property; none may panic.

use crate::challenge::{BearerChallenge, parse};
use crate::discovery::{parse_asm, parse_prm};
use crate::uri::HttpUrl;

/// One `WWW-Authenticate` value: parsed into challenges (an error names a
/// byte inside the input), then read as a Bearer challenge.
///
/// # Errors
/// A description of the broken property.
pub fn www_authenticate(value: &str) -> Result<(), String> {
    match parse(value) {
        Ok(challenges) => {
            for c in &challenges {
                let bearer = BearerChallenge::from_challenge(c);
                let _ = bearer.is_insufficient_scope();
            }
        }
        Err(e) if e.at > value.len() => {
            return Err(format!(
                "error offset {} past the end ({})",
                e.at,
                value.len()
            ));
        }
        Err(_) => {}
    }
    let _ = BearerChallenge::from_headers(&[value, value]);
    Ok(())
}

/// One metadata document (`body`) read as Protected Resource Metadata for
/// a fixed server and as authorization server metadata for a fixed issuer;
/// every URL inside it that parses yields its well-known URLs.
///
/// # Errors
/// A description of the broken property.
pub fn metadata(body: &[u8]) -> Result<(), String> {
    const URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
    const ISSUER: &str = "https://auth.example.com/tenant";
    let server = HttpUrl::parse("https://mcp.example.com/mcp").map_err(|e| e.to_string())?;
    if let Ok(prm) = parse_prm(URL, body, &server) {
        if prm.authorization_servers.is_empty() {
            return Err("metadata accepted without authorization servers".into());
        }
        for s in &prm.authorization_servers {
            url(s)?;
        }
        url(&prm.resource)?;
    }
    if let Ok(asm) = parse_asm(URL, body, ISSUER) {
        if asm.issuer != ISSUER {
            return Err(format!("metadata accepted for issuer {:?}", asm.issuer));
        }
        for u in [
            &asm.authorization_endpoint,
            &asm.token_endpoint,
            &asm.registration_endpoint,
        ]
        .into_iter()
        .flatten()
        {
            url(u)?;
        }
    }
    if let Ok(text) = std::str::from_utf8(body) {
        url(text)?;
    }
    Ok(())
}

fn url(text: &str) -> Result<(), String> {
    let Ok(parsed) = HttpUrl::parse(text) else {
        return Ok(());
    };
    let canonical = parsed.canonical();
    let again = HttpUrl::parse(&canonical)
        .map_err(|e| format!("canonical form {canonical:?} of {text:?} does not parse: {e}"))?;
    if again.canonical() != canonical {
        return Err(format!("canonical form of {text:?} is not stable"));
    }
    // A resource with a fragment names nothing (RFC 8707); any other
    // resource names itself.
    if !parsed.has_fragment() && !parsed.covers(&parsed) {
        return Err(format!("{text:?} does not cover itself"));
    }
    let _ = parsed.protected_resource_metadata_urls();
    let _ = parsed.authorization_server_metadata_urls();
    let _ = parsed.is_loopback();
    Ok(())
}
