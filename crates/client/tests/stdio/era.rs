//! Dual era on stdio: probe with server/discover, fall back to the
//! 2025-11-25 handshake on anything but a recognised modern error.

use std::time::Duration;

use switchboard_wire::{Era, version};

use super::util::{self, Answers};

// STDIO-14, STDIO-15, STDIO-16: whatever a legacy server does with the probe
// (method not found, invalid params, an error without id, silence), the
// client falls back to initialize and speaks legacy from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_servers_are_detected_whatever_they_answer() {
    for reply in [
        "method-not-found",
        "invalid-params",
        "parse-error",
        "silent",
    ] {
        let log = util::log_path();
        let (builder, _t) = util::builder(&[
            "--legacy",
            "--discover-reply",
            reply,
            "--log",
            log.to_str().unwrap(),
        ])
        .await;
        let client = builder
            .probe_timeout(Duration::from_millis(500))
            .connect()
            .await
            .unwrap_or_else(|e| panic!("{reply}: {e}"));
        assert_eq!(client.era(), Era::Legacy, "{reply}");
        assert_eq!(client.protocol_version(), version::LEGACY, "{reply}");
        let r = client.call_tool("echo", None).await.unwrap();
        assert_eq!(r.joined_text(), "legacy echo", "{reply}");
        let entries = util::read_log(&log);
        let methods: Vec<&str> = entries
            .iter()
            .filter_map(|m| m["method"].as_str())
            .filter(|m| *m != "notifications/cancelled")
            .collect();
        assert_eq!(
            methods,
            [
                "server/discover",
                "initialize",
                "notifications/initialized",
                "tools/call"
            ],
            "{reply}"
        );
        // Legacy wire: no modern _meta on the call.
        let call = util::requests(&entries, "tools/call")[0];
        assert!(call["params"].get("_meta").is_none(), "{reply}: {call}");
        let init = util::requests(&entries, "initialize")[0];
        assert_eq!(init["params"]["protocolVersion"], version::LEGACY);
    }
}

// A legacy server's own requests during a call (ping, roots, sampling,
// elicitation) are answered through the same input handler.
#[tokio::test]
async fn legacy_server_requests_are_answered_by_the_input_handler() {
    let (builder, _t) = util::builder(&["--legacy"]).await;
    let handler = Answers::all();
    let asked = handler.asked.clone();
    let client = builder.input_handler(handler).connect().await.unwrap();
    client.ping().await.unwrap();
    let r = client.call_tool("sample", None).await.unwrap();
    let answers = r.structured_content.unwrap();
    assert_eq!(answers["ping"], serde_json::json!({}));
    assert_eq!(answers["roots/list"]["roots"][0]["uri"], "file:///tmp");
    assert_eq!(answers["sampling/createMessage"]["model"], "test-model");
    assert_eq!(answers["elicitation/create"]["action"], "accept");
    assert_eq!(asked.lock().unwrap().len(), 3);
    // The era is a property of the server, remembered (VER-07).
    assert_eq!(client.era(), Era::Legacy);
    let d = client.discover().await.unwrap();
    assert_eq!(d.supported_versions, [version::LEGACY]);
}

// A call's own handler (`call_input`) answers the legacy server's requests
// made during it, the client's handler the others.
#[tokio::test]
async fn a_calls_own_handler_answers_the_legacy_requests_made_during_it() {
    let (builder, _t) = util::builder(&["--legacy"]).await;
    let own = Answers::all();
    let own_asked = own.asked.clone();
    let client = builder.input_handler(own).connect().await.unwrap();
    let call = Answers::all();
    let call_asked = call.asked.clone();
    let options = switchboard_client::RequestOptions {
        call_input: Some(std::sync::Arc::new(call)),
        ..Default::default()
    };
    let r = client
        .call_tool_with("sample", None, &options)
        .await
        .unwrap();
    assert_eq!(
        r.structured_content.unwrap()["elicitation/create"]["action"],
        "accept"
    );
    assert_eq!(call_asked.lock().unwrap().len(), 3);
    assert!(own_asked.lock().unwrap().is_empty());
    let _ = client.call_tool("sample", None).await.unwrap();
    assert_eq!(own_asked.lock().unwrap().len(), 3);
    assert_eq!(call_asked.lock().unwrap().len(), 3);
}

// Without declared capabilities the client refuses a legacy server's
// sampling request instead of inventing an answer.
#[tokio::test]
async fn legacy_requests_beyond_the_handler_are_refused() {
    let (builder, _t) = util::builder(&["--legacy"]).await;
    let client = builder.connect().await.unwrap();
    let r = client.call_tool("sample", None).await.unwrap();
    let answers = r.structured_content.unwrap();
    // Only ping was asked: the server saw no capabilities to ask about.
    assert_eq!(answers.as_object().unwrap().len(), 1);
}

#[tokio::test]
async fn listen_is_unsupported_on_a_legacy_server() {
    let (builder, _t) = util::builder(&["--legacy"]).await;
    let client = builder.connect().await.unwrap();
    let err = client.listen(Default::default()).await.unwrap_err();
    assert!(err.to_string().contains("legacy"), "{err}");
}

// A modern server that is slow to start looks silent to the probe; when it
// then refuses initialize, the client probes again instead of failing
// (VER-07), and a slow legacy server still ends up legacy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_starting_server_is_classified_once_it_answers() {
    for (flags, era) in [
        (&["--startup-delay-ms", "1200"][..], Era::Modern),
        (&["--startup-delay-ms", "1200", "--legacy"][..], Era::Legacy),
    ] {
        let (builder, _t) = util::builder(flags).await;
        let client = builder
            .probe_timeout(Duration::from_millis(300))
            .connect()
            .await
            .unwrap_or_else(|e| panic!("{flags:?}: {e}"));
        assert_eq!(client.era(), era, "{flags:?}");
        client.call_tool("echo", None).await.unwrap();
    }
}
