//! Fuzz target: a Skills entry and a `SKILL.md` checked against it (body in `switchboard_fuzzing::skill`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::skill(data));
