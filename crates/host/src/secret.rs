//! Secret references in the config: `{"secret": "KIND:WHERE"}` wherever a
//! value of `env`, `headers` or an OAuth client secret is expected, so the
//! value itself never sits in the file.
//!
//! | kind | resolves to |
//! |---|---|
//! | `file:PATH` | the file's contents, one trailing newline dropped; refused when the file is readable by its group or by others |
//! | `env:NAME` | the host's variable `NAME` |
//! | `cmd:PROGRAM ARGS…` | the program's standard output, one trailing newline dropped; run without a shell (arguments split like a shell would, quotes allowed), stdin closed, with a time limit; a failure is reported with its exit status, never with what it printed |
//! | `keyring:SERVICE/ACCOUNT` | the OS keyring's entry (Secret Service, Keychain), with the `keyring` feature |
//!
//! References are resolved when the server they belong to starts, into a
//! [`Secret`] whose `Debug` is `<redacted>` and which has no `Display`:
//! the value can only reach a log line, an error or an output by an
//! explicit [`Secret::expose`]. Errors name the reference (its kind and
//! where it points), never the value.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) use switchboard_oauth::Secret;

/// How long a `cmd:` reference's program may run.
pub(crate) const SECRET_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a secret comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecretRef {
    /// `file:PATH` (relative paths resolved against the config file's
    /// folder, `~/` against `HOME`).
    File(PathBuf),
    /// `env:NAME`.
    Env(String),
    /// `cmd:PROGRAM ARGS…`, split into the program and its arguments.
    Command(Vec<String>),
    /// `keyring:SERVICE/ACCOUNT`.
    Keyring {
        /// The service name of the entry.
        service: String,
        /// The account (user) name of the entry.
        account: String,
    },
}

/// A value the config gives for an environment variable, a header or a
/// client secret: written out, or a reference resolved at start. `Debug`
/// never shows a written-out value either.
#[derive(Clone, PartialEq, Eq)]
pub enum ConfigValue {
    /// The value itself, as written in the file (after `${VAR}`
    /// expansion).
    Plain(Secret),
    /// A `{"secret": …}` reference.
    Ref(SecretRef),
}

/// A reference that could not be resolved, or a `{"secret": …}` that is
/// not one. The message names the reference, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}secret {reference}: {reason}", key.as_ref().map(|k| format!("{k}: ")).unwrap_or_default())]
pub struct SecretError {
    /// The config key the reference is the value of (`env.TOKEN`,
    /// `headers.Authorization`, `oauth.clientSecret`), once known.
    pub key: Option<String>,
    /// The reference as written (`file:…`, `cmd:pass`, …): where the
    /// secret lives, not what it is.
    pub reference: String,
    /// What went wrong.
    pub reason: String,
}

impl SecretError {
    /// The same error, naming the config key it belongs to.
    pub fn within(mut self, key: &str) -> Self {
        self.key = Some(key.to_owned());
        self
    }
}

impl fmt::Debug for ConfigValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigValue::Plain(_) => f.write_str("Plain(<redacted>)"),
            ConfigValue::Ref(r) => f.debug_tuple("Ref").field(r).finish(),
        }
    }
}

impl From<&str> for ConfigValue {
    fn from(value: &str) -> Self {
        ConfigValue::Plain(Secret::new(value))
    }
}

impl From<String> for ConfigValue {
    fn from(value: String) -> Self {
        ConfigValue::Plain(Secret::new(value))
    }
}

impl ConfigValue {
    /// A written-out value, or `None` for a reference.
    pub fn plain(&self) -> Option<&str> {
        match self {
            ConfigValue::Plain(s) => Some(s.expose()),
            ConfigValue::Ref(_) => None,
        }
    }

    /// Where the value comes from, for `doctor` and `config check`: `value`
    /// for a written-out one, the reference otherwise. Never the value.
    pub fn source(&self) -> String {
        match self {
            ConfigValue::Plain(_) => "value".to_owned(),
            ConfigValue::Ref(r) => r.to_string(),
        }
    }

    /// The value, resolving a reference.
    ///
    /// # Errors
    /// [`SecretError`] when the reference cannot be resolved.
    pub async fn resolve(&self) -> Result<Secret, SecretError> {
        match self {
            ConfigValue::Plain(s) => Ok(s.clone()),
            ConfigValue::Ref(r) => r.resolve().await,
        }
    }
}

impl fmt::Display for SecretRef {
    /// The reference as written (`file:PATH`, `cmd:PROGRAM …`): where the
    /// secret is, never what it is.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretRef::File(p) => write!(f, "file:{}", p.display()),
            SecretRef::Env(n) => write!(f, "env:{n}"),
            SecretRef::Command(argv) => write!(f, "cmd:{}", argv.join(" ")),
            SecretRef::Keyring { service, account } => write!(f, "keyring:{service}/{account}"),
        }
    }
}

impl SecretRef {
    /// Parses the string of `{"secret": STRING}`; relative `file:` paths
    /// are resolved against `base` (the config file's folder).
    ///
    /// # Errors
    /// A sentence saying what is wrong and what forms are accepted.
    pub fn parse(text: &str, base: Option<&Path>) -> Result<SecretRef, String> {
        let (kind, rest) = text.split_once(':').ok_or_else(|| {
            format!("{text:?} names no kind; use file:PATH, env:NAME, cmd:COMMAND or keyring:SERVICE/ACCOUNT")
        })?;
        let rest_trimmed = rest.trim();
        if rest_trimmed.is_empty() {
            return Err(format!("{kind}: needs something after the colon"));
        }
        match kind {
            "file" => {
                let path = match rest_trimmed.strip_prefix("~/") {
                    Some(tail) => match std::env::var_os("HOME") {
                        Some(home) => PathBuf::from(home).join(tail),
                        None => return Err("file:~/… needs HOME to be set".into()),
                    },
                    None => PathBuf::from(rest_trimmed),
                };
                let path = match base {
                    Some(base) if path.is_relative() => base.join(path),
                    _ => path,
                };
                Ok(SecretRef::File(path))
            }
            "env" => Ok(SecretRef::Env(rest_trimmed.to_owned())),
            "cmd" => {
                let argv = shell_words::split(rest_trimmed)
                    .map_err(|e| format!("cmd: cannot be split into words: {e}"))?;
                if argv.is_empty() {
                    return Err("cmd: names no program".into());
                }
                Ok(SecretRef::Command(argv))
            }
            "keyring" => {
                let (service, account) = rest_trimmed.rsplit_once('/').ok_or_else(|| {
                    "keyring: needs SERVICE/ACCOUNT (the last / separates them)".to_owned()
                })?;
                if service.is_empty() || account.is_empty() {
                    return Err("keyring: needs SERVICE/ACCOUNT, both non-empty".into());
                }
                Ok(SecretRef::Keyring {
                    service: service.to_owned(),
                    account: account.to_owned(),
                })
            }
            other => Err(format!(
                "{other:?} is not a kind of secret; use file:PATH, env:NAME, cmd:COMMAND or keyring:SERVICE/ACCOUNT"
            )),
        }
    }

    /// Reads the secret.
    ///
    /// # Errors
    /// [`SecretError`] naming the reference and why: a missing or
    /// group/world-readable file, an unset variable, a command that could
    /// not run, failed (its exit status only) or took too long, a keyring
    /// that is not there (or a build without the `keyring` feature).
    pub async fn resolve(&self) -> Result<Secret, SecretError> {
        let fail = |reason: String| SecretError {
            key: None,
            reference: self.to_string(),
            reason,
        };
        match self {
            SecretRef::Env(name) => match std::env::var(name) {
                Ok(v) => Ok(Secret::new(v)),
                Err(std::env::VarError::NotPresent) => Err(fail("the variable is not set".into())),
                Err(std::env::VarError::NotUnicode(_)) => {
                    Err(fail("the variable is not valid UTF-8".into()))
                }
            },
            SecretRef::File(path) => {
                let path = path.clone();
                let read = tokio::task::spawn_blocking(move || read_private_file(&path))
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                read.map(|text| Secret::new(drop_newline(text)))
                    .map_err(fail)
            }
            SecretRef::Command(argv) => run_command(argv, SECRET_COMMAND_TIMEOUT)
                .await
                .map(Secret::new)
                .map_err(fail),
            SecretRef::Keyring { service, account } => {
                let (service, account) = (service.clone(), account.clone());
                tokio::task::spawn_blocking(move || keyring_get(&service, &account))
                    .await
                    .map_err(|e| fail(e.to_string()))?
                    .map(Secret::new)
                    .map_err(fail)
            }
        }
    }
}

/// Drops one trailing newline (`\n` or `\r\n`): what `echo` and most
/// password managers add.
fn drop_newline(mut text: String) -> String {
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    text
}

/// Reads a file that only its owner may read.
fn read_private_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| format!("cannot be opened: {e}"))?;
    // The mode of the file opened (not of a path that may change under us).
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be inspected: {e}"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode();
        if mode & 0o044 != 0 {
            return Err(format!(
                "the file is readable by its group or by others (mode {:o}); run chmod 600 on it",
                mode & 0o777
            ));
        }
    }
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|e| format!("cannot be read as UTF-8 text: {e}"))?;
    Ok(text)
}

/// Runs `argv` without a shell and returns its standard output, one
/// trailing newline dropped. Its standard error is discarded and neither
/// stream appears in an error: a failing password manager may print the
/// secret, or part of it, on either.
async fn run_command(argv: &[String], limit: Duration) -> Result<String, String> {
    let Some((program, args)) = argv.split_first() else {
        return Err("names no program".into());
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(limit, command.output())
        .await
        .map_err(|_| format!("the command gave no answer within {} s", limit.as_secs()))?
        .map_err(|e| format!("the command cannot be run: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "the command failed ({}); its output is not shown",
            output.status
        ));
    }
    let text = String::from_utf8(output.stdout)
        .map_err(|_| "the command printed something that is not UTF-8".to_owned())?;
    let text = drop_newline(text);
    if text.is_empty() {
        return Err("the command printed nothing".into());
    }
    Ok(text)
}

#[cfg(feature = "keyring")]
fn keyring_get(service: &str, account: &str) -> Result<String, String> {
    let entry = keyring::Entry::new(service, account)
        .map_err(|e| format!("the OS keyring cannot be used: {}", keyring_error(&e)))?;
    entry
        .get_password()
        .map_err(|e| format!("the OS keyring gave no value: {}", keyring_error(&e)))
}

/// The keyring error's kind, without any data it carries.
#[cfg(feature = "keyring")]
fn keyring_error(e: &keyring::Error) -> &'static str {
    match e {
        keyring::Error::NoEntry => "no such entry",
        keyring::Error::NoStorageAccess(_) => "no keyring is running or it is locked",
        keyring::Error::PlatformFailure(_) => "the platform's keyring failed",
        keyring::Error::BadEncoding(_) => "the entry is not UTF-8 text",
        keyring::Error::TooLong(..) | keyring::Error::Invalid(..) => "the entry's name is invalid",
        keyring::Error::Ambiguous(_) => "several entries match",
        _ => "unknown keyring error",
    }
}

#[cfg(not(feature = "keyring"))]
fn keyring_get(_service: &str, _account: &str) -> Result<String, String> {
    Err("this build has no OS keyring support (build with the `keyring` feature)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(tag: &str, text: &str, mode: u32) -> PathBuf {
        let dir = tempfile::tempdir().unwrap().keep();
        let path = dir.join(tag);
        std::fs::write(&path, text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let _ = mode;
        path
    }

    #[test]
    fn references_parse_each_kind() {
        let base = Path::new("/cfg");
        assert_eq!(
            SecretRef::parse("file:tok", Some(base)).unwrap(),
            SecretRef::File("/cfg/tok".into())
        );
        assert_eq!(
            SecretRef::parse("file:/abs/tok", Some(base)).unwrap(),
            SecretRef::File("/abs/tok".into())
        );
        assert_eq!(
            SecretRef::parse("env:X", None).unwrap(),
            SecretRef::Env("X".into())
        );
        assert_eq!(
            SecretRef::parse("cmd:pass show 'a b'", None).unwrap(),
            SecretRef::Command(vec!["pass".into(), "show".into(), "a b".into()])
        );
        assert_eq!(
            SecretRef::parse("keyring:svc/with/slash/me", None).unwrap(),
            SecretRef::Keyring {
                service: "svc/with/slash".into(),
                account: "me".into()
            }
        );
        for bad in [
            "nokind",
            "vault:x",
            "env:",
            "cmd:  ",
            "keyring:noslash",
            "cmd:'open",
        ] {
            assert!(SecretRef::parse(bad, None).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_private_file_resolves_without_its_trailing_newline() {
        let path = temp_file("ok", "s3cret-file\n", 0o600);
        let s = SecretRef::File(path).resolve().await.unwrap();
        assert_eq!(s.expose(), "s3cret-file");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_group_or_world_readable_file_is_refused() {
        for mode in [0o644, 0o640, 0o604] {
            let path = temp_file("open", "s3cret-open", mode);
            let e = SecretRef::File(path).resolve().await.unwrap_err();
            assert!(e.reason.contains("chmod 600"), "{e}");
            assert!(!e.to_string().contains("s3cret-open"));
        }
    }

    #[tokio::test]
    async fn a_missing_variable_is_named() {
        let e = SecretRef::Env("SWITCHBOARD_SURELY_UNSET_VAR".into())
            .resolve()
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "secret env:SWITCHBOARD_SURELY_UNSET_VAR: the variable is not set"
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_command_resolves_to_its_stdout() {
        let r = SecretRef::parse("cmd:printf 'from-cmd\\n'", None).unwrap();
        assert_eq!(r.resolve().await.unwrap().expose(), "from-cmd");
        // Only one newline goes.
        let r = SecretRef::parse("cmd:printf 'x\\n\\n'", None).unwrap();
        assert_eq!(r.resolve().await.unwrap().expose(), "x\n");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_failing_command_is_reported_without_its_output() {
        let r = SecretRef::parse(
            // The command line itself names no "leaked": only its output does.
            "cmd:sh -c 'printf l%sked-out ea; printf l%sked-err ea >&2; exit 3'",
            None,
        )
        .unwrap();
        let e = r.resolve().await.unwrap_err().to_string();
        assert!(e.contains("exit status: 3"), "{e}");
        assert!(!e.contains("leaked"), "{e}");
    }

    // A paused clock: the limit passes as soon as the runtime is idle.
    #[cfg(unix)]
    #[tokio::test(start_paused = true)]
    async fn a_command_that_hangs_is_stopped() {
        let argv = vec!["sleep".to_owned(), "30".to_owned()];
        let e = run_command(&argv, SECRET_COMMAND_TIMEOUT)
            .await
            .unwrap_err();
        assert!(e.contains("no answer within"), "{e}");
    }

    #[tokio::test]
    async fn a_command_that_is_not_there_says_so() {
        let r = SecretRef::Command(vec!["switchboard-no-such-program-x".into()]);
        let e = r.resolve().await.unwrap_err().to_string();
        assert!(e.contains("cannot be run"), "{e}");
    }

    #[cfg(not(feature = "keyring"))]
    #[tokio::test]
    async fn without_the_feature_the_keyring_says_how_to_get_it() {
        let r = SecretRef::parse("keyring:svc/me", None).unwrap();
        let e = r.resolve().await.unwrap_err().to_string();
        assert!(e.contains("`keyring` feature"), "{e}");
    }
}

/// The OS keyring, with the feature on: a real round trip where a keyring
/// runs (`SWITCHBOARD_TEST_KEYRING=1` says one does), else a clean
/// refusal that names the missing keyring.
#[cfg(all(test, feature = "keyring"))]
mod keyring_tests {
    use super::*;

    #[tokio::test]
    async fn the_keyring_resolves_or_says_it_is_not_there() {
        let reference = SecretRef::parse("keyring:switchboard-test/secret-ref", None).unwrap();
        if std::env::var_os("SWITCHBOARD_TEST_KEYRING").is_some() {
            let entry = keyring::Entry::new("switchboard-test", "secret-ref").unwrap();
            entry.set_password("from-keyring-7c1").unwrap();
            let got = reference.resolve().await;
            let _ = entry.delete_credential();
            assert_eq!(got.unwrap().expose(), "from-keyring-7c1");
        } else {
            let e = reference.resolve().await.unwrap_err().to_string();
            assert!(e.contains("keyring"), "{e}");
        }
    }
}
