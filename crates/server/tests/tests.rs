//! Integration tests of the server framework: real sockets on 127.0.0.1:0,
//! real child processes for stdio. Requirement ids from the spec checklist
//! are cited in test names or comments.

// Helpers outside #[test] functions panic on failure too: that is how a
// test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod util;

mod auth;
mod auth_logs;
mod headers;
mod hostile;
mod legacy;
mod limits;
mod listen;
mod mrtr;
mod protocol;
mod rebinding;
mod skills;
mod stdio;
mod tasks;
mod tls;
mod transport;
mod typed_arguments;
