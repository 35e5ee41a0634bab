//! Absolute `http`/`https` URLs the way OAuth uses them: split into parts
//! without rewriting them, compared in the canonical form RFC 8707 and the
//! MCP authorization spec describe, and turned into well-known URLs.
//!
//! OAuth identifiers (issuers, resources) are compared as strings, so this
//! module never re-serialises a URL it was given unless it is asked for a
//! canonical form: an issuer stays exactly as the server wrote it.

use std::fmt;

/// An absolute `http` or `https` URL, split into its parts.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct HttpUrl {
    /// `http` or `https`, lower-cased.
    scheme: String,
    /// The host as written (brackets kept for IPv6 literals).
    host: String,
    /// The explicit port, if any.
    port: Option<u16>,
    /// The path as written: empty or starting with `/`.
    path: String,
    /// The query without its `?`.
    query: Option<String>,
    /// The fragment without its `#`.
    fragment: Option<String>,
}

impl HttpUrl {
    /// Parses an absolute `http`/`https` URL with a host and no user info.
    pub(crate) fn parse(input: &str) -> Result<HttpUrl, String> {
        if input.is_empty() {
            return Err("the URL is empty".into());
        }
        if input.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err("the URL contains spaces or control characters".into());
        }
        let Some((scheme, rest)) = input.split_once("://") else {
            return Err("the URL has no scheme".into());
        };
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(format!("the URL scheme {scheme:?} is not http or https"));
        }
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        if authority.contains('@') {
            return Err("the URL contains user information".into());
        }
        let (host, port) = split_host_port(authority)?;
        let (before_fragment, fragment) = match tail.split_once('#') {
            Some((a, f)) => (a, Some(f.to_owned())),
            None => (tail, None),
        };
        let (path, query) = match before_fragment.split_once('?') {
            Some((p, q)) => (p, Some(q.to_owned())),
            None => (before_fragment, None),
        };
        Ok(HttpUrl {
            scheme,
            host: host.to_owned(),
            port,
            path: path.to_owned(),
            query,
            fragment,
        })
    }

    /// `http` or `https`.
    pub(crate) fn scheme(&self) -> &str {
        &self.scheme
    }

    /// The path as written (empty or starting with `/`).
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The query, without its `?`.
    pub(crate) fn query(&self) -> Option<&str> {
        self.query.as_deref()
    }

    /// Whether the URL has a fragment.
    pub(crate) fn has_fragment(&self) -> bool {
        self.fragment.is_some()
    }

    /// Whether the host is a loopback address or `localhost`.
    pub(crate) fn is_loopback(&self) -> bool {
        let host = self.host.to_ascii_lowercase();
        host == "localhost"
            || host.ends_with(".localhost")
            || host == "[::1]"
            || host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// `scheme://host[:port]` with scheme and host lower-cased and the
    /// default port left out.
    pub(crate) fn origin(&self) -> String {
        let default = if self.scheme == "https" { 443 } else { 80 };
        let host = self.host.to_ascii_lowercase();
        match self.port {
            Some(port) if port != default => format!("{}://{host}:{port}", self.scheme),
            _ => format!("{}://{host}", self.scheme),
        }
    }

    /// The path without its trailing slashes (so `/` and `//` become
    /// empty). Trimming them all keeps the canonical form stable: `//`
    /// trimmed once would leave `/`, which trims again.
    pub(crate) fn trimmed_path(&self) -> &str {
        self.path.trim_end_matches('/')
    }

    /// The canonical form (RFC 8707, MCP "Canonical Server URI"): origin
    /// lower-cased without the default port, path without a trailing slash,
    /// query kept, fragment dropped.
    pub(crate) fn canonical(&self) -> String {
        let mut out = self.origin();
        out.push_str(self.trimmed_path());
        if let Some(query) = &self.query {
            out.push('?');
            out.push_str(query);
        }
        out
    }

    /// The well-known Protected Resource Metadata URLs to try for this
    /// resource, in the spec's order (AUTH-C-02): path-inserted first (when
    /// the resource has a path), then the root.
    pub(crate) fn protected_resource_metadata_urls(&self) -> Vec<String> {
        const SUFFIX: &str = "/.well-known/oauth-protected-resource";
        let origin = self.origin();
        let mut urls = Vec::with_capacity(2);
        let path = self.trimmed_path();
        if !path.is_empty() {
            let mut url = format!("{origin}{SUFFIX}{path}");
            if let Some(query) = &self.query {
                url.push('?');
                url.push_str(query);
            }
            urls.push(url);
        }
        urls.push(format!("{origin}{SUFFIX}"));
        urls
    }

    /// The authorization server metadata URLs to try for this issuer, in the
    /// spec's order (AUTH-C-03). An issuer with a path never falls back to
    /// the root well-known URLs.
    pub(crate) fn authorization_server_metadata_urls(&self) -> Vec<String> {
        const OAUTH: &str = "/.well-known/oauth-authorization-server";
        const OIDC: &str = "/.well-known/openid-configuration";
        let origin = self.origin();
        let path = self.trimmed_path();
        if path.is_empty() {
            vec![format!("{origin}{OAUTH}"), format!("{origin}{OIDC}")]
        } else {
            vec![
                format!("{origin}{OAUTH}{path}"),
                format!("{origin}{OIDC}{path}"),
                format!("{origin}{path}{OIDC}"),
            ]
        }
    }

    /// Whether `self` (a Protected Resource Metadata `resource`) names the
    /// server at `server` (AUTH-C-16/17): same origin once canonical, and a
    /// path equal to the server's or a parent of it at a segment boundary
    /// (a resource published at the root well-known URL names the origin).
    pub(crate) fn covers(&self, server: &HttpUrl) -> bool {
        if self.origin() != server.origin() || self.fragment.is_some() {
            return false;
        }
        if self.query.is_some() && self.query != server.query {
            return false;
        }
        let mine = self.trimmed_path();
        let theirs = server.trimmed_path();
        mine.is_empty()
            || mine == theirs
            || theirs
                .strip_prefix(mine)
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

impl fmt::Debug for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The query can carry codes and state: show only where it points.
        write!(f, "{}{}", self.origin(), self.path)
    }
}

/// Splits `host[:port]`, keeping IPv6 brackets.
fn split_host_port(authority: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if authority.starts_with('[') {
        let Some(end) = authority.find(']') else {
            return Err("the URL has an unterminated IPv6 address".into());
        };
        let (host, rest) = authority.split_at(end + 1);
        match rest.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None if rest.is_empty() => (host, None),
            None => return Err("the URL has junk after its IPv6 address".into()),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err("the URL has no host".into());
    }
    if !valid_host(host) {
        return Err(format!(
            "the URL host {host:?} is not a host name or IP address"
        ));
    }
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(
            p.parse::<u16>()
                .map_err(|_| format!("the URL port {p:?} is not a number"))?,
        ),
    };
    Ok((host, port))
}

/// RFC 3986 `host`: an IP literal in brackets (hex digits, `:` and `.`),
/// or a registered name or IPv4 address (unreserved, sub-delims and
/// percent-encoding; never `:`, brackets or other characters).
fn valid_host(host: &str) -> bool {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.contains(':')
            && inner
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
    }
    host.bytes()
        .all(switchboard_wire::percent::is_reg_name_byte)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fuzz finding (`oauth_metadata`): a host holding `:`, a backquote and
    /// a bracket parsed, and its canonical form no longer did.
    #[test]
    fn a_host_with_colons_or_brackets_is_refused() {
        let found = "https://1:`:[::4444tps://[::1]:8443/a441]3";
        assert!(HttpUrl::parse(found).is_err());
        for bad in [
            "https://a:b:80/",
            "https://a`b/",
            "https://a]b/",
            "https://[zz]/",
            "https://[]/",
        ] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad}");
        }
        for good in [
            "https://[::1]:8443/a",
            "http://127.0.0.1:3000/mcp",
            "https://a.example-b_c~d/",
            "http://localhost:/x",
        ] {
            let u = url(good);
            assert_eq!(url(&u.canonical()).canonical(), u.canonical(), "{good}");
        }
    }

    /// Fuzz finding (`oauth_metadata`): `https://tps://#f` has the path
    /// `//`; trimming one slash gave the canonical `https://tps/`, whose own
    /// canonical form is `https://tps`.
    #[test]
    fn a_path_of_slashes_has_a_stable_canonical_form() {
        for (input, canonical) in [
            ("https://tps://#f", "https://tps"),
            ("https://a.example///", "https://a.example"),
            ("https://a.example/b//?q", "https://a.example/b?q"),
        ] {
            let u = url(input);
            assert_eq!(u.canonical(), canonical, "{input}");
            assert_eq!(url(&u.canonical()).canonical(), canonical, "{input}");
        }
    }

    fn url(s: &str) -> HttpUrl {
        HttpUrl::parse(s).unwrap()
    }

    #[test]
    fn parses_and_keeps_parts() {
        let u = url("HTTPS://Mcp.Example.com:8443/a/b?x=1#frag");
        assert_eq!(u.scheme(), "https");
        assert_eq!(u.origin(), "https://mcp.example.com:8443");
        assert_eq!(u.path(), "/a/b");
        assert_eq!(u.query(), Some("x=1"));
        assert!(u.has_fragment());
        let v6 = url("http://[::1]:3000/mcp");
        assert_eq!(v6.origin(), "http://[::1]:3000");
        assert!(v6.is_loopback());
    }

    #[test]
    fn rejects_what_is_not_an_http_url() {
        for bad in [
            "",
            "mcp.example.com",
            "ftp://x/y",
            "https://",
            "https://user@host/",
            "https://host:port/",
            "https://ho st/",
            "https://[::1/",
        ] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad:?} must be refused");
        }
    }

    // AUTH-C-17: canonical form lower-cases scheme and host, drops the
    // default port, the trailing slash and the fragment.
    #[test]
    fn canonical_form() {
        for (input, canonical) in [
            ("https://mcp.example.com", "https://mcp.example.com"),
            ("https://mcp.example.com/", "https://mcp.example.com"),
            ("HTTPS://MCP.Example.COM/mcp", "https://mcp.example.com/mcp"),
            (
                "https://mcp.example.com:443/mcp",
                "https://mcp.example.com/mcp",
            ),
            ("http://localhost:80/mcp/", "http://localhost/mcp"),
            (
                "https://mcp.example.com:8443",
                "https://mcp.example.com:8443",
            ),
            (
                "https://mcp.example.com/mcp#frag",
                "https://mcp.example.com/mcp",
            ),
            (
                "https://mcp.example.com/mcp?t=1",
                "https://mcp.example.com/mcp?t=1",
            ),
        ] {
            assert_eq!(url(input).canonical(), canonical, "{input}");
        }
    }

    // AUTH-C-02: path-inserted first, then root; the root only for a server
    // at the root.
    #[test]
    fn protected_resource_metadata_urls_in_order() {
        assert_eq!(
            url("https://example.com/public/mcp").protected_resource_metadata_urls(),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            url("https://example.com/").protected_resource_metadata_urls(),
            ["https://example.com/.well-known/oauth-protected-resource"]
        );
    }

    // AUTH-C-03: the exact order for path and root issuers.
    #[test]
    fn authorization_server_metadata_urls_in_order() {
        assert_eq!(
            url("https://auth.example.com/tenant1").authorization_server_metadata_urls(),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            url("https://auth.example.com").authorization_server_metadata_urls(),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        // A terminating slash is removed before insertion (RFC 8414 §3.1).
        assert_eq!(
            url("https://auth.example.com/").authorization_server_metadata_urls(),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn resource_coverage() {
        let server = url("http://localhost:3000/mcp");
        for ok in [
            "http://localhost:3000/mcp",
            "http://localhost:3000/mcp/",
            "HTTP://LOCALHOST:3000/mcp",
            "http://localhost:3000",
            "http://localhost:3000/",
        ] {
            assert!(url(ok).covers(&server), "{ok} covers the server");
        }
        for bad in [
            "https://evil.example.com/mcp",
            "http://localhost:3001/mcp",
            "https://localhost:3000/mcp",
            "http://localhost:3000/mc",
            "http://localhost:3000/mcp/other",
            "http://localhost:3000/mcp#f",
            "http://localhost:3000/mcp?x=1",
        ] {
            assert!(!url(bad).covers(&server), "{bad} must not cover the server");
        }
        assert!(url("https://x.example/a").covers(&url("https://x.example/a/b")));
        assert!(!url("https://x.example/a").covers(&url("https://x.example/ab")));
    }

    #[test]
    fn loopback_hosts() {
        for host in [
            "http://localhost/",
            "http://127.0.0.1:1/",
            "http://127.9.9.9/",
            "http://[::1]/",
            "http://a.localhost/",
        ] {
            assert!(url(host).is_loopback(), "{host}");
        }
        for host in [
            "http://example.com/",
            "http://10.0.0.1/",
            "http://localhost.example.com/",
        ] {
            assert!(!url(host).is_loopback(), "{host}");
        }
    }

    #[test]
    fn debug_hides_the_query() {
        let u = url("http://127.0.0.1:5/cb?code=SECRET&state=S");
        assert!(!format!("{u:?}").contains("SECRET"));
    }
}
