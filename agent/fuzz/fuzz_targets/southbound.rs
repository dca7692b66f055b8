//! Any text as a Southbound JSON file (`ovn-agent compile --sb FILE`): loading returns an
//! error or rows, never panics.
#![no_main]

use agent::southbound::Southbound;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Southbound::default().load_json(text);
});
