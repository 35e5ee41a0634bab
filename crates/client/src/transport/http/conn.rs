//! The HTTP/1.1 client under the transport: the connection pool, rustls
//! (ring) for `https`, the header and body limits, and the authorization
//! retry loop.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, HOST, HeaderMap, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use http::{Method, Uri};

use super::auth::{AuthChallenge, AuthProvider, AuthProviderError, AuthRetry, MAX_AUTH_RETRIES};
use super::failure::Failure;
use super::pool::{Pool, PooledBody};
use crate::net::default_tls;

/// The proof-of-possession header (RFC 9449 §4.1).
const DPOP: HeaderName = HeaderName::from_static("dpop");
/// The server-supplied DPoP nonce (RFC 9449 §8, §9).
const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");

/// The response type of one exchange.
pub(crate) type HttpResponse = http::Response<PooledBody>;

/// One outgoing HTTP request, kept so it can be sent again after an
/// authorization challenge.
#[derive(Clone, Debug)]
pub(crate) struct Outbound {
    pub(crate) method: Method,
    pub(crate) uri: Uri,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// The JSON-RPC method carried, for challenges and messages.
    pub(crate) rpc_method: Option<String>,
}

/// Builds one attempt's [`Outbound`] ([`Http::send_made`]).
pub(crate) type MakeOutbound<'a> = dyn Fn() -> Result<Outbound, Failure> + Send + Sync + 'a;

/// Limits and timeouts of the HTTP layer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Largest response body (JSON) or single SSE event.
    pub(crate) max_body: usize,
    /// Largest response head (status line and headers).
    pub(crate) max_header_bytes: usize,
    /// TCP (and TLS) connect timeout.
    pub(crate) connect_timeout: Duration,
}

/// The connection pool plus the per-transport request decoration.
#[derive(Clone)]
pub(crate) struct Http {
    pool: Arc<Pool>,
    /// `Host` of every request: the transport talks to one origin.
    host: HeaderValue,
    /// Headers from configuration, added to every request.
    pub(crate) custom: HeaderMap,
    pub(crate) auth: Option<Arc<dyn AuthProvider>>,
    pub(crate) limits: Limits,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("custom_headers", &self.custom.keys().collect::<Vec<_>>())
            .field("auth", &self.auth.is_some())
            .field("limits", &self.limits)
            .finish()
    }
}

impl Http {
    pub(crate) fn new(
        origin: &Uri,
        tls: Option<Arc<rustls::ClientConfig>>,
        custom: HeaderMap,
        auth: Option<Arc<dyn AuthProvider>>,
        limits: Limits,
    ) -> Result<Http, Failure> {
        let tls = match tls {
            Some(config) => config,
            None => default_tls().map_err(Failure::Invalid)?,
        };
        let host = origin
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
            .ok_or_else(|| Failure::Invalid(format!("URL {origin} has no host")))?;
        Ok(Http {
            pool: Pool::new(tls, limits),
            host,
            custom,
            auth,
            limits,
        })
    }

    /// Sends `out`, adding the configured headers and the authorization
    /// header, and re-sends it after a challenge the provider accepts.
    ///
    /// # Errors
    /// [`Failure::Connect`] when no answer arrived, [`Failure::Auth`] when
    /// the provider failed, [`Failure::Protocol`] for a response head over
    /// the limit. A 401/403 the provider gives up on is returned as the
    /// response, for the caller to report.
    pub(crate) async fn send(&self, out: Outbound) -> Result<HttpResponse, Failure> {
        match self.auth.clone() {
            // No authorization: nothing is ever sent twice, so nothing is
            // kept for a retry.
            None => self.send_once(out, None).await,
            // Boxed, so the plain path does not carry the retry loop's state.
            Some(auth) => Box::pin(self.send_authorized(&|| Ok(out.clone()), auth)).await,
        }
    }

    /// [`Http::send`] of the request `make` builds, built anew for each
    /// attempt: nothing is copied up front for a retry that seldom comes.
    ///
    /// # Errors
    /// As [`Http::send`], and what `make` fails with.
    pub(crate) async fn send_made(&self, make: &MakeOutbound<'_>) -> Result<HttpResponse, Failure> {
        match self.auth.clone() {
            None => self.send_once(make()?, None).await,
            Some(auth) => Box::pin(self.send_authorized(make, auth)).await,
        }
    }

    async fn send_authorized(
        &self,
        make: &MakeOutbound<'_>,
        auth: Arc<dyn AuthProvider>,
    ) -> Result<HttpResponse, Failure> {
        let mut attempt = 0;
        loop {
            let mut out = make()?;
            let sent = match auth.authorization_now() {
                Some(known) => known,
                None => auth.authorization().await,
            }
            .map_err(Failure::Auth)?;
            let value = sent
                .as_deref()
                .map(|v| sensitive_header(v, "value"))
                .transpose()?;
            // A proof goes with an access token: without one, the URL is
            // not even written out.
            if let Some(authorization) = sent.as_deref() {
                let url = out.uri.to_string();
                let proof = auth
                    .proof(out.method.as_str(), &url, Some(authorization))
                    .await
                    .map_err(Failure::Auth)?;
                if let Some(proof) = proof {
                    out.headers.insert(DPOP, sensitive_header(&proof, "proof")?);
                }
            }
            let (uri, rpc_method) = (out.uri.clone(), out.rpc_method.take());
            let response = self.send_once(out, value).await?;
            let status = response.status().as_u16();
            if !(status == 401 || status == 403) || attempt >= MAX_AUTH_RETRIES {
                return Ok(response);
            }
            let challenge = AuthChallenge {
                status,
                www_authenticate: response
                    .headers()
                    .get_all(WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|v| v.to_str().ok().map(str::to_owned))
                    .collect(),
                url: uri.to_string(),
                method: rpc_method,
                // What this request carried, not what the provider would
                // give now: another request may have replaced the token.
                sent_authorization: sent,
                dpop_nonce: response
                    .headers()
                    .get(DPOP_NONCE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
            };
            match auth.on_challenge(&challenge).await {
                Ok(AuthRetry::Retry) => {
                    attempt += 1;
                    // Read the refusal's body so its connection is reused.
                    let _ = super::response::read_limited(response.into_body(), 64 * 1024).await;
                }
                Ok(AuthRetry::GiveUp) => return Ok(response),
                Err(e) => return Err(Failure::Auth(e)),
            }
        }
    }

    /// Ends every connection now: exchanges in flight fail at once.
    pub(crate) fn abort_connections(&self) {
        self.pool.abort_all();
    }

    /// Aborts every connection and refuses new ones.
    pub(crate) fn close(&self) {
        self.pool.close();
    }

    async fn send_once(
        &self,
        out: Outbound,
        authorization: Option<HeaderValue>,
    ) -> Result<HttpResponse, Failure> {
        let Outbound {
            method,
            uri,
            mut headers,
            body,
            ..
        } = out;
        // Configured headers never name a protocol header (the builder
        // refuses those), so they only add.
        for (name, value) in &self.custom {
            headers.append(name, value.clone());
        }
        if let Some(value) = authorization {
            headers.insert(AUTHORIZATION, value);
        }
        headers.insert(HOST, self.host.clone());
        // HTTP/1.1 origin form: the path and query on the request line.
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        // The whole head is bounded by the limit as it is read (h1.rs), and
        // so is every field in it.
        self.pool.send(&uri, &method, path, &headers, &body).await
    }
}

/// A header value the auth provider gave (`what`: "value", "proof"), kept
/// out of hyper's and http's debug output.
fn sensitive_header(given: &str, what: &str) -> Result<HeaderValue, Failure> {
    let mut value = HeaderValue::from_str(given).map_err(|_| {
        Failure::Auth(AuthProviderError(format!(
            "the authorization provider gave a {what} that is not a valid header"
        )))
    })?;
    value.set_sensitive(true);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_header_is_sensitive_and_a_bad_one_says_which() {
        let good = sensitive_header("Bearer t", "value").expect("a valid header");
        assert!(good.is_sensitive());
        let Err(Failure::Auth(AuthProviderError(said))) = sensitive_header("a\nb", "proof") else {
            panic!("a line break was accepted");
        };
        assert_eq!(
            said,
            "the authorization provider gave a proof that is not a valid header"
        );
    }
}
