//! What the user types in `chat` beyond plain text: the servers'
//! resources and prompts, which the user (not the model) chooses.
//!
//! - `@ALIAS:URI` anywhere in a message attaches that resource's text to
//!   the message sent (a listed resource, or a URI one of the server's
//!   templates matches);
//! - `/ALIAS:PROMPT key=value …` gets that prompt and sends its messages;
//! - `/resources` and `/prompts` list what can be named so.
//!
//! Both are read through the host's governed path (`Host::read_resource`,
//! `Host::get_prompt`: the caller's rules, one audit line each), and their
//! text comes back inside the same boundary markers and held to the same
//! budget as a tool result. Anything else starting with `/` or holding
//! `@` (a path, an e-mail address) is sent as typed.

use switchboard_host::{CallOptions, Host, ResourceRef};
use switchboard_server::UriTemplate;
use switchboard_wire::{ContentBlock, JsonObject, ReadResourceResult};

/// What a line of the user's comes to.
#[derive(Debug, PartialEq)]
pub(crate) enum Prepared {
    /// Send this to the model.
    Send(String),
    /// Show this to the user; nothing goes to the model.
    Show(String),
}

/// Prepares `line` (already trimmed, not empty) for the model.
///
/// # Errors
/// What went wrong, for the user: an unknown server, resource or prompt,
/// a bad argument, or the host's refusal or the server's error.
pub(crate) async fn prepare(host: &Host, line: &str) -> Result<Prepared, String> {
    match line {
        "/resources" => return Ok(Prepared::Show(list_resources(host))),
        "/prompts" => return Ok(Prepared::Show(list_prompts(host))),
        _ => {}
    }
    if let Some(rest) = line.strip_prefix('/') {
        let (head, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        if let Some((alias, name)) = head.split_once(':') {
            if is_server(host, alias) {
                return run_prompt(host, alias, name, args)
                    .await
                    .map(Prepared::Send);
            }
        }
    }
    let mut attached = Vec::new();
    for word in line.split_whitespace() {
        let Some((alias, uri)) = word.strip_prefix('@').and_then(|w| w.split_once(':')) else {
            continue;
        };
        if !is_server(host, alias) || uri.is_empty() {
            continue;
        }
        attached.push(read(host, alias, uri).await?);
    }
    if attached.is_empty() {
        Ok(Prepared::Send(line.to_owned()))
    } else {
        Ok(Prepared::Send(format!(
            "{line}\n\n{}",
            attached.join("\n\n")
        )))
    }
}

/// Whether `alias` names a mounted server.
fn is_server(host: &Host, alias: &str) -> bool {
    host.config().servers.iter().any(|s| s.alias == alias)
}

/// One resource's text as attached: a header naming it, then its text
/// contents (already marked and budgeted by the host).
async fn read(host: &Host, alias: &str, uri: &str) -> Result<String, String> {
    let catalog = host.catalog();
    let served = catalog.served_uri(alias, uri);
    let listed = catalog
        .resources()
        .iter()
        .find(|r| r.alias == alias && r.original_uri == uri);
    // Else a URI one of the server's templates matches.
    let template = catalog.templates().iter().find(|t| {
        t.alias == alias
            && UriTemplate::parse(&t.original_template).is_ok_and(|p| p.matches(uri).is_some())
    });
    let resource = match (listed, template) {
        (Some(r), _) => ResourceRef::Listed(&r.resource.uri),
        (None, Some(t)) => ResourceRef::Templated {
            template: &t.template.uri_template,
            uri: &served,
        },
        (None, None) => {
            return Err(format!(
                "{alias} offers no resource {uri}; /resources lists the resources you can attach"
            ));
        }
    };
    let result = host
        .read_resource(resource, CallOptions::default())
        .await
        .map_err(|e| format!("reading @{alias}:{uri} failed: {e}"))?;
    Ok(format!(
        "[the user attached the resource {alias}:{uri}]\n{}",
        contents_text(&result)
    ))
}

/// The text contents of a read, one after the other; binary ones by a
/// line saying what they were.
fn contents_text(result: &ReadResourceResult) -> String {
    let parts: Vec<String> = result
        .contents
        .iter()
        .map(|c| match (&c.text, &c.blob) {
            (Some(text), _) => text.clone(),
            (None, Some(blob)) => format!(
                "[binary contents ({}, about {} bytes) not attached]",
                c.mime_type.as_deref().unwrap_or("unknown type"),
                blob.len() / 4 * 3
            ),
            (None, None) => String::new(),
        })
        .collect();
    parts.join("\n")
}

/// Gets prompt `name` of `alias` with `args` (`key=value`, shell quoting)
/// and makes its messages one message to send.
async fn run_prompt(host: &Host, alias: &str, name: &str, args: &str) -> Result<String, String> {
    let catalog = host.catalog();
    let Some(offered) = catalog
        .prompts()
        .iter()
        .find(|p| p.alias == alias && p.original_name == name)
    else {
        return Err(format!(
            "{alias} offers no prompt {name}; /prompts lists the prompts you can run"
        ));
    };
    let words = shell_words::split(args).map_err(|e| format!("the arguments: {e}"))?;
    let mut arguments = JsonObject::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(format!(
                "the argument {word:?} is not key=value; write /{alias}:{name} key=value …"
            ));
        };
        arguments.insert(key.to_owned(), value.into());
    }
    let result = host
        .get_prompt(
            &offered.prompt.name,
            Some(arguments),
            CallOptions::default(),
        )
        .await
        .map_err(|e| format!("prompt {alias}:{name} failed: {e}"))?;
    let one_role = result.messages.iter().all(|m| m.role == "user");
    let parts: Vec<String> = result
        .messages
        .iter()
        .map(|m| {
            let text = match &m.content {
                ContentBlock::Text { text, .. } => text.clone(),
                ContentBlock::Resource { resource, .. } => resource
                    .text
                    .clone()
                    .unwrap_or_else(|| format!("[binary resource {} not attached]", resource.uri)),
                other => format!("[{} content not attached]", kind_of(other)),
            };
            if one_role {
                text
            } else {
                format!("({}) {text}", m.role)
            }
        })
        .collect();
    Ok(format!(
        "[the user ran the prompt {alias}:{name}]\n{}",
        parts.join("\n\n")
    ))
}

/// The `type` of a content block, for the line that stands in for it.
fn kind_of(block: &ContentBlock) -> String {
    serde_json::to_value(block)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

/// `/resources`: every listed resource as `@ALIAS:URI`, and the templates.
fn list_resources(host: &Host) -> String {
    let catalog = host.catalog();
    let mut lines: Vec<String> = catalog
        .resources()
        .iter()
        .map(|r| {
            let mime = r
                .resource
                .mime_type
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            format!("@{}:{}  {}{mime}", r.alias, r.original_uri, r.resource.name)
        })
        .collect();
    lines.extend(catalog.templates().iter().map(|t| {
        format!(
            "@{}:{}  {} (a template: fill in the braces)",
            t.alias, t.original_template, t.template.name
        )
    }));
    if lines.is_empty() {
        "No server offers resources.".into()
    } else {
        format!(
            "{}\nAttach one to your next message by writing its @ALIAS:URI in it.",
            lines.join("\n")
        )
    }
}

/// `/prompts`: every prompt as `/ALIAS:PROMPT` with its arguments
/// (required ones marked `*`).
fn list_prompts(host: &Host) -> String {
    let catalog = host.catalog();
    let lines: Vec<String> = catalog
        .prompts()
        .iter()
        .map(|p| {
            let args: Vec<String> = p
                .prompt
                .arguments
                .iter()
                .flatten()
                .map(|a| {
                    let star = if a.required == Some(true) { "*" } else { "" };
                    format!(" {}{star}=…", a.name)
                })
                .collect();
            format!("/{}:{}{}", p.alias, p.original_name, args.concat())
        })
        .collect();
    if lines.is_empty() {
        "No server offers prompts.".into()
    } else {
        format!(
            "{}\nRun one with /ALIAS:PROMPT key=value … (* = required).",
            lines.join("\n")
        )
    }
}
