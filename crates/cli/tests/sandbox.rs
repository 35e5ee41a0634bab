//! Sandboxes and secrets as a user meets them: `doctor` says what each
//! server may do and receives (names, never values); the demo's stdio
//! server runs under `strict`; secret values resolved from every kind of
//! reference appear in no output of a run at `-vv` (or at `trace`), nor in
//! the audit log.

use serde_json::json;

use crate::util::Sandbox;

#[cfg(target_os = "linux")]
#[test]
fn the_demo_notes_server_runs_under_strict_and_doctor_says_so() {
    let sb = Sandbox::new();
    let run = sb.run(&["doctor"]);
    assert_eq!(run.code, 0, "{run:?}");
    for want in [
        "notes: sandbox landlock: on",
        "notes: sandbox network: none",
        "notes: sandbox network namespace: on",
        "notes: sandbox seccomp: on",
        "notes: sandbox write: /dev/null /dev/zero /dev/full <private temp dir>",
        "notes: environment (names only): ",
        "notes: started",
        "notes: 3 tool(s)",
    ] {
        assert!(run.stdout.contains(want), "{want:?} missing:\n{run:?}");
    }
}

#[test]
fn resolved_secrets_appear_in_no_output_of_a_verbose_run() {
    let sb = Sandbox::new();
    let values = [
        "file-secret-4be1",
        "env-secret-90c2",
        "cmd-secret-7d3f",
        "header-secret-1a6e",
        "client-secret-c55d",
        "plain-secret-e0b9",
    ];
    let file = sb.write("token", &format!("{}\n", values[0]));
    let header = sb.write("header", &format!("Bearer {}\n", values[3]));
    #[cfg(unix)]
    for path in [&file, &header] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    // A loopback port nothing listens on: the remote entries are resolved
    // and then fail to connect.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    let config = sb.config(
        json!({
            "secrets": {
                "command": crate::util::bin(),
                "args": ["demo-server", "notes"],
                "env": {
                    "FROM_FILE": {"secret": "file:token"},
                    "FROM_ENV": {"secret": "env:SB_TEST_SECRET"},
                    // The reference (shown by doctor) is not the value.
                    "FROM_CMD": {"secret": "cmd:printf %s-%s cmd-secret 7d3f"},
                    "PLAIN": values[5],
                },
            },
            "web": {"type": "http", "url": url, "headers": {"Authorization": {"secret": "file:header"}}},
            "oauthed": {"type": "http", "url": url, "oauth": {"clientId": "sb", "clientSecret": {"secret": "env:SB_TEST_CLIENT_SECRET"}}},
        }),
        json!({"audit": "audit.jsonl", "permissions": {"allow": ["mcp__secrets"]}}),
    );
    let config = config.to_str().unwrap();
    let mut outputs = Vec::new();
    for (args, trace) in [
        (vec!["-vv", "--config", config, "config", "check"], false),
        (vec!["-vv", "--config", config, "doctor"], false),
        (vec!["-vv", "--config", config, "servers"], false),
        (vec!["-vv", "--config", config, "--json", "servers"], false),
        (
            vec![
                "-vv",
                "--config",
                config,
                "call",
                "mcp__secrets__list_notes",
            ],
            false,
        ),
        (
            vec!["--config", config, "call", "mcp__secrets__list_notes"],
            true,
        ),
    ] {
        let mut cmd = sb.cmd(&args);
        cmd.env("SB_TEST_SECRET", values[1])
            .env("SB_TEST_CLIENT_SECRET", values[4]);
        if trace {
            cmd.env("RUST_LOG", "trace");
        }
        let run = crate::util::run(cmd);
        outputs.push((args.join(" "), run.stdout.clone(), run.stderr.clone()));
    }
    let audit = std::fs::read_to_string(sb.path().join("audit.jsonl")).unwrap_or_default();
    assert!(audit.contains("mcp__secrets__list_notes"), "{audit}");
    outputs.push(("audit log".into(), audit, String::new()));
    // The server started with its secrets resolved (doctor listed it).
    assert!(
        outputs[1].1.contains("secrets: started"),
        "{}\n{}",
        outputs[1].1,
        outputs[1].2
    );
    assert!(
        outputs[1].1.contains("FROM_FILE from file:"),
        "{}",
        outputs[1].1
    );
    for (what, stdout, stderr) in &outputs {
        for value in values {
            assert!(
                !stdout.contains(value) && !stderr.contains(value),
                "{value} leaked by `{what}`:\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
            );
        }
    }
}
