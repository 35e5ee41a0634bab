//! `pins list|accept`, `audit verify` and `audit stats`.

use serde_json::json;

use crate::util::Sandbox;

#[test]
fn pins_are_recorded_at_first_mount_listed_and_accepted() {
    let sb = Sandbox::new();
    let config = sb.config(json!({}), json!({}));
    let config = config.to_str().unwrap();
    // Issue 39, item 1: the first mount pins every definition, called or
    // not (trust on first use).
    let run = sb.run(&["--config", config, "--json", "pins", "list"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(sb.path().join("switchboard.lock").exists());
    let pins = run.json();
    let state = |name: &str| {
        pins.as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["state"]
            .clone()
    };
    assert_eq!(state("mcp__notes__list_notes"), "pinned");
    assert_eq!(state("mcp__notes__search"), "pinned");
    // Accept a whole server.
    let run = sb.run(&["--config", config, "--json", "pins", "accept", "notes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()["accepted"].as_array().unwrap().len(), 4);
    let run = sb.run(&["--config", config, "pins", "list"]);
    assert!(run.stdout.contains("lockfile:"), "{run:?}");
    assert!(!run.stdout.contains("unpinned"), "{run:?}");
    // Nothing matches: a usage error.
    let run = sb.run(&["--config", config, "pins", "accept", "mcp__nobody__x"]);
    assert_eq!(run.code, 1, "{run:?}");
}

#[test]
fn a_changed_definition_is_listed_with_its_diff_until_accepted() {
    let sb = Sandbox::new();
    let config = sb.config(json!({}), json!({}));
    let config = config.to_str().unwrap();
    let run = sb.run(&["--config", config, "pins", "accept", "mcp__notes__search"]);
    assert_eq!(run.code, 0, "{run:?}");
    // Someone edits the approved description in the lockfile.
    let lock = sb.path().join("switchboard.lock");
    let text = std::fs::read_to_string(&lock).unwrap();
    assert!(text.contains("Searches the notes"), "{text}");
    std::fs::write(
        &lock,
        text.replace("Searches the notes", "Searched the notes"),
    )
    .unwrap();
    let mut lockfile: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&lock).unwrap()).unwrap();
    // Keep it readable but make the hash disagree with the server's tool.
    fn scramble(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if k == "sha256" {
                        *x = json!("0".repeat(64));
                    } else {
                        scramble(x);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(scramble),
            _ => {}
        }
    }
    scramble(&mut lockfile);
    std::fs::write(&lock, serde_json::to_string_pretty(&lockfile).unwrap()).unwrap();
    let run = sb.run(&["--config", config, "pins", "list"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("changed"), "{run:?}");
    assert!(
        run.stdout
            .contains("switchboard pins accept mcp__notes__search"),
        "{run:?}"
    );
    let run = sb.run(&["--config", config, "pins", "accept", "mcp__notes__search"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = sb.run(&["--config", config, "--json", "pins", "list"]);
    let search = run
        .json()
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "mcp__notes__search")
        .unwrap()
        .clone();
    assert_eq!(search["state"], "pinned", "{run:?}");
}

#[test]
fn audit_verify_passes_then_catches_an_edit() {
    let sb = Sandbox::new();
    let config = sb.config(json!({}), json!({"audit": "audit.jsonl"}));
    let config = config.to_str().unwrap();
    for id in ["welcome", "standup"] {
        let args = format!(r#"{{"id":"{id}"}}"#);
        let run = sb.run(&[
            "--config",
            config,
            "call",
            "mcp__notes__read_note",
            &args,
            "--yes",
        ]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    let run = sb.run(&["--config", config, "audit", "verify"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("2 line(s), chain intact"), "{run:?}");
    let log = sb.path().join("audit.jsonl");
    let run = sb.run(&["audit", "verify", log.to_str().unwrap(), "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()["intact"], true);
    assert_eq!(run.json()["lines"], 2);

    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text.replacen("read_note", "read_notf", 1)).unwrap();
    let run = sb.run(&["--config", config, "audit", "verify"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains(":1: "), "{run:?}");
    assert!(run.stderr.contains("broken"), "{run:?}");
    // The demo keeps no log: saying so is a usage error.
    let run = sb.run(&["audit", "verify"]);
    assert_eq!(run.code, 1, "{run:?}");
}

#[test]
fn audit_stats_counts_calls_and_errors_per_tool() {
    let sb = Sandbox::new();
    let config = sb.config(json!({}), json!({"audit": "audit.jsonl"}));
    let config = config.to_str().unwrap();
    for id in ["welcome", "standup", "no-such-note"] {
        let args = format!(r#"{{"id":"{id}"}}"#);
        sb.run(&[
            "--config",
            config,
            "call",
            "mcp__notes__read_note",
            &args,
            "--yes",
        ]);
    }
    sb.run(&[
        "--config",
        config,
        "call",
        "mcp__notes__list_notes",
        "--yes",
    ]);
    let run = sb.run(&["--config", config, "--json", "audit", "stats"]);
    assert_eq!(run.code, 0, "{run:?}");
    let stats = run.json();
    assert_eq!(stats["records"], 4, "{run:?}");
    let tools = stats["tools"].as_array().unwrap();
    // Error rate first: read_note (1 of 3 failed) before list_notes.
    assert_eq!(tools[0]["tool"], "mcp__notes__read_note", "{run:?}");
    assert_eq!(tools[0]["calls"], 3);
    assert_eq!(tools[0]["errors"], 1);
    assert!(tools[0]["p95Ms"].is_u64(), "{run:?}");
    assert_eq!(tools[1]["tool"], "mcp__notes__list_notes");
    assert_eq!(tools[1]["errorRate"], 0.0);

    // People get a table; a damaged line is named and skipped.
    let log = sb.path().join("audit.jsonl");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("{half a line\n");
    std::fs::write(&log, text).unwrap();
    let run = sb.run(&["audit", "stats", log.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let header = run.stdout.lines().next().unwrap();
    assert!(header.starts_with("TOOL"), "{run:?}");
    assert!(header.find("ERROR RATE") < header.find("P95"), "{run:?}");
    assert!(run.stdout.contains("33.3%"), "{run:?}");
    assert!(run.stderr.contains(":5: skipped"), "{run:?}");
    // No log at all is a usage error.
    let run = sb.run(&["audit", "stats"]);
    assert_eq!(run.code, 1, "{run:?}");
}
