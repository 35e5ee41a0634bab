//! The console's pages: servers (with their live updates), tools (with
//! changed definitions side by side and their acceptance), and calls
//! (the audit log's recent lines, per-tool figures, the chain's state).
//! Every string that came from a server, the config or the audit log
//! goes through [`escape`].

use std::fmt::Write as _;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use switchboard_host::audit_stats_of_file;
use switchboard_host::{AuditRecord, Host, ModelTool, PinState, ServerReport, verify_audit};
use switchboard_server::http::{AppBody, AppResponse};
use switchboard_wire::shared::BoxFuture;

use super::approvals::Approvals;
use super::html::{Frame, csrf_field, escape, message, page, secured};
use super::{Form, query_value, redirect};

/// How often an open Servers page's event stream looks at the servers.
pub(crate) const EVENTS_POLL: Duration = Duration::from_secs(1);

/// How many audit lines the Calls page shows at most.
pub(crate) const CALLS_SHOWN: usize = 200;

/// How much of the end of the audit log the Calls page reads for its
/// recent lines.
pub(crate) const CALLS_TAIL_BYTES: u64 = 1024 * 1024;

/// One server as the Servers page shows it, and as its event stream
/// sends it.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct ServerRow {
    alias: String,
    /// `up`, `down`, `tripped`, `needs_login`, `disabled`, `not_started`.
    status: String,
    /// The status for people.
    status_text: String,
    reason: String,
    protocol: String,
    tools: usize,
    transport: String,
    breaker: String,
    sandbox: String,
}

fn rows(host: &Host) -> Vec<ServerRow> {
    let config = host.config();
    host.servers()
        .iter()
        .map(|s: &ServerReport| {
            let status = serde_json::to_value(s.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let sandbox = config
                .servers
                .iter()
                .find(|c| c.alias == s.alias)
                .filter(|_| s.transport == "stdio")
                .map_or("", |c| {
                    if c.sandbox.is_none() {
                        "none"
                    } else if c.sandbox.fs.is_some() {
                        if c.sandbox.network {
                            "strict (files)"
                        } else {
                            "strict (files, no network)"
                        }
                    } else {
                        "baseline"
                    }
                });
            let status_text = if s.lazy && status == "not_started" {
                "lazy, not started".to_owned()
            } else if s.auth_required && status == "down" {
                "needs login".to_owned()
            } else {
                s.status.as_words().to_owned()
            };
            ServerRow {
                alias: s.alias.clone(),
                breaker: if status == "tripped" {
                    "open"
                } else {
                    "closed"
                }
                .to_owned(),
                status,
                status_text,
                reason: s.reason.clone().unwrap_or_default(),
                protocol: s.protocol_version.clone().unwrap_or_default(),
                tools: s.tools,
                transport: s.transport.to_owned(),
                sandbox: sandbox.to_owned(),
            }
        })
        .collect()
}

/// The Servers page: one row per server; the script keeps it live from
/// `/console/events`.
pub(crate) fn servers(host: &Host, frame: &Frame<'_>) -> AppResponse {
    let mut body = String::from(
        "<p class=\"live\" id=\"live\" data-state=\"static\">Live updates need JavaScript; reload to refresh.</p>\
         <table id=\"servers\"><thead><tr><th>Server</th><th>Status</th><th>Reason</th><th>Protocol</th>\
         <th>Tools</th><th>Transport</th><th>Breaker</th><th>Sandbox</th></tr></thead><tbody>",
    );
    for r in rows(host) {
        let _ = write!(
            body,
            "<tr data-server=\"{a}\"><td>{a}</td><td data-field=\"statusText\" class=\"status status-{s}\">{st}</td>\
             <td data-field=\"reason\">{reason}</td><td data-field=\"protocol\">{p}</td><td data-field=\"tools\">{t}</td>\
             <td data-field=\"transport\">{tr}</td><td data-field=\"breaker\">{b}</td><td data-field=\"sandbox\">{sb}</td></tr>",
            a = escape(&r.alias),
            s = escape(&r.status),
            st = escape(&r.status_text),
            reason = escape(&r.reason),
            p = escape(&r.protocol),
            t = r.tools,
            tr = escape(&r.transport),
            b = escape(&r.breaker),
            sb = escape(&r.sandbox),
        );
    }
    body.push_str("</tbody></table>");
    page(200, "Servers", Some(frame), &body)
}

/// How many [`EVENTS_POLL`]s pass between two checks that the viewer of
/// an event stream may still see it.
const RECHECK_EVERY: u32 = 5;

/// Whether the viewer of an event stream may still see it (its session
/// or token still good, its principal still a console principal).
pub(crate) type Recheck = Box<dyn Fn() -> BoxFuture<'static, bool> + Send + Sync>;

/// `/console/events`: server-sent events, a `servers` event with every
/// row whenever one changes (and at once), polling the host every
/// [`EVENTS_POLL`] while the page listens; the poll ends when the page
/// goes away, or when `recheck` says its viewer was locked out.
pub(crate) fn events(host: &Host, recheck: Recheck) -> AppResponse {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(8);
    let host = host.clone();
    tokio::spawn(async move {
        let mut last: Option<Vec<ServerRow>> = None;
        let mut ticks = 0u32;
        let mut polls = 0u32;
        let mut interval = tokio::time::interval(EVENTS_POLL);
        loop {
            interval.tick().await;
            polls = polls.wrapping_add(1);
            if polls % RECHECK_EVERY == 0 && !recheck().await {
                break;
            }
            let now = rows(&host);
            let frame = if last.as_ref() != Some(&now) {
                let data = serde_json::to_string(&now).unwrap_or_default();
                last = Some(now);
                ticks = 0;
                format!("event: servers\ndata: {data}\n\n")
            } else {
                ticks += 1;
                // A comment now and then keeps proxies from closing it.
                if ticks % 15 != 0 {
                    if tx.is_closed() {
                        break;
                    }
                    continue;
                }
                ": keep-alive\n\n".to_owned()
            };
            if tx.send(Bytes::from(frame)).await.is_err() {
                break;
            }
        }
    });
    let mut answer = secured(AppResponse::new(200, "text/event-stream", Vec::new()))
        .header("x-accel-buffering", "no");
    answer.body = AppBody::Stream(rx);
    answer
}

/// The Tools page: the table as the chosen principal (`?principal=`)
/// would be listed it, each tool's gate verdict, pin and server state;
/// then the changed and new definitions, side by side, to accept.
pub(crate) fn tools(host: &Host, frame: &Frame<'_>, query: Option<&str>) -> AppResponse {
    let config = host.config();
    let chosen = query_value(query, "principal").filter(|p| config.principals.contains_key(p));
    let mut body = String::from(
        "<form method=\"get\" action=\"/console/tools\" class=\"filters\"><label>As seen by \
         <select name=\"principal\"><option value=\"\">every tool (no principal)</option>",
    );
    for name in config.principals.keys() {
        let selected = if chosen.as_deref() == Some(name) {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            body,
            "<option value=\"{n}\"{selected}>{n}</option>",
            n = escape(name)
        );
    }
    body.push_str("</select></label> <button type=\"submit\">Show</button></form>");
    let mut tools = host.all_tools();
    if let Some(p) = &chosen {
        tools.retain(|t| host.principal_may_call(p, &t.name));
    }
    let _ = write!(
        body,
        "<p>{} tools.</p><table id=\"tools\"><thead><tr><th>Tool</th><th>Server</th><th>Gate</th><th>Why</th><th>Pin</th>\
         <th>Server state</th><th>Description</th></tr></thead><tbody>",
        tools.len()
    );
    let pins: std::collections::HashMap<String, PinState> =
        host.pins().into_iter().map(|p| (p.name, p.state)).collect();
    for t in &tools {
        let _ = write!(
            body,
            "<tr data-tool=\"{n}\"><td>{n}</td><td>{s}</td><td class=\"gate gate-{g}\">{g}</td><td class=\"why\">{why}</td>\
             <td>{pin}</td><td>{st}</td><td class=\"description\">{d}</td></tr>",
            n = escape(&t.name),
            s = escape(&t.server),
            g = t.status.gate.as_str(),
            why = escape(&why(&config, t, pins.get(&t.name))),
            pin = escape(t.status.pin),
            st = t.status.server.as_words(),
            d = escape(&t.description),
        );
    }
    body.push_str("</tbody></table><h2>Changed and new definitions</h2>");
    let mut any = false;
    for p in host.pins() {
        let diff = match &p.state {
            PinState::Changed { diff } => Some(diff.as_str()),
            PinState::New => None,
            _ => continue,
        };
        any = true;
        let _ = write!(
            body,
            "<section class=\"change\" data-pin=\"{n}\"><h3>{n} <small>({k} of {s}, {state}{class})</small></h3>",
            n = escape(&p.name),
            k = escape(p.kind),
            s = escape(&p.server),
            state = p.state.as_str(),
            class = p
                .change
                .as_ref()
                .map_or_else(String::new, |c| format!(", {}", escape(c.as_str()))),
        );
        if let Some(diff) = diff {
            body.push_str(&side_by_side(diff));
        } else {
            body.push_str(
                "<p>New since the server was first mounted; not offered until accepted.</p>",
            );
        }
        if let Some(csrf) = frame.csrf {
            let _ = write!(
                body,
                "<form method=\"post\" action=\"/console/tools/accept\">{}<input type=\"hidden\" name=\"name\" value=\"{}\">\
                 <button type=\"submit\">Accept</button></form>",
                csrf_field(csrf),
                escape(&p.name)
            );
        }
        body.push_str("</section>");
    }
    if !any {
        body.push_str("<p>Every definition is as approved.</p>");
    }
    page(200, "Tools", Some(frame), &body)
}

/// Why the gate decides as it does for `tool`: the deciding rule's
/// place in the config, or the gate's reasons (its own assessment,
/// `gate::assess`); nothing for the built-in tools.
fn why(config: &switchboard_host::Config, tool: &ModelTool, pin: Option<&PinState>) -> String {
    if tool.server == switchboard_host::BUILTIN_ALIAS {
        return String::new();
    }
    let mut definition = switchboard_wire::Tool::new(
        tool.original_name.clone(),
        tool.description.clone(),
        tool.input_schema.clone(),
    );
    definition.annotations.clone_from(&tool.annotations);
    let assessed = switchboard_host::assess_tool(
        &config.rules,
        &tool.server,
        &definition,
        pin.unwrap_or(&PinState::Pinned),
    );
    let mut out = assessed
        .rule
        .map(|(place, pattern)| format!("rule {place} ({pattern})"))
        .into_iter()
        .collect::<Vec<_>>();
    out.extend(assessed.reasons);
    out.join("; ")
}

/// A unified diff as two columns: approved (left) and current (right).
fn side_by_side(diff: &str) -> String {
    let mut out = String::from(
        "<table class=\"diff\"><thead><tr><th>Approved</th><th>Current</th></tr></thead><tbody>",
    );
    let mut left: Vec<&str> = Vec::new();
    let mut right: Vec<&str> = Vec::new();
    let flush = |out: &mut String, left: &mut Vec<&str>, right: &mut Vec<&str>| {
        for i in 0..left.len().max(right.len()) {
            let cell = |side: &[&str], class: &str| {
                side.get(i).map_or_else(
                    || "<td></td>".to_owned(),
                    |l| format!("<td class=\"{class}\">{}</td>", escape(l)),
                )
            };
            let _ = write!(out, "<tr>{}{}</tr>", cell(left, "del"), cell(right, "add"));
        }
        left.clear();
        right.clear();
    };
    for line in diff.lines() {
        if line.starts_with("---") || line.starts_with("+++") || line.starts_with("@@") {
            continue;
        }
        if let Some(l) = line.strip_prefix('-') {
            left.push(l);
        } else if let Some(r) = line.strip_prefix('+') {
            right.push(r);
        } else {
            flush(&mut out, &mut left, &mut right);
            let same = escape(line.strip_prefix(' ').unwrap_or(line));
            let _ = write!(out, "<tr><td>{same}</td><td>{same}</td></tr>");
        }
    }
    flush(&mut out, &mut left, &mut right);
    out.push_str("</tbody></table>");
    out
}

/// `POST /console/tools/accept`: what `pins accept NAME` does, recorded
/// in the audit log with who accepted.
pub(crate) fn accept(host: &Host, principal: &str, form: &Form) -> AppResponse {
    let Some(name) = form.get("name").filter(|n| !n.is_empty()) else {
        return message(400, "Bad request", "Say which definition to accept.");
    };
    match host.accept_pins_by(name, principal) {
        Ok(accepted) => {
            tracing::info!(%principal, accepted = ?accepted, "accepted in the console");
            redirect("/console/tools")
        }
        Err(e) => message(400, "Not accepted", &e.to_string()),
    }
}

/// The Calls page: the recent audit lines (newest first, filtered by
/// `tool`, `server`, `principal`, `outcome`), the per-tool figures of
/// `audit stats`, and whether the log's hash chain is intact.
pub(crate) fn calls(host: &Host, frame: &Frame<'_>, query: Option<&str>) -> AppResponse {
    let Some(path) = host.config().audit else {
        return page(
            200,
            "Calls",
            Some(frame),
            "<p>No audit log is kept: set <code>\"audit\"</code> in the config to see calls here.</p>",
        );
    };
    let filter = |name| query_value(query, name);
    let (tool, server, principal, outcome) = (
        filter("tool"),
        filter("server"),
        filter("principal"),
        filter("outcome"),
    );
    let mut body =
        String::from("<form method=\"get\" action=\"/console/calls\" class=\"filters\">");
    for (name, value) in [
        ("tool", &tool),
        ("server", &server),
        ("principal", &principal),
        ("outcome", &outcome),
    ] {
        let _ = write!(
            body,
            "<label>{name} <input name=\"{name}\" value=\"{}\"></label> ",
            escape(value.as_deref().unwrap_or_default())
        );
    }
    body.push_str("<button type=\"submit\">Filter</button></form>");
    match verify_audit(&path) {
        Ok(report) if report.is_intact() => {
            let _ = write!(
                body,
                "<p class=\"chain ok\" id=\"chain\">Audit chain intact ({} lines).</p>",
                report.lines
            );
        }
        Ok(report) => {
            let _ = write!(
                body,
                "<p class=\"chain bad\" id=\"chain\">Audit chain broken: {} problem(s); first at line {}: {}</p>",
                report.problems.len(),
                report.problems.first().map_or(0, |p| p.line),
                escape(report.problems.first().map_or("", |p| p.what.as_str()))
            );
        }
        Err(e) => {
            let _ = write!(
                body,
                "<p class=\"chain bad\" id=\"chain\">The audit log cannot be verified: {}</p>",
                escape(&e.to_string())
            );
        }
    }
    let records: Vec<AuditRecord> = tail_records(&path)
        .into_iter()
        .rev()
        .filter(|r| tool.as_ref().is_none_or(|t| &r.tool == t))
        .filter(|r| server.as_ref().is_none_or(|s| r.alias.as_ref() == Some(s)))
        .filter(|r| {
            principal
                .as_ref()
                .is_none_or(|p| r.principal.as_ref() == Some(p))
        })
        .filter(|r| outcome.as_ref().is_none_or(|o| r.outcome.as_str() == o))
        .take(CALLS_SHOWN)
        .collect();
    body.push_str(&chart(&records.iter().collect::<Vec<_>>(), &CHART));
    body.push_str(
        "<h2>Recent calls</h2><table id=\"calls\"><thead><tr><th>Time</th><th>Principal</th><th>Server</th><th>Tool</th>\
         <th>Outcome</th><th>Decision</th><th>ms</th><th>Arguments (names, sha256)</th></tr></thead><tbody>",
    );
    for r in &records {
        let decided_by = serde_json::to_value(&r.decided_by)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"outcome outcome-{o}\">{o}</td><td>{} ({})</td>\
             <td>{}</td><td>{} <code title=\"{sha}\">{}</code></td></tr>",
            escape(&r.time),
            escape(r.principal.as_deref().unwrap_or("")),
            escape(r.alias.as_deref().unwrap_or("")),
            escape(&r.tool),
            escape(r.decision.as_deref().unwrap_or("none")),
            escape(&decided_by),
            r.duration_ms,
            escape(&r.argument_names.join(", ")),
            escape(r.arguments_sha256.get(..12).unwrap_or(&r.arguments_sha256)),
            o = escape(r.outcome.as_str()),
            sha = escape(&r.arguments_sha256),
        );
    }
    body.push_str("</tbody></table>");
    if let Ok(stats) = audit_stats_of_file(&path) {
        body.push_str(
            "<h2>Per tool</h2><table id=\"stats\"><thead><tr><th>Tool</th><th>Server</th><th>Calls</th>\
             <th>Error rate</th><th>Refused</th><th>p50 ms</th><th>p95 ms</th></tr></thead><tbody>",
        );
        for t in &stats.tools {
            let f = &t.figures;
            let ms = |v: Option<u64>| v.map_or_else(String::new, |v| v.to_string());
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&t.tool),
                escape(t.alias.as_deref().unwrap_or("")),
                f.calls,
                f.error_rate() * 100.0,
                f.denied,
                ms(f.p50_ms),
                ms(f.p95_ms),
            );
        }
        body.push_str("</tbody></table>");
        body.push_str(&tool_charts(&stats.tools, &records));
    }
    page(200, "Calls", Some(frame), &body)
}

/// How many tools get a chart of their own.
const TOOL_CHARTS: usize = 6;

/// A chart's element id, heading and size.
struct ChartShape<'a> {
    id: &'a str,
    heading: &'a str,
    bar: u64,
    height: u64,
    /// Whether the colours are explained under it.
    legend: bool,
}

/// The Calls page's chart of every shown call.
const CHART: ChartShape<'static> = ChartShape {
    id: "chart",
    heading: "<h2>Calls by the hour (UTC)</h2>",
    bar: 28,
    height: 100,
    legend: true,
};

/// A small chart per tool for the first [`TOOL_CHARTS`] tools in the
/// order `audit stats` gives them (error rate first), of the shown calls;
/// a tool with none shown gets none.
fn tool_charts(tools: &[switchboard_host::ToolStats], records: &[AuditRecord]) -> String {
    let mut out = String::new();
    for (i, t) in tools.iter().take(TOOL_CHARTS).enumerate() {
        let mine: Vec<&AuditRecord> = records
            .iter()
            .filter(|r| r.tool == t.tool && r.alias == t.alias)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let id = format!("chart-tool-{i}");
        let heading = format!(
            "<h3 data-tool=\"{name}\">{name}: {:.1}% errors</h3>",
            t.figures.error_rate() * 100.0,
            name = escape(&t.tool),
        );
        out.push_str(&chart(
            &mine,
            &ChartShape {
                id: &id,
                heading: &heading,
                bar: 14,
                height: 40,
                legend: false,
            },
        ));
    }
    if out.is_empty() {
        return out;
    }
    format!("<h2>Per tool, by the hour (UTC)</h2><div id=\"tool-charts\">{out}</div>")
}

/// The shown calls by the hour (UTC), the last 24 hours that have any:
/// calls and errors counted as `audit stats` counts them (its own code,
/// per hour), drawn as inline SVG bars (no script, nothing loaded).
fn chart(records: &[&AuditRecord], shape: &ChartShape<'_>) -> String {
    let mut hours: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for r in records {
        let hour = r.time.get(..13).unwrap_or(&r.time).to_owned();
        if let Ok(line) = serde_json::to_string(*r) {
            hours.entry(hour).or_default().push(line);
        }
    }
    let bars: Vec<(String, u64, u64)> = hours
        .iter()
        .rev()
        .take(24)
        .rev()
        .map(|(hour, lines)| {
            let stats = switchboard_host::audit_stats(lines.iter().map(String::as_str));
            let calls = stats.tools.iter().map(|t| t.figures.calls).sum();
            let errors = stats.tools.iter().map(|t| t.figures.errors).sum();
            (hour.get(11..13).unwrap_or("").to_owned(), calls, errors)
        })
        .collect();
    if bars.is_empty() {
        return String::new();
    }
    let max = bars.iter().map(|b| b.1).max().unwrap_or(1).max(1);
    let (bar, height) = (shape.bar, shape.height);
    let width = bar * bars.len() as u64;
    let mut svg = format!(
        "{}<svg id=\"{}\" class=\"chart\" role=\"img\" aria-label=\"calls and errors by the hour\" \
         width=\"{width}\" height=\"{}\" viewBox=\"0 0 {width} {}\">",
        shape.heading,
        escape(shape.id),
        height + 16,
        height + 16
    );
    for (i, (hour, calls, errors)) in bars.iter().enumerate() {
        let x = i as u64 * bar;
        let h = calls * height / max;
        let e = errors * height / max;
        let _ = write!(
            svg,
            "<g><title>{hour}h: {calls} calls, {errors} errors</title>\
             <rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{h}\" fill=\"#5b7bd5\"></rect>\
             <rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{e}\" fill=\"#b3261e\"></rect>\
             <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text></g>",
            x + 2,
            height - h,
            bar - 4,
            x + 2,
            height - e,
            bar - 4,
            x + bar / 2,
            height + 12,
            escape(hour),
        );
    }
    svg.push_str("</svg>");
    if shape.legend {
        svg.push_str("<p class=\"legend\">Blue: calls; red: errors (as <code>audit stats</code> counts them).</p>");
    }
    svg
}

/// The audit records in the last [`CALLS_TAIL_BYTES`] of the log at
/// `path`, oldest first (a partial first line is skipped).
fn tail_records(path: &Path) -> Vec<AuditRecord> {
    let Ok(mut file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let start = len.saturating_sub(CALLS_TAIL_BYTES);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text.lines();
    if start > 0 {
        lines.next();
    }
    lines
        .filter_map(|l| serde_json::from_str::<AuditRecord>(l).ok())
        .collect()
}

/// The Approvals page: the calls waiting for a person, each with a link
/// to its approval page.
pub(crate) async fn approvals(approvals: &Approvals, frame: &Frame<'_>) -> AppResponse {
    let (waiting, note) = approvals.waiting().await;
    let mut body = note.map_or_else(String::new, |n| {
        format!("<p class=\"note\">{}</p>", escape(&n))
    });
    if waiting.is_empty() {
        body.push_str("<p>No call is waiting for approval.</p>");
    } else {
        body.push_str(
            "<table id=\"approvals\"><thead><tr><th>Tool</th><th>Server</th><th>Caller</th><th>Why asked</th>\
             <th>Lapses in</th><th></th></tr></thead><tbody>",
        );
        for (id, p) in &waiting {
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} s</td><td><a href=\"/console/approve/{}\">Review</a></td></tr>",
                escape(&p.tool),
                escape(&p.server),
                escape(p.caller.as_deref().unwrap_or("(unauthenticated)")),
                escape(&p.reasons.join("; ")),
                p.seconds_left(),
                escape(id),
            );
        }
        body.push_str("</tbody></table>");
    }
    page(200, "Approvals", Some(frame), &body)
}

/// An approval page: the call (server, tool, the exact arguments, the
/// caller, why the gate asked, a changed definition's diff) and the
/// approve once / deny buttons.
pub(crate) async fn approval(approvals: &Approvals, frame: &Frame<'_>, id: &str) -> AppResponse {
    let found = match approvals.get(id).await {
        Ok(found) => found,
        Err(why) => return message(503, "Unavailable", &why),
    };
    let Some(p) = found else {
        return page(
            404,
            "Approval",
            Some(frame),
            "<p>This approval link is not valid: it was used, it lapsed, or it never existed.</p>",
        );
    };
    let arguments = serde_json::to_string_pretty(&p.arguments).unwrap_or_default();
    let mut body = format!(
        "<dl class=\"call\"><dt>Tool</dt><dd id=\"tool\">{}</dd><dt>Server</dt><dd>{}</dd><dt>Caller</dt><dd id=\"caller\">{}</dd>\
         <dt>Arguments</dt><dd><pre id=\"arguments\">{}</pre></dd><dt>Arguments sha256</dt><dd><code>{}</code></dd>\
         <dt>Why asked</dt><dd>{}</dd><dt>Lapses in</dt><dd>{} s</dd></dl>",
        escape(&p.tool),
        escape(&p.server),
        escape(p.caller.as_deref().unwrap_or("(unauthenticated)")),
        escape(&arguments),
        escape(&p.digest),
        escape(&p.reasons.join("; ")),
        p.seconds_left(),
    );
    if let Some(diff) = &p.diff {
        body.push_str("<h2>The definition changed since it was approved</h2>");
        body.push_str(&side_by_side(diff));
    }
    match (&p.decision, frame.csrf) {
        (Some((approved, by)), _) => {
            let _ = write!(
                body,
                "<p id=\"decision\">{} by {}; the call goes on when the agent continues.</p>",
                if *approved { "Approved" } else { "Denied" },
                escape(by)
            );
        }
        (None, Some(csrf)) => {
            let _ = write!(
                body,
                "<form method=\"post\" action=\"/console/approve/{id}\" class=\"decide\">{csrf}\
                 <button type=\"submit\" name=\"decision\" value=\"approve\">Approve once</button> \
                 <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>",
                id = escape(id),
                csrf = csrf_field(csrf),
            );
        }
        (None, None) => body.push_str("<p>Sign in with a console session to decide.</p>"),
    }
    page(200, "Approval", Some(frame), &body)
}

/// `POST /console/approve/ID`: `by`'s decision (`decision=approve` or
/// `deny`), once.
pub(crate) async fn decide(approvals: &Approvals, by: &str, id: &str, form: &Form) -> AppResponse {
    let approve = match form.get("decision") {
        Some("approve") => true,
        Some("deny") => false,
        _ => return message(400, "Bad request", "Say approve or deny."),
    };
    match approvals.decide(id, approve, by).await {
        Ok(p) => {
            tracing::info!(tool = %p.tool, decided_by = %by, approve, "decided in the console");
            redirect(&format!("/console/approve/{id}"))
        }
        Err(why) => message(409, "Not decided", &why),
    }
}

/// The Evals page: the eval report last uploaded (`switchboard eval
/// --json` output, whole or its `report` member), as pass rates per
/// category and each failing case; and the form to upload one.
pub(crate) fn evals(report: Option<&Value>, frame: &Frame<'_>) -> AppResponse {
    let mut body = String::new();
    match report {
        None => body.push_str("<p>No eval report yet: upload the output of <code>switchboard eval … --json</code>.</p>"),
        Some(r) => {
            let text = |v: &Value| match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            let _ = write!(
                body,
                "<p id=\"eval-summary\">Model <b>{}</b>: score {}, {}.</p>",
                escape(&text(&r["model"])),
                escape(&text(&r["score"])),
                if r["ok"] == Value::Bool(true) { "every category at its minimum" } else { "below a category's minimum" },
            );
            body.push_str(
                "<table id=\"categories\"><thead><tr><th>Category</th><th>Pass rate</th><th>Passed</th><th>Runs</th>\
                 <th>Errors</th><th>Minimum</th><th>OK</th></tr></thead><tbody>",
            );
            for c in r["categories"].as_array().into_iter().flatten() {
                let rate = c["rate"]
                    .as_f64()
                    .map_or_else(|| "—".to_owned(), |r| format!("{:.0}%", r * 100.0));
                let _ = write!(
                    body,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    escape(&text(&c["category"])),
                    escape(&rate),
                    escape(&text(&c["passed"])),
                    escape(&text(&c["runs"])),
                    escape(&text(&c["errors"])),
                    escape(&text(&c["min"])),
                    escape(&text(&c["ok"])),
                );
            }
            body.push_str("</tbody></table><h2>Failing cases</h2>");
            let failures = r["failures"].as_array().cloned().unwrap_or_default();
            if failures.is_empty() {
                body.push_str("<p>None.</p>");
            } else {
                body.push_str(
                    "<table id=\"failures\"><thead><tr><th>Case</th><th>Category</th><th>Run</th><th>Expected</th>\
                     <th>Got</th><th>Why</th></tr></thead><tbody>",
                );
                for f in &failures {
                    let _ = write!(
                        body,
                        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        escape(&text(&f["id"])),
                        escape(&text(&f["category"])),
                        escape(&text(&f["run"])),
                        escape(&text(&f["expected"])),
                        escape(&text(&f["got"])),
                        escape(&text(&f["why"])),
                    );
                }
                body.push_str("</tbody></table>");
            }
        }
    }
    if let Some(csrf) = frame.csrf {
        let _ = write!(
            body,
            "<h2>Upload a report</h2><form method=\"post\" action=\"/console/evals\">{}\
             <textarea name=\"report\" rows=\"8\" cols=\"80\" placeholder=\"switchboard eval … --json\"></textarea>\
             <br><button type=\"submit\">Show</button></form>",
            csrf_field(csrf)
        );
    }
    page(200, "Evals", Some(frame), &body)
}

/// An uploaded eval report, checked: the `eval --json` output or its
/// `report` member, with `categories`.
///
/// # Errors
/// Why it is not one.
pub(crate) fn eval_report(form: &Form) -> Result<Value, String> {
    parse_eval_report(form.get("report").unwrap_or_default())
}

/// An eval report from `text` (`switchboard eval --json` output, whole or
/// its `report` member).
///
/// # Errors
/// Why it is not one.
pub(crate) fn parse_eval_report(text: &str) -> Result<Value, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("The report is not JSON: {e}"))?;
    let report = match value.get("report") {
        Some(inner) => inner.clone(),
        None => value,
    };
    if !report["categories"].is_array() {
        return Err("That is not an eval report: it has no categories (upload `switchboard eval … --json` output).".into());
    }
    Ok(report)
}
