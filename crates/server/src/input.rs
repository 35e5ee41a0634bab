//! The client's answers to input requests (`inputResponses` on an MRTR
//! retry), read into the wire's types ([`ElicitResult`],
//! [`CreateMessageResult`]).
//!
//! A missing answer is `Ok(None)`: the handler asks again with a fresh
//! `input_required` (MRTR-18). A present but malformed answer is a -32602
//! error (MRTR-16). Keys the handler never reads are ignored (MRTR-17).

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_wire::{CreateMessageResult, ElicitResult, JsonObject, Root};

use crate::error::HandlerError;

/// The `inputResponses` of a request.
#[derive(Clone, Debug, Default)]
pub struct InputResponses {
    map: Option<JsonObject>,
}

#[derive(Deserialize)]
struct RootsAnswer {
    roots: Vec<Root>,
}

impl InputResponses {
    pub(crate) fn new(map: Option<JsonObject>) -> Self {
        InputResponses { map }
    }

    /// Whether the request carried no input responses at all.
    pub fn is_empty(&self) -> bool {
        self.map.as_ref().is_none_or(JsonObject::is_empty)
    }

    /// The raw answer under `key`.
    pub fn raw(&self, key: &str) -> Option<&Value> {
        self.map.as_ref()?.get(key)
    }

    /// The keys present.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.map.iter().flat_map(|m| m.keys().map(String::as_str))
    }

    /// The answer to the elicitation asked under `key`.
    ///
    /// # Errors
    /// -32602 when the answer is present but is not an `ElicitResult`.
    pub fn elicitation(&self, key: &str) -> Result<Option<ElicitResult>, HandlerError> {
        self.typed(key, "an ElicitResult object with \"action\"")
    }

    /// The answer to the sampling request asked under `key`.
    ///
    /// # Errors
    /// -32602 when the answer is present but is not a `CreateMessageResult`.
    pub fn sampling(&self, key: &str) -> Result<Option<CreateMessageResult>, HandlerError> {
        self.typed(
            key,
            "a CreateMessageResult object with \"role\", \"content\" and \"model\"",
        )
    }

    /// The roots sent under `key`.
    ///
    /// # Errors
    /// -32602 when the answer is present but is not a `ListRootsResult`.
    pub fn roots(&self, key: &str) -> Result<Option<Vec<Root>>, HandlerError> {
        Ok(self
            .typed::<RootsAnswer>(key, "a ListRootsResult object with \"roots\"")?
            .map(|r| r.roots))
    }

    fn typed<T: DeserializeOwned>(
        &self,
        key: &str,
        expected: &str,
    ) -> Result<Option<T>, HandlerError> {
        match self.raw(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => T::deserialize(v).map(Some).map_err(|e| {
                HandlerError::invalid_params(format!(
                    "inputResponses.{key} must be {expected}: {e}"
                ))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn responses(v: Value) -> InputResponses {
        InputResponses::new(v.as_object().cloned())
    }

    #[test]
    fn reads_each_kind() {
        let r = responses(json!({
            "who": {"action": "accept", "content": {"name": "Alice"}},
            "llm": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"},
            "dirs": {"roots": [{"uri": "file:///a", "name": "A"}]},
            "extra": 5
        }));
        let who = r.elicitation("who").unwrap().unwrap();
        assert_eq!(who.accepted().unwrap()["name"], "Alice");
        assert_eq!(r.sampling("llm").unwrap().unwrap().text(), "Paris");
        assert_eq!(r.roots("dirs").unwrap().unwrap()[0].uri, "file:///a");
        assert!(r.elicitation("absent").unwrap().is_none());
    }

    // MRTR-16: malformed answers are protocol errors.
    #[test]
    fn malformed_answers_are_invalid_params() {
        let r = responses(json!({"who": 12345}));
        let e = r.elicitation("who").unwrap_err();
        assert_eq!(
            e.as_rpc().unwrap().code,
            switchboard_wire::ErrorCode::InvalidParams.code()
        );
        assert!(e.message().contains("inputResponses.who"));
    }
}
