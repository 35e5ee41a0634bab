//! The official MCP TypeScript client (`@modelcontextprotocol/client`,
//! `tests/ts-client/drive.mjs`) driving the gateway over stdio and over
//! Streamable HTTP: it lists the tools, calls an allowed one, and answers
//! the approval question the gate asks about another; and
//! (`tests/ts-client/skills.mjs`) lists and reads the skills the gateway
//! serves on its servers' behalf.
//!
//! With `--tool-search` (`tests/ts-client/search.mjs`), over both
//! transports: it is listed only the search tool, searches, hears the
//! `list_changed` meant for it, calls the tool it found, and pages the
//! long result to its end with `read_result`.
//!
//! `tests/ts-client/approve.mjs` (URL elicitation only, the console
//! approving) is driven by `console::the_official_typescript_client_gets_a_console_link_and_its_retry_completes`.
//!
//! Skipped, with the reason printed, when `node` or the client's
//! `node_modules` is missing (`npm ci` in `tests/ts-client`; CI does it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{Sandbox, bin, collect, run, spawn, url_in, wait_for};

const ALLOWED: &str = "mcp__notes__list_notes";
const ASKED: &str = "mcp__notes__search";

/// The driver's folder, or why it cannot run here.
fn driver() -> Result<PathBuf, String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/ts-client");
    let installed = dir.join("node_modules/@modelcontextprotocol/client/package.json");
    if !installed.is_file() {
        return Err(format!(
            "{} is missing (run `npm ci` in tests/ts-client)",
            installed.display()
        ));
    }
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => Ok(dir),
        _ => Err("node is not installed".into()),
    }
}

/// notes, with `list_notes` allowed and everything else asked about.
fn config(sb: &Sandbox) -> String {
    sb.config(json!({}), json!({"permissions": {"allow": [ALLOWED]}}))
        .to_str()
        .unwrap()
        .to_owned()
}

/// Runs `script` of the driver's folder in the sandbox's environment and
/// returns its report.
fn drive_with(sb: &Sandbox, dir: &Path, script: &str, args: &[&str]) -> Value {
    let cmd = sb.cmd(&[]);
    let mut node = Command::new("node");
    node.arg(dir.join(script))
        .args(args)
        .current_dir(sb.path())
        .stdin(Stdio::null());
    // The sandbox's environment (config and state folders), for the
    // gateway the driver starts over stdio.
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => node.env(key, v),
            None => node.env_remove(key),
        };
    }
    let out = run(node);
    let last = out.stdout.lines().last().unwrap_or_default().to_owned();
    let report: Value = serde_json::from_str(&last)
        .unwrap_or_else(|e| panic!("no report from the driver ({e}):\n{out:?}"));
    assert_eq!(report["ok"], json!(true), "{report:#}\n{out:?}");
    report
}

/// The driver's folder, or `None` with the reason printed: the test is
/// then skipped.
#[allow(clippy::print_stderr)] // a skipped test says why
pub(crate) fn driver_or_skip() -> Option<PathBuf> {
    driver().map_err(|why| eprintln!("skipped: {why}")).ok()
}

/// Runs `script` with `args`, then `-- switchboard --config CFG serve
/// --stdio` and `serve_flags`: the driver starts the gateway itself.
async fn over_stdio(
    sb: Sandbox,
    dir: PathBuf,
    cfg: String,
    script: &'static str,
    args: &'static [&'static str],
    serve_flags: &'static [&'static str],
) -> Value {
    tokio::task::spawn_blocking(move || {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--", bin(), "--config", &cfg, "serve", "--stdio"]);
        all.extend(serve_flags);
        drive_with(&sb, &dir, script, &all)
    })
    .await
    .unwrap()
}

/// Starts `switchboard --config CFG serve --http 127.0.0.1:0` with
/// `serve_flags`, runs `script` with `(before, after)` the gateway's URL,
/// and stops the gateway.
async fn over_http(
    sb: Sandbox,
    dir: PathBuf,
    cfg: String,
    script: &'static str,
    (before, after): (&'static [&'static str], &'static [&'static str]),
    serve_flags: &'static [&'static str],
) -> Value {
    let mut flags = vec!["--config", &cfg, "serve", "--http", "127.0.0.1:0"];
    flags.extend(serve_flags);
    let mut cmd = sb.cmd(&flags);
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = spawn(&mut cmd);
    let err = collect(child.stderr.take().unwrap());
    let report = tokio::task::spawn_blocking(move || {
        let url = url_in(&wait_for(&err, "/mcp", Duration::from_secs(60)));
        let mut all = before.to_vec();
        all.push(&url);
        all.extend(after);
        drive_with(&sb, &dir, script, &all)
    })
    .await
    .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    report
}

fn check(report: &Value) {
    assert_eq!(report["negotiated"], json!("2026-07-28"), "{report:#}");
    assert_eq!(report["server"], json!("switchboard"), "{report:#}");
    assert_eq!(report["questions"], json!(1), "{report:#}");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&ALLOWED) && tools.contains(&ASKED),
        "{tools:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_typescript_client_drives_the_gateway_over_stdio() {
    let Some(dir) = driver_or_skip() else { return };
    let sb = Sandbox::new();
    let cfg = config(&sb);
    let report = over_stdio(sb, dir, cfg, "drive.mjs", &["stdio", ALLOWED, ASKED], &[]).await;
    check(&report);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_typescript_client_drives_the_gateway_over_http() {
    let Some(dir) = driver_or_skip() else { return };
    let sb = Sandbox::new();
    let cfg = config(&sb);
    let args = (&["http"][..], &[ALLOWED, ASKED][..]);
    let report = over_http(sb, dir, cfg, "drive.mjs", args, &[]).await;
    check(&report);
}

/// The gateway with tool search over the notes demo: `read_note` allowed,
/// a budget small enough that the handbook note pages.
fn search_config(sb: &Sandbox) -> String {
    sb.config(
        json!({}),
        json!({"permissions": {"allow": ["mcp__notes__read_note"]}, "budgetChars": 2000}),
    )
    .to_str()
    .unwrap()
    .to_owned()
}

const QUERY: &str = "read a note by its id";
const FOUND: &str = "mcp__notes__read_note";
const ARGS: &str = r#"{"id": "handbook"}"#;

fn check_search(report: &Value) {
    let before: Vec<&str> = report["before"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // The built-ins are always sent: the search, and the skill tools (the
    // notes demo serves a skill).
    assert_eq!(
        before,
        [
            "mcp__switchboard__load_skill",
            "mcp__switchboard__read_skill_file",
            "mcp__switchboard__search_tools"
        ],
        "{report:#}"
    );
    assert_eq!(report["notified"], json!(true), "{report:#}");
    assert!(report["pages"].as_u64().unwrap() >= 3, "{report:#}");
    assert!(
        report["end"]
            .as_str()
            .unwrap()
            .contains("End of the handbook."),
        "{report:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_typescript_client_searches_the_gateway_over_stdio() {
    let Some(dir) = driver_or_skip() else { return };
    let sb = Sandbox::new();
    let cfg = search_config(&sb);
    let args = &["stdio", QUERY, FOUND, ARGS];
    let report = over_stdio(sb, dir, cfg, "search.mjs", args, &["--tool-search"]).await;
    check_search(&report);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_typescript_client_searches_the_gateway_over_http() {
    let Some(dir) = driver_or_skip() else { return };
    let sb = Sandbox::new();
    let cfg = search_config(&sb);
    let args = (&["http"][..], &[QUERY, FOUND, ARGS][..]);
    let report = over_http(sb, dir, cfg, "search.mjs", args, &["--tool-search"]).await;
    check_search(&report);
}

// Through the gateway, the official client lists the demo server's skill
// under the gateway's URI (`skill://notes/…`), gets the same entry with
// `skills/get`, and reads each of its files, every one matching the digest
// and size the notes server computed (SK-VER-1 from the outside: the
// gateway passes digests and bytes through unchanged).
#[tokio::test(flavor = "multi_thread")]
async fn the_official_typescript_client_lists_and_reads_skills_through_the_gateway() {
    let Some(dir) = driver_or_skip() else { return };
    let sb = Sandbox::new();
    let cfg = config(&sb);
    let args = (&[][..], &["skill://notes/meeting-notes/SKILL.md"][..]);
    let report = over_http(sb, dir, cfg, "skills.mjs", args, &[]).await;
    assert_eq!(report["negotiated"], json!("2026-07-28"), "{report:#}");
    assert_eq!(report["sameEntry"], json!(true), "{report:#}");
    let files: Vec<&str> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["uri"].as_str())
        .collect();
    assert_eq!(
        files,
        [
            "skill://notes/meeting-notes/SKILL.md",
            "skill://notes/meeting-notes/templates/minutes.md"
        ],
        "{report:#}"
    );
    let template = &report["files"][1]["text"];
    assert!(
        template.as_str().unwrap().contains("## Action items"),
        "{report:#}"
    );
}
