//! Fuzz target: the config file with ${VAR} expansion (body in `switchboard_fuzzing::config`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::config(data));
