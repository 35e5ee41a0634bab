//! Tools: a [`ToolSpec`] (name, description, schemas, annotations) plus a
//! typed async handler.
//!
//! A handler is an `async fn` (or closure) taking its arguments as a
//! `Deserialize + JsonSchema` type, optionally followed by the
//! [`Context`]; the input schema is derived from the argument type unless
//! given explicitly. It returns anything [`IntoToolResult`]: a
//! [`CallToolResult`], a `String`, [`Json`], an [`InputRequired`], or a
//! `Result` of those with an error that becomes an `isError` result.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use switchboard_wire::header::{HeaderParam, header_params};
use switchboard_wire::{
    CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations,
    types::{Deprecation, ResultHeader, ResultType},
};

use crate::auth::BoxFuture;
use crate::context::{Context, LazyContext};
use crate::error::{BuildError, HandlerError};
use crate::handler::{Typed, handler_shapes};
use crate::outcome::{InputRequired, Outcome};
use crate::schema::{ArgValidator, FlatSchema, schema_for};

/// The answer of a tool handler.
pub type ToolOutcome = Outcome<CallToolResult>;

/// The return type to give tool handlers that answer either a result or
/// an [`InputRequired`]: `async fn f(ctx: Context) -> ToolResult`, then
/// `Ok(result.into())` or `Ok(ask.into())`.
pub type ToolResult = Result<ToolOutcome, HandlerError>;

/// The description of a tool, without its handler.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    pub(crate) tool: Tool,
    schema_given: bool,
    unlisted: bool,
}

impl ToolSpec {
    /// A tool named `name`. Names should be 1–128 characters of
    /// `[A-Za-z0-9_.-]` (TOOL-05); others work but clients may mangle them.
    pub fn new(name: impl Into<String>) -> Self {
        ToolSpec {
            tool: Tool {
                name: name.into(),
                title: None,
                description: None,
                input_schema: JsonObject::new(),
                output_schema: None,
                annotations: None,
                icons: None,
                meta: None,
                extra: JsonObject::new(),
            },
            schema_given: false,
            unlisted: false,
        }
    }

    /// Callable by name, but left out of `tools/list` (a gateway's denied
    /// tool: a call by name gets the gateway's own refusal, not "unknown
    /// tool").
    pub fn unlisted(mut self) -> Self {
        self.unlisted = true;
        self
    }

    /// What the tool does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.tool.description = Some(description.into());
        self
    }

    /// A display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.tool.title = Some(title.into());
        self
    }

    /// Behaviour hints (`readOnlyHint`, …).
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.tool.annotations = Some(annotations);
        self
    }

    /// The input schema, instead of the one derived from the argument type.
    /// Keep it an object schema (TOOL-04).
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.tool.input_schema = match schema {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        };
        self.schema_given = true;
        self
    }

    /// The schema of `structuredContent` (TOOL-12).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.tool.output_schema = schema.as_object().cloned();
        self
    }

    /// The output schema derived from `T`, for handlers returning [`Json<T>`].
    pub fn output_schema_for<T: JsonSchema>(mut self) -> Self {
        self.tool.output_schema = Some(schema_for::<T>());
        self
    }

    /// Tool `_meta` (a deprecation set before is kept).
    pub fn meta(mut self, meta: JsonObject) -> Self {
        let deprecation = self.tool.deprecation();
        self.tool.meta = Some(meta);
        if let Some(d) = deprecation {
            self.tool.set_deprecation(&d);
        }
        self
    }

    /// Marks the tool deprecated, naming its replacement and the day after
    /// which it may be removed: `_meta` `"dev.switchboard/deprecated"`
    /// ([`switchboard_wire::types::DEPRECATED_META_KEY`]; the protocol defines no
    /// field for it). Switchboard hosts show it in `switchboard tools`,
    /// `doctor`, and to the model in the tool's description.
    pub fn deprecated(mut self, deprecation: Deprecation) -> Self {
        self.tool.set_deprecation(&deprecation);
        self
    }

    /// Icons, verbatim.
    pub fn icons(mut self, icons: Vec<Value>) -> Self {
        self.tool.icons = Some(icons);
        self
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.tool.name
    }
}

/// Marker types telling the handler arities apart.
#[doc(hidden)]
pub mod markers {
    use std::marker::PhantomData;

    /// `Fn(Args)`.
    #[derive(Debug)]
    pub struct Args<A>(PhantomData<A>);
    /// `Fn(Args, Context)`.
    #[derive(Debug)]
    pub struct ArgsCtx<A>(PhantomData<A>);
    /// `Fn(Context)`.
    #[derive(Debug)]
    pub struct Ctx;
    /// `Fn()`.
    #[derive(Debug)]
    pub struct Nothing;
}

/// Arguments of a tool that takes none: accepts any object.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct NoArgs {}

impl JsonSchema for NoArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object", "properties": {}})
    }
}

/// A function that can handle `tools/call`; implemented for async
/// functions and closures of the shapes `(Args)`, `(Args, Context)`,
/// `(Context)` and `()`.
pub trait ToolHandler<M>: Send + Sync + 'static {
    /// The argument type; its JSON Schema becomes the input schema.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// Runs the handler.
    fn call(
        &self,
        args: Self::Args,
        ctx: Context,
    ) -> BoxFuture<'static, Result<ToolOutcome, HandlerError>>;

    /// Runs the handler without a [`Context`] when it takes none, so that
    /// none is built for it; gives the arguments back when it takes one.
    #[doc(hidden)]
    fn call_alone(&self, args: Self::Args) -> Result<ToolFuture, Self::Args> {
        Err(args)
    }
}

/// A running tool handler.
type ToolFuture = BoxFuture<'static, Result<ToolOutcome, HandlerError>>;

handler_shapes! {
    ToolHandler -> ToolOutcome, IntoToolResult::into_tool_result;
    fn call(args: Self::Args, ctx: Context);
    markers::Args<A> [A] Fn(A) => self(args) {
        type Args = A;
        fn call_alone(&self, args: A) -> Result<ToolFuture, A> {
            Ok(Box::pin(crate::handler::Converted::new(
                self(args),
                <R as IntoToolResult>::into_tool_result,
            )))
        }
    }
    markers::ArgsCtx<A> [A] Fn(A, Context) => self(args, ctx) { type Args = A; }
    markers::Ctx [] Fn(Context) => self(ctx) { type Args = NoArgs; }
    markers::Nothing [] Fn() => self() {
        type Args = NoArgs;
        fn call_alone(&self, _args: NoArgs) -> Result<ToolFuture, NoArgs> {
            Ok(Box::pin(crate::handler::Converted::new(
                self(),
                <R as IntoToolResult>::into_tool_result,
            )))
        }
    }
}

/// Anything a tool handler may return.
pub trait IntoToolResult {
    /// Converts into the tool's answer.
    ///
    /// # Errors
    /// The handler's error.
    fn into_tool_result(self) -> Result<ToolOutcome, HandlerError>;
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(mut self) -> Result<ToolOutcome, HandlerError> {
        if self.header.result_type.is_none() {
            self.header.result_type = Some(ResultType::Complete);
        }
        Ok(Outcome::Complete(self))
    }
}

impl IntoToolResult for ToolOutcome {
    fn into_tool_result(self) -> Result<ToolOutcome, HandlerError> {
        match self {
            Outcome::Complete(r) => r.into_tool_result(),
            other => Ok(other),
        }
    }
}

impl IntoToolResult for InputRequired {
    fn into_tool_result(self) -> Result<ToolOutcome, HandlerError> {
        Ok(Outcome::InputRequired(self))
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<ToolOutcome, HandlerError> {
        Ok(Outcome::Complete(CallToolResult::text(self)))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Result<ToolOutcome, HandlerError> {
        Ok(Outcome::Complete(CallToolResult::text(self)))
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self) -> Result<ToolOutcome, HandlerError> {
        vec![self].into_tool_result()
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> Result<ToolOutcome, HandlerError> {
        Ok(Outcome::Complete(CallToolResult {
            content: self,
            structured_content: None,
            is_error: None,
            header: ResultHeader::complete(),
        }))
    }
}

impl<T, E> IntoToolResult for Result<T, E>
where
    T: IntoToolResult,
    E: Into<HandlerError>,
{
    fn into_tool_result(self) -> Result<ToolOutcome, HandlerError> {
        match self {
            Ok(t) => t.into_tool_result(),
            Err(e) => Err(e.into()),
        }
    }
}

/// Structured output: `T` goes into `structuredContent`, and its JSON into
/// a text block for clients that only read text (TOOL-14).
#[derive(Clone, Debug)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> Result<ToolOutcome, HandlerError> {
        let value = serde_json::to_value(&self.0)
            .map_err(|e| HandlerError::internal(format!("structured content: {e}")))?;
        let text = serde_json::to_string(&value).unwrap_or_default();
        Ok(Outcome::Complete(CallToolResult {
            content: vec![ContentBlock::text(text)],
            structured_content: Some(value),
            is_error: None,
            header: ResultHeader::complete(),
        }))
    }
}

/// A handler with its argument type erased.
pub(crate) trait ErasedTool: Send + Sync {
    /// Reads the arguments (by reference: the caller keeps them, e.g. to
    /// bind a request state to them) and starts the handler.
    fn call(
        &self,
        args: &Value,
        ctx: Context,
    ) -> BoxFuture<'static, Result<ToolOutcome, HandlerError>>;

    /// Starts the handler with its arguments read straight from `text`, a
    /// JSON object, into its argument type: no JSON tree is built, and no
    /// [`Context`] unless the handler takes one. The context comes back
    /// unbuilt when the text does not read as the type (the caller then
    /// parses the text and [`call`](Self::call)s, which words the error as
    /// for every call). Only a tool with a [`FlatSchema`] is called so,
    /// and a handler taking JSON has none.
    fn call_text<'a>(
        &self,
        text: &str,
        ctx: LazyContext<'a>,
    ) -> Result<ToolFuture, LazyContext<'a>>;
}

impl<F, M> ErasedTool for Typed<F, M>
where
    F: ToolHandler<M>,
    M: 'static,
{
    fn call(
        &self,
        args: &Value,
        ctx: Context,
    ) -> BoxFuture<'static, Result<ToolOutcome, HandlerError>> {
        match read_args::<F::Args>(args) {
            Ok(a) => self.f.call(a, ctx),
            Err(e) => {
                let e = HandlerError::msg(format!(
                    "The arguments could not be read: {e}. Fix the arguments and call the tool again."
                ));
                Box::pin(async move { Err(e) })
            }
        }
    }

    fn call_text<'a>(
        &self,
        text: &str,
        ctx: LazyContext<'a>,
    ) -> Result<ToolFuture, LazyContext<'a>> {
        let Ok(args) = serde_json::from_str::<F::Args>(text) else {
            return Err(ctx);
        };
        Ok(match self.f.call_alone(args) {
            Ok(handler) => handler,
            Err(args) => self.f.call(args, ctx.build()),
        })
    }
}

/// Whether `A` is JSON itself (`Value`, or an object), which
/// [`read_args`] copies from the parsed arguments rather than reads.
fn is_json<A: 'static>() -> bool {
    use std::any::TypeId;
    let id = TypeId::of::<A>();
    id == TypeId::of::<Value>() || id == TypeId::of::<Map<String, Value>>()
}

/// A handler's arguments read from the request's. A handler that takes
/// them as JSON (`Value`, or an object) gets a copy, which keeps each
/// map's hash table, where reading them through serde would build every
/// map again and hash every key; any other type is read through serde.
fn read_args<A: DeserializeOwned + 'static>(args: &Value) -> Result<A, serde_json::Error> {
    let mut read: Option<A> = None;
    let slot: &mut dyn std::any::Any = &mut read;
    if let Some(value) = slot.downcast_mut::<Option<Value>>() {
        *value = Some(args.clone());
    } else if let (Some(object), Some(given)) = (
        slot.downcast_mut::<Option<Map<String, Value>>>(),
        args.as_object(),
    ) {
        *object = Some(given.clone());
    }
    match read {
        Some(args) => Ok(args),
        None => A::deserialize(args),
    }
}

/// A registered tool.
pub(crate) struct ToolEntry {
    pub(crate) def: Tool,
    pub(crate) validator: ArgValidator,
    /// The input schema, when it can be checked on the arguments' text
    /// and the handler reads its type from them.
    pub(crate) flat: Option<FlatSchema>,
    pub(crate) output_validator: Option<ArgValidator>,
    pub(crate) header_params: Vec<HeaderParam>,
    pub(crate) handler: Box<dyn ErasedTool>,
    /// Left out of `tools/list` ([`ToolSpec::unlisted`]).
    pub(crate) unlisted: bool,
}

impl std::fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEntry")
            .field("name", &self.def.name)
            .finish_non_exhaustive()
    }
}

impl ToolEntry {
    pub(crate) fn new<M: 'static, H: ToolHandler<M>>(
        spec: ToolSpec,
        handler: H,
    ) -> Result<ToolEntry, BuildError> {
        let unlisted = spec.unlisted;
        let mut def = spec.tool;
        if def.name.is_empty() {
            return Err(BuildError::InvalidName {
                kind: "tool",
                name: def.name,
                reason: "it is empty",
            });
        }
        if !is_recommended_name(&def.name) {
            tracing::warn!(
                tool = %def.name,
                "tool name is outside the recommended 1-128 characters of [A-Za-z0-9_.-]"
            );
        }
        if !spec.schema_given {
            def.input_schema = schema_for::<H::Args>();
        }
        match def.input_schema.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            _ => {
                return Err(BuildError::InvalidSchema {
                    tool: def.name,
                    reason: "the input schema's root must be {\"type\": \"object\"}".into(),
                });
            }
        }
        let validator = ArgValidator::compile(&def.input_schema).map_err(|reason| {
            BuildError::InvalidSchema {
                tool: def.name.clone(),
                reason,
            }
        })?;
        let output_validator = match &def.output_schema {
            None => None,
            Some(s) => {
                Some(
                    ArgValidator::compile(s).map_err(|reason| BuildError::InvalidSchema {
                        tool: def.name.clone(),
                        reason: format!("output schema: {reason}"),
                    })?,
                )
            }
        };
        let header_params = header_params(&def.input_schema).map_err(|source| {
            BuildError::InvalidHeaderAnnotation {
                tool: def.name.clone(),
                source,
            }
        })?;
        // A handler that takes JSON is given parsed arguments whatever
        // the schema: checking them on their text would be work wasted.
        let flat = if is_json::<H::Args>() {
            None
        } else {
            FlatSchema::of(&def.input_schema)
        };
        Ok(ToolEntry {
            flat,
            def,
            validator,
            output_validator,
            header_params,
            handler: Box::new(Typed::new(handler)),
            unlisted,
        })
    }
}

fn is_recommended_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The `isError` result a validation failure or business failure becomes.
pub(crate) fn failure_result(message: String) -> CallToolResult {
    CallToolResult::error(message)
}

/// An empty object, the arguments of a call that sent none.
pub(crate) fn empty_args() -> Value {
    Value::Object(Map::new())
}

/// `{"type": "object"}` for tools taking free-form arguments.
pub fn any_object_schema() -> Value {
    json!({"type": "object"})
}

#[cfg(test)]
mod tests {
    use super::*;

    // Arguments taken as JSON are copied, anything else is read through
    // serde: either way the handler gets what serde would have given it.
    #[test]
    fn arguments_read_as_json_are_what_serde_reads() {
        #[derive(Debug, PartialEq, Deserialize)]
        struct Find {
            q: String,
        }
        let given = serde_json::json!({"z": [1, 2.5, {"b": null, "a": "é"}], "q": "x", "a": -3});
        let as_value: Value = read_args(&given).expect("a value");
        assert_eq!(
            as_value,
            Value::deserialize(&given).expect("serde reads it")
        );
        let as_object: Map<String, Value> = read_args(&given).expect("an object");
        let keys: Vec<&str> = as_object.keys().map(String::as_str).collect();
        assert_eq!(keys, ["z", "q", "a"]);
        assert_eq!(Some(&as_object), given.as_object());
        let found: Find = read_args(&given).expect("a struct");
        assert_eq!(found, Find { q: "x".into() });
        // Not an object: the object reader fails as serde does.
        let array = serde_json::json!([1]);
        let refused = read_args::<Map<String, Value>>(&array).expect_err("not an object");
        let serde = Map::<String, Value>::deserialize(&array).expect_err("not an object");
        assert_eq!(refused.to_string(), serde.to_string());
        assert_eq!(read_args::<Value>(&array).expect("any value"), array);
    }

    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    struct Mixed {
        text: String,
        n: Option<u32>,
        flag: Option<bool>,
        x: Option<f64>,
        big: Option<i128>,
        note: Option<String>,
    }

    proptest::proptest! {
        /// A type read straight from the arguments' text, when its derived
        /// schema admits them there, is what it reads from their JSON:
        /// when the text reads, the JSON reads the same (when it does not,
        /// the caller reads the JSON, which words the error).
        #[test]
        fn a_type_read_from_text_is_what_it_reads_from_json(
            text in 0usize..24,
            fields in proptest::collection::vec(proptest::option::of(0usize..24), 6),
        ) {
            // Each member at most once (twice is never admitted).
            let members = fields
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (i + 1, v)));
            const NAMES: [&str; 7] = ["text", "n", "flag", "x", "note", "big", "other"];
            let values = [
                r#""hi""#, r#""a\nb\"""#, r#""é""#, "0", "-0", "7", "4294967296", "1.0", "1.5",
                "-2", "true", "null", "[]", r#"["t"]"#, r#"{"k":[1]}"#, "1e2", r#""\u00e9""#,
                "18446744073709551616", "0.1", "false", "-9223372036854775809",
                "18446744073709551615", "4294967295", "-0.0",
            ];
            let text = format!(
                "{{{}}}",
                std::iter::once((0, text))
                    .chain(members)
                    .map(|(k, v)| format!("\"{}\":{}", NAMES[k], values[v]))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let schema = crate::schema::schema_for::<Mixed>();
            let flat = FlatSchema::of(&schema).expect("Mixed's schema is flat");
            if flat.admits(&text)
                && let Ok(from_text) = serde_json::from_str::<Mixed>(&text)
            {
                let json: Value = serde_json::from_str(&text).unwrap();
                let from_json = read_args::<Mixed>(&json);
                proptest::prop_assert_eq!(Some(&from_text), from_json.as_ref().ok(), "{}", text);
            }
        }
    }

    // 128-bit integers read from text take what JSON reads as a float
    // (`-0`, values beyond 64 bits): a flat schema leaves those to the
    // validator and the JSON reading.
    #[test]
    fn integers_json_reads_as_floats_are_not_admitted() {
        #[derive(Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Big {
            big: i128,
        }
        let flat = FlatSchema::of(&crate::schema::schema_for::<Big>()).expect("flat");
        for admitted in [
            "0",
            "-1",
            "9223372036854775807",
            "18446744073709551615",
            "-9223372036854775808",
        ] {
            assert!(
                flat.admits(&format!(r#"{{"big":{admitted}}}"#)),
                "{admitted}"
            );
        }
        for refused in ["-0", "18446744073709551616", "-9223372036854775809"] {
            let text = format!(r#"{{"big":{refused}}}"#);
            assert!(!flat.admits(&text), "{refused}");
            // What the text path would have done, and the JSON path does not.
            assert!(serde_json::from_str::<Big>(&text).is_ok());
            let json: Value = serde_json::from_str(&text).unwrap();
            assert!(read_args::<Big>(&json).is_err());
        }
    }

    // Handlers taking JSON are never given text to read: they get a copy of
    // the parsed arguments.
    #[test]
    fn only_types_other_than_json_are_read_from_text() {
        assert!(is_json::<Value>());
        assert!(is_json::<Map<String, Value>>());
        assert!(!is_json::<NoArgs>());
        assert!(!is_json::<Mixed>());
    }

    // Issue 39, item 3: a deprecation lands in `_meta` under our own key
    // and survives a later `meta`.
    #[test]
    fn a_deprecated_tool_carries_its_replacement_and_removal_in_meta() {
        let spec = ToolSpec::new("find")
            .deprecated(Deprecation::new("search", "2026-12-31"))
            .meta(
                serde_json::json!({"other": 1})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            );
        let meta = spec.tool.meta.clone().unwrap_or_default();
        assert_eq!(
            meta["dev.switchboard/deprecated"],
            serde_json::json!({"replacement": "search", "removal": "2026-12-31"})
        );
        assert_eq!(meta["other"], 1);
        assert_eq!(
            spec.tool.deprecation(),
            Some(Deprecation::new("search", "2026-12-31"))
        );
    }
}
