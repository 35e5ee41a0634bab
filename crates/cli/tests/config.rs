//! Config errors and `doctor`.

use serde_json::json;

use crate::util::Sandbox;

#[test]
fn a_bad_config_exits_1_naming_the_file_and_key() {
    let sb = Sandbox::new();
    let path = sb.write("bad.json", r#"{"mcpServers": {"notes": {"comand": "x"}}}"#);
    let run = sb.run(&["--config", path.to_str().unwrap(), "tools"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("bad.json"), "{run:?}");
    assert!(run.stderr.contains("comand"), "{run:?}");
    let run = sb.run(&["--config", path.to_str().unwrap(), "--json", "servers"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.error_line()["error"]["kind"], "usage");
    let run = sb.run(&["--config", "no-such-file.json", "tools"]);
    assert_eq!(run.code, 1, "{run:?}");
}

#[test]
fn a_project_mcp_json_is_found_in_the_working_directory() {
    let sb = Sandbox::new();
    sb.write(
        ".mcp.json",
        &json!({"mcpServers": {"mine": {"command": crate::util::bin(), "args": ["demo-server", "notes"]}}}).to_string(),
    );
    let run = sb.run(&["--json", "servers"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()[0]["alias"], "mine");
    assert_eq!(run.json().as_array().unwrap().len(), 1);
}

#[test]
fn doctor_passes_on_the_demo() {
    let sb = Sandbox::new();
    let run = sb.run(&["doctor"]);
    assert_eq!(run.code, 0, "{run:?}");
    for want in [
        "notes: started",
        "notes: era modern, protocol 2026-07-28",
        "notes: 4 tool(s) in 2 page(s)",
        "notes: input schemas:",
        "tickets: reached",
        "tickets: auth: none needed",
        "2 servers offer \"search\"",
        "shown to the model as mcp__tickets__r_sum_",
        "0 error(s)",
    ] {
        assert!(run.stdout.contains(want), "{want:?} missing:\n{run:?}");
    }
    let run = sb.run(&["doctor", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()["errors"], 0);
    assert!(run.json()["findings"].as_array().unwrap().len() > 10);
}

#[test]
fn doctor_reports_a_server_that_will_not_start_and_exits_non_zero() {
    let sb = Sandbox::new();
    let config = sb.config(
        json!({"ghost": {"command": "switchboard-no-such-server-binary", "args": ["--x"]}}),
        json!({"permissions": {"allow": ["mcp__notes__search"]}, "unknownThing": 1}),
    );
    // An unknown key is a config error: doctor stops there.
    let run = sb.run(&["--config", config.to_str().unwrap(), "doctor"]);
    assert_eq!(run.code, 1, "{run:?}");
    let config = sb.config(
        json!({"ghost": {"command": "switchboard-no-such-server-binary", "args": ["--x"]}}),
        json!({"permissions": {"allow": ["mcp__notes__search"]}}),
    );
    let run = sb.run(&["--config", config.to_str().unwrap(), "doctor"]);
    assert_eq!(run.code, 4, "{run:?}");
    assert!(
        run.stdout.contains("ERROR ghost: cannot connect"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("switchboard-no-such-server-binary"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("ok    notes: 4 tool(s) in 2 page(s)"),
        "{run:?}"
    );
    assert!(run.stdout.contains("1 error(s)"), "{run:?}");
}
