//! Content: the blocks of tool results, prompt messages and sampling
//! messages ([`ContentBlock`]), and resource contents.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::JsonObject;

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
    /// are kept as [`ContentBlock::Other`]. The members kept keep their
    /// order.
    pub fn from_object(mut obj: JsonObject) -> Self {
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let take_str = |obj: &mut JsonObject, key: &str| match obj.get(key) {
            Some(Value::String(_)) => obj
                .shift_remove(key)
                .and_then(|v| v.as_str().map(str::to_owned)),
            _ => None,
        };
        match kind.as_str() {
            "text" if matches!(obj.get("text"), Some(Value::String(_))) => {
                let text = take_str(&mut obj, "text").unwrap_or_default();
                obj.shift_remove("type");
                ContentBlock::Text { text, extra: obj }
            }
            "image" | "audio"
                if matches!(obj.get("data"), Some(Value::String(_)))
                    && matches!(obj.get("mimeType"), Some(Value::String(_))) =>
            {
                let data = take_str(&mut obj, "data").unwrap_or_default();
                let mime_type = take_str(&mut obj, "mimeType").unwrap_or_default();
                obj.shift_remove("type");
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
                obj.shift_remove("type");
                ContentBlock::ResourceLink { fields: obj }
            }
            "resource" => match obj
                .get("resource")
                .cloned()
                .map(serde_json::from_value::<ResourceContents>)
            {
                Some(Ok(resource)) => {
                    obj.shift_remove("resource");
                    obj.shift_remove("type");
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
