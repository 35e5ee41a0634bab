//! Errors of the client layer.

/// Why a transport could not deliver a request or its response.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The channel to the server is gone (process exited, stream broke,
    /// transport closed); `cause` says how, with exit status and the last
    /// stderr lines where there are some.
    #[error("connection to {server} closed: {cause}")]
    Closed {
        /// The server's name (alias).
        server: String,
        /// What happened.
        cause: String,
    },
}
