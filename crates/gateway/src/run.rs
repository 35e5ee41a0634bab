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

/// Serves Streamable HTTP on `listener` until `shutdown`, with `/metrics`
/// rendered by `metrics` when given.
pub(crate) async fn http(
    server: &Server,
    listener: tokio::net::TcpListener,
    metrics: Option<impl Fn() -> String + Send + Sync + 'static>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), GatewayError> {
    let mut options = HttpOptions::new();
    if let Some(render) = metrics {
        let render = Arc::new(render);
        let route: PlainRoute = Arc::new(move || {
            let render = render.clone();
            Box::pin(async move { PlainResponse::new(200, crate::metrics::CONTENT_TYPE, render()) })
        });
        options = options.plain_route("/metrics", route);
    }
    switchboard_server::http::serve(server.clone(), listener, options, shutdown).await?;
    Ok(())
}
