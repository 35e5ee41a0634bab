//! The `faulty` server (stdio): misbehaves on request, for the self-test.
//!
//! Tools: `echo` answers at once; `hang` never answers (until the client
//! cancels it); `die` ends the whole process mid-request, with exit status
//! [`DIE_STATUS`] and a last line on stderr, so every call still pending on
//! the connection must fail at once.

use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_server::{BuildError, Context, Server, ToolSpec};

use crate::DemoError;

/// The exit status of the process after `die`.
pub const DIE_STATUS: i32 = 7;

/// The stderr line written just before `die` exits.
pub const DIE_LINE: &str = "faulty: exiting on request (the die tool)";

/// The server.
///
/// # Errors
/// [`BuildError`] only if a tool definition is invalid (a bug).
pub fn server() -> Result<Server, BuildError> {
    Server::builder("faulty-demo", crate::VERSION)
        .tool("echo", "Returns its text at once.", echo)
        .tool("hang", "Never answers; only a cancellation ends it.", hang)
        .tool_spec(
            ToolSpec::new("die").description("Ends the server process at once."),
            die,
        )
        .build()
}

/// Serves [`server`] on stdin and stdout until stdin ends.
///
/// # Errors
/// [`DemoError`] when stdin cannot be read.
pub async fn serve_stdio() -> Result<(), DemoError> {
    let server = server().map_err(|source| DemoError::Build {
        server: "faulty",
        source,
    })?;
    Ok(switchboard_server::stdio::serve(server).await?)
}

/// Arguments of `echo`.
#[derive(Debug, Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    #[serde(default)]
    text: String,
}

async fn echo(args: EchoArgs) -> String {
    args.text
}

async fn hang(ctx: Context) -> String {
    ctx.cancelled().await;
    "cancelled".into()
}

// Ending the process is this tool's whole purpose.
#[allow(clippy::print_stderr)]
async fn die() -> String {
    eprintln!("{DIE_LINE}");
    std::process::exit(DIE_STATUS);
}
