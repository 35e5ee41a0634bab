//! Resources and resource templates: a spec (URI, name, MIME type, cache
//! hints) plus an async handler that reads the contents.
//!
//! Reading a URI that matches no resource and no template is -32602 with
//! `data.uri`, never an empty `contents` (RES-03).

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use switchboard_wire::{
    JsonObject, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    types::{CacheHints, ResultHeader, ResultType},
};

use crate::auth::BoxFuture;
use crate::context::Context;
use crate::error::{BuildError, HandlerError};
use crate::handler::{Typed, handler_shapes, spec_builders};
use crate::outcome::{InputRequired, Outcome};
use crate::tool::markers;
use crate::uri_template::{TemplateMatch, UriTemplate};

/// The answer of a resource handler.
pub type ReadOutcome = Outcome<ReadResourceResult>;

/// The return type to give resource handlers that may ask for input.
pub type ReadResult = Result<ReadOutcome, HandlerError>;

/// Text contents of a resource.
pub fn text_contents(
    uri: impl Into<String>,
    mime_type: impl Into<String>,
    text: impl Into<String>,
) -> ResourceContents {
    ResourceContents {
        uri: uri.into(),
        mime_type: Some(mime_type.into()),
        text: Some(text.into()),
        blob: None,
        meta: None,
        extra: JsonObject::new(),
    }
}

/// Binary contents of a resource, base64-encoded into `blob` (RES-09).
pub fn blob_contents(
    uri: impl Into<String>,
    mime_type: impl Into<String>,
    bytes: &[u8],
) -> ResourceContents {
    ResourceContents {
        uri: uri.into(),
        mime_type: Some(mime_type.into()),
        text: None,
        blob: Some(STANDARD.encode(bytes)),
        meta: None,
        extra: JsonObject::new(),
    }
}

/// The description of a fixed resource.
#[derive(Clone, Debug)]
pub struct ResourceSpec {
    pub(crate) resource: Resource,
    pub(crate) cache: Option<CacheHints>,
}

impl ResourceSpec {
    /// A resource at `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceSpec {
            resource: Resource {
                uri: uri.into(),
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                extra: JsonObject::new(),
            },
            cache: None,
        }
    }

    spec_builders!(resource, "Its MIME type.");

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.resource.uri
    }
}

/// The description of a resource template.
#[derive(Clone, Debug)]
pub struct TemplateSpec {
    pub(crate) template: ResourceTemplate,
    pub(crate) cache: Option<CacheHints>,
}

impl TemplateSpec {
    /// A template such as `file:///{+path}` named `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        TemplateSpec {
            template: ResourceTemplate {
                uri_template: uri_template.into(),
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                extra: JsonObject::new(),
            },
            cache: None,
        }
    }

    spec_builders!(template, "The MIME type of the resources it names.");
}

/// A function that reads a fixed resource: `(Context)` or `()`.
pub trait ResourceHandler<M>: Send + Sync + 'static {
    /// Reads the resource.
    fn call(&self, ctx: Context) -> BoxFuture<'static, Result<ReadOutcome, HandlerError>>;
}

handler_shapes! {
    ResourceHandler -> ReadOutcome, IntoReadResult::into_read_result;
    fn call(ctx: Context);
    markers::Ctx [] Fn(Context) => self(ctx) {}
    markers::Nothing [] Fn() => self() {}
}

/// A function that reads resources through a template:
/// `(TemplateMatch, Context)` or `(TemplateMatch)`.
pub trait TemplateHandler<M>: Send + Sync + 'static {
    /// Reads the resource the match names.
    fn call(
        &self,
        matched: TemplateMatch,
        ctx: Context,
    ) -> BoxFuture<'static, Result<ReadOutcome, HandlerError>>;
}

handler_shapes! {
    TemplateHandler -> ReadOutcome, IntoReadResult::into_read_result;
    fn call(matched: TemplateMatch, ctx: Context);
    markers::ArgsCtx<TemplateMatch> [] Fn(TemplateMatch, Context) => self(matched, ctx) {}
    markers::Args<TemplateMatch> [] Fn(TemplateMatch) => self(matched) {}
}

/// Anything a resource handler may return.
pub trait IntoReadResult {
    /// Converts into the read's answer.
    ///
    /// # Errors
    /// The handler's error.
    fn into_read_result(self) -> Result<ReadOutcome, HandlerError>;
}

impl IntoReadResult for ReadResourceResult {
    fn into_read_result(mut self) -> Result<ReadOutcome, HandlerError> {
        if self.header.result_type.is_none() {
            self.header.result_type = Some(ResultType::Complete);
        }
        Ok(Outcome::Complete(self))
    }
}

impl IntoReadResult for Vec<ResourceContents> {
    fn into_read_result(self) -> Result<ReadOutcome, HandlerError> {
        Ok(Outcome::Complete(ReadResourceResult {
            contents: self,
            cache: CacheHints::default(),
            header: ResultHeader::complete(),
        }))
    }
}

impl IntoReadResult for ResourceContents {
    fn into_read_result(self) -> Result<ReadOutcome, HandlerError> {
        vec![self].into_read_result()
    }
}

impl IntoReadResult for ReadOutcome {
    fn into_read_result(self) -> Result<ReadOutcome, HandlerError> {
        match self {
            Outcome::Complete(r) => r.into_read_result(),
            other => Ok(other),
        }
    }
}

impl IntoReadResult for InputRequired {
    fn into_read_result(self) -> Result<ReadOutcome, HandlerError> {
        Ok(Outcome::InputRequired(self))
    }
}

impl<T: IntoReadResult, E: Into<HandlerError>> IntoReadResult for Result<T, E> {
    fn into_read_result(self) -> Result<ReadOutcome, HandlerError> {
        self.map_err(Into::into)?.into_read_result()
    }
}

pub(crate) trait ErasedResource: Send + Sync {
    fn call(&self, ctx: Context) -> BoxFuture<'static, Result<ReadOutcome, HandlerError>>;
}

pub(crate) trait ErasedTemplate: Send + Sync {
    fn call(
        &self,
        matched: TemplateMatch,
        ctx: Context,
    ) -> BoxFuture<'static, Result<ReadOutcome, HandlerError>>;
}

impl<F: ResourceHandler<M>, M: 'static> ErasedResource for Typed<F, M> {
    fn call(&self, ctx: Context) -> BoxFuture<'static, Result<ReadOutcome, HandlerError>> {
        self.f.call(ctx)
    }
}

impl<F: TemplateHandler<M>, M: 'static> ErasedTemplate for Typed<F, M> {
    fn call(
        &self,
        matched: TemplateMatch,
        ctx: Context,
    ) -> BoxFuture<'static, Result<ReadOutcome, HandlerError>> {
        self.f.call(matched, ctx)
    }
}

/// A registered resource.
pub(crate) struct ResourceEntry {
    pub(crate) def: Resource,
    pub(crate) cache: Option<CacheHints>,
    pub(crate) handler: Box<dyn ErasedResource>,
}

impl fmt::Debug for ResourceEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_entry(f, "ResourceEntry", ("uri", &self.def.uri))
    }
}

impl ResourceEntry {
    pub(crate) fn new<M: 'static, H: ResourceHandler<M>>(
        spec: ResourceSpec,
        handler: H,
    ) -> Result<ResourceEntry, BuildError> {
        if spec.resource.uri.is_empty() || !spec.resource.uri.contains(':') {
            return Err(BuildError::InvalidName {
                kind: "resource",
                name: spec.resource.uri,
                reason: "a resource URI needs a scheme (RFC 3986)",
            });
        }
        Ok(ResourceEntry {
            def: spec.resource,
            cache: spec.cache,
            handler: Box::new(Typed::new(handler)),
        })
    }
}

/// A registered resource template.
pub(crate) struct TemplateEntry {
    pub(crate) def: ResourceTemplate,
    pub(crate) parsed: UriTemplate,
    pub(crate) cache: Option<CacheHints>,
    pub(crate) handler: Box<dyn ErasedTemplate>,
}

impl fmt::Debug for TemplateEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_entry(f, "TemplateEntry", ("uri_template", &self.def.uri_template))
    }
}

impl TemplateEntry {
    pub(crate) fn new<M: 'static, H: TemplateHandler<M>>(
        spec: TemplateSpec,
        handler: H,
    ) -> Result<TemplateEntry, BuildError> {
        let parsed = UriTemplate::parse(&spec.template.uri_template).map_err(|reason| {
            BuildError::InvalidTemplate {
                template: spec.template.uri_template.clone(),
                reason,
            }
        })?;
        Ok(TemplateEntry {
            def: spec.template,
            parsed,
            cache: spec.cache,
            handler: Box::new(Typed::new(handler)),
        })
    }
}

/// An entry in `Debug`: the URI or template it answers for, not its
/// handler (a closure has nothing to show).
fn debug_entry(f: &mut fmt::Formatter<'_>, name: &str, (key, value): (&str, &str)) -> fmt::Result {
    f.debug_struct(name)
        .field(key, &value)
        .finish_non_exhaustive()
}
