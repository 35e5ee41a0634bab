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
    assert_eq!(run.json()["accepted"].as_array().unwrap().len(), 3);
    let run = sb.run(&["--config", config, "pins", "list"]);
    assert!(run.stdout.contains("lockfile:"), "{run:?}");
    assert!(!run.stdout.contains("unpinned"), "{run:?}");
    // Nothing matches: a usage error.
    let run = sb.run(&["--config", config, "pins", "accept", "mcp__nobody__x"]);
    assert_eq!(run.code, 1, "{run:?}");
}

/// Issue 39, item 3: `pins list --json` classifies each change (breaking
/// or compatible, with reasons; a tool gone is breaking), and a tool its
/// server marks deprecated is shown so in `tools` and `doctor`.
#[test]
fn changes_are_classified_and_deprecations_shown() {
    let sb = Sandbox::new();
    let search = |props: serde_json::Value| json!({"name": "search", "description": "Search.", "inputSchema": {"type": "object", "properties": props}});
    let plain = |name: &str, description: &str| json!({"name": name, "description": description, "inputSchema": {"type": "object"}});
    let mut old = plain("find", "Find notes.");
    old["_meta"] =
        json!({"dev.switchboard/deprecated": {"replacement": "search", "removal": "2000-01-01"}});
    let tools = sb.write(
        "tools.json",
        &json!([
            search(json!({"q": {"type": "string"}, "mode": {"type": "string"}})),
            plain("keep", "Keeps."),
            plain("gone", "Soon gone."),
            old,
        ])
        .to_string(),
    );
    let config = sb.config(
        json!({"mock": {"command": crate::ops::mock_server(), "args": ["--tools-file", tools]}}),
        json!({}),
    );
    let config = config.to_str().unwrap();
    // The first mount pins them.
    let run = sb.run(&["--config", config, "--json", "pins", "list"]);
    assert_eq!(run.code, 0, "{run:?}");

    let run = sb.run(&["--config", config, "--json", "tools"]);
    let listed = run.json();
    let find = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__mock__find")
        .unwrap()
        .clone();
    assert_eq!(
        find["deprecated"],
        json!({"replacement": "search", "removal": "2000-01-01"})
    );
    assert!(
        find["description"].as_str().unwrap().starts_with(
            "[deprecated: use mcp__mock__search instead; may be removed after 2000-01-01]"
        ),
        "{find}"
    );
    let run = sb.run(&["--config", config, "tools"]);
    assert!(
        run.stdout.contains(
            "mcp__mock__find is deprecated: use mcp__mock__search instead; may be removed after 2000-01-01"
        ),
        "{run:?}"
    );
    let run = sb.run(&["--config", config, "--json", "doctor"]);
    assert!(
        run.stdout.contains(
            "tool find is deprecated: use mcp__mock__search instead; may be removed after 2000-01-01 (the removal date has passed)"
        ),
        "{run:?}"
    );

    std::fs::write(
        &tools,
        json!([
            search(json!({"q": {"type": "integer"}})),
            plain("keep", "Keeps, faster."),
            plain("find", "Find notes."),
        ])
        .to_string(),
    )
    .unwrap();
    let run = sb.run(&["--config", config, "--json", "pins", "list"]);
    let pins = run.json();
    let pin = |name: &str| {
        pins.as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {pins}"))
            .clone()
    };
    let search = pin("mcp__mock__search");
    assert_eq!(search["state"], "changed");
    assert_eq!(search["change"]["class"], "breaking", "{search}");
    let reasons = search["change"]["reasons"].to_string();
    assert!(
        reasons.contains("type of `q` changed")
            && reasons.contains("property `mode` removed or renamed"),
        "{reasons}"
    );
    let keep = pin("mcp__mock__keep");
    assert_eq!(
        keep["change"],
        json!({"class": "compatible", "reasons": ["description changed"]})
    );
    let gone = pin("mcp__mock__gone");
    assert_eq!(gone["state"], "removed");
    assert_eq!(gone["change"]["class"], "breaking");
    assert_eq!(pin("mcp__mock__find")["change"], serde_json::Value::Null);
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
