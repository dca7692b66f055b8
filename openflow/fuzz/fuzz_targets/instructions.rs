//! Any bytes: the instruction decoder never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use openflow::wire::Instruction;

fuzz_target!(|data: &[u8]| {
    let _ = Instruction::decode_list(data);
});
