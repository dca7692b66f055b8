//! Any bytes as the packet of an `igmp;` packet-in: parsing the IGMP / MLD message and
//! learning from it return an error or a bounded table, never panic.
#![no_main]

use agent::pinctrl::igmp::{parse, Snooping};
use agent::pinctrl::packet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(h) = packet::parse(data) else {
        return;
    };
    let Ok(msg) = parse(data, &h) else {
        return;
    };
    let mut s = Snooping::new();
    let mut cfg = agent::pinctrl::igmp::Config::default();
    cfg.enabled = true;
    cfg.table_size = 10;
    s.configure(&std::collections::BTreeMap::from([(1, cfg)]), 0);
    s.on_message(1, 2, &msg, 0);
    s.run(1_000_000);
    let _ = s.changed();
});
