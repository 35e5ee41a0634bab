//! Integration tests of the OAuth client, one binary: the real `Client`
//! and HTTP transport with an `OAuthProvider`, against
//! `switchboard-authkit`'s authorization server and protected MCP endpoint
//! on 127.0.0.1 (see `oauth`).

// Helpers outside #[test] functions panic on failure too: that is how a test
// fails.
#![allow(clippy::unwrap_used)]

// The client's scripted HTTP server, shared rather than copied: the
// `overtaken` tests hold one request while another one's token is replaced.
// Only part of it is used here.
#[allow(dead_code)]
#[path = "../../client/tests/http/util.rs"]
mod http_util;
mod oauth;
