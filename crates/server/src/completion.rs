//! Argument completion (`completion/complete`).
//!
//! The framework checks the reference first: an unknown prompt or resource
//! template is -32602 (COMP-03). The handler returns suggestions; more than
//! 100 are cut to 100 with `hasMore` set (COMP-02).

use std::collections::HashMap;

use serde_json::Value;
use switchboard_wire::Completion;

use crate::auth::BoxFuture;
use crate::context::Context;
use crate::error::HandlerError;
use crate::handler::{Typed, handler_shapes};
use crate::tool::markers;

/// The most values one completion result may carry.
pub(crate) const MAX_VALUES: usize = 100;

/// What is being completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompletionRef {
    /// An argument of the prompt `name`.
    Prompt {
        /// The prompt.
        name: String,
    },
    /// A variable of the resource template `uri`.
    ResourceTemplate {
        /// The template.
        uri: String,
    },
}

/// A `completion/complete` request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompleteRequest {
    /// The prompt or template.
    pub reference: CompletionRef,
    /// The argument being completed.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Arguments already filled in (`context.arguments`).
    pub context: HashMap<String, String>,
}

impl CompleteRequest {
    pub(crate) fn parse(params: Option<&Value>) -> Result<CompleteRequest, String> {
        let p = params.ok_or("completion/complete needs params")?;
        let r = p.get("ref").ok_or("params.ref is required")?;
        let reference = match r.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => CompletionRef::Prompt {
                name: r
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or("ref.name is required for ref/prompt")?
                    .to_owned(),
            },
            Some("ref/resource") => CompletionRef::ResourceTemplate {
                uri: r
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or("ref.uri is required for ref/resource")?
                    .to_owned(),
            },
            _ => return Err("ref.type must be \"ref/prompt\" or \"ref/resource\"".into()),
        };
        let a = p.get("argument").ok_or("params.argument is required")?;
        let argument = a
            .get("name")
            .and_then(Value::as_str)
            .ok_or("argument.name must be a string")?
            .to_owned();
        let value = a
            .get("value")
            .and_then(Value::as_str)
            .ok_or("argument.value must be a string")?
            .to_owned();
        let context = p
            .get("context")
            .and_then(|c| c.get("arguments"))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        Ok(CompleteRequest {
            reference,
            argument,
            value,
            context,
        })
    }
}

/// A function that answers completions: `(CompleteRequest, Context)` or
/// `(CompleteRequest)`.
pub trait CompletionHandler<M>: Send + Sync + 'static {
    /// Suggests values.
    fn call(
        &self,
        request: CompleteRequest,
        ctx: Context,
    ) -> BoxFuture<'static, Result<Completion, HandlerError>>;
}

/// Anything a completion handler may return.
pub trait IntoCompletion {
    /// Converts into a completion.
    ///
    /// # Errors
    /// The handler's error.
    fn into_completion(self) -> Result<Completion, HandlerError>;
}

impl IntoCompletion for Completion {
    fn into_completion(self) -> Result<Completion, HandlerError> {
        Ok(self)
    }
}

impl IntoCompletion for Vec<String> {
    fn into_completion(self) -> Result<Completion, HandlerError> {
        Ok(Completion {
            values: self,
            total: None,
            has_more: None,
        })
    }
}

impl<T: IntoCompletion, E: Into<HandlerError>> IntoCompletion for Result<T, E> {
    fn into_completion(self) -> Result<Completion, HandlerError> {
        self.map_err(Into::into)?.into_completion()
    }
}

handler_shapes! {
    CompletionHandler -> Completion, IntoCompletion::into_completion;
    fn call(request: CompleteRequest, ctx: Context);
    markers::ArgsCtx<CompleteRequest> [] Fn(CompleteRequest, Context) => self(request, ctx) {}
    markers::Args<CompleteRequest> [] Fn(CompleteRequest) => self(request) {}
}

pub(crate) trait ErasedCompletion: Send + Sync {
    fn call(
        &self,
        request: CompleteRequest,
        ctx: Context,
    ) -> BoxFuture<'static, Result<Completion, HandlerError>>;
}

impl<F: CompletionHandler<M>, M: 'static> ErasedCompletion for Typed<F, M> {
    fn call(
        &self,
        request: CompleteRequest,
        ctx: Context,
    ) -> BoxFuture<'static, Result<Completion, HandlerError>> {
        self.f.call(request, ctx)
    }
}

/// Cuts a completion to the 100 values a result may carry (COMP-02).
pub(crate) fn bound(mut c: Completion) -> Completion {
    if c.values.len() > MAX_VALUES {
        let total = c.values.len() as u64;
        c.values.truncate(MAX_VALUES);
        c.has_more = Some(true);
        c.total.get_or_insert(total);
    }
    c
}
