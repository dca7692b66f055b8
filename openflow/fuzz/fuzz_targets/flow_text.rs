//! Any text: the ovs-ofctl flow parser never panics, and what it accepts prints and
//! encodes without panicking.
#![no_main]
use libfuzzer_sys::fuzz_target;
use openflow::text::Flow;
use openflow::wire::{Message, OfpMessage};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(f) = s.parse::<Flow>() {
            let _ = f.to_string();
            // An over-long flow is an encode error, never a panic.
            let _ = OfpMessage::new(1, Message::FlowMod(f.add())).to_bytes();
        }
    }
});
