//! JSON-RPC error codes that MCP 2026-07-28 defines, and the typed `data` of
//! the ones that carry it.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::jsonrpc::ErrorObject;

/// The error codes MCP gives a meaning to.
///
/// Codes in -32000..=-32019 are implementation-defined and have no fixed
/// meaning when received (WIRE-32); -32023..=-32099 are reserved and never
/// emitted (WIRE-33).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// -32700: the bytes are not valid JSON (JSON-RPC 2.0).
    ParseError,
    /// -32600: the JSON is not a valid request object (JSON-RPC 2.0).
    InvalidRequest,
    /// -32601: unknown method, or one gated by a capability the server does
    /// not advertise (HTTP 404; basic/index, "Error Codes").
    MethodNotFound,
    /// -32602: invalid params: missing required `_meta`, unknown tool,
    /// unknown resource, bad cursor, bad log level (basic/index).
    InvalidParams,
    /// -32603: internal error.
    InternalError,
    /// -32020: an HTTP header is missing, malformed or disagrees with the
    /// body (transports/streamable-http, "Server Validation"; HTTP 400).
    HeaderMismatch,
    /// -32021: the request needs a client capability it did not declare;
    /// `data.requiredCapabilities` says which (basic/index, `_meta`; HTTP 400).
    MissingRequiredClientCapability,
    /// -32022: the protocol version is not supported; `data.supported` and
    /// `data.requested` say which are (versioning; HTTP 400).
    UnsupportedProtocolVersion,
}

/// The retired "resource not found" code of 2025-11-25 and earlier: never
/// emitted, but accepted from legacy servers as not-found (RES-05).
pub const LEGACY_RESOURCE_NOT_FOUND: i64 = -32002;

impl ErrorCode {
    /// The numeric code.
    pub const fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::HeaderMismatch => -32020,
            ErrorCode::MissingRequiredClientCapability => -32021,
            ErrorCode::UnsupportedProtocolVersion => -32022,
        }
    }

    /// The known code for a number, if any.
    pub const fn from_code(code: i64) -> Option<ErrorCode> {
        Some(match code {
            -32700 => ErrorCode::ParseError,
            -32600 => ErrorCode::InvalidRequest,
            -32601 => ErrorCode::MethodNotFound,
            -32602 => ErrorCode::InvalidParams,
            -32603 => ErrorCode::InternalError,
            -32020 => ErrorCode::HeaderMismatch,
            -32021 => ErrorCode::MissingRequiredClientCapability,
            -32022 => ErrorCode::UnsupportedProtocolVersion,
            _ => return None,
        })
    }

    /// The HTTP status a Streamable HTTP server answers this code with, when
    /// the spec fixes one.
    pub const fn http_status(self) -> Option<u16> {
        match self {
            ErrorCode::MethodNotFound => Some(404),
            ErrorCode::HeaderMismatch
            | ErrorCode::MissingRequiredClientCapability
            | ErrorCode::UnsupportedProtocolVersion => Some(400),
            _ => None,
        }
    }

    /// Whether this code belongs to the modern (2026-07-28) protocol, so that
    /// seeing it proves the peer is a modern server.
    pub const fn is_modern(self) -> bool {
        matches!(
            self,
            ErrorCode::HeaderMismatch
                | ErrorCode::MissingRequiredClientCapability
                | ErrorCode::UnsupportedProtocolVersion
        )
    }
}

/// `data` of an [`ErrorCode::UnsupportedProtocolVersion`] error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnsupportedVersionData {
    /// The versions the server supports.
    pub supported: Vec<String>,
    /// The version the request asked for.
    pub requested: String,
}

impl ErrorObject {
    /// A -32022 error naming the supported and the requested versions.
    pub fn unsupported_version(supported: &[&str], requested: &str) -> Self {
        ErrorObject::new(
            ErrorCode::UnsupportedProtocolVersion,
            format!("protocol version {requested:?} is not supported"),
        )
        .with_data(json!({ "supported": supported, "requested": requested }))
    }

    /// A -32021 error naming the capabilities the request lacks, as a
    /// `ClientCapabilities` object (e.g. `{"sampling": {}}`).
    pub fn missing_capability(required: Value) -> Self {
        ErrorObject::new(
            ErrorCode::MissingRequiredClientCapability,
            "this request needs a client capability it did not declare",
        )
        .with_data(json!({ "requiredCapabilities": required }))
    }

    /// A -32020 error saying which header is wrong.
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        ErrorObject::new(ErrorCode::HeaderMismatch, message)
    }

    /// The typed `data` of a -32022 error, when it is one and well formed.
    pub fn unsupported_version_data(&self) -> Option<UnsupportedVersionData> {
        if self.code != ErrorCode::UnsupportedProtocolVersion.code() {
            return None;
        }
        serde_json::from_value(self.data.clone()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for code in [
            ErrorCode::ParseError,
            ErrorCode::InvalidRequest,
            ErrorCode::MethodNotFound,
            ErrorCode::InvalidParams,
            ErrorCode::InternalError,
            ErrorCode::HeaderMismatch,
            ErrorCode::MissingRequiredClientCapability,
            ErrorCode::UnsupportedProtocolVersion,
        ] {
            assert_eq!(ErrorCode::from_code(code.code()), Some(code));
        }
        assert_eq!(ErrorCode::from_code(LEGACY_RESOURCE_NOT_FOUND), None);
        assert_eq!(ErrorCode::from_code(-32000), None);
    }

    // VER-02: -32022 carries data.supported and data.requested.
    #[test]
    fn unsupported_version_carries_both_lists() {
        let e = ErrorObject::unsupported_version(&["2026-07-28"], "1999-01-01");
        assert_eq!(e.code, ErrorCode::UnsupportedProtocolVersion.code());
        let data = e.unsupported_version_data().unwrap();
        assert_eq!(data.supported, vec!["2026-07-28"]);
        assert_eq!(data.requested, "1999-01-01");
    }

    // WIRE-21: requiredCapabilities is an object.
    #[test]
    fn missing_capability_names_the_capability() {
        let e = ErrorObject::missing_capability(json!({"sampling": {}}));
        assert_eq!(e.code, ErrorCode::MissingRequiredClientCapability.code());
        assert_eq!(
            e.data.unwrap()["requiredCapabilities"]["sampling"],
            json!({})
        );
    }
}
