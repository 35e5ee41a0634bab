//! The gateway's integration tests: downstream servers built on
//! `switchboard-server`, served over HTTP on loopback, mounted by a host,
//! and the gateway driven by our client.

// Helpers outside #[test] functions panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod offer;
mod relay;
mod tasks;
mod util;
