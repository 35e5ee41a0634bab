//! The stdio transport and the `Client` against real server processes.

mod util;

mod client;
mod era;
mod hostile;
mod legacy_tasks;
mod lifecycle;
mod tasks;
mod transport;
