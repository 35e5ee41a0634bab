//! OAuth 2.1 end to end: the real `Client` and HTTP transport with an
//! `OAuthProvider`, against `switchboard-authkit`'s authorization server and
//! protected MCP endpoint on 127.0.0.1. Requirement IDs (AUTH-C-…) are from
//! the spec checklist.

mod discovery;
mod flow;
mod identity;
mod iss;
mod logs;
mod overtaken;
mod scope;
mod store;
mod tokens;
mod util;
