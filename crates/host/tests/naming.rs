//! Namespacing edge cases (DESIGN.md item 7): the 64-character boundary,
//! the hash suffix, illegal characters, colliding names, and two servers
//! that call themselves the same. The original name reaches the server.

use serde_json::json;
use switchboard_host::{AssumeYes, CallOptions};

use crate::util::*;

async fn call(host: &switchboard_host::Host, name: &str) -> switchboard_wire::CallToolResult {
    host.call(name, None, CallOptions::approver(AssumeYes))
        .await
}

/// The tool name each `tools/call` in a mock server's log carried.
fn names_received(log: &std::path::Path) -> Vec<String> {
    logged_calls(log)
        .iter()
        .map(|c| c["params"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boundary_hash_suffix_and_illegal_characters() {
    let dir = Dir::new();
    // "mcp__a__" is 8 characters: 56 more make exactly 64.
    let exact = "e".repeat(56);
    let over = "o".repeat(57);
    let tools = dir.tools(
        "tools.json",
        json!([
            tool(&exact, ""),
            tool(&over, ""),
            tool("notes.search/v2", ""),
            tool("créer", "")
        ]),
    );
    let log = dir.path("a.log");
    let host = dir
        .mount(json!({"mcpServers": {"a": stdio(&["--tools-file", &tools, "--log", &log.display().to_string()])}}))
        .await;
    let tools = host.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let exact_name = format!("mcp__a__{exact}");
    assert!(names.contains(&exact_name.as_str()), "{names:?}");
    let hashed = tools.iter().find(|t| t.original_name == over).unwrap();
    assert_eq!(hashed.name.len(), 64);
    assert_eq!(&hashed.name[..57], &format!("mcp__a__{over}")[..57]);
    assert_eq!(&hashed.name[57..58], "_");
    assert!(hashed.name[58..].chars().all(|c| c.is_ascii_hexdigit()));
    assert!(names.contains(&"mcp__a__notes_search_v2"), "{names:?}");
    assert!(names.contains(&"mcp__a__cr_er"), "{names:?}");
    assert!(tools.iter().all(|t| {
        t.name.len() <= 64
            && t.name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }));

    // Each local name goes back to its original name on the server.
    for t in &tools {
        let r = call(&host, &t.name).await;
        assert!(!r.is_error(), "{}: {}", t.name, text(&r));
    }
    let mut received = names_received(&log);
    received.sort();
    let mut want = vec![
        exact,
        over,
        "notes.search/v2".to_owned(),
        "créer".to_owned(),
    ];
    want.sort();
    assert_eq!(received, want);
    host.shutdown().await;
}

/// `a.b` and `a_b` sanitise to the same name: both get their own suffix
/// and each reaches its own original.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_collide_after_sanitising() {
    let dir = Dir::new();
    let tools = dir.tools("tools.json", json!([tool("a.b", ""), tool("a_b", "")]));
    let log = dir.path("s.log");
    let host = dir
        .mount(json!({"mcpServers": {"s": stdio(&["--tools-file", &tools, "--log", &log.display().to_string()])}}))
        .await;
    let tools = host.tools();
    assert_eq!(tools.len(), 2);
    assert_ne!(tools[0].name, tools[1].name);
    for t in &tools {
        assert!(t.name.starts_with("mcp__s__a_b_"), "{}", t.name);
        let r = call(&host, &t.name).await;
        assert_eq!(
            text(&r).lines().nth(1).unwrap(),
            format!("{} ran", t.original_name)
        );
    }
    let mut received = names_received(&log);
    received.sort();
    assert_eq!(received, ["a.b", "a_b"]);
    host.shutdown().await;
}

/// Two servers that both call themselves `notes` and both offer `search`
/// are told apart by the user's aliases, never by their own names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_with_the_same_self_reported_name() {
    let dir = Dir::new();
    let tools = dir.tools("tools.json", json!([tool("search", "Search.")]));
    let (log1, log2) = (dir.path("one.log"), dir.path("two.log"));
    let host = dir
        .mount(json!({"mcpServers": {
            "one": stdio(&["--name", "notes", "--tools-file", &tools, "--log", &log1.display().to_string()]),
            "two": stdio(&["--name", "notes", "--tools-file", &tools, "--log", &log2.display().to_string()]),
        }}))
        .await;
    let tools = host.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["mcp__one__search", "mcp__two__search"]);
    assert!(tools[0].description.starts_with("[from one] "));
    assert!(tools[1].description.starts_with("[from two] "));
    let reported: Vec<Option<String>> = host
        .servers()
        .into_iter()
        .map(|s| s.self_reported_name)
        .collect();
    assert_eq!(reported, [Some("notes".into()), Some("notes".into())]);

    call(&host, "mcp__two__search").await;
    assert_eq!(names_received(&log1), Vec::<String>::new());
    assert_eq!(names_received(&log2), ["search"]);
    call(&host, "mcp__one__search").await;
    assert_eq!(names_received(&log1), ["search"]);
    host.shutdown().await;
}

/// Hostile input (docs/LIMITS.md): tool names made of control characters
/// (two that sanitise alike) get valid, distinct local names, and each
/// call reaches the server under its original name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_character_names_get_distinct_valid_local_names() {
    let dir = Dir::new();
    let hostile = ["\u{1}\u{2}\u{3}", "\u{1b}[2J\u{7}", "\u{0}", "\u{7f}\n\r\t"];
    let tools = dir.tools(
        "tools.json",
        json!(hostile.iter().map(|n| tool(n, "")).collect::<Vec<_>>()),
    );
    let log = dir.path("a.log");
    let host = dir
        .mount(json!({"mcpServers": {"a": stdio(&["--tools-file", &tools, "--log", &log.display().to_string()])}}))
        .await;
    let tools = host.tools();
    assert_eq!(tools.len(), hostile.len(), "{tools:?}");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.iter().all(|n| {
        n.len() <= 64
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }));
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), hostile.len(), "local names are distinct");
    for t in &tools {
        let r = call(&host, &t.name).await;
        assert!(!r.is_error(), "{}", text(&r));
    }
    let mut received = names_received(&log);
    received.sort();
    let mut originals: Vec<String> = hostile.iter().map(|n| (*n).to_owned()).collect();
    originals.sort();
    assert_eq!(received, originals);
    host.shutdown().await;
}
