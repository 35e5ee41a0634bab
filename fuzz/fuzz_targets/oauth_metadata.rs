//! Fuzz target: OAuth metadata documents and their URLs (body in `switchboard_fuzzing::oauth_metadata`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::oauth_metadata(data));
