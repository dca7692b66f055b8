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
            OfpMessage::new(1, Message::FlowMod(f.add())).to_bytes()
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
        let again = OfpMessage::decode(&d.to_bytes())
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
