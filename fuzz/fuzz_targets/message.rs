//! Message parsing: any bytes. It must not panic; an error carries a JSON-RPC
//! code; a parsed message serialises to JSON that parses back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_wire::Message;

fuzz_target!(|data: &[u8]| {
    match Message::from_slice(data) {
        Ok(message) => {
            let line = message.to_line();
            assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
            let again = Message::from_slice(&line[..line.len() - 1]).expect("our own output parses");
            // Serialising again is stable (a fixed point after one round).
            assert_eq!(again.to_vec(), message.to_vec());
        }
        Err(e) => assert!(matches!(e.code().code(), -32700 | -32600)),
    }
});
