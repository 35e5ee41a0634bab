//! Requests whose work lives on a peer replica (its tasks, its parked
//! calls, its legacy sessions) are sent on to it.

use bytes::Bytes;
use http::HeaderMap;
use serde_json::Value;
use switchboard_wire::types::method;
use switchboard_wire::{Request, RequestId};

use super::respond::fault_response;
use super::{HttpResponse, State};
use crate::error::Fault;
use crate::runner::forward;
use crate::runner::headers;

impl State {
    /// The peer replica holding what the request is about, and its URL:
    /// the task a `tasks/get`, `tasks/update` or `tasks/cancel` names, the
    /// tasks a `subscriptions/listen` follows when one peer holds them all,
    /// or the work a replica-bound `requestState` belongs to. `None` for
    /// anything else, and for a request another replica already sent on.
    pub(super) fn holder_of(
        &self,
        request: &Request,
        headers: &HeaderMap,
    ) -> Option<(String, http::Uri)> {
        use switchboard_wire::tasks::{TASKS_CANCEL, TASKS_GET, TASKS_UPDATE};
        let params = request.params.as_ref()?;
        let name = request.method.as_str();
        let id = if [TASKS_GET, TASKS_UPDATE, TASKS_CANCEL].contains(&name) {
            params.get("taskId")
        } else if name == method::SUBSCRIPTIONS_LISTEN {
            return self.listen_holder(params, headers);
        } else {
            params.get("requestState")
        }?;
        self.peer_holding(id.as_str()?, headers)
    }

    /// The peer holding every task a `subscriptions/listen` asks to follow,
    /// when they are all that one peer's: the stream is then the peer's,
    /// which sees those tasks change. A listen naming this replica's tasks,
    /// or several replicas', is answered here (its acknowledgment lists
    /// the tasks this replica reports on; the client polls the others).
    pub(super) fn listen_holder(
        &self,
        params: &Value,
        headers: &HeaderMap,
    ) -> Option<(String, http::Uri)> {
        let ids = params.get("notifications")?.get("taskIds")?.as_array()?;
        let mut holder: Option<(String, http::Uri)> = None;
        for id in ids {
            let (replica, url) = self.peer_holding(id.as_str()?, headers)?;
            match &holder {
                Some((held_by, _)) if *held_by != replica => return None,
                Some(_) => {}
                None => holder = Some((replica, url)),
            }
        }
        holder
    }

    /// The peer replica holding the legacy session the request names, and
    /// its URL; `None` when it is this replica's or names no peer, and for
    /// a request another replica already sent on.
    pub(super) fn session_holder(&self, headers: &HeaderMap) -> Option<(String, http::Uri)> {
        let id = headers.get(&headers::SESSION_ID)?.to_str().ok()?;
        self.peer_holding(id.trim(), headers)
    }

    /// The peer `id` (`REPLICA.…`) names and its URL, unless another
    /// replica already sent this request on (it is then answered here).
    pub(super) fn peer_holding(
        &self,
        id: &str,
        headers: &HeaderMap,
    ) -> Option<(String, http::Uri)> {
        if headers.contains_key(&forward::FORWARDED_BY) {
            return None;
        }
        self.server.inner.tasks.holder(id)
    }

    /// Sends the request on to `replica` at `url`, which holds its work,
    /// and answers with what it answers; an error saying why when it
    /// cannot be reached.
    pub(super) async fn send_on(
        &self,
        id: Option<&RequestId>,
        replica: &str,
        url: &http::Uri,
        head: &http::request::Parts,
        body: Bytes,
    ) -> HttpResponse {
        let own = self.server.inner.tasks.origin().unwrap_or_default();
        match self.peers.send(url, own, head, body).await {
            Ok(answer) => answer,
            Err(why) => {
                tracing::warn!(replica, %url, error = %why, "a peer replica could not be reached");
                let fault = Fault::internal(format!(
                    "this request's work lives on replica {replica}, which this replica ({own}) could not reach: {why}"
                ));
                fault_response(id, &fault)
            }
        }
    }
}
