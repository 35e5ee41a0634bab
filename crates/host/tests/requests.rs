//! Prompt gets, reads and completions on the host's governed path, as a
//! tool call: the caller's `principals` rules refuse what they keep from
//! it, the user's deny rules refuse a prompt, a name the catalog does not
//! hold is unknown, and every one of them writes one audit line naming
//! its method and caller.

use serde_json::{Value, json};
use switchboard_host::{CallOptions, CompletionRef, OfferError, Outcome, ResourceRef};

use crate::util::*;

fn lines(dir: &Dir) -> Vec<Value> {
    std::fs::read_to_string(dir.path("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn who() -> Option<switchboard_wire::JsonObject> {
    json!({"who": "you"}).as_object().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_reads_and_completions_take_the_governed_path() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"local": stdio(&[])},
            "audit": dir.path_str("audit.jsonl"),
            "principals": {"bob": {"allow": ["mcp__local__echo"]}},
        }))
        .await;
    let alice = || CallOptions::default().with_principal("alice");
    let bob = || CallOptions::default().with_principal("bob");
    let greet = "mcp__local__greet";
    let item = ResourceRef::Templated {
        template: "mock://item/{id}",
        uri: "mock://item/7",
    };

    // alice has no entry: each request reaches the server.
    host.get_prompt(greet, who(), alice()).await.unwrap();
    let read = host.read_resource(item, alice()).await.unwrap();
    assert_eq!(read.contents[0].uri, "mock://item/7");
    host.complete(CompletionRef::Prompt(greet), ("who", "y"), None, alice())
        .await
        .unwrap();
    // bob's rules refuse each one before it is sent.
    let refused = [
        host.get_prompt(greet, who(), bob()).await.unwrap_err(),
        host.read_resource(item, bob()).await.unwrap_err(),
        host.read_resource(ResourceRef::Listed("mock://a"), bob())
            .await
            .unwrap_err(),
        host.complete(CompletionRef::Prompt(greet), ("who", "y"), None, bob())
            .await
            .unwrap_err(),
    ];
    for e in &refused {
        assert!(
            matches!(e, OfferError::Refused { outcome: Outcome::Denied, text } if text.contains("rules for bob do not allow")),
            "{e:?}"
        );
    }
    // A name the catalog does not hold is unknown, and audited as such.
    let unknown = host
        .get_prompt("mcp__local__nope", None, alice())
        .await
        .unwrap_err();
    assert!(
        matches!(&unknown, OfferError::Unknown(text) if text.contains("unknown prompt")),
        "{unknown:?}"
    );

    let lines = lines(&dir);
    let seen: Vec<(&str, &str, &str, &str)> = lines
        .iter()
        .map(|l| {
            let field = |k: &str| l[k].as_str().unwrap_or("");
            (
                field("method"),
                field("tool"),
                field("principal"),
                field("outcome"),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("prompts/get", greet, "alice", "ok"),
            ("resources/read", "mock://item/7", "alice", "ok"),
            ("completion/complete", greet, "alice", "ok"),
            ("prompts/get", greet, "bob", "denied"),
            ("resources/read", "mock://item/7", "bob", "denied"),
            ("resources/read", "mock://a", "bob", "denied"),
            ("completion/complete", greet, "bob", "denied"),
            ("prompts/get", "mcp__local__nope", "alice", "unknown_tool"),
        ]
    );
    // Where each one went, by the server's own names; what was decided.
    assert_eq!(lines[0]["originalTool"], "greet");
    assert_eq!(lines[1]["originalTool"], "mock://item/7");
    assert_eq!(lines[2]["argumentNames"], json!(["who"]));
    assert_eq!(lines[3]["decision"], "deny");
    assert_eq!(lines[3]["decidedBy"], "rule");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_rule_naming_a_prompt_refuses_it_with_the_rule_audited() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"local": stdio(&[])},
            "audit": dir.path_str("audit.jsonl"),
            "permissions": {"deny": ["mcp__local__greet"]},
        }))
        .await;
    let e = host
        .get_prompt("mcp__local__greet", who(), CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&e, OfferError::Refused { outcome: Outcome::Denied, text }
            if text.contains("permission rules deny mcp__local__greet")),
        "{e:?}"
    );
    let lines = lines(&dir);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["outcome"], "denied");
    assert_eq!(lines[0]["rule"], "permissions.deny[0]");
    assert!(lines[0].get("principal").is_none(), "{}", lines[0]);
    host.shutdown().await;
}

// Issue 36: with "principalsDefault": "deny", a caller the config does not
// name (any subject an OAuth issuer vouches for) is refused every request
// and offered nothing; a named one keeps its rules; a caller without a
// principal (stdio, no authentication) is not a principal at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn principals_default_deny_refuses_unnamed_callers() {
    use switchboard_host::Named;
    let dir = Dir::new();
    let host = dir
        .mount(json!({
            "mcpServers": {"local": stdio(&[])},
            "audit": dir.path_str("audit.jsonl"),
            "permissions": {"allow": ["mcp__local"]},
            "principals": {"bob": {"allow": ["mcp__local__echo"]}},
            "principalsDefault": "deny",
        }))
        .await;
    let echo = || json!({"text": "hi"}).as_object().cloned();
    let by = |p: &str| CallOptions::default().with_principal(p);
    let refused = host.call("mcp__local__echo", echo(), by("stranger")).await;
    assert!(refused.is_error(), "{refused:?}");
    assert!(
        refused
            .joined_text()
            .contains("principalsDefault is \"deny\""),
        "{refused:?}"
    );
    let e = host
        .get_prompt("mcp__local__greet", who(), by("stranger"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &e,
            OfferError::Refused {
                outcome: Outcome::Denied,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(!host.principal_may("stranger", Named::Tool("mcp__local__echo")));
    assert!(!host.principal_may_reach("stranger", "local"));
    assert!(host.status_for(Some("stranger")).is_empty());

    let ok = host.call("mcp__local__echo", echo(), by("bob")).await;
    assert!(!ok.is_error(), "{ok:?}");
    let ok = host
        .call("mcp__local__echo", echo(), CallOptions::default())
        .await;
    assert!(!ok.is_error(), "{ok:?}");

    let lines = lines(&dir);
    assert_eq!(lines[0]["principal"], "stranger");
    assert_eq!(lines[0]["outcome"], "denied");
    assert_eq!(lines[0]["rule"], "principalsDefault");
    host.shutdown().await;
}
