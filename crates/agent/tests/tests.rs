//! Integration tests of the agent crate: the providers against local
//! servers speaking their wire formats, and the loop against the demo
//! servers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod util;

mod agent;
mod anthropic;
mod eval;
mod openai;
mod scale;
