//! `hostile-server`: a stdio MCP server that tries one thing a sandbox
//! must stop, for the sandbox tests. Single-threaded and without a
//! runtime, so an address-space limit bounds what it allocates, not what
//! a thread pool reserves.
//!
//! It serves one tool, `act`, which performs its behaviour and answers
//! with what happened: the text of the outcome, with `isError: true` when
//! the system refused. With `--at-start` it performs the behaviour before
//! serving and exits with status 1 (the error on stderr) when refused, so
//! the tests see a server the sandbox stopped.
//!
//! # Behaviours (the first argument)
//! | behaviour | argument | what it does |
//! |---|---|---|
//! | `read` | `PATH` (`~/` expands to `$HOME/`) | reads the file, answers its contents |
//! | `write` | `PATH` | creates (or truncates) the file and writes `written` into it |
//! | `connect` | `HOST:PORT` | opens a TCP connection |
//! | `fork` | `N` | forks up to `N` children that wait; answers how many it got, then kills them |
//! | `alloc` | `MIB` | allocates and touches `MIB` MiB (an allocation failure aborts the process, as in any Rust program) |
//! | `ptrace` | — | forks a child and attaches to it with `PTRACE_SEIZE` |
//! | `env` | — | answers its whole environment, one `NAME=VALUE` a line |
//!
//! Run: `cargo run -p switchboard-testkit --bin hostile-server -- env`,
//! then paste:
//! ```text
//! {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"act","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! ```

// A test tool that must print to stdout and stderr by design.
#![allow(clippy::print_stderr, clippy::print_stdout)]

use std::io::{BufRead, Write};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use switchboard_wire::meta::SERVER_INFO;
use switchboard_wire::{ErrorObject, Message, Response, version};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let behaviour = args
        .next()
        .context("usage: hostile-server BEHAVIOUR [ARG] [--at-start]")?;
    let mut arg = None;
    let mut at_start = false;
    for a in args {
        if a == "--at-start" {
            at_start = true;
        } else {
            arg = Some(a);
        }
    }
    let act = Act { behaviour, arg };
    if at_start {
        if let Err(e) = act.run() {
            eprintln!("hostile-server: {} refused: {e}", act.behaviour);
            std::process::exit(1);
        }
        eprintln!("hostile-server: {} succeeded at start", act.behaviour);
    }
    serve(&act)
}

struct Act {
    behaviour: String,
    arg: Option<String>,
}

impl Act {
    fn arg(&self) -> anyhow::Result<&str> {
        self.arg
            .as_deref()
            .with_context(|| format!("{} needs an argument", self.behaviour))
    }

    /// Does the behaviour; `Ok` with what happened, or the refusal.
    fn run(&self) -> anyhow::Result<String> {
        match self.behaviour.as_str() {
            "read" => {
                let path = expand(self.arg()?);
                let text =
                    std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
                Ok(text)
            }
            "write" => {
                let path = expand(self.arg()?);
                std::fs::write(&path, "written").with_context(|| format!("write {path}"))?;
                Ok(format!("wrote {path}"))
            }
            "connect" => {
                let addr = self.arg()?;
                let stream = std::net::TcpStream::connect(addr)
                    .with_context(|| format!("connect {addr}"))?;
                Ok(format!("connected to {}", stream.peer_addr()?))
            }
            "fork" => fork_many(self.arg()?.parse().context("fork N")?),
            "alloc" => {
                let mib: usize = self.arg()?.parse().context("alloc MIB")?;
                // Touch every page so the memory is really used.
                let block = vec![1u8; mib << 20];
                let sum: usize = block.iter().step_by(4096).map(|&b| usize::from(b)).sum();
                Ok(format!("allocated {mib} MiB ({sum} pages touched)"))
            }
            "ptrace" => ptrace_child(),
            "env" => {
                let mut lines: Vec<String> = std::env::vars_os()
                    .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
                    .collect();
                lines.sort();
                Ok(lines.join("\n"))
            }
            other => bail!("unknown behaviour {other}"),
        }
    }
}

fn expand(path: &str) -> String {
    match (path.strip_prefix("~/"), std::env::var("HOME")) {
        (Some(rest), Ok(home)) => format!("{home}/{rest}"),
        _ => path.to_owned(),
    }
}

/// Forks up to `n` children that wait for a signal; kills and reaps them
/// all before answering.
#[allow(unsafe_code)]
fn fork_many(n: usize) -> anyhow::Result<String> {
    let mut children = Vec::new();
    let mut failure = None;
    for _ in 0..n {
        // SAFETY: single-threaded process; the child only calls pause and
        // _exit.
        let pid = unsafe { libc::fork() };
        match pid {
            0 => loop {
                // SAFETY: async-signal-safe calls in the child.
                unsafe {
                    libc::pause();
                }
            },
            p if p > 0 => children.push(p),
            _ => {
                failure = Some(std::io::Error::last_os_error());
                break;
            }
        }
    }
    let count = children.len();
    for pid in children {
        // SAFETY: signalling and reaping our own children.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
    match failure {
        Some(e) => bail!("fork failed after {count} of {n} processes: {e}"),
        None => Ok(format!("forked {count} processes")),
    }
}

/// Forks a child and attaches to it with `PTRACE_SEIZE`.
#[allow(unsafe_code)]
fn ptrace_child() -> anyhow::Result<String> {
    // SAFETY: single-threaded process; the child only calls pause.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        loop {
            // SAFETY: async-signal-safe call in the child.
            unsafe {
                libc::pause();
            }
        }
    }
    if pid < 0 {
        bail!("fork: {}", std::io::Error::last_os_error());
    }
    // SAFETY: ptrace on our own child with null addr/data.
    let rc = unsafe {
        libc::ptrace(
            libc::PTRACE_SEIZE,
            pid,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    let outcome = if rc == 0 {
        Ok(format!("attached to {pid}"))
    } else {
        Err(std::io::Error::last_os_error())
    };
    // SAFETY: killing and reaping our own child (a tracee dies too).
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    outcome.map_err(|e| anyhow::anyhow!("ptrace: {e}"))
}

/// Answers `server/discover`, `tools/list` and `tools/call` (`act`) on
/// stdin/stdout until stdin closes.
fn serve(act: &Act) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line?;
        let Ok(Message::Request(req)) = Message::from_slice(line.as_bytes()) else {
            continue;
        };
        let outcome = match req.method.as_str() {
            "server/discover" => Ok(complete(json!({
                "supportedVersions": [version::LATEST],
                "capabilities": {"tools": {}},
            }))),
            "tools/list" => Ok(complete(json!({
                "tools": [{
                    "name": "act",
                    "description": format!("does the hostile thing: {}", act.behaviour),
                    "inputSchema": {"type": "object"},
                }],
                "ttlMs": 0,
                "cacheScope": "public",
            }))),
            "tools/call" => Ok(complete(match act.run() {
                Ok(text) => json!({"content": [{"type": "text", "text": text}]}),
                Err(e) => json!({
                    "content": [{"type": "text", "text": format!("{e:#}")}],
                    "isError": true,
                }),
            })),
            _ => Err(ErrorObject {
                code: -32601,
                message: "method not found".into(),
                data: None,
            }),
        };
        let response = match outcome {
            Ok(result) => Response::result(req.id, result),
            Err(e) => Response::error(Some(req.id), e),
        };
        serde_json::to_writer(&mut stdout, &Message::Response(response))?;
        stdout.write_all(b"\n")?;
        stdout.flush()?;
    }
    Ok(())
}

fn complete(mut result: Value) -> Value {
    if let Value::Object(o) = &mut result {
        o.insert("resultType".into(), json!("complete"));
        o.insert(
            "_meta".into(),
            json!({ SERVER_INFO: {"name": "hostile", "version": "0.0.1"} }),
        );
    }
    result
}
