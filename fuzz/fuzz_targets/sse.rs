//! The SSE decoder: any bytes, any chunking. It must not panic and must
//! produce the same events however the bytes are split.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_wire::SseDecoder;

fn decode(pieces: &[&[u8]]) -> Vec<String> {
    let mut decoder = SseDecoder::with_max_event(4096);
    let mut out = Vec::new();
    for piece in pieces {
        decoder.push(piece);
        loop {
            match decoder.next_event() {
                Ok(Some(e)) => out.push(format!("{e:?}")),
                Ok(None) => break,
                Err(e) => {
                    out.push(format!("error {e}"));
                    return out;
                }
            }
        }
    }
    decoder.finish();
    out
}

fuzz_target!(|data: &[u8]| {
    let [chunk, stream @ ..] = data else { return };
    let chunk = usize::from(*chunk).max(1);
    let whole = decode(&[stream]);
    let pieces: Vec<&[u8]> = stream.chunks(chunk).collect();
    assert_eq!(whole, decode(&pieces));
});
