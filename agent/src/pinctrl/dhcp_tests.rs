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

/// The options ovn-controller 23.03.1 put in its OFFER in the integration lab (northd's
/// `put_dhcp_opts` for vm1, in the order northd writes them; netmask twice, as northd
/// lists it twice), which are also the userdata's options after the offer address.
const LAB_OPTIONS: &str = "3a0400000708 3b0400000c4e
    790d181e00000a00000a000a0000fe 06080808080808080404 0f076f766e2e6f7267
    7719036f766e036f72670003616263c000047465737403636f6d00 330400000e10
    f90d181e00000a00000a000a0000fe 1a0205a2 0104ffffff00 0104ffffff00
    03040a0000fe 36040a0000fe";
/// The INFORM ACK's options there: no T1, T2, lease time or netmask.
const LAB_INFORM_OPTIONS: &str = "790d181e00000a00000a000a0000fe 06080808080808080404
    0f076f766e2e6f7267 7719036f766e036f72670003616263c000047465737403636f6d00
    f90d181e00000a00000a000a0000fe 1a0205a2 03040a0000fe 36040a0000fe";

fn lab_userdata() -> Vec<u8> {
    let mut rest = unhex("0a000001");
    rest.extend_from_slice(&unhex(LAB_OPTIONS));
    userdata(opcode::PUT_DHCP_OPTS, &rest)
}

/// The BOOTP reply ovn-controller wrote: the request's header with op 2 and `yiaddr`,
/// the cookie, message type `t`, `options`, four zero bytes, END and four zero bytes.
fn reply_payload(ciaddr: [u8; 4], yiaddr: [u8; 4], t: u8, options: &str) -> Vec<u8> {
    let mut out = vec![2, 1, 6, 0, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0];
    out.extend_from_slice(&ciaddr);
    out.extend_from_slice(&yiaddr);
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&[0x50, 0x54, 0, 0, 0, 1]);
    out.resize(236, 0);
    out.extend_from_slice(&[99, 130, 83, 99, 53, 1, t]);
    out.extend_from_slice(&unhex(options));
    out.extend_from_slice(&[0, 0, 0, 0, 255, 0, 0, 0, 0]);
    out
}

fn result_reg0(md: &Match) -> Option<Vec<u8>> {
    md.get(FieldId::reg(0)).map(|f| f.value.clone())
}

fn checksum_ok(data: &[u8]) -> bool {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

const DISCOVER: &str = "350101 37060103060f7977 ff";

/// Why the handler rejected the input, if it did (it resumes all the same).
fn rejected(effects: &[Effect]) -> Option<String> {
    effects.iter().find_map(|e| match e {
        Effect::Rejected(why) => Some(why.to_string()),
        _ => None,
    })
}

#[test]
fn discover_gets_the_offer_ovn_controller_gave() {
    let pi = paused(dhcp4([0; 4], [0; 4], DISCOVER), lab_userdata());
    let effects = handle(&pi, &CX).expect("handled");
    assert!(effects.contains(&Effect::Info(
        "DHCPOFFER 50:54:00:00:00:01 10.0.0.1".to_owned()
    )));
    let (packet, md) = resumed(&effects);
    assert_eq!(result_reg0(md), Some(vec![0, 0, 0, 8]), "reg0[3] = 1");
    assert_eq!(
        hex::encode(&packet[42..]),
        hex::encode(reply_payload([0; 4], [10, 0, 0, 1], 2, LAB_OPTIONS))
    );
    // UDP: the request's ports (the flows after the action swap them), length, no
    // checksum; IP: to the offered address, length and header checksum fixed.
    let udp_len = (packet.len() - 34) as u16;
    assert_eq!(
        &packet[34..42],
        &[0, 68, 0, 67, (udp_len >> 8) as u8, udp_len as u8, 0, 0]
    );
    assert_eq!(&packet[30..34], &[10, 0, 0, 1]);
    assert_eq!(
        usize::from(u16::from_be_bytes([packet[16], packet[17]])),
        packet.len() - 14
    );
    assert!(checksum_ok(&packet[14..34]));
}

#[test]
fn request_gets_an_ack_for_the_offer_and_a_nak_for_another_address() {
    let ack = paused(
        dhcp4([0; 4], [0; 4], "350103 32040a000001 36040a0000fe ff"),
        lab_userdata(),
    );
    let effects = handle(&ack, &CX).expect("handled");
    let (packet, md) = resumed(&effects);
    assert_eq!(result_reg0(md), Some(vec![0, 0, 0, 8]));
    assert_eq!(
        hex::encode(&packet[42..]),
        hex::encode(reply_payload([0; 4], [10, 0, 0, 1], 5, LAB_OPTIONS))
    );
    let nak = paused(
        dhcp4([0; 4], [0; 4], "350103 32040a00004d 36040a0000fe ff"),
        lab_userdata(),
    );
    let effects = handle(&nak, &CX).expect("handled");
    let (packet, md) = resumed(&effects);
    assert_eq!(
        result_reg0(md),
        Some(vec![0, 0, 0, 8]),
        "a NAK is a reply too"
    );
    assert_eq!(
        hex::encode(&packet[42..]),
        hex::encode(reply_payload([0; 4], [0; 4], 6, ""))
    );
    // A renewing client names its address in ciaddr.
    let renew = paused(
        dhcp4([10, 0, 0, 1], [10, 0, 0, 1], "350103 ff"),
        lab_userdata(),
    );
    let effects = handle(&renew, &CX).expect("handled");
    let (packet, _) = resumed(&effects);
    assert_eq!(packet[42 + 240 + 2], 5, "ACK");
}

#[test]
fn inform_gets_an_ack_without_the_lease_options() {
    let pi = paused(
        dhcp4([10, 0, 0, 1], [10, 0, 0, 1], "350108 ff"),
        lab_userdata(),
    );
    let effects = handle(&pi, &CX).expect("handled");
    let (packet, _) = resumed(&effects);
    assert_eq!(
        hex::encode(&packet[42..]),
        hex::encode(reply_payload([10, 0, 0, 1], [0; 4], 5, LAB_INFORM_OPTIONS))
    );
}

#[test]
fn release_decline_and_bad_requests_resume_with_the_result_bit_clear() {
    for options in ["350107 ff", "350104 32040a000001 ff"] {
        let request = dhcp4([10, 0, 0, 1], [10, 0, 0, 1], options);
        let effects = handle(&paused(request.clone(), lab_userdata()), &CX).expect("handled");
        let (packet, md) = resumed(&effects);
        assert_eq!(packet, request.as_slice(), "the request goes on unchanged");
        assert_eq!(result_reg0(md), None, "reg0[3] stays 0");
    }
    for (options, why) in [
        ("37020103 ff", "Missing DHCP message type"),
        ("350109 ff", "Invalid DHCP message type: 9"),
    ] {
        let request = dhcp4([0; 4], [0; 4], options);
        let effects = handle(&paused(request.clone(), lab_userdata()), &CX).expect("resumed");
        assert_eq!(rejected(&effects).as_deref(), Some(why), "{options}");
        assert_eq!(resumed(&effects).0, request.as_slice());
    }
    let mut bad_op = dhcp4([0; 4], [0; 4], DISCOVER);
    bad_op[42] = 2;
    let effects = handle(&paused(bad_op, lab_userdata()), &CX).expect("resumed");
    assert!(rejected(&effects).is_some());
}

#[test]
fn broadcast_flag_sends_the_reply_to_the_broadcast_address() {
    let mut request = dhcp4([0; 4], [0; 4], DISCOVER);
    request[42 + 10] = 0x80;
    let effects = handle(&paused(request, lab_userdata()), &CX).expect("handled");
    let (packet, _) = resumed(&effects);
    assert_eq!(&packet[30..34], &[255; 4]);
    assert!(checksum_ok(&packet[14..34]));
}

#[test]
fn ipxe_clients_get_bootfile_name_and_others_bootfile_name_alt() {
    // bootfile_name "a.ipxe", bootfile_name_alt "b.efi", next_server 10.0.0.9, as the
    // compiler orders them (67, 254, 253 first).
    let mut rest = unhex("0a000001");
    rest.extend_from_slice(&unhex(
        "4306612e69707865 fe05622e656669 fd040a000009 03040a0000fe",
    ));
    let ud = userdata(opcode::PUT_DHCP_OPTS, &rest);
    let plain = handle(&paused(dhcp4([0; 4], [0; 4], DISCOVER), ud.clone()), &CX).expect("ok");
    let (packet, _) = resumed(&plain);
    let d = &packet[42..];
    assert_eq!(&d[20..24], &[10, 0, 0, 9], "siaddr from next_server");
    assert_eq!(
        hex::encode(&d[240..]),
        "350102430562 2e656669 fd040a000009 03040a0000fe 00000000ff00000000".replace(' ', "")
    );
    let ipxe = handle(&paused(dhcp4([0; 4], [0; 4], "350101 af00 ff"), ud), &CX).expect("ok");
    let (packet, _) = resumed(&ipxe);
    assert_eq!(
        hex::encode(&packet[42 + 240..]),
        "3501024306612e69707865fd040a00000903040a0000fe00000000ff00000000"
    );
}

#[test]
fn a_packet_in_that_is_not_paused_or_has_a_bad_result_field_is_refused() {
    let mut pi = paused(dhcp4([0; 4], [0; 4], DISCOVER), lab_userdata());
    pi.props
        .retain(|p| !matches!(p, PacketInProp::Continuation(_)));
    assert!(matches!(handle(&pi, &CX), Err(Skip::WrongPacket(_))));
    let mut ud = lab_userdata();
    // Class 0x7f01: no such field.
    ud[8] = 0x7f;
    let effects = handle(&paused(dhcp4([0; 4], [0; 4], DISCOVER), ud), &CX).expect("resumed");
    assert!(rejected(&effects).is_some());
    let resume = effects.iter().find_map(|e| match e {
        Effect::Resume(r) => Some(r),
        _ => None,
    });
    assert_eq!(
        resume.and_then(|r| r.metadata()).and_then(result_reg0),
        None
    );
}

// ---- DHCPv6 -------------------------------------------------------------------------------

/// A DHCPv6 message from 50:54:00:00:00:01's link-local address to ff02::1:2.
fn dhcp6(msg: &str) -> Vec<u8> {
    let body = unhex(msg);
    let udp_len = (8 + body.len()) as u16;
    let mut out = unhex("333300010002 505400000001 86dd 60000000");
    out.extend_from_slice(&udp_len.to_be_bytes());
    out.extend_from_slice(&[17, 1]);
    out.extend_from_slice(&unhex(
        "fe80000000000000525400fffe000001 ff020000000000000000000000010002",
    ));
    out.extend_from_slice(&[0x02, 0x22, 0x02, 0x23]);
    out.extend_from_slice(&udp_len.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&body);
    out
}

const CLIENT_ID: &str = "0001000a 00030001505400000001";
const IA_NA: &str = "0003000c 0badf00d 00000000 00000000";

/// `put_dhcpv6_opts(server_id = 00:00:00:00:ff:01, ia_addr = fd00::1, dns_server =
/// {fd00::53}, domain_search = "ovn.org")` as northd writes it and the compiler encodes it.
fn v6_userdata(stateless: bool) -> Vec<u8> {
    let mut opts = unhex("00020006 00000000ff01");
    if !stateless {
        opts.extend_from_slice(&unhex("00050010 fd000000000000000000000000000001"));
    }
    opts.extend_from_slice(&unhex("00170010 fd000000000000000000000000000053"));
    opts.extend_from_slice(&unhex("00180007 6f766e2e6f7267"));
    userdata(opcode::PUT_DHCPV6_OPTS, &opts)
}

fn udp6_ok(packet: &[u8]) -> bool {
    let mut pseudo = packet[22..54].to_vec();
    pseudo.extend_from_slice(&[0, 0]);
    pseudo.extend_from_slice(&packet[18..20]);
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&packet[54..]);
    checksum_ok(&pseudo)
}

#[test]
fn solicit_gets_an_advertise_with_the_address_in_an_ia_na() {
    let request = dhcp6(&format!("01abcdef {CLIENT_ID} {IA_NA} 00080002 0000"));
    let effects = handle(&paused(request, v6_userdata(false)), &CX).expect("handled");
    let (packet, md) = resumed(&effects);
    assert_eq!(result_reg0(md), Some(vec![0, 0, 0, 8]));
    assert_eq!(
        hex::encode(&packet[62..]),
        [
            "02abcdef",
            CLIENT_ID,
            "0002000a 0003 0001 00000000ff01",
            "00030028 0badf00d ffffffff ffffffff",
            "00050018 fd000000000000000000000000000001 ffffffff ffffffff",
            "00170010 fd000000000000000000000000000053",
            "00180009 07 6f766e2e6f7267 00",
        ]
        .concat()
        .replace(' ', "")
    );
    assert_eq!(
        usize::from(u16::from_be_bytes([packet[18], packet[19]])),
        packet.len() - 54
    );
    assert_eq!(&packet[58..60], &packet[18..20], "UDP length");
    assert!(udp6_ok(packet));
}

#[test]
fn information_request_and_the_stateless_case_get_no_ia_na() {
    let info = dhcp6(&format!("0b000001 {CLIENT_ID}"));
    let effects = handle(&paused(info, v6_userdata(false)), &CX).expect("handled");
    let (packet, _) = resumed(&effects);
    assert_eq!(packet[62], 7, "REPLY");
    assert!(!hex::encode(packet).contains("00030028"), "no IA_NA");
    let solicit = dhcp6(&format!("01000002 {CLIENT_ID} {IA_NA}"));
    let effects = handle(&paused(solicit, v6_userdata(true)), &CX).expect("handled");
    let (packet, _) = resumed(&effects);
    assert_eq!(packet[62], 2, "ADVERTISE");
    assert!(!hex::encode(packet).contains("00030028"), "no IA_NA");
    assert!(udp6_ok(packet));
}

#[test]
fn renew_and_requests_without_client_id_or_ia_na_get_no_reply() {
    let renew = dhcp6(&format!("05000003 {CLIENT_ID} {IA_NA}"));
    let effects = handle(&paused(renew.clone(), v6_userdata(false)), &CX).expect("handled");
    let (packet, md) = resumed(&effects);
    assert_eq!(packet, renew.as_slice());
    assert_eq!(result_reg0(md), None);
    for msg in [format!("01000004 {IA_NA}"), format!("03000005 {CLIENT_ID}")] {
        let effects = handle(&paused(dhcp6(&msg), v6_userdata(false)), &CX).expect("resumed");
        assert!(rejected(&effects).is_some(), "{msg}");
    }
}

fn any_bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(proptest::num::u8::ANY, 0..400)
}

proptest! {
    #[test]
    fn put_dhcp_opts_takes_any_packet_and_any_userdata_without_panic(
        packet in any_bytes(),
        noise in any_bytes(),
        cut in 0usize..600,
    ) {
        let ud = lab_userdata();
        let _ = handle(&paused(packet.clone(), ud.clone()), &CX);
        let _ = handle(&paused(dhcp4([0; 4], [0; 4], DISCOVER), noise.clone()), &CX);
        // A real request with its tail replaced by noise, or cut short.
        let mut request = dhcp4([0; 4], [0; 4], DISCOVER);
        request.truncate(cut.min(request.len()));
        request.extend_from_slice(&packet);
        let _ = handle(&paused(request, ud.clone()), &CX);
        let mut ud_noise = ud[..16].to_vec();
        ud_noise.extend_from_slice(&noise);
        let _ = handle(&paused(dhcp4([0; 4], [0; 4], "350101 af00 ff"), ud_noise), &CX);
    }

    #[test]
    fn put_dhcpv6_opts_takes_any_packet_and_any_userdata_without_panic(
        packet in any_bytes(),
        noise in any_bytes(),
        cut in 0usize..200,
    ) {
        let ud = v6_userdata(false);
        let _ = handle(&paused(packet.clone(), ud.clone()), &CX);
        let solicit = dhcp6(&format!("01abcdef {CLIENT_ID} {IA_NA}"));
        let mut ud_noise = ud[..16].to_vec();
        ud_noise.extend_from_slice(&noise);
        let _ = handle(&paused(solicit.clone(), ud_noise), &CX);
        let mut request = solicit;
        request.truncate(cut.min(request.len()));
        request.extend_from_slice(&packet);
        let _ = handle(&paused(request, ud), &CX);
    }
}
