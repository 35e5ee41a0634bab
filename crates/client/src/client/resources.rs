//! `resources/list`, `resources/templates/list` and `resources/read`.

use serde_json::Value;
use switchboard_wire::types::{
    JsonObject, ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceTemplate, method,
};

use super::{Client, Listing, cursor_params};
use crate::error::ClientError;
use crate::options::RequestOptions;

impl Client {
    /// One page of `resources/list`.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn list_resources(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourcesResult, ClientError> {
        self.typed(
            method::RESOURCES_LIST,
            cursor_params(cursor),
            &RequestOptions::default(),
        )
        .await
    }

    /// Every resource, paging until `nextCursor` is absent.
    ///
    /// # Errors
    /// As [`Client::list_all_tools`].
    pub async fn list_all_resources(&self) -> Result<Listing<Resource>, ClientError> {
        self.list_all(method::RESOURCES_LIST, |c| async move {
            let p = self.list_resources(c.as_deref()).await?;
            Ok((p.resources, p.next_cursor, p.cache, Vec::new()))
        })
        .await
    }

    /// One page of `resources/templates/list`.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, ClientError> {
        self.typed(
            method::RESOURCES_TEMPLATES_LIST,
            cursor_params(cursor),
            &RequestOptions::default(),
        )
        .await
    }

    /// Every resource template, paging until `nextCursor` is absent.
    ///
    /// # Errors
    /// As [`Client::list_all_tools`].
    pub async fn list_all_resource_templates(
        &self,
    ) -> Result<Listing<ResourceTemplate>, ClientError> {
        self.list_all(method::RESOURCES_TEMPLATES_LIST, |c| async move {
            let p = self.list_resource_templates(c.as_deref()).await?;
            Ok((p.resource_templates, p.next_cursor, p.cache, Vec::new()))
        })
        .await
    }

    /// Reads a resource (MRTR as for tools).
    ///
    /// # Errors
    /// [`ClientError`] as for any request; a missing resource is a protocol
    /// error (-32602, or the legacy -32002; RES-05).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        self.read_resource_with(uri, &RequestOptions::default())
            .await
    }

    /// [`Client::read_resource`] with options.
    ///
    /// # Errors
    /// As [`Client::read_resource`].
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: &RequestOptions,
    ) -> Result<ReadResourceResult, ClientError> {
        let mut params = JsonObject::new();
        params.insert("uri".into(), Value::from(uri));
        self.typed(method::RESOURCES_READ, params, options).await
    }
}
