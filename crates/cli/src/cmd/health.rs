//! `switchboard health [URL]`: one GET of a gateway's `/healthz` (or
//! `/readyz`), exit 0 on `200 OK` and 4 otherwise.
//!
//! A container image built `FROM` a distroless base has no shell and no
//! `curl`, so its `HEALTHCHECK` runs the binary itself. The probe speaks
//! plain HTTP/1.1 over one TCP connection: a gateway serving TLS is
//! probed by its orchestrator (Kubernetes probes speak HTTPS), not by this.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::exit::{Code, Failure};
use crate::out;

/// The URL probed without one: the port the image's example serves on.
pub(crate) const DEFAULT_URL: &str = "http://127.0.0.1:8080/healthz";

/// The most of the answer read: its status line is all that matters.
const HEAD_BYTES: usize = 1024;

/// Probes `url` within `timeout`.
///
/// # Errors
/// A [`Failure`] with [`Code::Usage`] for a URL this probe cannot send to,
/// [`Code::Unreachable`] for no connection, no answer in time, or an answer
/// other than 200.
pub(crate) async fn run(url: &str, timeout: Duration, json: bool) -> anyhow::Result<()> {
    let (authority, path) = split_url(url).map_err(Failure::usage)?;
    let status = tokio::time::timeout(timeout, probe(authority, path))
        .await
        .map_err(|_| {
            Failure::new(
                Code::Unreachable,
                format!("{url}: no answer within {} ms", timeout.as_millis()),
            )
        })?
        .map_err(|e| Failure::new(Code::Unreachable, format!("{url}: {e}")))?;
    if status != 200 {
        return Err(Failure::new(Code::Unreachable, format!("{url}: answered {status}")).into());
    }
    if json {
        out::json(&serde_json::json!({"url": url, "status": status}))?;
    } else {
        out::line(format!("{url}: ok"))?;
    }
    Ok(())
}

/// Splits `http://HOST[:PORT][/PATH]` into the authority and the path
/// (`/healthz` when none is given).
fn split_url(url: &str) -> Result<(&str, &str), String> {
    let rest = match url.strip_prefix("http://") {
        Some(rest) => rest,
        None if url.starts_with("https://") => {
            return Err(format!(
                "{url}: the probe speaks plain HTTP only; probe a TLS gateway from its orchestrator (e.g. a Kubernetes probe with scheme HTTPS)"
            ));
        }
        None => return Err(format!("{url}: not an http:// URL")),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, "/healthz"),
    };
    let clean = |c: char| !c.is_ascii_control() && !c.is_whitespace();
    if authority.is_empty() || !authority.chars().all(clean) || !path.chars().all(clean) {
        return Err(format!("{url}: not a URL this probe can send"));
    }
    Ok((authority, path))
}

/// Sends one GET and returns the answer's status code.
async fn probe(authority: &str, path: &str) -> std::io::Result<u16> {
    let address = match authority.rsplit_once(':') {
        Some((_, port)) if !port.is_empty() && !port.contains(']') => authority.to_owned(),
        _ => format!("{authority}:80"),
    };
    let mut stream = TcpStream::connect(address).await?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: switchboard-health\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut head = Vec::with_capacity(HEAD_BYTES);
    let mut chunk = [0u8; 256];
    while head.len() < HEAD_BYTES && !head.contains(&b'\n') {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    status_of(&head).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the answer is not HTTP (no status line)",
        )
    })
}

/// The status code of an HTTP/1.x status line at the start of `head`.
fn status_of(head: &[u8]) -> Option<u16> {
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_ascii_whitespace();
    if !words.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let code = words.next()?;
    (code.len() == 3).then(|| code.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_split_into_authority_and_path() {
        assert_eq!(
            split_url("http://127.0.0.1:8080/readyz"),
            Ok(("127.0.0.1:8080", "/readyz"))
        );
        assert_eq!(split_url("http://[::1]:9"), Ok(("[::1]:9", "/healthz")));
        assert!(split_url("https://gw.example/healthz").is_err());
        assert!(split_url("ftp://x").is_err());
        assert!(split_url("http://a b/").is_err());
        assert!(split_url("http:///healthz").is_err());
    }

    #[test]
    fn status_lines_are_read_strictly() {
        assert_eq!(status_of(b"HTTP/1.1 200 OK\r\n"), Some(200));
        assert_eq!(
            status_of(b"HTTP/1.1 503 Service Unavailable\r\n"),
            Some(503)
        );
        assert_eq!(status_of(b"SSH-2.0-OpenSSH\r\n"), None);
        assert_eq!(status_of(b"HTTP/1.1 20 OK\r\n"), None);
        assert_eq!(status_of(b""), None);
    }
}
