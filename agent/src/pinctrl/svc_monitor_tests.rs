//! The health check state machine on virtual time, and its packets byte by byte.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use openflow::oxm::{FieldId, Match};
use openflow::wire::{PacketIn2, PacketInProp};

use super::*;
use crate::pinctrl::handlers::{handle, opcode, Context, Effect};

const BACKEND: [u8; 6] = [0x50, 0x54, 0, 0, 0, 1];
const SVC_MAC: [u8; 6] = [0x0a, 0x58, 0x0a, 0, 0, 0xfe];
const LOCAL_OUTPUT: u8 = 33;

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

fn row(protocol: Protocol) -> MonitorRow {
    MonitorRow {
        uuid: "00000000-0000-4000-8000-0000000000e1"
            .parse()
            .expect("uuid"),
        datapath: 1,
        port_key: 2,
        ip: ip("10.0.0.1"),
        service_port: 80,
        protocol,
        dst_mac: BACKEND,
        src_mac: SVC_MAC,
        src_ip: ip("10.0.0.254"),
        interval: Duration::from_secs(5),
        timeout: Duration::from_secs(3),
        success_count: 1,
        failure_count: 1,
        status: None,
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn checksum_ok(data: &[u8], pseudo: u32) -> bool {
    fold(sum16(data, pseudo)) == 0
}

/// (source port, sequence number) of a TCP probe, after checking its headers.
fn syn_of(po: &PacketOut) -> (u16, u32) {
    let d = &po.data;
    assert_eq!(d.len(), 14 + 20 + 20);
    assert_eq!(&d[0..6], &BACKEND);
    assert_eq!(&d[6..12], &SVC_MAC);
    assert_eq!(be16(d, 12), 0x0800);
    // IPv4: TOS 0, length 40, ID 0, DF, TTL 63, TCP, header checksum.
    assert_eq!(&d[14..16], &[0x45, 0]);
    assert_eq!(be16(d, 16), 40);
    assert_eq!(&d[18..22], &[0, 0, 0x40, 0]);
    assert_eq!((d[22], d[23]), (63, 6));
    assert!(checksum_ok(&d[14..34], 0));
    assert_eq!(&d[26..30], &[10, 0, 0, 254]);
    assert_eq!(&d[30..34], &[10, 0, 0, 1]);
    let t = &d[34..];
    assert_eq!(be16(t, 2), 80);
    assert_eq!(be16(t, 12), 0x5002, "data offset 5, SYN");
    assert_eq!(be16(t, 14), 65160);
    let pseudo = sum16(&d[26..34], 0) + 6 + 20;
    assert!(checksum_ok(t, pseudo), "TCP checksum");
    assert!(be16(t, 0) >= 1024);
    (be16(t, 0), be32(t, 4))
}

fn actions_text(po: &PacketOut) -> Vec<String> {
    po.actions.iter().map(ToString::to_string).collect()
}

fn synack(src_port: u16, seq: u32, flags: u16) -> Reply {
    Reply::Tcp {
        datapath: 1,
        port_key: 2,
        ip: ip("10.0.0.1"),
        src_port: 80,
        dst_port: src_port,
        seq: 7000,
        ack: seq.wrapping_add(1),
        flags,
    }
}

#[test]
fn a_tcp_backend_that_answers_goes_online_and_gets_a_reset() {
    let t0 = Instant::now();
    let mut m = Monitors::new(42);
    m.sync(&[row(Protocol::Tcp)], t0);
    let probes = m.run(t0, LOCAL_OUTPUT);
    assert_eq!(probes.len(), 1);
    assert_eq!(
        actions_text(&probes[0]),
        [
            "set_field:0x1->metadata",
            "set_field:0x2->reg15",
            "set_field:0x10/0x10->reg10",
            "resubmit(CONTROLLER,33)"
        ]
    );
    let (port, seq) = syn_of(&probes[0]);
    assert!(m.run(t0 + Duration::from_secs(1), LOCAL_OUTPUT).is_empty());
    // A reply to another probe (wrong port or ack) is ignored.
    let t1 = t0 + Duration::from_secs(1);
    assert!(m
        .on_reply(&synack(port ^ 1, seq, 0x12), t1, LOCAL_OUTPUT)
        .expect("known")
        .is_empty());
    assert!(m
        .on_reply(&synack(port, seq ^ 1, 0x12), t1, LOCAL_OUTPUT)
        .expect("known")
        .is_empty());
    let rst = m
        .on_reply(&synack(port, seq, 0x12), t1, LOCAL_OUTPUT)
        .expect("known");
    assert_eq!(rst.len(), 1);
    let t = &rst[0].data[34..];
    assert_eq!(be16(t, 0), port);
    assert_eq!(be16(t, 12), 0x5014, "RST+ACK");
    assert_eq!(
        be32(t, 4),
        seq.wrapping_add(2),
        "the acknowledged number plus one"
    );
    assert_eq!(be32(t, 8), 7001);
    assert!(
        m.statuses().is_empty(),
        "the status changes on the next run"
    );
    assert!(m.run(t1, LOCAL_OUTPUT).is_empty());
    let s = m.statuses();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].status, Status::Online);
    assert!(m.statuses().is_empty(), "handed once");
    // The next probe after the interval.
    assert!(m
        .run(t1 + Duration::from_millis(4990), LOCAL_OUTPUT)
        .is_empty());
    let next = m.run(t1 + Duration::from_secs(5), LOCAL_OUTPUT);
    assert_eq!(next.len(), 1);
    let (_, seq2) = syn_of(&next[0]);
    assert_ne!(seq2, seq, "a new sequence number per probe");
}

#[test]
fn a_silent_tcp_backend_goes_offline_after_the_timeout() {
    let t0 = Instant::now();
    let mut m = Monitors::new(7);
    m.sync(&[row(Protocol::Tcp)], t0);
    assert_eq!(m.run(t0, LOCAL_OUTPUT).len(), 1);
    assert!(m.run(t0 + Duration::from_secs(3), LOCAL_OUTPUT).is_empty());
    assert!(
        m.statuses().is_empty(),
        "not timed out at exactly the timeout"
    );
    m.run(t0 + Duration::from_millis(3001), LOCAL_OUTPUT);
    m.run(t0 + Duration::from_millis(3002), LOCAL_OUTPUT);
    let s = m.statuses();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].status, Status::Offline);
}

#[test]
fn a_reset_is_a_failure_and_counts_need_several() {
    let t0 = Instant::now();
    let mut r = row(Protocol::Tcp);
    r.failure_count = 2;
    let mut m = Monitors::new(9);
    m.sync(&[r], t0);
    let (port, seq) = syn_of(&m.run(t0, LOCAL_OUTPUT)[0]);
    assert!(m
        .on_reply(&synack(port, seq, 0x14), t0, LOCAL_OUTPUT)
        .expect("known")
        .is_empty());
    m.run(t0, LOCAL_OUTPUT);
    assert!(m.statuses().is_empty(), "one failure of two");
    let later = t0 + Duration::from_secs(5);
    let (port, seq) = syn_of(&m.run(later, LOCAL_OUTPUT)[0]);
    m.on_reply(&synack(port, seq, 0x14), later, LOCAL_OUTPUT)
        .expect("known");
    m.run(later, LOCAL_OUTPUT);
    assert_eq!(m.statuses()[0].status, Status::Offline);
}

#[test]
fn udp_is_online_without_an_answer_and_offline_on_port_unreachable() {
    let t0 = Instant::now();
    let mut m = Monitors::new(3);
    m.sync(&[row(Protocol::Udp)], t0);
    let p = m.run(t0, LOCAL_OUTPUT);
    let d = &p[0].data;
    assert_eq!(d.len(), 14 + 20 + 16);
    assert_eq!(d[23], 17);
    let udp = &d[34..];
    assert_eq!((be16(udp, 2), be16(udp, 4), be16(udp, 6)), (80, 16, 0));
    assert_eq!(&udp[8..], &[0; 8]);
    let src = be16(udp, 0);
    m.run(t0 + Duration::from_millis(3001), LOCAL_OUTPUT);
    m.run(t0 + Duration::from_millis(3002), LOCAL_OUTPUT);
    assert_eq!(m.statuses()[0].status, Status::Online);
    let t1 = t0 + Duration::from_secs(9);
    let p2 = m.run(t1, LOCAL_OUTPUT);
    assert_eq!(be16(&p2[0].data[34..], 0), src, "UDP keeps its source port");
    let unreachable = |udp_src| Reply::Unreachable {
        datapath: 1,
        port_key: 2,
        ip: ip("10.0.0.1"),
        udp_src,
        udp_dst: 80,
    };
    assert!(m.on_reply(&unreachable(src ^ 1), t1, LOCAL_OUTPUT).is_err());
    m.on_reply(&unreachable(src), t1, LOCAL_OUTPUT)
        .expect("matches");
    m.run(t1, LOCAL_OUTPUT);
    assert_eq!(m.statuses()[0].status, Status::Offline);
}

#[test]
fn rows_come_and_go_and_a_lost_status_is_written_again() {
    let t0 = Instant::now();
    let mut m = Monitors::new(5);
    m.sync(&[row(Protocol::Tcp)], t0);
    m.run(t0, LOCAL_OUTPUT);
    m.run(t0 + Duration::from_secs(4), LOCAL_OUTPUT);
    m.run(t0 + Duration::from_secs(4), LOCAL_OUTPUT);
    assert_eq!(m.statuses().len(), 1);
    // The row still says nothing (the write is under way, or someone cleared it).
    m.sync(&[row(Protocol::Tcp)], t0);
    assert_eq!(m.statuses().len(), 1, "written again");
    let mut written = row(Protocol::Tcp);
    written.status = Some("offline".into());
    m.sync(&[written], t0);
    assert!(m.statuses().is_empty());
    m.sync(&[], t0);
    assert!(m.is_empty());
    assert!(m.run(t0 + Duration::from_secs(59), LOCAL_OUTPUT).is_empty());
}

#[test]
fn an_ipv6_probe_has_a_valid_checksum() {
    let mut r = row(Protocol::Udp);
    r.ip = ip("fd00::1");
    r.src_ip = ip("fd00::fe");
    let mut m = Monitors::new(11);
    let t0 = Instant::now();
    m.sync(&[r], t0);
    let d = m.run(t0, LOCAL_OUTPUT).remove(0).data;
    assert_eq!(be16(&d, 12), 0x86dd);
    assert_eq!((d[20], d[21]), (17, 63));
    let pseudo = sum16(&d[22..54], 0) + 17 + 16;
    assert!(checksum_ok(&d[54..], pseudo));
}

#[test]
fn rows_are_those_of_ports_bound_here_with_the_backend_mac_and_options() {
    const DP: &str = "00000000-0000-4000-8000-0000000000d1";
    const ME: &str = "00000000-0000-4000-8000-0000000000c1";
    let mut sb = crate::southbound::Southbound::default();
    sb.load_json(&format!(
        r#"{{"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key"],"data":[[["uuid","{DP}"],1]]}}
           {{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","chassis","mac"],"data":[
             [["uuid","00000000-0000-4000-8000-0000000000a1"],"vm1",["uuid","{DP}"],2,["uuid","{ME}"],["set",["50:54:00:00:00:09 10.0.0.9","50:54:00:00:00:01 10.0.0.1"]]],
             [["uuid","00000000-0000-4000-8000-0000000000a2"],"vm2",["uuid","{DP}"],3,["set",[]],"50:54:00:00:00:02 10.0.0.2"]]}}
           {{"caption":"Service_Monitor table","headings":["_uuid","logical_port","ip","port","protocol","src_mac","src_ip","options","status"],"data":[
             [["uuid","00000000-0000-4000-8000-0000000000e1"],"vm1","10.0.0.1",80,"tcp","0a:58:0a:00:00:fe","10.0.0.254",["map",[["interval","7"],["failure_count","bad"]]],"online"],
             [["uuid","00000000-0000-4000-8000-0000000000e2"],"vm2","10.0.0.2",80,"udp","0a:58:0a:00:00:fe","10.0.0.254",["map",[]],["set",[]]]]}}"#
    ))
    .expect("loads");
    let dps = sb.replica.table::<sbclient::ovn_sb::DatapathBinding>();
    let dp_key = |u: Uuid| u32::try_from(dps?.get(&u)?.tunnel_key).ok();
    let rows = rows(&sb.replica, Some(ME.parse().expect("uuid")), dp_key);
    assert_eq!(rows.len(), 1, "vm2 is not bound here: {rows:?}");
    let r = &rows[0];
    assert_eq!((r.datapath, r.port_key, r.service_port), (1, 2, 80));
    assert_eq!(
        r.dst_mac, BACKEND,
        "the address entry with the monitored IP"
    );
    assert_eq!(
        (r.interval, r.timeout),
        (Duration::from_secs(7), Duration::from_secs(3))
    );
    assert_eq!(
        (r.success_count, r.failure_count),
        (1, 1),
        "bad numbers read as the default"
    );
    assert_eq!(r.status.as_deref(), Some("online"));
    assert!(
        super::rows(&sb.replica, None, |_| Some(1)).is_empty(),
        "no chassis yet"
    );
    // Statuses: only a change is written.
    let write_ops = |s: Status| {
        let mut txn = Transaction::new(sbclient::ovn_sb::DATABASE);
        write(
            &sb.replica,
            &[StatusWrite {
                uuid: r.uuid,
                status: s,
            }],
            &mut txn,
        );
        txn.to_params().to_string()
    };
    assert!(!write_ops(Status::Online).contains("update"));
    assert!(write_ops(Status::Offline).contains("\"status\":\"offline\""));
}

fn svc_packet_in(packet: Vec<u8>) -> PacketIn2 {
    let mut md = Match::new();
    md.push(FieldId::reg(14), 2u32.to_be_bytes().to_vec(), None);
    md.push(FieldId::METADATA, 1u64.to_be_bytes().to_vec(), None);
    let mut userdata = opcode::HANDLE_SVC_CHECK.to_be_bytes().to_vec();
    userdata.extend_from_slice(&[0; 4]);
    PacketIn2 {
        props: vec![
            PacketInProp::Packet(packet),
            PacketInProp::Reason(1),
            PacketInProp::Metadata(md),
            PacketInProp::Userdata(userdata),
        ],
    }
}

const CX: Context = Context {
    output_entry_table: 37,
    egress_table: 42,
};

#[test]
fn the_handler_reads_a_syn_ack_and_an_icmp_port_unreachable() {
    let t0 = Instant::now();
    let mut m = Monitors::new(42);
    m.sync(&[row(Protocol::Tcp)], t0);
    let probe = m.run(t0, LOCAL_OUTPUT).remove(0).data;
    // The backend's answer: addresses and ports swapped, SYN+ACK.
    let mut reply = probe.clone();
    reply.copy_within(0..6, 6);
    reply[0..6].copy_from_slice(&SVC_MAC);
    reply[26..30].copy_from_slice(&[10, 0, 0, 1]);
    reply[30..34].copy_from_slice(&[10, 0, 0, 254]);
    let (sport, dport) = (be16(&probe, 34), be16(&probe, 36));
    let seq = be32(&probe, 38);
    reply[34..36].copy_from_slice(&dport.to_be_bytes());
    reply[36..38].copy_from_slice(&sport.to_be_bytes());
    reply[38..42].copy_from_slice(&99u32.to_be_bytes());
    reply[42..46].copy_from_slice(&seq.wrapping_add(1).to_be_bytes());
    reply[46..48].copy_from_slice(&0x5012u16.to_be_bytes());
    let effects = handle(&svc_packet_in(reply), &CX).expect("handled");
    let [Effect::SvcReply(r)] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    assert_eq!(m.on_reply(r, t0, LOCAL_OUTPUT).expect("found").len(), 1);

    // ICMP port unreachable from 10.0.0.1 quoting a 36-byte UDP probe 10.0.0.254:4000 -> :80.
    let mut icmp = probe[..34].to_vec();
    icmp[23] = 1;
    icmp[26..30].copy_from_slice(&[10, 0, 0, 1]);
    icmp[30..34].copy_from_slice(&[10, 0, 0, 254]);
    icmp.extend_from_slice(&[3, 3, 0, 0, 0, 0, 0, 0]);
    let mut quoted = vec![
        0x45, 0, 0, 36, 0, 0, 0x40, 0, 63, 17, 0, 0, 10, 0, 0, 254, 10, 0, 0, 1,
    ];
    quoted.extend_from_slice(&[0x0f, 0xa0, 0, 80, 0, 16, 0, 0]);
    icmp.extend_from_slice(&quoted);
    let effects = handle(&svc_packet_in(icmp.clone()), &CX).expect("handled");
    assert_eq!(
        effects,
        vec![Effect::SvcReply(Reply::Unreachable {
            datapath: 1,
            port_key: 2,
            ip: ip("10.0.0.1"),
            udp_src: 4000,
            udp_dst: 80,
        })]
    );
    // Another ICMP message: nothing to do. A wrong quoted length: skipped.
    let mut echo = icmp.clone();
    echo[34] = 0;
    assert_eq!(handle(&svc_packet_in(echo), &CX), Ok(vec![]));
    icmp[34 + 8 + 3] = 40;
    assert!(handle(&svc_packet_in(icmp), &CX).is_err());
}

proptest::proptest! {
    #[test]
    fn any_packet_to_handle_svc_check_is_read_or_skipped_without_panic(
        tail in proptest::collection::vec(proptest::num::u8::ANY, 0..120),
        proto in proptest::sample::select(vec![1u8, 6, 17, 58]),
        v6 in proptest::bool::ANY,
    ) {
        let mut pkt = vec![0u8; 12];
        pkt.extend_from_slice(if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
        if v6 {
            let mut h = vec![0x60, 0, 0, 0, 0, 40, proto, 64];
            h.extend_from_slice(&[0; 32]);
            pkt.extend_from_slice(&h);
        } else {
            pkt.extend_from_slice(&[0x45, 0, 0, 60, 0, 0, 0, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        }
        pkt.extend_from_slice(&tail);
        let mut m = Monitors::new(1);
        let t0 = Instant::now();
        m.sync(&[row(Protocol::Tcp), row(Protocol::Udp)], t0);
        m.run(t0, LOCAL_OUTPUT);
        if let Ok(effects) = handle(&svc_packet_in(pkt), &CX) {
            for e in effects {
                if let Effect::SvcReply(r) = e {
                    let _ = m.on_reply(&r, t0, LOCAL_OUTPUT);
                }
            }
        }
    }
}
