//! Where the config comes from: `--config FILE`, `$SWITCHBOARD_CONFIG`,
//! `./.mcp.json`, the user config dir, else the built-in demo.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use super::{Config, ConfigProblem, ConfigProblems, ProblemKind};
use crate::HostError;

/// Environment variable naming the config file.
pub(super) const CONFIG_ENV: &str = "SWITCHBOARD_CONFIG";

/// Where a config came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigOrigin {
    /// Given on the command line (`--config FILE`).
    Flag(PathBuf),
    /// Named by `$SWITCHBOARD_CONFIG`.
    EnvVar(PathBuf),
    /// `.mcp.json` in the current directory.
    Project(PathBuf),
    /// `$XDG_CONFIG_HOME/switchboard/config.json` or
    /// `~/.config/switchboard/config.json`.
    User(PathBuf),
    /// The built-in demo (no file).
    Demo,
    /// Built in code by an embedding program (no file).
    Inline,
}

impl ConfigOrigin {
    /// The file, if there is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            ConfigOrigin::Flag(p)
            | ConfigOrigin::EnvVar(p)
            | ConfigOrigin::Project(p)
            | ConfigOrigin::User(p) => Some(p),
            ConfigOrigin::Demo | ConfigOrigin::Inline => None,
        }
    }

    /// How error messages name it: the file's path, or what it is.
    pub fn describe(&self) -> String {
        match self.path() {
            Some(p) => p.display().to_string(),
            None if *self == ConfigOrigin::Demo => "built-in demo config".into(),
            None => "config built in code".into(),
        }
    }
}

impl fmt::Display for ConfigOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigOrigin::Flag(p) => write!(f, "{} (--config)", p.display()),
            ConfigOrigin::EnvVar(p) => write!(f, "{} (${CONFIG_ENV})", p.display()),
            ConfigOrigin::Project(p) => write!(f, "{} (project)", p.display()),
            ConfigOrigin::User(p) => write!(f, "{} (user config)", p.display()),
            ConfigOrigin::Demo => f.write_str("built-in demo config (no config file found)"),
            ConfigOrigin::Inline => f.write_str("config built in code"),
        }
    }
}

type DemoProvider = Box<dyn FnOnce() -> Result<Config, HostError>>;

/// Finds and loads the config.
///
/// The environment, the current directory and the home directory are read
/// from the process unless set here, so tests and embedders can pin them.
pub struct ConfigLoader {
    explicit: Option<PathBuf>,
    cwd: Option<PathBuf>,
    vars: Option<BTreeMap<String, String>>,
    demo: Option<DemoProvider>,
}

impl fmt::Debug for ConfigLoader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigLoader")
            .field("explicit", &self.explicit)
            .field("cwd", &self.cwd)
            .field("demo", &self.demo.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for ConfigLoader {
    fn default() -> Self {
        Self::new()
    }
}

impl ConfigLoader {
    /// A loader reading the process's environment and current directory,
    /// with no demo to fall back on.
    pub fn new() -> Self {
        ConfigLoader {
            explicit: None,
            cwd: None,
            vars: None,
            demo: None,
        }
    }

    /// The file given with `--config`: used as is, an error if missing.
    pub fn explicit(mut self, path: impl Into<PathBuf>) -> Self {
        self.explicit = Some(path.into());
        self
    }

    /// The directory where `.mcp.json` is looked for.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The environment used for lookup and `${VAR}` expansion.
    pub fn vars(mut self, vars: BTreeMap<String, String>) -> Self {
        self.vars = Some(vars);
        self
    }

    /// The config to use when no file is found (the CLI's demo servers).
    pub fn demo(mut self, provider: impl FnOnce() -> Result<Config, HostError> + 'static) -> Self {
        self.demo = Some(Box::new(provider));
        self
    }

    /// Where the config will come from, without reading it.
    ///
    /// # Errors
    /// [`HostError::Config`] when an explicitly named file (flag or
    /// `$SWITCHBOARD_CONFIG`) does not exist, or nothing is found and no
    /// demo was given.
    pub fn locate(&self) -> Result<ConfigOrigin, HostError> {
        let vars = self.env();
        if let Some(p) = &self.explicit {
            return must_exist(ConfigOrigin::Flag(p.clone()), "--config");
        }
        if let Some(p) = vars.get(CONFIG_ENV).filter(|p| !p.is_empty()) {
            return must_exist(ConfigOrigin::EnvVar(PathBuf::from(p)), CONFIG_ENV);
        }
        let cwd = self
            .cwd
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("."));
        let project = cwd.join(".mcp.json");
        if project.is_file() {
            return Ok(ConfigOrigin::Project(project));
        }
        let user = user_config_path(&vars);
        if let Some(user) = user.as_ref().filter(|p| p.is_file()) {
            return Ok(ConfigOrigin::User(user.clone()));
        }
        if self.demo.is_some() {
            return Ok(ConfigOrigin::Demo);
        }
        let mut looked = vec![project.display().to_string()];
        if let Some(u) = user {
            looked.push(u.display().to_string());
        }
        Err(HostError::config(
            "(no config file)",
            ConfigProblem {
                kind: ProblemKind::NotFound,
                key: "(file)".into(),
                problem: format!("no config found; looked at {}", looked.join(" and ")),
                fix: format!("create .mcp.json, or pass --config FILE, or set ${CONFIG_ENV}"),
                position: None,
            },
        ))
    }

    /// Finds, reads and validates the config.
    ///
    /// # Errors
    /// [`HostError::Config`] listing every problem of the chosen file.
    pub fn load(mut self) -> Result<Config, HostError> {
        let origin = self.locate()?;
        let Some(path) = origin.path().map(Path::to_path_buf) else {
            let demo = self.demo.take().ok_or_else(|| ConfigProblems {
                file: origin.describe(),
                problems: Vec::new(),
            })?;
            let mut config = demo()?;
            config.origin = ConfigOrigin::Demo;
            return Ok(config);
        };
        let text = std::fs::read_to_string(&path).map_err(|e| {
            HostError::config(
                origin.describe(),
                ConfigProblem {
                    kind: ProblemKind::Io,
                    key: "(file)".into(),
                    problem: format!("cannot read the file: {e}"),
                    fix: "check the path and its permissions".into(),
                    position: None,
                },
            )
        })?;
        Config::parse(&text, origin, &self.env())
    }

    fn env(&self) -> BTreeMap<String, String> {
        self.vars.clone().unwrap_or_else(|| {
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect()
        })
    }
}

fn must_exist(origin: ConfigOrigin, via: &str) -> Result<ConfigOrigin, HostError> {
    match origin.path() {
        Some(p) if !p.is_file() => Err(HostError::config(
            origin.describe(),
            ConfigProblem {
                kind: ProblemKind::NotFound,
                key: "(file)".into(),
                problem: format!("the file named by {via} does not exist"),
                fix: "fix the path, or create the file".into(),
                position: None,
            },
        )),
        _ => Ok(origin),
    }
}

/// `$XDG_CONFIG_HOME/switchboard/config.json`, else
/// `$HOME/.config/switchboard/config.json`.
fn user_config_path(vars: &BTreeMap<String, String>) -> Option<PathBuf> {
    let base = vars
        .get("XDG_CONFIG_HOME")
        .filter(|v| Path::new(v).is_absolute())
        .map(PathBuf::from)
        .or_else(|| {
            vars.get("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| Path::new(h).join(".config"))
        })?;
    Some(base.join("switchboard").join("config.json"))
}
