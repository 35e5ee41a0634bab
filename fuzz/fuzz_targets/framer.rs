//! The line framer: any bytes, any chunking, any bound. It must not panic,
//! must keep its memory bounded, and must produce the same lines and errors
//! however the bytes are split.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_wire::{FrameError, LineFramer};

fn frame(pieces: &[&[u8]], max_line: usize) -> Vec<Result<Vec<u8>, FrameError>> {
    let mut framer = LineFramer::with_max_line(max_line);
    let mut out = Vec::new();
    for piece in pieces {
        framer.push(piece);
        assert!(framer.buffered() <= max_line + piece.len() + 1);
        loop {
            match framer.next_line() {
                Ok(Some(line)) => out.push(Ok(line.to_vec())),
                Ok(None) => break,
                Err(e) => out.push(Err(e)),
            }
        }
    }
    match framer.finish() {
        Ok(Some(line)) => out.push(Ok(line.to_vec())),
        Ok(None) => {}
        Err(e) => out.push(Err(e)),
    }
    out
}

fuzz_target!(|data: &[u8]| {
    // First byte: the bound; second: the chunk size; the rest: the stream.
    let [bound, chunk, stream @ ..] = data else { return };
    let max_line = usize::from(*bound) + 1;
    let chunk = usize::from(*chunk).max(1);
    let whole = frame(&[stream], max_line);
    let pieces: Vec<&[u8]> = stream.chunks(chunk).collect();
    assert_eq!(whole, frame(&pieces, max_line));
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(whole, frame(&bytes, max_line));
});
