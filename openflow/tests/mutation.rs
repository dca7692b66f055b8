//! Mutation test over real flows: the flow_mods of `of_final.txt` with random bytes
//! changed (and sometimes truncated). Decoding never panics; whatever decodes prints,
//! re-encodes, and decodes again to the same instructions and the same match fields
//! (only their order may change, when prerequisites had been moved behind their users).

use openflow::oxm::Match;
use openflow::text::Flow;
use openflow::wire::{Message, OfpMessage};

fn field_set(m: &Match) -> Vec<String> {
    let mut v: Vec<String> = m.fields.iter().map(|f| format!("{f:?}")).collect();
    v.sort();
    v
}

#[test]
fn mutated_flow_mods_decode_print_and_reencode_consistently() {
    let path = format!("{}/tests/data/of_final.txt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let msgs: Vec<Vec<u8>> = text
        .lines()
        .filter(|l| l.starts_with(' '))
        .map(|l| {
            let f: Flow = l.parse().unwrap();
            OfpMessage::new(1, Message::FlowMod(f.add()))
                .to_bytes()
                .unwrap()
        })
        .collect();
    // xorshift: deterministic, so a failure reproduces.
    let mut seed: u64 = 0x1234_5678_9abc_def0;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut decoded = 0;
    for _ in 0..40_000 {
        let mut b = msgs[(rnd() as usize) % msgs.len()].clone();
        for _ in 0..=(rnd() % 4) {
            let at = (rnd() as usize) % b.len();
            b[at] = rnd() as u8;
        }
        if rnd() % 8 == 0 {
            let cut = 8 + (rnd() as usize) % (b.len() - 8);
            b.truncate(cut);
            let l = b.len() as u16;
            b[2..4].copy_from_slice(&l.to_be_bytes());
        }
        let Ok(d) = OfpMessage::decode(&b) else {
            continue;
        };
        decoded += 1;
        let Message::FlowMod(fm) = &d.body else {
            continue;
        };
        let _ = Flow::from_flow_mod(fm).to_string().parse::<Flow>();
        let again = OfpMessage::decode(&d.to_bytes().unwrap())
            .unwrap_or_else(|e| panic!("{e}: re-encoding of {} does not decode", hex::encode(&b)));
        let Message::FlowMod(fm2) = &again.body else {
            panic!("kind changed: {}", hex::encode(&b))
        };
        assert_eq!(fm2.instructions, fm.instructions, "{}", hex::encode(&b));
        assert_eq!(
            field_set(&fm2.r#match),
            field_set(&fm.r#match),
            "{}",
            hex::encode(&b)
        );
    }
    assert!(decoded > 10_000, "only {decoded} mutants decoded");
}

#[test]
fn mutated_group_mods_and_packet_ins_round_trip_when_they_decode() {
    use openflow::wire::group_mod::OFPGC_ADD;
    use openflow::wire::{Group, GroupMod, PacketIn2, PacketInProp};

    let path = format!("{}/tests/data/groups_final.txt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let mut msgs: Vec<Vec<u8>> = text
        .lines()
        .filter(|l| l.starts_with(' '))
        .map(|l| {
            let g: Group = l.parse().unwrap();
            let gm = GroupMod {
                command: OFPGC_ADD,
                command_bucket_id: u32::MAX,
                group: g,
            };
            OfpMessage::new(1, Message::GroupMod(gm))
                .to_bytes()
                .unwrap()
        })
        .collect();
    let md: Match = "reg0=0x5,metadata=0x3,in_port_oxm=7"
        .replace("in_port_oxm", "in_port")
        .parse()
        .unwrap();
    let pi = PacketIn2 {
        props: vec![
            PacketInProp::Packet(vec![0xaa; 60]),
            PacketInProp::TableId(3),
            PacketInProp::Cookie(9),
            PacketInProp::Metadata(md),
            PacketInProp::Userdata(vec![0, 0, 0, 3, 1, 2, 3]),
            PacketInProp::Continuation(vec![0, 1, 0, 8, 0, 0, 0, 7]),
        ],
    };
    msgs.push(
        OfpMessage::new(1, Message::PacketIn2(pi))
            .to_bytes()
            .unwrap(),
    );
    let mut seed: u64 = 0x0fed_cba9_8765_4321;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut decoded = 0;
    for _ in 0..40_000 {
        let mut b = msgs[(rnd() as usize) % msgs.len()].clone();
        for _ in 0..=(rnd() % 3) {
            let at = 8 + (rnd() as usize) % (b.len() - 8);
            b[at] = rnd() as u8;
        }
        let Ok(d) = OfpMessage::decode(&b) else {
            continue;
        };
        decoded += 1;
        if let Message::GroupMod(gm) = &d.body {
            let _ = gm.group.to_string();
        }
        let again = OfpMessage::decode(&d.to_bytes().unwrap())
            .unwrap_or_else(|e| panic!("{e}: re-encoding of {} does not decode", hex::encode(&b)));
        if let (Message::PacketIn2(a), Message::PacketIn2(b2)) = (&again.body, &d.body) {
            // Metadata fields may be reordered (prerequisites first); the rest is equal.
            assert_eq!(a.props.len(), b2.props.len());
            assert_eq!(a.packet(), b2.packet());
            assert_eq!(a.userdata(), b2.userdata());
        } else {
            assert_eq!(again, d, "{}", hex::encode(&b));
        }
    }
    assert!(decoded > 5_000, "only {decoded} mutants decoded");
}
