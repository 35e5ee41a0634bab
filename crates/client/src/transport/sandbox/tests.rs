use std::ffi::OsString;

use super::*;

#[test]
fn patterns_match_names_and_prefixes() {
    struct Case {
        pattern: &'static str,
        name: &'static str,
        matches: bool,
    }
    let cases = [
        Case {
            pattern: "PATH",
            name: "PATH",
            matches: true,
        },
        Case {
            pattern: "PATH",
            name: "PATHX",
            matches: false,
        },
        Case {
            pattern: "LC_*",
            name: "LC_ALL",
            matches: true,
        },
        Case {
            pattern: "LC_*",
            name: "LC_",
            matches: true,
        },
        Case {
            pattern: "LC_*",
            name: "LANG",
            matches: false,
        },
        Case {
            pattern: "*",
            name: "ANYTHING",
            matches: true,
        },
        Case {
            pattern: "AWS_*",
            name: "aws_secret",
            matches: cfg!(windows),
        },
    ];
    for c in cases {
        assert_eq!(
            name_matches(c.pattern, c.name),
            c.matches,
            "{} vs {}",
            c.pattern,
            c.name
        );
    }
}

#[test]
fn a_scrubbed_environment_keeps_the_base_and_the_passthrough_only() {
    let host: Vec<(OsString, OsString)> = [
        ("PATH", "/bin"),
        ("HOME", "/home/u"),
        ("LC_ALL", "C"),
        ("RUST_LOG", "debug"),
        ("AWS_SECRET_ACCESS_KEY", "hunter2"),
        ("GITHUB_TOKEN", "ghp_x"),
        ("MY_APP_URL", "u"),
        ("MY_APPLE", "no"),
    ]
    .iter()
    .map(|(k, v)| (OsString::from(k), OsString::from(v)))
    .collect();
    let env = Environment::scrubbed(["MY_APP_*", "GITHUB_TOKEN"]);
    let names: Vec<String> = env
        .select(host.clone())
        .into_iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "PATH",
            "HOME",
            "LC_ALL",
            "RUST_LOG",
            "GITHUB_TOKEN",
            "MY_APP_URL"
        ]
    );
    assert_eq!(Environment::Inherit.select(host.clone()).len(), host.len());
    assert_eq!(
        Environment::scrubbed(["*"]).select(host.clone()).len(),
        host.len()
    );
}

#[test]
fn the_entrys_own_variables_win_and_tmpdir_is_the_private_one() {
    let extra = vec![
        (OsString::from("TOKEN"), OsString::from("t")),
        (OsString::from("TMPDIR"), OsString::from("/elsewhere")),
    ];
    let env = compose_env(
        &Environment::scrubbed(Vec::<String>::new()),
        &extra,
        Some(std::path::Path::new("/private")),
    );
    let get = |name: &str| {
        env.iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(get("TOKEN"), ["t"]);
    assert_eq!(get("TMPDIR"), ["/private"]);
    let names = env_names(&env);
    assert!(names.contains(&"TOKEN".to_owned()));
}

#[test]
fn presets_say_what_they_confine() {
    assert!(Sandbox::none().is_none());
    assert!(Sandbox::default().is_none());
    assert!(!Sandbox::baseline().is_none());
    assert!(!Sandbox::baseline().confines());
    let strict = Sandbox::strict();
    assert!(strict.confines() && strict.baseline && !strict.network && strict.fs.is_some());
}

#[cfg(unix)]
#[test]
fn exits_are_attributed_to_the_limit_that_caused_them() {
    use std::os::unix::process::ExitStatusExt;
    let signalled = |sig: i32| Some(ExitStatus::from_raw(sig));
    let exited = |code: i32| Some(ExitStatus::from_raw(code << 8));
    let mut c = Confinement {
        memory_mib: Some(64),
        ..Confinement::default()
    };
    let why = c
        .explain_exit(
            signalled(libc::SIGABRT),
            &["memory allocation of 1 bytes failed".into()],
        )
        .unwrap();
    assert!(why.contains("memoryMiB: 64"), "{why}");
    c = Confinement {
        cpu_seconds: Some(1),
        ..Confinement::default()
    };
    assert!(
        c.explain_exit(signalled(libc::SIGXCPU), &[])
            .unwrap()
            .contains("cpuSeconds: 1")
    );
    c = Confinement {
        network: false,
        ..Confinement::default()
    };
    assert!(
        c.explain_exit(
            exited(1),
            &["connect: Network is unreachable (os error 101)".into()]
        )
        .unwrap()
        .contains("network: false")
    );
    c = Confinement {
        network: true,
        fs_confined: true,
        ..Confinement::default()
    };
    assert!(
        c.explain_exit(exited(1), &["open: Permission denied (os error 13)".into()])
            .unwrap()
            .contains("sandbox.fs")
    );
    // EPERM alone is not the filter's doing; naming a refused call is.
    let filtered = Confinement {
        network: true,
        mechanisms: vec![Mechanism {
            name: "seccomp",
            state: MechanismState::Active(String::new()),
        }],
        ..Confinement::default()
    };
    assert_eq!(
        filtered.explain_exit(exited(1), &["chmod: Operation not permitted".into()]),
        None
    );
    assert!(
        filtered
            .explain_exit(
                exited(1),
                &["ptrace: Operation not permitted (os error 1)".into()]
            )
            .unwrap()
            .contains("seccomp")
    );
    // Nothing set: nothing blamed on the sandbox.
    let open = Confinement {
        network: true,
        ..Confinement::default()
    };
    assert_eq!(
        open.explain_exit(signalled(libc::SIGKILL), &["Permission denied".into()]),
        None
    );
}
