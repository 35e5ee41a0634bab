//! The loop: model → tool calls → toolbox → results → model, until the
//! model stops, the turn limit, the loop guard, or the user cancels.
//!
//! The tool calls of one model turn run concurrently (each through the
//! toolbox, so each through the host's gate), and their results go back to
//! the model in the order the model made the calls.

use std::collections::HashMap;
use std::sync::Arc;
use std::task::Poll;

use serde_json::Value;

use crate::cancel::CancelToken;
use crate::event::{AgentEvent, EventSink, TurnStop};
use crate::message::{Content, Message, Role};
use crate::model::{
    BoxFuture, DEFAULT_MAX_TOKENS, Model, ModelEvent, ModelRequest, StopReason, ToolCall, Usage,
};
use crate::prompt;
use crate::toolbox::{ToolOutcome, Toolbox};

/// How the loop runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgentOptions {
    /// Most model calls in one turn (a turn is one user prompt).
    pub max_model_calls: u32,
    /// The same tool with the same arguments this many times in a row
    /// ends the turn (0: never).
    pub loop_guard: u32,
    /// Most tokens per model call.
    pub max_tokens: u32,
    /// Extra instructions appended to the system prompt.
    pub instructions: Option<String>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            max_model_calls: 25,
            loop_guard: 3,
            max_tokens: DEFAULT_MAX_TOKENS,
            instructions: None,
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    /// Why.
    pub stop: TurnStop,
    /// The model's text of the turn (every model call's, joined).
    pub text: String,
    /// Token counts of the turn.
    pub usage: Usage,
    /// Model calls made.
    pub model_calls: u32,
    /// The error, when the model failed.
    pub error: Option<String>,
}

/// A conversation with a model over a toolbox.
#[derive(Debug)]
pub struct Agent {
    model: Arc<dyn Model>,
    toolbox: Arc<dyn Toolbox>,
    options: AgentOptions,
    /// The conversation lives in the request, which is re-sent each call.
    request: ModelRequest,
}

impl Agent {
    /// A new conversation.
    pub fn new(model: Arc<dyn Model>, toolbox: Arc<dyn Toolbox>, options: AgentOptions) -> Agent {
        let max_tokens = options.max_tokens;
        Agent {
            model,
            toolbox,
            options,
            request: ModelRequest {
                max_tokens,
                ..ModelRequest::default()
            },
        }
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.request.messages
    }

    /// The model.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.model
    }

    /// Runs one turn for `prompt`, reporting to `events`. Never fails: a
    /// model error ends the turn with [`TurnStop::Error`] (and an
    /// [`AgentEvent::Error`]); the conversation stays usable.
    pub async fn run(&mut self, prompt: &str, events: &EventSink, cancel: &CancelToken) -> TurnEnd {
        self.push_user(Content::Text {
            text: prompt.to_owned(),
        });
        let mut end = TurnEnd {
            stop: TurnStop::EndTurn,
            text: String::new(),
            usage: Usage::default(),
            model_calls: 0,
            error: None,
        };
        let mut message = None;
        let mut streak: Option<(String, String, u32)> = None;
        loop {
            if end.model_calls >= self.options.max_model_calls {
                end.stop = TurnStop::TurnLimit;
                message = Some(format!(
                    "Stopped after {} model calls in this turn (the turn limit).",
                    end.model_calls
                ));
                break;
            }
            // Fresh every call: outages come and go.
            // The tools first: deciding whether the table is deferred
            // decides the catalogue text.
            self.request.tools = self.toolbox.tools();
            self.request.system = prompt::system_with(
                self.options.instructions.as_deref(),
                prompt::with_skills(self.toolbox.skills_text(), self.toolbox.outage_text()),
                self.toolbox.catalog_text(),
            );
            let servers: HashMap<&str, &str> = self
                .request
                .tools
                .iter()
                .filter_map(|t| Some((t.name.as_str(), t.server.as_deref()?)))
                .collect();
            end.model_calls += 1;
            let mut on_event = |e: ModelEvent| {
                if let ModelEvent::TextDelta(text) = e {
                    events.emit(&AgentEvent::Text { text });
                }
            };
            let turn = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                r = self.model.turn(&self.request, &mut on_event) => Some(r),
            };
            let output = match turn {
                None => {
                    end.stop = TurnStop::Cancelled;
                    break;
                }
                Some(Err(e)) => {
                    let text = e.to_string();
                    events.emit(&AgentEvent::Error {
                        message: text.clone(),
                    });
                    end.stop = TurnStop::Error;
                    end.error = Some(text);
                    break;
                }
                Some(Ok(o)) => o,
            };
            end.usage.add(&output.usage);
            end.text.push_str(&output.text);
            let calls: Vec<(ToolCall, Option<String>)> = output
                .tool_calls
                .iter()
                .map(|c| {
                    (
                        c.clone(),
                        servers.get(c.name.as_str()).map(|s| (*s).to_owned()),
                    )
                })
                .collect();
            drop(servers);
            if let Some(m) = output.message() {
                self.request.messages.push(m);
            }
            if calls.is_empty() {
                end.stop = match output.stop {
                    StopReason::MaxTokens => TurnStop::MaxTokens,
                    _ => TurnStop::EndTurn,
                };
                break;
            }
            // Checked in the model's order (the loop guard counts calls in
            // a row), then run together.
            let mut planned = Vec::with_capacity(calls.len());
            let mut stopped: Option<TurnStop> = None;
            for (call, server) in calls {
                if stopped.is_some() {
                    let outcome = not_run("Not run: the turn was ended.", "skipped");
                    planned.push((call, Some(outcome)));
                    continue;
                }
                let key = canonical(&call.arguments);
                let count = match &mut streak {
                    Some((name, args, n)) if *name == call.name && *args == key => {
                        *n += 1;
                        *n
                    }
                    _ => {
                        streak = Some((call.name.clone(), key, 1));
                        1
                    }
                };
                events.emit(&AgentEvent::ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    server,
                    arguments: call.arguments.clone(),
                });
                let outcome = if self.options.loop_guard > 0 && count >= self.options.loop_guard {
                    stopped = Some(TurnStop::LoopGuard);
                    message = Some(format!(
                        "Stopped: the model called {} with the same arguments {count} times in a row.",
                        call.name
                    ));
                    Some(not_run(
                        &format!(
                            "Not run: this is call number {count} in a row of {} with the same arguments; \
                             the turn was ended so the user can decide.",
                            call.name
                        ),
                        "loop_guard",
                    ))
                } else if !call.arguments.is_object() {
                    Some(not_run(
                        &format!(
                            "The arguments of {} must be a JSON object; got {}. Call it again with an object.",
                            call.name,
                            short(&call.arguments)
                        ),
                        "bad_arguments",
                    ))
                } else {
                    None
                };
                planned.push((call, outcome));
            }
            let (results, cancelled) = self.run_calls(&planned, events, cancel).await;
            if cancelled {
                stopped = Some(TurnStop::Cancelled);
            }
            self.request.messages.push(Message {
                role: Role::User,
                content: results,
            });
            if let Some(stop) = stopped {
                end.stop = stop;
                break;
            }
        }
        events.emit(&AgentEvent::Usage {
            usage: end.usage,
            model_calls: end.model_calls,
        });
        events.emit(&AgentEvent::Done {
            stop: end.stop,
            message,
        });
        end
    }

    /// Runs the calls of one model turn concurrently, each through the
    /// toolbox (so each through the host's gate; an approver that asks a
    /// person serialises its questions), and returns their results in the
    /// model's order. A call with an outcome already (`planned`'s second
    /// member: refused, guarded, skipped) is not run. Results are reported
    /// in the model's order too, each as soon as it and those before it
    /// are in. A cancel drops the calls still running; the results already
    /// in are kept. Returns whether the turn was cancelled.
    async fn run_calls(
        &self,
        planned: &[(ToolCall, Option<ToolOutcome>)],
        events: &EventSink,
        cancel: &CancelToken,
    ) -> (Vec<Content>, bool) {
        let mut slots: Vec<Slot<'_>> = planned
            .iter()
            .map(|(call, outcome)| match outcome {
                Some(o) => Slot::Ready(o.clone()),
                None if cancel.is_cancelled() => {
                    Slot::Ready(not_run("Not run: the user cancelled the turn.", "skipped"))
                }
                None => Slot::Running(self.toolbox.call(call, events)),
            })
            .collect();
        let mut results = Vec::with_capacity(planned.len());
        let all_in = std::future::poll_fn(|cx| {
            for slot in &mut slots {
                if let Slot::Running(call) = slot {
                    if let Poll::Ready(outcome) = call.as_mut().poll(cx) {
                        *slot = Slot::Ready(outcome);
                    }
                }
            }
            while let Some(Slot::Ready(_)) = slots.get(results.len()) {
                let i = results.len();
                if let Slot::Ready(outcome) = std::mem::replace(&mut slots[i], Slot::Reported) {
                    results.push(self.finish_call(events, &planned[i].0, outcome));
                }
            }
            match results.len() == slots.len() {
                true => Poll::Ready(()),
                false => Poll::Pending,
            }
        });
        let cancelled = tokio::select! {
            biased;
            () = cancel.cancelled() => true,
            () = all_in => false,
        };
        if cancelled {
            for i in results.len()..planned.len() {
                let outcome = match std::mem::replace(&mut slots[i], Slot::Reported) {
                    Slot::Ready(outcome) => outcome,
                    // Dropping the future cancels the call.
                    _ => not_run("The user cancelled this call while it ran.", "cancelled"),
                };
                results.push(self.finish_call(events, &planned[i].0, outcome));
            }
        }
        (results, cancelled)
    }

    fn finish_call(&self, events: &EventSink, call: &ToolCall, outcome: ToolOutcome) -> Content {
        events.emit(&AgentEvent::ToolResult {
            id: call.id.clone(),
            name: call.name.clone(),
            is_error: outcome.is_error,
            outcome: outcome.outcome,
            text: outcome.text.clone(),
        });
        Content::ToolResult {
            tool_use_id: call.id.clone(),
            content: outcome.text,
            is_error: outcome.is_error,
        }
    }

    /// Adds a user part; after tool results (a cancelled or guarded turn)
    /// it joins their message, so roles keep alternating.
    fn push_user(&mut self, content: Content) {
        match self.request.messages.last_mut() {
            Some(m) if m.role == Role::User => m.content.push(content),
            _ => self.request.messages.push(Message {
                role: Role::User,
                content: vec![content],
            }),
        }
    }
}

/// One call of a model turn while the turn's calls run.
enum Slot<'a> {
    /// Still running.
    Running(BoxFuture<'a, ToolOutcome>),
    /// Finished (or never run), not reported yet.
    Ready(ToolOutcome),
    /// Reported and in the results.
    Reported,
}

fn not_run(text: &str, outcome: &str) -> ToolOutcome {
    ToolOutcome {
        text: text.to_owned(),
        is_error: true,
        outcome: outcome.to_owned(),
    }
}

/// Arguments as canonical text (keys sorted), so the loop guard sees
/// `{"a":1,"b":2}` and `{"b":2,"a":1}` as the same call.
fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_arguments_ignore_key_order() {
        let a = serde_json::json!({"a": 1, "b": {"d": 2, "c": 3}});
        let b = serde_json::json!({"b": {"c": 3, "d": 2}, "a": 1});
        assert_eq!(canonical(&a), canonical(&b));
        assert_ne!(canonical(&a), canonical(&serde_json::json!({"a": 2})));
    }
}
