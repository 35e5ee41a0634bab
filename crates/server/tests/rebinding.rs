//! DNS rebinding (HTTP-S-02, issue 36): the `Host` check guards every path
//! the runner serves (the plain routes a gateway puts health, readiness
//! and metrics on, the metadata document, unknown paths), not only the MCP
//! endpoint; and a `Host` that merely begins like a loopback name is
//! refused. Plain routes still take any `Origin`: they answer GETs with no
//! side effect and without CORS headers, so a browser page cannot read
//! them across origins.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use switchboard_server::ProtectedResource;
use switchboard_server::http::{HttpOptions, PlainResponse, PlainRoute};

use crate::util::*;

/// A route answering 200 `ok` and counting its runs.
fn counted(runs: &Arc<AtomicUsize>) -> PlainRoute {
    let runs = Arc::clone(runs);
    Arc::new(move || {
        runs.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { PlainResponse::new(200, "text/plain", "ok") })
    })
}

async fn get(http: &Http, path: &str, headers: &[(String, String)]) -> Resp {
    http.raw(http::Method::GET, path, headers, Vec::new()).await
}

#[tokio::test]
async fn plain_routes_refuse_a_foreign_host_as_the_endpoint_does() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (server, _) = server();
    let options = ["/healthz", "/readyz", "/metrics"]
        .into_iter()
        .fold(HttpOptions::new(), |o, path| {
            o.plain_route(path, counted(&runs))
        });
    let http = start(server, options).await;
    for path in ["/healthz", "/readyz", "/metrics"] {
        // A page of evil.example whose name now resolves to 127.0.0.1.
        let r = get(&http, path, &[header("host", "evil.example:80")]).await;
        assert_eq!(
            r.status,
            403,
            "{path}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let r = get(&http, path, &[header("host", "[::1].evil.example")]).await;
        assert_eq!(r.status, 400, "{path}");
        // The loopback names this server answers to.
        for host in [http.addr.to_string(), "localhost".into(), "[::1]:1".into()] {
            let r = get(&http, path, &[header("host", &host)]).await;
            assert_eq!(r.status, 200, "{path} with Host {host}");
        }
        // Plain routes check no Origin (nothing there for a browser to read).
        let r = get(&http, path, &[header("origin", "http://evil.example")]).await;
        assert_eq!(r.status, 200, "{path}");
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3 * 4,
        "a refused request runs nothing"
    );
    // Unknown paths get the same check before their 404.
    let r = get(&http, "/elsewhere", &[header("host", "evil.example")]).await;
    assert_eq!(r.status, 403);
    assert_eq!(get(&http, "/elsewhere", &[]).await.status, 404);
    http.stop().await;
}

#[tokio::test]
async fn the_metadata_document_is_behind_the_host_check() {
    let (server, _) = server();
    let prm = ProtectedResource::new("http://127.0.0.1/mcp", "http://127.0.0.1:1/issuer");
    let http = start(server, HttpOptions::new().auth(Tokens, prm)).await;
    let path = "/.well-known/oauth-protected-resource/mcp";
    assert_eq!(get(&http, path, &[]).await.status, 200);
    let r = get(&http, path, &[header("host", "evil.example")]).await;
    assert_eq!(r.status, 403);
    http.stop().await;
}

#[tokio::test]
async fn the_endpoint_refuses_a_host_that_only_begins_like_loopback() {
    let (http, _) = start_default().await;
    let params = with_meta(json!({}));
    let call = |host: &str| {
        set_header(
            standard_headers("server/discover", &params),
            "host",
            Some(host),
        )
    };
    for host in ["[::1].evil.example", "[::1].evil.example:8080", "[::1]evil"] {
        let r = http
            .post(
                &call(host),
                body(json!(1), "server/discover", params.clone()),
            )
            .await;
        assert_eq!(r.status, 400, "Host {host}");
        assert_eq!(r.error_code(), -32600);
    }
    let r = http
        .post(
            &call("[::1]:9"),
            body(json!(1), "server/discover", params.clone()),
        )
        .await;
    assert_eq!(r.status, 200);
    http.stop().await;
}
