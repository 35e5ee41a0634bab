//! The notes demo's skill end to end: the notes server over Streamable
//! HTTP (in process) and the library's client, as a host would use them.
//! IDs are those of `docs/spec/skills-checklist.md`.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use switchboard_client::{Client, HttpTransport};
use switchboard_demo::notes;
use switchboard_server::http::HttpOptions;

const WAIT: Duration = Duration::from_secs(20);

// SK-LIST-1, SK-VER-1/5, SK-READ-3: the skill is listed, its SKILL.md and
// the template it names are fetched and verified, and the tools it relies
// on are the demo's, unchanged.
#[tokio::test]
async fn the_meeting_notes_skill_end_to_end() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = notes::server().unwrap();
    let task = tokio::spawn(switchboard_server::http::serve(
        server,
        listener,
        HttpOptions::new(),
        async move {
            let _ = stopped.await;
        },
    ));
    let transport = HttpTransport::builder("notes", &url).build().unwrap();
    let client = tokio::time::timeout(WAIT, Client::builder("notes", transport).connect())
        .await
        .unwrap()
        .unwrap();

    let skills = client.list_skills().await.unwrap().items;
    assert_eq!(skills.len(), 1);
    let skill = &skills[0];
    assert_eq!(skill.uri, notes::SKILL_URI);
    assert_eq!(skill.name(), Some("meeting-notes"));
    assert_eq!(skill.check(), Ok(()));

    let text = client.fetch_skill_file(skill, &skill.uri).await.unwrap();
    assert_eq!(text, notes::SKILL_MD.as_bytes());
    let template = skill.resolve("templates/minutes.md").unwrap();
    assert_eq!(template, notes::SKILL_TEMPLATE_URI);
    let bytes = client.fetch_skill_file(skill, &template).await.unwrap();
    assert_eq!(bytes, notes::SKILL_TEMPLATE.as_bytes());

    // The tool the skill names works as before, and the tool list is the
    // lab's three tools, in two pages.
    let tools = client.list_all_tools().await.unwrap().items;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["search", "read_note", "list_notes"]);
    let args = serde_json::json!({"id": "standup"});
    let result = client
        .call_tool("read_note", args.as_object().cloned())
        .await
        .unwrap();
    assert!(result.joined_text().contains("printer"));
    client.close().await;
    let _ = stop.send(());
    let _ = task.await;
}
