//! Callers' limits (`callerLimits`, a principal's `limits`): a call over
//! them ends before the gate, is never sent, is audited as `limited` and
//! tells the model when to try again; each caller is counted on its own,
//! a principal's own limits lift or tighten the default, and a reload
//! changes them at once.

use serde_json::{Value, json};
use switchboard_host::{Approval, CallOptions, Outcome};

use crate::util::*;

fn args(v: Value) -> Option<switchboard_wire::JsonObject> {
    v.as_object().cloned()
}

/// The mock (logging its requests), `sleep` asked about (not allowed), an
/// audit log; every caller 2 calls a minute and 1 at once, alice neither.
fn limited_config(dir: &Dir, caller_limits: Value) -> Value {
    json!({
        "mcpServers": {"local": stdio(&["--log", &dir.path_str("mock.log")])},
        "audit": dir.path_str("audit.jsonl"),
        "callerLimits": caller_limits,
        "principals": {"alice": {"limits": {"callsPerMinute": null, "concurrentCalls": null}}},
    })
}

fn by(recorder: &Recorder, principal: &str) -> CallOptions {
    CallOptions::approver(recorder.clone()).with_principal(principal)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_over_a_callers_limits_end_before_the_gate() {
    let dir = Dir::new();
    let two_a_minute_one_at_once = json!({"callsPerMinute": 2, "concurrentCalls": 1});
    let host = dir
        .mount(limited_config(&dir, two_a_minute_one_at_once))
        .await;
    let recorder = Recorder::new(Approval::AllowOnce);
    let sleep = |ms: u64| args(json!({"ms": ms}));

    // ci runs one slow call; a second one at the same time is refused.
    let slow = {
        let (host, options) = (host.clone(), by(&recorder, "ci"));
        tokio::spawn(async move {
            host.call_detailed("mcp__local__sleep", sleep(1500), options)
                .await
        })
    };
    wait_for_questions(&recorder, 1).await;
    let refused = host
        .call_detailed("mcp__local__sleep", sleep(1), by(&recorder, "ci"))
        .await;
    assert_eq!(refused.outcome, Outcome::Limited, "{refused:?}");
    let said = text(&refused.result);
    assert!(refused.result.is_error());
    assert!(
        said.contains("ci already has 1 call running")
            && said.contains("when one of them has finished"),
        "{said}"
    );
    // Another caller is counted on its own; a call without a principal
    // (stdio, no authentication) is not limited.
    let bob = host
        .call_detailed("mcp__local__sleep", sleep(1), by(&recorder, "bob"))
        .await;
    assert_eq!(bob.outcome, Outcome::Ok, "{bob:?}");
    let anonymous = host
        .call_detailed(
            "mcp__local__sleep",
            sleep(1),
            CallOptions::approver(recorder.clone()),
        )
        .await;
    assert_eq!(anonymous.outcome, Outcome::Ok);
    assert_eq!(slow.await.unwrap().outcome, Outcome::Ok);

    // Its slow call over, ci makes its second call of the minute; the
    // third is over the rate and says when to try again.
    let second = host
        .call_detailed("mcp__local__sleep", sleep(1), by(&recorder, "ci"))
        .await;
    assert_eq!(second.outcome, Outcome::Ok, "{second:?}");
    let third = host
        .call_detailed("mcp__local__sleep", sleep(1), by(&recorder, "ci"))
        .await;
    assert_eq!(third.outcome, Outcome::Limited);
    let said = text(&third.result);
    assert!(
        said.contains("limited to 2 a minute") && said.contains("Try again in"),
        "{said}"
    );

    // alice's own limits lift both: five at once, all run.
    let calls = (0..5).map(|_| {
        let (host, options) = (host.clone(), by(&recorder, "alice"));
        tokio::spawn(async move {
            host.call_detailed("mcp__local__sleep", sleep(200), options)
                .await
        })
    });
    for call in calls.collect::<Vec<_>>() {
        assert_eq!(call.await.unwrap().outcome, Outcome::Ok);
    }

    // The limited calls were never asked about nor sent: 1 + 1 + 1 + 1 + 5
    // questions and requests.
    assert_eq!(recorder.questions().len(), 9);
    assert_eq!(logged_calls(&dir.path("mock.log")).len(), 9);
    let audit = std::fs::read_to_string(dir.path("audit.jsonl")).unwrap();
    let limited: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["outcome"] == "limited")
        .collect();
    assert_eq!(limited.len(), 2, "{audit}");
    for line in &limited {
        assert_eq!(line["principal"], "ci");
        assert_eq!(line["alias"], "local");
        assert_eq!(line["isError"], true);
        assert!(line["decision"].is_null(), "{line}");
    }

    // A reload raising the rate applies to the next call.
    let report = host
        .reload(dir.config(limited_config(&dir, json!({"callsPerMinute": 100}))))
        .await;
    assert!(report.needs_restart.is_empty(), "{report:?}");
    assert_eq!(report.unchanged, ["local"]);
    let after = host
        .call_detailed("mcp__local__sleep", sleep(1), by(&recorder, "ci"))
        .await;
    assert_eq!(after.outcome, Outcome::Ok, "{after:?}");
    host.shutdown().await;
}

async fn wait_for_questions(recorder: &Recorder, n: usize) {
    for _ in 0..500 {
        if recorder.questions().len() >= n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("no question after 5 s");
}
