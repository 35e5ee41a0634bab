//! The runners: the gateway's server over stdio or Streamable HTTP.

use switchboard_server::Server;
use switchboard_server::http::HttpOptions;

use crate::GatewayError;

/// Serves on stdin/stdout until stdin ends.
pub(crate) async fn stdio(server: &Server) -> Result<(), GatewayError> {
    switchboard_server::stdio::serve(server.clone()).await?;
    Ok(())
}

/// Serves Streamable HTTP on `listener` until `shutdown`.
pub(crate) async fn http(
    server: &Server,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), GatewayError> {
    switchboard_server::http::serve(server.clone(), listener, options, shutdown).await?;
    Ok(())
}
