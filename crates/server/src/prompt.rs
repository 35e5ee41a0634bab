//! Prompts: a [`PromptSpec`] plus a typed async handler.
//!
//! The prompt's arguments are listed from the argument type's JSON Schema
//! (every property is an argument; `required` ones are required), unless
//! given explicitly. Arguments arrive as strings; a missing required one is
//! -32602 naming it (PRM-05).

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_wire::{
    ContentBlock, GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage,
    types::{ResultHeader, ResultType},
};

use crate::auth::BoxFuture;
use crate::context::Context;
use crate::error::{BuildError, HandlerError};
use crate::handler::{Typed, handler_shapes};
use crate::outcome::{InputRequired, Outcome};
use crate::schema::schema_for;
use crate::tool::{NoArgs, markers};

/// The answer of a prompt handler.
pub type PromptOutcome = Outcome<GetPromptResult>;

/// The return type to give prompt handlers that may ask for input.
pub type PromptResult = Result<PromptOutcome, HandlerError>;

/// The description of a prompt, without its handler.
#[derive(Clone, Debug)]
pub struct PromptSpec {
    prompt: Prompt,
}

impl PromptSpec {
    /// A prompt named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptSpec {
            prompt: Prompt {
                name: name.into(),
                title: None,
                description: None,
                arguments: None,
                extra: JsonObject::new(),
            },
        }
    }

    /// What the prompt is for.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.prompt.description = Some(description.into());
        self
    }

    /// A display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.prompt.title = Some(title.into());
        self
    }

    /// Declares an argument, instead of deriving them from the argument
    /// type.
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.prompt
            .arguments
            .get_or_insert_with(Vec::new)
            .push(PromptArgument {
                name: name.into(),
                description: Some(description.into()),
                required: Some(required),
                extra: JsonObject::new(),
            });
        self
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.prompt.name
    }
}

/// A message of a prompt from the user.
pub fn user(content: ContentBlock) -> PromptMessage {
    PromptMessage {
        role: "user".into(),
        content,
        extra: JsonObject::new(),
    }
}

/// A message of a prompt from the assistant.
pub fn assistant(content: ContentBlock) -> PromptMessage {
    PromptMessage {
        role: "assistant".into(),
        content,
        extra: JsonObject::new(),
    }
}

/// A function that can handle `prompts/get`: shapes `(Args)`,
/// `(Args, Context)`, `(Context)` and `()`.
pub trait PromptHandler<M>: Send + Sync + 'static {
    /// The argument type; its properties become the prompt's arguments.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// Runs the handler.
    fn call(
        &self,
        args: Self::Args,
        ctx: Context,
    ) -> BoxFuture<'static, Result<PromptOutcome, HandlerError>>;
}

handler_shapes! {
    PromptHandler -> PromptOutcome, IntoPromptResult::into_prompt_result;
    fn call(args: Self::Args, ctx: Context);
    markers::Args<A> [A] Fn(A) => self(args) { type Args = A; }
    markers::ArgsCtx<A> [A] Fn(A, Context) => self(args, ctx) { type Args = A; }
    markers::Ctx [] Fn(Context) => self(ctx) { type Args = NoArgs; }
    markers::Nothing [] Fn() => self() { type Args = NoArgs; }
}

/// Anything a prompt handler may return.
pub trait IntoPromptResult {
    /// Converts into the prompt's answer.
    ///
    /// # Errors
    /// The handler's error.
    fn into_prompt_result(self) -> Result<PromptOutcome, HandlerError>;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(mut self) -> Result<PromptOutcome, HandlerError> {
        if self.header.result_type.is_none() {
            self.header.result_type = Some(ResultType::Complete);
        }
        Ok(Outcome::Complete(self))
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<PromptOutcome, HandlerError> {
        Ok(Outcome::Complete(GetPromptResult {
            description: None,
            messages: self,
            header: ResultHeader::complete(),
        }))
    }
}

impl IntoPromptResult for PromptOutcome {
    fn into_prompt_result(self) -> Result<PromptOutcome, HandlerError> {
        match self {
            Outcome::Complete(r) => r.into_prompt_result(),
            other => Ok(other),
        }
    }
}

impl IntoPromptResult for InputRequired {
    fn into_prompt_result(self) -> Result<PromptOutcome, HandlerError> {
        Ok(Outcome::InputRequired(self))
    }
}

impl<T: IntoPromptResult, E: Into<HandlerError>> IntoPromptResult for Result<T, E> {
    fn into_prompt_result(self) -> Result<PromptOutcome, HandlerError> {
        self.map_err(Into::into)?.into_prompt_result()
    }
}

pub(crate) trait ErasedPrompt: Send + Sync {
    fn call(
        &self,
        args: Value,
        ctx: Context,
    ) -> BoxFuture<'static, Result<PromptOutcome, HandlerError>>;
}

impl<F: PromptHandler<M>, M: 'static> ErasedPrompt for Typed<F, M> {
    fn call(
        &self,
        args: Value,
        ctx: Context,
    ) -> BoxFuture<'static, Result<PromptOutcome, HandlerError>> {
        match serde_json::from_value::<F::Args>(args) {
            Ok(a) => self.f.call(a, ctx),
            Err(e) => {
                let e = HandlerError::invalid_params(format!("invalid prompt arguments: {e}"));
                Box::pin(async move { Err(e) })
            }
        }
    }
}

/// A registered prompt.
pub(crate) struct PromptEntry {
    pub(crate) def: Prompt,
    pub(crate) handler: Box<dyn ErasedPrompt>,
}

impl std::fmt::Debug for PromptEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptEntry")
            .field("name", &self.def.name)
            .finish_non_exhaustive()
    }
}

impl PromptEntry {
    pub(crate) fn new<M: 'static, H: PromptHandler<M>>(
        spec: PromptSpec,
        handler: H,
    ) -> Result<PromptEntry, BuildError> {
        let mut def = spec.prompt;
        if def.name.is_empty() {
            return Err(BuildError::InvalidName {
                kind: "prompt",
                name: def.name,
                reason: "it is empty",
            });
        }
        if def.arguments.is_none() {
            def.arguments = arguments_from_schema(&schema_for::<H::Args>());
        }
        Ok(PromptEntry {
            def,
            handler: Box::new(Typed::new(handler)),
        })
    }

    /// The first required argument missing from `args`.
    pub(crate) fn missing_argument(&self, args: &JsonObject) -> Option<&str> {
        self.def
            .arguments
            .iter()
            .flatten()
            .find(|a| a.required == Some(true) && !args.contains_key(&a.name))
            .map(|a| a.name.as_str())
    }
}

fn arguments_from_schema(schema: &JsonObject) -> Option<Vec<PromptArgument>> {
    let props = schema.get("properties").and_then(Value::as_object)?;
    if props.is_empty() {
        return None;
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Some(
        props
            .iter()
            .map(|(name, prop)| PromptArgument {
                name: name.clone(),
                description: prop
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                required: Some(required.contains(&name.as_str())),
                extra: JsonObject::new(),
            })
            .collect(),
    )
}
