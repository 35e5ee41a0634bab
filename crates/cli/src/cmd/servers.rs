//! `switchboard servers`: each server up, down (and why) or tripped.

use serde::Serialize;
use switchboard_host::{DroppedReport, Host, ServerReport, ServerStatus};

use crate::out;

/// One server in `servers --json`: a stable shape, every key always
/// present.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServerView<'a> {
    alias: &'a str,
    transport: &'a str,
    status: ServerStatus,
    reason: Option<&'a str>,
    tools: usize,
    auth_required: bool,
    lazy: bool,
    running: bool,
    protocol_version: Option<&'a str>,
    dropped: &'a [DroppedReport],
    stderr_tail: &'a [String],
}

impl<'a> From<&'a ServerReport> for ServerView<'a> {
    fn from(s: &'a ServerReport) -> Self {
        ServerView {
            alias: &s.alias,
            transport: s.transport,
            status: s.status,
            reason: s.reason.as_deref(),
            tools: s.tools,
            auth_required: s.auth_required,
            lazy: s.lazy,
            running: s.running,
            protocol_version: s.protocol_version.as_deref(),
            dropped: &s.dropped,
            stderr_tail: &s.stderr_tail,
        }
    }
}

/// Prints the servers (or their JSON).
///
/// # Errors
/// When stdout is closed.
pub(crate) fn run(host: &Host, json: bool) -> std::io::Result<()> {
    let servers = host.servers();
    if json {
        let views: Vec<ServerView<'_>> = servers.iter().map(ServerView::from).collect();
        return out::json(&views);
    }
    for line in human(&servers) {
        out::line(line)?;
    }
    Ok(())
}

/// The table people read.
pub(crate) fn human(servers: &[ServerReport]) -> Vec<String> {
    let mut rows = vec![vec![
        "SERVER".to_owned(),
        "TRANSPORT".into(),
        "STATUS".into(),
        "TOOLS".into(),
        "DETAIL".into(),
    ]];
    for s in servers {
        let detail = match (&s.reason, &s.protocol_version) {
            (Some(reason), _) if s.auth_required && s.status != ServerStatus::NeedsLogin => {
                format!("needs authorization: {reason}")
            }
            (Some(reason), _) => reason.clone(),
            (None, Some(version)) => match &s.self_reported_name {
                Some(name) => format!("protocol {version}, calls itself {name:?}"),
                None => format!("protocol {version}"),
            },
            (None, None) => String::new(),
        };
        let detail = match (s.lazy, s.running) {
            (true, false) => format!("lazy: starts at its first call. {detail}")
                .trim_end()
                .to_owned(),
            (true, true) => format!("lazy, running. {detail}").trim_end().to_owned(),
            _ => detail,
        };
        rows.push(vec![
            s.alias.clone(),
            s.transport.to_owned(),
            status_word(s.status).to_owned(),
            s.tools.to_string(),
            detail,
        ]);
    }
    out::table(&rows)
}

/// `up`, `down`, `tripped`, `disabled` or `needs login`.
pub(crate) fn status_word(status: ServerStatus) -> &'static str {
    status.as_words()
}
