//! The Streamable HTTP transport and the HTTP side of the `Client`.

mod client;
mod framework;
mod legacy;
mod server;
mod skills;
mod tasks;
mod tls;
mod transport;
pub(crate) mod util;
mod wire;
