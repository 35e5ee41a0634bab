//! Fuzz target: requestState unsealing (body in `switchboard_fuzzing::request_state`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::request_state(data));
