//! Sending a request on to the replica that holds what it names
//! ([`crate::ServerBuilder::replica_peers`]): a `tasks/*` request for a
//! task another replica behind the same URL handed on, a
//! `subscriptions/listen` following such tasks, a retry whose
//! `requestState` belongs to work held in another replica's memory, or a
//! request of a legacy (2025-11-25) session another replica opened. The
//! peer gets the request as it came (its `Host` and credentials included:
//! it checks and authenticates the caller itself) and its answer goes back
//! as it comes, streamed, over a connection kept open for the next one.
//! A peer's URL may be `https://` when the runner has a TLS configuration
//! for peers ([`crate::http::HttpOptions::peer_tls`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{
    CONNECTION, CONTENT_LENGTH, HOST, HeaderName, HeaderValue, PROXY_AUTHORIZATION, TE, TRAILER,
    TRANSFER_ENCODING, UPGRADE,
};
use http::{Request, Response, Uri};
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::body::Body;
use crate::error::with_causes;

/// Names the replica that sent a request on. Such a request is answered
/// where it arrives, never sent on again, so two replicas that each think
/// the other holds a task cannot bounce it between them.
pub(crate) const FORWARDED_BY: HeaderName = HeaderName::from_static("switchboard-forwarded-by");

/// How long connecting to a peer may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a peer may take to start answering: a `tasks/*` request is
/// answered at once, a retry may run a tool call to its end (a streamed
/// answer starts with its headers at once).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a connection to a peer is kept open unused.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The connections to the peer replicas: kept open and reused, so a busy
/// legacy session split across replicas, or an agent polling a task, pays
/// one connect per peer rather than one per request.
#[derive(Clone)]
pub(crate) struct Peers {
    client: PeerClient,
}

/// Plain HTTP only, or HTTP and HTTPS (peers verified with the
/// configuration given).
#[derive(Clone)]
enum PeerClient {
    Plain(Client<HttpConnector, Full<Bytes>>),
    Tls(Client<HttpsConnector<HttpConnector>, Full<Bytes>>),
}

impl Peers {
    /// A pool with no connections yet (they are opened on first use);
    /// `https://` peers are verified with `tls`, and refused without it.
    pub(crate) fn new(tls: Option<Arc<rustls::ClientConfig>>) -> Peers {
        let mut tcp = HttpConnector::new();
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(CONNECT_TIMEOUT));
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .pool_idle_timeout(IDLE_TIMEOUT)
            .pool_timer(hyper_util::rt::TokioTimer::new());
        let client = match tls {
            None => PeerClient::Plain(builder.build(tcp)),
            Some(config) => {
                tcp.enforce_http(false);
                let connector = hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config(Arc::unwrap_or_clone(config))
                    .https_or_http()
                    .enable_http1()
                    .wrap_connector(tcp);
                PeerClient::Tls(builder.build(connector))
            }
        };
        Peers { client }
    }

    /// Sends the request (`head`, `body`) to the peer's MCP endpoint at
    /// `url`, naming this replica `own` in [`FORWARDED_BY`], and returns
    /// the peer's response with its body streamed through.
    ///
    /// # Errors
    /// What went wrong reaching the peer, for the caller's error message.
    pub(crate) async fn send(
        &self,
        url: &Uri,
        own: &str,
        head: &http::request::Parts,
        body: Bytes,
    ) -> Result<Response<Body>, String> {
        let authority = url
            .authority()
            .ok_or_else(|| format!("{url} names no host"))?;

        let mut request = Request::new(Full::new(body));
        *request.method_mut() = head.method.clone();
        *request.uri_mut() = url.clone();
        let headers = request.headers_mut();
        for (name, value) in &head.headers {
            if !hop_by_hop(name) && *name != CONTENT_LENGTH {
                headers.append(name, value.clone());
            }
        }
        // The caller's `Host` stays: the peer checks it (and a DPoP proof's
        // URL) as the first replica did.
        if !headers.contains_key(HOST) {
            let host =
                HeaderValue::from_str(authority.as_str()).map_err(|e| format!("{url}: {e}"))?;
            headers.insert(HOST, host);
        }
        let own = HeaderValue::from_str(own).map_err(|e| format!("replica name {own}: {e}"))?;
        headers.insert(FORWARDED_BY, own);
        let sent = async {
            match &self.client {
                PeerClient::Plain(_) if url.scheme_str() == Some("https") => Err(format!(
                    "{url} is https, and this server has no TLS configuration for its peers"
                )),
                PeerClient::Plain(client) => client
                    .request(request)
                    .await
                    .map_err(|e| format!("{url} did not answer: {}", with_causes(&e))),
                PeerClient::Tls(client) => client
                    .request(request)
                    .await
                    .map_err(|e| format!("{url} did not answer: {}", with_causes(&e))),
            }
        };
        let answer = tokio::time::timeout(ANSWER_TIMEOUT, sent)
            .await
            .map_err(|_| format!("{url} did not answer within {ANSWER_TIMEOUT:?}"))??;
        let (parts, incoming) = answer.into_parts();
        let mut response = Response::new(Body::Peer(incoming));
        *response.status_mut() = parts.status;
        let headers = response.headers_mut();
        for (name, value) in &parts.headers {
            if !hop_by_hop(name) && *name != CONTENT_LENGTH {
                headers.append(name, value.clone());
            }
        }
        Ok(response)
    }
}

/// Headers that describe one hop's connection, not the message (RFC 9110
/// §7.6.1), and are never passed on.
fn hop_by_hop(name: &HeaderName) -> bool {
    [
        CONNECTION,
        TE,
        TRAILER,
        TRANSFER_ENCODING,
        UPGRADE,
        PROXY_AUTHORIZATION,
    ]
    .contains(name)
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
}
