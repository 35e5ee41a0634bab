//! Fuzz target: x-mcp-header extraction and mirrored values (body in `switchboard_fuzzing::x_mcp_header`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchboard_fuzzing::x_mcp_header(data));
