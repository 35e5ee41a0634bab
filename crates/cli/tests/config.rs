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
        "notes: 3 tool(s) in 2 page(s)",
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
        run.stdout.contains("ok    notes: 3 tool(s) in 2 page(s)"),
        "{run:?}"
    );
    assert!(run.stdout.contains("1 error(s)"), "{run:?}");
}

// `config check`: the config is read and checked as every command reads
// it, and summarised, without starting a server (the notes server here
// is a command that does not exist); a gateway's tokens file is checked
// with it, and a principals entry naming none of its tokens fails (a
// misspelt name would leave that caller unrestricted); a config with
// problems fails listing every one.
#[test]
fn config_check_reads_the_config_and_tokens_without_starting_anything() {
    let sb = Sandbox::new();
    let cfg = sb.write(
        "team.json",
        &json!({
            "mcpServers": {
                "notes": {"command": "/no/such/server"},
                "tickets": {"url": "http://127.0.0.1:9/mcp"}
            },
            "permissions": {"allow": ["mcp__notes"]},
            "audit": "audit.jsonl",
            "callerLimits": {"callsPerMinute": 60},
            "principals": {"ci-bot": {"allow": ["mcp__notes__list_notes"], "limits": {"concurrentCalls": 2}}}
        })
        .to_string(),
    );
    let cfg = cfg.to_str().unwrap();
    let tokens = sb.write(
        "tokens.txt",
        "ci-bot ci-bot-token-0123456789\nalice alice-token-9876543210\n",
    );
    let tokens = tokens.to_str().unwrap();
    let run = sb.run(&["--config", cfg, "config", "check", "--tokens-file", tokens]);
    assert_eq!(run.code, 0, "{run:?}");
    for want in [
        "config ok:",
        "servers: notes (stdio), tickets (http)",
        "rules: 1",
        "ci-bot (1 rule; 60 calls a minute, 2 at once)",
        "caller limits: 60 calls a minute, any number at once",
        "tokens ok:",
        "2 names (ci-bot, alice)",
    ] {
        assert!(run.stdout.contains(want), "{want:?} in {}", run.stdout);
    }
    assert!(!run.stdout.contains("token-"), "{}", run.stdout);
    let run = sb.run(&["--config", cfg, "--json", "config", "check"]);
    assert_eq!(run.code, 0, "{run:?}");
    let summary = run.json();
    assert_eq!(summary["servers"][1]["transport"], "http");
    assert_eq!(summary["principals"][0]["limits"]["concurrentCalls"], 2);
    assert_eq!(summary["callerLimits"]["callsPerMinute"], 60);
    assert!(summary.get("tokens").is_none());

    // `config check` of a tokens file holding `tokens`: it fails.
    let failing_with = |tokens: &str| {
        let file = sb.write("other-tokens.txt", tokens);
        let run = sb.run(&[
            "--config",
            cfg,
            "config",
            "check",
            "--tokens-file",
            file.to_str().unwrap(),
        ]);
        assert_eq!(run.code, 1, "{run:?}");
        run.stderr
    };
    // A tokens file without ci-bot: its entry names no one.
    let stderr = failing_with("alice alice-token-9876543210\n");
    assert!(
        stderr.contains("principals.ci-bot names no token in"),
        "{stderr}"
    );
    // A tokens file that does not load, naming the line, not the token.
    let stderr = failing_with("bob tiny-tkn\n");
    assert!(
        stderr.contains("entry 1") && !stderr.contains("tiny-tkn"),
        "{stderr}"
    );
    // Every problem of a broken config.
    let bad = sb.write(
        "bad.json",
        r#"{"mcpServers": {"a": {"command": 5}}, "callerLimits": {"callsPerMinute": 0}}"#,
    );
    let run = sb.run(&["--config", bad.to_str().unwrap(), "config", "check"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("mcpServers.a.command")
            && run.stderr.contains("callerLimits.callsPerMinute"),
        "{run:?}"
    );
    // No config file: nothing to check.
    let run = sb.run(&["config", "check"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("no config file"), "{run:?}");
}

/// A server whose tool has a 200,000-character description and a long
/// title: the model reads them cut, with a note (`tools`), the config's
/// `descriptionLimits` sets the caps, and `doctor` names the offender.
#[test]
fn a_huge_description_is_cut_for_the_model_and_flagged_by_doctor() {
    let sb = Sandbox::new();
    let tools = json!([
        {"name": "huge", "title": "T".repeat(300), "description": "spam ".repeat(40_000),
         "inputSchema": {"type": "object"}},
        {"name": "small", "description": "Finds things.", "inputSchema": {"type": "object"}}
    ]);
    let file = sb.write("tools.json", &tools.to_string());
    let server = json!({"big": {"command": crate::ops::mock_server(),
        "args": ["--tools-file", file.to_str().unwrap()]}});
    let config = sb.config(server.clone(), json!({}));
    let config = config.to_str().unwrap();
    let run = sb.run(&["--config", config, "--json", "tools"]);
    assert_eq!(run.code, 0, "{run:?}");
    let listed = run.json();
    let items = listed
        .as_array()
        .or_else(|| listed["tools"].as_array())
        .unwrap()
        .clone();
    let huge = items
        .iter()
        .find(|t| t["name"] == "mcp__big__huge")
        .unwrap();
    let text = huge["description"].as_str().unwrap();
    assert!(
        text.len() < 2_400,
        "{} characters reach the model",
        text.len()
    );
    assert!(
        text.ends_with(
            "[switchboard: this description was cut to its first 2000 of 199999 characters]"
        ),
        "{}",
        &text[text.len() - 100..]
    );
    assert!(huge["title"].as_str().unwrap().ends_with("… [cut]"));
    let small = items
        .iter()
        .find(|t| t["name"] == "mcp__big__small")
        .unwrap();
    assert!(
        !small["description"]
            .as_str()
            .unwrap()
            .contains("[switchboard:")
    );

    let run = sb.run(&["--config", config, "doctor"]);
    assert!(
        run.stdout.contains(
            "tool \"huge\" has a 199999-character description; the model reads its first 2000"
        ),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("over the 40000 a server may"),
        "{run:?}"
    );
    assert!(run.stdout.contains("300-character title"), "{run:?}");

    // The config sets the caps.
    let config = sb.config(server, json!({"descriptionLimits": {"description": 500}}));
    let run = sb.run(&["--config", config.to_str().unwrap(), "--json", "tools"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("cut to its first 500 of 199999 characters"),
        "{run:?}"
    );
}
