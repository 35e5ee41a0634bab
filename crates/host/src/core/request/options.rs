//! [`CallOptions`]: what the caller gives one request besides its name and
//! arguments. Everything that reaches the server is the client's
//! [`RequestOptions`], embedded whole; the rest is the host's own.

use std::sync::Arc;

use switchboard_client::RequestOptions;

use super::resume::TaskResumption;
use crate::approver::Approver;

/// Options for one request the host governs: [`Host::call`] and the other
/// tool-call entry points, [`Host::get_prompt`], [`Host::read_resource`],
/// [`Host::complete`].
///
/// What reaches the server's client is [`CallOptions::request`], handed
/// down as it is: a new per-request option is a field of
/// [`RequestOptions`] alone. The host adds to it only what it owns: a tool
/// call's timeout when none is given (the config's, per server and tool),
/// and its own sink for a tool call's notifications in front of
/// [`RequestOptions::on_notification`] (to follow a task the call
/// becomes). The other fields are the host's: who approves, who calls,
/// and what picks a task up again.
///
/// [`Host::call`]: crate::Host::call
/// [`Host::get_prompt`]: crate::Host::get_prompt
/// [`Host::read_resource`]: crate::Host::read_resource
/// [`Host::complete`]: crate::Host::complete
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// The request as the server's client sends it:
    /// - `timeout`: `None` for the config's (`timeoutMs`, per-tool
    ///   timeouts);
    /// - `on_progress`: the request's progress, and the status messages of
    ///   a task a tool call becomes;
    /// - `on_notification`: every notification about the request (a
    ///   task's `notifications/tasks`, the server's log messages); without
    ///   it, a tool call's log messages go to the host's log;
    /// - `relay_input` and `resume`: a question of the server (an MRTR
    ///   `input_required`) ends the request with it
    ///   ([`CallReport::input_required`](crate::CallReport::input_required),
    ///   [`OfferError::InputRequired`](crate::OfferError::InputRequired))
    ///   instead of going to the mount-time input handler, and the answers
    ///   come with the retry (a front end relaying questions to its own
    ///   client);
    /// - `task_input`, `call_input`: who answers the questions of a task
    ///   the call becomes, or of a legacy (2025-11-25) server during the
    ///   call, instead of the host's input handler;
    /// - `capabilities`: the capabilities of the client the server's
    ///   questions are relayed to; a modern server is told only of the
    ///   questions both it and the host can answer (so it may refuse with
    ///   -32021, in
    ///   [`CallReport::protocol_error`](crate::CallReport::protocol_error));
    /// - `trace`: the W3C trace context the downstream request carries;
    ///   observers see it too
    ///   ([`CallEvent::trace`](crate::CallEvent::trace));
    /// - `leave_task_on_drop`: leaves the server's task running when the
    ///   call is dropped before the task ended, for
    ///   [`Host::resume_task`](crate::Host::resume_task) to pick up later.
    pub request: RequestOptions,
    /// Who answers if a tool call's gate asks; without one, questions are
    /// denied as with [`NoApprover`](crate::NoApprover).
    pub approver: Option<Arc<dyn Approver>>,
    /// Who is asking, when the request comes through an authenticated
    /// gateway: its `principals` rules narrow what it may reach, its
    /// limits count the request, and the audit line names it.
    pub principal: Option<String>,
    /// The access token the caller presented to the gateway, for a server
    /// whose `"identity"` is `"exchange"`: exchanged (RFC 8693) for a
    /// token for the same user at that server, never sent on itself.
    pub caller_token: Option<crate::secret::Secret>,
    /// Told once the server has made a tool call a task: what picks the
    /// call up again ([`Host::resume_task`](crate::Host::resume_task)) if
    /// whoever follows it stops first (a gateway restarting).
    pub on_task_started: Option<Arc<dyn Fn(TaskResumption) + Send + Sync>>,
    /// The caller's session of a deferred table: the tools
    /// `mcp__switchboard__search_tools` finds are loaded into it.
    pub loaded: Option<crate::LoadedTools>,
    /// The server's task to follow instead of calling the tool (set by
    /// [`Host::resume_task`](crate::Host::resume_task)).
    pub(super) follow_task: Option<String>,
}

impl CallOptions {
    /// Options with an approver.
    pub fn approver(approver: impl Approver + 'static) -> Self {
        CallOptions {
            approver: Some(Arc::new(approver)),
            ..CallOptions::default()
        }
    }

    /// The same options, for a request made by `principal`.
    #[must_use]
    pub fn with_principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// The same options, with a progress sink.
    #[must_use]
    pub fn with_progress(
        mut self,
        sink: impl Fn(switchboard_wire::types::ProgressParams) + Send + Sync + 'static,
    ) -> Self {
        self.request.on_progress = Some(Arc::new(sink));
        self
    }
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("request", &self.request)
            .field("approver", &self.approver)
            .field("principal", &self.principal)
            .field(
                "caller_token",
                &self.caller_token.as_ref().map(|_| "<redacted>"),
            )
            .field("on_task_started", &self.on_task_started.is_some())
            .field("loaded", &self.loaded)
            .field("follow_task", &self.follow_task)
            .finish()
    }
}
