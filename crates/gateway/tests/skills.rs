//! The mounted servers' skills through the gateway, with our client in
//! front: listed under the gateway's per-alias URIs with their digests
//! unchanged, every `skills/get`, file read and directory read routed to
//! the server that owns the skill, a caller's `principals` rules deciding
//! which skills it sees and loads, and one audit line naming the caller
//! for each request. Requirement IDs are the Skills extension's
//! (docs/spec/skills-checklist.md).

use serde_json::{Value, json};
use switchboard_client::{Client, HttpTransport};
use switchboard_gateway::GatewayOptions;
use switchboard_server::Server;
use switchboard_wire::Skill;

use crate::harness::{ALICE, BOB, Dir, serve, serve_callers};

/// Writes the skill `name` (its `SKILL.md` and a template holding
/// `template`) under `root`.
fn write_skill(root: &std::path::Path, name: &str, template: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!(
            "---\nname: {name}\ndescription: The {name} skill\n---\nRead `templates/minutes.md`.\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("templates/minutes.md"), template).unwrap();
}

/// A server named `name` serving the skills in `root` over HTTP; its URL.
async fn skill_server(name: &str, root: &std::path::Path) -> String {
    let server = Server::builder(name, "1.0.0")
        .skills_dir(root)
        .build()
        .unwrap();
    let (url, served) = crate::util::serve(server).await;
    served.detach();
    url
}

/// The entries a server lists to a client of its own.
async fn listed_directly(url: &str) -> Vec<Skill> {
    let transport = HttpTransport::builder("direct", url).build().unwrap();
    let client = Client::builder("direct", transport)
        .connect()
        .await
        .unwrap();
    client.list_skills().await.unwrap().items
}

/// The entry at `uri` among `skills`.
fn entry<'a>(skills: &'a [Skill], uri: &str) -> &'a Skill {
    skills
        .iter()
        .find(|s| s.uri == uri)
        .unwrap_or_else(|| panic!("no {uri} among {skills:#?}"))
}

/// The `(uri, digest, size)` of every file of `skill`.
fn files(skill: &Skill) -> Vec<(String, String, u64)> {
    skill
        .files()
        .unwrap()
        .iter()
        .map(|f| (f.uri.clone(), f.digest.clone(), f.size))
        .collect()
}

// SK-ENT-1/2, SK-SEC-7/8, SK-SEC-24, SK-VER-8: two servers serve a skill at
// the same URI; the gateway lists both under URIs naming their alias,
// with the frontmatter, every digest and every size as the servers sent
// them, and routes each get, file read and directory read to the server
// that owns the skill: the bytes verify against the entry end to end. A
// caller whose rules allow one skill (`skill:ALIAS:PATH`) sees and loads
// that one only; what it may not reach is unknown to it (-32602), and
// every request leaves one audit line naming its caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_served_per_alias_routed_to_their_server_and_ruled_per_caller() {
    let dir = Dir::new();
    let (root_a, root_b) = (dir.path("skills-a"), dir.path("skills-b"));
    write_skill(&root_a, "meeting-notes", "# Minutes of server a\n");
    write_skill(&root_a, "secret-plan", "# Plan\n");
    write_skill(&root_b, "meeting-notes", "# Minutes of server b\n");
    let (url_a, url_b) = (
        skill_server("server-a", &root_a).await,
        skill_server("server-b", &root_b).await,
    );
    let host = dir
        .mount(json!({
            "mcpServers": {
                "a": {"type": "http", "url": url_a},
                "b": {"type": "http", "url": url_b}
            },
            "principals": {"bob": {"allow": ["skill:a:meeting-*"]}}
        }))
        .await;
    let (_gateway, [alice, bob]) = serve_callers(&host, [("alice", ALICE), ("bob", BOB)]).await;

    // SK-CAP-1/2/4: declared because the servers declare it.
    let declared = alice.skills_capability().expect("the extension declared");
    assert!(declared.directory_read(), "{declared:?}");
    assert!(alice.server().unwrap().capabilities.resources.is_some());

    // alice has no entry: every skill, each under its alias.
    let listed = alice.list_skills().await.unwrap().items;
    let uris: Vec<&str> = listed.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://a/meeting-notes/SKILL.md",
            "skill://a/secret-plan/SKILL.md",
            "skill://b/meeting-notes/SKILL.md",
        ]
    );
    // Digests, sizes and frontmatter as each server lists them; only the
    // URIs are the gateway's.
    for (alias, url) in [("a", &url_a), ("b", &url_b)] {
        for origin in listed_directly(url).await {
            let served = entry(
                &listed,
                &origin.uri.replace("skill://", &format!("skill://{alias}/")),
            );
            assert_eq!(served.frontmatter, origin.frontmatter);
            let theirs: Vec<(String, String, u64)> = files(&origin)
                .into_iter()
                .map(|(u, d, s)| (u.replace("skill://", &format!("skill://{alias}/")), d, s))
                .collect();
            assert_eq!(files(served), theirs, "{alias}: {}", origin.uri);
        }
    }

    // Each template from its own server, verified against the entry.
    for (alias, text) in [
        ("a", "# Minutes of server a\n"),
        ("b", "# Minutes of server b\n"),
    ] {
        let skill = entry(&listed, &format!("skill://{alias}/meeting-notes/SKILL.md"));
        let template = format!("skill://{alias}/meeting-notes/templates/minutes.md");
        let bytes = alice.fetch_skill_file(skill, &template).await.unwrap();
        assert_eq!(bytes, text.as_bytes());
        let md = alice.fetch_skill_file(skill, &skill.uri).await.unwrap();
        assert!(
            String::from_utf8(md)
                .unwrap()
                .contains("templates/minutes.md")
        );
        // skills/get answers for the owning server, with the same entry.
        let got = alice.get_skill(&skill.uri).await.unwrap().skill;
        assert_eq!(&got, skill);
    }
    // Directory reads too: the children under the gateway's URIs.
    let children = alice
        .read_directory("skill://b/meeting-notes")
        .await
        .unwrap()
        .items;
    let names: Vec<&str> = children.iter().map(|r| r.uri.as_str()).collect();
    assert!(
        names.contains(&"skill://b/meeting-notes/SKILL.md")
            && names.contains(&"skill://b/meeting-notes/templates"),
        "{names:?}"
    );
    // SK-GET-3: a skill no server serves.
    let unknown = alice
        .get_skill("skill://c/meeting-notes/SKILL.md")
        .await
        .unwrap_err();
    assert!(
        unknown.to_string().contains("-32602") || unknown.to_string().contains("No skill"),
        "{unknown}"
    );

    // bob: only what its rule names.
    let seen_before_bob = dir.audit().len();
    let listed = bob.list_skills().await.unwrap().items;
    let uris: Vec<&str> = listed.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(uris, ["skill://a/meeting-notes/SKILL.md"]);
    let skill = &listed[0];
    let bytes = bob
        .fetch_skill_file(skill, "skill://a/meeting-notes/templates/minutes.md")
        .await
        .unwrap();
    assert_eq!(bytes, b"# Minutes of server a\n");
    for uri in [
        "skill://a/secret-plan/SKILL.md",
        "skill://b/meeting-notes/SKILL.md",
    ] {
        let refused = bob.get_skill(uri).await.unwrap_err();
        assert!(
            refused.to_string().contains("No skill is served"),
            "{uri}: {refused}"
        );
    }
    let refused = bob
        .read_resource("skill://b/meeting-notes/templates/minutes.md")
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("No skill is served"),
        "{refused}"
    );
    let refused = bob
        .read_directory("skill://a/secret-plan")
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("bob"), "{refused}");

    // One line per request, naming its caller and the owning server.
    let lines = dir.audit();
    let (alices, bobs) = lines.split_at(seen_before_bob);
    let line = |lines: &[Value], method: &str, alias: &str, tool: &str| {
        lines
            .iter()
            .find(|l| l["method"] == method && l["alias"] == alias && l["tool"] == tool)
            .cloned()
            .unwrap_or_else(|| panic!("no {method} {alias} {tool} line in {lines:#?}"))
    };
    for alias in ["a", "b"] {
        let read = line(
            alices,
            "resources/read",
            alias,
            "skill://meeting-notes/templates/minutes.md",
        );
        assert_eq!(read["principal"], "alice", "{read}");
        assert_eq!(read["outcome"], "ok", "{read}");
        let got = line(
            alices,
            "skills/get",
            alias,
            "skill://meeting-notes/SKILL.md",
        );
        assert_eq!(got["principal"], "alice", "{got}");
    }
    let ok = line(
        bobs,
        "resources/read",
        "a",
        "skill://meeting-notes/templates/minutes.md",
    );
    assert_eq!(
        (&ok["principal"], &ok["outcome"]),
        (&json!("bob"), &json!("ok"))
    );
    for (method, alias, tool) in [
        ("skills/get", "a", "skill://secret-plan/SKILL.md"),
        ("skills/get", "b", "skill://meeting-notes/SKILL.md"),
        (
            "resources/read",
            "b",
            "skill://meeting-notes/templates/minutes.md",
        ),
        ("resources/directory/read", "a", "skill://secret-plan"),
    ] {
        let denied = line(bobs, method, alias, tool);
        assert_eq!(denied["principal"], "bob", "{denied}");
        assert_eq!(denied["outcome"], "denied", "{denied}");
    }
    // Every line of bob's names bob.
    assert!(bobs.iter().all(|l| l["principal"] == "bob"), "{bobs:#?}");
    host.shutdown().await;
}

// Under `"principalsDefault": "deny"`, a caller without a `principals`
// entry is listed no skill and reads none, as it is refused every tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_without_an_entry_gets_no_skill_under_principals_default_deny() {
    let dir = Dir::new();
    let root = dir.path("skills");
    write_skill(&root, "meeting-notes", "# Minutes\n");
    let url = skill_server("server-a", &root).await;
    let host = dir
        .mount(json!({
            "mcpServers": {"a": {"type": "http", "url": url}},
            "principals": {"bob": {"allow": ["skill:a:meeting-notes"]}},
            "principalsDefault": "deny"
        }))
        .await;
    let (_gateway, [alice, bob]) = serve_callers(&host, [("alice", ALICE), ("bob", BOB)]).await;
    assert_eq!(bob.list_skills().await.unwrap().items.len(), 1);
    assert!(alice.list_skills().await.unwrap().items.is_empty());
    let uri = "skill://a/meeting-notes/SKILL.md";
    let refused = alice.get_skill(uri).await.unwrap_err();
    assert!(
        refused.to_string().contains("No skill is served"),
        "{refused}"
    );
    let refused = alice.read_resource(uri).await.unwrap_err();
    assert!(
        refused.to_string().contains("No skill is served"),
        "{refused}"
    );
    let denied = dir.audit();
    let last = denied.last().unwrap();
    assert_eq!(
        (&last["principal"], &last["outcome"]),
        (&json!("alice"), &json!("denied"))
    );
    host.shutdown().await;
}

// A gateway whose servers serve no skills does not declare the extension.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_skills_extension_without_a_server_declaring_it() {
    let dir = Dir::new();
    let host = dir
        .mount(json!({"mcpServers": {"mock": crate::harness::stdio(&[])}}))
        .await;
    let gateway = serve(&host, GatewayOptions::default()).await;
    let client = crate::harness::client(&gateway.url, None).await;
    assert!(client.skills_capability().is_none());
    assert!(client.list_skills().await.is_err());
    host.shutdown().await;
}
