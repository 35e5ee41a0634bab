//! A tool call that did not reach its server's tool or did not complete,
//! in words for the model, and what it means for the server: its breaker
//! (failures count, answers of any kind show it alive) and its
//! connection (a closed one, a refused authorization, a login needed).

use std::time::Duration;

use switchboard_client::{ClientError, TransportError};
use switchboard_oauth::OAuthProvider;
use switchboard_wire::{CallToolResult, ErrorCode};
use tokio::time::Instant;

use super::outcome::End;
use crate::audit::Outcome;
use crate::auth;
use crate::config::ServerConfig;
use crate::reason::Reason;
use crate::sanitize;
use crate::upstream::{Down, DownCause, Link, Upstream};

/// A server that could not be reached for an allowed call.
pub(super) fn unreachable(
    server: &Upstream,
    local_name: &str,
    original: &str,
    down: &Down,
) -> End<CallToolResult> {
    let alias = server.alias();
    if down.cause == DownCause::NeedsLogin {
        return End::stopped(
            Outcome::AuthRequired,
            needs_login_text(&server.config, local_name),
        );
    }
    let original = sanitize::inline_name(original);
    if down.auth_required() {
        return End::stopped(
            Outcome::AuthRequired,
            format!(
                "Server {alias} refused authorization: {}. Its tool {original} could not be called; \
                 tell the user that the server's credentials need attention.",
                down.reason.for_model(alias)
            ),
        );
    }
    server.breaker().record(Some(&down.reason), Instant::now());
    End::stopped(
        Outcome::Transport,
        format!(
            "Server {alias} is not available: {}. Its tool {original} could not be called; \
             use other tools or tell the user.",
            down.reason.for_model(alias)
        ),
    )
}

/// A call the server did not complete: what it means for the server (its
/// breaker, its connection) and for the model.
pub(super) fn failure(
    server: &Upstream,
    link: &Link,
    (local_name, original): (&str, &str),
    timeout: Duration,
    error: &ClientError,
) -> End<CallToolResult> {
    let alias = server.alias();
    let now = Instant::now();
    // The server chose this name: shown inline, it must carry no markers.
    let original = &sanitize::inline_name(original);
    // Authorization first: a login that is needed, or a refusal.
    if error.is_auth_failure() {
        // The server answered: it is alive.
        server.breaker().record(None, now);
        if link.auth.as_ref().is_some_and(OAuthProvider::needs_login) {
            server.set_down(Down::needs_login(&server.config));
            return End::stopped(
                Outcome::AuthRequired,
                needs_login_text(&server.config, local_name),
            );
        }
        // A 403 may be about this one tool; anything else about them all.
        let status = error
            .transport_error()
            .and_then(TransportError::http_status);
        if status != Some(403) {
            server.set_down(Down::unauthorized(Reason::quoted(error.to_string())));
        }
        return End::stopped(
            Outcome::AuthRequired,
            format!(
                "Server {alias} refused to authorize the call of {original}: {}. \
                 Tell the user that the server's credentials need attention; do not retry.",
                untrusted(alias, &error.to_string())
            ),
        );
    }
    if error.is_timeout() {
        server.breaker().record(
            Some(&Reason::ours(format!(
                "timed out after {} ms",
                timeout.as_millis()
            ))),
            now,
        );
        return End::stopped(
            Outcome::Timeout,
            format!(
                "{local_name} (tool {original} on server {alias}) did not answer within {} ms and was cancelled. \
                 It may still have had effects. Retry at most once, with smaller input if you can.",
                timeout.as_millis()
            ),
        );
    }
    if let Some(transport) = error.transport_error() {
        let stop = transport.sandbox_stop();
        // The sandbox's verdict is the host's own words, ahead of the
        // quoted exit status and stderr.
        let reason = match stop {
            Some(stop) => {
                Reason::ours(format!("{}; ", stop.reason)).then_quoted(transport.to_string())
            }
            None => Reason::quoted(transport.to_string()),
        };
        // A server that ended the request (or its task, most often because
        // the caller cancelled it) answered: it is alive, and a run of
        // cancelled tasks must not pause it.
        let answered = matches!(transport, TransportError::CancelledByServer { .. });
        server.breaker().record((!answered).then_some(&reason), now);
        let said = reason.for_model(alias);
        if transport.is_closed() {
            server.set_down(Down::failed(server.closed_summary(), reason));
        }
        let text = format!(
            "Server {alias} could not complete the call of {original}: {said}. \
             Use other tools meanwhile or tell the user."
        );
        return match stop {
            Some(stop) => End::stopped_by_sandbox(Outcome::Transport, text, &stop.reason),
            None => End::stopped(Outcome::Transport, text),
        };
    }
    // The server answered: it is alive, whatever it said.
    server.breaker().record(None, now);
    // A server breaking the protocol (or refusing a call the model made
    // from its own schema) is for the operator to see, not only the model.
    tracing::warn!(
        server = %alias,
        tool = %original,
        error = ?error.to_string(),
        "the server answered a tool call with a protocol error"
    );
    let advice = match error.code().map(ErrorCode::from_code) {
        Some(Some(ErrorCode::InvalidParams)) => {
            "Check the arguments against the tool's input schema and try again."
        }
        Some(Some(ErrorCode::MethodNotFound)) => {
            "The server does not know this method; do not retry."
        }
        Some(_) => "The server failed to handle the call; retrying is unlikely to help.",
        None => "The server's answer was not valid; retrying is unlikely to help.",
    };
    End::stopped(
        Outcome::ProtocolError,
        format!(
            "Server {alias} rejected the call of {original} with a protocol error: {}. {advice}",
            untrusted(alias, &error.to_string())
        ),
    )
}

/// What the model reads when a server needs the user to log in.
pub(super) fn needs_login_text(config: &ServerConfig, local_name: &str) -> String {
    let alias = &config.alias;
    format!(
        "Upstream {alias} needs the user to log in (OAuth) before its tools, {local_name} among them, can be called. \
         Tell the user to run `{}`; do not retry before they have.",
        auth::server_login_command(config)
    )
}

/// Server-supplied text (an outage reason quoting stderr or an HTTP body)
/// inside boundary markers.
fn untrusted(alias: &str, text: &str) -> String {
    sanitize::wrap(alias, None, &sanitize::strip_invisible(text))
}
