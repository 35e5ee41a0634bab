//! What every result shares: `resultType` ([`ResultType`]) and `_meta`
//! ([`ResultHeader`]), cache hints ([`CacheHints`], CACHE-01), and the
//! params of a paginated list request.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::JsonObject;

/// Declares the result of a paginated list method: one page of items
/// under its own member, then what every page carries (the next page's
/// cursor, the cache hints, the result header). The struct is written out
/// as before, so its JSON is unchanged.
macro_rules! paged_result {
    (
        $(#[$doc:meta])*
        pub struct $name:ident {
            $(#[$items_doc:meta])*
            pub $items:ident: Vec<$item:ty>,
            $(#[$cache_doc:meta])*
            cache,
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $(#[$items_doc])*
            pub $items: Vec<$item>,
            /// Cursor of the next page; absent on the last one.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub next_cursor: Option<String>,
            $(#[$cache_doc])*
            #[serde(flatten)]
            pub cache: $crate::types::CacheHints,
            /// Result kind and metadata.
            #[serde(flatten)]
            pub header: $crate::types::ResultHeader,
        }
    };
}
pub(crate) use paged_result;

/// Implements `Serialize` and `Deserialize` for an open string enum
/// through its `as_str` and its `From<&str>` (which keeps unknown values),
/// so it travels as the bare string.
macro_rules! string_serde {
    ($ty:ident) => {
        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Self, D::Error> {
                let s = <String as ::serde::Deserialize>::deserialize(deserializer)?;
                Ok($ty::from(s.as_str()))
            }
        }
    };
}
pub(crate) use string_serde;

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

string_serde!(ResultType);

/// Who may reuse a cached result (caching).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Reusable across authorization contexts.
    Public,
    /// Only for the authorization context that fetched it.
    Private,
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
