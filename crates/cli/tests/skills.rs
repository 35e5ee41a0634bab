//! Skills from the command line: `switchboard skills` (list, show,
//! accept), `switchboard call mcp__switchboard__load_skill` with its exit
//! codes, and a scripted chat that loads the demo skill and follows it.
//! Requirement IDs are the Skills extension's
//! (docs/spec/skills-checklist.md).

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::ops::mock_server;
use crate::util::Sandbox;

const LOAD: &str = "mcp__switchboard__load_skill";
const READ: &str = "mcp__switchboard__read_skill_file";

// SK-SEC-14/15/16: the list shows origin and status; show gives the entry,
// and the content only when asked for; accept binds the files.
#[test]
fn skills_are_listed_shown_and_accepted() {
    let sb = Sandbox::new();
    let config = sb.config(json!({}), json!({}));
    let config = config.to_str().unwrap();
    let run = sb.run(&["--config", config, "skills", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let skills = run.json();
    let s = &skills[0];
    assert_eq!(s["id"], "notes:meeting-notes", "{skills}");
    assert_eq!(s["server"], "notes");
    assert_eq!(s["uri"], "skill://meeting-notes/SKILL.md");
    assert_eq!(s["name"], "meeting-notes");
    assert!(s["description"].as_str().unwrap().contains("minutes"));
    assert_eq!(s["status"], "new");
    assert_eq!(s["files"], 2);
    assert!(s["bytes"].as_u64().unwrap() > 0);

    let run = sb.run(&["--config", config, "skills"]);
    assert!(
        run.stdout.contains("notes:meeting-notes  notes   new"),
        "{run:?}"
    );

    // Without a terminal or --yes, show gives the entry only.
    let run = sb.run(&["--config", config, "skills", "show", "notes:meeting-notes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("served over MCP: not a local skill"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("skill://meeting-notes/templates/minutes.md"),
        "{run:?}"
    );
    assert!(!run.stdout.contains("# Meeting notes"), "{run:?}");
    let run = sb.run(&[
        "--config",
        config,
        "skills",
        "show",
        "notes:meeting-notes",
        "--yes",
    ]);
    assert!(run.stdout.contains("# Meeting notes"), "{run:?}");
    let run = sb.run(&["--config", config, "skills", "show", "notes:nothing"]);
    assert_eq!(run.code, 1, "{run:?}");

    // Not approved: with no one to ask, the load is denied (exit 6).
    let args = r#"{"skill":"notes:meeting-notes"}"#;
    let run = sb.run(&["--config", config, "call", LOAD, args]);
    assert_eq!(run.code, 6, "{run:?}");
    let run = sb.run(&[
        "--config",
        config,
        "skills",
        "accept",
        "notes:meeting-notes",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let lock = std::fs::read_to_string(sb.path().join("switchboard.lock")).unwrap();
    assert!(lock.contains("\"skills\""), "{lock}");
    let run = sb.run(&["--config", config, "skills", "--json"]);
    assert_eq!(run.json()[0]["status"], "approved");
    // Approved: it loads without anyone asked.
    let run = sb.run(&["--config", config, "call", LOAD, args]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("from the MCP server notes"), "{run:?}");
    assert!(run.stdout.contains("# Meeting notes"), "{run:?}");
}

#[test]
fn load_skill_works_from_the_command_line_and_a_rule_can_deny_it() {
    let sb = Sandbox::new();
    let args = r#"{"skill":"notes:meeting-notes"}"#;
    let run = sb.run(&["call", LOAD, args, "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("Read `templates/minutes.md`"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("- templates/minutes.md (144 bytes)"),
        "{run:?}"
    );
    let read = r#"{"skill":"notes:meeting-notes","path":"templates/minutes.md"}"#;
    let run = sb.run(&["call", READ, read, "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("## Action items"), "{run:?}");

    let config = sb.config(
        json!({}),
        json!({"permissions": {"deny": ["skill:notes:meeting-*"]}}),
    );
    let run = sb.run(&[
        "--config",
        config.to_str().unwrap(),
        "call",
        LOAD,
        args,
        "--yes",
    ]);
    assert_eq!(run.code, 6, "{run:?}");
    assert!(
        run.stderr.contains("denied") || run.stdout.contains("deny"),
        "{run:?}"
    );
}

fn digest(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    format!(
        "sha256:{}",
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// A skills file for the mock server: one skill `s` whose SKILL.md is
/// `md`, its entry edited by `edit`.
fn skills_file(md: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut entry = json!({
        "uri": "skill://s/SKILL.md",
        "frontmatter": {"name": "s", "description": "d"},
        "resources": [{"uri": "skill://s/SKILL.md", "digest": digest(md.as_bytes()), "size": md.len()}],
    });
    edit(&mut entry);
    json!({"skills": [entry], "files": {"skill://s/SKILL.md": md}})
}

// Exit 5 naming each verification failure: digest, size, frontmatter,
// unlisted, invalid, limits (SK-VER-1/4/5, SK-ENT-16/18, SK-LIM-3).
#[test]
fn a_verification_failure_exits_5_naming_it() {
    let md = "---\nname: s\ndescription: d\n---\nBody.\n";
    let other = "---\nname: s\ndescription: d\n---\nBodx.\n";
    let longer = "---\nname: s\ndescription: d\n---\nBody, EVIL.\n";
    let lying = "---\nname: s\ndescription: EVIL\n---\nBody.\n";
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "digest",
            json!({"skills": skills_file(md, |_| {})["skills"], "files": {"skill://s/SKILL.md": other}}),
            LOAD,
        ),
        (
            "size",
            json!({"skills": skills_file(md, |_| {})["skills"], "files": {"skill://s/SKILL.md": longer}}),
            LOAD,
        ),
        ("frontmatter", skills_file(lying, |_| {}), LOAD),
        (
            "invalid",
            skills_file(md, |e| {
                e.as_object_mut().unwrap().remove("resources");
            }),
            LOAD,
        ),
        (
            "limits",
            skills_file(md, |e| {
                let files = e["resources"].as_array_mut().unwrap();
                for i in 0..512 {
                    files.push(json!({"uri": format!("skill://s/f{i}"), "digest": digest(b"x"), "size": 1}));
                }
            }),
            LOAD,
        ),
        ("unlisted", skills_file(md, |_| {}), READ),
    ];
    let mock = mock_server();
    for (kind, file, tool) in cases {
        let sb = Sandbox::new();
        let path = sb.write("skills.json", &file.to_string());
        let config = sb.config(
            json!({"m": {"command": mock, "args": ["--skills-file", path]}}),
            json!({}),
        );
        let args = match tool {
            LOAD => json!({"skill": "m:s"}),
            _ => json!({"skill": "m:s", "path": "other.md"}),
        };
        let run = sb.run(&[
            "--config",
            config.to_str().unwrap(),
            "call",
            tool,
            &args.to_string(),
            "--yes",
        ]);
        assert_eq!(run.code, 5, "{kind}: {run:?}");
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(
            all.contains(&format!("verification failed ({kind})")),
            "{kind}: {run:?}"
        );
        assert!(
            !all.contains("EVIL") && !all.contains("Bodx"),
            "{kind}: {run:?}"
        );
    }
}

// End to end with the scripted model: the system prompt lists the skill
// (never its content: SK-VER-6), the model loads it (approval asked),
// reads its template, and calls the tool the skill names.
#[test]
fn a_scripted_model_loads_the_demo_skill_and_follows_it() {
    let sb = Sandbox::new();
    let (run, seen) = sb.scripted_chat(
        &[
            json!({
                "system_contains": ["notes:meeting-notes", "from the MCP server notes", "Write the minutes"],
                "system_lacks": ["Do not invent attendees"],
                "tool_calls": [{"name": LOAD, "arguments": {"skill": "notes:meeting-notes"}}],
            }),
            json!({
                "expect": [{"is_error": false, "contains": "Read `templates/minutes.md`"}],
                "tool_calls": [{"name": READ, "arguments": {"skill": "notes:meeting-notes", "path": "templates/minutes.md"}}],
            }),
            json!({
                "expect": [{"is_error": false, "contains": "## Action items"}],
                "tool_calls": [{"name": "mcp__notes__read_note", "arguments": {"id": "standup"}}],
            }),
            json!({"expect": [{"is_error": false, "contains": "printer"}], "text": "Minutes written."}),
        ],
        "minutes of the standup",
    );
    let asked = seen
        .iter()
        .find(|e| e["type"] == "approval")
        .unwrap_or_else(|| panic!("no approval: {run:?}"));
    assert_eq!(asked["name"], LOAD, "{asked}");
    assert_eq!(asked["server"], "notes", "{asked}");
    assert_eq!(asked["arguments"], json!({"skill": "notes:meeting-notes"}));
    assert!(run.stdout.contains("Minutes written."), "{run:?}");
}
