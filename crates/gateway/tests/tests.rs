//! The gateway's integration tests: one binary, one module per topic.

// Tests may unwrap: a panic is the failure report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod approvals;
mod harness;
mod identity;
mod inbound;
mod least_privilege;
mod legacy_relay;
mod live_status;
mod offer;
mod relay;
mod serve;
mod shared_state;
mod skills;
mod tasks;
mod util;
