//! Exit codes, and the error that carries one up to `main`.

use std::fmt;

use switchboard_host::Outcome;
use switchboard_oauth::OAuthError;

/// How the process ends. The numbers follow MCP Inspector's CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Code {
    /// Everything worked.
    Ok = 0,
    /// Bad command line, bad config, or a check failed.
    Usage = 1,
    /// A server needs the user to log in.
    Auth = 3,
    /// A server could not be reached, timed out or is paused.
    Unreachable = 4,
    /// The tool ran and returned `isError: true`.
    ToolError = 5,
    /// The gate (a rule or the user) said no.
    Denied = 6,
    /// The user interrupted the command (Ctrl-C); a task it started was
    /// cancelled.
    Interrupted = 130,
}

impl Code {
    /// The process exit status.
    pub(crate) fn status(self) -> u8 {
        self as u8
    }

    /// A stable word for JSON error lines.
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Code::Ok => "ok",
            Code::Usage => "usage",
            Code::Auth => "auth_required",
            Code::Unreachable => "unreachable",
            Code::ToolError => "tool_error",
            Code::Denied => "denied",
            Code::Interrupted => "interrupted",
        }
    }

    /// The code for a call that ended with `outcome`.
    pub(crate) fn of_outcome(outcome: Outcome) -> Code {
        match outcome {
            // Only a relaying front end (the gateway) stops at a question.
            Outcome::Ok | Outcome::InputRequired => Code::Ok,
            Outcome::ToolError => Code::ToolError,
            // A question handed back did not run either (only the gateway
            // hands questions back).
            Outcome::Denied | Outcome::Limited | Outcome::Asked => Code::Denied,
            Outcome::UnknownTool => Code::Usage,
            Outcome::AuthRequired => Code::Auth,
            Outcome::Timeout | Outcome::Transport | Outcome::Breaker => Code::Unreachable,
            // The server refused the call itself (bad arguments, internal
            // fault): it did not do what was asked.
            Outcome::ProtocolError => Code::ToolError,
        }
    }
}

/// A failure with its exit code. Commands return it through `anyhow`;
/// `main` finds it in the chain. Any other error exits with 1.
#[derive(Debug)]
pub(crate) struct Failure {
    /// The exit code.
    pub(crate) code: Code,
    /// What happened, in words.
    pub(crate) message: String,
}

impl Failure {
    /// A failure with `code`.
    pub(crate) fn new(code: Code, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A usage or config failure (1).
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Failure::new(Code::Usage, message)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// The code for a failed OAuth operation: the authorization server (or the
/// MCP server) could not be reached → 4; a broken token store or
/// configuration → 1; anything else is authorization failing → 3.
pub(crate) fn of_oauth_error(e: &OAuthError) -> Code {
    match e {
        OAuthError::Http { .. } => Code::Unreachable,
        OAuthError::Config(_) | OAuthError::Store { .. } | OAuthError::Key(_) => Code::Usage,
        _ => Code::Auth,
    }
}

/// The JSON error line written to stderr under `--json`.
pub(crate) fn json_error_line(code: Code, message: &str) -> String {
    serde_json::json!({
        "error": {
            "code": code.status(),
            "kind": code.kind(),
            "message": message,
        }
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_map_to_codes() {
        let cases = [
            (Outcome::Ok, 0),
            (Outcome::ToolError, 5),
            (Outcome::ProtocolError, 5),
            (Outcome::Denied, 6),
            (Outcome::Limited, 6),
            (Outcome::UnknownTool, 1),
            (Outcome::Timeout, 4),
            (Outcome::Transport, 4),
            (Outcome::AuthRequired, 3),
            (Outcome::Breaker, 4),
        ];
        for (outcome, want) in cases {
            assert_eq!(Code::of_outcome(outcome).status(), want, "{outcome:?}");
        }
    }

    #[test]
    fn json_error_line_is_one_line() {
        let line = json_error_line(Code::Denied, "no\nway");
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["error"]["code"], 6);
        assert_eq!(v["error"]["kind"], "denied");
    }
}
