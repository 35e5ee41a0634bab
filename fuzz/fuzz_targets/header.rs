//! Fuzz target: the header-value codec (body in `switchboard_fuzzing::header`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::header(data));
