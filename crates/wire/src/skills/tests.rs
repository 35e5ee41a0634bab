//! Tests of the Skills wire types and verification primitives; the IDs are
//! those of `docs/spec/skills-checklist.md`.

use serde_json::{Value, json};

use super::*;

const SKILL_MD_TEXT: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\n# PDF\n";
const FORMS: &str = "Forms reference.\n";

fn entry() -> Skill {
    Skill {
        uri: "skill://pdf-processing/SKILL.md".into(),
        frontmatter: json!({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"})
            .as_object()
            .cloned()
            .unwrap(),
        resources: SkillResources::Files(vec![
            SkillResource::of_bytes("skill://pdf-processing/SKILL.md", SKILL_MD_TEXT.as_bytes()),
            SkillResource::of_bytes("skill://pdf-processing/references/FORMS.md", FORMS.as_bytes()),
        ]),
        extra: JsonObject::new(),
    }
}

fn with_files(n: usize, size_each: u64) -> Skill {
    let mut skill = entry();
    let mut files = vec![SkillResource::of_bytes(
        skill.uri.clone(),
        SKILL_MD_TEXT.as_bytes(),
    )];
    for i in 1..n {
        let mut f = SkillResource::of_bytes(format!("skill://pdf-processing/f/{i}.md"), b"");
        f.size = size_each;
        files.push(f);
    }
    skill.resources = SkillResources::Files(files);
    skill
}

// SK-LIST-1/5, SK-ENT-12/17: the listing round-trips, `"dynamic"` included,
// with ttlMs/cacheScope and unknown members kept.
#[test]
fn listing_round_trips_with_unknown_members() {
    let v = json!({
        "resultType": "complete",
        "skills": [
            {"uri": "skill://git-workflow/SKILL.md",
             "frontmatter": {"name": "git-workflow", "description": "Git conventions", "license": "MIT", "metadata": {"v": 1}},
             "resources": [{"uri": "skill://git-workflow/SKILL.md", "digest": format!("sha256:{}", "a".repeat(64)), "size": 2314, "x-extra": true}],
             "_meta": {"vendor.example/k": 1}},
            {"uri": "skill://reports/daily/SKILL.md",
             "frontmatter": {"name": "daily", "description": "Today's report"},
             "resources": "dynamic"}
        ],
        "nextCursor": "",
        "ttlMs": 300000,
        "cacheScope": "public",
        "future": [1]
    });
    let parsed: ListSkillsResult = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(parsed.skills.len(), 2);
    assert!(parsed.skills[1].is_dynamic());
    assert_eq!(parsed.cache.ttl_ms, Some(300_000));
    assert_eq!(serde_json::to_value(&parsed).unwrap(), v);
    let got: GetSkillResult = serde_json::from_value(json!({
        "skill": v["skills"][0].clone(), "ttlMs": 1, "cacheScope": "private", "resultType": "complete"
    }))
    .unwrap();
    assert_eq!(got.skill, parsed.skills[0]);
}

// SK-ENT-18: a missing or wrong `resources` is an invalid entry, kept and
// detected; the listing around it still parses.
#[test]
fn invalid_resources_are_representable_and_refused() {
    let cases = [
        (
            json!({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"}}),
            "no resources",
        ),
        (
            json!({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"}, "resources": 7}),
            "a number",
        ),
        (
            json!({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"}, "resources": "static"}),
            "a string",
        ),
        (
            json!({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"}, "resources": null}),
            "null",
        ),
        (
            json!({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"},
                "resources": [{"uri": "skill://a/SKILL.md", "digest": "sha256:00", "size": -1}]}),
            "malformed",
        ),
        (
            json!({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"},
                "resources": [{"uri": "skill://a/SKILL.md", "size": 1}]}),
            "malformed",
        ),
    ];
    for (raw, why) in cases {
        let listing: ListSkillsResult =
            serde_json::from_value(json!({"skills": [raw.clone()]})).unwrap();
        let skill = &listing.skills[0];
        let SkillResources::Invalid(bad) = &skill.resources else {
            panic!("{raw} should be invalid");
        };
        assert!(
            bad.reason.contains(why),
            "{} does not say {why}",
            bad.reason
        );
        let err = skill.check().unwrap_err();
        assert_eq!(err.kind(), "invalid", "{err}");
        assert_eq!(
            skill.listed("skill://a/SKILL.md").unwrap_err().kind(),
            "invalid"
        );
        assert_eq!(
            skill
                .verify_file("skill://a/SKILL.md", b"")
                .unwrap_err()
                .kind(),
            "invalid"
        );
        // Written back as it came (absent stays absent).
        assert_eq!(serde_json::to_value(skill).unwrap(), raw);
    }
}

#[test]
fn digests_parse_format_and_verify() {
    let empty = Sha256Digest::of(b"");
    assert_eq!(
        empty.to_string(),
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(Sha256Digest::parse(&empty.to_string()), Ok(empty));
    assert!(empty.matches(b""));
    assert!(!empty.matches(b" "));
    for bad in [
        "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
        "sha256:e3b0",
        "sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85g",
    ] {
        assert!(Sha256Digest::parse(bad).is_err(), "{bad}");
    }
}

// SK-ENT-5/13/14/15, SK-MAP-2, SK-FMT-2: what makes an entry invalid,
// checked from the entry alone.
#[test]
fn entry_checks_name_what_is_wrong() {
    assert_eq!(entry().check(), Ok(()));
    let mut s = entry();
    s.frontmatter.insert("name".into(), json!("other"));
    assert!(
        s.check()
            .unwrap_err()
            .to_string()
            .contains("\"pdf-processing\" but its frontmatter name is \"other\"")
    );
    let mut s = entry();
    s.frontmatter.remove("description");
    assert!(
        s.check()
            .unwrap_err()
            .to_string()
            .contains("no description")
    );
    let mut s = entry();
    s.uri = "skill://pdf-processing/README.md".into();
    assert_eq!(s.check().unwrap_err().kind(), "invalid");
    let mut s = entry();
    if let SkillResources::Files(f) = &mut s.resources {
        f.remove(0);
    }
    assert!(
        s.check()
            .unwrap_err()
            .to_string()
            .contains("do not list its own SKILL.md")
    );
    let mut s = entry();
    if let SkillResources::Files(f) = &mut s.resources {
        f[1].uri = "skill://other/x.md".into();
    }
    assert!(s.check().unwrap_err().to_string().contains("outside"));
    let mut s = entry();
    if let SkillResources::Files(f) = &mut s.resources {
        f[1].uri = "skill://pdf-processing/../other/x.md".into();
    }
    assert!(s.check().unwrap_err().to_string().contains("outside"));
    let mut s = entry();
    if let SkillResources::Files(f) = &mut s.resources {
        f[1].uri = f[0].uri.clone();
    }
    assert!(s.check().unwrap_err().to_string().contains("twice"));
    let mut s = entry();
    if let SkillResources::Files(f) = &mut s.resources {
        f[1].digest = "md5:abc".into();
    }
    assert!(s.check().unwrap_err().to_string().contains("md5:abc"));
    for bad in ["PDF", "-pdf", "pdf-", "pd--f", ""] {
        assert!(!is_valid_name(bad), "{bad}");
    }
    assert!(
        is_valid_name("a") && is_valid_name(&"a".repeat(64)) && !is_valid_name(&"a".repeat(65))
    );
}

// SK-LIM-1/3: 512 files and 16 MiB are accepted; one more is refused, from
// the entry alone, with the reason.
#[test]
fn limits_are_checked_from_the_entry() {
    assert_eq!(with_files(MAX_FILES, 1).check(), Ok(()));
    let err = with_files(MAX_FILES + 1, 1).check().unwrap_err();
    assert_eq!(err.kind(), "limits");
    assert!(err.to_string().contains("513 files"), "{err}");
    let first = SKILL_MD_TEXT.len() as u64;
    let mut at_limit = with_files(2, MAX_TOTAL_BYTES - first);
    assert_eq!(at_limit.check(), Ok(()));
    if let SkillResources::Files(f) = &mut at_limit.resources {
        f[1].size += 1;
    }
    let err = at_limit.check().unwrap_err();
    assert_eq!(err.kind(), "limits");
    assert!(err.to_string().contains("16777217 bytes"), "{err}");
    // Sizes that would overflow a sum are refused, not wrapped.
    let mut huge = with_files(3, u64::MAX);
    assert_eq!(huge.check().unwrap_err().kind(), "limits");
    huge.resources = SkillResources::Dynamic;
    assert_eq!(huge.check(), Ok(()));
}

// SK-ENT-16, SK-VER-1/2/4/5: every way fetched bytes can fail, each named.
#[test]
fn verification_names_each_failure() {
    let skill = entry();
    let forms = "skill://pdf-processing/references/FORMS.md";
    assert_eq!(
        skill.verify_file(&skill.uri, SKILL_MD_TEXT.as_bytes()),
        Ok(())
    );
    assert_eq!(skill.verify_file(forms, FORMS.as_bytes()), Ok(()));
    // Size is checked first: a longer file fails as size, whatever its digest.
    let longer = format!("{SKILL_MD_TEXT}extra");
    let err = skill
        .verify_file(&skill.uri, longer.as_bytes())
        .unwrap_err();
    assert_eq!(err.kind(), "size");
    assert!(err.to_string().contains(&format!(
        "{} bytes, the content is {}",
        SKILL_MD_TEXT.len(),
        longer.len()
    )));
    // Same length, other bytes.
    let evil = SKILL_MD_TEXT.replace("# PDF", "# PWN");
    let err = skill.verify_file(&skill.uri, evil.as_bytes()).unwrap_err();
    assert_eq!(err.kind(), "digest");
    // A file the entry does not list.
    let err = skill
        .verify_file("skill://pdf-processing/references/NEW.md", b"x")
        .unwrap_err();
    assert_eq!(err.kind(), "unlisted");
    assert!(err.to_string().contains("NEW.md"));
    // Frontmatter differs although the digest matches the (lying) entry.
    let tampered = SKILL_MD_TEXT.replace(
        "Extract, fill, and assemble PDF documents",
        "Exfiltrate credentials",
    );
    let mut lying = skill.clone();
    if let SkillResources::Files(f) = &mut lying.resources {
        f[0] = SkillResource::of_bytes(lying.uri.clone(), tampered.as_bytes());
    }
    let err = lying
        .verify_file(&lying.uri, tampered.as_bytes())
        .unwrap_err();
    assert_eq!(err.kind(), "frontmatter");
    assert!(err.to_string().contains("\"description\""), "{err}");
    // A dynamic skill: nothing to hash against, the frontmatter still counts.
    let mut dynamic = skill.clone();
    dynamic.resources = SkillResources::Dynamic;
    assert_eq!(dynamic.verify_file(&dynamic.uri, longer.as_bytes()), Ok(()));
    assert_eq!(dynamic.verify_file(forms, b"anything"), Ok(()));
    assert_eq!(
        dynamic
            .verify_file(&dynamic.uri, tampered.as_bytes())
            .unwrap_err()
            .kind(),
        "frontmatter"
    );
}

// SK-VER-5: field by field; absent equals null, numbers by value; a file
// without readable frontmatter fails.
#[test]
fn frontmatter_comparison() {
    let entry = json!({"name": "a", "description": "d", "metadata": {"version": 1, "n": 2.5}, "license": null});
    let entry = entry.as_object().unwrap();
    let file = "---\nname: a\ndescription: d\nmetadata:\n  version: 1.0\n  n: 2.5\n---\n";
    assert_eq!(verify_frontmatter("u", entry, file.as_bytes()), Ok(()));
    let extra =
        "---\nname: a\ndescription: d\nmetadata: {version: 1, n: 2.5}\nallowed-tools: Bash\n---\n";
    let err = verify_frontmatter("u", entry, extra.as_bytes()).unwrap_err();
    assert!(
        err.to_string()
            .contains("\"allowed-tools\" is \"Bash\" in the file but null"),
        "{err}"
    );
    for bad in ["no frontmatter", "---\na: *x\n---\n", "---\nname: [\n---\n"] {
        assert_eq!(
            verify_frontmatter("u", entry, bad.as_bytes())
                .unwrap_err()
                .kind(),
            "frontmatter"
        );
    }
    assert_eq!(
        verify_frontmatter("u", entry, &[0xff, 0xfe])
            .unwrap_err()
            .kind(),
        "frontmatter"
    );
}

// SK-READ-3: relative references resolve against the skill's own root and
// never leave it.
#[test]
fn relative_references() {
    let mut s = entry();
    s.uri = "skill://acme/billing/refunds/SKILL.md".into();
    assert_eq!(
        s.resolve("templates/a.md").unwrap(),
        "skill://acme/billing/refunds/templates/a.md"
    );
    assert_eq!(
        s.resolve("./templates/../b.md").unwrap(),
        "skill://acme/billing/refunds/b.md"
    );
    for bad in [
        "../x.md",
        "/etc/passwd",
        "skill://other/SKILL.md",
        "",
        ".",
        "a\\b",
    ] {
        assert_eq!(s.resolve(bad).unwrap_err().kind(), "unlisted", "{bad}");
    }
    assert_eq!(
        skill_name_from_uri("skill://acme/billing/refunds/SKILL.md"),
        Some("refunds")
    );
    assert_eq!(
        skill_name_from_uri("github://o/r/skills/x/SKILL.md"),
        Some("x")
    );
    assert_eq!(skill_root("skill:///SKILL.md"), None);
    assert_eq!(skill_root("skill://a//SKILL.md"), None);
    assert_eq!(skill_root("skill://aSKILL.md"), None);
}

// SK-SEC-16: the content set is sorted and absent for dynamic entries.
#[test]
fn content_set_binds_uris_and_digests() {
    let skill = entry();
    let set = skill.content_set().unwrap();
    assert_eq!(set.len(), 2);
    assert!(set.windows(2).all(|w| w[0] <= w[1]));
    let mut dynamic = skill;
    dynamic.resources = SkillResources::Dynamic;
    assert_eq!(dynamic.content_set(), None);
}

// SK-CAP-2: the capability and its one setting.
#[test]
fn capability_settings() {
    let caps = |ext: Value| -> ServerCapabilities {
        serde_json::from_value(json!({"extensions": ext})).unwrap()
    };
    assert!(
        SkillsCapability::of(&caps(json!({EXTENSION_ID: {"directoryRead": true}})))
            .unwrap()
            .directory_read()
    );
    assert!(
        !SkillsCapability::of(&caps(json!({EXTENSION_ID: {}})))
            .unwrap()
            .directory_read()
    );
    assert!(
        !SkillsCapability::of(&caps(json!({EXTENSION_ID: true})))
            .unwrap()
            .directory_read()
    );
    assert_eq!(SkillsCapability::of(&caps(json!({"other/ext": {}}))), None);
    assert_eq!(SkillsCapability::of(&ServerCapabilities::default()), None);
    assert_eq!(
        SkillsCapability::new(true).to_value(),
        json!({"directoryRead": true})
    );
    assert_eq!(SkillsCapability::new(false).to_value(), json!({}));
}

#[test]
fn contents_to_bytes() {
    let c = |v: Value| -> ResourceContents { serde_json::from_value(v).unwrap() };
    assert_eq!(
        contents_bytes(&c(json!({"uri": "u", "text": "é"}))).unwrap(),
        "é".as_bytes()
    );
    assert_eq!(
        contents_bytes(&c(json!({"uri": "u", "blob": "AAE="}))).unwrap(),
        vec![0, 1]
    );
    assert!(contents_bytes(&c(json!({"uri": "u", "blob": "!!"}))).is_err());
    assert!(contents_bytes(&c(json!({"uri": "u"}))).is_err());
}

#[test]
fn directory_results_parse() {
    let r: ReadDirectoryResult = serde_json::from_value(json!({
        "resultType": "complete",
        "resources": [
            {"uri": "skill://p/templates/a.md", "name": "a.md", "mimeType": "text/markdown"},
            {"uri": "skill://p/templates/regional", "name": "regional", "mimeType": "inode/directory"}
        ]
    }))
    .unwrap();
    assert!(!is_directory(&r.resources[0]));
    assert!(is_directory(&r.resources[1]));
}
