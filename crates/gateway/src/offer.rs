//! Everything the servers offer beyond tools, served by the gateway: the
//! host's [`Catalog`] of prompts, resources and resource templates is
//! registered on the gateway's server and kept in step with it; reads,
//! `prompts/get` and `completion/complete` are routed to the owning server
//! by the catalog; a server's resource updates reach upstream listeners.
//!
//! Only what this module registered is ever removed: the gateway's own
//! resources (e.g. its status) live beside them untouched. Results carry
//! the gateway's own identity and cache hints, never a server's.

use std::collections::BTreeMap;

use serde_json::Value;
use switchboard_client::RequestOptions;
use switchboard_host::limits::Permit;
use switchboard_host::offer::{OfferedPrompt, OfferedResource, OfferedTemplate};
use switchboard_host::{Catalog, Host, OfferChange, OfferError};
use switchboard_server::{
    CompleteRequest, CompletionRef, Context, HandlerError, Offered, PromptOutcome, PromptSpec,
    ResourceSpec, Server, TemplateMatch, TemplateSpec,
};
use switchboard_wire::{
    CacheHints, Completion, JsonObject, Prompt, ReadResourceResult, Resource, ResourceTemplate,
    ResultHeader,
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

/// Whether `principal` may list and use `offered` (a served prompt name,
/// resource URI or template): its `principals` rules apply to a prompt's
/// name as to a tool's, and to a resource or template as to its whole
/// server ([`Host::principal_may_reach`]). A caller without a
/// `principals` entry may use anything; for one with an entry, something
/// the catalog does not hold is refused.
pub(crate) fn may_use(host: &Host, principal: &str, offered: Offered<'_>) -> bool {
    if !host.principal_has_rules(principal) {
        return true;
    }
    let catalog = host.catalog();
    match offered {
        Offered::Prompt(name) => host.principal_may_use_prompt(principal, name),
        Offered::Resource(uri) => catalog
            .resource(uri)
            .is_some_and(|r| host.principal_may_reach(principal, &r.alias)),
        Offered::Template(template) => catalog
            .template(template)
            .is_some_and(|t| host.principal_may_reach(principal, &t.alias)),
    }
}

/// The refusal a caller gets for something its rules keep from it, or
/// `None` (no caller, or it may).
fn refusal(host: &Host, ctx: &Context, offered: Offered<'_>) -> Option<HandlerError> {
    let principal = ctx.principal()?;
    if may_use(host, &principal.subject, offered) {
        return None;
    }
    let what = match offered {
        Offered::Prompt(name) => format!("prompt {name}"),
        Offered::Resource(uri) | Offered::Template(uri) => format!("resource {uri}"),
    };
    Some(HandlerError::msg(format!(
        "The user's permission rules for {} do not allow {what}.",
        principal.subject
    )))
}

/// Counts a prompt get or resource read against its caller's limits, with
/// its tool calls (the permit counts it as running until dropped), or
/// refuses it, saying after `refused` which limit and when to try again.
fn admitted(
    host: &Host,
    ctx: &Context,
    refused: impl FnOnce() -> String,
) -> Result<Option<Permit>, HandlerError> {
    match ctx.principal() {
        None => Ok(None),
        Some(p) => host
            .admit_request(&p.subject, &refused())
            .map_err(HandlerError::msg),
    }
}

/// One `completion/complete`, routed to the owning server by the catalog.
pub(crate) async fn complete(
    host: &Host,
    request: CompleteRequest,
) -> Result<Completion, HandlerError> {
    let reference = match &request.reference {
        CompletionRef::Prompt { name } => serde_json::json!({"type": "ref/prompt", "name": name}),
        CompletionRef::ResourceTemplate { uri } => {
            serde_json::json!({"type": "ref/resource", "uri": uri})
        }
    };
    let context: JsonObject = request
        .context
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
        .collect();
    let context = (!context.is_empty()).then_some(context);
    host.complete(&reference, &request.argument, &request.value, context)
        .await
        .map(|r| r.completion)
        .map_err(handler_error)
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
            if let Some(refused) = refusal(&host, &ctx, Offered::Prompt(&name)) {
                return Err(refused);
            }
            let _running = admitted(&host, &ctx, || format!("getting prompt {name} was refused"))?;
            let arguments = match args {
                Value::Object(m) if !m.is_empty() => Some(m),
                _ => None,
            };
            // The server's questions are relayed to the upstream client,
            // as during a tool call (`relay`).
            let options = RequestOptions {
                relay_input: true,
                resume: relay::resume_call(&ctx)
                    .await?
                    .or_else(|| relay::unsolicited(&ctx)),
                capabilities: Some(ctx.client_capabilities().clone()),
                ..RequestOptions::default()
            };
            match host.get_prompt_with(&name, arguments, &options).await {
                Ok(mut result) => {
                    // The gateway's identity, never the server's.
                    result.header = ResultHeader::complete();
                    Ok(PromptOutcome::Complete(result))
                }
                Err(OfferError::Server(e)) => match e.input_required() {
                    Some(asked) => relay::ask(&name, asked, ctx.client_capabilities())
                        .map(PromptOutcome::from)
                        .map_err(HandlerError::msg),
                    None => Err(handler_error(OfferError::Server(e))),
                },
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
    let alias = offered.alias.clone();
    let uri = offered.original_uri.clone();
    let served = r.uri.clone();
    let handler = move |ctx: Context| {
        let host = host.clone();
        let alias = alias.clone();
        let uri = uri.clone();
        let served = served.clone();
        async move {
            if let Some(refused) = refusal(&host, &ctx, Offered::Resource(&served)) {
                return Err(refused);
            }
            let _running = admitted(&host, &ctx, || format!("reading {served} was refused"))?;
            read(&host, &alias, &uri).await
        }
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
    let offered_copy = offered.clone();
    let handler = move |matched: TemplateMatch, ctx: Context| {
        let host = host.clone();
        let offered = offered_copy.clone();
        async move {
            let template = &offered.template.uri_template;
            if let Some(refused) = refusal(&host, &ctx, Offered::Template(template)) {
                return Err(refused);
            }
            let _running = admitted(&host, &ctx, || {
                format!("reading {} was refused", matched.uri)
            })?;
            let uri = offered.original_uri(&matched.uri).to_owned();
            read(&host, &offered.alias, &uri).await
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

/// One read through the host, answered with the gateway's own header.
async fn read(host: &Host, alias: &str, uri: &str) -> Result<ReadResourceResult, HandlerError> {
    let mut result = host
        .read_resource(alias, uri)
        .await
        .map_err(handler_error)?;
    result.cache = CacheHints::default();
    result.header = ResultHeader::complete();
    Ok(result)
}

/// A server's JSON-RPC error passes through; anything else is said in
/// words.
fn handler_error(e: OfferError) -> HandlerError {
    match e {
        OfferError::Server(client) => match client.protocol_error() {
            Some(error) => HandlerError::rpc(error.clone()),
            None => HandlerError::internal(client.to_string()),
        },
        OfferError::UnknownPrompt(_) | OfferError::UnknownTemplate(_) => {
            HandlerError::invalid_params(e.to_string())
        }
        OfferError::Denied(text) => HandlerError::msg(text),
        other => HandlerError::internal(other.to_string()),
    }
}
