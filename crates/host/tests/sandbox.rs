//! Sandboxed stdio servers under the host: a server its sandbox stops is
//! reported with the reason in `servers`, in the outage text the model
//! sees, in the failed call's text and in the audit log, while the other
//! servers keep working; secret references in `env` reach the server and
//! a bad one stops only its server, with a reason that holds no value.

use serde_json::{Value, json};
use switchboard_host::{AssumeYes, CallOptions, ServerStatus};

use crate::util::*;

fn hostile(args: &[&str], sandbox: Value) -> Value {
    json!({"command": bin("hostile-server").display().to_string(), "args": args, "sandbox": sandbox})
}

fn audit_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_by_its_memory_limit_is_reported_as_such_everywhere() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {
                "good": stdio(&[]),
                "greedy": hostile(&["alloc", "512"], json!({"memoryMiB": 256})),
                "dies": hostile(&["alloc", "512", "--at-start"], json!({"memoryMiB": 256})),
                "tracer": hostile(&["ptrace"], json!("strict")),
            },
            "permissions": {"allow": ["mcp__good", "mcp__greedy", "mcp__tracer"]},
            "audit": "audit.jsonl",
        }))
        .await;

    // Killed at start: down, with the sandbox's reason in our words.
    let servers = host.servers();
    let dies = servers.iter().find(|s| s.alias == "dies").unwrap();
    assert_eq!(dies.status, ServerStatus::Down, "{dies:?}");
    let reason = dies.reason.clone().unwrap();
    assert!(
        reason.starts_with(
            "stopped by the sandbox: it ran out of memory under its limit (memoryMiB: 256)"
        ),
        "{reason}"
    );

    // Killed during a call: the call says so, then `servers` and the
    // outage text do, and the audit line names the sandbox's reason.
    let r = host
        .call("mcp__greedy__act", None, CallOptions::approver(AssumeYes))
        .await;
    assert!(r.is_error());
    let said = text(&r);
    assert!(said.contains("memoryMiB: 256"), "{said}");
    let greedy = host
        .servers()
        .into_iter()
        .find(|s| s.alias == "greedy")
        .unwrap();
    assert_eq!(greedy.status, ServerStatus::Down, "{greedy:?}");
    assert!(greedy.reason.unwrap().contains("stopped by the sandbox"));
    let outage = host.outage_text().unwrap();
    assert!(
        outage.contains("- greedy is down (stopped by the sandbox: it ran out of memory"),
        "{outage}"
    );
    assert!(
        outage.contains("- dies is down (stopped by the sandbox: it ran out of memory"),
        "{outage}"
    );

    // A refused system call is the server's own error; it keeps running.
    let r = host
        .call("mcp__tracer__act", None, CallOptions::approver(AssumeYes))
        .await;
    assert!(r.is_error());
    assert!(text(&r).contains("Operation not permitted"), "{}", text(&r));
    let r = host
        .call("mcp__tracer__act", None, CallOptions::approver(AssumeYes))
        .await;
    assert!(text(&r).contains("Operation not permitted"));

    // The others keep working.
    let r = host
        .call(
            "mcp__good__echo",
            json!({"text": "still here"}).as_object().cloned(),
            CallOptions::default(),
        )
        .await;
    assert!(
        !r.is_error() && text(&r).contains("still here"),
        "{}",
        text(&r)
    );
    host.shutdown().await;

    let lines = audit_lines(&dir.path("audit.jsonl"));
    let greedy = lines
        .iter()
        .find(|l| l["alias"] == "greedy")
        .expect("an audit line for the killed call");
    assert_eq!(greedy["outcome"], "transport");
    assert!(
        greedy["sandbox"]
            .as_str()
            .unwrap()
            .contains("memoryMiB: 256"),
        "{greedy}"
    );
    let good = lines.iter().find(|l| l["alias"] == "good").unwrap();
    assert!(good.get("sandbox").is_none(), "{good}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_references_reach_the_server_and_a_bad_one_stops_only_its_server() {
    let dir = Dir::new();
    let secret_file = dir.write("token", "from-file-31f\n");
    let open_file = dir.write("open-token", "from-open-file-9d2\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secret_file, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(&open_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let host = dir
        .mount(json!({
            "mcpServers": {
                "env": {
                    "command": bin("hostile-server").display().to_string(),
                    "args": ["env"],
                    "env": {
                        "FROM_FILE": {"secret": "file:token"},
                        "FROM_CMD": {"secret": "cmd:printf from-cmd-77a"},
                        "PLAIN": "plain-value",
                    },
                },
                "open": {
                    "command": bin("hostile-server").display().to_string(),
                    "args": ["env"],
                    "env": {"TOKEN": {"secret": "file:open-token"}},
                },
                "failing": {
                    "command": bin("hostile-server").display().to_string(),
                    "args": ["env"],
                    "env": {"TOKEN": {"secret": "cmd:sh -c 'printf leak%s ed-by-cmd; exit 4'"}},
                },
            },
            "permissions": {"allow": ["mcp__env"]},
        }))
        .await;
    let r = host
        .call("mcp__env__act", None, CallOptions::default())
        .await;
    let env = text(&r);
    assert!(env.contains("FROM_FILE=from-file-31f\n"), "{env}");
    assert!(env.contains("FROM_CMD=from-cmd-77a\n"), "{env}");
    assert!(env.contains("PLAIN=plain-value"), "{env}");

    let servers = host.servers();
    let open = servers.iter().find(|s| s.alias == "open").unwrap();
    let reason = open.reason.clone().unwrap();
    assert_eq!(open.status, ServerStatus::Down);
    assert!(reason.contains("env.TOKEN: secret file:"), "{reason}");
    assert!(
        reason.contains("readable by its group or by others"),
        "{reason}"
    );
    let failing = servers.iter().find(|s| s.alias == "failing").unwrap();
    let reason = failing.reason.clone().unwrap();
    assert!(reason.contains("exit status: 4"), "{reason}");
    let outage = host.outage_text().unwrap();
    for text in [&reason, &outage] {
        assert!(!text.contains("leaked-by-cmd"), "{text}");
        assert!(!text.contains("from-open-file-9d2"), "{text}");
    }
    host.shutdown().await;
}
