//! Servers' questions answered through the host's input handler, on both
//! eras: a modern server asks inside `input_required` (MRTR), a legacy
//! one sends its own requests during a call. Either way the front end
//! sees the server's alias, and the answers come from the same handler.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchboard_client::BoxFuture;
use switchboard_host::root_of as root;
use switchboard_host::{
    Asker, AssumeYes, CallOptions, ElicitAnswer, Elicitation, ElicitationKind, Host, HostInput,
    Sampler, SamplingRequest,
};

use crate::util::*;

/// Accepts every form with `{"ok": true}` and approves sampling; records
/// who asked.
#[derive(Debug, Default)]
struct Person {
    asked: Mutex<Vec<String>>,
}

impl Asker for Person {
    fn elicit<'a>(&'a self, q: &'a Elicitation) -> BoxFuture<'a, ElicitAnswer> {
        self.asked
            .lock()
            .unwrap()
            .push(format!("elicit {}", q.server));
        assert!(matches!(q.kind, ElicitationKind::Form(_)));
        let ok = json!({"ok": true}).as_object().unwrap().clone();
        Box::pin(async move { ElicitAnswer::Accept(ok) })
    }

    fn approve_sampling<'a>(&'a self, r: &'a SamplingRequest) -> BoxFuture<'a, bool> {
        self.asked
            .lock()
            .unwrap()
            .push(format!("sample {}", r.server));
        Box::pin(async { true })
    }
}

#[derive(Debug)]
struct Fixed;

impl Sampler for Fixed {
    fn name(&self) -> String {
        "fixed".into()
    }

    fn create_message<'a>(
        &'a self,
        _server: &'a str,
        _params: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async {
            Ok(
                json!({"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "fixed-model"}),
            )
        })
    }
}

async fn mount(dir: &Dir, input: HostInput) -> Host {
    let config = dir.config(json!({
        "mcpServers": {"modern": stdio(&[]), "old": stdio(&["--legacy"])},
        "permissions": {"allow": ["mcp__modern", "mcp__old"]},
    }));
    let mut options = dir.options();
    options.input_handler = Some(Arc::new(input));
    Host::mount(config, options).await.expect("mount")
}

// MRTR-05, ELIC-07, SAMP-02, ROOT-02, ROOT-03.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_eras_are_answered_through_the_same_handler() {
    let dir = Dir::new();
    let person = Arc::new(Person::default());
    let input = HostInput::new(vec![root(Path::new("/srv/project"))])
        .with_asker(person.clone())
        .with_sampler(Arc::new(Fixed));
    let host = mount(&dir, input).await;

    let modern = host
        .call(
            "mcp__modern__ask",
            json!({"rounds": 1}).as_object().cloned(),
            CallOptions::approver(AssumeYes),
        )
        .await;
    assert!(!modern.is_error(), "{}", text(&modern));
    let text_of_modern = json!(modern.structured_content).to_string();
    for want in ["file:///srv/project", "fixed-model", "accept"] {
        assert!(text_of_modern.contains(want), "{want}: {text_of_modern}");
    }
    let old = host
        .call("mcp__old__sample", None, CallOptions::approver(AssumeYes))
        .await;
    let text_of_old = text(&old);
    assert!(!old.is_error(), "{text_of_old}");
    for want in ["file:///srv/project", "fixed-model", "accept"] {
        assert!(text_of_old.contains(want), "{want}: {text_of_old}");
    }
    let asked = person.asked.lock().unwrap().clone();
    for want in ["elicit modern", "sample modern", "elicit old", "sample old"] {
        assert!(asked.iter().any(|a| a == want), "{want}: {asked:?}");
    }
    host.shutdown().await;
}

// SAMP-11: with a model but no one to approve, sampling is declined; with
// no asker, elicitation is not declared at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_person_sampling_is_declined_and_elicitation_not_declared() {
    let dir = Dir::new();
    let input = HostInput::new(Vec::new()).with_sampler(Arc::new(Fixed));
    let host = mount(&dir, input).await;
    let modern = host
        .call(
            "mcp__modern__ask",
            json!({"rounds": 1}).as_object().cloned(),
            CallOptions::approver(AssumeYes),
        )
        .await;
    assert!(modern.is_error());
    assert!(
        text(&modern).contains("no terminal to approve"),
        "{}",
        text(&modern)
    );
    let old = host
        .call("mcp__old__sample", None, CallOptions::approver(AssumeYes))
        .await;
    let text_of_old = text(&old);
    // Only what was declared is asked: sampling (declined), no roots, no
    // elicitation.
    assert!(
        text_of_old.contains("sampling/createMessage"),
        "{text_of_old}"
    );
    assert!(
        text_of_old.contains("no terminal to approve"),
        "{text_of_old}"
    );
    assert!(!text_of_old.contains("roots/list"), "{text_of_old}");
    assert!(!text_of_old.contains("elicitation/create"), "{text_of_old}");
    host.shutdown().await;
}

// WIRE-13: a 2026-07-28 server must not send requests, so a gateway need
// not follow its calls for questions; a legacy server's calls, an unknown
// tool's and those of a server not connected now may bring some.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_connected_modern_server_cannot_ask_during_a_call() {
    let dir = Dir::new();
    let config = dir.config(json!({
        "mcpServers": {
            "modern": stdio(&[]),
            "old": stdio(&["--legacy"]),
        },
    }));
    let host = Host::mount(config, dir.options()).await.expect("mount");
    assert!(!host.may_ask_during_call("mcp__modern__ask"));
    assert!(host.may_ask_during_call("mcp__old__sample"));
    assert!(host.may_ask_during_call("mcp__nope__ask"));
    // Once the modern server is gone, what comes back is not known yet.
    let crashed = host
        .call(
            "mcp__modern__crash",
            json!({"code": 7}).as_object().cloned(),
            CallOptions::approver(AssumeYes),
        )
        .await;
    assert!(crashed.is_error(), "{}", text(&crashed));
    assert!(host.may_ask_during_call("mcp__modern__ask"));
    host.shutdown().await;
}
