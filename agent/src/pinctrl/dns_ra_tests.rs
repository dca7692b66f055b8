//! `dns_lookup`, `put_nd_ra_opts` and the periodic RA packet on byte vectors: vm1
//! (50:54:00:00:00:01 / 10.0.0.1 / fd00::1) on sw0 (datapath 1), behind lr0-sw0
//! (00:00:00:00:ff:01 / 10.0.0.254 / fd00::fe).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

use openflow::oxm::{FieldId, Match};
use openflow::wire::{PacketIn2, PacketInProp};
use proptest::prelude::*;
use sbclient::OvsMap;

use super::dns::{self, checksum, pseudo_header6, DnsForms, DnsRecords, DnsRow};
use super::handlers::{handle_with, opcode, Context, Effect};
use super::metadata::Registers;
use super::ra::{self, PeriodicRa, RaConfig};
use super::View;

const CX: Context = Context {
    output_entry_table: 37,
    egress_table: 42,
};
const VM1_MAC: [u8; 6] = [0x50, 0x54, 0, 0, 0, 1];
const LR0_MAC: [u8; 6] = [0, 0, 0, 0, 0xff, 1];

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(char::is_ascii_hexdigit).collect();
    hex::decode(s).expect("hex")
}

/// The userdata of `reg0[4] = op(...)`: header, NXM_NX_XXREG0, offset 100, then `rest`.
fn result_userdata(op: u32, rest: &[u8]) -> Vec<u8> {
    let mut u = op.to_be_bytes().to_vec();
    u.extend_from_slice(&[0; 4]);
    u.extend_from_slice(&[0x00, 0x01, 0xde, 0x10, 0, 0, 0, 100]);
    u.extend_from_slice(rest);
    u
}

fn paused(packet: Vec<u8>, userdata: Vec<u8>, datapath: u64) -> PacketIn2 {
    let mut m = Match::new();
    m.push(FieldId::reg(14), 1u32.to_be_bytes().to_vec(), None);
    m.push(FieldId::METADATA, datapath.to_be_bytes().to_vec(), None);
    PacketIn2 {
        props: vec![
            PacketInProp::Packet(packet),
            PacketInProp::TableId(30),
            PacketInProp::Reason(1),
            PacketInProp::Metadata(m),
            PacketInProp::Userdata(userdata),
            PacketInProp::Continuation(vec![0xab; 16]),
        ],
    }
}

/// The resumed packet and reg0 of the only resume among `effects`, and whether an effect
/// says the input was bad.
fn resumed(effects: &[Effect]) -> (Vec<u8>, u32, bool) {
    let resumes: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Resume(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(resumes.len(), 1, "{effects:?}");
    let r = resumes[0];
    assert!(r
        .props
        .iter()
        .any(|p| matches!(p, PacketInProp::Continuation(c) if c == &vec![0xab; 16])));
    let regs = Registers::from_match(r.metadata().expect("metadata"));
    let rejected = effects.iter().any(|e| matches!(e, Effect::Rejected(_)));
    (r.packet().expect("packet").to_vec(), regs.reg(0), rejected)
}

fn records() -> DnsRecords {
    let mut records = BTreeMap::new();
    records.insert("vm1.ovn.org".to_owned(), "10.0.0.1 fd00::1".to_owned());
    records.insert("1.0.0.10.in-addr.arpa".to_owned(), "vm1.ovn.org".to_owned());
    DnsRecords {
        rows: vec![DnsRow {
            dns_id: "d1".to_owned(),
            has_dns_id: true,
            datapaths: vec![1],
            records,
        }],
        forms: DnsForms::default(),
    }
}

/// `query4` with an EDNS OPT record after the question (ARCOUNT 1), lengths fixed.
fn query4_with_opt(name: &str, qtype: u16) -> Vec<u8> {
    let mut q = query4(name, qtype, 1);
    q.extend_from_slice(&[0, 0x00, 0x29, 0x10, 0x00, 0, 0, 0, 0, 0, 0]);
    let total = (q.len() - 14) as u16;
    q[16..18].copy_from_slice(&total.to_be_bytes());
    q[24..26].fill(0);
    let c = checksum(&[&q[14..34]]);
    q[24..26].copy_from_slice(&c.to_be_bytes());
    q[38..40].copy_from_slice(&(total - 20).to_be_bytes());
    q
}

#[test]
fn release_25_03_answers_edns_queries_and_rows_without_dns_id() {
    let q = query4_with_opt("vm1.ovn.org", 1);
    assert_eq!(
        dns::reply(&q, 1, &records()),
        Ok(None),
        "23.03: not answered"
    );
    let mut r = records();
    r.forms = crate::lflow::dialect::OVN_25_03.dns;
    let out = dns::reply(&q, 1, &r).expect("parsed").expect("answered");
    // Header and question kept, the OPT record dropped, one A answer (name 13 bytes,
    // type, class, TTL, length, address).
    let question_end = q.len() - 11;
    assert_eq!(&out[..14], &q[..14]);
    assert_eq!(out.len(), question_end + 13 + 10 + 4);
    assert_eq!(&out[question_end + 23..], &[10, 0, 0, 1]);
    assert_eq!(&out[50..52], &[0, 0], "no additional records");
    assert_eq!(
        usize::from(u16::from_be_bytes([out[38], out[39]])),
        out.len() - 34
    );
    assert_eq!(checksum(&[&out[14..34]]), 0, "IPv4 header checksum");
    // A row without dns_id: ignored by 23.03, used by 25.03.
    r.rows[0].has_dns_id = false;
    let plain = query4("vm1.ovn.org", 1, 0);
    assert!(dns::reply(&plain, 1, &r).expect("parsed").is_some());
    r.forms = DnsForms::default();
    assert_eq!(dns::reply(&plain, 1, &r), Ok(None));
}

fn view() -> View {
    View {
        dns: records(),
        ..View::default()
    }
}

/// A query (id 0xbeef, RD) for `name` of `qtype` in a UDP datagram 10.0.0.1:40000 ->
/// 10.0.0.254:53 (UDP checksum 0).
fn query4(name: &str, qtype: u16, arcount: u16) -> Vec<u8> {
    let mut dns = vec![0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0];
    dns.extend_from_slice(&arcount.to_be_bytes());
    for l in name.split('.') {
        dns.push(l.len() as u8);
        dns.extend_from_slice(l.as_bytes());
    }
    dns.extend_from_slice(&[0, 0, qtype as u8, 0, 1]);
    let mut out = LR0_MAC.to_vec();
    out.extend_from_slice(&VM1_MAC);
    out.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 8 + dns.len()) as u16;
    let mut ip = vec![
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 254,
    ];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    let c = checksum(&[&ip]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&ip);
    out.extend_from_slice(&40000u16.to_be_bytes());
    out.extend_from_slice(&53u16.to_be_bytes());
    out.extend_from_slice(&((8 + dns.len()) as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&dns);
    out
}

#[test]
fn an_a_query_is_answered_after_the_question_with_ttl_3600() {
    let q = query4("VM1.ovn.org", 1, 0);
    let pi = paused(q.clone(), result_userdata(opcode::DNS_LOOKUP, &[]), 1);
    let (packet, reg0, rejected) = resumed(&handle_with(&pi, &CX, &view()).expect("handled"));
    assert_eq!((reg0, rejected), (0x10, false), "R = 1");
    let name = unhex("03 564d31 03 6f766e 03 6f7267 00");
    let mut expected = q.clone();
    // IP total length +27, its checksum; UDP length +27, checksum 0; QR; one answer.
    let answer = [name.as_slice(), &unhex("0001 0001 00000e10 0004 0a000001")].concat();
    expected.extend_from_slice(&answer);
    let total = u16::from_be_bytes([q[16], q[17]]) + answer.len() as u16;
    expected[16..18].copy_from_slice(&total.to_be_bytes());
    expected[24..26].fill(0);
    let c = checksum(&[&expected[14..34]]);
    expected[24..26].copy_from_slice(&c.to_be_bytes());
    let udp_len = u16::from_be_bytes([q[38], q[39]]) + answer.len() as u16;
    expected[38..40].copy_from_slice(&udp_len.to_be_bytes());
    expected[44] |= 0x80;
    expected[48..50].copy_from_slice(&[0, 1]);
    assert_eq!(hex::encode(&packet), hex::encode(&expected));
    assert_eq!(checksum(&[&packet[14..34]]), 0, "IPv4 checksum valid");
}

#[test]
fn any_gives_every_address_and_ptr_a_name_in_labels() {
    let pi = paused(
        query4("vm1.ovn.org", 255, 0),
        result_userdata(opcode::DNS_LOOKUP, &[]),
        1,
    );
    let (packet, reg0, _) = resumed(&handle_with(&pi, &CX, &view()).expect("handled"));
    assert_eq!(reg0, 0x10);
    assert_eq!(&packet[48..50], &[0, 2], "one A and one AAAA");
    let tail = hex::encode(&packet[packet.len() - 16..]);
    assert_eq!(
        tail,
        hex::encode(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1).octets())
    );
    let pi = paused(
        query4("1.0.0.10.in-addr.arpa", 12, 0),
        result_userdata(opcode::DNS_LOOKUP, &[]),
        1,
    );
    let (packet, reg0, _) = resumed(&handle_with(&pi, &CX, &view()).expect("handled"));
    assert_eq!(reg0, 0x10);
    let rdata = unhex("000d 03 766d31 03 6f766e 03 6f7267 00");
    assert!(packet.ends_with(&rdata), "{}", hex::encode(&packet));
}

#[test]
fn unanswered_queries_resume_the_original_packet_with_r_0() {
    let cases = [
        ("nobody.ovn.org", 1, 0, 1),
        ("vm1.ovn.org", 15, 0, 1),
        ("vm1.ovn.org", 1, 1, 1),
        ("vm1.ovn.org", 1, 0, 2),
    ];
    for (name, qtype, arcount, datapath) in cases {
        let q = query4(name, qtype, arcount);
        let pi = paused(
            q.clone(),
            result_userdata(opcode::DNS_LOOKUP, &[]),
            datapath,
        );
        let (packet, reg0, rejected) = resumed(&handle_with(&pi, &CX, &view()).expect("handled"));
        assert_eq!((packet, reg0, rejected), (q, 0, false), "{name} {qtype}");
    }
    // A response is not answered either.
    let mut r = query4("vm1.ovn.org", 1, 0);
    r[44] |= 0x80;
    assert_eq!(dns::reply(&r, 1, &records()), Ok(None));
    // Too short for a DNS header: bad input, still resumed.
    let short = query4("vm1.ovn.org", 1, 0)[..50].to_vec();
    let pi = paused(short.clone(), result_userdata(opcode::DNS_LOOKUP, &[]), 1);
    let mut short_fixed = short.clone();
    short_fixed[16..18].copy_from_slice(&36u16.to_be_bytes());
    let (packet, reg0, rejected) = resumed(&handle_with(&pi, &CX, &view()).expect("handled"));
    assert_eq!((packet, reg0, rejected), (short, 0, true));
    assert!(dns::reply(&short_fixed, 1, &records()).is_err());
}

#[test]
fn ipv6_replies_get_a_udp_checksum() {
    let q4 = query4("vm1.ovn.org", 28, 0);
    let dns = &q4[42..];
    let (src, dst) = (
        Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1),
        Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 0x53),
    );
    let mut q = LR0_MAC.to_vec();
    q.extend_from_slice(&VM1_MAC);
    q.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
    q.extend_from_slice(&((8 + dns.len()) as u16).to_be_bytes());
    q.extend_from_slice(&[17, 64]);
    q.extend_from_slice(&src.octets());
    q.extend_from_slice(&dst.octets());
    q.extend_from_slice(&[0x9c, 0x40, 0, 53]);
    q.extend_from_slice(&((8 + dns.len()) as u16).to_be_bytes());
    q.extend_from_slice(&[0, 0]);
    q.extend_from_slice(dns);
    let out = dns::reply(&q, 1, &records())
        .expect("parsed")
        .expect("answered");
    let plen = u16::from_be_bytes([out[18], out[19]]);
    assert_eq!(usize::from(plen), out.len() - 54);
    assert_ne!(&out[60..62], &[0, 0]);
    assert_eq!(
        checksum(&[&pseudo_header6(src, dst, 17, plen), &out[54..]]),
        0
    );
}

#[test]
fn addresses_and_ptr_names_are_read_as_ovn_controller_reads_them() {
    let (v4, v6) = dns::scan_addresses(" 10.0.0.1/24 fd00::1 10.0.0.300 10.0.0.2");
    assert_eq!(v4, [Ipv4Addr::new(10, 0, 0, 1)]);
    assert_eq!(v6, [Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)]);
    assert_eq!(dns::scan_addresses("vm1.ovn.org"), (vec![], vec![]));
    let (v4, _) = dns::scan_addresses("10.0.0.1,10.0.0.2");
    assert_eq!(
        v4,
        [Ipv4Addr::new(10, 0, 0, 1)],
        "the scan stops at the comma"
    );
    assert_eq!(dns::ptr_name("a.b."), Some(unhex("01 61 01 62 00 00")));
    assert_eq!(dns::ptr_name(""), Some(vec![0, 0]));
    assert!(dns::ptr_name(&"x".repeat(300)).is_some());
}

/// A router solicitation from vm1's link-local address to all routers, already
/// addressed back by nothing (the logical flow after the action does that).
fn solicitation() -> Vec<u8> {
    let src: Ipv6Addr = "fe80::5254:ff:fe00:1".parse().expect("address");
    let dst: Ipv6Addr = "ff02::2".parse().expect("address");
    let mut icmp = vec![133, 0, 0, 0, 0, 0, 0, 0, 1, 1];
    icmp.extend_from_slice(&VM1_MAC);
    let c = checksum(&[&pseudo_header6(src, dst, 58, icmp.len() as u16), &icmp]);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let mut out = vec![0x33, 0x33, 0, 0, 0, 2];
    out.extend_from_slice(&VM1_MAC);
    out.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, icmp.len() as u8, 58, 255]);
    out.extend_from_slice(&src.octets());
    out.extend_from_slice(&dst.octets());
    out.extend_from_slice(&icmp);
    out
}

#[test]
fn a_solicitation_becomes_the_advertisement_of_the_userdata() {
    // What the compiler encodes for addr_mode = "slaac", slla = 00:00:00:00:ff:01,
    // mtu = 1400, prefix = fd00::/64.
    let ra = unhex(
        "86 00 0000 ff 00 ffff 00000000 00000000
         01 01 0000 0000 ff01
         05 01 0000 00000578
         03 04 40 c0 ffffffff ffffffff 00000000 fd000000000000000000000000000000",
    );
    let rs = solicitation();
    let pi = paused(rs.clone(), result_userdata(opcode::PUT_ND_RA_OPTS, &ra), 1);
    let (packet, reg0, rejected) = resumed(&handle_with(&pi, &CX, &View::default()).expect("ok"));
    assert_eq!((reg0, rejected), (0x10, false));
    assert_eq!(
        &packet[..18],
        &rs[..18],
        "addresses are the next flow's business"
    );
    assert_eq!(
        u16::from_be_bytes([packet[18], packet[19]]) as usize,
        ra.len()
    );
    assert_eq!(&packet[20..54], &rs[20..54]);
    assert_eq!(&packet[54..56], &ra[..2]);
    assert_eq!(&packet[58..], &ra[4..]);
    let (src, dst) = (
        Ipv6Addr::from(<[u8; 16]>::try_from(&rs[22..38]).expect("16")),
        Ipv6Addr::from(<[u8; 16]>::try_from(&rs[38..54]).expect("16")),
    );
    assert_eq!(
        checksum(&[
            &pseudo_header6(src, dst, 58, ra.len() as u16),
            &packet[54..]
        ]),
        0
    );
    // Not a solicitation: resumed unchanged with R = 0, counted as bad input.
    let mut na = rs.clone();
    na[54] = 136;
    let pi = paused(na.clone(), result_userdata(opcode::PUT_ND_RA_OPTS, &ra), 1);
    let (packet, reg0, rejected) = resumed(&handle_with(&pi, &CX, &View::default()).expect("ok"));
    assert_eq!((packet, reg0, rejected), (na, 0, true));
}

fn options(pairs: &[(&str, &str)]) -> OvsMap<String, String> {
    let mut m = OvsMap::new();
    for (k, v) in pairs {
        m.insert((*k).to_owned(), (*v).to_owned());
    }
    m
}

#[test]
fn the_periodic_ra_carries_every_configured_option() {
    let o = options(&[
        ("ipv6_ra_send_periodic", "true"),
        ("ipv6_ra_address_mode", "dhcpv6_stateless"),
        ("ipv6_ra_max_interval", "4"),
        ("ipv6_ra_min_interval", "3"),
        ("ipv6_ra_mtu", "1400"),
        ("ipv6_ra_prefixes", "fd00::/64"),
        ("ipv6_ra_rdnss", "fd00::53"),
        ("ipv6_ra_dnssl", "ovn.org,lab.example"),
        (
            "ipv6_ra_route_info",
            "HIGH-fd05::/64,LOW-fd06::1/48-fd07::/0",
        ),
        ("ipv6_ra_src_eth", "00:00:00:00:ff:01"),
        ("ipv6_ra_src_addr", "fe80::200:ff:fe00:ff01"),
        ("ipv6_ra_prf", "HIGH"),
    ]);
    let c = RaConfig::from_options(&o).expect("valid");
    assert_eq!((c.min_interval, c.max_interval), (3, 4));
    let pkt = c.packet();
    let expected_icmp = unhex(
        "86 00 XXXX ff 48 ffff 00000000 00000000
         01 01 0000 0000 ff01
         05 01 0000 00000578
         03 04 40 c0 ffffffff ffffffff 00000000 fd000000000000000000000000000000
         19 03 0000 ffffffff fd000000000000000000000000000053
         1f 04 0000 ffffffff 036f766e036f726700 036c6162076578616d706c6500 0000
         18 02 40 08 ffffffff fd05000000000000
         18 02 30 18 ffffffff fd06000000000000
         18 01 00 18 ffffffff"
            .replace("XXXX", "0000")
            .as_str(),
    );
    assert_eq!(&pkt[..14], &unhex("333300000001 00000000ff01 86dd"));
    assert_eq!(&pkt[14..18], &[0x60, 0, 0, 0]);
    assert_eq!(
        usize::from(u16::from_be_bytes([pkt[18], pkt[19]])),
        expected_icmp.len()
    );
    assert_eq!(&pkt[20..22], &[58, 255]);
    let mut icmp = pkt[54..].to_vec();
    icmp[2..4].fill(0);
    assert_eq!(hex::encode(&icmp), hex::encode(&expected_icmp));
    let src: Ipv6Addr = "fe80::200:ff:fe00:ff01".parse().expect("address");
    let all: Ipv6Addr = "ff02::1".parse().expect("address");
    assert_eq!(
        checksum(&[&pseudo_header6(src, all, 58, icmp.len() as u16), &pkt[54..]]),
        0
    );
    let ra = PeriodicRa {
        config: c,
        datapath: 1,
        port: 3,
    };
    let po = ra.packet_out(8);
    let actions: Vec<String> = po.actions.iter().map(ToString::to_string).collect();
    assert_eq!(
        actions,
        [
            "set_field:0x1->metadata",
            "set_field:0x3->reg14",
            "set_field:0x10/0x10->reg10",
            "resubmit(CONTROLLER,8)"
        ]
    );
}

#[test]
fn bad_periodic_configs_give_no_ra() {
    let base = [
        ("ipv6_ra_address_mode", "slaac"),
        ("ipv6_ra_src_eth", "00:00:00:00:ff:01"),
        ("ipv6_ra_src_addr", "fe80::1"),
    ];
    assert!(RaConfig::from_options(&options(&base)).is_ok());
    let c = RaConfig::from_options(&options(&base)).expect("valid");
    assert_eq!((c.min_interval, c.max_interval, c.mtu), (200, 600, 0));
    for (k, v) in [
        ("ipv6_ra_address_mode", "dhcp"),
        ("ipv6_ra_src_eth", "nope"),
        ("ipv6_ra_src_addr", "10.0.0.1"),
        ("ipv6_ra_prefixes", ""),
        ("ipv6_ra_rdnss", "fd00::1,fd00::2"),
    ] {
        let mut o = options(&base);
        o.insert(k.to_owned(), v.to_owned());
        assert!(RaConfig::from_options(&o).is_err(), "{k}={v}");
    }
    assert_eq!(ra::min_interval_default(4), 3);
    assert_eq!(ra::min_interval_default(600), 200);
}

proptest! {
    #[test]
    fn any_packet_and_userdata_resume_without_panic(
        packet in proptest::collection::vec(any::<u8>(), 0..200),
        rest in proptest::collection::vec(any::<u8>(), 0..64),
        raw in proptest::collection::vec(any::<u8>(), 0..16),
        op in prop_oneof![Just(opcode::DNS_LOOKUP), Just(opcode::PUT_ND_RA_OPTS)],
    ) {
        let v = view();
        for userdata in [result_userdata(op, &rest), [op.to_be_bytes().as_slice(), &[0; 4], &raw].concat()] {
            let _ = handle_with(&paused(packet.clone(), userdata, 1), &CX, &v);
        }
    }

    #[test]
    fn any_dns_payload_after_valid_headers_is_handled(
        dns in proptest::collection::vec(any::<u8>(), 0..120),
        flags in any::<u8>(),
    ) {
        let mut q = query4("vm1.ovn.org", 1, 0)[..42].to_vec();
        let mut body = dns;
        if body.len() > 2 { body[2] = flags & 0x7f; }
        q.extend_from_slice(&body);
        let len = (q.len() - 14) as u16;
        q[16..18].copy_from_slice(&len.to_be_bytes());
        q[38..40].copy_from_slice(&(len - 20).to_be_bytes());
        let _ = dns::reply(&q, 1, &records());
    }

    #[test]
    fn any_ra_options_build_a_packet_without_panic(
        values in proptest::collection::vec("[ -~]{0,40}", 12),
    ) {
        let keys = [
            "ipv6_ra_address_mode", "ipv6_ra_max_interval", "ipv6_ra_min_interval",
            "ipv6_ra_mtu", "ipv6_ra_prefixes", "ipv6_ra_rdnss", "ipv6_ra_dnssl",
            "ipv6_ra_route_info", "ipv6_ra_src_eth", "ipv6_ra_src_addr", "ipv6_ra_prf",
            "ipv6_ra_send_periodic",
        ];
        let pairs: Vec<(&str, &str)> = keys.iter().copied().zip(values.iter().map(String::as_str)).collect();
        let mut o = options(&pairs);
        let _ = RaConfig::from_options(&o).map(|c| c.packet());
        o.insert("ipv6_ra_address_mode".into(), "slaac".into());
        o.insert("ipv6_ra_src_eth".into(), "00:00:00:00:ff:01".into());
        o.insert("ipv6_ra_src_addr".into(), "fe80::1".into());
        o.remove("ipv6_ra_prefixes");
        o.remove("ipv6_ra_rdnss");
        let c = RaConfig::from_options(&o);
        prop_assert!(c.is_ok());
        let _ = c.map(|c| c.packet());
    }
}

#[test]
fn the_snapshot_has_the_dns_rows_and_the_periodic_ras_of_the_southbound() {
    const SW: &str = "00000000-0000-4000-8000-0000000000d1";
    const LR: &str = "00000000-0000-4000-8000-0000000000d2";
    let mut sb = crate::southbound::Southbound::default();
    let ra_options = r#"["ipv6_ra_send_periodic","true"],["ipv6_ra_address_mode","slaac"],["ipv6_ra_max_interval","4"],["ipv6_ra_min_interval","3"],["ipv6_ra_prefixes","fd00::/64"],["ipv6_ra_src_eth","00:00:00:00:ff:01"],["ipv6_ra_src_addr","fe80::200:ff:fe00:ff01"],["ipv6_ra_prf","MEDIUM"]"#;
    let text = format!(
        r#"{{"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key"],"data":[[["uuid","{SW}"],1],[["uuid","{LR}"],3]]}}
           {{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","options"],"data":[
             [["uuid","00000000-0000-4000-8000-0000000000a1"],"lr0-sw0",["uuid","{LR}"],1,"patch",["map",[["peer","sw0-lr0"],{ra_options}]]],
             [["uuid","00000000-0000-4000-8000-0000000000a2"],"sw0-lr0",["uuid","{SW}"],3,"patch",["map",[["peer","lr0-sw0"]]]],
             [["uuid","00000000-0000-4000-8000-0000000000a3"],"lr0-sw9",["uuid","{LR}"],2,"patch",["map",[["peer","sw9-lr0"],{ra_options}]]],
             [["uuid","00000000-0000-4000-8000-0000000000a4"],"lr0-sw1",["uuid","{LR}"],4,"patch",["map",[["peer","sw0-lr0"],["ipv6_ra_send_periodic","true"]]]]]}}
           {{"caption":"DNS table","headings":["_uuid","datapaths","external_ids","records"],"data":[
             [["uuid","00000000-0000-4000-8000-0000000000e1"],["uuid","{SW}"],["map",[["dns_id","z"]]],["map",[["vm1.ovn.org","10.0.0.1"]]]],
             [["uuid","00000000-0000-4000-8000-0000000000e2"],["uuid","{SW}"],["map",[]],["map",[["vm2.ovn.org","10.0.0.2"]]]],
             [["uuid","00000000-0000-4000-8000-0000000000e3"],["set",[["uuid","{SW}"],["uuid","{LR}"]]],["map",[["dns_id","a"]]],["map",[["vm1.ovn.org","10.0.0.11"]]]]]}}"#
    );
    sb.load_json(&text).expect("loads");
    let mut view = View::from_replica(&sb.replica, 37, 42);
    view.ingress_table = 8;
    // The row without a dns_id is known by its uuid and not used (23.03); rows go in
    // dns_id order.
    let ids: Vec<&str> = view.dns.rows.iter().map(|r| r.dns_id.as_str()).collect();
    assert_eq!(ids, ["00000000-0000-4000-8000-0000000000e2", "a", "z"]);
    assert!(!view.dns.rows[0].has_dns_id);
    assert_eq!(view.dns.rows[1].datapaths, [1, 3]);
    assert_eq!(view.dns.find(1, b"VM1.ovn.org"), Some("10.0.0.11"));
    assert_eq!(view.dns.find(1, b"vm2.ovn.org"), None);
    assert_eq!(view.dns.find(2, b"vm1.ovn.org"), None);
    // lr0-sw9's peer is unknown and lr0-sw1 has no valid config: only lr0-sw0 sends.
    let ports: Vec<&String> = view.periodic_ras.keys().collect();
    assert_eq!(ports, ["lr0-sw0"]);
    let ra = &view.periodic_ras["lr0-sw0"];
    assert_eq!((ra.datapath, ra.port), (1, 3));
    assert_eq!(
        ra.config.prefixes,
        [("fd00::".parse().expect("address"), 64)]
    );
    assert_eq!(view.ingress_table, 8);
}

/// 26.03 answers a record's addresses in a new random order each time: the same answers,
/// both orders seen over many queries (two addresses: all 64 in one order has odds 2^-63).
#[test]
fn release_26_03_answers_addresses_in_random_order() {
    let mut r = records();
    r.rows[0].records.insert(
        "vm1.ovn.org".to_owned(),
        "10.0.0.1 fd00::1 fd00::11".to_owned(),
    );
    r.forms = crate::lflow::dialect::OVN_26_03.dns;
    let q = query4("vm1.ovn.org", 28, 0);
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..64 {
        let out = dns::reply(&q, 1, &r).expect("parsed").expect("answered");
        seen.insert(out);
    }
    assert_eq!(seen.len(), 2, "two orders of the two AAAA answers");
    let lengths: std::collections::BTreeSet<usize> = seen.iter().map(Vec::len).collect();
    assert_eq!(lengths.len(), 1);
    r.forms = crate::lflow::dialect::OVN_25_03.dns;
    let once = dns::reply(&q, 1, &r).unwrap().unwrap();
    for _ in 0..8 {
        assert_eq!(
            dns::reply(&q, 1, &r).unwrap().unwrap(),
            once,
            "25.03: record order"
        );
    }
}
