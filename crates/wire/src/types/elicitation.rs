//! Elicitation: a server asks the person behind the client for input,
//! through a form or a URL flow (`elicitation/create`).
//!
//! The one shape of the request's params and of the answer: the server
//! framework builds them, the host shows them, the client and the gateway
//! pass them on.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::JsonObject;

/// The params of `elicitation/create`: a form (`requestedSchema`) or, with
/// `mode: "url"`, a flow at `url` the person completes out of band.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestParams {
    /// `form` or `url`; absent means form (ELIC-04).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What the server asks, for the person (read as empty when a server
    /// leaves it out).
    #[serde(default)]
    pub message: String,
    /// Form mode: the flat object schema of the fields to fill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<Value>,
    /// URL mode: where the flow is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitRequestParams {
    /// A form: `message` and the schema of the fields to fill.
    pub fn form(message: impl Into<String>, requested_schema: Value) -> Self {
        ElicitRequestParams {
            mode: None,
            message: message.into(),
            requested_schema: Some(requested_schema),
            url: None,
            extra: JsonObject::new(),
        }
    }

    /// A URL flow: the person completes it at `url`, out of band.
    pub fn url(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequestParams {
            mode: Some("url".into()),
            message: message.into(),
            requested_schema: None,
            url: Some(url.into()),
            extra: JsonObject::new(),
        }
    }

    /// Whether it asks for a URL flow (otherwise a form).
    pub fn is_url(&self) -> bool {
        self.mode.as_deref() == Some("url")
    }
}

/// What the person did with an elicitation (ELIC-07: decline and cancel
/// are distinct).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted the form (or completed the URL flow).
    Accept,
    /// Said no.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// The answer to `elicitation/create`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the person did.
    pub action: ElicitAction,
    /// The submitted fields, when accepted in form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<JsonObject>,
    /// Other members, kept as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The accepted fields of an [`ElicitResult`] do not fit the type asked
/// for.
#[derive(Debug, thiserror::Error)]
#[error("elicitation content: {0}")]
pub struct ElicitContentError(#[from] serde_json::Error);

impl ElicitResult {
    /// An answer with `action` and no fields.
    pub fn new(action: ElicitAction) -> Self {
        ElicitResult {
            action,
            content: None,
            extra: JsonObject::new(),
        }
    }

    /// Accepted, with the form's fields (`None` for a URL flow).
    pub fn accept(content: Option<JsonObject>) -> Self {
        ElicitResult {
            content,
            ..ElicitResult::new(ElicitAction::Accept)
        }
    }

    /// The submitted fields, if the person accepted.
    pub fn accepted(&self) -> Option<&JsonObject> {
        match self.action {
            ElicitAction::Accept => self.content.as_ref(),
            _ => None,
        }
    }

    /// The submitted fields read as `T`, if the person accepted.
    ///
    /// # Errors
    /// [`ElicitContentError`] when the fields do not fit `T`.
    pub fn content_as<T: DeserializeOwned>(&self) -> Result<Option<T>, ElicitContentError> {
        match self.accepted() {
            None => Ok(None),
            Some(c) => Ok(Some(T::deserialize(c)?)),
        }
    }
}

impl From<ElicitResult> for Value {
    fn from(result: ElicitResult) -> Value {
        serde_json::to_value(result).unwrap_or(Value::Null)
    }
}

impl From<ElicitRequestParams> for Value {
    fn from(params: ElicitRequestParams) -> Value {
        serde_json::to_value(params).unwrap_or(Value::Null)
    }
}
