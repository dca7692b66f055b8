//! Any bytes: the `ofp_match` decoder never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use openflow::oxm::Match;
use openflow::wire::Reader;

fuzz_target!(|data: &[u8]| {
    let _ = Match::decode(&mut Reader::new(data));
    let _ = Match::decode_oxms(Reader::new(data));
});
