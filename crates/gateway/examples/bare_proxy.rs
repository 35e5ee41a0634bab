//! The floor under the gateway's cost per call on the ecosystem's crates:
//! an HTTP/1.1 proxy on tokio and hyper that reads each request's body,
//! forwards it with its headers to one upstream over pooled keep-alive
//! connections (hyper-util's client), reads the answer and returns it. No
//! MCP, no governance: what the same runtime and HTTP stack the gateway
//! uses cost per proxied call before any of the gateway's own work.
//!
//! `bench/gateway.sh` runs it with `FLOOR=1`.
//!
//! Usage: `bare_proxy LISTEN_ADDR UPSTREAM_URL`, e.g.
//! `bare_proxy 127.0.0.1:18395 http://127.0.0.1:18391`.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

type Upstream = Client<HttpConnector, Full<Bytes>>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: bare_proxy LISTEN_ADDR UPSTREAM_URL";
    let listen: SocketAddr = args.next().ok_or(usage)?.parse()?;
    let upstream: Uri = args.next().ok_or(usage)?.parse()?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(serve(listen, upstream))
}

async fn serve(listen: SocketAddr, upstream: Uri) -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind(listen).await?;
    let client: Upstream = Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let (client, upstream) = (client.clone(), upstream.clone());
        tokio::spawn(async move {
            let service =
                service_fn(move |request| forward(client.clone(), upstream.clone(), request));
            // A client closing its connection mid-request ends it with an
            // error; a floor measurement has nothing to say about that.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Sends `request` on to `upstream` (same method, path, headers and body)
/// and answers with what came back; 502 when that fails.
async fn forward(
    client: Upstream,
    upstream: Uri,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let relayed = async {
        let (mut parts, body) = request.into_parts();
        let body = body.collect().await?.to_bytes();
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        parts.uri = format!("{upstream}{}", path.trim_start_matches('/')).parse()?;
        parts.headers.remove(http::header::HOST);
        let answer = client
            .request(Request::from_parts(parts, Full::new(body)))
            .await?;
        let (parts, body) = answer.into_parts();
        let body = body.collect().await?.to_bytes();
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(Response::from_parts(
            parts,
            Full::new(body),
        ))
    };
    Ok(relayed.await.unwrap_or_else(|e| {
        let mut failed = Response::new(Full::new(Bytes::from(format!("upstream failed: {e}\n"))));
        *failed.status_mut() = http::StatusCode::BAD_GATEWAY;
        failed
    }))
}
