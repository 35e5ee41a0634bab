//! Config errors: one test per class, each message naming the file and the
//! key; lookup order; nothing starts when the config is wrong.

use serde_json::json;
use switchboard_host::HostError;
use switchboard_host::ProblemKind;
use switchboard_host::{ConfigLoader, ConfigOrigin};

use crate::util::*;

/// Loads `text` as `.mcp.json` and expects exactly one problem of `kind`
/// at `key`, with the file and the key in the message.
fn expect_error(text: &str, vars: &[(&str, &str)], kind: ProblemKind, key: &str) -> String {
    let dir = Dir::new();
    let path = dir.write(".mcp.json", text);
    let err = ConfigLoader::new()
        .explicit(&path)
        .vars(vars_of(vars))
        .load()
        .expect_err("config should be refused");
    assert!(err.is_config(), "{err}");
    let HostError::Config(err) = err else {
        panic!("not a config error: {err}");
    };
    assert_eq!(err.problems.len(), 1, "{err}");
    assert_eq!(err.problems[0].kind, kind, "{err}");
    assert_eq!(err.problems[0].key, key, "{err}");
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains(key), "{message}");
    message
}

/// One test per row: the config text is refused with one problem of the
/// kind, at the key, naming the file and the key (and saying `needle`).
macro_rules! refused {
    ($($name:ident: $kind:ident at $key:literal, $text:expr $(, saying $needle:literal)?;)*) => {$(
        #[test]
        fn $name() {
            let _message = expect_error($text, &[], ProblemKind::$kind, $key);
            $(assert!(_message.contains($needle), "{_message}");)?
        }
    )*};
}

refused! {
    duplicate_alias: DuplicateAlias at "mcpServers.notes",
        r#"{"mcpServers": {"notes": {"command": "a"}, "notes": {"command": "b"}}}"#,
        saying "own alias";
    unknown_key_with_a_suggestion: UnknownKey at "mcpServers.notes.timeoutMS",
        r#"{"mcpServers": {"notes": {"command": "a", "timeoutMS": 5}}}"#,
        saying "did you mean \"timeoutMs\"";
    bad_pattern: BadPattern at "permissions.deny[0]",
        r#"{"mcpServers": {"notes": {"command": "a"}}, "permissions": {"deny": ["notes__delete"]}}"#,
        saying "mcp__";
    pattern_naming_an_unknown_server: BadPattern at "permissions.allow[0]",
        r#"{"mcpServers": {"notes": {"command": "a"}}, "permissions": {"allow": ["mcp__nots__search"]}}"#,
        saying "did you mean mcp__notes";
    bad_alias: BadAlias at "mcpServers.my__notes",
        r#"{"mcpServers": {"my__notes": {"command": "a"}}}"#;
    bad_value: BadValue at "mcpServers.notes.args",
        r#"{"mcpServers": {"notes": {"command": "a", "args": "--root ."}}}"#,
        saying "array of strings";
    missing_key: MissingKey at "mcpServers.web.url",
        r#"{"mcpServers": {"web": {"type": "http"}}}"#;
    syntax_error_with_position: Syntax at "(file)",
        "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\" \"args\": []}\n  }\n}\n",
        saying ".mcp.json:3:";
}

#[test]
fn missing_env_var_without_default() {
    let m = expect_error(
        r#"{"mcpServers": {"gh": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}}"#,
        &[("HOME", "/h")],
        ProblemKind::MissingEnvVar,
        "mcpServers.gh.headers.Authorization",
    );
    assert!(m.contains("GH_TOKEN") && m.contains("export"), "{m}");
    // Never passed through literally: with the variable set it expands.
    let dir = Dir::new();
    let config = dir.config_with_vars(
        json!({"mcpServers": {"gh": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}}),
        &[("GH_TOKEN", "t0k")],
    );
    match &config.servers[0].transport {
        switchboard_host::TransportConfig::Http { headers, .. } => {
            assert_eq!(headers["Authorization"].plain(), Some("Bearer t0k"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn explicit_file_that_does_not_exist() {
    let dir = Dir::new();
    let err = ConfigLoader::new()
        .explicit(dir.path("nope.json"))
        .demo(|| panic!("the demo must not replace an explicit file"))
        .load()
        .unwrap_err();
    let problems = err.config_problems().expect("a config error");
    assert_eq!(problems.problems[0].kind, ProblemKind::NotFound);
    assert!(err.to_string().contains("nope.json"), "{err}");
}

// Every problem is reported before any server starts: a config with one
// good server and one error spawns nothing.
#[test]
fn nothing_starts_when_the_config_is_wrong() {
    let dir = Dir::new();
    let log = dir.path_str("started.log");
    let text = json!({"mcpServers": {
        "good": {"command": mock(), "args": ["--startup-log", log]},
        "bad": {"command": "${UNSET_VAR}"},
    }})
    .to_string();
    let path = dir.write(".mcp.json", &text);
    let err = ConfigLoader::new()
        .explicit(&path)
        .vars(vars_of(&[]))
        .load()
        .unwrap_err();
    let problems = err.config_problems().expect("a config error");
    assert_eq!(problems.problems[0].kind, ProblemKind::MissingEnvVar);
    // Loading is the only way to a Config, and Host::mount needs one.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!dir.path("started.log").exists());
}

#[test]
fn lookup_order() {
    let dir = Dir::new();
    let project = tempfile::tempdir().unwrap();
    let xdg = tempfile::tempdir().unwrap();
    let user_file = xdg.path().join("switchboard").join("config.json");
    std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    let server = |name: &str| json!({"mcpServers": {name: {"command": "x"}}}).to_string();
    std::fs::write(&user_file, server("user")).unwrap();
    let env_file = dir.write("env.json", &server("env"));
    let flag_file = dir.write("flag.json", &server("flag"));
    let xdg_home = xdg.path().display().to_string();
    let env_path = env_file.display().to_string();

    let load = |explicit: bool, env: bool, project_file: bool| {
        let mut vars = vec![("XDG_CONFIG_HOME", xdg_home.as_str())];
        if env {
            vars.push(("SWITCHBOARD_CONFIG", env_path.as_str()));
        }
        let project_path = project.path().join(".mcp.json");
        if project_file {
            std::fs::write(&project_path, server("project")).unwrap();
        } else {
            let _ = std::fs::remove_file(&project_path);
        }
        let mut loader = ConfigLoader::new().cwd(project.path()).vars(vars_of(&vars));
        if explicit {
            loader = loader.explicit(&flag_file);
        }
        let config = loader.load().unwrap();
        (config.servers[0].alias.clone(), config.origin)
    };
    let (alias, origin) = load(true, true, true);
    assert_eq!(alias, "flag");
    assert!(matches!(origin, ConfigOrigin::Flag(_)));
    let (alias, origin) = load(false, true, true);
    assert_eq!(alias, "env");
    assert!(matches!(origin, ConfigOrigin::EnvVar(_)));
    let (alias, origin) = load(false, false, true);
    assert_eq!(alias, "project");
    assert!(matches!(origin, ConfigOrigin::Project(_)));
    let (alias, origin) = load(false, false, false);
    assert_eq!(alias, "user");
    assert!(matches!(origin, ConfigOrigin::User(_)));

    // Nothing found: the demo, and the origin says so.
    std::fs::remove_file(&user_file).unwrap();
    let config = ConfigLoader::new()
        .cwd(project.path())
        .vars(vars_of(&[("XDG_CONFIG_HOME", xdg_home.as_str())]))
        .demo(|| {
            let mut c = switchboard_host::Config::new(ConfigOrigin::Inline);
            c.servers.push(switchboard_host::ServerConfig::stdio(
                "notes",
                "notes-server",
                ["--demo"],
            ));
            Ok(c)
        })
        .load()
        .unwrap();
    assert_eq!(config.origin, ConfigOrigin::Demo);
    assert_eq!(config.servers[0].alias, "notes");
    assert!(config.lockfile.is_none());
}

#[test]
fn foreign_keys_do_not_break_an_existing_file() {
    let dir = Dir::new();
    let config = dir.config(json!({
        "inputs": [{"type": "promptString", "id": "key"}],
        "servers": {
            "a": {"type": "stdio", "command": "x", "envFile": dir.write(".env", "# c\nA=1\nexport B=\"two\"\n").display().to_string(),
                  "env": {"B": "override"}, "dev": {"watch": "src/**"}},
            "b": {"command": "y", "disabled": true, "autoApprove": ["t"], "alwaysAllow": ["t"], "timeout": 60}
        }
    }));
    let a = &config.servers[0];
    match &a.transport {
        switchboard_host::TransportConfig::Stdio { env, .. } => {
            assert_eq!(env["A"].plain(), Some("1"));
            assert_eq!(env["B"].plain(), Some("override"));
        }
        other => panic!("{other:?}"),
    }
    assert!(!config.servers[1].enabled);
    // Auto-approval lists are not honoured silently: each gets a note.
    assert!(
        config
            .notes
            .iter()
            .any(|n| n.contains("servers.b.autoApprove"))
    );
    assert!(config.notes.iter().any(|n| n.contains("servers.b.timeout")));
    assert!(config.rules.is_empty());
}
