//! Any text as an update2 notification or a monitor snapshot, applied to a replica of every
//! Southbound table: an error or a counted skip, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sbclient::{ovn_sb, Replica};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(raw) = sbclient::replica::raw(text) else {
        return;
    };
    let mut replica = Replica::new(ovn_sb::DATABASE);
    ovn_sb::register_all(&mut replica);
    let _ = replica.apply_snapshot(raw);
    let _ = replica.apply_update(raw);
    let _ = replica.snapshot();
});
