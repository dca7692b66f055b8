//! Any bytes as a packet-in of any pinctrl opcode: the first byte picks the opcode, the next
//! two how many of the remaining bytes are the action's userdata (after its 8-byte header),
//! and the rest is the packet. Every handler returns its effects or a reason to skip, never
//! panics.
#![no_main]

use agent::pinctrl::handlers::{handle_with, Context};
use agent::pinctrl::View;
use libfuzzer_sys::fuzz_target;
use openflow::oxm::Match;
use openflow::wire::{PacketIn2, PacketInProp};

fuzz_target!(|data: &[u8]| {
    let [op, len_hi, len_lo, rest @ ..] = data else {
        return;
    };
    let split = usize::from(u16::from_be_bytes([*len_hi, *len_lo])).min(rest.len());
    let (payload, packet) = rest.split_at(split);
    let mut userdata = u32::from(*op % 32).to_be_bytes().to_vec();
    userdata.extend_from_slice(&[0; 4]);
    userdata.extend_from_slice(payload);
    let mut props = vec![
        PacketInProp::Packet(packet.to_vec()),
        PacketInProp::TableId(27),
        PacketInProp::Reason(1),
        PacketInProp::Metadata(Match::new()),
        PacketInProp::Userdata(userdata),
    ];
    // Opcode bytes with the top bit set come paused (with a continuation), as `controller(pause)` sends them.
    if op & 0x80 != 0 {
        props.push(PacketInProp::Continuation(vec![0; 8]));
    }
    let cx = Context {
        output_entry_table: 37,
        egress_table: 40,
    };
    let _ = handle_with(&PacketIn2 { props }, &cx, &View::default());
});
