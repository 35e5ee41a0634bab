//! `prompts/list`, `prompts/get`, and `completion/complete` (which
//! completes the arguments of prompts and resource templates).

use serde_json::{Value, json};
use switchboard_wire::types::{
    CompleteResult, GetPromptResult, JsonObject, ListPromptsResult, Prompt, method,
};

use super::{Client, Listing, cursor_params};
use crate::error::ClientError;
use crate::options::RequestOptions;

impl Client {
    /// One page of `prompts/list`.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn list_prompts(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListPromptsResult, ClientError> {
        self.typed(
            method::PROMPTS_LIST,
            cursor_params(cursor),
            &RequestOptions::default(),
        )
        .await
    }

    /// Every prompt, paging until `nextCursor` is absent.
    ///
    /// # Errors
    /// As [`Client::list_all_tools`].
    pub async fn list_all_prompts(&self) -> Result<Listing<Prompt>, ClientError> {
        self.list_all(method::PROMPTS_LIST, |c| async move {
            let p = self.list_prompts(c.as_deref()).await?;
            Ok((p.prompts, p.next_cursor, p.cache, Vec::new()))
        })
        .await
    }

    /// Gets a prompt (MRTR as for tools).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, ClientError> {
        self.get_prompt_with(name, arguments, &RequestOptions::default())
            .await
    }

    /// [`Client::get_prompt`] with per-request options (e.g. a relayed
    /// `input_required`: [`RequestOptions::relay_input`]).
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &RequestOptions,
    ) -> Result<GetPromptResult, ClientError> {
        let mut params = JsonObject::new();
        params.insert("name".into(), Value::from(name));
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        self.typed(method::PROMPTS_GET, params, options).await
    }

    /// Asks for completions of one argument. `reference` is the
    /// `ref/prompt` or `ref/resource` object; `context` holds arguments
    /// already given.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn complete(
        &self,
        reference: Value,
        argument_name: &str,
        argument_value: &str,
        context: Option<JsonObject>,
    ) -> Result<CompleteResult, ClientError> {
        self.complete_with(
            reference,
            argument_name,
            argument_value,
            context,
            &RequestOptions::default(),
        )
        .await
    }

    /// [`Client::complete`] with per-request options.
    ///
    /// # Errors
    /// [`ClientError`] as for any request.
    pub async fn complete_with(
        &self,
        reference: Value,
        argument_name: &str,
        argument_value: &str,
        context: Option<JsonObject>,
        options: &RequestOptions,
    ) -> Result<CompleteResult, ClientError> {
        let mut params = JsonObject::new();
        params.insert("ref".into(), reference);
        params.insert(
            "argument".into(),
            json!({"name": argument_name, "value": argument_value}),
        );
        if let Some(context) = context {
            params.insert("context".into(), json!({ "arguments": context }));
        }
        self.typed(method::COMPLETE, params, options).await
    }
}
