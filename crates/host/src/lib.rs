//! Switchboard host layer (see docs/ARCHITECTURE.md).

pub mod config;
pub mod permission;
