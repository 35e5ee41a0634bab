//! Switchboard's MCP client layer (see docs/ARCHITECTURE.md).

pub mod error;
pub mod transport;

pub use error::TransportError;
pub use transport::{BoxFuture, NotificationSink, Outgoing, Transport};
