//! The Streamable HTTP transport and the HTTP side of the `Client`.

mod legacy;
mod transport;
mod util;
