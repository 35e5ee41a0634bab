//! `switchboard inspect --stdio 'CMD ARGS…' | --http URL`: one server,
//! everything it offers: era, capabilities, every list with its pages and
//! cache hints.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use switchboard_client::{Client, ClientError, Listing};
use switchboard_host::ServerConfig;
use switchboard_oauth::OAuthProvider;
use switchboard_wire::{
    ServerCapabilities, Tool,
    types::{CacheHints, CacheScope, DiscoverResult},
};

use crate::connect;
use crate::exit::{Code, Failure};
use crate::out;
use crate::settings::InspectTarget;

/// Time each request of the inspection may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Connects, discovers, lists everything (every page), prints it.
///
/// # Errors
/// A [`Failure`]: 4 when the server cannot be reached or spoken to, 3 when
/// it demands authorization.
pub(crate) async fn run(target: &InspectTarget, json: bool) -> anyhow::Result<()> {
    let server = match target {
        InspectTarget::Stdio(words) => {
            ServerConfig::stdio("inspected", words[0].clone(), words[1..].iter().cloned())
        }
        InspectTarget::Http { url, headers } => {
            connect::http_server("inspected", url, headers.clone())
        }
    };
    let connected = connect::connect(&server, TIMEOUT)
        .await
        .map_err(|e| unreachable(&e.to_string(), e.is_auth_failure(), e.auth()))?;
    let client = connected.client;
    let result = inspect(&client).await;
    client.close().await;
    let report = result
        .map_err(|e| unreachable(&e.to_string(), e.is_auth_failure(), connected.auth.as_ref()))?;
    if json {
        out::json(&report)?;
    } else {
        for line in human(&report) {
            out::line(line)?;
        }
    }
    Ok(())
}

/// Everything found.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Report {
    era: String,
    protocol_version: String,
    server_info: Option<Value>,
    supported_versions: Vec<String>,
    capabilities: ServerCapabilities,
    instructions: Option<String>,
    discover_cache: CacheHints,
    tools: Option<List<Tool>>,
    prompts: Option<List<Value>>,
    resources: Option<List<Value>>,
    resource_templates: Option<List<Value>>,
    /// The skills' entries (the Skills extension), never their files.
    skills: Option<List<Value>>,
}

/// One listing: its items, how many pages it took, its cache hints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct List<T> {
    items: Vec<T>,
    pages: usize,
    cache: CacheHints,
}

impl<T: Serialize> List<T> {
    fn of(l: Listing<T>) -> List<T> {
        List {
            items: l.items,
            pages: l.pages,
            cache: l.cache,
        }
    }
}

fn values<T: Serialize>(l: Listing<T>) -> List<Value> {
    List {
        items: l
            .items
            .iter()
            .map(|i| serde_json::to_value(i).unwrap_or(Value::Null))
            .collect(),
        pages: l.pages,
        cache: l.cache,
    }
}

async fn inspect(client: &Client) -> Result<Report, ClientError> {
    let discover: DiscoverResult = client.discover().await?;
    let caps = discover.capabilities.clone();
    let tools = match caps.tools {
        Some(_) => Some(List::of(client.list_all_tools().await?)),
        None => None,
    };
    let prompts = match caps.prompts {
        Some(_) => Some(values(client.list_all_prompts().await?)),
        None => None,
    };
    let (resources, resource_templates) = match caps.resources {
        Some(_) => (
            Some(values(client.list_all_resources().await?)),
            Some(values(client.list_all_resource_templates().await?)),
        ),
        None => (None, None),
    };
    // Entries only: nothing of a skill is read (SK-VER-6).
    let skills = match client.skills_capability() {
        Some(_) => Some(values(client.list_skills().await?)),
        None => None,
    };
    let server_info = client
        .server()
        .and_then(|d| d.server_info)
        .and_then(|i| serde_json::to_value(i).ok());
    Ok(Report {
        era: client.era().to_string(),
        protocol_version: client.protocol_version(),
        server_info,
        supported_versions: discover.supported_versions,
        capabilities: discover.capabilities,
        instructions: discover.instructions,
        discover_cache: discover.cache,
        tools,
        prompts,
        resources,
        resource_templates,
        skills,
    })
}

/// A server that could not be reached or spoken to: why, whether it
/// refused authorization, and its OAuth client when it has one.
fn unreachable(why: &str, auth_failure: bool, auth: Option<&OAuthProvider>) -> Failure {
    if auth.is_some_and(OAuthProvider::needs_login) {
        return Failure::new(
            Code::Auth,
            "the server needs an OAuth login: add it to the config and run `switchboard auth login ALIAS`",
        );
    }
    let code = if auth_failure {
        Code::Auth
    } else {
        Code::Unreachable
    };
    Failure::new(code, why)
}

/// The report as people read it.
fn human(r: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    let who = r
        .server_info
        .as_ref()
        .map(|i| {
            format!(
                "{} {}",
                i.get("name").and_then(Value::as_str).unwrap_or("?"),
                i.get("version").and_then(Value::as_str).unwrap_or("?")
            )
        })
        .unwrap_or_else(|| "(no serverInfo)".into());
    lines.push(format!("server:       {who} (self-reported)"));
    lines.push(format!(
        "era:          {}, protocol {} (server supports {})",
        r.era,
        r.protocol_version,
        r.supported_versions.join(", ")
    ));
    lines.push(format!(
        "capabilities: {}",
        capability_words(&r.capabilities)
    ));
    lines.push(format!("discover ttl: {}", ttl(&r.discover_cache)));
    if let Some(text) = &r.instructions {
        lines.push(format!("instructions: {}", out::clip(text, 200)));
    }
    match &r.tools {
        None => lines.push("tools:        not offered".into()),
        Some(l) => {
            lines.push(header("tools", l.items.len(), l.pages, &l.cache));
            for t in &l.items {
                let schema = serde_json::to_string(&t.input_schema).unwrap_or_default();
                lines.push(format!(
                    "  {}  {}",
                    t.name,
                    out::clip(t.description.as_deref().unwrap_or(""), 80)
                ));
                lines.push(format!(
                    "      input schema: {} bytes{}",
                    schema.len(),
                    t.annotations
                        .as_ref()
                        .and_then(|a| serde_json::to_string(a).ok())
                        .map(|a| format!(", annotations {a}"))
                        .unwrap_or_default()
                ));
            }
        }
    }
    skill_lines(r, &mut lines);
    for (kind, list, key) in [
        ("prompts", &r.prompts, "name"),
        ("resources", &r.resources, "uri"),
        ("templates", &r.resource_templates, "uriTemplate"),
    ] {
        match list {
            None => lines.push(format!("{kind:<13} not offered")),
            Some(l) => {
                lines.push(header(kind, l.items.len(), l.pages, &l.cache));
                for item in &l.items {
                    lines.push(format!(
                        "  {}",
                        item.get(key).and_then(Value::as_str).unwrap_or("?")
                    ));
                }
            }
        }
    }
    lines
}

/// The skills' entries: URI, files (or dynamic, or why invalid), and the
/// description.
fn skill_lines(r: &Report, lines: &mut Vec<String>) {
    let Some(l) = &r.skills else {
        lines.push("skills:       not offered".into());
        return;
    };
    lines.push(header("skills", l.items.len(), l.pages, &l.cache));
    for item in &l.items {
        let Ok(skill) = serde_json::from_value::<switchboard_wire::Skill>(item.clone()) else {
            continue;
        };
        let state = match (skill.check(), skill.files()) {
            (Err(e), _) => format!("invalid: {e}"),
            (Ok(()), Some(files)) => format!(
                "{} files, {} bytes",
                files.len(),
                skill.total_size().unwrap_or_default()
            ),
            (Ok(()), None) => "dynamic".into(),
        };
        lines.push(format!(
            "  {}  {}  ({state})",
            skill.uri,
            out::clip(skill.description().unwrap_or(""), 60)
        ));
    }
}

fn header(kind: &str, n: usize, pages: usize, cache: &CacheHints) -> String {
    format!(
        "{:<13} {n} in {pages} page(s), ttl {}",
        format!("{kind}:"),
        ttl(cache)
    )
}

fn ttl(cache: &CacheHints) -> String {
    let scope = match cache.cache_scope {
        Some(CacheScope::Public) => ", public",
        Some(CacheScope::Private) => ", private",
        None => "",
    };
    match cache.ttl_ms {
        Some(ms) if ms > 0 => format!("{ms} ms{scope}"),
        _ => format!("none (stale at once){scope}"),
    }
}

fn capability_words(c: &ServerCapabilities) -> String {
    let v = serde_json::to_value(c).unwrap_or_else(|_| json!({}));
    let Some(map) = v.as_object() else {
        return "none".into();
    };
    if map.is_empty() {
        return "none".into();
    }
    map.iter()
        .map(|(k, v)| match v.as_object() {
            Some(o) if !o.is_empty() => {
                format!("{k} ({})", o.keys().cloned().collect::<Vec<_>>().join(", "))
            }
            _ => k.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
