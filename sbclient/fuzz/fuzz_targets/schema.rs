//! Any text as a database schema: parsed or refused, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sbclient::schema::DatabaseSchema;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = DatabaseSchema::parse(text);
    }
});
