//! Discovery and capabilities: [`Implementation`], what a client and a
//! server declare, the result of `server/discover`, and the legacy
//! (2025-11-25) `initialize` handshake.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{CacheHints, JsonObject, ResultHeader};

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
