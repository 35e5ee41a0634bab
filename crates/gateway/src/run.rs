//! The runners: the gateway's server over stdio or Streamable HTTP.

use std::sync::Arc;

use switchboard_server::Server;
use switchboard_server::http::{HttpOptions, PlainResponse, PlainRoute};

use crate::GatewayError;

/// Serves on stdin/stdout until stdin ends.
pub(crate) async fn stdio(server: &Server) -> Result<(), GatewayError> {
    switchboard_server::stdio::serve(server.clone()).await?;
    Ok(())
}

/// Serves Streamable HTTP on `listener` with `options` until `shutdown`.
pub(crate) async fn http(
    server: &Server,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), GatewayError> {
    switchboard_server::http::serve(server.clone(), listener, options, shutdown).await?;
    Ok(())
}

/// `options` with `/metrics` answered by `render` (Prometheus text).
pub(crate) fn with_metrics(
    options: HttpOptions,
    render: impl Fn() -> String + Send + Sync + 'static,
) -> HttpOptions {
    let render = Arc::new(render);
    let route: PlainRoute = Arc::new(move || {
        let render = render.clone();
        Box::pin(async move { PlainResponse::new(200, crate::metrics::CONTENT_TYPE, render()) })
    });
    options.plain_route("/metrics", route)
}
