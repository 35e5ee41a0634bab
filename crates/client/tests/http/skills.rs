//! The Skills extension on the client: against our own server framework
//! (every page, get, directory reads, every file fetched and verified) and
//! against scripted servers that lack the extension or tamper with skill
//! files. IDs are those of `docs/spec/skills-checklist.md`.

use serde_json::{Value, json};
use switchboard_client::{Client, ClientError, HttpTransport, SkillFetchError};
use switchboard_server::{Server, SkillSpec};
use switchboard_wire::Skill;
use switchboard_wire::skills::SkillResource;

use super::framework::serve_server;
use super::util::{json_reply, result_for, serve, within};

const SKILL_MD: &str = "---\nname: meeting-notes\ndescription: Take minutes with the template\nmetadata:\n  version: 2\n---\n\nFill in templates/minutes.md.\n";
const MINUTES: &str = "# Minutes\n\n- Attendees:\n";

async fn connect(url: &str) -> Client {
    let transport = HttpTransport::builder("skills", url).build().unwrap();
    within(Client::builder("skills", transport).connect())
        .await
        .unwrap()
}

fn skills_server() -> Server {
    let logo: Vec<u8> = vec![0x89, b'P', b'N', b'G', 0, 0xfe];
    Server::builder("skills", "1")
        .page_size(1)
        .skill(
            SkillSpec::new("team/meeting-notes", SKILL_MD)
                .file("templates/minutes.md", MINUTES)
                .file("templates/logo.png", logo),
        )
        .skill(SkillSpec::new(
            "release",
            "---\nname: release\ndescription: Ship it\n---\n",
        ))
        .build()
        .unwrap()
}

// SK-CAP-5, SK-LIST-3/4, SK-GET-3, SK-DIR-3, SK-VER-1: the methods end to
// end against the framework, every listed file fetched and verified.
#[tokio::test]
async fn lists_gets_reads_and_verifies_against_our_server() {
    let (url, _stop) = serve_server(skills_server()).await;
    let client = connect(&url).await;
    assert!(client.skills_capability().unwrap().directory_read());

    let listing = within(client.list_skills()).await.unwrap();
    assert_eq!(listing.pages, 2, "page size 1, every page fetched");
    let uris: Vec<&str> = listing.items.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://release/SKILL.md",
            "skill://team/meeting-notes/SKILL.md"
        ]
    );
    assert!(listing.cache.ttl_ms.is_some());

    let notes = &listing.items[1];
    let got = within(client.get_skill(&notes.uri)).await.unwrap();
    assert_eq!(&got.skill, notes);
    let err = within(client.get_skill("skill://nowhere/SKILL.md"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32602), "SK-GET-3: {err}");

    for file in notes.files().unwrap() {
        let bytes = within(client.fetch_skill_file(notes, &file.uri))
            .await
            .unwrap();
        assert_eq!(bytes.len() as u64, file.size, "{}", file.uri);
    }
    let minutes = notes.resolve("templates/minutes.md").unwrap();
    assert_eq!(
        within(client.fetch_skill_file(notes, &minutes))
            .await
            .unwrap(),
        MINUTES.as_bytes()
    );

    let children = within(client.read_directory("skill://team/meeting-notes/templates"))
        .await
        .unwrap();
    assert_eq!(children.pages, 2);
    let names: Vec<&str> = children.items.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["logo.png", "minutes.md"]);
    let err = within(client.read_directory(&notes.uri)).await.unwrap_err();
    assert_eq!(err.code(), Some(-32602), "SK-DIR-2: {err}");
    client.close().await;
}

// SK-CAP-3/5: without the extension (or without directoryRead) the calls
// are refused here, and nothing reaches the server.
#[tokio::test]
async fn refused_locally_without_the_capability() {
    for declared in [None, Some(json!({}))] {
        let caps = match &declared {
            None => json!({"tools": {}}),
            Some(settings) => {
                json!({"resources": {}, "extensions": {"io.modelcontextprotocol/skills": settings}})
            }
        };
        let server = serve(move |seen| {
            let caps = caps.clone();
            async move {
                json_reply(
                    200,
                    result_for(
                        &seen,
                        json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": caps}),
                    ),
                )
            }
        })
        .await;
        let client = connect(&server.url()).await;
        let before = server.seen().len();
        let refused = |e: ClientError| matches!(e, ClientError::Unsupported { .. });
        if declared.is_none() {
            assert!(client.skills_capability().is_none());
            assert!(refused(client.list_skills().await.unwrap_err()));
            assert!(refused(client.list_skills_page(None).await.unwrap_err()));
            let e = client.get_skill("skill://a/SKILL.md").await.unwrap_err();
            assert!(
                e.to_string().contains("io.modelcontextprotocol/skills"),
                "{e}"
            );
        }
        let e = client.read_directory("skill://a").await.unwrap_err();
        assert!(refused(e), "SK-CAP-3");
        assert_eq!(server.seen().len(), before, "nothing was sent");
        client.close().await;
    }
}

/// A scripted skills server: one skill whose listed SKILL.md is `listed`
/// but whose read returns `served`; counts reads.
async fn tampering(listed: &'static str, served: &'static str) -> (super::util::TestServer, Skill) {
    let entry = json!({
        "uri": "skill://pdf/SKILL.md",
        "frontmatter": {"name": "pdf", "description": "PDF forms"},
        "resources": [
            SkillResource::of_bytes("skill://pdf/SKILL.md", listed.as_bytes()),
            SkillResource::of_bytes("skill://pdf/FORMS.md", b"forms\n"),
        ]
    });
    let skill: Skill = serde_json::from_value(entry.clone()).unwrap();
    let server = serve(move |seen| {
        let entry = entry.clone();
        async move {
            let body = seen.json();
            let result = match body["method"].as_str().unwrap_or_default() {
                "server/discover" => json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}}}}),
                "skills/list" => json!({"resultType": "complete", "skills": [entry], "ttlMs": 0, "cacheScope": "private"}),
                "resources/read" => {
                    let uri = body["params"]["uri"].as_str().unwrap_or_default().to_owned();
                    let text = if uri.ends_with("SKILL.md") { served } else { "forms\n" };
                    json!({"resultType": "complete", "contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
                }
                "resources/directory/read" => json!({"resultType": "complete", "resources": [
                    {"uri": "skill://pdf/FORMS.md", "name": "FORMS.md"},
                    {"uri": "skill://pdf/EVIL.md", "name": "EVIL.md"}
                ]}),
                _ => json!({}),
            };
            json_reply(200, result_for(&seen, result))
        }
    })
    .await;
    (server, skill)
}

const GOOD: &str = "---\nname: pdf\ndescription: PDF forms\n---\nBody.\n";

// SK-ENT-16, SK-VER-1/2/4/5, SK-DIR-5/7: every tampering is refused by
// name and no bytes are returned; an unlisted file is refused before any
// read.
#[tokio::test]
async fn tampered_skill_files_are_refused() {
    let cases: [(&str, &str); 3] = [
        (
            "---\nname: pdf\ndescription: PDF forms\n---\nEvil.\n",
            "digest",
        ),
        (
            "---\nname: pdf\ndescription: PDF forms\n---\nBody.\nand more bytes\n",
            "size",
        ),
        ("", "frontmatter"),
    ];
    for (served, kind) in cases {
        // The frontmatter case: the entry lists the tampered file's own
        // digest, so only the frontmatter comparison can catch it.
        let tampered = "---\nname: pdf\ndescription: Exfiltrate credentials\n---\nBody.\n";
        let (listed, served) = if kind == "frontmatter" {
            (tampered, tampered)
        } else {
            (GOOD, served)
        };
        let (server, _) = tampering(listed, served).await;
        let client = connect(&server.url()).await;
        let skill = within(client.list_skills()).await.unwrap().items.remove(0);
        let err = within(client.fetch_skill_file(&skill, "skill://pdf/SKILL.md"))
            .await
            .unwrap_err();
        let SkillFetchError::Verify(e) = &err else {
            panic!("{kind}: not a verification failure: {err}");
        };
        assert_eq!(e.kind(), kind, "{e}");
        assert!(
            err.to_string().starts_with(kind),
            "the message names the failure: {err}"
        );
        client.close().await;
    }

    let (server, skill) = tampering(GOOD, GOOD).await;
    let client = connect(&server.url()).await;
    assert_eq!(
        within(client.fetch_skill_file(&skill, "skill://pdf/SKILL.md"))
            .await
            .unwrap(),
        GOOD.as_bytes()
    );
    // The directory read shows a file the held entry does not list: it is
    // never read (SK-DIR-5), and the listing adds nothing to the entry
    // (SK-DIR-7).
    let children = within(client.read_directory("skill://pdf")).await.unwrap();
    assert!(
        children
            .items
            .iter()
            .any(|r| r.uri == "skill://pdf/EVIL.md")
    );
    let reads = server.posts("resources/read").len();
    let err = within(client.fetch_skill_file(&skill, "skill://pdf/EVIL.md"))
        .await
        .unwrap_err();
    assert_eq!(err.verification().unwrap().kind(), "unlisted");
    assert_eq!(
        server.posts("resources/read").len(),
        reads,
        "no read of an unlisted file"
    );
    client.close().await;
}

// SK-ENT-18: an invalid entry in a listing comes through as invalid, the
// rest of the page intact, and nothing of it is read.
#[tokio::test]
async fn an_invalid_entry_is_kept_and_never_read() {
    let server = serve(|seen| async move {
        let body = seen.json();
        let result = match body["method"].as_str().unwrap_or_default() {
            "server/discover" => json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}}}),
            "skills/list" => json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "skills": [
                {"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"}},
                {"uri": "skill://b/SKILL.md", "frontmatter": {"name": "b", "description": "d"}, "resources": "dynamic"}
            ]}),
            _ => Value::Null,
        };
        json_reply(200, result_for(&seen, result))
    })
    .await;
    let client = connect(&server.url()).await;
    let skills = within(client.list_skills()).await.unwrap().items;
    assert_eq!(skills.len(), 2);
    assert_eq!(skills[0].check().unwrap_err().kind(), "invalid");
    assert!(skills[1].is_dynamic());
    let err = within(client.fetch_skill_file(&skills[0], "skill://a/SKILL.md"))
        .await
        .unwrap_err();
    assert_eq!(err.verification().unwrap().kind(), "invalid");
    assert!(server.posts("resources/read").is_empty());
    client.close().await;
}
