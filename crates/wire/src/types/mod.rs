//! MCP 2026-07-28 types, written from `schema/schema.json`.
//!
//! Every object type keeps the members it does not know in `extra`, so a
//! value read and written again loses nothing. Schemas (`inputSchema`,
//! `outputSchema`, `requestedSchema`) are kept as JSON objects, untouched:
//! no `$ref` is followed and no keyword is dropped.
//!
//! One module per protocol feature, as lsp-types does; every type is
//! re-exported here, and the ones an embedder meets on every call from the
//! crate root too (`switchboard_wire::Tool` is `types::Tool`).
//!
//! # Layout
//! - `result`: what every result shares (`resultType`, `_meta`, cache
//!   hints) and paginated list params; `mrtr`: `input_required` results.
//! - `lifecycle`: implementation info, capabilities, `server/discover`
//!   and the legacy `initialize`.
//! - `content`: content blocks and resource contents.
//! - `tools`, `resources`, `prompts`, `completion`: one per server feature.
//! - `notifications`: the listen stream's filter, progress, cancellation.
//! - `elicitation`, `sampling`, `roots`: what a server asks of the client.
//! - [`method`]: method names.

use serde_json::{Map, Value};

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

mod completion;
mod content;
mod deprecation;
mod elicitation;
mod lifecycle;
pub mod method;
mod mrtr;
mod notifications;
mod prompts;
mod resources;
mod result;
mod roots;
mod sampling;
#[cfg(test)]
mod tests;
mod tool_response;
mod tools;

pub use completion::*;
pub use content::*;
pub use deprecation::*;
pub use elicitation::*;
pub use lifecycle::*;
pub use mrtr::*;
pub use notifications::*;
pub use prompts::*;
pub use resources::*;
pub use result::*;
pub use roots::*;
pub use sampling::*;
pub use tools::*;

pub(crate) use result::{paged_result, string_serde};
