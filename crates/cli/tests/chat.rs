//! `switchboard chat`: the mock model's event stream, and a scripted
//! session under a pseudo-terminal (approval allowed and denied, a server
//! that is down, a truncated result, Ctrl-C cancelling a call the server
//! sees cancelled, the loop guard); resources and prompts named by the
//! user, and the prompt's line editor with Tab completion (the terminal's
//! mode checked from the test's side of the pty).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::approval::OnPty;
use crate::ops::mock_server;
use crate::util::{Sandbox, Tickets, empty_port, json_lines};

#[test]
fn the_mock_model_runs_its_conversation_on_the_demo_as_json_events() {
    let sb = Sandbox::new();
    let run = sb.run(&[
        "chat",
        "--model",
        "mock",
        "-p",
        "What do we know about printers?",
        "--json",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let events = json_lines(&run.stdout);
    let calls: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        calls,
        [
            "mcp__notes__list_notes",
            "mcp__notes__search",
            "mcp__tickets__search",
            "mcp__notes__read_note",
            "mcp__archive__search",
        ],
        "{run:?}"
    );
    let result = |name: &str| {
        events
            .iter()
            .find(|e| e["type"] == "tool_result" && e["name"] == name)
            .unwrap_or_else(|| panic!("no result of {name}"))
    };
    // No terminal and no --yes: the gate's question is denied, and says so.
    let approval = events.iter().find(|e| e["type"] == "approval").unwrap();
    assert_eq!(approval["name"], "mcp__notes__search");
    assert_eq!(approval["decision"], "deny");
    assert_eq!(result("mcp__notes__search")["outcome"], "denied");
    // tickets' search is allowed by the demo's rules, and reports progress.
    assert_eq!(result("mcp__tickets__search")["is_error"], false);
    assert!(events.iter().any(|e| e["type"] == "progress"));
    // The long note comes back as its head and tail within the budget,
    // inside the markers, with a handle to read the rest.
    let note = result("mcp__notes__read_note")["text"].as_str().unwrap();
    assert!(note.contains("over the budget of 8000"), "{note}");
    assert!(note.contains("mcp__switchboard__read_result"), "{note}");
    assert!(
        note.starts_with("<untrusted-text source=\"notes\""),
        "{note}"
    );
    // The server that is down: the model is told why.
    let down = result("mcp__archive__search");
    assert_eq!(down["is_error"], true);
    assert!(
        down["text"].as_str().unwrap().contains("archive is down"),
        "{down}"
    );
    let n = events.len();
    assert_eq!(events[n - 2]["type"], "usage");
    assert_eq!(events[n - 2]["model_calls"], 5);
    assert_eq!(events[n - 1], json!({"type": "done", "stop": "end_turn"}));
}

#[test]
fn mock_env_picks_the_mock_model() {
    let sb = Sandbox::new();
    let mut cmd = sb.cmd(&["chat", "-p", "hi", "--json", "--yes"]);
    cmd.env("MOCK", "1");
    let run = crate::util::run(cmd);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("\"decision\":\"allow_once\""),
        "{run:?}"
    );
}

#[test]
fn no_model_is_a_usage_error_that_says_what_to_do() {
    let sb = Sandbox::new();
    let run = sb.run(&["chat", "-p", "hi"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("--model mock"), "{run:?}");
    let mut cmd = sb.cmd(&["chat", "-p", "hi", "--model", "anthropic:claude-x"]);
    cmd.env_remove("ANTHROPIC_API_KEY");
    let run = crate::util::run(cmd);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("set ANTHROPIC_API_KEY"), "{run:?}");
}

#[test]
fn the_config_names_the_model_and_a_script_error_fails_the_prompt() {
    let sb = Sandbox::new();
    let model = sb.script_model(
        "s.jsonl",
        &[json!({"expect": [{"contains": "nothing"}], "text": "never"})],
    );
    let config = sb.config(json!({}), json!({"model": model}));
    let run = sb.run(&[
        "--config",
        config.to_str().unwrap(),
        "chat",
        "-p",
        "hi",
        "--json",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    let events = json_lines(&run.stdout);
    assert_eq!(events[0]["type"], "error");
    assert!(
        events[0]["message"]
            .as_str()
            .unwrap()
            .contains("s.jsonl, line 1")
    );
}

/// A server's sampling request during a chat is answered by the chat's
/// own model once approved (`--yes` here: no terminal), and declined when
/// no one can approve it (SAMP-11).
#[test]
fn a_sampling_request_is_answered_by_the_chat_model_once_approved() {
    let sb = Sandbox::new();
    let (run, seen) = sb.scripted_chat(
        &[
            json!({"tool_calls": [{"name": "mcp__tickets__summarize_ticket", "arguments": {"id": "T-1"}}]}),
            json!({"text": "The floor 3 printer keeps jamming."}),
            json!({"expect": [{"is_error": false, "contains": "The floor 3 printer keeps jamming."}], "text": "done"}),
        ],
        "sum up T-1",
    );
    let result = seen
        .iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool result: {run:?}"));
    let text = result["text"].as_str().unwrap();
    assert!(
        text.contains("written by the client's model script:"),
        "{text}"
    );
    assert!(
        text.contains("The floor 3 printer keeps jamming."),
        "{text}"
    );

    // Without --yes and without a terminal, nobody can approve it.
    let model = sb.script_model(
        "d.jsonl",
        &[
            json!({"tool_calls": [{"name": "mcp__tickets__summarize_ticket", "arguments": {"id": "T-1"}}]}),
            json!({"expect": [{"is_error": true}], "text": "declined"}),
        ],
    );
    let tickets = Tickets::start(&sb);
    let config = sb.config(
        tickets.entry(),
        json!({"permissions": {"allow": ["mcp__tickets__summarize_ticket"]}}),
    );
    let run = sb.run(&[
        "--config",
        config.to_str().unwrap(),
        "chat",
        "--model",
        &model,
        "-p",
        "sum up T-1",
        "--json",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let seen = json_lines(&run.stdout);
    let result = seen.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["is_error"], true, "{run:?}");
}

/// `chat` on a terminal with `config`, driven by the `script:` model
/// `model`.
fn chat_on_pty(sb: &Sandbox, config: &std::path::Path, model: &str) -> OnPty {
    OnPty::start(
        sb,
        &[
            "--config",
            config.to_str().unwrap(),
            "chat",
            "--model",
            model,
        ],
    )
}

/// `chat` on a terminal with the mock server and the scripted answers of
/// the resource and prompt tests.
fn offers_chat_on_pty(sb: &Sandbox) -> OnPty {
    chat_on_pty(sb, &mock_config(sb), &offers_script(sb))
}

/// Waits until `path` holds `needle`.
fn wait_in_file(path: &std::path::Path, needle: &str) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{needle:?} never reached {}:\n{text}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_scripted_session_on_a_terminal() {
    let sb = Sandbox::new();
    let mock = mock_server();
    let log = sb.path().join("slow.log");
    let config = sb.config(
        json!({
            "archive": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", empty_port())},
            "slow": {"command": mock, "args": ["--log", log]},
        }),
        json!({"permissions": {"allow": ["mcp__slow__echo", "mcp__slow__never"]}}),
    );
    let model = sb.script_model(
        "session.jsonl",
        &[
            // Turn 1: allowed at the prompt, denied at the prompt, a server
            // that is down, a result cut to the budget.
            json!({"text": "Searching.", "tool_calls": [{"name": "mcp__notes__search", "arguments": {"query": "printer"}}]}),
            json!({"expect": [{"is_error": false, "contains": "standup"}], "tool_calls": [{"name": "mcp__notes__search", "arguments": {"query": "release"}}]}),
            json!({"expect": [{"is_error": true, "contains": "declined"}], "tool_calls": [{"name": "mcp__archive__search", "arguments": {}}]}),
            json!({"expect": [{"is_error": true, "contains": "archive is down"}], "tool_calls": [{"name": "mcp__notes__read_note", "arguments": {"id": "handbook"}}]}),
            json!({"expect": [{"is_error": false, "contains": "over the budget of 8000"}], "text": "First turn done."}),
            // Turn 2: a call that never answers, cancelled with Ctrl-C.
            json!({"tool_calls": [{"name": "mcp__slow__never", "arguments": {}}]}),
            // Turn 3: the model was told; then the same call three times.
            json!({"expect": [{"is_error": true, "contains": "cancelled"}], "tool_calls": [{"name": "mcp__slow__echo", "arguments": {"text": "again"}}]}),
            json!({"tool_calls": [{"name": "mcp__slow__echo", "arguments": {"text": "again"}}]}),
            json!({"tool_calls": [{"name": "mcp__slow__echo", "arguments": {"text": "again"}}]}),
        ],
    );
    let mut term = chat_on_pty(&sb, &config, &model);
    term.wait_for("> ");
    term.type_line("look for printers");
    let shown = term.wait_for("[N] deny: ");
    assert!(shown.contains("\"query\": \"printer\""), "{shown}");
    assert!(shown.contains("→ mcp__notes__search [notes]"), "{shown}");
    term.type_line("y");
    term.wait_for("\"query\": \"release\"");
    term.type_line("n");
    term.wait_for("\"id\": \"handbook\"");
    term.type_line("y");
    // The turn's usage line comes after its last text.
    let text = term.wait_for("[tokens:");
    assert!(text.contains("First turn done."), "{text}");
    assert!(
        text.contains("✗ transport Server archive is down"),
        "{text}"
    );

    term.type_line("now hang");
    term.wait_for("→ mcp__slow__never [slow]");
    // The call is on its way to the server before Ctrl-C.
    wait_in_file(&log, "\"name\":\"never\"");
    term.interrupt();
    term.wait_for("cancelled; Ctrl-C again to quit");
    let seen = wait_in_file(&log, "notifications/cancelled");
    assert!(seen.contains("notifications/cancelled"), "{seen}");
    // The session goes on.
    term.type_line("try echo");
    let text = term.wait_for("3 times in a row");
    assert!(text.contains("✗ loop_guard"), "{text}");
    // Ctrl-C at the prompt quits.
    term.wait_for("> ");
    term.interrupt();
    let (code, text) = term.finish("3 times in a row");
    assert_eq!(code, 0, "{text}");
}

/// Ctrl-C while the gate's question waits at the prompt withdraws the
/// question at once: the call ends as cancelled, and the line typed next
/// goes to the chat prompt. (A blocking read left waiting for the
/// withdrawn question used to swallow it: a one-character line never
/// reached the chat prompt.)
#[test]
fn ctrl_c_at_an_approval_question_withdraws_it() {
    let sb = Sandbox::new();
    let config = sb.config(json!({}), json!({}));
    let model = sb.script_model(
        "withdrawn.jsonl",
        &[
            json!({"tool_calls": [{"name": "mcp__notes__search", "arguments": {"query": "printer"}}]}),
            json!({"expect": [{"is_error": true, "contains": "cancelled"}], "text": "Second turn done."}),
        ],
    );
    let mut term = chat_on_pty(&sb, &config, &model);
    term.wait_for("> ");
    term.type_line("look for printers");
    term.wait_for("[N] deny: ");
    term.interrupt();
    term.wait_for("cancelled; Ctrl-C again to quit");
    // The cancelled turn ends with its token count.
    term.wait_for("[tokens:");
    term.type_line("x");
    let text = term.wait_for("Second turn done.");
    assert!(text.contains("✗ cancelled"), "{text}");
    // Back at the prompt, where Ctrl-C quits.
    term.wait_for("Second turn done.\r\n[tokens: 0 in, 0 out; 1 model call]\r\n> ");
    term.interrupt();
    let (code, text) = term.finish("Second turn done.");
    assert_eq!(code, 0, "{text}");
}

/// The scripted answers of the resource and prompt tests: each turn checks
/// what reached the model in the user's message.
fn offers_script(sb: &Sandbox) -> String {
    sb.script_model(
        "offers.jsonl",
        &[
            json!({"user_contains": [
                "summarize this @mock:mock://a",
                "[the user attached the resource mock:mock://a]",
                "<untrusted-text source=\"mock\">\ncontents of mock://a\n</untrusted-text>",
            ], "text": "Attachment seen."}),
            json!({"user_contains": [
                "[the user ran the prompt mock:greet]",
                "<untrusted-text source=\"mock\">\nhello Ada Lovelace\n</untrusted-text>",
            ], "text": "Prompt seen."}),
            json!({"user_contains": [
                "<untrusted-text source=\"mock\">\ncontents of mock://item/7\n</untrusted-text>",
            ], "text": "Template seen."}),
        ],
    )
}

fn mock_config(sb: &Sandbox) -> std::path::PathBuf {
    let mock = mock_server();
    sb.config(json!({"mock": {"command": mock}}), json!({}))
}

// Issue 39, item 6: resources and prompts are chosen by the user. On a
// terminal, /resources and /prompts list them, @ALIAS:URI attaches a
// resource's text (marked as the server's) to the message, /ALIAS:PROMPT
// sends a prompt's messages, and a bad name is said without sending.
#[test]
fn the_user_attaches_resources_and_runs_prompts_on_a_terminal() {
    let sb = Sandbox::new();
    let mut term = offers_chat_on_pty(&sb);
    term.wait_for("> ");
    term.type_line("/resources");
    let shown = term.wait_for("Attach one to your next message");
    assert!(shown.contains("@mock:mock://a  a (text/plain)"), "{shown}");
    assert!(
        shown.contains("@mock:mock://item/{id}  item (a template"),
        "{shown}"
    );
    term.type_line("/prompts");
    let shown = term.wait_for("Run one with /ALIAS:PROMPT");
    assert!(shown.contains("/mock:greet who*=…"), "{shown}");
    term.type_line("summarize this @mock:mock://a");
    term.wait_for("Attachment seen.");
    term.type_line("/mock:greet who='Ada Lovelace'");
    term.wait_for("Prompt seen.");
    // A URI a template matches is read too.
    term.type_line("and @mock:mock://item/7");
    term.wait_for("Template seen.");
    term.type_line("what about @mock:other://nope");
    term.wait_for("mock offers no resource other://nope; /resources lists");
    term.type_line("/mock:nope");
    term.wait_for("mock offers no prompt nope; /prompts lists");
    term.wait_for("> ");
    term.interrupt();
    let (code, text) = term.finish("no prompt nope");
    assert_eq!(code, 0, "{text}");
    // Nothing else reached the model: the script has no turn left unused
    // and none was played past its end.
    assert!(!text.contains("the script has no more turns"), "{text}");
}

// The same with -p: the prompt line may name a resource or a prompt.
#[test]
fn a_one_shot_prompt_can_attach_a_resource_or_run_a_prompt() {
    let sb = Sandbox::new();
    let config = mock_config(&sb);
    let config = config.to_str().unwrap();
    let model = offers_script(&sb);
    let run = sb.run(&[
        "--config",
        config,
        "chat",
        "--model",
        &model,
        "-p",
        "summarize this @mock:mock://a",
        "--json",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Attachment seen."), "{run:?}");
    let run = sb.run(&[
        "--config", config, "chat", "--model", &model, "-p", "/prompts",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("/mock:greet who*=…"), "{run:?}");
    let run = sb.run(&[
        "--config",
        config,
        "chat",
        "--model",
        &model,
        "-p",
        "/mock:greet Ada",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("\"Ada\" is not key=value"), "{run:?}");
}

/// The keys of the line editor.
const TAB: &str = "\t";
const CTRL_U: &str = "\x15";
const CTRL_D: &str = "\x04";
const BACKSPACE: &str = "\x7f";
const LEFT: &str = "\x1b[D";
const RIGHT: &str = "\x1b[C";

// Issue 39, item 6: URIs are completed at the chat prompt. On a terminal
// the prompt's line is edited in place: Tab completes `@` aliases, the
// URIs of a server's resources, a template's literal and (through the
// server's completion/complete) its variable, and `/` commands and
// prompts; several candidates are listed; the line typed with the
// completions reaches the model. Backspace, Ctrl-U and the arrows edit
// the line; the terminal is raw only while a line is edited and is back
// in line mode when the chat ends (Ctrl-D).
#[test]
fn tab_completes_resources_prompts_and_commands_at_the_chat_prompt() {
    let sb = Sandbox::new();
    let mock = mock_server();
    let log = sb.path().join("mock.log");
    let config = sb.config(
        json!({"mock": {"command": mock, "args": ["--log", log]}}),
        json!({}),
    );
    let model = sb.script_model(
        "tab.jsonl",
        &[
            json!({"user_contains": [
                "read @mock:mock://item/albert",
                "[the user attached the resource mock:mock://item/albert]",
                "contents of mock://item/albert",
            ], "text": "Template seen."}),
            json!({"user_contains": [
                "[the user ran the prompt mock:greet]",
                "hello Ada",
            ], "text": "Prompt seen."}),
        ],
    );
    let mut term = chat_on_pty(&sb, &config, &model);
    term.wait_for("> ");
    assert!(
        !term.in_line_mode(),
        "the prompt's line is edited in raw mode"
    );

    // An alias; then the server's URIs, listed, their common start put in.
    term.type_keys(&format!("read @m{TAB}"));
    term.wait_for("> read @mock:");
    term.type_keys(TAB);
    let shown = term.wait_for(
        "\r\n@mock:mock://a\r\n@mock:mock://ask\r\n@mock:mock://b\r\n@mock:mock://item/\r\n",
    );
    assert!(shown.contains("Tab completes them."), "{shown}");
    term.wait_for("> read @mock:mock://");
    // A template's literal, then its variable from completion/complete.
    term.type_keys(&format!("i{TAB}"));
    term.wait_for("> read @mock:mock://item/");
    term.type_keys(&format!("al{TAB}"));
    term.wait_for("\r\n@mock:mock://item/albert\r\n@mock:mock://item/alice\r\n");
    // Tab again on the same line: the server is not asked again.
    term.type_keys(TAB);
    term.wait_for(
        "@mock:mock://item/alice\r\n\r> read @mock:mock://item/al\x1b[K\r\n@mock:mock://item/albert",
    );
    term.type_keys(&format!("b{TAB}"));
    term.wait_for("> read @mock:mock://item/albert ");
    term.type_keys("\n");
    term.wait_for("Template seen.");

    // A unique start completes to the whole URI; Ctrl-U clears the line
    // (else the resource would be read with the prompt's line).
    term.type_keys(&format!("@mock:mock://as{TAB}"));
    term.wait_for("> @mock:mock://ask ");
    term.type_keys(CTRL_U);
    // `/`: the commands and the prompts.
    term.type_keys(&format!("/{TAB}"));
    term.wait_for("\r\n/mock:greet\r\n/prompts\r\n/resources\r\n");
    term.type_keys(&format!("mo{TAB}"));
    term.wait_for("> /mock:greet ");
    term.type_keys(&format!("who=Adx{BACKSPACE}a\n"));
    term.wait_for("Prompt seen.");

    // The arrows move the cursor: "/resoces" becomes "/resources".
    term.type_keys(&format!("/resoces{LEFT}{LEFT}{LEFT}ur{RIGHT}\n"));
    let shown = term.wait_for("Attach one to your next message");
    assert!(shown.contains("@mock:mock://a  a (text/plain)"), "{shown}");
    // Nothing to complete: the bell, and the line stays.
    term.type_keys(&format!("@nobody{TAB}"));
    term.wait_for("\x07");
    term.type_keys(CTRL_U);

    // A new line asks the server anew (its values may have changed).
    term.type_keys(&format!("@mock:mock://item/al{TAB}"));
    term.wait_for("> @mock:mock://item/al\x1b[K\r\n@mock:mock://item/albert");
    term.type_keys(CTRL_U);
    let asked = wait_in_file(&log, "\"value\":\"al\"}");
    let values: Vec<&str> = asked
        .lines()
        .filter(|l| l.contains("\"completion/complete\""))
        .map(|l| {
            let at = l.find("\"value\":").unwrap();
            &l[at..l[at..].find('}').unwrap() + at]
        })
        .collect();
    assert_eq!(
        values,
        ["\"value\":\"al\"", "\"value\":\"alb\"", "\"value\":\"al\""],
        "{asked}"
    );

    // Ctrl-D on the empty line ends the chat; the terminal is back in
    // line mode.
    term.type_keys(CTRL_D);
    let status = term.wait_exit();
    let text = term.wait_for("Prompt seen.");
    assert_eq!(status.code(), Some(0), "{text}");
    assert!(!text.contains("the script has no more turns"), "{text}");
    assert!(term.in_line_mode(), "the terminal was left in raw mode");
}

// Issue 39, item 6, with the line editor: the gate's approval question
// during a chat reads in the terminal's line mode (echoed, as without the
// editor), and the next prompt is edited in raw mode again; Ctrl-C at the
// prompt quits and leaves the terminal in line mode.
#[test]
fn an_approval_during_a_chat_reads_in_line_mode_between_edited_prompts() {
    let sb = Sandbox::new();
    let config = sb.config(json!({}), json!({}));
    let model = sb.script_model(
        "approve.jsonl",
        &[
            json!({"tool_calls": [{"name": "mcp__notes__search", "arguments": {"query": "printer"}}]}),
            json!({"expect": [{"is_error": false}], "text": "Search done."}),
        ],
    );
    let mut term = chat_on_pty(&sb, &config, &model);
    term.wait_for("> ");
    assert!(!term.in_line_mode());
    term.type_keys(&format!("look for printers{LEFT}{RIGHT}\n"));
    term.wait_for("[N] deny: ");
    assert!(
        term.in_line_mode(),
        "the approval question must read in line mode"
    );
    term.type_line("y");
    // The terminal echoed the answer.
    term.wait_for("[N] deny: y\r\n");
    term.wait_for("Search done.\r\n[tokens: 0 in, 0 out; 2 model calls]\r\n> ");
    assert!(!term.in_line_mode());
    term.interrupt();
    let status = term.wait_exit();
    let text = term.wait_for("Search done.");
    assert_eq!(status.code(), Some(0), "{text}");
    assert!(term.in_line_mode(), "the terminal was left in raw mode");
}

// A chat stopped by SIGTERM while a line is edited puts the terminal back
// in line mode before it exits.
#[test]
fn sigterm_at_the_edited_prompt_puts_the_terminal_back() {
    let sb = Sandbox::new();
    let mut term = offers_chat_on_pty(&sb);
    term.wait_for("> ");
    term.type_keys("half a line");
    term.wait_for("> half a line");
    assert!(!term.in_line_mode());
    term.terminate();
    let status = term.wait_exit();
    assert!(term.in_line_mode(), "the terminal was left in raw mode");
    // As a shell reports a process SIGTERM stopped.
    assert_eq!(status.code(), Some(143));
}
