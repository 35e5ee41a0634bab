//! `https://` endpoints: rustls (ring) with the platform and Mozilla roots
//! by default, or a configuration the caller supplies (a private CA).
//!
//! The fixtures in `data/` are a test CA and a certificate for `localhost`
//! and `127.0.0.1` it signed, valid until 2126, made with:
//!
//! ```text
//! openssl ecparam -name prime256v1 -genkey -noout -out ca.key
//! openssl req -x509 -new -key ca.key -sha256 -days 36500 -subj "/CN=switchboard test CA" \
//!   -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem
//! openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out server.key
//! openssl req -new -key server.key -subj "/CN=localhost" -out server.csr
//! openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 36500 -sha256 \
//!   -extfile <(printf "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n") -out server.pem
//! ```

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use switchboard_client::transport::{Outgoing, Transport};
use switchboard_client::{HttpTransport, TransportError};
use switchboard_wire::types::method;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::util::{modern_request, within};

const CA: &[u8] = include_bytes!("data/ca.pem");
const CERT: &[u8] = include_bytes!("data/server.pem");
const KEY: &[u8] = include_bytes!("data/server.key");

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// An MCP-ish HTTPS server on 127.0.0.1:0 answering every POST with an
/// empty result for its id; returns the port.
async fn tls_server() -> (u16, tokio::task::JoinHandle<()>) {
    let certs = CertificateDer::pem_slice_iter(CERT)
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(KEY).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A client that refuses the certificate ends the handshake.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(|req: http::Request<hyper::body::Incoming>| async move {
                    let body = req.into_body().collect().await.unwrap().to_bytes();
                    let id = serde_json::from_slice::<Value>(&body).unwrap()["id"].clone();
                    let reply = json!({"jsonrpc": "2.0", "id": id, "result": {"secure": true}});
                    Ok::<_, Infallible>(
                        http::Response::builder()
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from(reply.to_string())))
                            .unwrap(),
                    )
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, task)
}

fn trusting_the_test_ca() -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(CA).unwrap())
        .unwrap();
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

#[tokio::test]
async fn https_with_a_private_ca() {
    let (port, _server) = tls_server().await;
    for host in ["localhost", "127.0.0.1"] {
        let t = HttpTransport::builder("tls", format!("https://{host}:{port}/mcp"))
            .tls_config(trusting_the_test_ca())
            .remember_era(false)
            .build()
            .unwrap();
        let out = Outgoing::new(modern_request(1, method::TOOLS_LIST, json!({})));
        let r = within(t.request(out)).await.unwrap();
        assert_eq!(r.outcome.unwrap()["secure"], true, "{host}");
    }
}

// The default roots do not include the test CA: the handshake fails, and
// the error says why.
#[tokio::test]
async fn an_untrusted_certificate_is_refused_with_the_reason() {
    let (port, _server) = tls_server().await;
    let t = HttpTransport::builder("tls", format!("https://localhost:{port}/mcp"))
        .remember_era(false)
        .build()
        .unwrap();
    let out = Outgoing::new(modern_request(1, method::TOOLS_LIST, json!({})));
    let err = within(t.request(out)).await.unwrap_err();
    assert!(matches!(err, TransportError::Exchange { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("certificate"), "{text}");
    assert!(text.contains(&format!("localhost:{port}")), "{text}");
    // The chain reaches rustls' own error, typed (io::Error hides the
    // error it wraps from source(): `get_ref` reaches it).
    let mut next = std::error::Error::source(&err);
    let mut found = false;
    while let Some(e) = next {
        found |= e.is::<rustls::Error>();
        next = match e.downcast_ref::<std::io::Error>() {
            Some(io) => io.get_ref().map(|inner| inner as _),
            None => e.source(),
        };
    }
    assert!(found, "{err:?}");
}
