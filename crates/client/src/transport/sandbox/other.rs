//! Platforms without the Linux mechanisms (macOS, the BSDs, Windows): the
//! environment is still scrubbed, but nothing else is enforced, so a
//! sandbox that asks for more does not start unless it says
//! `"required": false`. The baseline is reported as missing and never
//! stops a server.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use tokio::process::Command;

use super::{
    Confinement, Environment, Mechanism, MechanismState, Sandbox, compose_env, env_names, lacking,
};

/// What [`prepare`] built for one spawn: only the environment here.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The environment the server gets.
    pub(crate) env: Vec<(OsString, OsString)>,
    /// What it may do.
    pub(crate) confinement: Confinement,
    /// Nothing to clean up on these platforms.
    pub(crate) leftovers: Leftovers,
}

/// Nothing outlives a spawn here.
#[derive(Debug, Default)]
pub(crate) struct Leftovers;

const MISSING: &str = "only enforced on Linux";

/// The environment, and a refusal when the sandbox asks for a mechanism
/// this platform lacks and `required` is set.
///
/// # Errors
/// The reason the server must not start.
pub(crate) fn prepare(
    name: &str,
    sandbox: &Sandbox,
    environment: &Environment,
    extra_env: &[(OsString, OsString)],
    command: &OsStr,
    cwd: Option<&Path>,
) -> Result<Prepared, String> {
    let _ = name;
    let confinement = plan(sandbox, environment, extra_env, command, cwd);
    if sandbox.confines() && sandbox.required {
        if let Some(missing) = confinement.missing() {
            return Err(lacking(&missing));
        }
    }
    Ok(Prepared {
        env: compose_env(environment, extra_env, None),
        confinement,
        leftovers: Leftovers,
    })
}

impl Prepared {
    /// Nothing to install on these platforms.
    pub(crate) fn install(&mut self, _command: &mut Command) {}

    /// Nothing to read back on these platforms.
    pub(crate) fn after_spawn(
        &mut self,
        _spawned: Result<(), &std::io::Error>,
    ) -> Result<(), String> {
        Ok(())
    }
}

/// What a server with this sandbox may do here: its environment; every
/// other mechanism it asks for is missing.
pub(crate) fn plan(
    sandbox: &Sandbox,
    environment: &Environment,
    extra_env: &[(OsString, OsString)],
    _command: &OsStr,
    _cwd: Option<&Path>,
) -> Confinement {
    let env = compose_env(environment, extra_env, None);
    let mut mechanisms = Vec::new();
    let mut missing = |name: &'static str| {
        mechanisms.push(Mechanism {
            name,
            state: MechanismState::Missing(MISSING.into()),
        })
    };
    if sandbox.fs.is_some() {
        missing("landlock");
    }
    if !sandbox.network {
        missing("network namespace");
    }
    if sandbox.processes.is_some() {
        missing("processes");
    }
    if sandbox.memory_mib.is_some() {
        missing("memory");
    }
    if sandbox.cpu_seconds.is_some() {
        missing("cpu");
    }
    if sandbox.baseline {
        mechanisms.push(Mechanism {
            name: "seccomp",
            state: MechanismState::Partial(format!("not applied: {MISSING}")),
        });
    }
    Confinement {
        env_names: env_names(&env),
        // Nothing confines the files here: say so.
        fs_confined: false,
        network: true,
        memory_mib: None,
        processes: None,
        cpu_seconds: None,
        mechanisms,
        ..Confinement::default()
    }
}
