//! Fuzz target: the SSE decoder: any chunking (body in `switchboard_fuzzing::sse`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::sse(data));
