//! Any bytes: `OfpMessage::decode` returns an error or a message; a decoded message
//! re-encodes to bytes that decode again.
#![no_main]
use libfuzzer_sys::fuzz_target;
use openflow::wire::OfpMessage;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = OfpMessage::decode(data) {
        let again = OfpMessage::decode(&m.to_bytes().unwrap());
        assert!(again.is_ok());
    }
});
