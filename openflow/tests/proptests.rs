//! Property tests: struct -> bytes -> struct for match fields, actions and messages, and
//! "any bytes: an error, never a panic" for every decoder.

use std::net::{Ipv4Addr, Ipv6Addr};

use bytes::BytesMut;
use openflow::action::{
    Action, Controller, Ct, HeaderRef, Learn, LearnDst, LearnSpec, LearnSrc, Nat, NatRange,
    SubField,
};
use openflow::oxm::{FieldId, Match, MatchField};
use openflow::wire::group_mod::OFPGT_SELECT;
use openflow::wire::reader::Reader;
use openflow::wire::{
    Bucket, CtFlush, CtTuple, FlowMod, Group, GroupMod, Instruction, Message, OfpMessage,
    PacketIn2, PacketInProp, TlvMap, TlvTableMod,
};
use proptest::prelude::*;

fn field_id() -> impl Strategy<Value = FieldId> {
    let n = FieldId::all().count() as u16;
    (0..n).prop_map(FieldId)
}

fn match_field() -> impl Strategy<Value = MatchField> {
    (field_id(), any::<bool>(), any::<u64>()).prop_flat_map(|(id, masked, _)| {
        let d = id.def();
        let width = if d.name.starts_with("tun_metadata") {
            4
        } else {
            d.width
        };
        let masked = masked && d.maskable;
        (
            proptest::collection::vec(any::<u8>(), width),
            proptest::collection::vec(any::<u8>(), width),
        )
            .prop_map(move |(v, m)| MatchField::new(id, v, masked.then_some(m)))
    })
}

fn a_match() -> impl Strategy<Value = Match> {
    proptest::collection::vec(match_field(), 0..6).prop_map(|fields| Match { fields })
}

fn header() -> impl Strategy<Value = HeaderRef> {
    prop_oneof![
        field_id().prop_map(HeaderRef::nxm),
        field_id().prop_map(HeaderRef::oxm),
        any::<u32>().prop_map(HeaderRef),
    ]
}

fn subfield() -> impl Strategy<Value = SubField> {
    (header(), 0u16..1024, 1u16..=64).prop_map(|(field, ofs, n_bits)| SubField {
        field,
        ofs,
        n_bits,
    })
}

fn nat() -> impl Strategy<Value = Nat> {
    let range = prop_oneof![
        Just(NatRange::None),
        (any::<u32>(), proptest::option::of(any::<u32>())).prop_map(|(a, b)| NatRange::V4 {
            min: Some(Ipv4Addr::from(a)),
            max: b.map(Ipv4Addr::from),
        }),
        (any::<u128>(), proptest::option::of(any::<u128>())).prop_map(|(a, b)| NatRange::V6 {
            min: Some(Ipv6Addr::from(a)),
            max: b.map(Ipv6Addr::from),
        }),
    ];
    (
        0u16..32,
        range,
        proptest::option::of(any::<u16>()),
        proptest::option::of(any::<u16>()),
    )
        .prop_map(|(flags, range, proto_min, proto_max)| Nat {
            flags,
            range,
            proto_min,
            proto_max,
        })
}

fn learn_spec() -> impl Strategy<Value = LearnSpec> {
    (1u16..=128, subfield(), subfield(), 0u8..5, any::<u128>()).prop_map(
        |(n_bits, mut src, mut dst, kind, imm)| {
            // One n_bits on the wire covers both ends.
            src.n_bits = n_bits;
            dst.n_bits = n_bits;
            let nbytes = (n_bits as usize).div_ceil(8);
            let mut v = imm.to_be_bytes()[16 - nbytes..].to_vec();
            // The wire carries exactly n_bits bits of an immediate.
            if n_bits % 8 != 0 {
                v[0] &= (1u8 << (n_bits % 8)) - 1;
            }
            let (src, dst) = match kind {
                0 => (LearnSrc::Field(src), LearnDst::Match(dst)),
                1 => (LearnSrc::Immediate(v), LearnDst::Match(dst)),
                2 => (LearnSrc::Field(src), LearnDst::Load(dst)),
                3 => (LearnSrc::Immediate(v), LearnDst::Load(dst)),
                _ => (LearnSrc::Field(src), LearnDst::Output),
            };
            LearnSpec { n_bits, src, dst }
        },
    )
}

fn leaf_action() -> impl Strategy<Value = Action> {
    prop_oneof![
        (any::<u32>(), any::<u16>()).prop_map(|(port, max_len)| Action::Output { port, max_len }),
        any::<u32>().prop_map(Action::Group),
        any::<u32>().prop_map(Action::SetQueue),
        any::<u32>().prop_map(Action::Meter),
        Just(Action::DecNwTtl),
        proptest::collection::vec(any::<u16>(), 0..5).prop_map(|ids| Action::DecTtl { ids }),
        any::<u16>().prop_map(Action::PushVlan),
        Just(Action::PopVlan),
        match_field().prop_map(Action::SetField),
        match_field().prop_map(Action::RegLoad2),
        (subfield(), any::<u64>()).prop_map(|(dst, value)| Action::RegLoad { dst, value }),
        (subfield(), subfield(), any::<bool>()).prop_map(|(src, mut dst, nx)| {
            dst.n_bits = src.n_bits;
            Action::Move { src, dst, nx }
        }),
        (any::<u16>(), any::<u8>(), any::<bool>())
            .prop_map(|(in_port, table, ct)| Action::Resubmit { in_port, table, ct }),
        (header(), any::<u16>(), any::<u16>()).prop_map(|(field, ofs, n_bits)| {
            Action::StackPush(SubField { field, ofs, n_bits })
        }),
        (header(), any::<u16>(), any::<u16>())
            .prop_map(|(field, ofs, n_bits)| Action::StackPop(SubField { field, ofs, n_bits })),
        (any::<u32>(), any::<u8>(), any::<u8>()).prop_map(|(id, clause, n_clauses)| {
            Action::Conjunction {
                id,
                clause,
                n_clauses,
            }
        }),
        Just(Action::CtClear),
        nat().prop_map(Action::Nat),
        (
            any::<u16>(),
            any::<u16>(),
            0u8..6,
            proptest::collection::vec(any::<u8>(), 0..20),
            any::<bool>(),
            any::<u32>()
        )
            .prop_map(
                |(max_len, controller_id, reason, userdata, pause, meter_id)| {
                    Action::Controller(Controller {
                        max_len,
                        controller_id,
                        reason,
                        userdata,
                        pause,
                        meter_id,
                    })
                }
            ),
        (any::<u16>(), header(), any::<u16>()).prop_map(|(pkt_len, field, ofs)| {
            Action::CheckPktLarger {
                pkt_len,
                dst: SubField {
                    field,
                    ofs,
                    n_bits: 1,
                },
            }
        }),
        (0usize..4).prop_map(|k| Action::Note(vec![7; 6 + 8 * k])),
        (any::<u16>(), any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(p, c, d, o)| {
            Action::Sample {
                probability: p,
                collector_set_id: c,
                obs_domain_id: d,
                obs_point_id: o,
            }
        }),
        Just(Action::Exit),
        (subfield(), any::<u16>()).prop_map(|(src, max_len)| Action::OutputReg { src, max_len }),
        (any::<u16>(), any::<u32>())
            .prop_map(|(port, max_len)| Action::OutputTrunc { port, max_len }),
        (
            any::<u16>(),
            any::<u16>(),
            any::<u32>(),
            any::<u32>(),
            0u8..=255,
            proptest::collection::vec(learn_spec(), 0..5)
        )
            .prop_map(|(idle, hard, prio, cookie, table, specs)| {
                Action::Learn(Learn {
                    idle_timeout: idle,
                    hard_timeout: hard,
                    priority: prio as u16,
                    cookie: u64::from(cookie),
                    // Odd cookies also exercise NXAST_LEARN2 (limit, result_dst).
                    flags: if cookie & 1 == 1 { 6 } else { 2 },
                    table_id: table,
                    fin_idle_timeout: 1,
                    fin_hard_timeout: 2,
                    limit: cookie % 3,
                    result_dst: (cookie & 1 == 1).then_some(SubField {
                        field: HeaderRef(0x0001_0004),
                        ofs: (cookie % 32) as u16,
                        n_bits: 1,
                    }),
                    specs,
                })
            }),
        (0usize..3).prop_map(|k| Action::Unknown {
            ty: 0x7777,
            body: vec![9; 4 + 8 * k],
        }),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    leaf_action().prop_recursive(2, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Action::Clone),
            (
                0u16..4,
                proptest::option::of(subfield()),
                any::<u16>(),
                any::<u8>(),
                any::<u16>(),
                proptest::collection::vec(inner, 0..3)
            )
                .prop_map(|(flags, zone_src, zone_imm, recirc_table, alg, actions)| {
                    let zone_src = zone_src.filter(|z| z.field.raw() != 0);
                    Action::Ct(Ct {
                        flags,
                        zone_imm: if zone_src.is_some() { 0 } else { zone_imm },
                        zone_src,
                        recirc_table,
                        alg,
                        actions,
                    })
                }),
        ]
    })
}

fn instructions() -> impl Strategy<Value = Vec<Instruction>> {
    (
        proptest::collection::vec(action(), 0..6),
        proptest::option::of(any::<u8>()),
    )
        .prop_map(|(acts, goto)| {
            let mut v = vec![Instruction::ApplyActions(acts)];
            if let Some(t) = goto {
                v.push(Instruction::GotoTable(t));
            }
            v
        })
}

fn sorted(m: &Match) -> Vec<String> {
    let mut v: Vec<String> = m.fields.iter().map(|f| format!("{f:?}")).collect();
    v.sort();
    v
}

/// A conntrack tuple; unknown property types past the known ones (0-6).
fn ct_tuple() -> impl Strategy<Value = CtTuple> {
    (
        (
            proptest::option::of(any::<u128>()),
            proptest::option::of(any::<u128>()),
            proptest::option::of(any::<u16>()),
            proptest::option::of(any::<u16>()),
        ),
        (
            proptest::option::of(any::<u16>()),
            proptest::option::of(any::<u8>()),
            proptest::option::of(any::<u8>()),
            proptest::collection::vec(
                (7u16..100, proptest::collection::vec(any::<u8>(), 0..12)),
                0..2,
            ),
        ),
    )
        .prop_map(
            |((src, dst, src_port, dst_port), (icmp_id, icmp_type, icmp_code, unknown))| CtTuple {
                src: src.map(Ipv6Addr::from),
                dst: dst.map(Ipv6Addr::from),
                src_port,
                dst_port,
                icmp_id,
                icmp_type,
                icmp_code,
                unknown,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn match_round_trips(m in a_match()) {
        let mut b = BytesMut::new();
        m.encode(&mut b);
        prop_assert_eq!(b.len() % 8, 0);
        let d = Match::decode(&mut Reader::new(&b)).unwrap();
        let _ = openflow::text::format_match(&d, Some(1));
        prop_assert_eq!(sorted(&d), sorted(&m));
    }

    #[test]
    fn actions_round_trip(list in proptest::collection::vec(action(), 0..8)) {
        let mut b = BytesMut::new();
        Action::encode_list(&list, &mut b).unwrap();
        // Printing any action (whatever its offsets and widths) never panics.
        let _ = openflow::text::format_actions(&list);
        prop_assert_eq!(Action::decode_list(&b).unwrap(), list);
    }

    #[test]
    fn flow_mod_round_trips(
        cookie in any::<u64>(), table_id in any::<u8>(), command in 0u8..5,
        priority in any::<u16>(), m in a_match(), instructions in instructions(),
    ) {
        let fm = FlowMod { cookie, table_id, command, priority, r#match: m, instructions, ..FlowMod::default() };
        let msg = OfpMessage::new(9, Message::FlowMod(fm));
        let d = OfpMessage::decode(&msg.to_bytes().unwrap()).unwrap();
        let (Message::FlowMod(a), Message::FlowMod(b)) = (&d.body, &msg.body) else { panic!() };
        prop_assert_eq!(&a.instructions, &b.instructions);
        prop_assert_eq!(sorted(&a.r#match), sorted(&b.r#match));
        prop_assert_eq!((a.cookie, a.table_id, a.command, a.priority), (b.cookie, b.table_id, b.command, b.priority));
    }

    #[test]
    fn group_mod_round_trips(
        group_id in any::<u32>(),
        buckets in proptest::collection::vec(
            (any::<u32>(), proptest::option::of(any::<u16>()), proptest::option::of(any::<u32>()),
             proptest::collection::vec(action(), 0..3)), 0..4),
    ) {
        let g = Group {
            group_id,
            group_type: OFPGT_SELECT,
            selection_method: "hash".into(),
            selection_method_param: 7,
            fields: vec![MatchField::new(FieldId::by_name("ip_src").unwrap(), vec![], None)],
            buckets: buckets.into_iter().map(|(bucket_id, weight, watch_port, actions)| Bucket {
                bucket_id, weight, watch_port, watch_group: None, actions, unknown_props: vec![],
            }).collect(),
            unknown_props: vec![],
        };
        let msg = OfpMessage::new(3, Message::GroupMod(GroupMod { command: 0, command_bucket_id: 0xffff_ffff, group: g }));
        prop_assert_eq!(OfpMessage::decode(&msg.to_bytes().unwrap()).unwrap(), msg);
    }

    #[test]
    fn packet_in2_round_trips(
        packet in proptest::collection::vec(any::<u8>(), 0..100),
        userdata in proptest::collection::vec(any::<u8>(), 1..30),
        cookie in any::<u64>(), table in any::<u8>(), m in a_match(),
        cont in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let pi = PacketIn2 { props: vec![
            PacketInProp::Packet(packet), PacketInProp::FullLen(5), PacketInProp::BufferId(u32::MAX),
            PacketInProp::TableId(table), PacketInProp::Cookie(cookie), PacketInProp::Reason(1),
            PacketInProp::Metadata(m), PacketInProp::Userdata(userdata), PacketInProp::Continuation(cont),
        ]};
        let msg = OfpMessage::new(1, Message::PacketIn2(pi));
        let d = OfpMessage::decode(&msg.to_bytes().unwrap()).unwrap();
        let (Message::PacketIn2(a), Message::PacketIn2(b)) = (&d.body, &msg.body) else { panic!() };
        prop_assert_eq!(a.props.len(), b.props.len());
        prop_assert_eq!(a.packet(), b.packet());
        prop_assert_eq!(a.userdata(), b.userdata());
        prop_assert_eq!(sorted(a.metadata().unwrap()), sorted(b.metadata().unwrap()));
    }

    #[test]
    fn tlv_table_mod_round_trips(maps in proptest::collection::vec((any::<u16>(), any::<u8>(), any::<u8>(), 0u16..64), 0..5)) {
        let m = TlvTableMod { command: 0, mappings: maps.into_iter().map(|(c, t, l, i)| TlvMap {
            option_class: c, option_type: t, option_len: l, index: i }).collect() };
        let msg = OfpMessage::new(4, Message::TlvTableMod(m));
        prop_assert_eq!(OfpMessage::decode(&msg.to_bytes().unwrap()).unwrap(), msg);
    }

    #[test]
    fn ct_flush_round_trips(
        proto in any::<u8>(),
        orig in ct_tuple(),
        reply in ct_tuple(),
        zone in proptest::option::of(any::<u16>()),
        unknown in proptest::collection::vec((3u16..100, proptest::collection::vec(any::<u8>(), 0..12)), 0..2),
    ) {
        let m = CtFlush { ip_proto: proto, orig, reply, zone_id: zone, unknown };
        let msg = OfpMessage::new(6, Message::CtFlush(m));
        prop_assert_eq!(OfpMessage::decode(&msg.to_bytes().unwrap()).unwrap(), msg);
    }

    /// Any bytes: every decoder returns, never panics.
    #[test]
    fn decoders_never_panic_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = OfpMessage::decode(&bytes);
        let _ = Action::decode_list(&bytes);
        let _ = Instruction::decode_list(&bytes);
        let _ = Match::decode(&mut Reader::new(&bytes));
        let _ = Match::decode_oxms(Reader::new(&bytes));
        // Random bodies behind a valid header, for every message type.
        for ty in 0u8..40 {
            let mut m = vec![6, ty, 0, 0, 0, 0, 0, 1];
            if ty == 4 {
                m.extend_from_slice(&[0, 0, 0x23, 0x20, 0, 0, 0, bytes.first().copied().unwrap_or(30) % 40]);
            }
            m.extend_from_slice(&bytes);
            let len = m.len().min(0xffff) as u16;
            m[2..4].copy_from_slice(&len.to_be_bytes());
            m.truncate(len as usize);
            // Whatever decodes also prints without panicking.
            match OfpMessage::decode(&m).map(|m| m.body) {
                Ok(Message::FlowMod(fm)) => {
                    let _ = openflow::text::Flow::from_flow_mod(&fm).to_string();
                }
                Ok(Message::GroupMod(gm)) => {
                    let _ = gm.group.to_string();
                }
                Ok(Message::PacketIn2(pi)) => {
                    let _ = pi.metadata().map(ToString::to_string);
                }
                _ => {}
            }
        }
    }

    /// Every truncation of a valid message is rejected or decoded, never a panic.
    #[test]
    fn truncated_messages_never_panic(instructions in instructions(), m in a_match(), cut in any::<usize>()) {
        let fm = FlowMod { r#match: m, instructions, ..FlowMod::default() };
        let bytes = OfpMessage::new(1, Message::FlowMod(fm)).to_bytes().unwrap();
        let n = cut % bytes.len();
        let mut t = bytes[..n].to_vec();
        if t.len() >= 4 {
            let len = t.len() as u16;
            t[2..4].copy_from_slice(&len.to_be_bytes());
        }
        let _ = OfpMessage::decode(&t);
        let _ = Instruction::decode_list(&bytes[48.min(bytes.len())..n.max(48).min(bytes.len())]);
    }
}

fn sample_lines() -> Vec<String> {
    let path = format!("{}/tests/data/of_final.txt", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with(' '))
        .step_by(40)
        .map(str::to_owned)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Any text, and any cut or byte flip of a real flow line: the text parsers return
    /// (error or value) and accepted flows print and encode.
    #[test]
    fn text_parsers_never_panic(s in "\\PC{0,80}", idx in any::<usize>(), cut in any::<usize>(), flip in any::<u8>()) {
        let _ = s.parse::<openflow::text::Flow>();
        let _ = s.parse::<Group>();
        let _ = openflow::text::parse_actions(&s);
        let lines = sample_lines();
        let line = &lines[idx % lines.len()];
        let mut b = line.as_bytes().to_vec();
        let at = cut % b.len();
        b[at] = flip;
        for cand in [String::from_utf8_lossy(&b).into_owned(), line[..at.min(line.len())].to_owned()] {
            if let Ok(f) = cand.parse::<openflow::text::Flow>() {
                let _ = f.to_string();
                // An over-long flow is an encode error, never a panic.
                let _ = OfpMessage::new(1, Message::FlowMod(f.add())).to_bytes();
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Mutated valid encodings: whatever still decodes must re-encode to something that
    /// decodes to the same value (the property the `actions` fuzz target checks).
    #[test]
    fn decode_encode_decode_is_stable_on_mutated_actions(
        list in proptest::collection::vec(action(), 1..5),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        let mut b = BytesMut::new();
        Action::encode_list(&list, &mut b).unwrap();
        let mut bytes = b.to_vec();
        for (at, v) in flips {
            let n = bytes.len();
            bytes[at % n] = v;
        }
        if let Ok(decoded) = Action::decode_list(&bytes) {
            let mut again = BytesMut::new();
            Action::encode_list(&decoded, &mut again).unwrap();
            prop_assert_eq!(Action::decode_list(&again).ok(), Some(decoded));
        }
    }
}

/// A register subfield named in the `xxreg` that holds it (the same bits).
fn widen(sf: SubField) -> SubField {
    match sf.field.field().and_then(FieldId::register) {
        Some((openflow::oxm::registry::RegFamily::Reg, n))
            if u32::from(sf.ofs) + u32::from(sf.n_bits) <= 32 =>
        {
            SubField {
                field: HeaderRef::nxm(FieldId::xxreg(n / 4)),
                ofs: sf.ofs + u16::from(3 - n % 4) * 32,
                n_bits: sf.n_bits,
            }
        }
        _ => sf,
    }
}

/// The same field under its other header (NXM <-> OXM), when it has both.
fn other_namespace(sf: SubField) -> SubField {
    match sf.field.field() {
        Some(id) if sf.field == HeaderRef::nxm(id) => SubField {
            field: HeaderRef::oxm(id),
            ..sf
        },
        Some(id) => SubField {
            field: HeaderRef::nxm(id),
            ..sf
        },
        None => sf,
    }
}

/// Another encoding of the same action, as a switch may dump it.
fn reencode(a: &Action) -> Action {
    let sf = |s: SubField| other_namespace(widen(s));
    match a {
        Action::SetField(f) => Action::RegLoad2(f.clone()),
        Action::RegLoad2(f) => Action::SetField(f.clone()),
        Action::RegLoad { dst, value } => Action::RegLoad {
            dst: widen(*dst),
            value: *value,
        },
        Action::Move { src, dst, nx } => Action::Move {
            src: sf(*src),
            dst: sf(*dst),
            nx: !nx,
        },
        Action::DecNwTtl => Action::DecTtl { ids: vec![0] },
        Action::DecTtl { ids } if ids == &[0] => Action::DecNwTtl,
        Action::Output { port, max_len } if *port != openflow::action::OFPP_CONTROLLER => {
            Action::Output {
                port: *port,
                max_len: !max_len,
            }
        }
        Action::StackPush(s) => Action::StackPush(sf(*s)),
        Action::StackPop(s) => Action::StackPop(sf(*s)),
        Action::OutputReg { src, max_len } => Action::OutputReg {
            src: sf(*src),
            max_len: *max_len,
        },
        Action::CheckPktLarger { pkt_len, dst } => Action::CheckPktLarger {
            pkt_len: *pkt_len,
            dst: sf(*dst),
        },
        Action::Clone(list) => Action::Clone(list.iter().map(reencode).collect()),
        Action::Ct(ct) => Action::Ct(Ct {
            zone_src: ct.zone_src.map(sf),
            actions: ct.actions.iter().map(reencode).collect(),
            ..ct.clone()
        }),
        Action::Learn(l) => {
            let mut l = l.clone();
            for s in &mut l.specs {
                if let LearnSrc::Field(f) = &mut s.src {
                    *f = other_namespace(*f);
                }
                if let LearnDst::Match(f) | LearnDst::Load(f) = &mut s.dst {
                    *f = other_namespace(*f);
                }
                if let LearnSrc::Immediate(v) = &mut s.src {
                    v.insert(0, 0);
                }
            }
            Action::Learn(l)
        }
        other => other.clone(),
    }
}

/// The list with one observable difference (another port, group, table or queue), if it
/// has an action where one can be made.
fn mutate(list: &[Action]) -> Option<Vec<Action>> {
    let mut out = list.to_vec();
    for a in &mut out {
        let changed = match a {
            Action::Output { port, .. } => {
                *port ^= 1;
                true
            }
            Action::Group(g) | Action::SetQueue(g) | Action::Meter(g) => {
                *g ^= 1;
                true
            }
            Action::Resubmit { table, .. } => {
                *table ^= 1;
                true
            }
            Action::Conjunction { id, .. } => {
                *id ^= 1;
                true
            }
            _ => false,
        };
        if changed {
            return Some(out);
        }
    }
    None
}

fn round_trip(list: &[Action]) -> Option<Vec<Action>> {
    let mut b = BytesMut::new();
    Action::encode_list(list, &mut b).ok()?;
    Some(Action::decode_list(&b).expect("what we encode decodes"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Any other encoding of a list (set_field / reg_load2, NXM / OXM headers, move /
    /// copy_field, register views, dec_ttl forms, output max_len, learn immediates) is
    /// equivalent to it, also after going through the wire; a changed port, group, table or
    /// queue is not.
    #[test]
    fn other_encodings_are_equivalent_and_changes_are_not(
        list in proptest::collection::vec(action(), 0..6),
    ) {
        use openflow::action::{canonical, equivalent};
        let other: Vec<Action> = list.iter().map(reencode).collect();
        prop_assert!(equivalent(&list, &other), "{:?}\n{:?}", canonical(&list), canonical(&other));
        if let (Some(a), Some(b)) = (round_trip(&list), round_trip(&other)) {
            prop_assert!(equivalent(&list, &a));
            prop_assert!(equivalent(&a, &b));
        }
        let c = canonical(&list);
        prop_assert_eq!(canonical(&c), c.clone(), "canonical is idempotent");
        if round_trip(&list).is_some() {
            // The canonical form is itself a list that encodes and decodes to itself.
            prop_assert_eq!(round_trip(&c), Some(c.clone()));
        }
        if let Some(changed) = mutate(&list) {
            prop_assert!(!equivalent(&list, &changed));
        }
    }
}
