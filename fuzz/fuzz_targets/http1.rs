//! Fuzz target: the HTTP client's HTTP/1.1 response head and body decoding,
//! any chunking (body in `switchboard_fuzzing::http1`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::http1(data));
