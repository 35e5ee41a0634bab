//! Fuzz target: URI templates and matching (body in `switchboard_fuzzing::uri_template`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::uri_template(data));
