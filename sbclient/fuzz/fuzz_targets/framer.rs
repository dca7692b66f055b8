//! Any byte stream, split anywhere: the framer and the envelope decoder return errors, never
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sbclient::jsonrpc::{Framer, Incoming};

fuzz_target!(|data: &[u8]| {
    let Some((&split, bytes)) = data.split_first() else {
        return;
    };
    let mut framer = Framer::with_limit(1 << 16);
    let cut = (split as usize).min(bytes.len());
    for chunk in [&bytes[..cut], &bytes[cut..]] {
        framer.push(chunk);
        while let Ok(Some(frame)) = framer.next_frame() {
            let _ = Incoming::decode(&frame);
        }
    }
});
