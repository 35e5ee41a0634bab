//! `WWW-Authenticate` parsing (RFC 9110 §11.6.1, RFC 6750 §3).
//!
//! A header field holds one or more challenges separated by commas; each is
//! an auth-scheme followed by either a token68 or a comma-separated list of
//! `name=value` parameters, the value a token or a quoted string with
//! backslash escapes. Commas therefore separate both parameters and
//! challenges: a new challenge starts where a token is followed by
//! whitespace and another token instead of `=`. Scheme and parameter names
//! are case-insensitive; values are kept exactly (after unquoting).

use std::fmt;

/// One challenge from a `WWW-Authenticate` header.
#[derive(Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The auth-scheme as sent (compare with [`Challenge::is_scheme`]).
    pub scheme: String,
    /// The token68 form of the credentials, when the challenge uses it.
    pub token68: Option<String>,
    /// The parameters in order, names lower-cased, values unquoted.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// Whether this challenge's scheme is `scheme` (case-insensitive).
    pub fn is_scheme(&self, scheme: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(scheme)
    }

    /// The value of parameter `name` (case-insensitive).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Debug for Challenge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Challenge")
            .field("scheme", &self.scheme)
            .field("token68", &self.token68.as_ref().map(|_| "<redacted>"))
            .field("params", &self.params)
            .finish()
    }
}

/// What a `Bearer` challenge tells an OAuth client (RFC 6750 §3,
/// RFC 9728 §5.1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// `resource_metadata`: where the Protected Resource Metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`, split on spaces: the scopes the operation needs.
    pub scope: Option<Vec<String>>,
    /// `error`, e.g. `invalid_token` or `insufficient_scope`.
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
    /// `realm`.
    pub realm: Option<String>,
}

impl BearerChallenge {
    /// The first `Bearer` (else `DPoP`) challenge among the given header
    /// values, if any.
    /// A header value that does not parse is skipped (and logged): the
    /// caller falls back to well-known discovery.
    pub fn from_headers<S: AsRef<str>>(values: &[S]) -> Option<BearerChallenge> {
        values.iter().find_map(|value| {
            let challenges = match parse(value.as_ref()) {
                Ok(c) => c,
                Err(e) => {
                    tracing::debug!(error = %e, "ignoring a WWW-Authenticate header that does not parse");
                    return None;
                }
            };
            // RFC 9449 §7.1: a `DPoP` challenge carries the same
            // parameters; `Bearer` is preferred when both are offered.
            let pick = challenges
                .iter()
                .position(|c| c.is_scheme("Bearer"))
                .or_else(|| challenges.iter().position(|c| c.is_scheme("DPoP")))?;
            Some(BearerChallenge::from_challenge(&challenges[pick]))
        })
    }

    /// Reads the Bearer parameters of `challenge`.
    pub fn from_challenge(challenge: &Challenge) -> BearerChallenge {
        let get = |name: &str| challenge.param(name).map(str::to_owned);
        BearerChallenge {
            resource_metadata: get("resource_metadata"),
            scope: challenge.param("scope").map(split_scope),
            error: get("error"),
            error_description: get("error_description"),
            realm: get("realm"),
        }
    }

    /// Whether the challenge says `error="insufficient_scope"`.
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Why a `WWW-Authenticate` value did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed WWW-Authenticate at byte {at}: {what}")]
pub struct ChallengeError {
    /// Byte offset of the problem.
    pub at: usize,
    /// What was wrong.
    pub what: &'static str,
}

/// Parses one `WWW-Authenticate` field value into its challenges.
///
/// # Errors
/// [`ChallengeError`] for a value that is not a valid challenge list
/// (unterminated quoted string, a parameter without a value, a parameter
/// given twice in one challenge, junk between parameters).
pub fn parse(input: &str) -> Result<Vec<Challenge>, ChallengeError> {
    let mut p = Parser {
        s: input.as_bytes(),
        i: 0,
    };
    let mut out = Vec::new();
    loop {
        p.skip_list_separators();
        if p.at_end() {
            break;
        }
        let scheme = p
            .token()
            .ok_or_else(|| p.error("expected an auth-scheme"))?;
        let mut challenge = Challenge {
            scheme: scheme.to_owned(),
            token68: None,
            params: Vec::new(),
        };
        let had_space = p.skip_spaces();
        if had_space && !p.at_end() && p.peek() != Some(b',') {
            // The first thing after the scheme: a parameter or a token68.
            if p.looks_like_param() {
                p.params(&mut challenge)?;
            } else {
                let t = p
                    .token68()
                    .ok_or_else(|| p.error("expected a token68 or a parameter"))?;
                challenge.token68 = Some(t.to_owned());
                p.skip_spaces();
                if !p.at_end() && p.peek() != Some(b',') {
                    return Err(p.error("junk after a token68"));
                }
            }
        } else if !p.at_end() && p.peek() != Some(b',') {
            return Err(p.error("expected a space after the auth-scheme"));
        }
        out.push(challenge);
    }
    Ok(out)
}

/// Splits a `scope` value on spaces, dropping empty entries.
pub(crate) fn split_scope(value: &str) -> Vec<String> {
    value
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn error(&self, what: &'static str) -> ChallengeError {
        ChallengeError { at: self.i, what }
    }

    /// Skips SP / HTAB; says whether there was any.
    fn skip_spaces(&mut self) -> bool {
        let start = self.i;
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
        self.i > start
    }

    /// Skips whitespace and empty list elements (`, ,`).
    fn skip_list_separators(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.i += 1;
        }
    }

    fn token(&mut self) -> Option<&'a str> {
        let start = self.i;
        while self.peek().is_some_and(is_tchar) {
            self.i += 1;
        }
        (self.i > start).then(|| self.slice(start))
    }

    fn token68(&mut self) -> Option<&'a str> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
        {
            self.i += 1;
        }
        if self.i == start {
            return None;
        }
        while self.peek() == Some(b'=') {
            self.i += 1;
        }
        Some(self.slice(start))
    }

    fn slice(&self, start: usize) -> &'a str {
        // Only ASCII bytes were consumed, so this is a char boundary.
        std::str::from_utf8(&self.s[start..self.i]).unwrap_or_default()
    }

    /// Whether the input here is `token BWS "=" BWS (token / quoted-string)`
    /// rather than a token68 such as `abc==`.
    fn looks_like_param(&self) -> bool {
        let mut probe = Parser {
            s: self.s,
            i: self.i,
        };
        if probe.token().is_none() {
            return false;
        }
        probe.skip_spaces();
        if probe.peek() != Some(b'=') {
            return false;
        }
        probe.i += 1;
        probe.skip_spaces();
        matches!(probe.peek(), Some(b'"'))
            || probe.peek().is_some_and(is_tchar) && probe.peek() != Some(b'=')
    }

    /// Parses `#auth-param` until the end or the start of a new challenge.
    fn params(&mut self, challenge: &mut Challenge) -> Result<(), ChallengeError> {
        loop {
            let name = self
                .token()
                .ok_or_else(|| self.error("expected a parameter name"))?
                .to_ascii_lowercase();
            self.skip_spaces();
            if self.peek() != Some(b'=') {
                return Err(self.error("expected '=' after a parameter name"));
            }
            self.i += 1;
            self.skip_spaces();
            let value = if self.peek() == Some(b'"') {
                self.quoted()?
            } else {
                self.token()
                    .ok_or_else(|| self.error("expected a parameter value"))?
                    .to_owned()
            };
            if challenge.params.iter().any(|(n, _)| *n == name) {
                return Err(self.error("a parameter appears twice in one challenge"));
            }
            challenge.params.push((name, value));
            self.skip_spaces();
            if self.at_end() {
                return Ok(());
            }
            if self.peek() != Some(b',') {
                return Err(self.error("expected ',' between parameters"));
            }
            // After the comma: another parameter of this challenge, an empty
            // element, or the scheme of the next challenge.
            let after_comma = self.i;
            self.skip_list_separators();
            if self.at_end() {
                return Ok(());
            }
            if !self.looks_like_param() {
                self.i = after_comma;
                return Ok(());
            }
        }
    }

    fn quoted(&mut self) -> Result<String, ChallengeError> {
        let open = self.i;
        self.i += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => {
                    return Err(ChallengeError {
                        at: open,
                        what: "unterminated quoted string",
                    });
                }
                Some(b'"') => {
                    self.i += 1;
                    break;
                }
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        Some(b) if b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80 => {
                            out.push(b);
                            self.i += 1;
                        }
                        _ => return Err(self.error("bad escape in a quoted string")),
                    }
                }
                Some(b) if b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80 => {
                    out.push(b);
                    self.i += 1;
                }
                Some(_) => return Err(self.error("control character in a quoted string")),
            }
        }
        String::from_utf8(out).map_err(|_| ChallengeError {
            at: open,
            what: "quoted string is not UTF-8",
        })
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<Challenge> {
        parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[test]
    fn bearer_with_quoted_params() {
        let c = p(
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write""#,
        );
        assert_eq!(c.len(), 1);
        assert!(c[0].is_scheme("bearer"));
        assert_eq!(
            c[0].param("RESOURCE_METADATA"),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        let b = BearerChallenge::from_challenge(&c[0]);
        assert_eq!(b.scope.unwrap(), ["files:read", "files:write"]);
    }

    #[test]
    fn escapes_and_commas_inside_quotes() {
        let c = p(r#"Bearer realm="a \"b\", c\\d", error=invalid_token"#);
        assert_eq!(c[0].param("realm"), Some(r#"a "b", c\d"#));
        assert_eq!(c[0].param("error"), Some("invalid_token"));
    }

    #[test]
    fn multiple_challenges_in_one_value() {
        let c = p(
            r#"Basic realm="x", Bearer error="insufficient_scope", scope="mcp:write", DPoP algs="ES256""#,
        );
        let schemes: Vec<_> = c.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Basic", "Bearer", "DPoP"]);
        assert_eq!(c[1].param("scope"), Some("mcp:write"));
        assert_eq!(c[2].param("algs"), Some("ES256"));
        assert!(c[0].param("scope").is_none());
        let b = BearerChallenge::from_headers(&[r#"Basic realm="x", bEaReR scope="a""#]).unwrap();
        assert_eq!(b.scope.unwrap(), ["a"]);
    }

    #[test]
    fn bare_scheme_token68_and_whitespace() {
        let c = p("Bearer");
        assert_eq!(c[0].params.len(), 0);
        // `realm=` with nothing after it is a token68 (base64 padding).
        assert_eq!(p("Bearer realm=")[0].token68.as_deref(), Some("realm="));
        let c = p("Negotiate abc+/def==, Bearer");
        assert_eq!(c[0].token68.as_deref(), Some("abc+/def=="));
        assert!(c[1].is_scheme("Bearer"));
        let c = p("  Bearer   error = \"invalid_token\" ,  ,scope=\"a b\"  ");
        assert_eq!(c[0].param("error"), Some("invalid_token"));
        assert_eq!(c[0].param("scope"), Some("a b"));
        // The order of parameters does not matter (the step-up mocks put
        // error last).
        let c = p(
            r#"Bearer scope="mcp:write", resource_metadata="http://h/x", error="insufficient_scope""#,
        );
        assert!(BearerChallenge::from_challenge(&c[0]).is_insufficient_scope());
    }

    #[test]
    fn malformed_values_are_errors() {
        for bad in [
            r#"Bearer realm="unterminated"#,
            r#"Bearer realm="a",, =x"#,
            r#"Bearer realm="a" junk"#,
            r#"Bearer realm="a", realm="b""#,
            r#"Bearer realm="a	\"#,
            "=oops",
            "Bearer realm=\"a\u{1}\"",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} must not parse");
        }
        // A header that does not parse yields no Bearer challenge.
        assert!(BearerChallenge::from_headers(&[r#"Bearer realm="a", realm="b""#]).is_none());
    }

    #[test]
    fn first_bearer_across_header_values() {
        let b = BearerChallenge::from_headers(&[
            r#"Basic realm="x""#,
            r#"Bearer resource_metadata="http://a/prm""#,
            r#"Bearer resource_metadata="http://b/prm""#,
        ])
        .unwrap();
        assert_eq!(b.resource_metadata.as_deref(), Some("http://a/prm"));
        assert!(BearerChallenge::from_headers::<&str>(&[]).is_none());
    }

    #[test]
    fn scope_splitting_ignores_extra_spaces() {
        assert_eq!(split_scope("  a  b "), ["a", "b"]);
        assert!(split_scope("").is_empty());
    }
}
