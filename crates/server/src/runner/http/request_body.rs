//! Reading a request body within the configured limit, and throwing away
//! the rest of a refused one.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;

/// Why a request body could not be had.
pub(super) enum BodyError {
    /// More than the configured maximum.
    TooLarge,
    /// The connection failed while sending it.
    Unreadable,
}

/// Reads a whole request body of at most `limit` bytes. A body that comes
/// in one piece, as small ones do, is kept as it came: no buffer list, no
/// copy.
pub(super) async fn read_body(
    body: &mut hyper::body::Incoming,
    limit: usize,
) -> Result<Bytes, BodyError> {
    let mut first: Option<Bytes> = None;
    let mut joined: Vec<u8> = Vec::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| BodyError::Unreadable)?;
        // Trailers carry nothing a JSON-RPC body needs.
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.is_empty() {
            continue;
        }
        total = total.saturating_add(data.len());
        if total > limit {
            return Err(BodyError::TooLarge);
        }
        match first.take() {
            None if joined.is_empty() => first = Some(data),
            None => joined.extend_from_slice(&data),
            Some(f) => {
                joined.reserve(f.len() + data.len());
                joined.extend_from_slice(&f);
                joined.extend_from_slice(&data);
            }
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(joined)))
}

/// How much of a refused body, past the limit, is read and thrown away
/// before the 413 goes out, and for how long at most. A connection closed
/// while the client is still sending is reset, and the reset can reach the
/// client before the 413 does: it would see a broken pipe instead of the
/// reason. Bodies declared larger than the limit by more get the 413 at
/// once.
pub(super) const DISCARD_AT_MOST: usize = 16 * 1024 * 1024;
pub(super) const DISCARD_FOR: Duration = Duration::from_secs(2);

/// Reads and drops the rest of a refused body (see [`DISCARD_AT_MOST`]).
pub(super) async fn discard(body: &mut hyper::body::Incoming) {
    let drain = async {
        let mut read = 0usize;
        while let Some(Ok(frame)) = body.frame().await {
            read = read.saturating_add(frame.data_ref().map_or(0, Bytes::len));
            if read > DISCARD_AT_MOST {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(DISCARD_FOR, drain).await;
}
