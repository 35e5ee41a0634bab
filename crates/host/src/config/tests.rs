use super::*;
use crate::permission::RuleKind;

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn parse(text: &str, env: &[(&str, &str)]) -> Result<Config, ConfigProblems> {
    Config::parse(
        text,
        ConfigOrigin::Flag(PathBuf::from("/cfg/.mcp.json")),
        &vars(env),
    )
    .map_err(|e| match e {
        crate::HostError::Config(problems) => problems,
        other => panic!("not a config error: {other}"),
    })
}

fn kinds(err: &ConfigProblems) -> Vec<(ProblemKind, &str)> {
    err.problems
        .iter()
        .map(|p| (p.kind, p.key.as_str()))
        .collect()
}

#[test]
fn claude_shape_with_expansion_and_switchboard_keys() {
    let text = r#"{
      "mcpServers": {
        "notes": {
          "command": "${BIN:-notes-server}",
          "args": ["--root", "${HOME}/notes"],
          "env": {"TOKEN": "${TOKEN}"},
          "cwd": "work",
          "timeoutMs": 5000,
          "toolTimeouts": {"search": 100},
          "permissions": {"allow": ["search", "mcp__notes__read_*"], "deny": ["*"]}
        },
        "tickets": {"type": "http", "url": "http://127.0.0.1:3115/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"}, "enabled": false}
      },
      "permissions": {"ask": ["mcp__tickets"]},
      "budgetChars": 100,
      "audit": "audit.jsonl",
      "breaker": {"failures": 2, "cooldownMs": 50}
    }"#;
    let c = parse(text, &[("HOME", "/h"), ("TOKEN", "t")]).unwrap();
    assert_eq!(c.servers.len(), 2);
    let notes = &c.servers[0];
    assert_eq!(
        notes.transport,
        TransportConfig::Stdio {
            command: "notes-server".into(),
            args: vec!["--root".into(), "/h/notes".into()],
            env: [("TOKEN".to_owned(), "t".into())].into(),
            cwd: Some(PathBuf::from("/cfg/work")),
        }
    );
    assert_eq!(
        c.call_timeout("notes", "search"),
        Duration::from_millis(100)
    );
    assert_eq!(
        c.call_timeout("notes", "other"),
        Duration::from_millis(5000)
    );
    assert_eq!(c.call_timeout("tickets", "x"), DEFAULT_CALL_TIMEOUT);
    let tickets = &c.servers[1];
    assert!(!tickets.enabled);
    assert_eq!(
        tickets.transport,
        TransportConfig::Http {
            url: "http://127.0.0.1:3115/mcp".into(),
            headers: [("Authorization".to_owned(), "Bearer t".into())].into(),
        }
    );
    let rules: Vec<(RuleKind, &str, &str)> = c
        .rules
        .iter()
        .map(|r| (r.kind, r.pattern.as_str(), r.source.as_str()))
        .collect();
    assert_eq!(
        rules,
        [
            (RuleKind::Ask, "mcp__tickets", "permissions.ask[0]"),
            (
                RuleKind::Allow,
                "mcp__notes__search",
                "mcpServers.notes.permissions.allow[0]"
            ),
            (
                RuleKind::Allow,
                "mcp__notes__read_*",
                "mcpServers.notes.permissions.allow[1]"
            ),
            (
                RuleKind::Deny,
                "mcp__notes",
                "mcpServers.notes.permissions.deny[0]"
            ),
        ]
    );
    assert_eq!(c.budget_chars, 100);
    assert_eq!(c.audit, Some(PathBuf::from("/cfg/audit.jsonl")));
    assert_eq!(c.lockfile, Some(PathBuf::from("/cfg/switchboard.lock")));
    assert_eq!(c.breaker.failures, 2);
}

#[test]
fn vscode_shape_with_comments_and_foreign_keys() {
    let text = r#"{
      // VS Code
      "inputs": [{"id": "k", "type": "promptString"}],
      "servers": {
        "gh": {"type": "http", "url": "https://example.invalid/mcp", "gallery": true,},
        "fs": {"command": "fs-server", "disabled": true, "autoApprove": ["read"],
               "disabledTools": ["delete"]},
      },
    }"#;
    let c = parse(text, &[]).unwrap();
    assert_eq!(c.servers[0].transport.kind(), "http");
    assert!(!c.servers[1].enabled);
    assert_eq!(c.rules.len(), 1);
    assert_eq!(c.rules[0].kind, RuleKind::Deny);
    assert_eq!(c.rules[0].pattern.as_str(), "mcp__fs__delete");
    assert!(c.notes.iter().any(|n| n.contains("inputs")));
    assert!(c.notes.iter().any(|n| n.contains("servers.fs.autoApprove")));
}

#[test]
fn environment_defaults() {
    let text = r#"{"mcpServers": {"a": {"command": "x"}}}"#;
    let c = parse(
        text,
        &[
            ("MCP_TIMEOUT", "1500"),
            ("MCP_TOOL_TIMEOUT", "2500"),
            ("MAX_MCP_OUTPUT_TOKENS", "1000"),
        ],
    )
    .unwrap();
    assert_eq!(c.timeouts.startup, Duration::from_millis(1500));
    assert_eq!(c.timeouts.call, Duration::from_millis(2500));
    assert_eq!(c.budget_chars, 4000);
    // The file's own keys win over the environment.
    let text = r#"{"mcpServers": {"a": {"command": "x"}}, "budgetChars": 10, "timeoutMs": 7}"#;
    let c = parse(
        text,
        &[("MAX_MCP_OUTPUT_TOKENS", "1000"), ("MCP_TOOL_TIMEOUT", "9")],
    )
    .unwrap();
    assert_eq!(c.budget_chars, 10);
    assert_eq!(c.timeouts.call, Duration::from_millis(7));
    let err = parse(text, &[("MCP_TIMEOUT", "soon")]).unwrap_err();
    assert_eq!(kinds(&err), [(ProblemKind::BadValue, "$MCP_TIMEOUT")]);
}

#[test]
fn the_media_allowance_defaults_to_a_mebibyte_and_zero_is_allowed() {
    let c = parse(r#"{"mcpServers": {"a": {"command": "x"}}}"#, &[]).unwrap();
    assert_eq!(c.budget_media_bytes, 1 << 20);
    let text = r#"{"mcpServers": {"a": {"command": "x"}}, "budgetMediaBytes": 0}"#;
    assert_eq!(parse(text, &[]).unwrap().budget_media_bytes, 0);
    let text = r#"{"mcpServers": {"a": {"command": "x"}}, "budgetMediaBytes": "1MB"}"#;
    let err = parse(text, &[]).unwrap_err();
    assert_eq!(kinds(&err), [(ProblemKind::BadValue, "budgetMediaBytes")]);
}

#[test]
fn every_problem_is_reported_at_once() {
    let text = r#"{
      "mcpServers": {
        "a__b": {"command": "x"},
        "ok": {"command": "${NOPE}", "timeoutMs": -1, "comand": 1},
        "web": {"type": "htp", "url": "x"}
      },
      "permissions": {"allow": ["mcp__ko__x", "notes"]},
      "budgetchars": 5
    }"#;
    let err = parse(text, &[]).unwrap_err();
    assert_eq!(
        kinds(&err),
        [
            (ProblemKind::UnknownKey, "budgetchars"),
            (ProblemKind::BadAlias, "mcpServers.a__b"),
            (ProblemKind::UnknownKey, "mcpServers.ok.comand"),
            (ProblemKind::MissingEnvVar, "mcpServers.ok.command"),
            (ProblemKind::BadValue, "mcpServers.web.type"),
            (ProblemKind::BadPattern, "permissions.allow[0]"),
            (ProblemKind::BadPattern, "permissions.allow[1]"),
        ]
    );
    let text = err.to_string();
    assert!(text.contains("did you mean \"budgetChars\""), "{text}");
    assert!(text.contains("did you mean \"command\""), "{text}");
    assert!(text.contains("did you mean mcp__ok"), "{text}");
    assert!(text.contains("did you mean \"http\""), "{text}");
    for line in text.lines() {
        assert!(line.starts_with("/cfg/.mcp.json: "), "{line}");
    }
}

#[test]
fn duplicate_aliases() {
    let err = parse(
        r#"{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}"#,
        &[],
    )
    .unwrap_err();
    assert_eq!(kinds(&err), [(ProblemKind::DuplicateAlias, "mcpServers.a")]);
    assert!(err.problems[0].position.is_some());
    let err = parse(
        r#"{"mcpServers": {"a": {"command": "x"}}, "servers": {"a": {"command": "y"}}}"#,
        &[],
    )
    .unwrap_err();
    assert_eq!(kinds(&err), [(ProblemKind::DuplicateAlias, "servers.a")]);
}

#[test]
fn transport_shape_problems() {
    let err = parse(r#"{"mcpServers": {"a": {"args": []}}}"#, &[]).unwrap_err();
    assert_eq!(kinds(&err), [(ProblemKind::MissingKey, "mcpServers.a")]);
    let err = parse(
        r#"{"mcpServers": {"a": {"type": "stdio", "command": "x", "url": "http://h"}}}"#,
        &[],
    )
    .unwrap_err();
    assert_eq!(kinds(&err), [(ProblemKind::BadValue, "mcpServers.a.url")]);
    let err = parse(
        r#"{"mcpServers": {"a": {"type": "http", "url": "ftp://h", "headers": {"Bad Name": "v"}}}}"#,
        &[],
    )
    .unwrap_err();
    assert_eq!(
        kinds(&err),
        [
            (ProblemKind::BadValue, "mcpServers.a.url"),
            (ProblemKind::BadValue, "mcpServers.a.headers.\"Bad Name\""),
        ]
    );
}

#[test]
fn per_server_pattern_for_another_server_is_refused() {
    let err = parse(
        r#"{"mcpServers": {"a": {"command": "x", "permissions": {"allow": ["mcp__b__t"]}},
                           "b": {"command": "y"}}}"#,
        &[],
    )
    .unwrap_err();
    assert_eq!(
        kinds(&err),
        [(ProblemKind::BadPattern, "mcpServers.a.permissions.allow[0]")]
    );
}

#[test]
fn syntax_errors_have_positions() {
    let err = parse("{\n  \"mcpServers\": {\n}", &[]).unwrap_err();
    assert_eq!(err.problems[0].kind, ProblemKind::Syntax);
    assert!(err.to_string().starts_with("/cfg/.mcp.json:3:"), "{err}");
}

#[test]
fn oauth_block() {
    let text = r#"{"mcpServers": {
      "auto": {"url": "https://a.example/mcp"},
      "off": {"url": "https://b.example/mcp", "oauth": false},
      "static": {"url": "https://c.example/mcp", "headers": {"authorization": "Bearer x"}},
      "client": {"url": "https://d.example/mcp", "oauth": {
        "clientId": "sb", "clientSecret": "${SECRET}", "issuer": "https://as.example",
        "scopes": ["read", "write"], "callbackPort": 8765,
        "clientMetadataUrl": "https://example.com/switchboard.json"
      }}
    }}"#;
    let c = parse(text, &[("SECRET", "s3cret")]).unwrap();
    assert_eq!(c.servers[0].oauth, OAuthSetting::Auto);
    assert_eq!(c.servers[1].oauth, OAuthSetting::Off);
    assert_eq!(c.servers[2].oauth, OAuthSetting::Auto);
    assert!(c.servers[2].transport.has_authorization_header());
    let OAuthSetting::Client(client) = &c.servers[3].oauth else {
        panic!("{:?}", c.servers[3].oauth);
    };
    assert_eq!(client.client_id.as_deref(), Some("sb"));
    assert_eq!(
        client.client_secret.as_ref().and_then(|s| s.plain()),
        Some("s3cret")
    );
    assert_eq!(client.issuer.as_deref(), Some("https://as.example"));
    assert_eq!(client.scopes, ["read", "write"]);
    assert_eq!(client.callback_port, Some(8765));
    // The secret never reaches a log line through Debug.
    let shown = format!("{client:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
}

// Issue 17: `"dpop": false` opts out of DPoP; `"assertion"` (a file or a
// command) selects the JWT-bearer grant and needs a client id.
#[test]
fn oauth_dpop_and_assertion() {
    let text = r#"{"mcpServers": {
      "plain": {"url": "https://a.example/mcp", "oauth": {"dpop": false}},
      "file": {"url": "https://b.example/mcp", "oauth": {
        "clientId": "ci", "assertion": {"file": "${DIR}/token"}}},
      "cmd": {"url": "https://c.example/mcp", "oauth": {
        "clientId": "ci", "assertion": {"command": ["gcloud", "auth", "print-identity-token"]}}}
    }}"#;
    let c = parse(text, &[("DIR", "/var/run/secrets")]).unwrap();
    let client = |i: usize| match &c.servers[i].oauth {
        OAuthSetting::Client(client) => client.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(client(0).dpop, Some(false));
    assert_eq!(client(1).dpop, None);
    assert_eq!(
        client(1).assertion,
        Some(AssertionConfig::File("/var/run/secrets/token".into()))
    );
    assert_eq!(
        client(2).assertion,
        Some(AssertionConfig::Command(vec![
            "gcloud".into(),
            "auth".into(),
            "print-identity-token".into()
        ]))
    );
    let bad = r#"{"mcpServers": {
      "a": {"url": "https://a.example/mcp", "oauth": {"dpop": "no"}},
      "b": {"url": "https://b.example/mcp", "oauth": {"assertion": {"file": "/t"}}},
      "c": {"url": "https://c.example/mcp", "oauth": {"clientId": "x", "assertion": {"url": "u"}}}
    }}"#;
    let err = parse(bad, &[]).unwrap_err().to_string();
    assert!(err.contains("dpop"), "{err}");
    assert!(err.contains("needs the client id"), "{err}");
    assert!(err.contains("assertion"), "{err}");
}

#[test]
fn oauth_block_problems() {
    let text = r#"{"mcpServers": {
      "local": {"command": "x", "oauth": {"clientId": "a"}},
      "both": {"url": "https://a.example/mcp", "headers": {"Authorization": "Bearer x"},
               "oauth": {"scopes": ["read"]}},
      "bad": {"url": "https://b.example/mcp", "oauth": {
        "clientSecret": "s", "issuer": "as.example", "scopes": ["a b"],
        "callbackPort": 70000, "clientMetadataUrl": "http://example.com/c.json",
        "clientID": "typo"
      }},
      "odd": {"url": "https://c.example/mcp", "oauth": "yes"}
    }}"#;
    let err = parse(text, &[]).unwrap_err();
    assert_eq!(
        kinds(&err),
        [
            (ProblemKind::BadValue, "mcpServers.local.oauth"),
            (ProblemKind::BadValue, "mcpServers.both.oauth"),
            (ProblemKind::UnknownKey, "mcpServers.bad.oauth.clientID"),
            (ProblemKind::MissingKey, "mcpServers.bad.oauth.clientId"),
            (ProblemKind::BadValue, "mcpServers.bad.oauth.issuer"),
            (
                ProblemKind::BadValue,
                "mcpServers.bad.oauth.clientMetadataUrl"
            ),
            (ProblemKind::BadValue, "mcpServers.bad.oauth.scopes[0]"),
            (ProblemKind::BadValue, "mcpServers.bad.oauth.callbackPort"),
            (ProblemKind::BadValue, "mcpServers.odd.oauth"),
        ]
    );
    let text = err.to_string();
    assert!(text.contains("did you mean \"clientId\""), "{text}");
    assert!(text.contains("static Authorization header"), "{text}");
}

// ROOT-03, ROOT-04: roots from the config, resolved and checked.
#[test]
fn roots_list() {
    let c = parse(
        r#"{"mcpServers": {"a": {"command": "x"}}, "roots": ["/srv/data", "rel", "file:///a%20b", "${HOME}/w"]}"#,
        &[("HOME", "/home/u")],
    )
    .unwrap();
    let roots = c.roots.unwrap();
    assert_eq!(roots[0], std::path::PathBuf::from("/srv/data"));
    assert!(
        roots[1].is_absolute() && roots[1].ends_with("rel"),
        "{roots:?}"
    );
    assert_eq!(roots[2], std::path::PathBuf::from("/a b"));
    assert_eq!(roots[3], std::path::PathBuf::from("/home/u/w"));
    assert!(
        parse(r#"{"mcpServers": {"a": {"command": "x"}}}"#, &[])
            .unwrap()
            .roots
            .is_none()
    );
    let err = parse(
        r#"{"mcpServers": {"a": {"command": "x"}}, "roots": ["file://host/x", 5, ""]}"#,
        &[],
    )
    .unwrap_err();
    let at: Vec<&str> = kinds(&err).into_iter().map(|(_, p)| p).collect();
    assert_eq!(at, ["roots[0]", "roots[1]", "roots[2]"], "{err}");
    assert!(
        parse(
            r#"{"mcpServers": {"a": {"command": "x"}}, "roots": "/x"}"#,
            &[]
        )
        .is_err()
    );
}

#[test]
fn task_timeouts_default_and_per_server() {
    let text = r#"{"mcpServers": {"a": {"command": "x", "taskTimeoutMs": 5000}, "b": {"command": "y"}}, "taskTimeoutMs": 60000}"#;
    let c = parse(text, &[]).unwrap();
    assert_eq!(c.task_timeout("a"), Duration::from_millis(5000));
    assert_eq!(c.task_timeout("b"), Duration::from_millis(60000));
    let c = parse(r#"{"mcpServers": {"a": {"command": "x"}}}"#, &[]).unwrap();
    assert_eq!(c.task_timeout("a"), super::DEFAULT_TASK_TIMEOUT);
    assert!(
        parse(
            r#"{"mcpServers": {"a": {"command": "x", "taskTimeoutMs": "soon"}}}"#,
            &[]
        )
        .is_err()
    );
}

// Issue 17: `identityProviders` names enterprise IdPs; a server's
// `"oauth": {"idp": NAME}` signs in through one (the enterprise-managed
// grant), with its client id at the server's authorization server.
#[test]
fn identity_providers_and_server_idp() {
    let text = r#"{
      "identityProviders": {
        "corp": {"issuer": "https://idp.example.com", "clientId": "sb",
                 "clientSecret": "${IDP_SECRET}", "scopes": ["email"]},
        "lab": {"issuer": "http://127.0.0.1:9000", "clientId": "sb-lab"}
      },
      "mcpServers": {
        "crm": {"url": "https://crm.example/mcp", "oauth": {"idp": "corp", "clientId": "crm-client"}}
      }
    }"#;
    let c = parse(text, &[("IDP_SECRET", "hush")]).unwrap();
    let corp = &c.identity_providers["corp"];
    assert_eq!(corp.issuer, "https://idp.example.com");
    assert_eq!(corp.client_id, "sb");
    assert_eq!(
        corp.client_secret.as_ref().and_then(|s| s.plain()),
        Some("hush")
    );
    assert_eq!(corp.scopes, vec!["email".to_owned()]);
    assert!(
        !format!("{corp:?}").contains("hush"),
        "the secret is redacted"
    );
    assert_eq!(c.identity_providers["lab"].client_secret, None);
    match &c.servers[0].oauth {
        OAuthSetting::Client(client) => {
            let idp = client.idp.as_ref().unwrap();
            assert_eq!(idp.name, "corp");
            assert_eq!(&idp.provider, corp);
            assert_eq!(client.client_id.as_deref(), Some("crm-client"));
        }
        other => panic!("{other:?}"),
    }
}

// An `idp` naming no entry is a problem with a fix (a near name is
// suggested; with no section, the fix writes one).
#[test]
fn unknown_identity_provider() {
    let text = r#"{
      "identityProviders": {"corp": {"issuer": "https://idp.example.com", "clientId": "sb"}},
      "mcpServers": {
        "crm": {"url": "https://crm.example/mcp", "oauth": {"idp": "crop", "clientId": "c"}}
      }
    }"#;
    let err = parse(text, &[]).unwrap_err();
    assert_eq!(
        kinds(&err),
        vec![(ProblemKind::BadValue, "mcpServers.crm.oauth.idp")]
    );
    let p = &err.problems[0];
    assert!(p.problem.contains("\"crop\""), "{}", p.problem);
    assert!(p.fix.contains("did you mean \"corp\""), "{}", p.fix);

    let none = r#"{"mcpServers": {
        "crm": {"url": "https://crm.example/mcp", "oauth": {"idp": "corp", "clientId": "c"}}
    }}"#;
    let err = parse(none, &[]).unwrap_err();
    assert_eq!(
        kinds(&err),
        vec![(ProblemKind::BadValue, "mcpServers.crm.oauth.idp")]
    );
    assert!(err.problems[0].fix.contains("identityProviders"), "{err}");
}

// Bad shapes: each reported at its key, all at once; an entry with its own
// problem is not reported again as unknown where a server names it.
#[test]
fn identity_provider_problems() {
    let text = r#"{
      "identityProviders": {
        "noissuer": {"clientId": "sb"},
        "badurl": {"issuer": "ftp://x", "clientId": "sb"},
        "types": {"issuer": 5, "clientId": ["sb"], "scopes": "email", "extra": 1},
        "notobj": "https://idp.example.com"
      },
      "mcpServers": {
        "a": {"url": "https://a.example/mcp", "oauth": {"idp": "noissuer", "clientId": "c"}},
        "b": {"url": "https://b.example/mcp", "oauth": {"idp": 7, "clientId": "c"}},
        "c": {"url": "https://c.example/mcp", "oauth": {"idp": "badurl"}},
        "d": {"url": "https://d.example/mcp", "oauth": {"idp": "types", "clientId": "c",
               "assertion": {"file": "/t"}}}
      }
    }"#;
    let err = parse(text, &[]).unwrap_err();
    let mut got: Vec<String> = kinds(&err).iter().map(|k| format!("{k:?}")).collect();
    got.sort();
    let mut want: Vec<String> = [
        (ProblemKind::MissingKey, "identityProviders.noissuer.issuer"),
        (ProblemKind::BadValue, "identityProviders.badurl.issuer"),
        (ProblemKind::BadValue, "identityProviders.types.issuer"),
        (ProblemKind::BadValue, "identityProviders.types.clientId"),
        (ProblemKind::BadValue, "identityProviders.types.scopes"),
        (ProblemKind::UnknownKey, "identityProviders.types.extra"),
        (ProblemKind::BadValue, "identityProviders.notobj"),
        (ProblemKind::BadValue, "mcpServers.b.oauth.idp"),
        (ProblemKind::MissingKey, "mcpServers.c.oauth.clientId"),
        (ProblemKind::BadValue, "mcpServers.d.oauth.idp"),
    ]
    .iter()
    .map(|k| format!("{k:?}"))
    .collect();
    want.sort();
    assert_eq!(got, want, "{err}");
    let both = err
        .problems
        .iter()
        .find(|p| p.key == "mcpServers.d.oauth.idp")
        .unwrap();
    assert!(both.problem.contains("not both"), "{}", both.problem);
}

#[test]
fn principals_and_required() {
    let config = parse(
        r#"{
          "mcpServers": {"notes": {"command": "x"}, "extra": {"command": "y", "required": false}},
          "principals": {
            "ci-bot": {"allow": ["mcp__notes"], "deny": ["mcp__notes__delete"]},
            "alice": {}
          }
        }"#,
        &[],
    )
    .unwrap();
    assert!(config.servers[0].required);
    assert!(!config.servers[1].required);
    let bot = &config.principals["ci-bot"];
    assert_eq!(bot.len(), 2);
    assert_eq!(bot[0].source, "principals.ci-bot.allow[0]");
    assert_eq!(bot[1].pattern.as_str(), "mcp__notes__delete");
    assert!(config.principals["alice"].is_empty());

    let err = parse(
        r#"{
          "mcpServers": {"notes": {"command": "x", "required": "yes"}},
          "principals": {"bot": {"ask": ["mcp__notes"], "deny": ["mcp__nope"], "alow": []}}
        }"#,
        &[],
    )
    .unwrap_err();
    assert_eq!(
        kinds(&err),
        [
            (ProblemKind::BadValue, "mcpServers.notes.required"),
            (ProblemKind::UnknownKey, "principals.bot.alow"),
            (ProblemKind::BadValue, "principals.bot.ask[0]"),
            (ProblemKind::BadPattern, "principals.bot.deny[0]"),
        ]
    );
}

#[test]
fn audit_rotation_is_read_and_its_mistakes_named() {
    let with = |rotate: &str| {
        format!(
            r#"{{"mcpServers": {{"a": {{"command": "x"}}}}, "audit": "a.jsonl", "auditRotate": {rotate}}}"#
        )
    };
    let c = parse(&with(r#"{"maxBytes": 1000000, "keep": 5}"#), &[]).unwrap();
    assert_eq!(
        c.audit_rotate,
        Some(crate::AuditRotation::at(1_000_000).keeping(5))
    );
    let c = parse(&with(r#"{"maxBytes": 2048}"#), &[]).unwrap();
    assert_eq!(c.audit_rotate, Some(crate::AuditRotation::at(2048)));
    let plain = r#"{"mcpServers": {"a": {"command": "x"}}, "audit": "a.jsonl"}"#;
    assert_eq!(parse(plain, &[]).unwrap().audit_rotate, None);
    for (bad, key) in [
        (r#"{"keep": 5}"#, "auditRotate"),
        (r#"{"maxBytes": 0}"#, "auditRotate.maxBytes"),
        (r#"{"maxBytes": "1MB"}"#, "auditRotate.maxBytes"),
        (r#"{"maxBytes": 100, "keep": -1}"#, "auditRotate.keep"),
        ("100", "auditRotate"),
    ] {
        let err = parse(&with(bad), &[]).unwrap_err();
        assert_eq!(kinds(&err), [(ProblemKind::BadValue, key)], "{bad}");
    }
    let err = parse(&with(r#"{"maxBytes": 100, "maxFiles": 3}"#), &[]).unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    assert!(err.to_string().contains("maxFiles"), "{err}");
}

#[test]
fn principals_default_is_allow_or_deny() {
    let with = |value: &str| {
        format!(r#"{{"mcpServers": {{"a": {{"command": "x"}}}}, "principalsDefault": {value}}}"#)
    };
    assert!(
        parse(&with(r#""deny""#), &[])
            .unwrap()
            .principals_default_deny
    );
    assert!(
        !parse(&with(r#""allow""#), &[])
            .unwrap()
            .principals_default_deny
    );
    let plain = parse(r#"{"mcpServers": {"a": {"command": "x"}}}"#, &[]).unwrap();
    assert!(!plain.principals_default_deny);
    for bad in [r#""refuse""#, "true", "null"] {
        let err = parse(&with(bad), &[]).unwrap_err();
        assert_eq!(
            kinds(&err),
            [(ProblemKind::BadValue, "principalsDefault")],
            "{bad}"
        );
    }
}

#[test]
fn caller_limits_are_read_with_each_principals_own_over_them() {
    let config = parse(
        r#"{
          "mcpServers": {"notes": {"command": "x"}},
          "callerLimits": {"callsPerMinute": 60, "concurrentCalls": 4},
          "principals": {
            "ci-bot": {"allow": ["mcp__notes"], "limits": {"concurrentCalls": 1}},
            "alice": {"limits": {"callsPerMinute": null}}
          }
        }"#,
        &[],
    )
    .unwrap();
    let limits = |calls, running| crate::CallLimits {
        calls_per_minute: calls,
        concurrent_calls: running,
    };
    assert_eq!(config.limits_for("ci-bot"), limits(Some(60), Some(1)));
    assert_eq!(config.limits_for("alice"), limits(None, Some(4)));
    assert_eq!(config.limits_for("bob"), limits(Some(60), Some(4)));
    // A principal with only limits narrows nothing.
    assert!(config.principals["alice"].is_empty());
    let plain = parse(r#"{"mcpServers": {"a": {"command": "x"}}}"#, &[]).unwrap();
    assert!(plain.limits_for("anyone").is_unlimited());

    let with = |limits: &str| {
        format!(r#"{{"mcpServers": {{"a": {{"command": "x"}}}}, "callerLimits": {limits}}}"#)
    };
    for (bad, key) in [
        (r#"{"callsPerMinute": 0}"#, "callerLimits.callsPerMinute"),
        (r#"{"callsPerMinute": null}"#, "callerLimits.callsPerMinute"),
        (
            r#"{"concurrentCalls": 2.5}"#,
            "callerLimits.concurrentCalls",
        ),
        (
            r#"{"concurrentCalls": 2000000}"#,
            "callerLimits.concurrentCalls",
        ),
        ("60", "callerLimits"),
    ] {
        let err = parse(&with(bad), &[]).unwrap_err();
        assert_eq!(kinds(&err), [(ProblemKind::BadValue, key)], "{bad}");
    }
    let err = parse(
        r#"{"mcpServers": {"a": {"command": "x"}},
            "principals": {"bot": {"limits": {"callsPerHour": 5, "concurrentCalls": "one"}}}}"#,
        &[],
    )
    .unwrap_err();
    assert_eq!(
        kinds(&err),
        [
            (
                ProblemKind::UnknownKey,
                "principals.bot.limits.callsPerHour"
            ),
            (
                ProblemKind::BadValue,
                "principals.bot.limits.concurrentCalls"
            ),
        ]
    );
}

#[test]
fn sandboxes_come_from_presets_objects_and_defaults() {
    let text = r#"{
      "defaults": {"sandbox": "strict", "envPassthrough": ["LANGUAGE_*"]},
      "mcpServers": {
        "plain": {"command": "a"},
        "open": {"command": "a", "sandbox": "none"},
        "base": {"command": "a", "sandbox": "baseline", "envPassthrough": ["GITHUB_TOKEN", "AWS_*"]},
        "custom": {"command": "a", "sandbox": {
          "fs": {"read": ["data", "/abs", "~/docs"], "write": ["out"]},
          "network": false, "memoryMiB": 512, "processes": 32, "cpuSeconds": 60, "required": false
        }}
      }
    }"#;
    let c = parse(text, &[("HOME", "/home/u")]).unwrap();
    let get = |alias: &str| c.servers.iter().find(|s| s.alias == alias).unwrap();
    assert_eq!(get("plain").sandbox, Sandbox::strict());
    assert_eq!(get("plain").env_passthrough, ["LANGUAGE_*"]);
    assert_eq!(get("open").sandbox, Sandbox::none());
    assert_eq!(get("base").sandbox, Sandbox::baseline());
    assert_eq!(
        get("base").env_passthrough,
        ["LANGUAGE_*", "GITHUB_TOKEN", "AWS_*"]
    );
    let custom = &get("custom").sandbox;
    assert_eq!(
        custom.fs,
        Some(FsAccess::new(
            vec!["/cfg/data".into(), "/abs".into(), "/home/u/docs".into()],
            vec!["/cfg/out".into()]
        ))
    );
    assert!(!custom.network && !custom.required && custom.baseline);
    assert_eq!(
        (custom.memory_mib, custom.processes, custom.cpu_seconds),
        (Some(512), Some(32), Some(60))
    );
    // Without defaults: the baseline, and the base environment only.
    let c = parse(r#"{"mcpServers": {"a": {"command": "a"}}}"#, &[]).unwrap();
    assert_eq!(c.servers[0].sandbox, Sandbox::baseline());
    assert!(c.servers[0].env_passthrough.is_empty());
}

#[test]
fn bad_sandboxes_and_passthroughs_are_named() {
    let text = r#"{
      "defaults": {"sandbox": "lax", "colour": 1},
      "mcpServers": {
        "a": {"command": "a", "sandbox": {"fs": {"read": "x"}, "network": "no", "memoryMiB": 0, "procs": 3}},
        "b": {"command": "a", "envPassthrough": ["OK_*", "BAD*NAME", "A=B", ""]},
        "w": {"type": "http", "url": "http://h/mcp", "sandbox": "strict"}
      }
    }"#;
    let err = parse(text, &[]).unwrap_err();
    let keys: Vec<&str> = err.problems.iter().map(|p| p.key.as_str()).collect();
    for want in [
        "defaults.sandbox",
        "defaults.colour",
        "mcpServers.a.sandbox.fs.read",
        "mcpServers.a.sandbox.network",
        "mcpServers.a.sandbox.memoryMiB",
        "mcpServers.a.sandbox.procs",
        "mcpServers.b.envPassthrough[1]",
        "mcpServers.b.envPassthrough[2]",
        "mcpServers.b.envPassthrough[3]",
        "mcpServers.w.sandbox",
    ] {
        assert!(keys.contains(&want), "{want} missing from {keys:?}");
    }
}

#[test]
fn secret_references_parse_wherever_a_credential_goes() {
    use crate::secret::{ConfigValue, SecretRef};
    let text = r#"{
      "mcpServers": {
        "s": {"command": "a", "env": {
          "F": {"secret": "file:tok"}, "E": {"secret": "env:${NAME}"}, "P": "plain"
        }},
        "h": {"type": "http", "url": "http://h/mcp",
              "headers": {"Authorization": {"secret": "cmd:pass show 'my token'"}},
              "oauth": false},
        "o": {"type": "http", "url": "http://h/mcp",
              "oauth": {"clientId": "x", "clientSecret": {"secret": "keyring:svc/me"}}}
      }
    }"#;
    let c = parse(text, &[("NAME", "TOKEN")]).unwrap();
    let TransportConfig::Stdio { env, .. } = &c.servers[0].transport else {
        panic!()
    };
    assert_eq!(
        env["F"],
        ConfigValue::Ref(SecretRef::File("/cfg/tok".into()))
    );
    assert_eq!(env["E"], ConfigValue::Ref(SecretRef::Env("TOKEN".into())));
    assert_eq!(env["P"].plain(), Some("plain"));
    // Debug never shows a written-out value.
    assert!(!format!("{:?}", c.servers[0]).contains("plain\""));
    assert_eq!(
        c.servers[1].value_sources(),
        [(
            "Authorization".to_owned(),
            "cmd:pass show my token".to_owned()
        )]
    );
    let OAuthSetting::Client(client) = &c.servers[2].oauth else {
        panic!()
    };
    assert_eq!(
        client.client_secret,
        Some(ConfigValue::Ref(SecretRef::Keyring {
            service: "svc".into(),
            account: "me".into()
        }))
    );

    let bad = r#"{"mcpServers": {"s": {"command": "a", "env": {
        "A": {"secret": "vault:x"}, "B": {"secret": "env:X", "extra": 1}, "C": {"nope": 1}
    }}}}"#;
    let err = parse(bad, &[]).unwrap_err();
    let keys: Vec<&str> = err.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "mcpServers.s.env.A.secret",
            "mcpServers.s.env.B",
            "mcpServers.s.env.C"
        ]
    );
}

// The built-in tools live under `switchboard`: no server may take the
// alias (it would stand in for them), while rules may name it.
#[test]
fn the_alias_switchboard_is_reserved_for_the_built_in_tools() {
    let text = r#"{
      "mcpServers": {"switchboard": {"command": "x"}, "ok": {"command": "y"}},
      "permissions": {"allow": ["mcp__switchboard__search_tools"], "deny": ["mcp__switchboard__load_skill"]}
    }"#;
    let err = parse(text, &[]).unwrap_err();
    assert_eq!(
        kinds(&err),
        [(ProblemKind::BadAlias, "mcpServers.switchboard")]
    );
    let shown = err.to_string();
    assert!(
        shown.contains("reserved for Switchboard's own tools"),
        "{shown}"
    );
    assert!(shown.contains("switchboard-server"), "{shown}");
    let ok = r#"{
      "mcpServers": {"ok": {"command": "y"}},
      "permissions": {"allow": ["mcp__switchboard__search_tools"]}
    }"#;
    let config = parse(ok, &[]).unwrap();
    assert_eq!(config.rules[0].pattern.alias(), "switchboard");
}

#[test]
fn skills_settings() {
    let config = parse(
        r#"{"mcpServers": {"a": {"command": "x"}}, "skills": {"dynamic": "ask", "cacheDir": "cache"}}"#,
        &[],
    )
    .unwrap();
    assert!(config.skills.dynamic_ask);
    assert_eq!(config.skills.cache_dir, Some(PathBuf::from("/cfg/cache")));
    let config = parse(r#"{"mcpServers": {"a": {"command": "x"}}}"#, &[]).unwrap();
    assert!(!config.skills.dynamic_ask);
    let err = parse(
        r#"{"mcpServers": {"a": {"command": "x"}}, "skills": {"dynamic": "maybe", "other": 1}}"#,
        &[],
    )
    .unwrap_err();
    assert_eq!(
        kinds(&err),
        [
            (ProblemKind::UnknownKey, "skills.other"),
            (ProblemKind::BadValue, "skills.dynamic")
        ]
    );
}

// Issue 39, item 1: `newTools` decides whether what a server adds after its
// first mount is offered before `pins accept`.
#[test]
fn new_tools_is_ask_by_default_allow_when_said_and_anything_else_a_problem() {
    let mcp = r#""mcpServers": {"a": {"command": "x"}}"#;
    assert_eq!(
        parse(&format!("{{{mcp}}}"), &[]).unwrap().new_tools,
        NewTools::Ask
    );
    assert_eq!(
        parse(&format!(r#"{{{mcp}, "newTools": "allow"}}"#), &[])
            .unwrap()
            .new_tools,
        NewTools::Allow
    );
    let err = parse(&format!(r#"{{{mcp}, "newTools": true}}"#), &[]).unwrap_err();
    assert_eq!(kinds(&err), [(ProblemKind::BadValue, "newTools")]);
}

// Issue 39, item 5: `idempotent` takes rule patterns; a bad one is a
// problem naming its place.
#[test]
fn idempotent_patterns_are_parsed_like_rules() {
    let mcp = r#""mcpServers": {"x": {"command": "x"}}"#;
    let c = parse(
        &format!(r#"{{{mcp}, "idempotent": ["mcp__x__get_*", "mcp__x__list"]}}"#),
        &[],
    )
    .unwrap();
    assert_eq!(c.idempotent.len(), 2);
    assert!(c.idempotent[0].matches("x", "get_item"));
    assert!(!c.idempotent[0].matches("x", "put_item"));
    let err = parse(&format!(r#"{{{mcp}, "idempotent": ["get_*"]}}"#), &[]).unwrap_err();
    assert_eq!(kinds(&err), [(ProblemKind::BadPattern, "idempotent[0]")]);
}

// Issue 39, item 4: `evals` names the case files `pins accept` runs,
// relative to the config's folder, with an optional model.
#[test]
fn evals_take_files_beside_the_config_and_an_optional_model() {
    let mcp = r#""mcpServers": {"x": {"command": "x"}}"#;
    let c = parse(&format!(r#"{{{mcp}, "evals": ["cases.json"]}}"#), &[]).unwrap();
    let evals = c.evals.unwrap();
    assert!(evals.files[0].ends_with("cases.json"), "{evals:?}");
    assert!(evals.files[0].is_absolute(), "{evals:?}");
    assert_eq!(evals.model, None);
    let c = parse(
        &format!(r#"{{{mcp}, "evals": {{"files": ["a.json"], "model": "mock"}}}}"#),
        &[],
    )
    .unwrap();
    assert_eq!(c.evals.unwrap().model.as_deref(), Some("mock"));
    assert_eq!(parse(&format!("{{{mcp}}}"), &[]).unwrap().evals, None);
    let err = parse(&format!(r#"{{{mcp}, "evals": []}}"#), &[]).unwrap_err();
    assert_eq!(kinds(&err), [(ProblemKind::BadValue, "evals")]);
    let err = parse(&format!(r#"{{{mcp}, "evals": "x.json"}}"#), &[]).unwrap_err();
    assert_eq!(kinds(&err).len(), 1);
    let err = parse(
        &format!(r#"{{{mcp}, "evals": {{"files": ["a.json"], "modle": "mock"}}}}"#),
        &[],
    )
    .unwrap_err();
    assert_eq!(kinds(&err).len(), 1, "{err}");
}

#[test]
fn console_principals_and_approvals_are_read() {
    let config = parse(
        r#"{"mcpServers": {"a": {"command": "x"}},
            "principals": {"alice": {"console": true}, "bot": {"deny": ["mcp__a__x"]}},
            "approvals": {"notify": "http://127.0.0.1:9000/hook", "timeoutMs": 5000}}"#,
        &[],
    )
    .unwrap();
    assert!(config.console_principals.contains("alice"));
    assert!(!config.console_principals.contains("bot"));
    assert!(config.principals["alice"].is_empty());
    assert_eq!(
        config.approvals.notify.as_deref(),
        Some("http://127.0.0.1:9000/hook")
    );
    assert_eq!(config.approvals.timeout, Duration::from_secs(5));
    let with = |approvals: &str, console: &str| {
        format!(
            r#"{{"mcpServers": {{"a": {{"command": "x"}}}}, "principals": {{"alice": {{"console": {console}}}}}, "approvals": {approvals}}}"#
        )
    };
    for (approvals, console, key) in [
        (
            r#"{"notify": "https://hooks.example.com/x"}"#,
            "true",
            "approvals.notify",
        ),
        (
            r#"{"notify": "http://10.0.0.1/x"}"#,
            "true",
            "approvals.notify",
        ),
        (
            r#"{"notify": "http://127.0.0.1/x"}"#,
            "\"yes\"",
            "principals.alice.console",
        ),
    ] {
        let err = parse(&with(approvals, console), &[]).unwrap_err();
        assert_eq!(kinds(&err).len(), 1, "{approvals}");
        assert_eq!(kinds(&err)[0].1, key, "{approvals}");
    }
}
