//! Handlers on byte vectors: the packets a VM of the integration topology sends (vm1
//! 50:54:00:00:00:01 / 10.0.0.1 behind router port 00:00:00:00:ff:01 / 10.0.0.254), as the
//! router pipeline hands them to the controller.

use std::net::{IpAddr, Ipv4Addr};

use bytes::BytesMut;
use openflow::action::Action;
use openflow::oxm::{FieldId, Match, MatchField};
use openflow::wire::{PacketIn2, PacketInProp};

use super::buffer::BufferKey;
use super::handlers::{handle, opcode, Context, Effect, Skip};

const CX: Context = Context {
    output_entry_table: 37,
    egress_table: 42,
};

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(char::is_ascii_hexdigit).collect();
    hex::decode(s).expect("hex")
}

/// Userdata: the action header of `op`, then `nested` in OpenFlow 1.5 wire format.
fn userdata(op: u32, nested: &[Action], extra: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::new();
    out.extend_from_slice(&op.to_be_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(extra);
    Action::encode_list(nested, &mut out).expect("encodable");
    out.to_vec()
}

fn md(regs: &[(u8, u32)], datapath: u64) -> Match {
    let mut m = Match::new();
    for (r, v) in regs {
        m.push(FieldId::reg(*r), v.to_be_bytes().to_vec(), None);
    }
    m.push(FieldId::METADATA, datapath.to_be_bytes().to_vec(), None);
    m
}

fn packet_in(packet: Vec<u8>, userdata: Vec<u8>, metadata: Match, paused: bool) -> PacketIn2 {
    let mut props = vec![
        PacketInProp::Packet(packet),
        PacketInProp::TableId(27),
        PacketInProp::Reason(1),
        PacketInProp::Metadata(metadata),
        PacketInProp::Userdata(userdata),
    ];
    if paused {
        props.push(PacketInProp::Continuation(vec![0; 8]));
    }
    PacketIn2 { props }
}

fn nested_output() -> Vec<Action> {
    vec![
        Action::SetField(MatchField::new(FieldId::ETH_DST, vec![0xff; 6], None)),
        Action::Resubmit {
            in_port: 0xfff8,
            table: 37,
            ct: false,
        },
    ]
}

/// ICMP echo 10.0.0.1 -> 10.0.1.9, TTL 63, after the router set its own MAC as source.
fn routed_ping() -> Vec<u8> {
    unhex(
        "000000000000 00000000ff02 0800
         4500 001c 0000 4000 3f01 25c1 0a000001 0a000109
         0800 f7fd 0001 0001",
    )
}

fn checksum_ok(data: &[u8], pseudo: u32) -> bool {
    let mut sum = pseudo;
    for c in data.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

fn packet_out(e: &Effect) -> (&[u8], String) {
    let Effect::PacketOut(po) = e else {
        panic!("not a packet-out: {e:?}")
    };
    let text: Vec<String> = po.actions.iter().map(ToString::to_string).collect();
    (&po.data, text.join(","))
}

#[test]
fn arp_buffers_the_packet_and_sends_a_request_with_the_nested_actions() {
    let pi = packet_in(
        routed_ping(),
        userdata(opcode::ARP, &nested_output(), &[]),
        md(&[(0, 0x0a00_0109), (14, 1), (15, 2)], 3),
        false,
    );
    let effects = handle(&pi, &CX).expect("handled");
    assert_eq!(effects.len(), 2);
    let Effect::Buffer(key, held) = &effects[0] else {
        panic!("{effects:?}")
    };
    assert_eq!(
        *key,
        BufferKey {
            datapath: 3,
            outport: 2,
            next_hop: IpAddr::V4(Ipv4Addr::new(10, 0, 1, 9)),
        }
    );
    assert_eq!(held.packet, routed_ping());
    let held_text: Vec<String> = held.actions.iter().map(ToString::to_string).collect();
    assert_eq!(
        held_text.join(","),
        "set_field:0xa000109->reg0,set_field:0x1->reg14,set_field:0x2->reg15,set_field:0x3->metadata,set_field:0->pkt_mark,resubmit(CONTROLLER,37)"
    );
    let (data, actions) = packet_out(&effects[1]);
    assert_eq!(
        hex::encode(data),
        hex::encode(unhex(
            "000000000000 00000000ff02 0806 0001 0800 0604 0001
             00000000ff02 0a000001 000000000000 0a000109"
        ))
    );
    assert_eq!(
        actions,
        "set_field:0xa000109->reg0,set_field:0x1->reg14,set_field:0x2->reg15,set_field:0x3->metadata,set_field:ff:ff:ff:ff:ff:ff->eth_dst,resubmit(,37)"
    );
}

#[test]
fn icmp4_error_quotes_the_packet_with_ttl_255_and_valid_checksums() {
    let pi = packet_in(
        routed_ping(),
        userdata(opcode::ICMP4_ERROR, &nested_output(), &[]),
        md(&[(14, 1)], 3),
        false,
    );
    let effects = handle(&pi, &CX).expect("handled");
    let (data, _) = packet_out(&effects[0]);
    let ip = &data[14..34];
    assert_eq!(
        &data[..14],
        &routed_ping()[..14],
        "addresses are the nested actions' job"
    );
    assert_eq!(
        hex::encode(&ip[..10]),
        "4500003800004000ff01",
        "DF, TTL 255, ICMP"
    );
    assert!(checksum_ok(ip, 0));
    assert_eq!(&data[34..36], &[3, 1], "destination unreachable, host");
    assert!(checksum_ok(&data[34..], 0));
    assert_eq!(
        &data[42..],
        &routed_ping()[14..],
        "the original IP packet is quoted"
    );
}

#[test]
fn icmp4_names_udp_ports_unreachable_and_reject_answers_the_sender() {
    let udp = unhex(
        "00000000ff01 505400000001 0800
         4500 001d 0000 4000 4011 0000 0a000001 0a0000fe
         3039 0035 0009 0000 41",
    );
    let effects = handle(
        &packet_in(
            udp.clone(),
            userdata(opcode::ICMP, &[], &[]),
            md(&[], 1),
            false,
        ),
        &CX,
    )
    .expect("handled");
    assert_eq!(&packet_out(&effects[0]).0[34..36], &[3, 3]);
    let effects = handle(
        &packet_in(
            udp.clone(),
            userdata(opcode::REJECT, &[], &[]),
            md(&[], 1),
            false,
        ),
        &CX,
    )
    .expect("handled");
    let (data, _) = packet_out(&effects[0]);
    assert_eq!(&data[..6], &udp[6..12], "back to the sender's MAC");
    assert_eq!(
        &data[26..34],
        &unhex("0a0000fe 0a000001")[..],
        "from the address it was sent to"
    );
    assert_eq!(&data[34..36], &[3, 3]);
}

#[test]
fn reject_answers_an_icmp_packet_but_never_a_destination_unreachable() {
    let reject = |frame: Vec<u8>| {
        handle(
            &packet_in(frame, userdata(opcode::REJECT, &[], &[]), md(&[], 1), false),
            &CX,
        )
        .expect("handled")
    };
    // An IPv4 header alone, protocol ICMP (OVN's "ACL reject rule test" sends it).
    let bare = unhex(
        "00000000ff01 505400000001 0800
         4500 0014 0000 4000 ff01 0000 0a000001 0a0000fe",
    );
    let effects = reject(bare.clone());
    let (data, _) = packet_out(&effects[0]);
    assert_eq!(&data[34..36], &[3, 1], "destination unreachable, host");
    assert_eq!(&data[42..], &bare[14..], "the IP header is quoted");
    let mut unreachable = bare;
    unreachable[17] = 0x1c;
    unreachable.extend(unhex("0301 0000 00000000"));
    assert!(
        reject(unreachable).is_empty(),
        "no answer to an unreachable"
    );
}

fn tcp(flags: u8) -> Vec<u8> {
    let mut p = unhex(
        "00000000ff01 505400000001 0800
         4500 0028 0000 4000 4006 0000 0a000001 0a0000fe
         3039 0050 00000064 00000000 5000 ffff 0000 0000",
    );
    p[47] = flags;
    p
}

#[test]
fn reject_resets_a_tcp_connection_but_never_answers_a_reset() {
    let effects = handle(
        &packet_in(
            tcp(0x02),
            userdata(opcode::REJECT, &[], &[]),
            md(&[], 1),
            false,
        ),
        &CX,
    )
    .expect("handled");
    let (data, _) = packet_out(&effects[0]);
    assert_eq!(&data[..12], &unhex("505400000001 00000000ff01")[..]);
    assert_eq!(data[22], 63, "TTL");
    assert_eq!(&data[26..34], &unhex("0a0000fe 0a000001")[..]);
    assert_eq!(
        &data[34..46],
        &unhex("0050 3039 00000000 00000065")[..],
        "ports swapped, ack = seq + 1"
    );
    assert_eq!(data[47], 0x14, "RST+ACK");
    let pseudo = 0x0a00 + 0x00fe + 0x0a00 + 0x0001 + 6 + 20;
    assert!(checksum_ok(&data[34..], pseudo));
    let none = handle(
        &packet_in(
            tcp(0x04),
            userdata(opcode::REJECT, &[], &[]),
            md(&[], 1),
            false,
        ),
        &CX,
    )
    .expect("handled");
    assert!(none.is_empty());
    // tcp_reset {} leaves the addresses to the nested actions.
    let effects = handle(
        &packet_in(
            tcp(0x02),
            userdata(opcode::TCP_RESET, &[], &[]),
            md(&[], 1),
            false,
        ),
        &CX,
    )
    .expect("handled");
    assert_eq!(&packet_out(&effects[0]).0[..12], &tcp(0)[..12]);
}

#[test]
fn put_arp_learns_the_sender_of_a_reply() {
    let reply = unhex(
        "00000000ff02 505400000109 0806 0001 0800 0604 0002
         505400000109 0a000109 00000000ff02 0a0001fe",
    );
    let pi = packet_in(
        reply,
        userdata(opcode::PUT_ARP, &[], &[]),
        md(&[(0, 0x0a00_0109), (14, 2)], 3),
        false,
    );
    let effects = handle(&pi, &CX).expect("handled");
    let [Effect::PutMacBinding { write, multicast }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    assert!(!multicast, "a unicast reply is written at once");
    assert_eq!((write.datapath, write.port), (3, 2));
    assert_eq!(write.ip, IpAddr::V4(Ipv4Addr::new(10, 0, 1, 9)));
    assert_eq!(write.mac, [0x50, 0x54, 0, 0, 1, 9]);
}

#[test]
fn nd_ns_solicits_the_destination_from_the_link_local_address() {
    // ICMPv6 echo fd01::1 -> fd02::9 as the router forwards it.
    let mut ping = unhex("000000000000 00000000ff02 86dd 6000 0000 0008 3a3f");
    ping.extend(unhex(
        "fd010000000000000000000000000001 fd020000000000000000000000000009",
    ));
    ping.extend(unhex("8000 0000 0001 0001"));
    let xxreg0 = [(0, 0xfd02_0000), (1, 0), (2, 0), (3, 9), (15, 2)];
    let pi = packet_in(
        ping,
        userdata(opcode::ND_NS, &[], &[]),
        md(&xxreg0, 3),
        false,
    );
    let effects = handle(&pi, &CX).expect("handled");
    let Effect::Buffer(key, _) = &effects[0] else {
        panic!("{effects:?}")
    };
    assert_eq!(key.next_hop, "fd02::9".parse::<IpAddr>().unwrap());
    let (ns, _) = packet_out(&effects[1]);
    assert_eq!(&ns[..14], &unhex("3333ff000009 00000000ff02 86dd")[..]);
    assert_eq!(&ns[14..22], &unhex("6000 0000 0020 3aff")[..]);
    assert_eq!(
        &ns[22..38],
        &unhex("fe800000000000000200 00fffe 00ff02")[..],
        "EUI-64 of the router MAC"
    );
    assert_eq!(
        &ns[38..54],
        &unhex("ff020000000000000000 0001 ff000009")[..]
    );
    assert_eq!(&ns[54..56], &[135, 0]);
    assert_eq!(&ns[62..78], &unhex("fd020000000000000000000000000009")[..]);
    assert_eq!(&ns[78..], &unhex("0101 00000000ff02")[..]);
    let mut pseudo: u32 = ns[22..54]
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    pseudo += 58 + 32;
    assert!(checksum_ok(&ns[54..], pseudo));
}

#[test]
fn frag_mtu_patches_the_icmp_error_and_resumes() {
    // An ICMP "fragmentation needed" being built, paused for the MTU.
    let mut err = unhex(
        "00000000ff01 505400000001 0800
         4500 0024 0000 4000 ff01 0000 0a0000fe 0a000001
         0304 fcfb 0000 0000 4500 0578 0000 4000",
    );
    let c = !checksum_sum(&err[14..34]);
    err[24..26].copy_from_slice(&c.to_be_bytes());
    let pi = packet_in(
        err,
        userdata(opcode::PUT_ICMP4_FRAG_MTU, &[], &[0x05, 0x78]),
        md(&[], 1),
        true,
    );
    let effects = handle(&pi, &CX).expect("handled");
    let [Effect::Resume(r)] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    let out = r.packet().expect("packet");
    assert_eq!(&out[40..42], &[0x05, 0x78]);
    assert!(checksum_ok(&out[34..], 0));
    assert!(checksum_ok(&out[14..34], 0));
    assert!(r
        .props
        .iter()
        .any(|p| matches!(p, PacketInProp::Continuation(_))));
}

fn checksum_sum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[test]
fn packet_ins_that_are_not_ours_are_skipped() {
    let mut pi = packet_in(
        routed_ping(),
        userdata(opcode::ARP, &[], &[]),
        md(&[], 1),
        false,
    );
    pi.props[2] = PacketInProp::Reason(0);
    assert_eq!(handle(&pi, &CX), Err(Skip::NotAction(0)));
    let pi = packet_in(routed_ping(), vec![0, 0, 0], md(&[], 1), false);
    assert_eq!(handle(&pi, &CX), Err(Skip::NoHeader));
    let pi = packet_in(routed_ping(), userdata(99, &[], &[]), md(&[], 1), false);
    assert_eq!(handle(&pi, &CX), Err(Skip::UnknownOpcode(99)));
    let pi = packet_in(
        vec![1, 2, 3],
        userdata(opcode::ARP, &[], &[]),
        md(&[], 1),
        false,
    );
    assert!(matches!(handle(&pi, &CX), Err(Skip::Packet(_))));
    let pi = packet_in(
        routed_ping(),
        userdata(opcode::ARP, &[], &[0xff, 0xff, 0, 4]),
        md(&[], 1),
        false,
    );
    assert!(matches!(handle(&pi, &CX), Err(Skip::Actions(_))));
}

proptest::proptest! {
    #[test]
    fn any_bytes_are_handled_or_skipped_without_panic(
        op in 0u32..30,
        packet in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
        extra in proptest::collection::vec(proptest::num::u8::ANY, 0..24),
    ) {
        let mut pkt = routed_ping();
        pkt.truncate(packet.len().min(pkt.len()));
        for (a, b) in pkt.iter_mut().zip(&packet) {
            if b % 3 == 0 { *a = *b; }
        }
        let _ = handle(&packet_in(pkt, userdata(op, &[], &extra), md(&[(0, 1)], 1), op % 2 == 0), &CX);
        let _ = handle(&packet_in(packet, userdata(op, &[], &extra), md(&[], 1), true), &CX);
    }
}

#[test]
fn crc32c_matches_the_rfc_3720_vectors() {
    assert_eq!(super::packet::crc32c(&[0; 32]), 0x8a91_36aa);
    assert_eq!(super::packet::crc32c(&[0xff; 32]), 0x62a8_ab43);
}

/// An SCTP INIT (vtag 0, initiate tag 0x11223344) from vm1 to 10.0.0.254.
fn sctp_init() -> Vec<u8> {
    unhex(
        "00000000ff01 505400000001 0800
         4500 0034 0000 4000 4084 0000 0a000001 0a0000fe
         1388 0050 00000000 00000000
         01 00 0014 11223344 0001 0000 0001 0001 00000001",
    )
}

#[test]
fn reject_aborts_an_sctp_association_with_the_initiate_tag() {
    let effects = handle(
        &packet_in(
            sctp_init(),
            userdata(opcode::REJECT, &[], &[]),
            md(&[], 1),
            false,
        ),
        &CX,
    )
    .expect("handled");
    let (data, _) = packet_out(&effects[0]);
    assert_eq!(&data[..12], &unhex("505400000001 00000000ff01")[..]);
    assert_eq!(&data[22..24], &[63, 132], "TTL 63, SCTP");
    assert_eq!(&data[26..34], &unhex("0a0000fe 0a000001")[..]);
    assert_eq!(
        &data[34..42],
        &unhex("0050 1388 11223344")[..],
        "ports swapped, the initiate tag"
    );
    assert_eq!(&data[46..], &[6, 0, 0, 4], "ABORT without the T bit");
    let mut zeroed = data[34..].to_vec();
    zeroed[8..12].fill(0);
    assert_eq!(&data[42..46], &super::packet::crc32c(&zeroed).to_le_bytes());
    // An ABORT is never answered; `sctp_abort {}` reflects the tag of a non-INIT chunk.
    let mut abort = sctp_init();
    abort[46] = 6;
    assert!(matches!(
        handle(
            &packet_in(
                abort,
                userdata(opcode::SCTP_ABORT, &[], &[]),
                md(&[], 1),
                false
            ),
            &CX
        ),
        Err(Skip::WrongPacket(_))
    ));
    let mut data_chunk = sctp_init();
    data_chunk[38..42].copy_from_slice(&[0, 0, 0, 9]);
    data_chunk[46] = 0;
    let effects = handle(
        &packet_in(
            data_chunk,
            userdata(opcode::SCTP_ABORT, &[], &[]),
            md(&[], 1),
            false,
        ),
        &CX,
    )
    .expect("handled");
    let (data, _) = packet_out(&effects[0]);
    assert_eq!(&data[38..42], &[0, 0, 0, 9]);
    assert_eq!(data[47], 1, "T bit: the tag is reflected");
    assert_eq!(
        &data[..12],
        &sctp_init()[..12],
        "sctp_abort {{}} leaves the addresses to the nested actions"
    );
}

#[test]
fn icmp6_frag_mtu_writes_the_mtu_and_the_checksum() {
    // ICMPv6 packet too big (type 2) fd00::fe -> fd00::1 quoting 8 bytes, MTU still 0.
    let mut err = unhex("505400000001 00000000ff01 86dd 6000 0000 0010 3aff");
    err.extend(unhex(
        "fd0000000000000000000000000000fe fd000000000000000000000000000001",
    ));
    err.extend(unhex("0200 0000 00000000 6000000000003a40"));
    let pi = packet_in(
        err,
        userdata(opcode::PUT_ICMP6_FRAG_MTU, &[], &[0, 0, 0x05, 0x00]),
        md(&[], 1),
        true,
    );
    let effects = handle(&pi, &CX).expect("handled");
    let [Effect::Resume(r)] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    let out = r.packet().expect("packet");
    assert_eq!(&out[58..62], &[0, 0, 5, 0]);
    let mut pseudo: u32 = out[22..54]
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    pseudo += 58 + 16;
    assert!(checksum_ok(&out[54..], pseudo));
}

#[test]
fn log_writes_the_line_ovn_controller_writes() {
    // The TCP SYN of OVN's "ACL logging" test, logged by a from-lport drop ACL (with the
    // nw_frag that OVS 3.1 adds).
    let syn = unhex(
        "f00000000002 f00000000001 0800
         4500 0028 0000 4000 4006 0000 c0a80102 c0a80103
         1109 0051 00000000 00000000 5002 2000 0000 0000",
    );
    let mut payload = vec![1, 1];
    payload.extend_from_slice(b"drop-flow");
    let pi = packet_in(
        syn.clone(),
        userdata(opcode::LOG, &[], &payload),
        md(&[], 1),
        false,
    );
    let effects = handle(&pi, &CX).expect("handled");
    assert_eq!(
        effects,
        [Effect::Log(
            "name=\"drop-flow\", verdict=drop, severity=alert, direction=from-lport: tcp,vlan_tci=0x0000,\
             dl_src=f0:00:00:00:00:01,dl_dst=f0:00:00:00:00:02,nw_src=192.168.1.2,nw_dst=192.168.1.3,\
             nw_tos=0,nw_ecn=0,nw_ttl=64,nw_frag=no,tp_src=4361,tp_dst=81,tcp_flags=syn"
                .to_owned()
        )]
    );
    // No name, an egress table: "<unnamed>", to-lport.
    let mut pi = packet_in(syn, userdata(opcode::LOG, &[], &[0, 6]), md(&[], 1), false);
    pi.props[1] = PacketInProp::TableId(44);
    let effects = handle(&pi, &CX).expect("handled");
    let [Effect::Log(line)] = effects.as_slice() else {
        panic!("not a log line: {effects:?}")
    };
    assert!(
        line.starts_with(
            "name=\"<unnamed>\", verdict=allow, severity=info, direction=to-lport: tcp,"
        ),
        "{line}"
    );
}

#[test]
fn log_writes_ipv6_and_arp_lines_as_ovn_controller() {
    // The lines ovn-controller 23.03.1 (OVS 3.1) wrote in the integration test's run
    // (`acl log lines match`): a routed UDP over IPv6 and an ARP reply.
    let udp6 = unhex(
        "505400000105 00000000ff02 86dd
         6000 0000 0018 11 3f
         fd000000000000000000000000000001 fd010000000000000000000000000005
         9c46 1e63 0018 0000 6c6f6767656420 6f76657220 49507636",
    );
    let arp = unhex(
        "505400000102 505400000105 0806
         0001 0800 06 04 0002 505400000105 0a000105 505400000102 0a000102",
    );
    let mut payload = vec![0, 4];
    payload.extend_from_slice(b"np1");
    let log = |frame: Vec<u8>| {
        let mut pi = packet_in(
            frame,
            userdata(opcode::LOG, &[], &payload),
            md(&[], 1),
            false,
        );
        pi.props[1] = PacketInProp::TableId(44);
        handle(&pi, &CX).expect("handled")
    };
    assert_eq!(
        log(udp6.clone()),
        [Effect::Log(
            "name=\"np1\", verdict=allow, severity=warning, direction=to-lport: udp6,\
             vlan_tci=0x0000,dl_src=00:00:00:00:ff:02,dl_dst=50:54:00:00:01:05,\
             ipv6_src=fd00::1,ipv6_dst=fd01::5,ipv6_label=0x00000,nw_tos=0,nw_ecn=0,\
             nw_ttl=63,nw_frag=no,tp_src=40006,tp_dst=7779"
                .to_owned()
        )]
    );
    assert_eq!(
        log(arp),
        [Effect::Log(
            "name=\"np1\", verdict=allow, severity=warning, direction=to-lport: arp,\
             vlan_tci=0x0000,dl_src=50:54:00:00:01:05,dl_dst=50:54:00:00:01:02,\
             arp_spa=10.0.1.5,arp_tpa=10.0.1.2,arp_op=2,arp_sha=50:54:00:00:01:05,\
             arp_tha=50:54:00:00:01:02"
                .to_owned()
        )]
    );
    // A first fragment (offset 0, more fragments) and a later one: "first" and "later".
    let mut first = udp6.clone();
    first[20] = 44;
    first[18..20].copy_from_slice(&0x0020u16.to_be_bytes());
    first.splice(54..54, [17, 0, 0x00, 0x01, 0, 0, 0, 1]);
    let mut later = first.clone();
    later[56..58].copy_from_slice(&0x0010u16.to_be_bytes());
    for (frame, frag) in [(first, "nw_frag=first"), (later, "nw_frag=later")] {
        let effects = log(frame);
        let [Effect::Log(line)] = effects.as_slice() else {
            panic!("not a log line: {effects:?}")
        };
        assert!(line.contains(frag), "{line}");
    }
}

/// As OVS's flow extraction, an IPv6 header is read whatever its version nibble says (OVN's
/// DHCPv6 tests send version 0, and the switch matched them as ipv6).
#[test]
fn an_ipv6_header_is_read_whatever_its_version() {
    let frame = unhex(concat!(
        "ffffffffffff",
        "f00000000001",
        "86dd",
        "0000000000",
        "2a",
        "11",
        "01",
        "fe80000000000000f20000fffe000001",
        "ff020000000000000000000000010002",
        "02220223002affff",
    ));
    let h = super::packet::parse(&frame).expect("parses");
    match h.l3 {
        super::packet::L3::Ipv6 {
            next_header,
            payload_len,
            dst,
            ..
        } => {
            assert_eq!(next_header, 17);
            assert_eq!(payload_len, 0x2a);
            assert_eq!(dst, "ff02::1:2".parse::<std::net::Ipv6Addr>().unwrap());
        }
        other => panic!("not read as IPv6: {other:?}"),
    }
}

#[test]
fn a_panicking_handler_costs_its_packet_in_only() {
    use super::handlers::guarded;
    let panicked = guarded(|| panic!("index out of range for packet {}", 7));
    assert_eq!(
        panicked,
        Err(Skip::Panicked("index out of range for packet 7".to_owned()))
    );
    assert_eq!(
        guarded(|| -> Result<Vec<Effect>, Skip> { std::panic::panic_any(5_u8) }),
        Err(Skip::Panicked("(no message)".to_owned()))
    );
    // The next packet-in is handled as if nothing happened.
    let pi = packet_in(
        routed_ping(),
        userdata(opcode::ICMP4_ERROR, &nested_output(), &[]),
        md(&[(14, 1), (15, 2)], 1),
        false,
    );
    let effects = guarded(|| handle(&pi, &CX)).expect("handled");
    assert_eq!(effects.len(), 1);
}

#[test]
fn activation_rarp_activates_the_inport() {
    let rarp = unhex("ffffffffffff 000000000010 8035 0001 0800 0604 0003 000000000010 0a00000a ffffffffffff 0a00000a");
    let pi = packet_in(
        rarp,
        userdata(opcode::ACTIVATION_STRATEGY_RARP, &[], &[]),
        md(&[(14, 4)], 3),
        false,
    );
    assert_eq!(
        handle(&pi, &CX),
        Ok(vec![Effect::Activate(super::activation::Activation {
            datapath: 3,
            port: 4
        })])
    );
}
