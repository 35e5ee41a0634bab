//! The requests in flight on a legacy (2025-11-25) session, so that a
//! request the server sends can be tied to the call it belongs to.
//!
//! A legacy server asks its questions (elicitation, sampling, roots) with
//! requests of its own in the middle of a call, and nothing in them names
//! that call. While exactly one request of the client is in flight, the
//! server's request can only be about that one: if the call carries its own
//! handler ([`crate::RequestOptions::call_input`]), the question goes there.
//! With several in flight the question cannot be told apart, and the
//! client's own handler answers it. Modern sessions track nothing: their
//! servers never send requests (WIRE-13).

use std::sync::{Arc, Mutex};

use switchboard_wire::shared::lock;

use crate::input::InputHandler;

/// The requests in flight on a legacy session.
#[derive(Default)]
pub(crate) struct InFlight {
    slots: Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    /// The id the next request gets.
    next: u64,
    /// Each request in flight.
    entries: Vec<Entry>,
}

/// One request in flight.
struct Entry {
    id: u64,
    method: String,
    /// The handler of its questions, if it has one.
    handler: Option<Arc<dyn InputHandler>>,
}

/// The call a server's request was tied to: its method and handler.
pub(crate) type TiedCall = (String, Arc<dyn InputHandler>);

/// A request counted as in flight until this is dropped.
pub(crate) struct Entered<'a> {
    in_flight: &'a InFlight,
    id: u64,
}

impl InFlight {
    /// Counts a request of `method` as in flight, its questions answered by
    /// `handler` when they can be tied to it.
    pub(crate) fn enter(
        &self,
        method: &str,
        handler: Option<Arc<dyn InputHandler>>,
    ) -> Entered<'_> {
        let mut slots = self.lock();
        let id = slots.next;
        slots.next += 1;
        slots.entries.push(Entry {
            id,
            method: method.to_owned(),
            handler,
        });
        Entered {
            in_flight: self,
            id,
        }
    }

    /// The handler (and method) of the one request in flight, when there is
    /// exactly one and it has a handler.
    pub(crate) fn sole_handler(&self) -> Option<TiedCall> {
        let slots = self.lock();
        match slots.entries.as_slice() {
            [
                Entry {
                    method,
                    handler: Some(handler),
                    ..
                },
            ] => Some((method.clone(), Arc::clone(handler))),
            _ => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        lock(&self.slots)
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.in_flight
            .lock()
            .entries
            .retain(|entry| entry.id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::NoInput;

    #[test]
    fn only_a_sole_request_with_a_handler_claims_questions() {
        let in_flight = InFlight::default();
        assert!(in_flight.sole_handler().is_none());
        let handler: Arc<dyn InputHandler> = Arc::new(NoInput);
        let call = in_flight.enter("tools/call", Some(handler));
        assert_eq!(
            in_flight.sole_handler().map(|(m, _)| m).as_deref(),
            Some("tools/call")
        );
        // A second request in flight makes the question ambiguous.
        let other = in_flight.enter("ping", None);
        assert!(in_flight.sole_handler().is_none());
        drop(other);
        assert!(in_flight.sole_handler().is_some());
        drop(call);
        assert!(in_flight.sole_handler().is_none());
        // A sole request without a handler claims nothing.
        let _plain = in_flight.enter("tools/call", None);
        assert!(in_flight.sole_handler().is_none());
    }
}
