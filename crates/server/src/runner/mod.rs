//! Runners: the byte-level ends of the server, one per transport.

pub(crate) mod body;
pub(crate) mod forward;
pub(crate) mod headers;
pub(crate) mod http;
pub(crate) mod stdio;
pub(crate) mod tls;
