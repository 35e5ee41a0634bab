//! Tools: definitions, `tools/list`, `tools/call` params and results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ContentBlock, JsonObject, ResultHeader, ResultType, paged_result};

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

paged_result! {
    /// Result of `tools/list`.
    pub struct ListToolsResult {
        /// This page of tools.
        pub tools: Vec<Tool>,
        /// Freshness and scope.
        cache,
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
    /// Reads a result from its JSON value, without the buffering serde's
    /// `flatten` does (a tool call is the hot path). Agrees with the
    /// derived `Deserialize` but for one case: a `"structuredContent":
    /// null` is kept as `Some(Value::Null)`, so it is passed on as it came.
    /// Unknown members keep their order.
    ///
    /// # Errors
    /// A sentence saying which member has the wrong shape.
    pub fn from_value(value: Value) -> Result<CallToolResult, String> {
        let Value::Object(mut obj) = value else {
            return Err("a tool result must be a JSON object".into());
        };
        let content = match obj.shift_remove("content") {
            None => Vec::new(),
            Some(Value::Array(blocks)) => blocks
                .into_iter()
                .map(|b| match b {
                    Value::Object(o) => Ok(ContentBlock::from_object(o)),
                    _ => Err("a content block must be an object".to_owned()),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("content must be an array".into()),
        };
        let structured_content = obj.shift_remove("structuredContent");
        let is_error = match obj.shift_remove("isError") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(b),
            Some(_) => return Err("isError must be a boolean".into()),
        };
        let result_type = match obj.shift_remove("resultType") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(ResultType::from(s.as_str())),
            Some(_) => return Err("resultType must be a string".into()),
        };
        let meta = match obj.shift_remove("_meta") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err("_meta must be an object".into()),
        };
        Ok(CallToolResult {
            content,
            structured_content,
            is_error,
            header: ResultHeader {
                result_type,
                meta,
                extra: obj,
            },
        })
    }

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
