//! Integration tests of the host: real stdio servers (the testkit's
//! mock-server) and real HTTP servers on 127.0.0.1.

// Helpers outside #[test] functions panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used)]

mod util;

mod audit;
mod auth;
mod breaker;
mod builtin;
mod call;
mod config;
mod gate;
mod idp;
mod input;
mod limits;
mod listing;
mod mount;
mod naming;
mod outage;
mod pins;
mod reload;
mod requests;
mod retry;
mod sandbox;
mod scale;
mod skill_server;
mod skills;
mod soak;
mod supervision;
mod tasks;
