//! Message layouts against the real decoder: every message kind we encode is decoded by
//! `ovs-ofctl ofp-parse` without error, and prints the values we put in.

mod common;

use common::ofp_parse;
use openflow::action::Action;
use openflow::oxm::{FieldId, Match};
use openflow::text::Flow;
use openflow::wire::bundle::{OFPBCT_OPEN_REQUEST, OFPBF_ATOMIC, OFPBF_ORDERED};
use openflow::wire::group_mod::{OFPGC_ADD, OFPGT_INDIRECT};
use openflow::wire::meter_mod::{OFPMBT_DROP, OFPMF_BURST, OFPMF_KBPS, OFPMF_STATS};
use openflow::wire::*;

fn in_port(p: u32) -> Match {
    let mut m = Match::new();
    m.push(
        FieldId::by_name("in_port_oxm").unwrap(),
        p.to_be_bytes().to_vec(),
        None,
    );
    m
}

/// (message, substrings that ovs-ofctl's text for it must contain)
fn cases() -> Vec<(Message, Vec<&'static str>)> {
    let flow: Flow = "table=1,priority=5,ip actions=drop".parse().unwrap();
    let mut md = in_port(3);
    md.push(FieldId::by_name("reg0").unwrap(), vec![0, 0, 0, 9], None);
    md.push(
        FieldId::by_name("metadata").unwrap(),
        vec![0, 0, 0, 0, 0, 0, 0, 4],
        None,
    );
    let pkt = hex::decode(
        "ffffffffffff000000000001080600010800060400010000000000010a000001000000000000 0a000002"
            .replace(' ', ""),
    )
    .unwrap();
    vec![
        (Message::Hello(Hello::with_versions(&[6])), vec!["OFPT_HELLO", "version bitmap: 0x06"]),
        (Message::EchoRequest(Echo { data: vec![] }), vec!["OFPT_ECHO_REQUEST"]),
        (Message::FeaturesRequest(Empty), vec!["OFPT_FEATURES_REQUEST"]),
        (Message::GetConfigRequest(Empty), vec!["OFPT_GET_CONFIG_REQUEST"]),
        (Message::SetConfig(SwitchConfig { flags: 0, miss_send_len: 0xffff }), vec!["OFPT_SET_CONFIG", "miss_send_len=65535"]),
        (Message::BarrierRequest(Empty), vec!["OFPT_BARRIER_REQUEST"]),
        (Message::RoleRequest(RoleRequest { role: 2, generation_id: 7 }), vec!["OFPT_ROLE_REQUEST", "role=primary", "generation_id=7"]),
        (Message::SetPacketInFormat(SetPacketInFormat { format: 2 }), vec!["NXT_SET_PACKET_IN_FORMAT", "format=nxt_packet_in2"]),
        (Message::CtFlushZone(CtFlushZone { zone_id: 5 }), vec!["NXT_CT_FLUSH_ZONE", "zone_id=5"]),
        (
            // What ovn-controller sends for a load balancer's removed backend.
            Message::CtFlush(CtFlush {
                ip_proto: 17,
                orig: CtTuple {
                    dst: Some(std::net::Ipv4Addr::new(192, 168, 30, 10).to_ipv6_mapped()),
                    dst_port: Some(80),
                    ..CtTuple::default()
                },
                reply: CtTuple {
                    src: Some(std::net::Ipv4Addr::new(192, 168, 40, 10).to_ipv6_mapped()),
                    src_port: Some(8080),
                    ..CtTuple::default()
                },
                zone_id: None,
                unknown: Vec::new(),
            }),
            vec!["NXT_CT_FLUSH", "ct_nw_dst=192.168.30.10,ct_tp_src=0,ct_tp_dst=80,ct_nw_proto=17", "ct_nw_src=192.168.40.10,ct_nw_dst=::,ct_tp_src=8080,ct_tp_dst=0"],
        ),
        (Message::TlvTableRequest(Empty), vec!["NXT_TLV_TABLE_REQUEST"]),
        (
            Message::TlvTableMod(TlvTableMod {
                command: 0,
                mappings: vec![TlvMap { option_class: 0x102, option_type: 0x80, option_len: 4, index: 0 }],
            }),
            vec!["NXT_TLV_TABLE_MOD", "ADD mapping table", "0x102  0x80       4  tun_metadata0"],
        ),
        (
            Message::MeterMod(MeterMod {
                command: 0,
                flags: OFPMF_KBPS | OFPMF_BURST | OFPMF_STATS,
                meter_id: 4,
                bands: vec![MeterBand { band_type: OFPMBT_DROP, rate: 2000, burst_size: 100, extra: [0; 4] }],
            }),
            vec!["OFPT_METER_MOD", "ADD meter=4 kbps burst stats bands=", "type=drop rate=2000 burst_size=100"],
        ),
        (
            Message::GroupMod(GroupMod {
                command: OFPGC_ADD,
                command_bucket_id: 0xffff_ffff,
                group: "group_id=6,type=ff,bucket=bucket_id:0,watch_port:5,actions=output:5,bucket=bucket_id:1,watch_port:6,actions=output:6".parse().unwrap(),
            }),
            vec!["OFPT_GROUP_MOD", "group_id=6,type=ff", "watch_port:5", "watch_port:6"],
        ),
        (
            Message::GroupMod(GroupMod {
                command: OFPGC_ADD,
                command_bucket_id: 0xffff_ffff,
                group: Group { group_id: 7, group_type: OFPGT_INDIRECT, buckets: vec![Bucket { bucket_id: 0, actions: vec![Action::Group(6)], ..Bucket::default() }], ..Group::default() },
            }),
            vec!["group_id=7,type=indirect,bucket=bucket_id:0,actions=group:6"],
        ),
        (
            Message::PacketOut(PacketOut {
                buffer_id: u32::MAX,
                r#match: in_port(0xffff_fffd),
                actions: vec![Action::Resubmit { in_port: 0xfff8, table: 8, ct: false }],
                data: pkt.clone(),
            }),
            vec!["OFPT_PACKET_OUT", "in_port=CONTROLLER", "actions=resubmit(,8)", "arp"],
        ),
        (
            Message::PacketIn2(PacketIn2 {
                props: vec![
                    PacketInProp::Packet(pkt.clone()),
                    PacketInProp::FullLen(pkt.len() as u32),
                    PacketInProp::TableId(9),
                    PacketInProp::Cookie(0xabcdef),
                    PacketInProp::Reason(1),
                    PacketInProp::Metadata(md.clone()),
                    PacketInProp::Userdata(vec![0, 0, 0, 0x10, 1, 2]),
                ],
            }),
            vec!["NXT_PACKET_IN2", "table_id=9", "cookie=0xabcdef", "reg0=0x9", "metadata=0x4", "in_port=3", "userdata=00.00.00.10.01.02", "(via action)", "arp"],
        ),
        (
            Message::Resume(PacketIn2 {
                props: vec![
                    PacketInProp::Packet(pkt),
                    PacketInProp::Metadata(md),
                ],
            }),
            vec!["NXT_RESUME", "in_port=3"],
        ),
        (
            Message::BundleControl(BundleControl { bundle_id: 3, ctrl_type: OFPBCT_OPEN_REQUEST, flags: OFPBF_ATOMIC | OFPBF_ORDERED, properties: vec![] }),
            vec!["OFPT_BUNDLE_CONTROL", "bundle_id=0x3", "type=OPEN_REQUEST", "flags=atomic ordered"],
        ),
        (
            Message::BundleAddMessage(BundleAddMessage {
                bundle_id: 3,
                flags: OFPBF_ATOMIC,
                message: OfpMessage::new(0x77, Message::FlowMod(flow.add())).to_bytes().unwrap(),
                properties: vec![],
            }),
            vec!["OFPT_BUNDLE_ADD_MESSAGE", "bundle_id=0x3 flags=atomic"],
        ),
        (
            Message::MultipartRequest(MultipartRequest { flags: 0, body: MultipartRequestBody::FlowDesc(FlowStatsRequest::default()) }),
            vec!["OFPST_FLOW request"],
        ),
        (
            Message::MultipartRequest(MultipartRequest { flags: 0, body: MultipartRequestBody::GroupDesc(0xffff_fffc) }),
            vec!["OFPST_GROUP_DESC request", "group_id=ALL"],
        ),
        (
            Message::MultipartRequest(MultipartRequest { flags: 0, body: MultipartRequestBody::MeterDesc(0xffff_ffff) }),
            vec!["OFPST_METER_CONFIG request", "meter=all"],
        ),
        (
            Message::MultipartRequest(MultipartRequest { flags: 0, body: MultipartRequestBody::MeterFeatures }),
            vec!["OFPST_METER_FEATURES request"],
        ),
        (
            Message::MultipartReply(MultipartReply {
                flags: 0,
                body: MultipartReplyBody::MeterFeatures(MeterFeatures { max_meter: 200_000, band_types: 2, capabilities: 0xf, max_bands: 1, max_color: 0 }),
            }),
            vec!["OFPST_METER_FEATURES reply", "max_meter:200000", "max_bands:1"],
        ),
        (
            Message::Error(ErrorMsg { code: ErrorCode::Standard { ty: 4, code: 9 }, data: OfpMessage::new(5, Message::BarrierRequest(Empty)).to_bytes().unwrap() }),
            vec!["OFPT_ERROR", "OFPBMC_BAD_PREREQ"],
        ),
    ]
}

#[test]
fn every_message_kind_decodes_in_ovs() {
    let cases = cases();
    let msgs: Vec<OfpMessage> = cases
        .iter()
        .enumerate()
        .map(|(i, (m, _))| {
            let xid = i as u32 + 1;
            let mut m = m.clone();
            // A bundled message must carry the xid of the add message.
            if let Message::BundleAddMessage(b) = &mut m {
                let mut inner = OfpMessage::decode(&b.message).unwrap();
                inner.xid = xid;
                b.message = inner.to_bytes().unwrap();
            }
            OfpMessage::new(xid, m)
        })
        .collect();
    // Bundle add embeds a message: ofp-parse prints it inside the same block.
    let blocks = ofp_parse(&msgs);
    let mut bad = Vec::new();
    for (i, (m, want)) in cases.iter().enumerate() {
        let Some(block) = blocks
            .iter()
            .find(|b| b.contains(&format!("(xid={:#x})", i + 1)))
        else {
            bad.push(format!("\n{:?}: no output", m.kind()));
            continue;
        };
        if block.contains("decode error") {
            bad.push(format!("\n{:?}: {block}", m.kind()));
            continue;
        }
        for w in want {
            if !block.contains(w) {
                bad.push(format!("\n{:?}: missing `{w}` in:\n{block}", m.kind()));
            }
        }
    }
    // The bundled flow_mod is printed right after its bundle_add, with the same xid.
    let bundled = cases
        .iter()
        .position(|(m, _)| matches!(m, Message::BundleAddMessage(_)))
        .unwrap();
    let want = format!(
        "OFPT_FLOW_MOD (OF1.5) (xid={:#x}): ADD table:1 priority=5,ip",
        bundled + 1
    );
    assert!(blocks.iter().any(|b| b.contains(&want)), "no `{want}`");
    assert!(bad.is_empty(), "{}", bad.concat());
}

#[test]
fn meters_in_add_meter_syntax_print_like_ovs() {
    let texts = [
        "meter=1,pktps,bands=type=drop,rate=100",
        "meter=2,kbps,burst,stats,bands=type=drop,rate=2000,burst_size=1000",
        "meter=5,kbps,bands=type=drop,rate=10 type=dscp_remark,rate=20,prec_level=1",
    ];
    let mods: Vec<MeterMod> = texts.iter().map(|t| t.parse().unwrap()).collect();
    let msgs: Vec<OfpMessage> = mods
        .iter()
        .enumerate()
        .map(|(i, m)| OfpMessage::new(i as u32 + 1, Message::MeterMod(m.clone())))
        .collect();
    let blocks = ofp_parse(&msgs);
    assert_eq!(blocks.len(), mods.len());
    for (m, block) in mods.iter().zip(&blocks) {
        let got = block
            .split_once(": ADD ")
            .map_or(block.as_str(), |(_, b)| b);
        assert_eq!(got, m.to_string());
    }
}
