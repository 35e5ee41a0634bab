//! The stdio transport and the `Client` against real server processes.

mod util;

mod client;
mod era;
mod hostile;
mod lifecycle;
mod tasks;
mod transport;
