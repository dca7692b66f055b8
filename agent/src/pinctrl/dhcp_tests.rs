//! The DHCP handlers on byte vectors: requests as a VM sends them, the userdata as the
//! lflow compiler encodes northd's `put_dhcp_opts` / `put_dhcpv6_opts`, and the replies
//! ovn-controller 23.03.1 gave for them in the integration lab.

use openflow::oxm::{FieldId, Match};
use openflow::wire::{PacketIn2, PacketInProp};
use proptest::prelude::*;

use super::handlers::{handle, opcode, Context, Effect, Skip};

const CX: Context = Context {
    output_entry_table: 37,
    egress_table: 42,
};

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(char::is_ascii_hexdigit).collect();
    hex::decode(s).expect("hex")
}

/// `reg0[3] = put_dhcp_opts(...)`: header, xxreg0 bit 99, then `rest`.
fn userdata(op: u32, rest: &[u8]) -> Vec<u8> {
    let mut ud = op.to_be_bytes().to_vec();
    ud.extend_from_slice(&[0; 4]);
    ud.extend_from_slice(&[0x00, 0x01, 0xde, 0x10, 0, 0, 0, 99]);
    ud.extend_from_slice(rest);
    ud
}

fn paused(packet: Vec<u8>, userdata: Vec<u8>) -> PacketIn2 {
    let mut m = Match::new();
    m.push(FieldId::reg(14), 1u32.to_be_bytes().to_vec(), None);
    m.push(FieldId::METADATA, 1u64.to_be_bytes().to_vec(), None);
    PacketIn2 {
        props: vec![
            PacketInProp::Packet(packet),
            PacketInProp::TableId(27),
            PacketInProp::Reason(1),
            PacketInProp::Metadata(m),
            PacketInProp::Userdata(userdata),
            PacketInProp::Continuation(vec![0; 8]),
        ],
    }
}

/// A BOOTP request from 50:54:00:00:00:01 (xid 0x12345678) with `options` after the
/// cookie, broadcast from `src`, as the test's dhcproto builds it.
fn dhcp4(src: [u8; 4], ciaddr: [u8; 4], options: &str) -> Vec<u8> {
    let mut dhcp = vec![1, 1, 6, 0, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0];
    dhcp.extend_from_slice(&ciaddr);
    dhcp.extend_from_slice(&[0; 12]);
    dhcp.extend_from_slice(&[0x50, 0x54, 0, 0, 0, 1]);
    dhcp.resize(236, 0);
    dhcp.extend_from_slice(&[99, 130, 83, 99]);
    dhcp.extend_from_slice(&unhex(options));
    let udp_len = (8 + dhcp.len()) as u16;
    let mut out = unhex("ffffffffffff 505400000001 0800");
    out.extend_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    out.extend_from_slice(&src);
    out.extend_from_slice(&[255; 4]);
    let total = 20 + udp_len;
    out[16..18].copy_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&[0, 68, 0, 67]);
    out.extend_from_slice(&udp_len.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&dhcp);
    out
}

fn resumed(effects: &[Effect]) -> (&[u8], &Match) {
    let r = effects
        .iter()
        .find_map(|e| match e {
            Effect::Resume(r) => Some(r),
            _ => None,
        })
        .expect("a resume");
    (r.packet().expect("packet"), r.metadata().expect("metadata"))
}

#[test]
fn discover_gets_an_offer() {
    let pi = paused(
        dhcp4([0; 4], [0; 4], "350101 37060103060f7977 ff"),
        userdata(
            opcode::PUT_DHCP_OPTS,
            &unhex("0a000001 03040a0000fe 0104ffffff00"),
        ),
    );
    let effects = handle(&pi, &CX).expect("handled");
    let (packet, md) = resumed(&effects);
    assert_eq!(
        md.get(FieldId::reg(0)).map(|f| f.value.clone()),
        Some(vec![0, 0, 0, 8])
    );
    assert_eq!(packet.len(), 14 + 20 + 8 + 236 + 16 + 12);
}
