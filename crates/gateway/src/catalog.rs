//! Everything the servers offer beyond tools, served by the gateway: the
//! host's [`Catalog`] of prompts, resources and resource templates is
//! registered on the gateway's server and kept in step with it; reads,
//! `prompts/get` and `completion/complete` go to the host's governed path
//! (the caller's limits and `principals` rules, the user's rules, one
//! audit line naming the caller) with the caller's principal; a server's
//! resource updates reach upstream listeners.
//!
//! Only what this module registered is ever removed: the gateway's own
//! resources (e.g. its status) live beside them untouched. Results carry
//! the gateway's own identity and cache hints, never a server's.

use std::collections::BTreeMap;

use serde_json::Value;
use switchboard_host::{
    CallOptions, Catalog, CompletionRef, Host, Named, OfferChange, OfferError, Outcome, ResourceRef,
};
use switchboard_host::{OfferedPrompt, OfferedResource, OfferedTemplate};
use switchboard_server::{
    CompleteRequest, Context, HandlerError, Offered, PromptOutcome, PromptSpec, ResourceSpec,
    Server, TemplateMatch, TemplateSpec,
};
use switchboard_wire::{
    Completion, JsonObject, Prompt, ReadResourceResult, Resource, ResourceTemplate,
    types::{CacheHints, ResultHeader},
};
use tokio::sync::broadcast;

use crate::relay;

/// What this module registered, with the definitions served.
#[derive(Debug, Default)]
pub(crate) struct Registered {
    prompts: BTreeMap<String, Prompt>,
    resources: BTreeMap<String, Resource>,
    templates: BTreeMap<String, ResourceTemplate>,
}

/// Registers the host's whole catalog.
pub(crate) fn register_all(server: &Server, host: &Host) -> Registered {
    let mut registered = Registered::default();
    let catalog = host.catalog();
    sync_prompts(server, host, &catalog, &mut registered);
    sync_resources(server, host, &catalog, &mut registered);
    registered
}

/// Keeps the served offer in step with the catalog, and passes resource
/// updates on to listen streams.
pub(crate) async fn follow_changes(
    host: Host,
    server: Server,
    mut registered: Registered,
    mut changes: broadcast::Receiver<OfferChange>,
) {
    loop {
        match changes.recv().await {
            Ok(OfferChange::ResourceUpdated(uri)) => server.notifier().resource_updated(&uri),
            Ok(OfferChange::Prompts) => {
                sync_prompts(&server, &host, &host.catalog(), &mut registered);
            }
            Ok(_) => sync_resources(&server, &host, &host.catalog(), &mut registered),
            Err(broadcast::error::RecvError::Lagged(_)) => {
                let catalog = host.catalog();
                sync_prompts(&server, &host, &catalog, &mut registered);
                sync_resources(&server, &host, &catalog, &mut registered);
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Whether `principal` is listed `offered` (a served prompt name,
/// resource URI or template): what its `principals` rules let it reach
/// ([`Host::principal_may`], the question the host's request path asks
/// too).
pub(crate) fn may_list(host: &Host, principal: &str, offered: Offered<'_>) -> bool {
    let named = match offered {
        Offered::Prompt(name) => Named::Prompt(name),
        Offered::Resource(uri) => Named::Resource(uri),
        Offered::Template(template) => Named::Template(template),
    };
    host.principal_may(principal, named)
}

/// The host's options for one request of the caller behind `ctx`.
fn options_of(ctx: &Context) -> CallOptions {
    let mut options = CallOptions::default();
    options.principal = ctx.principal().map(|p| p.subject.clone());
    options.caller_token = crate::tools::caller_token(ctx.principal());
    options
}

/// One `completion/complete`, through the host's governed path. What the
/// caller's rules keep from it is unknown to it, in the words the
/// framework uses for what it does not serve.
pub(crate) async fn complete(
    host: &Host,
    request: CompleteRequest,
    ctx: Context,
) -> Result<Completion, HandlerError> {
    let reference = match &request.reference {
        switchboard_server::CompletionRef::Prompt { name } => CompletionRef::Prompt(name),
        switchboard_server::CompletionRef::ResourceTemplate { uri } => CompletionRef::Template(uri),
    };
    let context: JsonObject = request
        .context
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
        .collect();
    let context = (!context.is_empty()).then_some(context);
    let asked = (request.argument.as_str(), request.value.as_str());
    match host
        .complete(reference, asked, context, options_of(&ctx))
        .await
    {
        Ok(result) => Ok(result.completion),
        Err(OfferError::Refused {
            outcome: Outcome::Denied,
            ..
        }) => Err(HandlerError::invalid_params(match reference {
            CompletionRef::Prompt(name) => format!("unknown prompt {name:?}"),
            CompletionRef::Template(uri) => format!("unknown resource template {uri:?}"),
        })),
        Err(e) => Err(handler_error(e)),
    }
}

fn sync_prompts(server: &Server, host: &Host, catalog: &Catalog, registered: &mut Registered) {
    let now: BTreeMap<&str, &OfferedPrompt> = catalog
        .prompts()
        .iter()
        .map(|p| (p.prompt.name.as_str(), p))
        .collect();
    registered.prompts.retain(|name, def| {
        let keep = now.get(name.as_str()).is_some_and(|p| p.prompt == *def);
        if !keep {
            server.remove_prompt(name);
        }
        keep
    });
    for (name, offered) in now {
        if registered.prompts.contains_key(name) {
            continue;
        }
        if add_prompt(server, host, offered) {
            registered
                .prompts
                .insert(name.to_owned(), offered.prompt.clone());
        }
    }
}

fn add_prompt(server: &Server, host: &Host, offered: &OfferedPrompt) -> bool {
    let p = &offered.prompt;
    let mut spec = PromptSpec::new(&p.name);
    if let Some(d) = &p.description {
        spec = spec.description(d);
    }
    if let Some(t) = &p.title {
        spec = spec.title(t);
    }
    for a in p.arguments.iter().flatten() {
        spec = spec.argument(
            &a.name,
            a.description.clone().unwrap_or_default(),
            a.required == Some(true),
        );
    }
    let host = host.clone();
    let name = p.name.clone();
    let handler = move |args: Value, ctx: Context| {
        let host = host.clone();
        let name = name.clone();
        async move {
            let arguments = match args {
                Value::Object(m) if !m.is_empty() => Some(m),
                _ => None,
            };
            // The server's questions are relayed to the upstream client,
            // as during a tool call (`relay`).
            let mut options = options_of(&ctx);
            options.request.relay_input = true;
            options.request.resume = relay::resume_call(&ctx)
                .await?
                .or_else(|| relay::unsolicited(&ctx));
            options.request.capabilities = Some(ctx.client_capabilities().clone());
            match host.get_prompt(&name, arguments, options).await {
                Ok(mut result) => {
                    // The gateway's identity, never the server's.
                    result.header = ResultHeader::complete();
                    Ok(PromptOutcome::Complete(result))
                }
                Err(OfferError::InputRequired(asked)) => {
                    relay::ask(&name, &asked, ctx.client_capabilities())
                        .map(PromptOutcome::from)
                        .map_err(HandlerError::msg)
                }
                Err(e) => Err(handler_error(e)),
            }
        }
    };
    match server.add_prompt(spec, handler) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(prompt = %p.name, error = %e, "the gateway cannot serve this prompt");
            false
        }
    }
}

fn sync_resources(server: &Server, host: &Host, catalog: &Catalog, registered: &mut Registered) {
    let now: BTreeMap<&str, &OfferedResource> = catalog
        .resources()
        .iter()
        .map(|r| (r.resource.uri.as_str(), r))
        .collect();
    registered.resources.retain(|uri, def| {
        let keep = now.get(uri.as_str()).is_some_and(|r| r.resource == *def);
        if !keep {
            server.remove_resource(uri);
        }
        keep
    });
    for (uri, offered) in now {
        if registered.resources.contains_key(uri) {
            continue;
        }
        if add_resource(server, host, offered) {
            registered
                .resources
                .insert(uri.to_owned(), offered.resource.clone());
        }
    }

    let now: BTreeMap<&str, &OfferedTemplate> = catalog
        .templates()
        .iter()
        .map(|t| (t.template.uri_template.as_str(), t))
        .collect();
    registered.templates.retain(|t, def| {
        let keep = now.get(t.as_str()).is_some_and(|o| o.template == *def);
        if !keep {
            server.remove_template(t);
        }
        keep
    });
    for (t, offered) in now {
        if registered.templates.contains_key(t) {
            continue;
        }
        if add_template(server, host, offered) {
            registered
                .templates
                .insert(t.to_owned(), offered.template.clone());
        }
    }
}

fn add_resource(server: &Server, host: &Host, offered: &OfferedResource) -> bool {
    let r = &offered.resource;
    let mut spec = ResourceSpec::new(&r.uri, &r.name);
    if let Some(d) = &r.description {
        spec = spec.description(d);
    }
    if let Some(t) = &r.title {
        spec = spec.title(t);
    }
    if let Some(m) = &r.mime_type {
        spec = spec.mime_type(m);
    }
    let host = host.clone();
    let served = r.uri.clone();
    let handler = move |ctx: Context| {
        let host = host.clone();
        let served = served.clone();
        async move { read(&host, ResourceRef::Listed(&served), &ctx).await }
    };
    match server.add_resource(spec, handler) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(uri = %r.uri, error = %e, "the gateway cannot serve this resource");
            false
        }
    }
}

fn add_template(server: &Server, host: &Host, offered: &OfferedTemplate) -> bool {
    let t = &offered.template;
    let mut spec = TemplateSpec::new(&t.uri_template, &t.name);
    if let Some(d) = &t.description {
        spec = spec.description(d);
    }
    if let Some(title) = &t.title {
        spec = spec.title(title);
    }
    if let Some(m) = &t.mime_type {
        spec = spec.mime_type(m);
    }
    let host = host.clone();
    let template = t.uri_template.clone();
    let handler = move |matched: TemplateMatch, ctx: Context| {
        let host = host.clone();
        let template = template.clone();
        async move {
            let resource = ResourceRef::Templated {
                template: &template,
                uri: &matched.uri,
            };
            read(&host, resource, &ctx).await
        }
    };
    match server.add_template(spec, handler) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(template = %t.uri_template, error = %e, "the gateway cannot serve this resource template");
            false
        }
    }
}

/// One read through the host's governed path, answered with the
/// gateway's own header and cache hints.
async fn read(
    host: &Host,
    resource: ResourceRef<'_>,
    ctx: &Context,
) -> Result<ReadResourceResult, HandlerError> {
    let mut result = host
        .read_resource(resource, options_of(ctx))
        .await
        .map_err(handler_error)?;
    result.cache = CacheHints::default();
    result.header = ResultHeader::complete();
    Ok(result)
}

/// The host's answer as the gateway's error: a server's JSON-RPC error
/// passes through; a name not served is invalid params; a refusal or a
/// failure is said in the host's words.
pub(crate) fn handler_error(e: OfferError) -> HandlerError {
    match e {
        OfferError::Unknown(text) => HandlerError::invalid_params(text),
        OfferError::Refused { text, .. } => HandlerError::msg(text),
        OfferError::Rejected { error, .. } => HandlerError::rpc(*error),
        other => HandlerError::internal(other.to_string()),
    }
}
