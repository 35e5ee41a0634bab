//! JSON-RPC framing of results and errors, written straight into bytes.

use super::*;

/// Frames a result as a JSON-RPC response, in a buffer with room for
/// exactly `spare` more bytes: a buffer filled to its capacity becomes a
/// `Bytes` without another allocation.
pub(crate) fn frame_result(id: &RequestId, result: &[u8], spare: usize) -> Vec<u8> {
    // Ids are strings or integers; both serialize infallibly, and alike
    // twice: once to size the buffer, once to fill it.
    let mut id_len = ByteCount(0);
    let _ = serde_json::to_writer(&mut id_len, id);
    let mut out = Vec::with_capacity(FRAME_OVERHEAD + id_len.0 + result.len() + spare);
    append_result_frame(&mut out, id, result);
    out
}

pub(super) const FRAME_HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
pub(super) const FRAME_MIDDLE: &[u8] = b",\"result\":";

/// What a response frame adds to its id and result.
pub(crate) const FRAME_OVERHEAD: usize = FRAME_HEAD.len() + FRAME_MIDDLE.len() + 1;

/// Appends a result framed as a JSON-RPC response to `out` (the stdio
/// runner frames answers straight into the lines it holds for stdout).
pub(crate) fn append_result_frame(out: &mut Vec<u8>, id: &RequestId, result: &[u8]) {
    out.extend_from_slice(FRAME_HEAD);
    let _ = serde_json::to_writer(&mut *out, id);
    out.extend_from_slice(FRAME_MIDDLE);
    out.extend_from_slice(result);
    out.push(b'}');
}

/// A writer that only counts what it is given.
pub(super) struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Frames an error as a JSON-RPC response.
pub(crate) fn frame_error(id: Option<&RequestId>, error: &ErrorObject) -> Vec<u8> {
    Message::Response(Response::error(id.cloned(), error.clone())).to_vec()
}

pub(super) fn to_json(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec())
}
