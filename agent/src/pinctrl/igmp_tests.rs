//! IGMP / MLD snooping: parsing (golden bytes), the table's add / refresh / leave / age
//! and size limit, the querier's schedule on virtual time, and the IGMP_Group rows.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use super::*;
use crate::pinctrl::csum::{fold, sum16};
use crate::pinctrl::igmp_query::{igmp_query, mld_query};
use crate::pinctrl::packet;
use openflow::oxm::FieldId;

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(char::is_ascii_hexdigit).collect();
    hex::decode(s).expect("hex")
}

fn csum(data: &[u8], pseudo: u32) -> u16 {
    fold(sum16(data, pseudo))
}

/// Ethernet + IPv4 with a router alert option (IHL 6) around an IGMP body whose
/// checksum is filled in.
fn igmp_frame(dst: Ipv4Addr, mut body: Vec<u8>) -> Vec<u8> {
    body[2..4].fill(0);
    let c = csum(&body, 0);
    body[2..4].copy_from_slice(&c.to_be_bytes());
    let mut out = unhex("01005e010101 505400000001 0800");
    let mut ip = vec![0x46, 0xc0];
    ip.extend_from_slice(&((24 + body.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0, 0, 1, 2, 0, 0]);
    ip.extend_from_slice(&[10, 0, 0, 1]);
    ip.extend_from_slice(&dst.octets());
    ip.extend_from_slice(&[0x94, 0x04, 0, 0]);
    let c = csum(&ip, 0);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&ip);
    out.extend_from_slice(&body);
    out
}

/// Ethernet + IPv6 + hop-by-hop router alert around an MLD body whose checksum is
/// filled in.
fn mld_frame(src: Ipv6Addr, dst: Ipv6Addr, mut body: Vec<u8>) -> Vec<u8> {
    body[2..4].fill(0);
    let len = body.len() as u32;
    let pseudo = sum16(&src.octets(), 0) + sum16(&dst.octets(), 0) + len + 58;
    let c = csum(&body, pseudo);
    body[2..4].copy_from_slice(&c.to_be_bytes());
    let mut out = unhex("333300000016 505400000001 86dd 60000000");
    out.extend_from_slice(&((8 + body.len()) as u16).to_be_bytes());
    out.extend_from_slice(&[0, 1]);
    out.extend_from_slice(&src.octets());
    out.extend_from_slice(&dst.octets());
    out.extend_from_slice(&unhex("3a00 0502 0000 0100"));
    out.extend_from_slice(&body);
    out
}

fn parsed(frame: &[u8]) -> Result<Message, IgmpError> {
    let h = packet::parse(frame).expect("headers");
    parse(frame, &h)
}

fn v4(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

fn ll() -> Ipv6Addr {
    "fe80::5054:ff:fe00:1".parse().expect("ip")
}

#[test]
fn igmpv2_report_golden_bytes() {
    // A real IGMPv2 report for 239.1.1.1 (checksum f9fc) in IPv4 with a router alert.
    let frame = unhex(
        "01005e010101 505400000001 0800
         4600 0020 0000 0000 0102 0000 0a000001 ef010101 94040000
         1600 f9fc ef010101",
    );
    assert_eq!(
        parsed(&frame),
        Ok(Message::Report(vec![Record::Join(v4("239.1.1.1"))]))
    );
    assert_eq!(
        Message::Report(vec![]).forward_to(),
        Some(MROUTER_FLOOD_KEY)
    );
    // One bit off: a bad checksum teaches nothing.
    let mut bad = frame.clone();
    bad[41] ^= 1;
    assert_eq!(parsed(&bad), Err(IgmpError::BadIgmp));
    // Truncated below the 8-byte header.
    let short = &frame[..frame.len() - 2];
    assert!(parsed(short).is_err());
}

#[test]
fn igmp_v1_leave_query_and_v3_records() {
    let g = Ipv4Addr::new(239, 0, 0, 7);
    let mut v1 = vec![0x12, 0, 0, 0];
    v1.extend_from_slice(&g.octets());
    assert_eq!(
        parsed(&igmp_frame(g, v1)),
        Ok(Message::Report(vec![Record::Join(g.into())]))
    );
    let mut leave = vec![0x17, 0, 0, 0];
    leave.extend_from_slice(&g.octets());
    assert_eq!(
        parsed(&igmp_frame(Ipv4Addr::new(224, 0, 0, 2), leave)),
        Ok(Message::Report(vec![Record::Leave(g.into())]))
    );
    let query = vec![0x11, 100, 0, 0, 0, 0, 0, 0];
    let q = parsed(&igmp_frame(Ipv4Addr::new(224, 0, 0, 1), query)).expect("query");
    assert_eq!(
        q,
        Message::Query {
            learn_mrouter: true
        }
    );
    assert_eq!(q.forward_to(), Some(FLOOD_L2_KEY));
    // IGMPv3: EXCLUDE {} (join), TO_IN {} (leave), ALLOW {src} (join), IS_IN {} (leave).
    let v3 = unhex(
        "2200 0000 0000 0004
         04 00 0000 ef000001
         03 00 0000 ef000002
         05 00 0001 ef000003 0a000063
         01 00 0000 ef000004",
    );
    assert_eq!(
        parsed(&igmp_frame(Ipv4Addr::new(224, 0, 0, 22), v3)),
        Ok(Message::Report(vec![
            Record::Join(v4("239.0.0.1")),
            Record::Leave(v4("239.0.0.2")),
            Record::Join(v4("239.0.0.3")),
            Record::Leave(v4("239.0.0.4")),
        ]))
    );
    // An unknown record type ends the report, as OVS reads it.
    let odd = unhex("2200 0000 0000 0002 09 00 0000 ef000001 04 00 0000 ef000002");
    assert_eq!(
        parsed(&igmp_frame(Ipv4Addr::new(224, 0, 0, 22), odd)),
        Ok(Message::Report(vec![]))
    );
}

#[test]
fn mld_reports_done_and_query() {
    let g: Ipv6Addr = "ff0e::1:2".parse().expect("ip");
    let all_routers: Ipv6Addr = "ff02::16".parse().expect("ip");
    // MLDv2: CHANGE_TO_EXCLUDE {} for ff0e::1:2, TO_IN {} for ff0e::3.
    let mut v2 = unhex("8f00 0000 0000 0002 04 00 0000");
    v2.extend_from_slice(&g.octets());
    v2.extend_from_slice(&unhex("03 00 0000"));
    v2.extend_from_slice(&"ff0e::3".parse::<Ipv6Addr>().expect("ip").octets());
    let frame = mld_frame(ll(), all_routers, v2);
    assert_eq!(
        parsed(&frame),
        Ok(Message::Report(vec![
            Record::Join(g.into()),
            Record::Leave("ff0e::3".parse().expect("ip")),
        ]))
    );
    let mut bad = frame.clone();
    let n = bad.len();
    bad[n - 1] ^= 0x80;
    assert_eq!(parsed(&bad), Err(IgmpError::BadMld));
    // MLDv1 report and done.
    let mut r = unhex("8300 0000 0000 0000");
    r.extend_from_slice(&g.octets());
    assert_eq!(
        parsed(&mld_frame(ll(), g, r)),
        Ok(Message::Report(vec![Record::Join(g.into())]))
    );
    let mut d = unhex("8400 0000 0000 0000");
    d.extend_from_slice(&g.octets());
    assert_eq!(
        parsed(&mld_frame(ll(), "ff02::2".parse().expect("ip"), d)),
        Ok(Message::Report(vec![Record::Leave(g.into())]))
    );
    // A query from :: is flooded but teaches no router port.
    let q = vec![130, 0, 0, 0, 0, 10, 0, 0];
    let mut q = q;
    q.extend_from_slice(&[0; 20]);
    assert_eq!(
        parsed(&mld_frame(
            Ipv6Addr::UNSPECIFIED,
            "ff02::1".parse().expect("ip"),
            q.clone()
        )),
        Ok(Message::Query {
            learn_mrouter: false
        })
    );
    assert_eq!(
        parsed(&mld_frame(ll(), "ff02::1".parse().expect("ip"), q)),
        Ok(Message::Query {
            learn_mrouter: true
        })
    );
}

#[test]
fn group_addresses_print_as_ovn_writes_them() {
    assert_eq!(
        address_text(Ipv4Addr::new(239, 1, 2, 3).to_ipv6_mapped()),
        "239.1.2.3"
    );
    assert_eq!(address_text("ff0e::1:2".parse().expect("ip")), "ff0e::1:2");
}

fn mapped4(s: &str) -> Ipv6Addr {
    s.parse::<Ipv4Addr>().expect("ip").to_ipv6_mapped()
}

fn ports(t: &Table, g: &str) -> Vec<u32> {
    t.groups()
        .get(g)
        .map(|p| p.iter().copied().collect())
        .unwrap_or_default()
}

#[test]
fn join_refresh_leave_and_age() {
    let mut t = Table::default();
    t.set_idle_time(20);
    assert!(t.add_group(mapped4("239.0.0.1"), 2, 0));
    assert!(!t.add_group(mapped4("239.0.0.1"), 3, 5));
    assert_eq!(ports(&t, "239.0.0.1"), [2, 3]);
    // Port 2 refreshes at 10: it now expires at 30, port 3 at 25.
    t.add_group(mapped4("239.0.0.1"), 2, 10);
    assert!(!t.run(24), "nothing expired");
    assert_eq!(ports(&t, "239.0.0.1"), [2, 3]);
    assert!(t.run(25));
    assert_eq!(ports(&t, "239.0.0.1"), [2]);
    assert_eq!(t.next_expiry(), Some(30));
    // A leave takes the port out at once; the empty group is gone after the next run.
    assert!(t.leave_group(mapped4("239.0.0.1"), 2));
    assert!(!t.leave_group(mapped4("239.0.0.1"), 2));
    assert!(t.groups().is_empty());
    assert_eq!(t.len(), 1);
    t.run(26);
    assert!(t.is_empty());
    // Idle times are kept within 15..=3600 s.
    t.set_idle_time(1);
    t.add_group(mapped4("239.0.0.9"), 2, 100);
    t.run(114);
    assert_eq!(ports(&t, "239.0.0.9"), [2]);
    t.run(115);
    assert!(t.groups().is_empty());
}

#[test]
fn aging_stops_at_the_first_group_with_nothing_expired() {
    // OVS walks groups from the least recently used one and stops at the first with
    // nothing to expire: a stale member of a recently refreshed group waits.
    let mut t = Table::default();
    t.set_idle_time(15);
    t.add_group(mapped4("239.0.0.1"), 2, 0);
    t.add_group(mapped4("239.0.0.2"), 2, 5);
    t.add_group(mapped4("239.0.0.1"), 3, 10);
    // 239.0.0.2 (port 2 until 20) is now the oldest group; 239.0.0.1 has port 2 until
    // 15 and port 3 until 25.
    t.run(16);
    assert_eq!(ports(&t, "239.0.0.1"), [2, 3], "not reached yet");
    t.run(20);
    assert!(!t.groups().contains_key("239.0.0.2"));
    assert_eq!(ports(&t, "239.0.0.1"), [3]);
}

#[test]
fn a_full_table_drops_its_least_recently_used_group() {
    let mut t = Table::default();
    t.set_max_entries(3);
    for i in 1..=10u8 {
        t.add_group(mapped4(&format!("239.0.0.{i}")), 2, 0);
    }
    assert_eq!(t.len(), 10, "at least 10 entries, as OVS allows");
    t.add_group(mapped4("239.0.0.1"), 3, 1);
    t.add_group(mapped4("239.0.1.1"), 2, 1);
    assert_eq!(t.len(), 10);
    assert!(!t.groups().contains_key("239.0.0.2"), "the oldest one went");
    assert!(t.groups().contains_key("239.0.0.1"), "refreshed, so kept");
    // A smaller limit applies at the next run.
    t.set_max_entries(12);
    t.add_group(mapped4("239.0.1.2"), 2, 1);
    assert_eq!(t.len(), 11);
}

#[test]
fn router_ports_age_and_their_reports_are_not_learnt() {
    let mut t = Table::default();
    t.add_mrouter(7, 0);
    assert!(!t.add_group(mapped4("239.0.0.1"), 7, 1));
    assert!(t.groups().is_empty());
    assert_eq!(t.mrouters(), BTreeSet::from([7]));
    assert!(!t.run(179));
    assert_eq!(t.mrouters(), BTreeSet::from([7]));
    assert!(t.run(180));
    assert!(t.mrouters().is_empty());
}

fn cfg(querier: bool) -> Config {
    let row = IpMulticast {
        enabled: Some(true),
        querier: Some(querier),
        eth_src: "0a:00:00:00:00:01".into(),
        ip4_src: "10.0.0.254".into(),
        ip6_src: "fe80::1".into(),
        table_size: Some(2048),
        idle_timeout: Some(300),
        query_interval: Some(150),
        query_max_resp: Some(1),
        ..IpMulticast::default()
    };
    config(&row).0
}

#[test]
fn row_defaults_and_querier_addresses() {
    let (c, warn) = config(&IpMulticast {
        enabled: Some(true),
        idle_timeout: Some(40),
        ..IpMulticast::default()
    });
    assert!(warn.is_none());
    assert_eq!(
        (
            c.table_size,
            c.idle_time_s,
            c.query_interval_s,
            c.query_max_resp_s
        ),
        (2048, 40, 20, 1)
    );
    assert!(!c.querier_v4 && !c.querier_v6);
    let (c, _) = config(&IpMulticast {
        enabled: Some(true),
        querier: Some(true),
        eth_src: "0a:00:00:00:00:01".into(),
        ip4_src: "10.0.0.254".into(),
        ..IpMulticast::default()
    });
    assert!(c.querier_v4 && !c.querier_v6);
    let (c, warn) = config(&IpMulticast {
        enabled: Some(true),
        querier: Some(true),
        eth_src: "bogus".into(),
        ip4_src: "10.0.0.254".into(),
        ..IpMulticast::default()
    });
    assert!(!c.querier_v4 && warn.is_some());
    let (c, _) = config(&IpMulticast {
        enabled: Some(false),
        querier: Some(true),
        ..IpMulticast::default()
    });
    assert!(!c.enabled && !c.querier_v4);
}

#[test]
fn querier_schedule_on_virtual_time() {
    let mut s = Snooping::new();
    s.configure(&BTreeMap::from([(1, cfg(true)), (2, cfg(false))]), 1000);
    assert_eq!(s.next_query(), Some(0), "a new querier sends at once");
    let sent = s.queries(1000, 40);
    assert_eq!(sent.len(), 2, "IGMP and MLD");
    assert_eq!(s.next_query(), Some(151_000));
    assert!(s.queries(150_999, 40).is_empty());
    assert_eq!(s.queries(151_000, 40).len(), 2);
    // A shorter interval pulls the next query in.
    let mut c = cfg(true);
    c.query_interval_s = 10;
    s.configure(&BTreeMap::from([(1, c.clone()), (2, cfg(false))]), 160_000);
    assert_eq!(s.next_query(), Some(160_000));
    s.queries(160_000, 40);
    assert_eq!(s.next_query(), Some(170_000));
    // Querier off: nothing due.
    s.configure(&BTreeMap::from([(1, cfg(false))]), 170_000);
    assert_eq!(s.next_query(), None);
    assert!(s.queries(1_000_000, 40).is_empty());
    let acts: Vec<String> = {
        let mut s = Snooping::new();
        s.configure(&BTreeMap::from([(5, cfg(true))]), 0);
        s.queries(0, 40)[0]
            .actions
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(
        acts,
        [
            "set_field:0x5->metadata",
            "set_field:0x8000->reg15",
            "set_field:0x10/0x10->reg10",
            "resubmit(CONTROLLER,40)"
        ]
    );
}

#[test]
fn query_frames_golden_bytes() {
    let mac = [0x0a, 0, 0, 0, 0, 1];
    // IGMPv3 general query, max response 1 s (10 tenths), QQIC 10, TTL 1, DF.
    assert_eq!(
        packet::hex(&igmp_query(mac, Ipv4Addr::new(10, 0, 0, 254), 1)),
        "01005e0000010a00000000010800\
         450000200000400001028edd0a0000fee0000001\
         110aeeeb00000000000a0000"
    );
    let f = mld_query(mac, "fe80::1".parse().expect("ip"), 1);
    assert_eq!(
        packet::hex(&f[..14 + 40 + 8]),
        "3333000000010a000000000186dd\
         6000000000240001fe800000000000000000000000000001ff020000000000000000000000000001\
         3a00050200000000"
    );
    let mld = &f[14 + 48..];
    assert_eq!(mld.len(), 28);
    assert_eq!(&mld[..2], [130, 0]);
    assert_eq!(&mld[4..6], 1000u16.to_be_bytes());
    assert_eq!(mld[25], 1);
    let src: Ipv6Addr = "fe80::1".parse().expect("ip");
    let dst: Ipv6Addr = "ff02::1".parse().expect("ip");
    let pseudo = sum16(&src.octets(), 0) + sum16(&dst.octets(), 0) + 28 + 58;
    assert_eq!(csum(mld, pseudo), 0, "checksum");
    // What it parses back to.
    assert_eq!(
        parsed(&f),
        Ok(Message::Query {
            learn_mrouter: true
        })
    );
}

#[test]
fn seq_no_flushes_and_disabling_forgets() {
    let mut s = Snooping::new();
    let c = cfg(false);
    s.configure(&BTreeMap::from([(1, c.clone())]), 0);
    assert!(s.changed().is_some(), "the first state is reported");
    assert!(s.changed().is_none());
    let join = Message::Report(vec![Record::Join(v4("239.0.0.1"))]);
    assert!(s.on_message(1, 2, &join, 0));
    assert!(!s.on_message(9, 2, &join, 0), "not a snooping datapath");
    let snap = s.changed().expect("changed");
    assert_eq!(snap.datapaths[&1].groups["239.0.0.1"], BTreeSet::from([2]));
    // Refreshing changes nothing to write.
    s.on_message(1, 2, &join, 1000);
    assert!(s.changed().is_none());
    let mut flushed = c.clone();
    flushed.seq_no += 1;
    s.configure(&BTreeMap::from([(1, flushed.clone())]), 2000);
    assert!(s.changed().expect("flushed").datapaths[&1]
        .groups
        .is_empty());
    let mut off = flushed;
    off.enabled = false;
    s.configure(&BTreeMap::from([(1, off)]), 3000);
    assert!(!s.enabled(1));
    assert!(!s.changed().expect("disabled").datapaths[&1].enabled);
    // Ageing on virtual time (idle 300 s).
    s.configure(&BTreeMap::from([(1, c)]), 4000);
    s.on_message(1, 3, &join, 4000);
    assert!(s.changed().is_some());
    s.run(303_999);
    assert!(s.changed().is_none(), "nothing aged yet");
    assert_eq!(s.group_count(), 1);
    s.run(304_000);
    assert_eq!(s.group_count(), 0);
    assert!(s.changed().expect("aged").datapaths[&1].groups.is_empty());
}

const DP: &str = "00000000-0000-4000-8000-0000000000d1";
const CH: &str = "00000000-0000-4000-8000-0000000000c1";
const OTHER_CH: &str = "00000000-0000-4000-8000-0000000000c2";

fn uuid(s: &str) -> Uuid {
    s.parse().expect("uuid")
}

fn southbound(groups: &str) -> crate::southbound::Southbound {
    let mut sb = crate::southbound::Southbound::default();
    let text = format!(
        r#"{{"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key"],"data":[[["uuid","{DP}"],1]]}}
           {{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key"],"data":[
             [["uuid","00000000-0000-4000-8000-0000000000a1"],"vm1",["uuid","{DP}"],1],
             [["uuid","00000000-0000-4000-8000-0000000000a2"],"vm2",["uuid","{DP}"],2]]}}
           {{"caption":"IGMP_Group table","headings":["_uuid","address","datapath","chassis","ports"],"data":[{groups}]}}"#
    );
    sb.load_json(&text).expect("loads");
    sb
}

fn snapshot(groups: &[(&str, &[u32])], enabled: bool) -> Snapshot {
    Snapshot {
        datapaths: BTreeMap::from([(
            1,
            DatapathGroups {
                enabled,
                groups: groups
                    .iter()
                    .map(|(a, p)| ((*a).to_owned(), p.iter().copied().collect()))
                    .collect(),
                mrouters: BTreeSet::new(),
            },
        )]),
    }
}

fn ops(sb: &crate::southbound::Southbound, snap: &Snapshot) -> String {
    let mut txn = Transaction::new(sbclient::ovn_sb::DATABASE);
    sync(&sb.replica, uuid(CH), |_| true, snap, &mut txn);
    txn.to_params().to_string()
}

#[test]
fn igmp_group_rows_follow_the_tables() {
    // Nothing yet: the group and the mrouters row are inserted.
    let sb = southbound("");
    let o = ops(&sb, &snapshot(&[("239.0.0.1", &[1, 2])], true));
    assert_eq!(o.matches("\"insert\"").count(), 2, "{o}");
    assert!(o.contains("\"address\":\"239.0.0.1\""), "{o}");
    assert!(o.contains("\"address\":\"mrouters\""), "{o}");
    assert!(
        o.contains("0000000000a1") && o.contains("0000000000a2"),
        "{o}"
    );
    // The rows are there: a port left (update), a stale group goes, another chassis'
    // row stays.
    let sb = southbound(&format!(
        r#"[["uuid","00000000-0000-4000-8000-0000000000e1"],"239.0.0.1",["uuid","{DP}"],["uuid","{CH}"],["set",[["uuid","00000000-0000-4000-8000-0000000000a1"],["uuid","00000000-0000-4000-8000-0000000000a2"]]]],
           [["uuid","00000000-0000-4000-8000-0000000000e2"],"239.0.0.9",["uuid","{DP}"],["uuid","{CH}"],["uuid","00000000-0000-4000-8000-0000000000a1"]],
           [["uuid","00000000-0000-4000-8000-0000000000e3"],"mrouters",["uuid","{DP}"],["uuid","{CH}"],["set",[]]],
           [["uuid","00000000-0000-4000-8000-0000000000e4"],"239.0.0.9",["uuid","{DP}"],["uuid","{OTHER_CH}"],["set",[]]]"#
    ));
    let o = ops(&sb, &snapshot(&[("239.0.0.1", &[2])], true));
    assert_eq!(o.matches("\"insert\"").count(), 0, "{o}");
    assert_eq!(o.matches("\"update\"").count(), 1, "{o}");
    assert_eq!(o.matches("\"delete\"").count(), 1, "{o}");
    assert!(
        o.contains("0000000000e2") && !o.contains("0000000000e4"),
        "{o}"
    );
    // In sync: nothing to do.
    let o = ops(
        &sb,
        &snapshot(&[("239.0.0.1", &[1, 2]), ("239.0.0.9", &[1])], true),
    );
    assert_eq!(o, "[\"OVN_Southbound\"]");
    // Snooping off: every row of ours goes, the mrouters one too.
    let o = ops(&sb, &snapshot(&[], false));
    assert_eq!(o.matches("\"delete\"").count(), 3, "{o}");
}

#[test]
fn handler_turns_the_packet_in_into_a_message() {
    use crate::pinctrl::handlers::{handle, opcode, Context, Effect};
    use openflow::oxm::Match;
    use openflow::wire::{PacketIn2, PacketInProp};
    let frame = igmp_frame(Ipv4Addr::new(239, 0, 0, 1), unhex("1600 0000 ef000001"));
    let mut md = Match::new();
    md.push(FieldId::reg(14), 2u32.to_be_bytes().to_vec(), None);
    md.push(FieldId::METADATA, 1u64.to_be_bytes().to_vec(), None);
    let mut ud = opcode::IGMP.to_be_bytes().to_vec();
    ud.extend_from_slice(&[0; 4]);
    let pi = |packet: Vec<u8>| PacketIn2 {
        props: vec![
            PacketInProp::Packet(packet),
            PacketInProp::Reason(1),
            PacketInProp::Metadata(md.clone()),
            PacketInProp::Userdata(ud.clone()),
        ],
    };
    let cx = Context {
        output_entry_table: 37,
        egress_table: 42,
    };
    let effects = handle(&pi(frame.clone()), &cx).expect("handled");
    let [Effect::Igmp(r)] = effects.as_slice() else {
        panic!("{effects:?}");
    };
    assert_eq!((r.datapath, r.port), (1, 2));
    assert_eq!(
        r.message,
        Message::Report(vec![Record::Join(v4("239.0.0.1"))])
    );
    let fwd = forward(r.datapath, r.port, MROUTER_FLOOD_KEY, r.packet.clone(), 37);
    let acts: Vec<String> = fwd.actions.iter().map(ToString::to_string).collect();
    assert_eq!(
        acts,
        [
            "set_field:0x1->metadata",
            "set_field:0x2->reg14",
            "set_field:0x8002->reg15",
            "resubmit(CONTROLLER,37)"
        ]
    );
    let mut bad = frame;
    bad[40] ^= 0xff;
    let effects = handle(&pi(bad), &cx).expect("counted, skipped");
    assert!(
        matches!(effects.as_slice(), [Effect::Rejected(_)]),
        "{effects:?}"
    );
    assert!(handle(&pi(unhex("ffffffffffff 505400000001 0806 0001")), &cx).is_err());
}

proptest! {
    /// No input crashes the parser; whatever it reads back from a well-formed IGMPv3
    /// report is the records it was given.
    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut frame = unhex("01005e000016 505400000001 0800 4600");
        frame.extend_from_slice(&bytes);
        if let Ok(h) = packet::parse(&frame) {
            let _ = parse(&frame, &h);
        }
        let mut frame6 = unhex("333300000016 505400000001 86dd");
        frame6.extend_from_slice(&bytes);
        if let Ok(h) = packet::parse(&frame6) {
            let _ = parse(&frame6, &h);
        }
        let _ = parse_igmp(&bytes);
        let _ = parse_mld(&bytes, Ipv6Addr::LOCALHOST);
    }

    #[test]
    fn igmpv3_records_round_trip(records in proptest::collection::vec((1u8..=6, any::<[u8; 4]>(), 0u16..3), 0..8)) {
        let mut body = vec![0x22, 0, 0, 0, 0, 0];
        body.extend_from_slice(&(records.len() as u16).to_be_bytes());
        let mut want = Vec::new();
        for (kind, group, nsrcs) in &records {
            body.extend_from_slice(&[*kind, 0]);
            body.extend_from_slice(&nsrcs.to_be_bytes());
            body.extend_from_slice(group);
            for _ in 0..*nsrcs {
                body.extend_from_slice(&[10, 0, 0, 1]);
            }
            let g = IpAddr::V4(Ipv4Addr::from(*group));
            want.push(if *nsrcs == 0 && (*kind == 1 || *kind == 3) {
                Record::Leave(g)
            } else {
                Record::Join(g)
            });
        }
        let frame = igmp_frame(Ipv4Addr::new(224, 0, 0, 22), body);
        prop_assert_eq!(parsed(&frame), Ok(Message::Report(want)));
    }
}
