//! Round trips of every message body in the `messages!` table that the property tests do
//! not cover, with hand-checked layouts.

use openflow::action::Action;
use openflow::oxm::{FieldId, Match};
use openflow::text::Flow;
use openflow::wire::bundle::{OFPBCT_OPEN_REQUEST, OFPBF_ATOMIC};
use openflow::wire::meter_mod::{OFPMBT_DROP, OFPMF_PKTPS};
use openflow::wire::multipart::OFPMPF_MORE;
use openflow::wire::*;

fn rt(body: Message) -> Vec<u8> {
    let m = OfpMessage::new(0x1234, body);
    let bytes = m.to_bytes().unwrap();
    assert_eq!(frame_len(&bytes), Some(bytes.len()));
    assert_eq!(
        OfpMessage::decode(&bytes).unwrap(),
        m,
        "{:?}",
        m.body.kind()
    );
    // Every truncation is an error or a different message, never a panic.
    for n in 0..bytes.len() {
        let mut t = bytes[..n].to_vec();
        if n >= 4 {
            t[2..4].copy_from_slice(&(n as u16).to_be_bytes());
        }
        let _ = OfpMessage::decode(&t);
    }
    bytes
}

fn in_port(p: u32) -> Match {
    let mut m = Match::new();
    m.push(
        FieldId::by_name("in_port_oxm").unwrap(),
        p.to_be_bytes().to_vec(),
        None,
    );
    m
}

#[test]
fn meter_mod_layout() {
    let b = rt(Message::MeterMod(MeterMod {
        command: 0,
        flags: OFPMF_PKTPS,
        meter_id: 3,
        bands: vec![MeterBand {
            band_type: OFPMBT_DROP,
            rate: 100,
            burst_size: 0,
            extra: [0; 4],
        }],
    }));
    assert_eq!(
        hex::encode(&b[8..]),
        "0000000200000003000100100000006400000000".to_owned() + "00000000"
    );
}

#[test]
fn packet_out_with_pipeline_match() {
    let b = rt(Message::PacketOut(PacketOut {
        buffer_id: u32::MAX,
        r#match: in_port(0xffff_fffd),
        actions: vec![Action::Resubmit {
            in_port: 0xfff8,
            table: 8,
            ct: false,
        }],
        data: vec![0xaa; 14],
    }));
    // buffer_id, actions_len 16, then the OXM match with in_port=CONTROLLER.
    assert_eq!(hex::encode(&b[8..16]), "ffffffff00100000");
    assert_eq!(hex::encode(&b[16..28]), "0001000c80000004fffffffd");
}

#[test]
fn configs_features_role_port_status() {
    rt(Message::SetConfig(SwitchConfig {
        flags: 0,
        miss_send_len: 0xffff,
    }));
    rt(Message::GetConfigRequest(Empty));
    rt(Message::GetConfigReply(SwitchConfig {
        flags: 1,
        miss_send_len: 128,
    }));
    rt(Message::FeaturesRequest(Empty));
    rt(Message::RoleReply(RoleRequest {
        role: 2,
        generation_id: 0,
    }));
    rt(Message::PortStatus(PortStatus {
        reason: 2,
        port_no: 7,
        hw_addr: [0, 1, 2, 3, 4, 5],
        name: *b"vif7\0\0\0\0\0\0\0\0\0\0\0\0",
        config: 0,
        state: 4,
        properties: vec![0, 0, 0, 8, 0, 0, 0, 0],
    }));
    rt(Message::TlvTableRequest(Empty));
    rt(Message::TlvTableReply(TlvTableReply {
        max_option_space: 256,
        max_fields: 64,
        mappings: vec![TlvMap {
            option_class: 0x102,
            option_type: 0x80,
            option_len: 4,
            index: 0,
        }],
    }));
    rt(Message::Resume(PacketIn2 {
        props: vec![
            PacketInProp::Packet(vec![1; 60]),
            PacketInProp::Continuation(vec![0, 0x80, 0, 8, 0, 0, 0, 1]),
            PacketInProp::Unknown {
                ty: 99,
                body: vec![1, 2, 3, 4],
            },
        ],
    }));
}

#[test]
fn bundle_messages() {
    rt(Message::BundleControl(BundleControl {
        bundle_id: 9,
        ctrl_type: OFPBCT_OPEN_REQUEST,
        flags: OFPBF_ATOMIC,
        properties: vec![],
    }));
    let inner = OfpMessage::new(0x1234, Message::BarrierRequest(Empty))
        .to_bytes()
        .unwrap();
    rt(Message::BundleAddMessage(BundleAddMessage {
        bundle_id: 9,
        flags: OFPBF_ATOMIC,
        message: inner,
        properties: vec![],
    }));
}

#[test]
fn multipart_flow_group_meter_desc() {
    rt(Message::MultipartRequest(MultipartRequest {
        flags: 0,
        body: MultipartRequestBody::FlowDesc(FlowStatsRequest::default()),
    }));
    rt(Message::MultipartRequest(MultipartRequest {
        flags: 0,
        body: MultipartRequestBody::GroupDesc(0xffff_fffc),
    }));
    rt(Message::MultipartRequest(MultipartRequest {
        flags: 0,
        body: MultipartRequestBody::MeterDesc(0xffff_ffff),
    }));
    let f: Flow = "cookie=0x5, table=3, priority=7,ip,reg0=0x1 actions=resubmit(,4)"
        .parse()
        .unwrap();
    let fd = FlowDesc {
        table_id: f.table_id,
        priority: f.priority,
        cookie: f.cookie,
        r#match: f.r#match.clone(),
        stats: vec![0, 0, 0, 12, 0x80, 2, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0],
        instructions: f.instructions.clone(),
        ..FlowDesc::default()
    };
    rt(Message::MultipartReply(MultipartReply {
        flags: OFPMPF_MORE,
        body: MultipartReplyBody::FlowDesc(vec![fd.clone(), fd]),
    }));
    let g: Group = "group_id=3,type=all,bucket=bucket_id:0,actions=output:1"
        .parse()
        .unwrap();
    rt(Message::MultipartReply(MultipartReply {
        flags: 0,
        body: MultipartReplyBody::GroupDesc(vec![g]),
    }));
    rt(Message::MultipartReply(MultipartReply {
        flags: 0,
        body: MultipartReplyBody::MeterDesc(vec![MeterConfig {
            flags: OFPMF_PKTPS,
            meter_id: 1,
            bands: vec![MeterBand {
                band_type: OFPMBT_DROP,
                rate: 5,
                burst_size: 0,
                extra: [0; 4],
            }],
        }]),
    }));
    rt(Message::MultipartReply(MultipartReply {
        flags: 0,
        body: MultipartReplyBody::Other {
            ty: 13,
            body: vec![1, 2, 3, 4],
        },
    }));
}

#[test]
fn resume_carries_packet_metadata_and_continuation_only() {
    let pi = PacketIn2 {
        props: vec![
            PacketInProp::Packet(vec![1, 2]),
            PacketInProp::TableId(3),
            PacketInProp::Metadata(in_port(4)),
            PacketInProp::Userdata(vec![9]),
            PacketInProp::Continuation(vec![0, 0, 0, 8, 0, 0, 0, 0]),
        ],
    };
    let r = pi.to_resume().unwrap();
    assert_eq!(
        r.props,
        vec![
            PacketInProp::Packet(vec![1, 2]),
            PacketInProp::Metadata(in_port(4)),
            PacketInProp::Continuation(vec![0, 0, 0, 8, 0, 0, 0, 0]),
        ]
    );
    rt(Message::Resume(r));
    let unpaused = PacketIn2 {
        props: vec![PacketInProp::Packet(vec![1])],
    };
    assert!(unpaused.to_resume().is_none());
}
