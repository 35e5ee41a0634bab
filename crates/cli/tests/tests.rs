//! Integration tests of the `switchboard` binary: each runs the built
//! binary as a user would (real processes, real sockets on loopback).

// Helpers outside `#[test]` functions panic on anything unexpected too:
// a panic there is the test's failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod util;

mod approval;
mod auth;
mod call;
mod chat;
mod config;
mod console;
mod console_access;
mod console_util;
mod demo;
mod eval;
mod gateway_auth;
mod gateway_http;
mod gateway_util;
mod identity;
mod input;
mod inspect;
mod listing;
mod ops;
mod privilege;
mod replicas;
mod resume;
mod sandbox;
mod serve;
mod shared_state;
mod skills;
mod state;
mod tasks;
mod ts_client;
