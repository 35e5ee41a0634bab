//! Least privilege in `tools` and the gateway: denied tools are not
//! listed, a changed definition shows its approved text until `pins
//! accept`, and an approval through the gateway is one gate evaluation per
//! round (audited as `asked`, then the answer).

use serde_json::{Value, json};

use crate::util::Sandbox;

/// A lockfile that approved `search` of notes with another description
/// than the demo server's (as after a rug pull).
fn approved_elsewhere(sb: &Sandbox) {
    sb.write(
        "switchboard.lock",
        &json!({
            "version": 1,
            "tools": {"notes": {"search": {
                "sha256": "00",
                "description": "The approved description.",
                "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
                "annotations": null
            }}}
        })
        .to_string(),
    );
}

fn tools_json(sb: &Sandbox, config: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["--config", config, "--json", "tools"];
    args.extend_from_slice(extra);
    let run = sb.run(&args);
    assert_eq!(run.code, 0, "{run:?}");
    run.json().as_array().unwrap().clone()
}

#[test]
fn tools_leaves_out_denied_tools_unless_all() {
    let sb = Sandbox::new();
    let config = sb.config(
        json!({}),
        json!({"permissions": {"deny": ["mcp__notes__read_note"]}}),
    );
    let config = config.to_str().unwrap();
    let names = |tools: &[Value]| -> Vec<String> {
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let model = names(&tools_json(&sb, config, &[]));
    assert!(
        !model.contains(&"mcp__notes__read_note".to_owned()),
        "{model:?}"
    );
    assert!(
        model.contains(&"mcp__notes__search".to_owned()),
        "{model:?}"
    );
    // People are told what is left out.
    let run = sb.run(&["--config", config, "tools"]);
    assert!(!run.stdout.contains("mcp__notes__read_note"), "{run:?}");
    assert!(run.stderr.contains("1 tool(s) denied"), "{run:?}");
    let all = tools_json(&sb, config, &["--all"]);
    let denied = all
        .iter()
        .find(|t| t["name"] == "mcp__notes__read_note")
        .unwrap();
    assert_eq!(denied["status"]["gate"], "deny");
}

// `tools --principal NAME` lists what a gateway lists to that caller: its
// principals rules narrow the model's table; a caller without an entry
// sees all of it.
#[test]
fn tools_for_a_principal_is_what_the_gateway_lists_to_it() {
    let sb = Sandbox::new();
    let config = sb.config(
        json!({}),
        json!({
            "permissions": {"deny": ["mcp__notes__read_note"]},
            "principals": {"ci-bot": {"allow": ["mcp__notes__list_notes", "mcp__notes__read_note"]}}
        }),
    );
    let config = config.to_str().unwrap();
    let names = |extra: &[&str]| -> Vec<String> {
        tools_json(&sb, config, extra)
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    // read_note is denied to everyone; ci-bot may list_notes only.
    assert_eq!(
        names(&["--principal", "ci-bot"]),
        ["mcp__notes__list_notes"]
    );
    let everyone = names(&[]);
    assert_eq!(names(&["--principal", "alice"]), everyone);
    assert!(everyone.len() > 1, "{everyone:?}");
    let run = sb.run(&["--config", config, "tools", "--principal", "ci-bot"]);
    assert_eq!(run.code, 0, "{run:?}");
    let refused = everyone.len() - 1;
    assert!(
        run.stderr
            .contains(&format!("{refused} more tool(s) are not listed to ci-bot")),
        "{run:?}"
    );
    let run = sb.run(&[
        "--config",
        config,
        "tools",
        "--principal",
        "ci-bot",
        "--all",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
}

#[test]
fn tools_shows_the_approved_text_of_a_changed_tool_until_accepted() {
    let sb = Sandbox::new();
    approved_elsewhere(&sb);
    let config = sb.config(json!({}), json!({}));
    let config = config.to_str().unwrap();
    let search = |tools: Vec<Value>| {
        tools
            .into_iter()
            .find(|t| t["name"] == "mcp__notes__search")
            .unwrap()
    };
    let shown = search(tools_json(&sb, config, &[]));
    let description = shown["description"].as_str().unwrap();
    assert!(description.contains("The approved description."), "{shown}");
    assert!(
        shown["title"]
            .as_str()
            .unwrap()
            .contains("changed since approval"),
        "{shown}"
    );
    assert_eq!(shown["status"]["pin"], "changed");
    // People see it in the table too.
    let run = sb.run(&["--config", config, "tools"]);
    assert!(run.stdout.contains("The approved description."), "{run:?}");
    assert!(run.stdout.contains("ask (changed)"), "{run:?}");
    // The reviewer's view shows the server's text now.
    let now = search(tools_json(&sb, config, &["--all"]));
    assert!(
        !now["description"]
            .as_str()
            .unwrap()
            .contains("The approved description.")
    );

    let run = sb.run(&["--config", config, "pins", "accept", "notes"]);
    assert_eq!(run.code, 0, "{run:?}");
    let shown = search(tools_json(&sb, config, &[]));
    assert!(
        !shown["description"]
            .as_str()
            .unwrap()
            .contains("The approved description.")
    );
    assert!(shown["title"].is_null(), "{shown}");
    assert_eq!(shown["status"]["pin"], "pinned");
}
