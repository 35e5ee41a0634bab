//! Fixtures Switchboard's own test suites share, beside the test binaries
//! this crate builds (`mock-server`, `hostile-server`, `client-holder`).
//!
//! # Layout
//! - [`fixtures`]: a server of our framework served on `127.0.0.1:0`
//!   ([`fixtures::serve_http`]), and an input handler that answers every
//!   form the same way and records what it was asked
//!   ([`fixtures::FormAnswers`]).
//!
//! # Why here
//! The fixtures need the server framework and the client, so they cannot
//! live in `switchboard-testutil`, which the server and client themselves
//! use for their unit tests. This crate depends on both; the crates whose
//! integration tests use it list it as a dev-dependency. Integration tests
//! link the same build of a crate as this one does, so the types agree;
//! a crate's own unit tests (`#[cfg(test)]` inside `src/`) must not use it.
//!
//! # Example
//! ```no_run
//! # async fn demo() {
//! use switchboard_testkit::fixtures::serve_http;
//!
//! let server = switchboard_server::Server::builder("t", "1.0.0").build().unwrap();
//! let (url, _served) = serve_http(server).await;
//! assert!(url.ends_with("/mcp"));
//! # }
//! ```

pub mod fixtures;
