//! Server-side validation of the headers that mirror the body on
//! Streamable HTTP (transports/streamable-http, "Server Validation"), and
//! of `Host` / `Origin` against DNS rebinding.
//!
//! Any missing, malformed or mismatching mirrored header is a -32020
//! `HeaderMismatch` with HTTP 400 (HTTP-S-15, -19…-24). Values are trimmed
//! of surrounding whitespace (RFC 9110 field parsing), decoded from the
//! `=?base64?…?=` sentinel where the spec allows it, and compared
//! case-sensitively; integers compare numerically.

use std::borrow::Cow;

use http::HeaderMap;
use http::header::{HOST, HeaderName, HeaderValue, ORIGIN};
use serde_json::{Map, Value};
use switchboard_wire::Request;
use switchboard_wire::header::{self as mcp, name_member};
use switchboard_wire::meta;
use switchboard_wire::types::method;

use crate::error::Fault;
use crate::server::Registry;

/// The MCP header names, made once at compile time (`Mcp-Session-Id` is
/// the legacy session's).
use switchboard_wire::header::names::{METHOD, NAME};
pub(crate) use switchboard_wire::header::names::{PROTOCOL_VERSION as VERSION, SESSION_ID};

/// One header's value, required to appear at most once.
fn single<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Result<Option<&'a HeaderValue>, Fault> {
    at_most_once(headers, name)
        .map_err(|()| Fault::header(format!("header {name} appears more than once")))
}

/// `name`'s value, `Err` when it appears more than once. When no name in
/// the map repeats (as good as every request) one lookup tells.
fn at_most_once<'a>(
    headers: &'a HeaderMap,
    name: &HeaderName,
) -> Result<Option<&'a HeaderValue>, ()> {
    if headers.len() == headers.keys_len() {
        return Ok(headers.get(name));
    }
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(());
    }
    Ok(first)
}

fn trimmed(value: &HeaderValue) -> &[u8] {
    value.as_bytes().trim_ascii()
}

/// The method and name a request's `Mcp-Method` and `Mcp-Name` headers
/// announce, read without the body (legacy clients send neither): `None`
/// without exactly one readable `Mcp-Method`. Nothing here is checked
/// against the body; [`validate`] does that later.
pub(crate) fn announced(headers: &HeaderMap) -> Option<(&str, Option<Cow<'_, str>>)> {
    let method = single(headers, &METHOD).ok()??;
    let method = std::str::from_utf8(trimmed(method)).ok()?;
    let name = name_member(method)
        .and_then(|_| single(headers, &NAME).ok()?)
        .and_then(|raw| mcp::decode_value(trimmed(raw)).ok());
    Some((method, name))
}

/// What the mirrored headers must agree with: the body's values.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mirror<'a> {
    pub(crate) method: &'a str,
    /// `_meta` protocolVersion, when the body has one.
    pub(crate) meta_version: Option<&'a str>,
    /// `params.name` or `params.uri`, for the methods that have one.
    pub(crate) name: Option<&'a str>,
    /// `params.arguments` of a `tools/call`.
    pub(crate) arguments: Option<&'a Map<String, Value>>,
}

impl<'a> Mirror<'a> {
    /// The mirrored values of a request body.
    pub(crate) fn of(request: &'a Request) -> Mirror<'a> {
        let params = request.params.as_ref();
        Mirror {
            method: &request.method,
            meta_version: params
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get(meta::PROTOCOL_VERSION))
                .and_then(Value::as_str),
            name: name_member(&request.method)
                .and_then(|m| params.and_then(|p| p.get(m)).and_then(Value::as_str)),
            arguments: params
                .and_then(|p| p.get("arguments"))
                .and_then(Value::as_object),
        }
    }
}

/// Checks `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the
/// `Mcp-Param-*` headers of a modern request against its body.
pub(crate) fn validate(
    headers: &HeaderMap,
    body: &Mirror<'_>,
    registry: &Registry,
) -> Result<(), Fault> {
    // MCP-Protocol-Version: present (HTTP-S-18/19) and equal to _meta (HTTP-S-15).
    let version = single(headers, &VERSION)?
        .ok_or_else(|| Fault::header("missing MCP-Protocol-Version header"))?;
    let version = trimmed(version);
    if let Some(meta_version) = body.meta_version {
        if version != meta_version.as_bytes() {
            return Err(Fault::header(format!(
                "MCP-Protocol-Version header {:?} does not match _meta protocolVersion {meta_version:?}",
                String::from_utf8_lossy(version)
            )));
        }
    }
    // Mcp-Method: present and equal to the body's method (HTTP-S-20).
    let m = single(headers, &METHOD)?.ok_or_else(|| Fault::header("missing Mcp-Method header"))?;
    let m = trimmed(m);
    if m != body.method.as_bytes() {
        return Err(Fault::header(format!(
            "Mcp-Method header {:?} does not match the body's method {:?}",
            String::from_utf8_lossy(m),
            body.method
        )));
    }
    // Mcp-Name: present for tools/call, prompts/get, resources/read.
    let Some(member) = name_member(body.method) else {
        return Ok(());
    };
    let raw = single(headers, &NAME)?.ok_or_else(|| {
        Fault::header(format!(
            "missing Mcp-Name header (required for {})",
            body.method
        ))
    })?;
    let name = mcp::decode_value(trimmed(raw))
        .map_err(|e| Fault::header(format!("Mcp-Name header: {e}")))?;
    let Some(body_name) = body.name else {
        // A body without the member is malformed; the router says so.
        return Ok(());
    };
    if name != body_name {
        return Err(Fault::header(format!(
            "Mcp-Name header {name:?} does not match the body's params.{member} {body_name:?}"
        )));
    }
    if body.method == method::TOOLS_CALL {
        validate_params(headers, body.arguments, body_name, registry)?;
    }
    Ok(())
}

/// Checks the `Mcp-Param-*` headers a tool's `x-mcp-header` annotations
/// call for (HTTP-S-20…24).
fn validate_params(
    headers: &HeaderMap,
    arguments: Option<&Map<String, Value>>,
    tool: &str,
    registry: &Registry,
) -> Result<(), Fault> {
    let Some(entry) = registry.tool(tool) else {
        // Unknown tool: the router answers -32602.
        return Ok(());
    };
    if entry.header_params.is_empty() {
        return Ok(());
    }
    for param in &entry.header_params {
        let body = param.lookup(arguments);
        let header = match HeaderName::from_bytes(param.header_name().as_bytes()) {
            Ok(name) => single(headers, &name)?,
            // Cannot happen: annotations are checked to be tokens.
            Err(_) => None,
        };
        match (body, header) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(Fault::header(format!(
                    "missing Mcp-Param-{} header for argument {}",
                    param.name,
                    param.path.join(".")
                )));
            }
            (None, Some(_)) => {
                return Err(Fault::header(format!(
                    "Mcp-Param-{} header sent but argument {} is absent or null",
                    param.name,
                    param.path.join(".")
                )));
            }
            (Some(body), Some(raw)) => {
                let value = mcp::decode_value(trimmed(raw))
                    .map_err(|e| Fault::header(format!("Mcp-Param-{} header: {e}", param.name)))?;
                if !param.matches(&value, body) {
                    return Err(Fault::header(format!(
                        "Mcp-Param-{} header {value:?} does not match argument {} = {body}",
                        param.name,
                        param.path.join(".")
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Who may talk to the server through a browser or by name.
#[derive(Clone, Debug)]
pub(crate) struct Guard {
    /// Allowed `Host` names (lowercase, without port); `None` allows any.
    pub(crate) hosts: Option<Vec<String>>,
    /// Allowed origins (`scheme://host[:port]`, lowercase); `None` means
    /// loopback origins and the request's own host.
    pub(crate) origins: Option<Vec<String>>,
}

/// Host names that always mean this machine.
const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// The host of an authority (`host[:port]`, RFC 3986 §3.2), brackets kept
/// on an IPv6 literal; `None` when it is not one. Strict on purpose: a
/// name read loosely (`[::1].evil.example` taken for `[::1]`) lets a
/// foreign name pass for an allowed one.
pub(crate) fn authority_host(authority: &str) -> Option<&str> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at(end + 1);
        let port = if rest.is_empty() {
            rest
        } else {
            rest.strip_prefix(':')?
        };
        let literal = &host[1..host.len() - 1];
        literal.parse::<std::net::Ipv6Addr>().ok()?;
        (host, port)
    } else {
        // A byte search: the char searcher's set-up costs more than a
        // host name is long.
        let (host, port) = match authority.bytes().position(|b| b == b':') {
            Some(colon) => (&authority[..colon], &authority[colon + 1..]),
            None => (authority, ""),
        };
        // RFC 3986 reg-name (which takes in IPv4 addresses).
        if host.is_empty()
            || !host
                .bytes()
                .all(switchboard_wire::percent::is_reg_name_byte)
        {
            return None;
        }
        (host, port)
    };
    port.bytes().all(|b| b.is_ascii_digit()).then_some(host)
}

impl Guard {
    /// Checks `Host` against the allowed names: the header's value when it
    /// passes (it may be absent when any host is allowed); the HTTP status
    /// and reason when refused (400 for a repeated or malformed `Host`, RFC
    /// 9112 §3.2; 403 for a foreign one, HTTP-S-02). Every path is checked,
    /// not just the MCP endpoint: DNS rebinding would read anything served.
    pub(crate) fn check_host<'h>(
        &self,
        headers: &'h HeaderMap,
    ) -> Result<Option<&'h str>, (u16, &'static str)> {
        let host = at_most_once(headers, &HOST)
            .map_err(|()| (400, "the request has more than one Host header"))?;
        let host = host.and_then(|h| h.to_str().ok()).map(str::trim);
        let Some(allowed) = &self.hosts else {
            return Ok(host);
        };
        let Some(host) = host else {
            return Err((403, "the Host header is missing"));
        };
        let Some(name) = authority_host(host) else {
            return Err((
                400,
                "the Host header is not a host name with an optional port",
            ));
        };
        if allowed
            .iter()
            .any(|a| a == "*" || a.eq_ignore_ascii_case(name))
        {
            Ok(Some(host))
        } else {
            Err((
                403,
                "the Host header names a host this server does not serve",
            ))
        }
    }

    /// Checks `Origin` (HTTP-S-03) for a request whose `Host` is `host`:
    /// 403 and the reason when refused.
    pub(crate) fn check_origin(
        &self,
        headers: &HeaderMap,
        host: Option<&str>,
    ) -> Result<(), (u16, &'static str)> {
        let Some(origin) = headers.get(ORIGIN) else {
            return Ok(());
        };
        let origin = origin
            .to_str()
            .map_err(|_| (403, "the Origin header is not valid"))?
            .trim()
            .trim_end_matches('/');
        let ok = match &self.origins {
            Some(allowed) => allowed
                .iter()
                .any(|a| a == "*" || a.eq_ignore_ascii_case(origin)),
            None => {
                let authority = origin.split_once("://").map_or("", |(_, a)| a);
                authority_host(authority)
                    .is_some_and(|name| LOOPBACK.iter().any(|l| l.eq_ignore_ascii_case(name)))
                    || host.is_some_and(|h| h.eq_ignore_ascii_case(authority))
            }
        };
        if ok {
            Ok(())
        } else {
            Err((
                403,
                "the Origin header names an origin this server does not accept",
            ))
        }
    }

    /// The default for a server bound to `addr`: loopback names only when
    /// bound to loopback, any host otherwise.
    pub(crate) fn for_bind(addr: &std::net::SocketAddr) -> Guard {
        Guard {
            hosts: addr
                .ip()
                .is_loopback()
                .then(|| LOOPBACK.iter().map(|s| (*s).to_owned()).collect()),
            origins: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Guard {
        /// `Host`, then `Origin`, as the MCP endpoint checks them.
        fn check(&self, headers: &HeaderMap) -> Result<(), (u16, &'static str)> {
            let host = self.check_host(headers)?;
            self.check_origin(headers, host)
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn guard_defaults_to_loopback() {
        let g = Guard::for_bind(&"127.0.0.1:8080".parse().unwrap());
        assert!(g.check(&headers(&[("host", "127.0.0.1:8080")])).is_ok());
        assert!(
            g.check(&headers(&[
                ("host", "localhost:1"),
                ("origin", "http://localhost:3000")
            ]))
            .is_ok()
        );
        assert!(g.check(&headers(&[("host", "[::1]:9")])).is_ok());
        assert!(g.check(&headers(&[("host", "evil.example.com")])).is_err());
        assert!(
            g.check(&headers(&[
                ("host", "localhost:8080"),
                ("origin", "http://evil.example.com")
            ]))
            .is_err()
        );
        let open = Guard::for_bind(&"0.0.0.0:8080".parse().unwrap());
        assert!(open.check(&headers(&[("host", "mcp.example.com")])).is_ok());
        assert!(
            open.check(&headers(&[
                ("host", "mcp.example.com"),
                ("origin", "https://mcp.example.com")
            ]))
            .is_ok()
        );
        assert!(
            open.check(&headers(&[
                ("host", "mcp.example.com"),
                ("origin", "https://evil.example.com")
            ]))
            .is_err()
        );
    }

    // RFC 9112 §3.2: one Host; HTTP-S-02: none at all cannot be checked.
    #[test]
    fn a_repeated_or_missing_host_is_refused() {
        let g = Guard::for_bind(&"127.0.0.1:8080".parse().unwrap());
        let twice = headers(&[("host", "127.0.0.1:8080"), ("host", "evil.example.com")]);
        assert_eq!(
            g.check(&twice),
            Err((400, "the request has more than one Host header"))
        );
        assert_eq!(
            g.check(&headers(&[])),
            Err((403, "the Host header is missing"))
        );
        let origin_only = headers(&[("origin", "http://localhost:1")]);
        assert_eq!(g.check(&origin_only).map_err(|e| e.0), Err(403));
    }

    // The one-lookup shortcut of `at_most_once` agrees with the full walk.
    #[test]
    fn a_repeated_header_is_told_from_a_single_one_whatever_else_repeats() {
        let name = HeaderName::from_static("mcp-method");
        let other = HeaderName::from_static("x-other");
        // (values of `name`, values of another header)
        for (ours, others) in [
            (0, 0),
            (0, 1),
            (0, 2),
            (1, 0),
            (1, 1),
            (1, 3),
            (2, 0),
            (2, 1),
            (3, 2),
        ] {
            let mut headers = HeaderMap::new();
            for i in 0..others {
                headers.append(&other, HeaderValue::from(i));
            }
            for i in 0..ours {
                headers.append(&name, HeaderValue::from(i));
            }
            let expected = match ours {
                0 => Ok(None),
                1 => Ok(Some(HeaderValue::from(0))),
                _ => Err(()),
            };
            let got = at_most_once(&headers, &name).map(|v| v.cloned());
            assert_eq!(got, expected, "{ours} of ours, {others} of another");
        }
    }

    // Issue 36: a Host (or Origin) that only begins like an allowed name is
    // not that name.
    #[test]
    fn an_authority_is_read_strictly() {
        let cases: &[(&str, Option<&str>)] = &[
            ("localhost", Some("localhost")),
            ("localhost:8080", Some("localhost")),
            ("localhost:", Some("localhost")),
            ("127.0.0.1:9", Some("127.0.0.1")),
            ("[::1]", Some("[::1]")),
            ("[::1]:8080", Some("[::1]")),
            ("[::ffff:127.0.0.1]:1", Some("[::ffff:127.0.0.1]")),
            ("[::1].evil.example", None),
            ("[::1]evil", None),
            ("[::1]:80x", None),
            ("[evil.example]", None),
            ("[::1", None),
            ("::1", None),
            ("localhost:80:90", None),
            ("localhost:http", None),
            ("evil.example/localhost", None),
            ("evil@localhost", None),
            ("", None),
            (":80", None),
        ];
        for (authority, host) in cases {
            assert_eq!(authority_host(authority), *host, "{authority:?}");
        }
    }

    #[test]
    fn a_host_that_only_begins_like_loopback_is_refused() {
        let g = Guard::for_bind(&"127.0.0.1:8080".parse().unwrap());
        let rebinding = headers(&[("host", "[::1].evil.example")]);
        assert_eq!(g.check(&rebinding).map_err(|e| e.0), Err(400));
        let rebinding = headers(&[("host", "[::1].evil.example:8080")]);
        assert_eq!(g.check(&rebinding).map_err(|e| e.0), Err(400));
        // The same trick in an Origin is a foreign origin.
        let origin = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://[::1].evil.example"),
        ]);
        assert_eq!(g.check(&origin).map_err(|e| e.0), Err(403));
        let origin = headers(&[("host", "127.0.0.1:8080"), ("origin", "http://[::1]:3000")]);
        assert!(g.check(&origin).is_ok());
    }
}
