//! Skills served by the framework (`io.modelcontextprotocol/skills`): from
//! a directory on disk and from code, over the real stdio runner (the
//! `skills` example as a child process) and the HTTP runner. IDs are those
//! of `docs/spec/skills-checklist.md`.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Value, json};
use switchboard_server::http::HttpOptions;
use switchboard_server::{BuildError, Server, SkillSpec};
use switchboard_wire::skills::{EXTENSION_ID, contents_bytes};
use switchboard_wire::{ResourceContents, Skill, SkillError};

use crate::util::*;

const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0, 0xff, 1, 2];

fn write(root: &Path, path: &str, bytes: &[u8]) {
    let file = root.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, bytes).unwrap();
}

fn skill_md(name: &str, description: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\nlicense: MIT\n---\n\n# {name}\n\nSee templates/a.md.\n"
    )
}

/// Writes a valid `SKILL.md` at `path` with `name` and `description`.
fn write_skill(root: &Path, path: &str, name: &str, description: &str) {
    write(root, path, skill_md(name, description).as_bytes());
}

/// A skills directory: two valid skills (one nesting a third, one under a
/// prefix), two invalid ones, a hidden one and a loose file.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_skill(root, "alpha/SKILL.md", "alpha", "First skill");
    write(root, "alpha/templates/a.md", b"# Template A\n");
    write(root, "alpha/templates/regional/b.md", b"# Template B\n");
    write(root, "alpha/logo.png", PNG);
    write_skill(root, "alpha/helper/SKILL.md", "helper", "Nested helper");
    write(root, "alpha/helper/notes.txt", b"notes\n");
    write_skill(
        root,
        "acme/billing/refunds/SKILL.md",
        "refunds",
        "Refund requests",
    );
    write(
        root,
        "acme/billing/refunds/examples/email.md",
        b"Dear customer,\n",
    );
    write_skill(
        root,
        "wrong-name/SKILL.md",
        "other",
        "Name is not the directory",
    );
    write(
        root,
        "no-description/SKILL.md",
        b"---\nname: no-description\n---\n",
    );
    write_skill(root, ".hidden/SKILL.md", "hidden", "Hidden");
    write(root, "loose.md", b"not in a skill\n");
    dir
}

/// The [`fixture`] served by a framework server over HTTP.
async fn fixture_over_http() -> (tempfile::TempDir, Http) {
    let dir = fixture();
    let server = Server::builder("skills", "1")
        .skills_dir(dir.path())
        .build()
        .unwrap();
    let http = start(server, HttpOptions::new()).await;
    (dir, http)
}

/// The skill entry of a `skills/get` result.
fn entry(result: Value) -> Skill {
    serde_json::from_value(result["skill"].clone()).unwrap()
}

/// [`rpc`] with `{"uri": uri}` as the params.
async fn rpc_uri(c: &mut Child, id: u64, method: &str, uri: &str) -> Value {
    rpc(c, id, method, json!({ "uri": uri })).await
}

async fn rpc(c: &mut Child, id: u64, method: &str, params: Value) -> Value {
    c.request(json!(id), method, params).await;
    let r = c.response().await;
    assert_eq!(r["id"], id);
    r
}

/// Every entry of `skills/list`, page by page.
async fn list_all(c: &mut Child) -> (Vec<Skill>, usize) {
    let mut skills = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let r = rpc(c, 100 + pages, "skills/list", params).await;
        let result = &r["result"];
        assert_eq!(result["resultType"], "complete", "SK-LIST-1: {r}");
        assert!(
            result["ttlMs"].is_number() && result["cacheScope"].is_string(),
            "SK-LIST-5: {r}"
        );
        let page: Vec<Skill> = serde_json::from_value(result["skills"].clone()).unwrap();
        skills.extend(page);
        pages += 1;
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    (skills, usize::try_from(pages).unwrap())
}

fn bytes_of(result: &Value) -> (Vec<u8>, ResourceContents) {
    let contents: Vec<ResourceContents> =
        serde_json::from_value(result["contents"].clone()).unwrap();
    assert_eq!(contents.len(), 1);
    (contents_bytes(&contents[0]).unwrap(), contents[0].clone())
}

// SK-CAP-1/2/4, SK-LIST-1/4/5, SK-ENT-12/13/15/19, SK-MAP-2, SK-GET-1/3,
// SK-DIR-1/2/3, SK-ERR-1: the whole surface over the stdio runner.
#[tokio::test]
async fn serves_a_skills_directory_over_stdio() {
    let dir = fixture();
    let mut c = Child::spawn_with(
        "skills",
        &[dir.path().as_os_str()],
        &[("SKILLS_PAGE_SIZE", "2")],
    );

    let discover = rpc(&mut c, 1, "server/discover", json!({})).await;
    let caps = &discover["result"]["capabilities"];
    assert_eq!(
        caps["extensions"][EXTENSION_ID],
        json!({"directoryRead": true})
    );
    assert!(caps["resources"].is_object(), "SK-CAP-4: {caps}");

    let (skills, pages) = list_all(&mut c).await;
    let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://alpha/SKILL.md",
            "skill://alpha/helper/SKILL.md",
            "skill://reports/daily/SKILL.md",
        ],
        "the invalid, hidden and loose ones are not served (SK-MAP-2)"
    );
    assert_eq!(pages, 2, "page size 2: entries are never split (SK-LIST-4)");
    for skill in &skills {
        assert_eq!(skill.check(), Ok(()), "{}", skill.uri);
    }
    let alpha = &skills[1];
    assert_eq!(alpha.frontmatter["license"], "MIT", "SK-ENT-4");
    let files: HashSet<&str> = alpha
        .files()
        .unwrap()
        .iter()
        .map(|f| f.uri.as_str())
        .collect();
    assert_eq!(
        files,
        HashSet::from([
            "skill://alpha/SKILL.md",
            "skill://alpha/templates/a.md",
            "skill://alpha/templates/regional/b.md",
            "skill://alpha/logo.png",
            "skill://alpha/helper/SKILL.md",
            "skill://alpha/helper/notes.txt",
        ]),
        "the enclosing manifest lists the nested skill's files (SK-ENT-19)"
    );
    assert!(skills[3].is_dynamic(), "SK-ENT-17");

    // Every listed file reads back with the listed size and digest; the
    // image as a blob, text as text; SKILL.md as text/markdown.
    let mut id = 10;
    for skill in skills.iter().filter(|s| !s.is_dynamic()) {
        for file in skill.files().unwrap() {
            id += 1;
            let r = rpc(&mut c, id, "resources/read", json!({"uri": file.uri})).await;
            let (bytes, contents) = bytes_of(&r["result"]);
            assert_eq!(skill.verify_file(&file.uri, &bytes), Ok(()), "{}", file.uri);
            if file.uri.ends_with(".png") {
                assert!(
                    contents.blob.is_some() && contents.mime_type.as_deref() == Some("image/png")
                );
            } else {
                assert!(contents.text.is_some(), "{}", file.uri);
            }
            if file.uri.ends_with("/SKILL.md") {
                assert_eq!(
                    contents.mime_type.as_deref(),
                    Some("text/markdown"),
                    "SK-MAP-6"
                );
            }
        }
    }

    // skills/get: the same entry, no cursor; unknown → -32602 (SK-GET-3).
    let r = rpc_uri(&mut c, 50, "skills/get", "skill://alpha/helper/SKILL.md").await;
    let got: Skill = serde_json::from_value(r["result"]["skill"].clone()).unwrap();
    assert_eq!(&got, &skills[2]);
    assert!(
        r["result"].get("nextCursor").is_none() && r["result"]["ttlMs"].is_number(),
        "SK-GET-1"
    );
    let r = rpc_uri(&mut c, 51, "skills/get", "skill://wrong-name/SKILL.md").await;
    assert_eq!(r["error"]["code"], -32602);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("skill://wrong-name/SKILL.md"),
        "SK-ERR-2"
    );
    let r = rpc(&mut c, 52, "skills/get", json!({})).await;
    assert_eq!(r["error"]["code"], -32602);

    // Directory reads: direct children, subdirectories as inode/directory
    // without a trailing slash (SK-DIR-3); files and unknowns are -32602.
    // Paged like resources/list (page size 2 here).
    let r = rpc_uri(&mut c, 60, "resources/directory/read", "skill://alpha").await;
    let mut children = r["result"]["resources"].as_array().unwrap().clone();
    assert_eq!(r["result"]["resultType"], "complete", "SK-DIR-1");
    let cursor = r["result"]["nextCursor"].as_str().unwrap();
    let r = rpc(
        &mut c,
        66,
        "resources/directory/read",
        json!({"uri": "skill://alpha", "cursor": cursor}),
    )
    .await;
    assert!(r["result"].get("nextCursor").is_none());
    children.extend(r["result"]["resources"].as_array().unwrap().iter().cloned());
    let children: Vec<(String, String)> = children
        .iter()
        .map(|c| {
            (
                c["uri"].as_str().unwrap().to_owned(),
                c["mimeType"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        children,
        [
            ("skill://alpha/SKILL.md".into(), "text/markdown".into()),
            ("skill://alpha/helper".into(), "inode/directory".into()),
            ("skill://alpha/logo.png".into(), "image/png".into()),
            ("skill://alpha/templates".into(), "inode/directory".into()),
        ]
    );
    let r = rpc_uri(
        &mut c,
        61,
        "resources/directory/read",
        "skill://alpha/templates",
    )
    .await;
    assert_eq!(r["result"]["resources"].as_array().unwrap().len(), 2);
    let r = rpc_uri(&mut c, 62, "resources/directory/read", "skill://acme").await;
    assert_eq!(r["result"]["resources"][0]["uri"], "skill://acme/billing");
    for (id, uri) in [
        (63, "skill://alpha/SKILL.md"),
        (64, "skill://nowhere"),
        (65, "skill://alpha/"),
    ] {
        let r = rpc_uri(&mut c, id, "resources/directory/read", uri).await;
        assert_eq!(r["error"]["code"], -32602, "SK-DIR-2 {uri}: {r}");
    }
    // Files of refused skills, hidden files and loose files are not served.
    for (id, uri) in [
        (70, "skill://wrong-name/SKILL.md"),
        (71, "skill://.hidden/SKILL.md"),
        (72, "skill://loose.md"),
    ] {
        let r = rpc_uri(&mut c, id, "resources/read", uri).await;
        assert_eq!(r["error"]["code"], -32602, "SK-ERR-1 {uri}: {r}");
    }

    // The dynamic skill: generated on each read, its files listed.
    let r = rpc_uri(
        &mut c,
        80,
        "resources/read",
        "skill://reports/daily/SKILL.md",
    )
    .await;
    let (first, _) = bytes_of(&r["result"]);
    let r = rpc_uri(
        &mut c,
        81,
        "resources/read",
        "skill://reports/daily/SKILL.md",
    )
    .await;
    let (second, _) = bytes_of(&r["result"]);
    assert_ne!(first, second, "generated on each read");
    assert_eq!(
        skills[3].verify_file(&skills[3].uri, &second),
        Ok(()),
        "its frontmatter is the entry's"
    );
    let r = rpc_uri(
        &mut c,
        82,
        "resources/directory/read",
        "skill://reports/daily/data",
    )
    .await;
    assert_eq!(
        r["result"]["resources"][0]["uri"],
        "skill://reports/daily/data/today.md"
    );

    // resources/list shows each SKILL.md with its name and description
    // (SK-MAP-6).
    let mut listed = Vec::new();
    let mut params = json!({});
    for id in 90.. {
        let r = rpc(&mut c, id, "resources/list", params).await;
        listed.extend(r["result"]["resources"].as_array().unwrap().iter().cloned());
        match r["result"]["nextCursor"].as_str() {
            Some(next) => params = json!({"cursor": next}),
            None => break,
        }
    }
    assert_eq!(listed.len(), 4, "one SKILL.md per skill: {listed:?}");
    let helper = listed
        .iter()
        .find(|r| r["uri"] == "skill://alpha/helper/SKILL.md")
        .unwrap();
    assert_eq!(helper["name"], "helper");
    assert_eq!(helper["description"], "Nested helper");
    assert_eq!(helper["mimeType"], "text/markdown");

    // A cursor of another list is refused (PAGE-03 applies to skills/list).
    let tools_cursor = rpc(
        &mut c,
        99,
        "skills/list",
        json!({"cursor": "bm90IGEgY3Vyc29y"}),
    )
    .await;
    assert_eq!(tools_cursor["error"]["code"], -32602);
    c.close_stdin();
    assert!(c.wait().await.success());
}

// "Don't serve stale digests": a file changed, added or removed on disk is
// seen by the next skills request (over the HTTP runner).
#[tokio::test]
async fn changes_on_disk_are_served_at_once() {
    let (dir, http) = fixture_over_http().await;
    let get = |uri: &'static str| http.call_uri("skills/get", uri);
    let before: Skill = entry(get("skill://alpha/SKILL.md").await.result());

    // Same size, new bytes: a new digest (the size and mtime check may
    // miss a same-size change within one clock tick; the read catches it).
    write(dir.path(), "alpha/templates/a.md", b"# Template Z\n");
    let read = http
        .call_uri("resources/read", "skill://alpha/templates/a.md")
        .await
        .result();
    assert_eq!(bytes_of(&read).0, b"# Template Z\n");
    let after: Skill = entry(get("skill://alpha/SKILL.md").await.result());
    assert_eq!(
        after.verify_file("skill://alpha/templates/a.md", b"# Template Z\n"),
        Ok(())
    );
    assert_ne!(before.content_set(), after.content_set());
    // The old entry refuses the new bytes: what a host holding it sees.
    assert_eq!(
        before
            .verify_file("skill://alpha/templates/a.md", b"# Template Z\n")
            .unwrap_err()
            .kind(),
        "digest"
    );

    // A new file joins the manifest; a new skill is listed.
    write(dir.path(), "alpha/templates/c.md", b"new\n");
    write_skill(dir.path(), "gamma/SKILL.md", "gamma", "Added later");
    let after: Skill = entry(get("skill://alpha/SKILL.md").await.result());
    assert!(
        after
            .listed("skill://alpha/templates/c.md")
            .unwrap()
            .is_some()
    );
    let listing = http.call("skills/list", json!({})).await.result();
    assert!(
        listing["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["uri"] == "skill://gamma/SKILL.md")
    );

    // A removed skill is gone: get is -32602, its files unreadable.
    std::fs::remove_dir_all(dir.path().join("acme")).unwrap();
    assert_eq!(
        get("skill://acme/billing/refunds/SKILL.md")
            .await
            .error_code(),
        -32602
    );
    let r = http
        .call_uri(
            "resources/read",
            "skill://acme/billing/refunds/examples/email.md",
        )
        .await;
    assert_eq!(r.error_code(), -32602);
    // A skill that becomes invalid is withdrawn (SK-MAP-2).
    write(
        dir.path(),
        "gamma/SKILL.md",
        b"---\nname: renamed\ndescription: x\n---\n",
    );
    assert_eq!(get("skill://gamma/SKILL.md").await.error_code(), -32602);
    http.stop().await;
}

// Skills from code: fixed files (nested ones in the enclosing manifest),
// checked at build time; a dynamic skill; and the capability switches.
#[tokio::test]
async fn skills_from_code() {
    let outer = SkillSpec::new("release", skill_md("release", "Ship a release"))
        .file("steps.md", "1. Tag\n");
    let nested = SkillSpec::new("release/hotfix", skill_md("hotfix", "Ship a fix"))
        .file("data/x.bin", vec![0u8, 1, 2]);
    let server = Server::builder("code", "1")
        .page_size(1)
        .skill(outer)
        .skill(nested)
        .skills_directory_read(false)
        .build()
        .unwrap();
    let ext = server.capabilities().extensions.as_ref().unwrap();
    assert_eq!(ext[EXTENSION_ID], json!({}), "no directoryRead declared");
    let http = start(server, HttpOptions::new()).await;
    let first = http.call("skills/list", json!({})).await.result();
    assert_eq!(first["skills"].as_array().unwrap().len(), 1);
    let cursor = first["nextCursor"].as_str().unwrap();
    let second = http
        .call("skills/list", json!({"cursor": cursor}))
        .await
        .result();
    assert!(second.get("nextCursor").is_none());
    assert_eq!(
        second["skills"][0]["uri"],
        "skill://release/hotfix/SKILL.md"
    );
    let release: Skill = serde_json::from_value(first["skills"][0].clone()).unwrap();
    assert_eq!(release.uri, "skill://release/SKILL.md");
    assert!(
        release
            .listed("skill://release/hotfix/data/x.bin")
            .unwrap()
            .is_some(),
        "SK-ENT-19"
    );
    let r = http
        .call_uri("resources/read", "skill://release/hotfix/data/x.bin")
        .await
        .result();
    assert_eq!(bytes_of(&r).0, [0, 1, 2]);
    // Not declared, not served (SK-CAP-2).
    let r = http
        .call_uri("resources/directory/read", "skill://release")
        .await;
    assert_eq!(r.error_code(), -32601);
    http.stop().await;

    // Refused at build time, with the reason (SK-MAP-2, SK-FMT-2).
    let bad = |spec: SkillSpec| Server::builder("bad", "1").skill(spec).build().unwrap_err();
    let e = bad(SkillSpec::new("misnamed", skill_md("other", "d")));
    assert!(
        matches!(&e, BuildError::InvalidSkill { reason, .. } if reason.contains("\"other\"")),
        "{e}"
    );
    let e = bad(SkillSpec::new("plain", "no frontmatter"));
    assert!(e.to_string().contains("frontmatter"), "{e}");
    let e = bad(SkillSpec::new("a/../b", skill_md("b", "d")));
    assert!(matches!(e, BuildError::InvalidSkill { .. }), "{e}");
    let e = Server::builder("dup", "1")
        .skill(SkillSpec::new("a", skill_md("a", "d")))
        .skill(SkillSpec::new("a", skill_md("a", "d")))
        .build()
        .unwrap_err();
    assert!(matches!(e, BuildError::Duplicate { kind: "skill", .. }));
    let e = Server::builder("missing", "1")
        .skills_dir("/nonexistent/skills/dir")
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("cannot be read"), "{e}");
    // SK-LIM-2: over 512 files is not served.
    let mut big = SkillSpec::new("big", skill_md("big", "Too many files"));
    for i in 0..512 {
        big = big.file(format!("f/{i}.txt"), "x");
    }
    assert!(bad(big).to_string().contains("513 files"));
}

// Without a skill source the extension is not declared and its methods do
// not exist (-32601).
#[tokio::test]
async fn no_skills_no_extension() {
    let (http, _probe) = start_default().await;
    let discover = http.call("server/discover", json!({})).await.result();
    assert!(
        discover["capabilities"]["extensions"]
            .get(EXTENSION_ID)
            .is_none()
    );
    for method in ["skills/list", "skills/get", "resources/directory/read"] {
        let r = http
            .call(method, json!({"uri": "skill://a/SKILL.md"}))
            .await;
        assert_eq!(r.error_code(), -32601, "{method}");
    }
    http.stop().await;
}

// The verification primitives agree with what the server serves: a file
// the entry does not list is refused by name (SK-VER-4).
#[tokio::test]
async fn an_unlisted_file_is_refused_by_the_entry() {
    let (dir, http) = fixture_over_http().await;
    let held = entry(
        http.call_uri("skills/get", "skill://alpha/SKILL.md")
            .await
            .result(),
    );
    write(
        dir.path(),
        "alpha/templates/new.md",
        b"added after the entry was held\n",
    );
    let listed = http
        .call_uri("resources/directory/read", "skill://alpha/templates")
        .await
        .result();
    assert!(
        listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["uri"] == "skill://alpha/templates/new.md")
    );
    let err: SkillError = held.listed("skill://alpha/templates/new.md").unwrap_err();
    assert_eq!(err.kind(), "unlisted");
    http.stop().await;
}
