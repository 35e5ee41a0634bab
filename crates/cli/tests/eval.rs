//! `switchboard eval`: the demo set with the offline keyword selector,
//! JUnit and JSON output, wrong selectors and the assertion check,
//! baselines, thresholds, and the gate against the approved pins.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::util::{Run, Sandbox};

/// The repository's starter set.
pub(crate) fn demo_set() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../evals/demo.json")
        .display()
        .to_string()
}

/// A copy of the demo set with one case's expectation changed so that the
/// keyword selector fails it.
fn broken_demo_set(sb: &Sandbox) -> String {
    let mut set: Value =
        serde_json::from_str(&std::fs::read_to_string(demo_set()).unwrap()).unwrap();
    for case in set["cases"].as_array_mut().unwrap() {
        if case["id"] == "read-note-by-id" {
            case["expect"]["arguments"] = json!({"exact": {"id": "welcome"}});
        }
    }
    sb.write("broken.json", &set.to_string())
        .display()
        .to_string()
}

fn rate(report: &Value, category: &str) -> f64 {
    report["categories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["category"] == category)
        .unwrap()["rate"]
        .as_f64()
        .unwrap()
}

#[test]
fn the_demo_set_passes_offline_with_the_mock_selector() {
    let sb = Sandbox::new();
    let set = demo_set();
    let run = sb.run(&["eval", &set, "--model", "mock", "--junit", "junit.xml"]);
    assert_eq!(run.code, 0, "{run:?}");
    for line in [
        "happy     4      4/4     100.0%",
        "edge      3      3/3     100.0%",
        "trap      3      3/3     100.0%",
        "score (weighted): 100.0%",
    ] {
        assert!(run.stdout.contains(line), "{line}\n{run:?}");
    }
    let junit = std::fs::read_to_string(sb.path().join("junit.xml")).unwrap();
    assert!(junit.starts_with("<?xml"), "{junit}");
    assert!(
        junit.contains(r#"<testsuites name="switchboard eval" tests="10" failures="0" errors="0""#),
        "{junit}"
    );
    assert_eq!(junit.matches("<testcase ").count(), 10);

    let run = sb.run(&["eval", &set, "--model", "mock", "--repeat", "2", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let report = &run.json()["report"];
    assert_eq!(report["repeat"], 2);
    for c in ["happy", "edge", "trap"] {
        assert_eq!(rate(report, c), 1.0, "{c}");
    }
    assert!(
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["flaky"] == false)
    );
}

#[test]
fn wrong_selectors_fail_the_other_direction_and_the_demo_set_can_fail() {
    let sb = Sandbox::new();
    let set = demo_set();
    let run = sb.run(&["eval", &set, "--selector", "never", "--json"]);
    assert_eq!(run.code, 1, "{run:?}");
    let report = &run.json()["report"];
    assert_eq!(rate(report, "happy"), 0.0);
    assert_eq!(rate(report, "edge"), 0.0);
    assert_eq!(rate(report, "trap"), 1.0);
    let run = sb.run(&[
        "eval",
        &set,
        "--selector",
        "always:mcp__notes__read_note",
        "--json",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    let report = &run.json()["report"];
    assert_eq!(rate(report, "trap"), 0.0);
    // Even the cases that expect read_note fail: the decoy id is wrong.
    assert_eq!(rate(report, "happy"), 0.0);

    let run = sb.run(&["eval", &set, "--check-assertions"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("10 case(s) checked"), "{run:?}");
    assert!(!run.stdout.contains("BROKEN"), "{run:?}");

    // A case written with a permissive matcher cannot fail: it is flagged.
    let loose = sb.write(
        "loose.json",
        &json!({"cases": [
            {"id": "loose", "category": "happy", "utterance": "search my notes for printer",
             "expect": {"tool": "mcp__notes__search", "arguments": {"fields": {"query": {"present": true}}}}},
            {"id": "tight", "category": "trap", "utterance": "thanks", "expect": {"noTool": true}}
        ]})
        .to_string(),
    );
    let run = sb.run(&["eval", loose.to_str().unwrap(), "--check-assertions"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.contains(
            "BROKEN  loose (happy): passes under always:mcp__notes__search with decoy arguments"
        ),
        "{run:?}"
    );
    assert!(run.stdout.contains("ok      tight (trap)"), "{run:?}");
    assert!(run.stderr.contains("1 case(s) cannot fail"), "{run:?}");
}

#[test]
fn baselines_and_thresholds_decide_the_exit() {
    let sb = Sandbox::new();
    let run = sb.run(&[
        "eval",
        &demo_set(),
        "--model",
        "mock",
        "--save-baseline",
        "base.json",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.path().join("base.json")).unwrap())
            .unwrap();
    assert_eq!(
        saved["cases"]["read-note-by-id"],
        json!({"category": "happy", "passed": 1, "runs": 1})
    );

    let broken = broken_demo_set(&sb);
    let run = sb.run(&[
        "eval",
        &broken,
        "--model",
        "mock",
        "--baseline",
        "base.json",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("read-note-by-id  REGRESSION  pass (1/1)  fail (0/1)"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains(
            "read-note-by-id  happy     mcp__notes__read_note (exactly {\"id\":\"welcome\"})"
        ),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("below the threshold: happy 75.0% < 90.0%; 1 case(s) regressed"),
        "{run:?}"
    );
    // A lower bar passes the thresholds, but the regression still fails.
    let run = sb.run(&["eval", &broken, "--model", "mock", "--min", "happy=0.75"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = sb.run(&[
        "eval",
        &broken,
        "--model",
        "mock",
        "--min",
        "happy=0.75",
        "--baseline",
        "base.json",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    let run = sb.run(&["eval", &broken, "--model", "mock", "--min", "happy=75"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("between 0 and 1"), "{run:?}");
}

#[test]
fn against_pins_shows_the_cases_a_description_change_broke() {
    let sb = Sandbox::new();
    let config = sb.config(json!({}), json!({}));
    let config = config.to_str().unwrap();
    let run = sb.run(&["--config", config, "pins", "accept", "notes"]);
    assert_eq!(run.code, 0, "{run:?}");
    approve_an_older_list_notes(&sb);
    let cases = sb.write("cases.json", &overview_and_search_cases().to_string());
    let cases = cases.to_str().unwrap();
    let run = against_pins(&sb, config, cases, &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("Tools changed since approval: mcp__notes__list_notes"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("notes-overview  REGRESSION  pass (1/1)  fail (0/1)"),
        "{run:?}"
    );
    assert!(run.stdout.contains("1 case(s) got worse"), "{run:?}");
    assert!(
        run.stderr.contains("break 1 case(s): notes-overview"),
        "{run:?}"
    );
    let run = against_pins(&sb, config, cases, &["--json"]);
    let comparison = run.json();
    assert_eq!(comparison["broken"][0]["id"], "notes-overview", "{run:?}");
    assert_eq!(rate(&comparison["approved"], "happy"), 1.0);
    assert_eq!(rate(&comparison["now"], "happy"), 0.5);
    // The eval approved nothing.
    assert_eq!(pin_state(&sb, config, "mcp__notes__list_notes"), "changed");

    // Once accepted there is nothing to compare: one plain run.
    sb.run(&[
        "--config",
        config,
        "pins",
        "accept",
        "mcp__notes__list_notes",
    ]);
    let run = against_pins(&sb, config, cases, &["--min", "happy=0.5"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("No tool differs from its approved definition"),
        "{run:?}"
    );
}

#[test]
fn bad_case_files_and_missing_models_are_clear_errors() {
    let sb = Sandbox::new();
    let bad = sb.write(
        "bad.json",
        &json!({"cases": [{"id": "t", "category": "trap", "utterance": "hi", "expect": {"tool": "x"}}]}).to_string(),
    );
    let run = sb.run(&["eval", bad.to_str().unwrap(), "--model", "mock"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("bad.json: case t: a trap case expects no tool"),
        "{run:?}"
    );
    let run = sb.run(&["eval", &demo_set()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("eval needs a model"), "{run:?}");
    let run = sb.run(&["eval", "--model", "mock"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("no case files"), "{run:?}");
    let run = sb.run(&["eval", &demo_set(), "--selector", "sometimes"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("always:TOOL"), "{run:?}");
}

/// A sandbox whose config runs `cases` (with the keyword selector) before
/// `pins accept`, whose lockfile approved a `list_notes` that said it
/// gives a summary: what the notes server serves now is a change.
fn gated_sandbox(cases: Value) -> (Sandbox, String) {
    let sb = Sandbox::new();
    sb.write("cases.json", &cases.to_string());
    let config = sb.config(
        json!({}),
        json!({"evals": {"files": ["cases.json"], "model": "mock"}}),
    );
    let config = config.to_str().unwrap().to_owned();
    // The first mount pins every tool.
    let run = sb.run(&["--config", &config, "pins", "list"]);
    assert_eq!(run.code, 0, "{run:?}");
    approve_an_older_list_notes(&sb);
    (sb, config)
}

/// Rewrites the sandbox's lockfile as if the approved `list_notes` said
/// it gives a summary: what the notes server serves now does not (the
/// lockfile stands in for the older server).
fn approve_an_older_list_notes(sb: &Sandbox) {
    let lockfile = sb.path().join("switchboard.lock");
    let mut lock: Value =
        serde_json::from_str(&std::fs::read_to_string(&lockfile).unwrap()).unwrap();
    let entry = &mut lock["tools"]["notes"]["list_notes"];
    entry["description"] = json!("A summary of every note: id, title and length.");
    entry["sha256"] = json!("0000");
    std::fs::write(&lockfile, lock.to_string()).unwrap();
}

/// `eval CASES --model mock --against-pins` with `config`, and `more`.
fn against_pins(sb: &Sandbox, config: &str, cases: &str, more: &[&str]) -> Run {
    let mut args = vec![
        "--config",
        config,
        "eval",
        cases,
        "--model",
        "mock",
        "--against-pins",
    ];
    args.extend_from_slice(more);
    sb.run(&args)
}

fn overview_and_search_cases() -> Value {
    json!({"cases": [
        {"id": "notes-overview", "category": "happy", "utterance": "Give me an overview of my notes",
         "expect": {"tool": "mcp__notes__list_notes"}},
        {"id": "notes-search", "category": "happy", "utterance": "Search my notes for the printer",
         "expect": {"tool": "mcp__notes__search", "arguments": {"fields": {"query": {"regex": "printer"}}}}}
    ]})
}

fn pin_state(sb: &Sandbox, config: &str, name: &str) -> Value {
    let run = sb.run(&["--config", config, "--json", "pins", "list"]);
    run.json()
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap()["state"]
        .clone()
}

// Issue 39, item 4: with `evals` in the config, `pins accept` runs them
// against the approved and the new definitions and refuses a regression.
#[test]
fn pins_accept_refuses_a_change_that_breaks_an_eval_case() {
    let (sb, config) = gated_sandbox(overview_and_search_cases());
    let run = sb.run(&["--config", &config, "pins", "accept", "notes"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(
            "pins accept refused: the new definitions of mcp__notes__list_notes break 1 eval case(s) \
             that pass with the approved ones: notes-overview"
        ),
        "{run:?}"
    );
    assert!(run.stderr.contains("--force"), "{run:?}");
    assert!(
        run.stderr
            .contains("notes-overview  REGRESSION  pass (1/1)  fail (0/1)"),
        "{run:?}"
    );
    assert!(!run.stdout.contains("accepted"), "{run:?}");
    assert_eq!(pin_state(&sb, &config, "mcp__notes__list_notes"), "changed");
    // Naming the tool is gated the same way.
    let run = sb.run(&[
        "--config",
        &config,
        "pins",
        "accept",
        "mcp__notes__list_notes",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(pin_state(&sb, &config, "mcp__notes__list_notes"), "changed");
}

#[test]
fn pins_accept_force_accepts_despite_the_regression() {
    let (sb, config) = gated_sandbox(overview_and_search_cases());
    let run = sb.run(&["--config", &config, "pins", "accept", "notes", "--force"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("break 1 eval case(s)") && run.stderr.contains("accepting anyway"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("accepted mcp__notes__list_notes"),
        "{run:?}"
    );
    assert_eq!(pin_state(&sb, &config, "mcp__notes__list_notes"), "pinned");
}

#[test]
fn pins_accept_goes_through_when_no_case_regresses() {
    // Only the search case: the list_notes change breaks nothing.
    let (sb, config) = gated_sandbox(json!({"cases": [overview_and_search_cases()["cases"][1]]}));
    let run = sb.run(&["--config", &config, "pins", "accept", "notes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("Tools changed since approval: mcp__notes__list_notes"),
        "the gate ran: {run:?}"
    );
    assert!(
        run.stdout.contains("accepted mcp__notes__list_notes"),
        "{run:?}"
    );
    assert_eq!(pin_state(&sb, &config, "mcp__notes__list_notes"), "pinned");
}

#[test]
fn pins_accept_without_evals_accepts_as_before_and_a_broken_gate_refuses() {
    let (sb, config) = gated_sandbox(overview_and_search_cases());
    // A gate that cannot run (its case file is gone) refuses too.
    std::fs::remove_file(sb.path().join("cases.json")).unwrap();
    let run = sb.run(&["--config", &config, "pins", "accept", "notes"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("the eval gate cannot run"), "{run:?}");
    // Without `evals` nothing runs.
    let plain = sb.config(json!({}), json!({}));
    let run = sb.run(&[
        "--config",
        plain.to_str().unwrap(),
        "pins",
        "accept",
        "notes",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        !run.stderr.contains("Tools changed since approval"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("accepted mcp__notes__list_notes"),
        "{run:?}"
    );
}

// Issue 39, item 4: the demo set through the scripted model, whose every
// turn checks the demo servers' real tools and descriptions were offered
// (what scripts/test.sh runs).
#[test]
fn the_demo_set_passes_through_the_scripted_model_with_the_real_descriptions() {
    let sb = Sandbox::new();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../evals/demo.script.jsonl");
    let run = demo_set_through(&sb, &script);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("score (weighted): 100.0%"), "{run:?}");
    // A description that no longer says what the script expects fails.
    let text = std::fs::read_to_string(&script)
        .unwrap()
        .replace("Lists every note", "Lists nothing at all");
    let run = demo_set_through(&sb, &sb.write("bad.jsonl", &text));
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("expected the description of mcp__notes__list_notes to contain"),
        "{run:?}"
    );
}

/// The demo set through the scripted model of `script`, one case at a
/// time.
fn demo_set_through(sb: &Sandbox, script: &std::path::Path) -> Run {
    let model = format!("script:{}", script.display());
    sb.run(&["eval", &demo_set(), "--model", &model, "--concurrency", "1"])
}
