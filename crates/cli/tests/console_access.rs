//! Who keeps using the console, and how the gate's question reaches a
//! tasks-extension client: a session ends as soon as the token it was
//! signed in with is revoked (tokens file hot-reloaded); failed sign-ins
//! are limited per peer address; a client that declared the tasks
//! extension but not form elicitation is asked by URL, waits for the
//! console, or is refused clearly, as any other client would be. Real
//! gateways on 127.0.0.1:0.

use std::time::Duration;

use serde_json::{Value, json};

use crate::console_util::{
    ALICE, BOT, Console, Session, announced_to_alice, approval_link, audited, call_raw,
    console_notifying, meta, path_of, write_tokens,
};
use crate::gateway_util::{header, raw, raw_from};

/// The tasks extension's identifier, as clients declare it.
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// Reads the event stream `/console/events` with `cookie` until it ends:
/// everything it sent. Fails when it has not ended two minutes after it
/// was opened (its keep-alives would let it run forever).
fn event_stream(addr: &str, cookie: &str) -> std::thread::JoinHandle<String> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    write!(
        stream,
        "GET /console/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => return String::from_utf8_lossy(&seen).into_owned(),
                Ok(n) => seen.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("the event stream broke: {e}"),
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the event stream did not end: {}",
                String::from_utf8_lossy(&seen)
            );
        }
    })
}

// A console session stands for the token it was signed in with: once
// that token is taken out of the tokens file (reloaded while serving),
// the session's next request is refused with the sign-in page and the
// cookie cleared, a change posted with it is refused too, and the live
// updates it had open stop.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_ends_when_its_token_is_revoked() {
    let console = Console::start().await;
    let addr = console.addr().to_owned();
    let alice = console.sign_in(ALICE);
    let csrf = alice.csrf("/console/servers");
    let events = event_stream(&addr, &alice.cookie);
    // alice's token leaked: it is taken out of the tokens file.
    write_tokens(&console.sb, &format!("bot {BOT}\n"));
    let bearer = format!("Bearer {ALICE}");
    let start = std::time::Instant::now();
    loop {
        let (status, _, _) = raw(
            &addr,
            "GET",
            "/console/servers",
            &[("Authorization", &bearer)],
            "",
        );
        if status == 401 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the tokens file was never reloaded:\n{}",
            console.served.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, headers, page) = alice.get("/console/servers");
    assert_eq!(status, 401, "{page}");
    assert!(page.contains("action=\"/console/login\""), "{page}");
    assert!(
        header(&headers, "set-cookie").is_some_and(|c| c.contains("Max-Age=0")),
        "{headers:?}"
    );
    let (status, _, _) = alice.post("/console/logout", &format!("csrf={csrf}"));
    assert_eq!(status, 401);
    let seen = tokio::task::spawn_blocking(move || events.join().unwrap())
        .await
        .unwrap();
    assert!(seen.contains("event: servers"), "{seen}");
    // Dropped for good: the token put back does not revive the session.
    write_tokens(&console.sb, &format!("alice {ALICE}\nbot {BOT}\n"));
    let start = std::time::Instant::now();
    while raw(
        &addr,
        "GET",
        "/console/servers",
        &[("Authorization", &bearer)],
        "",
    )
    .0 != 200
    {
        assert!(start.elapsed() < Duration::from_secs(30), "never reloaded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(alice.get("/console/servers").0, 401);
    assert_eq!(console.sign_in(ALICE).get("/console/servers").0, 200);
}

// Ten failed sign-ins from one address in a minute: the next is refused
// with 429 and Retry-After even with a good token, while another
// address (127.0.0.2, loopback too) signs in as usual.
#[tokio::test(flavor = "multi_thread")]
async fn failed_sign_ins_are_limited_per_peer_address() {
    let console = Console::start().await;
    let addr = console.addr().to_owned();
    let form = ("Content-Type", "application/x-www-form-urlencoded");
    for i in 0..10 {
        let (status, _, _) = raw(
            &addr,
            "POST",
            "/console/login",
            &[form],
            &format!("token=not-a-token-at-all-{i:06}"),
        );
        assert_eq!(status, 401, "attempt {i}");
    }
    let (status, headers, page) = raw(
        &addr,
        "POST",
        "/console/login",
        &[form],
        &format!("token={ALICE}"),
    );
    assert_eq!(status, 429, "{page}");
    let retry: u64 = header(&headers, "retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{headers:?}"));
    assert!((1..=60).contains(&retry), "{retry}");
    assert!(header(&headers, "set-cookie").is_none());
    let other: std::net::IpAddr = "127.0.0.2".parse().unwrap();
    let (status, headers, page) = raw_from(
        other,
        &addr,
        "POST",
        "/console/login",
        &[form],
        &format!("token={ALICE}"),
    )
    .await;
    assert_eq!(status, 303, "{page}");
    let session = Session::from_answer(&addr, &headers);
    assert_eq!(session.get("/console/servers").0, 200);
}

/// The first input request of an `input_required` result.
fn input_request(message: &Value) -> (String, Value) {
    let result = &message["result"];
    assert_eq!(result["resultType"], "input_required", "{message}");
    let (key, request) = result["inputRequests"]
        .as_object()
        .and_then(|m| m.iter().next())
        .unwrap_or_else(|| panic!("{message}"));
    (key.clone(), request.clone())
}

/// The text of a tool result.
fn text_of(message: &Value) -> String {
    message["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

// A client that declared the tasks extension and URL elicitation but not
// form elicitation: the gate's question is the console's link for that
// call (never a form), approved there, and the retry runs. Declaring
// neither kind of elicitation (and no webhook configured), the call is
// refused saying how to allow the tool.
#[tokio::test(flavor = "multi_thread")]
async fn a_tasks_client_without_forms_is_asked_by_url_or_refused_clearly() {
    let console = Console::start().await;
    let addr = console.addr().to_owned();
    let caps = json!({"elicitation": {"url": {}}, "extensions": {TASKS: {}}});
    let arguments = json!({"id": "vpn"});
    let params = json!({"name": "mcp__notes__read_note", "arguments": arguments, "_meta": meta(caps.clone())});
    let asked = call_raw(&addr, BOT, &params);
    let (key, request) = input_request(&asked);
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    assert_eq!(request["params"]["mode"], "url", "{asked}");
    let link = approval_link(&request).unwrap_or_else(|| panic!("{asked}"));
    let path = path_of(&link);
    let alice = console.sign_in(ALICE);
    assert_eq!(alice.decide(&path, "approve"), 303);
    let retry = json!({
        "name": "mcp__notes__read_note",
        "arguments": arguments,
        "_meta": meta(caps),
        "inputResponses": { key: {"action": "accept"} },
        "requestState": asked["result"]["requestState"].clone(),
    });
    let done = call_raw(&addr, BOT, &retry);
    assert_ne!(done["result"]["resultType"], "input_required", "{done}");
    // Asked, then run once as a person decided.
    let lines = audited(&console.sb, "mcp__notes__read_note");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["outcome"], "asked");
    assert_eq!(lines[1]["decision"], "allow");
    assert_eq!(lines[1]["decidedBy"], "human");

    let params = json!({"name": "mcp__notes__list_notes", "arguments": {}, "_meta": meta(json!({"extensions": {TASKS: {}}}))});
    let refused = call_raw(&addr, BOT, &params);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        text_of(&refused).contains("does not support elicitation"),
        "{refused}"
    );
}

// A client that declared the tasks extension and no elicitation, with
// `approvals.notify` configured: the call is announced to the webhook
// and waits; approved in the console, it runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_tasks_client_without_elicitation_waits_for_the_console() {
    let (console, announced) = console_notifying(60000).await;
    let addr = console.addr().to_owned();
    let person = tokio::task::spawn_blocking({
        let addr = addr.clone();
        move || {
            let (payload, path, alice) = announced_to_alice(&addr, &announced);
            assert_eq!(alice.decide(&path, "approve"), 303);
            payload
        }
    });
    let params = json!({"name": "mcp__notes__list_notes", "arguments": {}, "_meta": meta(json!({"extensions": {TASKS: {}}}))});
    let done = tokio::task::spawn_blocking(move || call_raw(&addr, BOT, &params))
        .await
        .unwrap();
    let payload = person.await.unwrap();
    assert_eq!(payload["tool"], "mcp__notes__list_notes");
    assert_ne!(done["result"]["isError"], true, "{done}");
    assert_ne!(done["result"]["resultType"], "input_required", "{done}");
    let lines = audited(&console.sb, "mcp__notes__list_notes");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["decision"], "allow");
    assert_eq!(lines[0]["decidedBy"], "human");
}
