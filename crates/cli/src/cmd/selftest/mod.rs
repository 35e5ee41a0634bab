//! `switchboard selftest`: the whole system checked end to end with real
//! processes and sockets, one line per check (`PASS`/`FAIL` and what was
//! seen), then `N passed, M failed`; exit 1 on any failure.
//!
//! The servers are the demo servers: `notes` and `faulty` run as this
//! binary re-executed (`switchboard demo-server …`) over stdio, `tickets`
//! is served from this process on a free loopback port. Each check fails
//! when the behaviour it names breaks; none asserts a duration (only
//! generous upper bounds on waits, so a stuck check ends). The checks go
//! through the client's own code where the host does: check 2 pages with
//! the client's `list_all_tools`, check 3 reads the event stream through
//! the client's HTTP transport, so a regression of the client fails them;
//! only check 9 writes raw HTTP, to send headers no client would.

mod checks;
mod raw;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use serde_json::json;
use switchboard_demo::tickets;

use crate::exit::Failure;
use crate::out;

/// Longest a single check may take before it counts as failed.
const CHECK_LIMIT: Duration = Duration::from_secs(90);

/// What a check saw: `Ok` passes, `Err` fails; the text says what was
/// seen either way.
pub(crate) type Seen = Result<String, String>;

type CheckFn = for<'a> fn(&'a Env) -> Pin<Box<dyn Future<Output = Seen> + Send + 'a>>;

/// The fourteen checks, in order.
const CHECKS: [(&str, CheckFn); 14] = [
    ("a 9 KB note read over stdio arrives whole", |e| {
        Box::pin(checks::long_note_whole(e))
    }),
    ("notes lists 3 tools across 2 pages", |e| {
        Box::pin(checks::paging(e))
    }),
    (
        "one tickets call yields 1 progress notification + 1 id-matched response",
        |e| Box::pin(checks::progress_then_response(e)),
    ),
    (
        "both search tools coexist and reverse-map to their original names",
        |e| Box::pin(checks::colliding_search(e)),
    ),
    ("the server receives the original name", |e| {
        Box::pin(checks::original_name_sent(e))
    }),
    ("the readOnlyHint search still goes through the gate", |e| {
        Box::pin(checks::read_only_still_gated(e))
    }),
    (
        "the long note over the 8,000-character budget: head and tail shown, the rest read back by its handle",
        |e| Box::pin(checks::budget_cut(e)),
    ),
    (
        "tickets at an empty port: notes works, tickets is down with its reason, its tool gives isError",
        |e| Box::pin(checks::outage(e)),
    ),
    ("a header/body mismatch is rejected 400/-32020", |e| {
        Box::pin(checks::header_mismatch(e))
    }),
    ("a non-ASCII tool name round-trips", |e| {
        Box::pin(checks::non_ascii_name(e))
    }),
    (
        "unknown tool → protocol error, business failure → isError",
        |e| Box::pin(checks::protocol_vs_tool_error(e)),
    ),
    (
        "a hanging call times out without blocking other calls",
        |e| Box::pin(checks::hang_times_out(e)),
    ),
    ("a server that dies fails its pending calls at once", |e| {
        Box::pin(checks::death_fails_pending(e))
    }),
    ("no child process remains after exit", |e| {
        Box::pin(checks::no_orphans(e))
    }),
];

/// What the checks share: this binary, a tickets server, a scratch folder.
#[derive(Debug)]
pub(crate) struct Env {
    /// This binary, re-executed as the stdio demo servers.
    pub(crate) exe: PathBuf,
    /// The tickets demo, on a free loopback port.
    pub(crate) tickets: tickets::Running,
    /// Scratch files (configs for child processes).
    pub(crate) dir: tempfile::TempDir,
}

/// Runs every check and prints one line each, then the totals.
///
/// # Errors
/// A usage [`Failure`] (exit 1) when any check fails or the checks cannot
/// start.
pub(crate) async fn run(json: bool) -> anyhow::Result<()> {
    let env = Env {
        exe: std::env::current_exe()
            .map_err(|e| Failure::usage(format!("cannot find this binary: {e}")))?,
        tickets: tickets::start(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .map_err(|e| Failure::usage(format!("cannot start the tickets demo: {e}")))?,
        dir: tempfile::tempdir()
            .map_err(|e| Failure::usage(format!("cannot make a scratch folder: {e}")))?,
    };
    let mut passed = 0usize;
    let mut failed = 0usize;
    let mut results = Vec::new();
    for (i, (name, check)) in CHECKS.iter().enumerate() {
        let n = i + 1;
        let seen = match tokio::time::timeout(CHECK_LIMIT, check(&env)).await {
            Ok(seen) => seen,
            Err(_) => Err(format!("did not finish within {} s", CHECK_LIMIT.as_secs())),
        };
        let (word, text) = match &seen {
            Ok(t) => {
                passed += 1;
                ("PASS", t)
            }
            Err(t) => {
                failed += 1;
                ("FAIL", t)
            }
        };
        if json {
            results.push(json!({"check": n, "name": name, "passed": seen.is_ok(), "seen": text}));
        } else {
            // One line per check, printed as soon as it is known.
            out::line(format!("{word} {n:>2} {name}: {text}"))?;
        }
    }
    env.tickets.stop().await;
    let totals = format!("{passed} passed, {failed} failed");
    if json {
        out::json(&json!({"checks": results, "passed": passed, "failed": failed}))?;
    } else {
        out::line(&totals)?;
    }
    if failed == 0 {
        Ok(())
    } else {
        Err(Failure::usage(format!("selftest: {totals}")).into())
    }
}
