//! MCP 2026-07-28 types, written from `schema/schema.json`.
//!
//! Every object type keeps the members it does not know in `extra`, so a
//! value read and written again loses nothing. Schemas (`inputSchema`,
//! `outputSchema`, `requestedSchema`) are kept as JSON objects, untouched:
//! no `$ref` is followed and no keyword is dropped.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::jsonrpc::RequestId;

/// A JSON object.
pub type JsonObject = Map<String, Value>;

/// What kind of JSON value `value` is, in words for an error message
/// ("a string", "an object", "null", …).
pub fn value_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Method names of 2026-07-28 (client requests, notifications, input requests).
pub mod method {
    /// Discovery of versions and capabilities.
    pub const DISCOVER: &str = "server/discover";
    /// List tools.
    pub const TOOLS_LIST: &str = "tools/list";
    /// Call a tool.
    pub const TOOLS_CALL: &str = "tools/call";
    /// List resources.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// List resource templates.
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    /// Read a resource.
    pub const RESOURCES_READ: &str = "resources/read";
    /// List prompts.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// Get a prompt.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// Argument completion.
    pub const COMPLETE: &str = "completion/complete";
    /// Open a notification stream.
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// Progress about a request.
    pub const PROGRESS: &str = "notifications/progress";
    /// A log message (deprecated feature).
    pub const MESSAGE: &str = "notifications/message";
    /// Cancellation (stdio client → server; listen teardown server → client).
    pub const CANCELLED: &str = "notifications/cancelled";
    /// First message of a listen stream.
    pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
    /// The tool list changed.
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// The prompt list changed.
    pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// The resource list changed.
    pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// A subscribed resource changed.
    pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// Input request: ask the user.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// Input request: ask the client's model.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Input request: ask for the client's roots.
    pub const ROOTS_LIST: &str = "roots/list";
    /// Legacy (2025-11-25) handshake.
    pub const INITIALIZE: &str = "initialize";
    /// Legacy (2025-11-25) handshake completion notification.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// Legacy (2025-11-25) liveness check.
    pub const PING: &str = "ping";
    /// Legacy (2025-11-25) log level setting.
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// Legacy (2025-11-25) resource subscription.
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// Legacy (2025-11-25) resource unsubscription.
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";

    /// Methods 2026-07-28 removed; a modern server answers them 404/-32601.
    pub const REMOVED: &[&str] = &[
        INITIALIZE,
        PING,
        LOGGING_SET_LEVEL,
        RESOURCES_SUBSCRIBE,
        RESOURCES_UNSUBSCRIBE,
    ];

    /// Whether results of `method` may be `input_required` (MRTR-02).
    pub fn allows_input_required(method: &str) -> bool {
        matches!(
            method,
            TOOLS_CALL | RESOURCES_READ | PROMPTS_GET | "tasks/result"
        )
    }
}

/// The `resultType` of a result: what kind of answer it is (WIRE-06).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum ResultType {
    /// The request is finished; the result is final.
    #[default]
    Complete,
    /// The server needs client input before it can finish (MRTR).
    InputRequired,
    /// A value from an extension, or one we do not know.
    Other(String),
}

impl ResultType {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Other(s) => s,
        }
    }

    /// The kind of a raw result: absent means complete (WIRE-09).
    pub fn of(result: &Value) -> ResultType {
        match result.get("resultType").and_then(Value::as_str) {
            None => ResultType::Complete,
            Some(s) => ResultType::from(s),
        }
    }
}

impl From<&str> for ResultType {
    fn from(s: &str) -> Self {
        match s {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            other => ResultType::Other(other.to_owned()),
        }
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Ok(ResultType::from(s.as_str()))
    }
}

/// Who may reuse a cached result (caching).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Reusable across authorization contexts.
    Public,
    /// Only for the authorization context that fetched it.
    Private,
}

/// Name and version of a client or server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Implementation {
    /// An implementation with just a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            extra: JsonObject::new(),
        }
    }
}

/// Capabilities a client declares on a request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// Elicitation support; `{}` means form mode only. Boxed, as is
    /// `sampling`: every request's `_meta` holds a `ClientCapabilities`,
    /// and most declare neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Box<ElicitationCapability>>,
    /// Sampling support (deprecated feature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Box<SamplingCapability>>,
    /// Roots support (deprecated feature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<JsonObject>,
    /// Experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Extensions, keyed by prefixed identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `clientCapabilities.elicitation`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitationCapability {
    /// Form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// URL mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `clientCapabilities.sampling`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingCapability {
    /// Support for `includeContext` other than `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// Support for tool use inside sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ClientCapabilities {
    /// Reads a `clientCapabilities` object. The common `{}` costs nothing;
    /// anything else goes through a `Value`, so the flattened unknown
    /// members are kept as they came.
    ///
    /// # Errors
    /// When a known member has the wrong shape.
    pub fn from_object(object: Map<String, Value>) -> Result<Self, serde_json::Error> {
        if object.is_empty() {
            return Ok(ClientCapabilities::default());
        }
        ClientCapabilities::deserialize(Value::Object(object))
    }

    /// Whether form-mode elicitation is declared (`{}` counts as form; ELIC-01).
    pub fn supports_elicitation_form(&self) -> bool {
        match &self.elicitation {
            None => false,
            Some(e) => e.form.is_some() || e.url.is_none(),
        }
    }

    /// Whether URL-mode elicitation is declared.
    pub fn supports_elicitation_url(&self) -> bool {
        self.elicitation.as_ref().is_some_and(|e| e.url.is_some())
    }

    /// Whether sampling is declared.
    pub fn supports_sampling(&self) -> bool {
        self.sampling.is_some()
    }

    /// Whether tool use inside sampling is declared.
    pub fn supports_sampling_tools(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.tools.is_some())
    }

    /// Whether roots are declared.
    pub fn supports_roots(&self) -> bool {
        self.roots.is_some()
    }

    /// These capabilities keeping only the questions `other` can answer
    /// too: the elicitation modes, sampling (with its `context` and
    /// `tools`) and roots (with `listChanged`) that both declare. The rest
    /// (experimental, extensions, other members) is kept as it is here. A
    /// gateway declares this to a server, narrowed to its caller's, so
    /// that the server asks only what the gateway can pass on.
    pub fn narrowed_to(&self, other: &ClientCapabilities) -> ClientCapabilities {
        let form = self.supports_elicitation_form() && other.supports_elicitation_form();
        let url = self.supports_elicitation_url() && other.supports_elicitation_url();
        let elicitation = self
            .elicitation
            .as_ref()
            .filter(|_| form || url)
            .map(|own| {
                Box::new(ElicitationCapability {
                    form: form.then(|| own.form.clone().unwrap_or_default()),
                    url: if url { own.url.clone() } else { None },
                    extra: own.extra.clone(),
                })
            });
        let sampling = match (&self.sampling, &other.sampling) {
            (Some(own), Some(theirs)) => Some(Box::new(SamplingCapability {
                context: own.context.clone().filter(|_| theirs.context.is_some()),
                tools: own.tools.clone().filter(|_| theirs.tools.is_some()),
                extra: own.extra.clone(),
            })),
            _ => None,
        };
        let roots = match (&self.roots, &other.roots) {
            (Some(own), Some(theirs)) => Some(
                own.iter()
                    .filter(|(key, _)| theirs.contains_key(*key))
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect(),
            ),
            _ => None,
        };
        ClientCapabilities {
            elicitation,
            sampling,
            roots,
            ..self.clone()
        }
    }
}

/// `listChanged` flag of a server capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListChangedCapability {
    /// Whether the server emits `list_changed` notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `capabilities.resources` of a server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Whether resource subscriptions are supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Whether the server emits `resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Capabilities a server advertises in `server/discover`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChangedCapability>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChangedCapability>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Argument completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Log messages (deprecated feature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// Experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<JsonObject>,
    /// Extensions, keyed by prefixed identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Result of `server/discover`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Protocol revisions the server serves.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// How to use this server, for the model's system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Freshness and scope.
    #[serde(flatten)]
    pub cache: CacheHints,
    /// Result kind and metadata.
    #[serde(flatten)]
    pub header: ResultHeader,
}

/// `resultType` and `_meta`, shared by every result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultHeader {
    /// The result kind; absent in legacy results, meaning complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata (`serverInfo`, …).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `ttlMs` and `cacheScope` of a cacheable result (CACHE-01).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheHints {
    /// How long the result stays fresh, in milliseconds. Absent, zero or
    /// negative means stale at once (CACHE-04).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    /// Who may reuse the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

impl CacheHints {
    /// Hints with a TTL and a scope.
    pub fn new(ttl_ms: u32, scope: CacheScope) -> Self {
        CacheHints {
            ttl_ms: Some(i64::from(ttl_ms)),
            cache_scope: Some(scope),
        }
    }

    /// The TTL as a duration, when positive.
    pub fn ttl(&self) -> Option<std::time::Duration> {
        self.ttl_ms
            .filter(|ms| *ms > 0)
            .map(|ms| std::time::Duration::from_millis(ms.unsigned_abs()))
    }
}

/// Behaviour hints of a tool. Untrusted unless the server is (TOOL-07).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy things.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world (the web, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A tool definition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Programmatic name, unique per server.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments, kept verbatim.
    pub input_schema: JsonObject,
    /// JSON Schema of `structuredContent`, kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons, kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Tool metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Tool {
    /// A tool with a name, a description and an input schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: JsonObject,
    ) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema,
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// Result of `tools/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// This page of tools.
    pub tools: Vec<Tool>,
    /// Cursor of the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Freshness and scope.
    #[serde(flatten)]
    pub cache: CacheHints,
    /// Result kind and metadata.
    #[serde(flatten)]
    pub header: ResultHeader,
}

/// Annotations on content and resources (audience, priority, …), verbatim.
pub type Annotations = JsonObject;

/// Contents of a resource: text or base64 `blob`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The resource URI.
    pub uri: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 binary contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A content block of a tool result, prompt message or sampling message.
///
/// A block whose `type` is not one of the five core types is kept whole as
/// [`ContentBlock::Other`], so results from newer servers survive.
#[derive(Clone, Debug, PartialEq)]
pub enum ContentBlock {
    /// `{"type":"text"}`.
    Text {
        /// The text.
        text: String,
        /// Other members (annotations, `_meta`, …).
        extra: JsonObject,
    },
    /// `{"type":"image"}`: base64 data.
    Image {
        /// Base64 data.
        data: String,
        /// MIME type.
        mime_type: String,
        /// Other members.
        extra: JsonObject,
    },
    /// `{"type":"audio"}`: base64 data.
    Audio {
        /// Base64 data.
        data: String,
        /// MIME type.
        mime_type: String,
        /// Other members.
        extra: JsonObject,
    },
    /// `{"type":"resource_link"}`: a link the client may read.
    ResourceLink {
        /// The link's members (`uri`, `name`, …).
        fields: JsonObject,
    },
    /// `{"type":"resource"}`: embedded contents.
    Resource {
        /// The contents.
        resource: ResourceContents,
        /// Other members.
        extra: JsonObject,
    },
    /// Any other block, verbatim.
    Other(JsonObject),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text {
            text: text.into(),
            extra: JsonObject::new(),
        }
    }

    /// An image block.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image {
            data: data.into(),
            mime_type: mime_type.into(),
            extra: JsonObject::new(),
        }
    }

    /// An audio block.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio {
            data: data.into(),
            mime_type: mime_type.into(),
            extra: JsonObject::new(),
        }
    }

    /// An embedded resource block.
    pub fn resource(resource: ResourceContents) -> Self {
        ContentBlock::Resource {
            resource,
            extra: JsonObject::new(),
        }
    }

    /// The `type` member.
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text { .. } => "text",
            ContentBlock::Image { .. } => "image",
            ContentBlock::Audio { .. } => "audio",
            ContentBlock::ResourceLink { .. } => "resource_link",
            ContentBlock::Resource { .. } => "resource",
            ContentBlock::Other(o) => o.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The block as a JSON object.
    pub fn to_object(&self) -> JsonObject {
        let mut out = JsonObject::new();
        out.insert("type".into(), Value::from(self.kind()));
        match self {
            ContentBlock::Text { text, extra } => {
                out.insert("text".into(), Value::from(text.as_str()));
                extend(&mut out, extra);
            }
            ContentBlock::Image {
                data,
                mime_type,
                extra,
            }
            | ContentBlock::Audio {
                data,
                mime_type,
                extra,
            } => {
                out.insert("data".into(), Value::from(data.as_str()));
                out.insert("mimeType".into(), Value::from(mime_type.as_str()));
                extend(&mut out, extra);
            }
            ContentBlock::ResourceLink { fields } => extend(&mut out, fields),
            ContentBlock::Resource { resource, extra } => {
                out.insert(
                    "resource".into(),
                    serde_json::to_value(resource).unwrap_or(Value::Null),
                );
                extend(&mut out, extra);
            }
            ContentBlock::Other(o) => return o.clone(),
        }
        out
    }

    /// Reads a block from a JSON object; unknown or malformed core blocks
    /// are kept as [`ContentBlock::Other`].
    pub fn from_object(mut obj: JsonObject) -> Self {
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let take_str = |obj: &mut JsonObject, key: &str| match obj.get(key) {
            Some(Value::String(_)) => obj.remove(key).and_then(|v| v.as_str().map(str::to_owned)),
            _ => None,
        };
        match kind.as_str() {
            "text" if matches!(obj.get("text"), Some(Value::String(_))) => {
                let text = take_str(&mut obj, "text").unwrap_or_default();
                obj.remove("type");
                ContentBlock::Text { text, extra: obj }
            }
            "image" | "audio"
                if matches!(obj.get("data"), Some(Value::String(_)))
                    && matches!(obj.get("mimeType"), Some(Value::String(_))) =>
            {
                let data = take_str(&mut obj, "data").unwrap_or_default();
                let mime_type = take_str(&mut obj, "mimeType").unwrap_or_default();
                obj.remove("type");
                if kind == "image" {
                    ContentBlock::Image {
                        data,
                        mime_type,
                        extra: obj,
                    }
                } else {
                    ContentBlock::Audio {
                        data,
                        mime_type,
                        extra: obj,
                    }
                }
            }
            "resource_link" => {
                obj.remove("type");
                ContentBlock::ResourceLink { fields: obj }
            }
            "resource" => match obj
                .get("resource")
                .cloned()
                .map(serde_json::from_value::<ResourceContents>)
            {
                Some(Ok(resource)) => {
                    obj.remove("resource");
                    obj.remove("type");
                    ContentBlock::Resource {
                        resource,
                        extra: obj,
                    }
                }
                _ => ContentBlock::Other(obj),
            },
            _ => ContentBlock::Other(obj),
        }
    }
}

fn extend(out: &mut JsonObject, extra: &JsonObject) {
    for (k, v) in extra {
        out.insert(k.clone(), v.clone());
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_object().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Object(obj) => Ok(ContentBlock::from_object(obj)),
            _ => Err(de::Error::custom("a content block must be an object")),
        }
    }
}

/// Result of `tools/call`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The unstructured result.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Structured result matching the tool's `outputSchema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool ran and failed (a tool error, not a protocol error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Result kind and metadata.
    #[serde(flatten)]
    pub header: ResultHeader,
}

impl CallToolResult {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(text)],
            structured_content: None,
            is_error: None,
            header: ResultHeader::complete(),
        }
    }

    /// A tool error (`isError: true`) with one text block telling the model
    /// what went wrong.
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult {
            is_error: Some(true),
            ..CallToolResult::text(text)
        }
    }

    /// Whether this is a tool error.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// All text blocks joined with newlines.
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for t in self.content.iter().filter_map(ContentBlock::as_text) {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(t);
        }
        out
    }
}

impl ResultHeader {
    /// A header with `resultType: "complete"`.
    pub fn complete() -> Self {
        ResultHeader {
            result_type: Some(ResultType::Complete),
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// Params of `tools/call`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    /// The tool's name on its server.
    pub name: String,
    /// The arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// MRTR answers, keyed like the server's `inputRequests`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<JsonObject>,
    /// MRTR state, echoed byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One input request inside an `input_required` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its params, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A result with `resultType: "input_required"` (MRTR).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// What the server needs, keyed by the server's names for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<JsonObject>,
    /// Opaque state to echo on the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Result kind and metadata.
    #[serde(flatten)]
    pub header: ResultHeader,
}

impl InputRequiredResult {
    /// The input requests in the server's order, each parsed; an entry that
    /// is not an `{method, params}` object is `Err` with its key.
    pub fn requests(&self) -> impl Iterator<Item = (&str, Result<InputRequest, &Value>)> {
        self.input_requests.iter().flatten().map(|(k, v)| {
            (
                k.as_str(),
                serde_json::from_value::<InputRequest>(v.clone()).map_err(|_| v),
            )
        })
    }
}

/// Params of a paginated list request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PaginatedParams {
    /// The cursor of the page to fetch; `""` is a valid cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A resource a server offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A URI template for parameterised resources.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// RFC 6570 URI template.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Result of `resources/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// This page of resources.
    pub resources: Vec<Resource>,
    /// Cursor of the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Freshness and scope.
    #[serde(flatten)]
    pub cache: CacheHints,
    /// Result kind and metadata.
    #[serde(flatten)]
    pub header: ResultHeader,
}

/// Result of `resources/templates/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// This page of templates.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Cursor of the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Freshness and scope.
    #[serde(flatten)]
    pub cache: CacheHints,
    /// Result kind and metadata.
    #[serde(flatten)]
    pub header: ResultHeader,
}

/// Result of `resources/read`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The contents (never empty for a found resource; RES-03).
    pub contents: Vec<ResourceContents>,
    /// Freshness and scope.
    #[serde(flatten)]
    pub cache: CacheHints,
    /// Result kind and metadata.
    #[serde(flatten)]
    pub header: ResultHeader,
}

/// An argument a prompt takes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Argument name.
    pub name: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A prompt a server offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// Programmatic name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Result of `prompts/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// This page of prompts.
    pub prompts: Vec<Prompt>,
    /// Cursor of the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Freshness and scope.
    #[serde(flatten)]
    pub cache: CacheHints,
    /// Result kind and metadata.
    #[serde(flatten)]
    pub header: ResultHeader,
}

/// A message of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// The content.
    pub content: ContentBlock,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Result of `prompts/get`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
    /// Result kind and metadata.
    #[serde(flatten)]
    pub header: ResultHeader,
}

/// `completion` member of a `completion/complete` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Suggested values, at most 100.
    pub values: Vec<String>,
    /// Total number of matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more matches exist than were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// Result of `completion/complete`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompleteResult {
    /// The suggestions.
    pub completion: Completion,
    /// Result kind and metadata.
    #[serde(flatten)]
    pub header: ResultHeader,
}

/// Which notifications a `subscriptions/listen` stream carries.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// URIs whose `notifications/resources/updated` the client wants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `notifications/progress`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams {
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: RequestId,
    /// Progress so far; rises with every notification.
    pub progress: f64,
    /// Total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// Human-readable progress text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `notifications/cancelled`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams {
    /// The id of the request being cancelled.
    pub request_id: RequestId,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A root the client exposes (deprecated feature).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of the legacy (2025-11-25) `initialize` request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The revision the client proposes.
    pub protocol_version: String,
    /// The client's capabilities for the session.
    pub capabilities: ClientCapabilities,
    /// Who the client is.
    pub client_info: Implementation,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Result of the legacy (2025-11-25) `initialize` request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The revision the server chose.
    pub protocol_version: String,
    /// The server's capabilities for the session.
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: Implementation,
    /// How to use this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caps(v: Value) -> ClientCapabilities {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn narrowing_keeps_only_the_questions_both_sides_answer() {
        let own = caps(json!({
            "elicitation": {"form": {}, "url": {}},
            "sampling": {"tools": {}},
            "roots": {"listChanged": true},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }));
        // `{}` elicitation is form only; no roots; sampling without tools.
        let caller = caps(json!({"elicitation": {}, "sampling": {}}));
        let narrowed = serde_json::to_value(own.narrowed_to(&caller)).unwrap();
        assert_eq!(
            narrowed,
            json!({
                "elicitation": {"form": {}},
                "sampling": {},
                "extensions": {"io.modelcontextprotocol/tasks": {}}
            })
        );
        // A caller that answers nothing leaves only what is not a question.
        let bare = serde_json::to_value(own.narrowed_to(&ClientCapabilities::default())).unwrap();
        assert_eq!(
            bare,
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
        // Nothing is added that the client itself does not declare.
        let form_only = caps(json!({"elicitation": {"form": {}}}));
        let wide = caps(json!({"elicitation": {"url": {}, "form": {}}, "roots": {}}));
        assert_eq!(form_only.narrowed_to(&wide), form_only);
        let url_only = caps(json!({"elicitation": {"url": {}}}));
        assert!(!url_only.narrowed_to(&caller).supports_elicitation_form());
        assert_eq!(url_only.narrowed_to(&caller).elicitation, None);
    }

    fn round_trip<T: Serialize + for<'de> Deserialize<'de>>(v: Value) -> Value {
        let t: T = serde_json::from_value(v).unwrap();
        serde_json::to_value(&t).unwrap()
    }

    // JSCH-05: schemas come back verbatim: no $ref followed, no keyword dropped.
    #[test]
    fn tool_schema_survives_byte_for_byte() {
        let text = r##"{"name":"t","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"},"y":{"$ref":"http://127.0.0.1:1/remote.json"}},"additionalProperties":false,"x-mcp-header":"X","unevaluatedProperties":false},"outputSchema":{"type":"array"},"annotations":{"readOnlyHint":true,"x-vendor":1},"futureField":{"k":[1,2]}}"##;
        let tool: Tool = serde_json::from_str(text).unwrap();
        let back = serde_json::to_string(&tool).unwrap();
        let a: Value = serde_json::from_str(text).unwrap();
        let b: Value = serde_json::from_str(&back).unwrap();
        assert_eq!(a, b);
        // Key order of the schema is kept too.
        assert!(back.contains(r##""inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs""##));
    }

    #[test]
    fn results_keep_unknown_members() {
        let v = json!({"tools":[],"nextCursor":"","ttlMs":5,"cacheScope":"private","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"extra":true});
        assert_eq!(round_trip::<ListToolsResult>(v.clone()), v);
        let v = json!({"content":[{"type":"text","text":"hi","annotations":{"priority":1}},{"type":"hologram","x":1},{"type":"resource","resource":{"uri":"a://b","text":"t"}}],"isError":true,"resultType":"complete","z":1});
        assert_eq!(round_trip::<CallToolResult>(v.clone()), v);
        let v = json!({"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"future":{}},"ttlMs":0,"cacheScope":"public","resultType":"complete"});
        assert_eq!(round_trip::<DiscoverResult>(v.clone()), v);
    }

    // WIRE-09: absent resultType is complete; unknown ones are kept as such.
    #[test]
    fn result_type_classification() {
        assert_eq!(ResultType::of(&json!({})), ResultType::Complete);
        assert_eq!(
            ResultType::of(&json!({"resultType":"input_required"})),
            ResultType::InputRequired
        );
        assert_eq!(
            ResultType::of(&json!({"resultType":"task"})),
            ResultType::Other("task".into())
        );
    }

    #[test]
    fn elicitation_capability_defaults_to_form() {
        let caps: ClientCapabilities = serde_json::from_value(json!({"elicitation":{}})).unwrap();
        assert!(caps.supports_elicitation_form());
        assert!(!caps.supports_elicitation_url());
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation":{"url":{}}})).unwrap();
        assert!(!caps.supports_elicitation_form());
        assert!(caps.supports_elicitation_url());
    }

    #[test]
    fn malformed_core_blocks_are_kept_whole() {
        let v = json!({"type":"text","text":5});
        let b: ContentBlock = serde_json::from_value(v.clone()).unwrap();
        assert!(matches!(b, ContentBlock::Other(_)));
        assert_eq!(serde_json::to_value(&b).unwrap(), v);
    }
}
