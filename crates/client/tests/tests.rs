//! Integration tests of the client, one binary.
//!
//! `stdio`: the stdio transport and the `Client` against real processes:
//! the testkit's `mock-server` (told to misbehave by flags) and a holder
//! process for the kill tests. The testkit binaries are built on demand by
//! `stdio::util::bin` (one `cargo build -p switchboard-testkit --bins` per
//! test process, a no-op when they are fresh; once per run under nextest),
//! so `cargo test -p switchboard-client` and `cargo nextest run -p
//! switchboard-client` both work from a clean tree. Set
//! `SWITCHBOARD_TESTKIT_BIN_DIR` to use prebuilt binaries instead.

// Helpers outside #[test] functions panic on failure too: that is how a test
// fails.
#![allow(clippy::unwrap_used)]

#[cfg(feature = "http")]
mod http;
mod stdio;
