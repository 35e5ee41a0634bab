//! Switchboard host layer (see docs/ARCHITECTURE.md).

pub mod audit;
pub mod budget;
pub mod config;
mod fsutil;
pub mod permission;
pub mod pins;
pub mod sanitize;
pub mod table;
mod breaker;
