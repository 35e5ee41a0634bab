//! Fuzz target: JSON-RPC message parsing and its round trip (body in `switchboard_fuzzing::message`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::message(data));
