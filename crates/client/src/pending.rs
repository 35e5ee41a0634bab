//! The table of requests awaiting their response on a shared channel
//! (stdio), keyed by id.
//!
//! One entry per request: the sender that completes the caller's future,
//! the sink for its notifications, and its progress token (so progress can
//! be routed by token). When the channel dies, [`Pending::fail_all`] fails
//! every entry at once with the cause and refuses new ones.

use std::collections::HashMap;

use switchboard_wire::{RequestId, Response};
use tokio::sync::oneshot;

use crate::error::TransportError;
use crate::transport::NotificationSink;

/// Completes one caller's future.
pub(crate) type Completion = oneshot::Sender<Result<Response, TransportError>>;

/// One request in flight.
pub(crate) struct Entry {
    /// Completes the caller's future.
    pub(crate) tx: Completion,
    /// Where notifications about this request go.
    pub(crate) sink: Option<NotificationSink>,
    /// The request's `_meta.progressToken`, if it set one.
    pub(crate) progress_token: Option<RequestId>,
    /// Whether it is a `subscriptions/listen` stream, which never carries
    /// a request's log messages.
    pub(crate) listen: bool,
}

/// Requests in flight, by id.
#[derive(Default)]
pub(crate) struct Pending {
    entries: HashMap<RequestId, Entry>,
    /// Progress token → request id, for requests that set a token.
    by_token: HashMap<RequestId, RequestId>,
    /// Set once the channel is gone; every later request fails with it.
    closed: Option<TransportError>,
}

impl Pending {
    /// Adds a request.
    ///
    /// # Errors
    /// The close cause when the channel is gone; [`TransportError::DuplicateId`]
    /// when the id is already in flight (WIRE-04).
    pub(crate) fn insert(
        &mut self,
        server: &str,
        id: RequestId,
        entry: Entry,
    ) -> Result<(), TransportError> {
        if let Some(cause) = &self.closed {
            return Err(cause.clone());
        }
        if self.entries.contains_key(&id) {
            return Err(TransportError::DuplicateId {
                server: server.to_owned(),
                id: id.to_string(),
            });
        }
        if let Some(token) = &entry.progress_token {
            self.by_token.insert(token.clone(), id.clone());
        }
        self.entries.insert(id, entry);
        Ok(())
    }

    /// Takes a request out (its response arrived, or it was cancelled).
    pub(crate) fn remove(&mut self, id: &RequestId) -> Option<Entry> {
        let entry = self.entries.remove(id)?;
        if let Some(token) = &entry.progress_token {
            if self.by_token.get(token) == Some(id) {
                self.by_token.remove(token);
            }
        }
        Some(entry)
    }

    /// The sink of the request with this id.
    pub(crate) fn sink(&self, id: &RequestId) -> Option<NotificationSink> {
        self.entries.get(id).and_then(|e| e.sink.clone())
    }

    /// The sink of the request that set this progress token.
    pub(crate) fn sink_for_token(&self, token: &RequestId) -> Option<NotificationSink> {
        self.by_token.get(token).and_then(|id| self.sink(id))
    }

    /// The sink of the one request in flight that is not a listen stream:
    /// where a log message goes on a channel that does not say which
    /// request it is about (stdio). `None` when there are several, or none.
    pub(crate) fn sole_request_sink(&self) -> Option<NotificationSink> {
        let mut requests = self.entries.values().filter(|e| !e.listen);
        match (requests.next(), requests.next()) {
            (Some(only), None) => only.sink.clone(),
            _ => None,
        }
    }

    /// How many requests are in flight.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The close cause, once closed.
    pub(crate) fn closed(&self) -> Option<&TransportError> {
        self.closed.as_ref()
    }

    /// Fails every request with `cause` and refuses new ones. The first
    /// cause wins; later calls change nothing.
    pub(crate) fn fail_all(&mut self, cause: TransportError) {
        if self.closed.is_some() {
            return;
        }
        self.by_token.clear();
        for (_, entry) in self.entries.drain() {
            let _ = entry.tx.send(Err(cause.clone()));
        }
        self.closed = Some(cause);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(token: Option<i64>) -> (Entry, oneshot::Receiver<Result<Response, TransportError>>) {
        let (tx, rx) = oneshot::channel();
        (
            Entry {
                tx,
                sink: None,
                progress_token: token.map(RequestId::from),
                listen: false,
            },
            rx,
        )
    }

    #[test]
    fn a_log_message_goes_to_the_one_request_in_flight_never_a_listen_stream() {
        let heard = std::sync::Arc::new(std::sync::Mutex::new(0));
        let with_sink = |listen: bool| {
            let (mut e, _rx) = entry(None);
            let heard = heard.clone();
            e.sink = Some(std::sync::Arc::new(move |_| *heard.lock().unwrap() += 1));
            e.listen = listen;
            e
        };
        let mut p = Pending::default();
        assert!(p.sole_request_sink().is_none());
        p.insert("s", "listen".into(), with_sink(true)).unwrap();
        assert!(
            p.sole_request_sink().is_none(),
            "a listen stream is no request"
        );
        p.insert("s", 1.into(), with_sink(false)).unwrap();
        let sink = p.sole_request_sink().expect("the one call in flight");
        sink(switchboard_wire::Notification::new(
            "notifications/message",
            None,
        ));
        assert_eq!(*heard.lock().unwrap(), 1);
        p.insert("s", 2.into(), with_sink(false)).unwrap();
        assert!(p.sole_request_sink().is_none(), "two calls: whose is it?");
    }

    #[test]
    fn refuses_a_duplicate_id() {
        let mut p = Pending::default();
        p.insert("s", 1.into(), entry(None).0).unwrap();
        assert!(matches!(
            p.insert("s", 1.into(), entry(None).0),
            Err(TransportError::DuplicateId { .. })
        ));
        // The same number as a string is another id.
        p.insert("s", "1".into(), entry(None).0).unwrap();
    }

    #[test]
    fn fail_all_fails_everything_and_refuses_new_requests() {
        let mut p = Pending::default();
        let (a, mut ra) = entry(Some(9));
        let (b, mut rb) = entry(None);
        p.insert("s", 1.into(), a).unwrap();
        p.insert("s", 2.into(), b).unwrap();
        let cause = TransportError::Closed {
            server: "s".into(),
            cause: "exited".into(),
            source: None,
        };
        p.fail_all(cause);
        assert!(ra.try_recv().unwrap().is_err());
        assert!(rb.try_recv().unwrap().is_err());
        assert_eq!(p.len(), 0);
        assert!(p.sink_for_token(&9.into()).is_none());
        assert!(p.insert("s", 3.into(), entry(None).0).is_err());
    }

    #[test]
    fn remove_forgets_the_token() {
        let mut p = Pending::default();
        p.insert("s", 1.into(), entry(Some(5)).0).unwrap();
        assert!(p.remove(&1.into()).is_some());
        assert!(p.remove(&1.into()).is_none());
        assert_eq!(p.len(), 0);
    }
}
