//! Fuzz target: pagination cursor unsealing (body in `switchboard_fuzzing::cursor`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::cursor(data));
