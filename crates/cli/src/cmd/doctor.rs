//! `switchboard doctor`: every configured server, checked directly (start
//! or reach it, era, discover, every page of its tool list, schema sizes,
//! auth), then the table they make together (collisions, dropped tools).
//! One line per finding; exit non-zero on any error.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;
use switchboard_host::{DescriptionLimits, Listed, ToolTable};
use switchboard_host::{NoOAuth, login_command, needs_login_reason, oauth_config};
use switchboard_host::{ServerConfig, TransportConfig};
use switchboard_oauth::OAuthProvider;
use switchboard_wire::{Tool, namespaced_tool_name};
use tokio::task::JoinSet;

use crate::connect;
use crate::exit::{Code, Failure};
use crate::out;
use crate::settings::Settings;

/// An input schema larger than this is worth a warning: the model reads it
/// on every turn.
const LARGE_SCHEMA_BYTES: usize = 16 * 1024;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Ok,
    Info,
    Warn,
    Error,
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
struct Finding {
    level: Level,
    /// The server's alias, `config` or `table`.
    subject: String,
    message: String,
    /// The exit code an error maps to.
    #[serde(skip)]
    code: Code,
}

fn finding(level: Level, subject: &str, message: impl Into<String>) -> Finding {
    Finding {
        level,
        subject: subject.to_owned(),
        message: message.into(),
        code: Code::Usage,
    }
}

/// Runs every check and prints the findings.
///
/// # Errors
/// A [`Failure`] when any finding is an error: the code of the first one
/// (1 config, 3 authorization, 4 unreachable).
pub(crate) async fn run(settings: &Settings) -> anyhow::Result<()> {
    let mut loaded = settings.load_config()?;
    let demo = loaded.is_demo();
    if demo {
        loaded.tickets.start()?;
    }
    let config = loaded.config.clone();
    let mut findings = vec![finding(
        Level::Info,
        "config",
        format!("using {}", config.origin),
    )];
    findings.extend(
        config
            .notes
            .iter()
            .map(|n| finding(Level::Warn, "config", n.clone())),
    );
    if config.servers.is_empty() {
        findings.push(finding(Level::Warn, "config", "no servers are configured"));
    }
    for server in config.servers.iter().filter(|s| s.lazy && s.enabled) {
        findings.push(finding(
            Level::Info,
            &server.alias,
            format!(
                "lazy: chat, eval and serve list it from its pins and start it at its first call, \
                 then stop it after {} s without calls (doctor starts it to check it)",
                config.idle_timeout(&server.alias).as_secs()
            ),
        ));
    }

    let mut checks = JoinSet::new();
    for (i, server) in config.servers.iter().enumerate() {
        let server = server.clone();
        let timeout = config.startup_timeout(&server.alias);
        checks.spawn(async move { (i, check_server(server, timeout).await) });
    }
    let mut per_server: BTreeMap<usize, (Vec<Finding>, Option<Listed>)> = BTreeMap::new();
    while let Some(joined) = checks.join_next().await {
        if let Ok((i, result)) = joined {
            per_server.insert(i, result);
        }
    }
    let mut listed = Vec::new();
    for (_, (f, tools)) in per_server {
        findings.extend(f);
        listed.extend(tools);
    }
    findings.extend(table_findings(&listed, &config.description_limits));
    findings.push(tool_search_finding(&config, &listed));
    loaded.tickets.stop().await;

    let errors = findings.iter().filter(|f| f.level == Level::Error).count();
    let warnings = findings.iter().filter(|f| f.level == Level::Warn).count();
    if settings.json {
        out::json(&json!({
            "findings": findings,
            "errors": errors,
            "warnings": warnings,
        }))?;
    } else {
        for f in &findings {
            let level = match f.level {
                Level::Ok => "ok",
                Level::Info => "info",
                Level::Warn => "warn",
                Level::Error => "ERROR",
            };
            out::line(format!("{level:<5} {}: {}", f.subject, f.message))?;
        }
        out::line(format!("{errors} error(s), {warnings} warning(s)"))?;
    }
    match findings.iter().find(|f| f.level == Level::Error) {
        None => Ok(()),
        Some(first) => Err(Failure::new(
            first.code,
            format!(
                "doctor found {errors} error(s); the first: {}: {}",
                first.subject, first.message
            ),
        )
        .into()),
    }
}

/// What the server receives and may do, before it is started: the names
/// of its environment (never values) and where configured values come
/// from; for a stdio server its sandbox: paths, network, limits, and each
/// mechanism in force or missing on this system.
fn confinement_findings(server: &ServerConfig) -> Vec<Finding> {
    let alias = &server.alias;
    let mut f = Vec::new();
    let sources: Vec<String> = server
        .value_sources()
        .into_iter()
        .map(|(name, source)| format!("{name} from {source}"))
        .collect();
    let Some(stdio) = switchboard_host::stdio_config(server) else {
        if !sources.is_empty() {
            f.push(finding(
                Level::Info,
                alias,
                format!("headers: {}", sources.join(", ")),
            ));
        }
        return f;
    };
    let plan = stdio.plan();
    let mut env = format!("environment (names only): {}", plan.env_names.join(" "));
    if !sources.is_empty() {
        env.push_str(&format!("; set by the entry: {}", sources.join(", ")));
    }
    f.push(finding(Level::Info, alias, env));
    let mut lines = plan.to_string();
    if lines.ends_with('\n') {
        lines.pop();
    }
    for line in lines.lines().skip(1) {
        let missing = line.contains(": MISSING");
        let level = if missing && server.sandbox.required && server.sandbox.confines() {
            Level::Error
        } else if missing || line.contains(": partial") {
            Level::Warn
        } else {
            Level::Info
        };
        let mut item = finding(level, alias, format!("sandbox {line}"));
        if level == Level::Error {
            item.code = Code::Unreachable;
        }
        f.push(item);
    }
    f
}

/// How big the table's definitions are, and whether `toolSearch` defers
/// them (for a model of the default context window; Claude's is larger).
fn tool_search_finding(config: &switchboard_host::Config, listed: &[Listed]) -> Finding {
    let tokens: u64 = listed
        .iter()
        .flat_map(|(alias, tools, _)| tools.iter().map(move |t| (alias, t)))
        .map(|(alias, t)| {
            let (description, schema) = switchboard_host::model_view(alias, t);
            let name = switchboard_wire::namespaced_tool_name(alias, &t.name);
            switchboard_host::tool_tokens(&name, &description, &schema)
        })
        .sum();
    let window = switchboard_agent::DEFAULT_CONTEXT_WINDOW;
    let deferred = config.tool_search.defers(tokens, window);
    let how = match config.tool_search.threshold(window) {
        None => "never deferred (toolSearch: false)".to_owned(),
        Some(0) => "always deferred (toolSearch: true)".to_owned(),
        Some(t) if deferred => format!(
            "deferred: over {t} tokens, the model gets search_tools and the always-loaded tools"
        ),
        Some(t) => format!("sent whole: within {t} tokens"),
    };
    finding(
        Level::Info,
        "tool search",
        format!(
            "the tool definitions take about {tokens} tokens; for a model with a {window}-token window they are {how}"
        ),
    )
}

/// The checks of one server; its tools when they could be listed.
async fn check_server(server: ServerConfig, timeout: Duration) -> (Vec<Finding>, Option<Listed>) {
    let alias = server.alias.clone();
    let mut f = Vec::new();
    if !server.enabled {
        f.push(finding(
            Level::Info,
            &alias,
            "disabled in the config; not checked",
        ));
        return (f, None);
    }
    let is_http = !matches!(server.transport, TransportConfig::Stdio { .. });
    let what = match &server.transport {
        TransportConfig::Stdio { command, args, .. } => {
            format!("stdio: {}", shell_line(command, args))
        }
        TransportConfig::Http { url, .. } | TransportConfig::Sse { url, .. } => {
            format!("{}: {url}", server.transport.kind())
        }
    };
    f.extend(confinement_findings(&server));
    let connected = match connect::connect(&server, timeout).await {
        Ok(c) => c,
        Err(e) => {
            let text = e.to_string();
            let auth_failure = e.is_auth_failure();
            let mut err = finding(
                Level::Error,
                &alias,
                format!("cannot connect ({what}): {text}"),
            );
            err.code = if auth_failure {
                Code::Auth
            } else {
                Code::Unreachable
            };
            f.push(err);
            if auth_failure {
                let mut auth = finding(
                    Level::Error,
                    &alias,
                    format!("auth: {}", auth_hint(&server, e.auth())),
                );
                auth.code = Code::Auth;
                f.push(auth);
            }
            return (f, None);
        }
    };
    let client = connected.client;
    match &connected.stdio {
        Some(s) => f.push(finding(
            Level::Ok,
            &alias,
            format!(
                "started ({what}), pid {}",
                s.pid().map_or_else(|| "?".into(), |p| p.to_string())
            ),
        )),
        None => f.push(finding(Level::Ok, &alias, format!("reached ({what})"))),
    }
    let description = client.server();
    let name = description
        .as_ref()
        .and_then(|d| d.server_info.as_ref())
        .map(|i| format!(", calls itself {:?} {}", i.name, i.version))
        .unwrap_or_default();
    f.push(finding(
        if client.era() == switchboard_wire::Era::Legacy {
            Level::Info
        } else {
            Level::Ok
        },
        &alias,
        format!(
            "era {}, protocol {}{name}",
            client.era(),
            client.protocol_version()
        ),
    ));
    match client.discover().await {
        Ok(d) => {
            let caps = serde_json::to_value(&d.capabilities)
                .ok()
                .and_then(|v| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()))
                .unwrap_or_default();
            f.push(finding(
                Level::Ok,
                &alias,
                format!(
                    "discover: capabilities {}; ttl {}",
                    if caps.is_empty() {
                        "none".into()
                    } else {
                        caps.join(", ")
                    },
                    d.cache
                        .ttl_ms
                        .filter(|t| *t > 0)
                        .map_or_else(|| "none".into(), |t| format!("{t} ms"))
                ),
            ));
            if d.capabilities.tools.is_none() {
                f.push(finding(Level::Warn, &alias, "offers no tools capability"));
            }
        }
        Err(e) => f.push(finding(
            Level::Error,
            &alias,
            format!("discover failed: {e}"),
        )),
    }
    let listed = match client.list_all_tools().await {
        Ok(listing) => {
            f.push(finding(
                Level::Ok,
                &alias,
                format!(
                    "{} tool(s) in {} page(s)",
                    listing.items.len() + listing.dropped.len(),
                    listing.pages
                ),
            ));
            f.extend(schema_findings(&alias, &listing.items));
            f.extend(deprecation_findings(&alias, &listing.items));
            Some((listing.items, listing.dropped))
        }
        Err(e) => {
            let mut err = finding(Level::Error, &alias, format!("tools/list failed: {e}"));
            err.code = Code::Unreachable;
            f.push(err);
            None
        }
    };
    if client.skills_capability().is_some() {
        f.extend(skill_findings(&alias, &client).await);
    }
    if is_http {
        f.push(finding(
            Level::Ok,
            &alias,
            auth_state(&server, connected.auth.as_ref()).await,
        ));
    }
    if let Some(stdio) = &connected.stdio {
        let junk = stdio.junk_lines();
        if junk > 0 {
            f.push(finding(
                Level::Warn,
                &alias,
                format!(
                    "{junk} line(s) on stdout were not JSON-RPC (stdout pollution: the server must log to stderr); they were skipped"
                ),
            ));
        }
    }
    client.close().await;
    (f, listed.map(|(tools, dropped)| (alias, tools, dropped)))
}

/// The skills a server offers (entries only, nothing read): how many, and
/// a warning for each invalid or dynamic one, and for names used twice.
async fn skill_findings(alias: &str, client: &switchboard_client::Client) -> Vec<Finding> {
    let listing = match client.list_skills().await {
        Ok(listing) => listing,
        Err(e) => {
            return vec![finding(
                Level::Error,
                alias,
                format!("skills/list failed: {e}"),
            )];
        }
    };
    let mut f = vec![finding(
        Level::Ok,
        alias,
        format!(
            "{} skill(s) (see `switchboard skills`)",
            listing.items.len()
        ),
    )];
    let mut names: BTreeMap<&str, usize> = BTreeMap::new();
    for skill in &listing.items {
        let id = switchboard_host::skill_id(alias, &skill.uri);
        if let Some(name) = skill.name() {
            *names.entry(name).or_default() += 1;
        }
        match skill.check() {
            Err(e) => f.push(finding(
                Level::Warn,
                alias,
                format!("skill {id} is {}: {e}; it never loads", e.kind()),
            )),
            Ok(()) if skill.is_dynamic() => f.push(finding(
                Level::Info,
                alias,
                format!(
                    "skill {id} is dynamic: no digests, so it is refused unless \"skills\": {{\"dynamic\": \"ask\"}}"
                ),
            )),
            Ok(()) => {}
        }
    }
    for (name, n) in names.into_iter().filter(|(_, n)| *n > 1) {
        f.push(finding(
            Level::Warn,
            alias,
            format!("{n} skills are named {name:?}: each keeps its own id"),
        ));
    }
    f
}

/// What to do about a server that refused authorization.
fn auth_hint(server: &ServerConfig, auth: Option<&OAuthProvider>) -> String {
    let alias = &server.alias;
    if auth.is_some_and(OAuthProvider::needs_login) {
        return needs_login_reason(alias);
    }
    match oauth_config(server) {
        Err(NoOAuth::StaticHeader) => {
            "the server requires authorization and refused the Authorization header from the config; check the token".into()
        }
        Err(_) => {
            "the server requires authorization and OAuth is off for it; give a token in \"headers\" or remove \"oauth\": false".into()
        }
        Ok(_) => format!(
            "the server requires authorization and it could not be obtained (see above); once that is fixed, run `{}`",
            login_command(alias)
        ),
    }
}

/// How a reachable HTTP server was authorized, in words (no secrets).
async fn auth_state(server: &ServerConfig, auth: Option<&OAuthProvider>) -> String {
    match oauth_config(server) {
        Err(NoOAuth::StaticHeader) => {
            "auth: a static Authorization header from the config is accepted".into()
        }
        Err(_) => "auth: none needed (it answered without credentials)".into(),
        Ok(_) => match auth.map(OAuthProvider::status) {
            Some(status) => match status.await {
                Ok(Some(login)) => format!(
                    "auth: OAuth login at {} (scopes: {}), {}",
                    login.issuer,
                    if login.scopes.is_empty() {
                        "none".into()
                    } else {
                        login.scopes.join(" ")
                    },
                    crate::cmd::auth::expiry_words(login.expires_at, login.has_refresh_token)
                ),
                _ => "auth: none needed (it answered without credentials)".into(),
            },
            None => "auth: none needed (it answered without credentials)".into(),
        },
    }
}

/// A warning for each tool its server marks deprecated, naming the
/// replacement and the removal date (and whether that date has passed).
fn deprecation_findings(alias: &str, tools: &[Tool]) -> Vec<Finding> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    tools
        .iter()
        .filter_map(|t| {
            let d = t.deprecation()?;
            let note = switchboard_host::deprecation_note(alias, &d);
            let passed = if d.is_past(now_ms) {
                " (the removal date has passed)"
            } else {
                ""
            };
            Some(finding(
                Level::Warn,
                alias,
                format!(
                    "tool {} is {}{passed}",
                    t.name,
                    note.trim_start_matches('[').trim_end_matches(']')
                ),
            ))
        })
        .collect()
}

fn schema_findings(alias: &str, tools: &[Tool]) -> Vec<Finding> {
    let mut f = Vec::new();
    let sizes: Vec<(&str, usize)> = tools
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                serde_json::to_string(&t.input_schema).map_or(0, |s| s.len()),
            )
        })
        .collect();
    if let Some((name, largest)) = sizes.iter().max_by_key(|(_, n)| *n) {
        let total: usize = sizes.iter().map(|(_, n)| n).sum();
        f.push(finding(
            Level::Info,
            alias,
            format!("input schemas: {total} bytes in all, largest {name} ({largest} bytes)"),
        ));
    }
    for (name, n) in sizes.iter().filter(|(_, n)| *n > LARGE_SCHEMA_BYTES) {
        f.push(finding(
            Level::Warn,
            alias,
            format!("tool {name} has a {n}-byte input schema; the model reads it on every turn"),
        ));
    }
    f
}

/// The servers whose text the table cuts (`descriptionLimits`): each
/// server over its share, each tool whose description or title is cut.
fn description_findings(table: &ToolTable, limits: &DescriptionLimits) -> Vec<Finding> {
    let mut f = Vec::new();
    let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
    for e in table.entries() {
        *totals.entry(e.alias.as_str()).or_default() += e.description_chars;
    }
    for (alias, total) in totals.iter().filter(|(_, t)| **t > limits.per_server) {
        f.push(finding(
            Level::Warn,
            alias,
            format!(
                "its tool descriptions take {total} characters, over the {} a server may                  (descriptionLimits.perServer); its longest are cut shorter",
                limits.per_server
            ),
        ));
    }
    for e in table.entries() {
        if e.description_chars > e.description_cap {
            f.push(finding(
                Level::Warn,
                &e.alias,
                format!(
                    "tool {:?} has a {}-character description; the model reads its first {}",
                    e.tool.name, e.description_chars, e.description_cap
                ),
            ));
        }
        let title = e.tool.title.as_deref().map_or(0, |t| t.chars().count());
        if title > limits.title {
            f.push(finding(
                Level::Warn,
                &e.alias,
                format!(
                    "tool {:?} has a {title}-character title; the model reads its first {}                      (descriptionLimits.title)",
                    e.tool.name, limits.title
                ),
            ));
        }
    }
    f
}

/// Collisions, renames and dropped tools of the table the servers make
/// together.
fn table_findings(listed: &[Listed], limits: &DescriptionLimits) -> Vec<Finding> {
    let (table, dropped) = ToolTable::of_listings_within(listed, limits);
    let mut f = vec![finding(
        Level::Ok,
        "table",
        format!("{} tool(s) from {} server(s)", table.len(), listed.len()),
    )];
    for d in &dropped {
        f.push(finding(
            Level::Warn,
            &d.alias,
            format!("tool {:?} is left out: {}", d.name, d.reason),
        ));
    }
    for e in table.entries() {
        let plain = namespaced_tool_name(&e.alias, &e.tool.name);
        if e.local_name != plain {
            f.push(finding(
                Level::Warn,
                &e.alias,
                format!(
                    "tool {:?} collides with another as {plain}; the model sees it as {}",
                    e.tool.name, e.local_name
                ),
            ));
        } else if e.local_name != format!("mcp__{}__{}", e.alias, e.tool.name) {
            f.push(finding(
                Level::Info,
                &e.alias,
                format!(
                    "tool {:?} is shown to the model as {}",
                    e.tool.name, e.local_name
                ),
            ));
        }
    }
    f.extend(description_findings(&table, limits));
    let mut by_name: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in table.entries() {
        by_name
            .entry(e.tool.name.as_str())
            .or_default()
            .push(&e.alias);
    }
    for (name, aliases) in by_name.iter().filter(|(_, a)| a.len() > 1) {
        f.push(finding(
            Level::Info,
            "table",
            format!(
                "{} servers offer {name:?} ({}); namespacing keeps them apart",
                aliases.len(),
                aliases
                    .iter()
                    .map(|a| namespaced_tool_name(a, name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    f
}

fn shell_line(command: &str, args: &[String]) -> String {
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .map(|w| {
            if w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:=@".contains(c))
            {
                w.to_owned()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
