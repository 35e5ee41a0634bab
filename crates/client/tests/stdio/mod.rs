//! The stdio transport and the `Client` against real server processes.

mod util;

mod client;
mod era;
mod hostile;
mod legacy_tasks;
mod lifecycle;
#[cfg(target_os = "linux")]
mod sandbox;
mod tasks;
mod transport;
