//! Fuzz target: the line framer: any chunking and bound (body in `switchboard_fuzzing::framer`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::framer(data));
