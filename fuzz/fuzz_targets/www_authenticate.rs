//! Fuzz target: WWW-Authenticate challenges (body in `switchboard_fuzzing::www_authenticate`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::www_authenticate(data));
