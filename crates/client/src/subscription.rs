//! `subscriptions/listen`: a long-lived request whose notifications form a
//! stream (SUB-*).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use switchboard_wire::types::{JsonObject, SubscriptionFilter, method};
use switchboard_wire::{Notification, RequestId, Response};
use tokio::sync::mpsc;
use tracing::warn;

use crate::client::{Client, closed, transport_of};
use crate::error::{ClientError, TransportError};
use crate::transport::BoxFuture;

/// How many notifications a subscription buffers before dropping new ones.
/// The transport's reader must never wait on a slow consumer (it serves
/// every other request on the same pipe), so the buffer is bounded and
/// overflow is counted instead ([`Subscription::dropped`]).
const BUFFER: usize = 1024;

/// An open `subscriptions/listen` stream. Dropping it cancels the
/// subscription (`notifications/cancelled` on stdio).
pub struct Subscription {
    client: Client,
    id: RequestId,
    acknowledged: SubscriptionFilter,
    rx: mpsc::Receiver<Notification>,
    response: Option<BoxFuture<'static, Result<Response, TransportError>>>,
    end: Option<SubscriptionEnd>,
    dropped: Arc<AtomicU64>,
    /// Whether the sender side still exists (the transport drops it when the
    /// request ends).
    rx_open: bool,
}

/// Why a subscription ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SubscriptionEnd {
    /// The server closed it gracefully with a result (SUB-07).
    Completed,
    /// The server tore it down with `notifications/cancelled` (CANC-05).
    CancelledByServer,
    /// The server answered the listen request with an error.
    Error(switchboard_wire::ErrorObject),
    /// The transport closed (process exit, stream broke).
    Closed(String),
}

impl Subscription {
    pub(crate) async fn open(
        client: Client,
        id: RequestId,
        params: JsonObject,
        ack_timeout: Duration,
    ) -> Result<Subscription, ClientError> {
        let (tx, rx) = mpsc::channel(BUFFER);
        let dropped = Arc::new(AtomicU64::new(0));
        let counter = dropped.clone();
        let server = client.server_name().to_owned();
        let sink = Arc::new(move |n: Notification| {
            if tx.try_send(n).is_err() {
                counter.fetch_add(1, Ordering::Relaxed);
                warn!(server = %server, "subscription buffer full; notification dropped");
            }
        });
        let outgoing = client.outgoing(id.clone(), method::SUBSCRIPTIONS_LISTEN, params, sink);
        let transport = transport_of(&client);
        let response: BoxFuture<'static, _> =
            Box::pin(async move { transport.request(outgoing).await });
        let mut sub = Subscription {
            client,
            id,
            acknowledged: SubscriptionFilter::default(),
            rx,
            response: Some(response),
            end: None,
            dropped,
            rx_open: true,
        };
        // The first message of the stream is the acknowledgement (SUB-02).
        let first = tokio::time::timeout(ack_timeout, sub.next_raw()).await;
        match first {
            Err(_) => Err(ClientError::Timeout {
                server: sub.client.server_name().to_owned(),
                method: method::SUBSCRIPTIONS_LISTEN.into(),
                after: ack_timeout,
            }),
            Ok(Some(n)) if n.method == method::SUBSCRIPTIONS_ACKNOWLEDGED => {
                sub.acknowledged = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("notifications"))
                    .and_then(|v| serde_json::from_value(v.clone()).ok())
                    .unwrap_or_default();
                Ok(sub)
            }
            Ok(Some(n)) => Err(ClientError::InvalidResult {
                server: sub.client.server_name().to_owned(),
                method: method::SUBSCRIPTIONS_LISTEN.into(),
                reason: format!(
                    "the stream began with {} instead of notifications/subscriptions/acknowledged",
                    n.method
                ),
            }),
            Ok(None) => Err(match sub.end.take() {
                Some(SubscriptionEnd::Error(error)) => ClientError::Protocol {
                    server: sub.client.server_name().to_owned(),
                    method: method::SUBSCRIPTIONS_LISTEN.into(),
                    error,
                },
                Some(SubscriptionEnd::Closed(cause)) => closed(&sub.client, cause),
                _ => ClientError::InvalidResult {
                    server: sub.client.server_name().to_owned(),
                    method: method::SUBSCRIPTIONS_LISTEN.into(),
                    reason: "the subscription ended before it was acknowledged".into(),
                },
            }),
        }
    }

    /// The subscription id: the listen request's id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The filter the server agreed to honour (SUB-04: it may be a subset
    /// of the one requested).
    pub fn acknowledged(&self) -> &SubscriptionFilter {
        &self.acknowledged
    }

    /// Notifications dropped because the consumer fell behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Why the stream ended, once [`Subscription::next`] returned `None`.
    pub fn end(&self) -> Option<&SubscriptionEnd> {
        self.end.as_ref()
    }

    /// The next notification of the stream; `None` once it has ended.
    ///
    /// # Cancel safety
    /// Cancel safe: a notification is only taken when returned.
    pub async fn next(&mut self) -> Option<Notification> {
        self.next_raw().await
    }

    async fn next_raw(&mut self) -> Option<Notification> {
        loop {
            if let Ok(n) = self.rx.try_recv() {
                if n.method == method::CANCELLED {
                    continue;
                }
                return Some(n);
            }
            let response = self.response.as_mut()?;
            tokio::select! {
                biased;
                n = self.rx.recv(), if self.rx_open => match n {
                    Some(n) if n.method == method::CANCELLED => continue,
                    Some(n) => return Some(n),
                    None => self.rx_open = false,
                },
                outcome = response => {
                    self.response = None;
                    self.end = Some(match outcome {
                        Ok(Response { outcome: Ok(_), .. }) => SubscriptionEnd::Completed,
                        Ok(Response { outcome: Err(e), .. }) => SubscriptionEnd::Error(e),
                        Err(TransportError::CancelledByServer { .. }) => SubscriptionEnd::CancelledByServer,
                        Err(e) => SubscriptionEnd::Closed(e.to_string()),
                    });
                }
            }
        }
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("server", &self.client.server_name())
            .field("id", &self.id)
            .field("acknowledged", &self.acknowledged)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}
