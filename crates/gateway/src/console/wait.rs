//! Approvals that wait for the console: when the gate asks about a call
//! whose client can be asked nothing (no elicitation at all) and the
//! config has `approvals.notify`, the call is announced to that local
//! webhook and waits up to `approvals.timeout` for a console principal to
//! approve or deny it on its page; then it runs or is denied.
//!
//! The webhook gets one JSON POST per waiting call (`Content-Type:
//! application/json`), never the arguments' values:
//!
//! ```json
//! {"event": "approval.requested", "id": "…", "url": "http://…/console/approve/…",
//!  "tool": "mcp__notes__search", "server": "notes", "caller": "ci-bot",
//!  "argumentsSha256": "…", "reasons": ["…"], "expiresInMs": 120000}
//! ```

use std::time::Duration;

use serde_json::json;
use switchboard_host::BoxFuture;
use switchboard_host::{Approval, ApprovalRequest, Approver, Decider};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::approvals::{APPROVAL_TTL, Approvals, Redeemed, digest};

/// How often a waiting call looks for the console's decision.
const POLL: Duration = Duration::from_millis(200);

/// How long the webhook has to take the announcement.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);

/// The approver of a call that waits for the console.
#[derive(Debug)]
pub(crate) struct WaitForConsole {
    pub(crate) approvals: Approvals,
    /// The webhook (`http://` on loopback, checked by the config).
    pub(crate) notify: String,
    pub(crate) timeout: Duration,
    pub(crate) caller: Option<String>,
}

impl Approver for WaitForConsole {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let Some((id, url)) = self.approvals.open(request, self.caller.as_deref()).await else {
                return Approval::Deny(Some(
                    "This call needs a person's approval, and the gateway's console cannot take it now.".into(),
                ));
            };
            let wait = self.timeout.min(APPROVAL_TTL);
            let payload = json!({
                "event": "approval.requested",
                "id": id,
                "url": url,
                "tool": request.local_name,
                "server": request.alias,
                "caller": self.caller,
                "argumentsSha256": digest(&request.local_name, &request.arguments),
                "reasons": request.reasons,
                "expiresInMs": u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            });
            if let Err(e) = post(&self.notify, &payload.to_string()).await {
                tracing::warn!(tool = %request.local_name, "the approval webhook was not told: {e}");
            }
            let tool = &request.local_name;
            let arguments_digest = digest(tool, &request.arguments);
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                match self
                    .approvals
                    .redeem(&id, tool, &arguments_digest, self.caller.as_deref())
                    .await
                {
                    Redeemed::Approved(by) => {
                        tracing::info!(tool = %tool, approved_by = %by, "approved in the console");
                        return Approval::AllowOnce;
                    }
                    Redeemed::Denied(by) => {
                        return Approval::Deny(Some(format!(
                            "{by} declined this call of {tool} in the console. Do not retry it unless the user asks."
                        )));
                    }
                    Redeemed::Invalid => break,
                    Redeemed::Unavailable(why) => {
                        return Approval::Deny(Some(format!(
                            "The console's decision on this call of {tool} cannot be read: {why}"
                        )));
                    }
                    Redeemed::Waiting => {}
                }
                if tokio::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(POLL).await;
            }
            self.approvals.forget(&id).await;
            Approval::Deny(Some(format!(
                "Nobody approved this call of {tool} in the gateway's console within {} s.",
                wait.as_secs()
            )))
        })
    }

    fn decider(&self) -> Decider {
        Decider::Human
    }
}

/// POSTs `body` (JSON) to `url` (`http://host:port/path` on loopback)
/// and reads the status line.
async fn post(url: &str, body: &str) -> Result<u16, String> {
    let rest = url.strip_prefix("http://").ok_or("not an http:// URL")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let address = if authority.contains(':') && !authority.ends_with(']') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(&address)
            .await
            .map_err(|e| format!("cannot connect to {address}: {e}"))?;
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\nUser-Agent: switchboard\r\n\r\n{body}",
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut head = [0u8; 64];
        let n = stream.read(&mut head).await.map_err(|e| e.to_string())?;
        let line = String::from_utf8_lossy(&head[..n]).into_owned();
        line.split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("not an HTTP answer: {line:?}"))
    };
    tokio::time::timeout(NOTIFY_TIMEOUT, exchange)
        .await
        .map_err(|_| format!("no answer within {NOTIFY_TIMEOUT:?}"))?
}
