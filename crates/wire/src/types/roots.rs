//! Roots the client exposes (deprecated feature).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::JsonObject;

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

/// The answer to `roots/list`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots the client exposes.
    pub roots: Vec<Root>,
    /// Other members (`_meta`, …), kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ListRootsResult {
    /// These roots and nothing else.
    pub fn new(roots: Vec<Root>) -> Self {
        ListRootsResult {
            roots,
            extra: JsonObject::new(),
        }
    }
}

impl From<ListRootsResult> for Value {
    fn from(result: ListRootsResult) -> Value {
        serde_json::to_value(result).unwrap_or(Value::Null)
    }
}
