//! Fuzz target: differential: the tools/call fast path against the general path (body in `switchboard_fuzzing::fast_path`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::fast_path(data));
