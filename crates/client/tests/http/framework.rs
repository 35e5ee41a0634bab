//! Our own server framework served over HTTP on 127.0.0.1:0, for the tests
//! that run the client against it end to end.

use tokio::net::TcpListener;

/// Serves `server` (our own server framework) over HTTP on 127.0.0.1:0
/// until the returned sender is dropped or sent to; returns its `/mcp` URL.
pub(crate) async fn serve_server(
    server: switchboard_server::Server,
) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        let options = switchboard_server::http::HttpOptions::new();
        let _ = switchboard_server::http::serve(server, listener, options, shutdown).await;
    });
    (url, stop)
}
