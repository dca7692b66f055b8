//! Golden vectors captured from the real `ovs-ofctl --no-names -O OpenFlow15 add-flow`
//! (and add-group/add-meter) by `examples/capture_golden.rs` acting as a fake switch.
//! File format: `# <kind> <ovs-ofctl text>` then the hex of the message it sent.

use openflow::text::Flow;
use openflow::wire::{Group, Message, OfpMessage};

struct Vector {
    kind: String,
    text: String,
    bytes: Vec<u8>,
}

fn vectors() -> Vec<Vector> {
    let path = format!("{}/tests/data/golden.txt", env!("CARGO_MANIFEST_DIR"));
    let data = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = Vec::new();
    let mut lines = data.lines();
    while let Some(head) = lines.next() {
        let head = head.strip_prefix("# ").expect("comment line");
        let (kind, text) = head.split_once(' ').expect("kind and text");
        let hex_line = lines.next().expect("hex line");
        out.push(Vector {
            kind: kind.to_owned(),
            text: text.to_owned(),
            bytes: hex::decode(hex_line).expect("hex"),
        });
    }
    out
}

#[test]
fn golden_vectors_decode_and_reencode_byte_for_byte() {
    let v = vectors();
    assert!(v.len() >= 15);
    for vec in &v {
        let m = OfpMessage::decode(&vec.bytes).unwrap_or_else(|e| panic!("{e}: {}", vec.text));
        assert!(
            !matches!(m.body, Message::Unknown { .. }),
            "not understood: {}",
            vec.text
        );
        assert_eq!(
            hex::encode(m.to_bytes().unwrap()),
            hex::encode(&vec.bytes),
            "re-encoding differs: {}",
            vec.text
        );
    }
}

#[test]
fn golden_flows_match_our_parser() {
    for vec in vectors().iter().filter(|v| v.kind == "flow") {
        let Message::FlowMod(fm) = OfpMessage::decode(&vec.bytes).unwrap().body else {
            panic!("not a flow_mod: {}", vec.text)
        };
        let ours: Flow = vec.text.parse().unwrap();
        let theirs = Flow::from_flow_mod(&fm);
        assert_eq!(ours.to_string(), theirs.to_string(), "{}", vec.text);
        // Same action structs means byte-identical action encoding.
        assert_eq!(ours.instructions, theirs.instructions, "{}", vec.text);
    }
}

#[test]
fn golden_groups_match_our_parser() {
    for vec in vectors().iter().filter(|v| v.kind == "group") {
        let Message::GroupMod(gm) = OfpMessage::decode(&vec.bytes).unwrap().body else {
            panic!("not a group_mod: {}", vec.text)
        };
        let ours: Group = vec.text.parse().unwrap();
        assert_eq!(ours.to_string(), gm.group.to_string());
        assert_eq!(ours, gm.group, "{}", vec.text);
    }
}
