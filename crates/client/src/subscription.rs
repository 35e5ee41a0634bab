//! `subscriptions/listen`: a long-lived request whose notifications form a
//! stream (SUB-*).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::json;
use switchboard_wire::types::{JsonObject, SubscriptionFilter, method};
use switchboard_wire::{Notification, RequestId, Response, meta};
use tokio::sync::mpsc;
use tracing::{debug, warn};

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
    // --- reconnection (HTTP: a listen stream that drops is re-opened) ---
    /// The listen params, re-sent on reconnection.
    params: JsonObject,
    ack_timeout: Duration,
    /// Notifications to hand out before the stream's (the resync after a
    /// reconnection).
    queued: VecDeque<Notification>,
    /// Why the current stream dropped, when it is worth re-opening.
    dropped_by: Option<TransportError>,
    reconnects: u64,
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
        let dropped = Arc::new(AtomicU64::new(0));
        Subscription::open_with(client, id, params, ack_timeout, dropped).await
    }

    async fn open_with(
        client: Client,
        id: RequestId,
        params: JsonObject,
        ack_timeout: Duration,
        dropped: Arc<AtomicU64>,
    ) -> Result<Subscription, ClientError> {
        let (tx, rx) = mpsc::channel(BUFFER);
        let counter = dropped.clone();
        let server = client.server_name().to_owned();
        let sink = Arc::new(move |n: Notification| {
            if tx.try_send(n).is_err() {
                counter.fetch_add(1, Ordering::Relaxed);
                warn!(server = %server, "subscription buffer full; notification dropped");
            }
        });
        let outgoing = client.outgoing(
            id.clone(),
            method::SUBSCRIPTIONS_LISTEN,
            params.clone(),
            sink,
        );
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
            params,
            ack_timeout,
            queued: VecDeque::new(),
            dropped_by: None,
            reconnects: 0,
        };
        // The first message of the stream is the acknowledgement (SUB-02).
        let first = tokio::time::timeout(ack_timeout, sub.next_on_stream()).await;
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
            Ok(None) if sub.dropped_by.is_some() => Err(ClientError::Transport(
                sub.dropped_by
                    .take()
                    .unwrap_or_else(|| TransportError::Closed {
                        server: sub.client.server_name().to_owned(),
                        cause: "listen stream dropped".into(),
                        source: None,
                    }),
            )),
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

    /// How many times the stream dropped and was re-opened.
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }

    /// Why the stream ended, once [`Subscription::next`] returned `None`.
    pub fn end(&self) -> Option<&SubscriptionEnd> {
        self.end.as_ref()
    }

    /// The next notification of the stream; `None` once it has ended.
    ///
    /// A stream that drops without the server ending it (a broken HTTP
    /// stream, a refused connection) is re-opened with a new
    /// `subscriptions/listen`, backing off from 250 ms to 30 s with jitter,
    /// for as long as the transport is open. Changes made while it was
    /// down are unknown, so after a reconnection this yields a
    /// `list_changed` for every acknowledged list and a
    /// `resources/updated` for every acknowledged resource and a
    /// `notifications/tasks` with only the `taskId` for every acknowledged
    /// task (extension), each marked
    /// with `_meta["dev.switchboard/resync"] = true`: consumers re-fetch.
    ///
    /// # Cancel safety
    /// Cancel safe: a notification is only taken when returned.
    pub async fn next(&mut self) -> Option<Notification> {
        self.next_raw().await
    }

    async fn next_raw(&mut self) -> Option<Notification> {
        loop {
            if let Some(n) = self.queued.pop_front() {
                return Some(n);
            }
            if let Some(n) = self.next_on_stream().await {
                return Some(n);
            }
            // The listen request ended; re-open it when the stream dropped.
            let cause = self.dropped_by.take()?;
            if let Err(end) = self.reconnect(&cause).await {
                self.end = Some(end);
                return None;
            }
        }
    }

    /// The next notification of the current stream; `None` once its request
    /// has ended, with the reason in `end`, or in `dropped_by` when the
    /// stream dropped in a way worth reconnecting after.
    async fn next_on_stream(&mut self) -> Option<Notification> {
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
                    match outcome {
                        Err(e) if reconnectable(&e) => self.dropped_by = Some(e),
                        Ok(Response { outcome: Ok(_), .. }) => self.end = Some(SubscriptionEnd::Completed),
                        Ok(Response { outcome: Err(e), .. }) => self.end = Some(SubscriptionEnd::Error(e)),
                        Err(TransportError::CancelledByServer { .. }) => {
                            self.end = Some(SubscriptionEnd::CancelledByServer);
                        }
                        Err(e) => self.end = Some(SubscriptionEnd::Closed(e.to_string())),
                    }
                }
            }
        }
    }
}

// --- reconnection ----------------------------------------------------------

/// First and longest pause between attempts to re-open a dropped stream.
const RECONNECT_FIRST: Duration = Duration::from_millis(250);
const RECONNECT_MAX: Duration = Duration::from_secs(30);

/// Whether a listen request that failed this way is worth re-sending: the
/// stream broke or the server was briefly unreachable, not the transport
/// closed, the server tearing the subscription down, or a refusal.
fn reconnectable(error: &TransportError) -> bool {
    match error {
        TransportError::Exchange { .. } => true,
        TransportError::Http { status, .. } => matches!(status, 429 | 502 | 503 | 504),
        _ => false,
    }
}

impl Subscription {
    /// Re-opens the subscription after `cause`, backing off until it is
    /// acknowledged or the failure is not one to retry.
    async fn reconnect(&mut self, cause: &TransportError) -> Result<(), SubscriptionEnd> {
        let server = self.client.server_name().to_owned();
        warn!(server = %server, id = %self.id, error = %cause, "listen stream dropped; re-opening it");
        let mut delay = RECONNECT_FIRST;
        loop {
            tokio::time::sleep(jitter(delay)).await;
            let id = self.client.next_id();
            let opened = Subscription::open_with(
                self.client.clone(),
                id,
                self.params.clone(),
                self.ack_timeout,
                self.dropped.clone(),
            )
            .await;
            match opened {
                Ok(mut fresh) => {
                    fresh.reconnects = self.reconnects + 1;
                    fresh.queued = std::mem::take(&mut self.queued);
                    fresh.queue_resync();
                    *self = fresh;
                    return Ok(());
                }
                Err(ClientError::Transport(e)) if reconnectable(&e) => {
                    debug!(server = %server, error = %e, "re-opening the listen stream failed; backing off");
                }
                Err(ClientError::Timeout { .. }) => {
                    debug!(server = %server, "re-opened listen stream was not acknowledged in time; backing off");
                }
                Err(ClientError::Protocol { error, .. }) => {
                    return Err(SubscriptionEnd::Error(error));
                }
                Err(e) => return Err(SubscriptionEnd::Closed(e.to_string())),
            }
            delay = (delay * 2).min(RECONNECT_MAX);
        }
    }

    /// Queues the notifications that tell the consumer to re-fetch what it
    /// subscribed to, since changes while the stream was down went unseen.
    fn queue_resync(&mut self) {
        let meta = json!({
            meta::SUBSCRIPTION_ID: self.id.to_value(),
            "dev.switchboard/resync": true,
        });
        let f = &self.acknowledged;
        let lists = [
            (f.tools_list_changed, method::TOOLS_LIST_CHANGED),
            (f.prompts_list_changed, method::PROMPTS_LIST_CHANGED),
            (f.resources_list_changed, method::RESOURCES_LIST_CHANGED),
        ];
        for (wanted, name) in lists {
            if wanted == Some(true) {
                self.queued
                    .push_back(Notification::new(name, Some(json!({ "_meta": meta }))));
            }
        }
        for uri in f.resource_subscriptions.iter().flatten() {
            self.queued.push_back(Notification::new(
                method::RESOURCES_UPDATED,
                Some(json!({ "_meta": meta, "uri": uri })),
            ));
        }
        // Tasks (extension): a status notification with the id alone, so
        // its follower fetches the task.
        let task_ids = f.extra.get("taskIds").and_then(serde_json::Value::as_array);
        for id in task_ids.into_iter().flatten() {
            self.queued.push_back(Notification::new(
                switchboard_wire::tasks::NOTIFICATION,
                Some(json!({ "_meta": meta, "taskId": id })),
            ));
        }
    }
}

/// `delay` give or take a quarter, so many clients do not retry in step.
fn jitter(delay: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let quarter = delay / 4;
    let spread = u64::try_from(quarter.as_nanos()).unwrap_or(u64::MAX).max(1) * 2;
    delay - quarter + Duration::from_nanos(u64::from(nanos) % spread)
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
