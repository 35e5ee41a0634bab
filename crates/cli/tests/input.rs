//! Servers' questions and the approval choices, end to end under a real
//! pseudo-terminal with the demo servers: `tickets.create_ticket` asks for
//! a missing priority (elicitation), `tickets.summarize_ticket` asks the
//! client's model (sampling).

use serde_json::{Value, json};

use crate::approval::OnPty;
use crate::util::{Run, Sandbox, Tickets, bin};

const CREATE: &str = "mcp__tickets__create_ticket";
const SUMMARIZE: &str = "mcp__tickets__summarize_ticket";
const FORM_FIELD: &str = "low, normal, high [normal]: ";
const FORM_SEND: &str = "[Y] send it, [d] decline, [c] cancel: ";

/// `call create_ticket` without a priority on the built-in demo: approves
/// the call, answers the priority field with `priority`, then `last` at
/// the send / decline / cancel choice.
fn create_on_terminal(priority: &str, last: &str, expect: &str) -> (i32, String) {
    let sb = Sandbox::new();
    let mut term = OnPty::start(&sb, &["call", CREATE, r#"{"title":"Door squeaks"}"#]);
    let shown = term.wait_for("[N] deny: ");
    // The built-in demo has no file: always-allow is not offered, and the
    // prompt says why.
    assert!(
        shown.contains("no config file to write the rule to"),
        "{shown}"
    );
    assert!(
        shown.contains("[s] allow this tool for the session"),
        "{shown}"
    );
    term.type_line("y");
    // ELIC-07: who asks, and the server's message.
    let shown = term.wait_for(FORM_FIELD);
    assert!(shown.contains("server tickets asks for input"), "{shown}");
    assert!(
        shown.contains("Which priority should the new ticket"),
        "{shown}"
    );
    term.type_line(priority);
    term.wait_for(FORM_SEND);
    term.type_line(last);
    term.finish(expect)
}

// ELIC-07, ELIC-09: an answer that does not fit is asked again; the
// accepted answer reaches the server.
#[test]
fn an_elicitation_is_answered_on_the_terminal() {
    let sb = Sandbox::new();
    let mut term = OnPty::start(&sb, &["call", CREATE, r#"{"title":"Door squeaks"}"#]);
    term.wait_for("[N] deny: ");
    term.type_line("y");
    term.wait_for(FORM_FIELD);
    term.type_line("urgent");
    let shown = term.wait_for("not accepted");
    assert!(
        shown.contains("\"urgent\" is not one of: low, normal, high"),
        "{shown}"
    );
    term.type_line("high");
    let shown = term.wait_for(FORM_SEND);
    assert!(shown.contains(r#"answer: {"priority":"high"}"#), "{shown}");
    term.type_line("");
    let (code, text) = term.finish("Created T-4 [high] Door squeaks");
    assert_eq!(code, 0, "{text}");
}

// ELIC-10: decline and cancel are the protocol's actions; nothing is
// created.
#[test]
fn an_elicitation_declined_or_cancelled_creates_nothing() {
    let (code, text) = create_on_terminal("", "d", "declined to give a priority");
    assert_eq!(code, 5, "{text}");
    let (code, text) = create_on_terminal("low", "c", "cancelled the priority question");
    assert_eq!(code, 5, "{text}");
}

// SAMP-11: the request is shown with the server's alias, approved, then
// answered by the model (the demo sampler while no model is configured).
#[test]
fn a_sampling_request_is_approved_and_answered() {
    let sb = Sandbox::new();
    let mut term = OnPty::start(&sb, &["call", SUMMARIZE, r#"{"id":"T-1"}"#]);
    term.wait_for("[N] deny: ");
    term.type_line("y");
    let shown = term.wait_for("[y] let the model answer, [N] decline: ");
    assert!(
        shown.contains("server tickets asks the model to write a message"),
        "{shown}"
    );
    assert!(shown.contains("Printer on floor 3 jams"), "{shown}");
    assert!(
        shown.contains("answered by: switchboard-demo-sampler"),
        "{shown}"
    );
    assert!(shown.contains("at most 200 tokens"), "{shown}");
    term.type_line("y");
    let (code, text) = term.finish("written by the client's model");
    assert_eq!(code, 0, "{text}");
    // SAMP-11: the answer is shown before it goes back.
    assert!(
        text.contains("the model's answer, sent to tickets: [demo sampler]"),
        "{text}"
    );
    assert!(
        text.contains("written by the client's model switchboard-demo-sampler"),
        "{text}"
    );
}

#[test]
fn a_sampling_request_declined_on_the_terminal_fails_the_call() {
    let sb = Sandbox::new();
    let mut term = OnPty::start(&sb, &["call", SUMMARIZE, r#"{"id":"T-1"}"#]);
    term.wait_for("[N] deny: ");
    term.type_line("y");
    term.wait_for("[N] decline: ");
    term.type_line("n");
    let (code, text) = term.finish("the user declined the sampling request of tickets");
    assert_ne!(code, 0, "{text}");
    assert!(!text.contains("[demo sampler]"), "{text}");
}

/// No terminal and no `--yes`: sampling is declined; with `--yes` it is
/// answered. Elicitation is not declared without a terminal, so the
/// ticket gets the default priority.
#[test]
fn without_a_terminal_sampling_is_declined() {
    let sb = Sandbox::new();
    let (_tickets, config) = tickets_and_model(&sb, json!({"permissions": {"allow": [SUMMARIZE]}}));
    let run = summarize_t1(&sb, &config, &[]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("no terminal to approve it on"),
        "{run:?}"
    );
    let run = summarize_t1(&sb, &config, &["--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Printer jams, floor 3."), "{run:?}");
    let run = sb.run(&["call", CREATE, r#"{"title":"Door squeaks"}"#, "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("Created T-4 [normal] Door squeaks"),
        "{run:?}"
    );
}

/// A config without a model declares no sampling to its servers (the
/// demo sampler answers only on the built-in demo): the notes server sees
/// a client that cannot sample, even with `--yes`.
#[test]
fn without_a_model_sampling_is_not_declared() {
    let sb = Sandbox::new();
    let tickets = Tickets::start(&sb);
    let config = sb.config(
        tickets.entry(),
        json!({"permissions": {"allow": [SUMMARIZE]}}),
    );
    let run = summarize_t1(&sb, config.to_str().unwrap(), &["--yes"]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("needs a client that can sample"),
        "{run:?}"
    );
    assert!(!run.stdout.contains("[demo sampler]"), "{run:?}");
    // The built-in demo still shows sampling, with the demo sampler.
    let run = sb.run(&["call", SUMMARIZE, r#"{"id":"T-1"}"#, "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("[demo sampler]"), "{run:?}");
}

/// Outside `chat`, the config's `"model"` answers sampling: here a script
/// (SAMP-11: approved by `--yes` first).
#[test]
fn the_config_model_answers_sampling_for_call() {
    let sb = Sandbox::new();
    let (_tickets, config) = tickets_and_model(&sb, json!({}));
    let run = summarize_t1(&sb, &config, &["--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Printer jams, floor 3."), "{run:?}");
    assert!(!run.stdout.contains("[demo sampler]"), "{run:?}");
}

/// The tickets demo on a port of its own and a config naming it, with
/// `top` and, as its `"model"`, a script that answers "Printer jams,
/// floor 3.": the server (stopped when dropped) and the config's path.
fn tickets_and_model(sb: &Sandbox, mut top: Value) -> (Tickets, String) {
    let model = sb.script_model("s.jsonl", &[json!({"text": "Printer jams, floor 3."})]);
    top["model"] = json!(model);
    let tickets = Tickets::start(sb);
    let config = sb.config(tickets.entry(), top);
    (tickets, config.to_str().unwrap().to_owned())
}

/// `call` of the tickets demo's summarize tool on T-1 with `config`, and
/// `more`.
fn summarize_t1(sb: &Sandbox, config: &str, more: &[&str]) -> Run {
    let mut args = vec!["--config", config, "call", SUMMARIZE, r#"{"id":"T-1"}"#];
    args.extend_from_slice(more);
    sb.run(&args)
}

/// Always-allow writes the rule into the config file (comments and other
/// keys kept); the next run does not ask; a deny rule still wins over it.
#[test]
fn always_allow_writes_the_config_and_deny_still_wins() {
    let sb = Sandbox::new();
    let text = format!(
        "{{\n  // my servers\n  \"mcpServers\": {{\n    \"notes\": {{\"command\": {}, \"args\": [\"demo-server\", \"notes\"]}}\n  }},\n  \"budgetChars\": 9000\n}}\n",
        json!(bin())
    );
    let path = sb.write("config.jsonc", &text);
    let config = path.to_str().unwrap();
    let args = [
        "--config",
        config,
        "call",
        "mcp__notes__search",
        r#"{"query":"printer"}"#,
    ];
    let mut term = OnPty::start(&sb, &args);
    let shown = term.wait_for("[N] deny: ");
    assert!(
        shown.contains("[a] allow always (adds mcp__notes__search to permissions.allow in"),
        "{shown}"
    );
    term.type_line("a");
    let (code, out) = term.finish("1 note(s) match");
    assert_eq!(code, 0, "{out}");
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("// my servers"), "{written}");
    assert!(written.contains("\"budgetChars\": 9000"), "{written}");
    assert!(written.contains("\"mcp__notes__search\""), "{written}");
    // The next run (no terminal, no --yes) is not asked.
    let run = sb.run(&args);
    assert_eq!(run.code, 0, "{run:?}");
    // A deny rule beside it still wins.
    let denied = written.replacen(
        "\"permissions\": {",
        "\"permissions\": {\n    \"deny\": [\"mcp__notes__search\"],",
        1,
    );
    assert_ne!(denied, written);
    std::fs::write(&path, denied).unwrap();
    let run = sb.run(&args);
    assert_eq!(run.code, 6, "{run:?}");
    assert!(run.stdout.contains("permission rules deny"), "{run:?}");
}
