//! Resources: resources, templates, `resources/list`,
//! `resources/templates/list` and `resources/read`.

use serde::{Deserialize, Serialize};

use super::{CacheHints, JsonObject, ResourceContents, ResultHeader, paged_result};

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

paged_result! {
    /// Result of `resources/list`.
    pub struct ListResourcesResult {
        /// This page of resources.
        pub resources: Vec<Resource>,
        /// Freshness and scope.
        cache,
    }
}

paged_result! {
    /// Result of `resources/templates/list`.
    pub struct ListResourceTemplatesResult {
        /// This page of templates.
        pub resource_templates: Vec<ResourceTemplate>,
        /// Freshness and scope.
        cache,
    }
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
