//! Flows as a real switch dumps them against the same flows as sent: `tests/data/
//! dump_tun_metadata.txt` holds an OpenFlow 1.5 flow-desc reply captured from ovs-vswitchd
//! 3.1 (table 32 of an OVN chassis) and, as comments, its flows in `ovs-ofctl` text (which our
//! parser turns into the form the agent sends: 4-byte `tun_metadata0` values). Every dumped
//! flow's actions must be `equivalent` to the sent ones, or a controller that diffs what it
//! wants against a dump (after a reconnect or a restart) rewrites flows that are already right.

use openflow::action::{equivalent, Action};
use openflow::text::Flow;
use openflow::wire::{Instruction, Message, MultipartReplyBody, OfpMessage};

fn actions(instructions: &[Instruction]) -> Vec<Action> {
    instructions
        .iter()
        .find_map(|i| match i {
            Instruction::ApplyActions(a) => Some(a.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn dumped_tun_metadata_writes_are_equivalent_to_the_sent_ones() {
    let path = format!(
        "{}/tests/data/dump_tun_metadata.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let data = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let sent: Vec<Flow> = data
        .lines()
        .filter_map(|l| l.strip_prefix("# cookie="))
        .map(|l| {
            format!("cookie={l}")
                .parse()
                .unwrap_or_else(|e| panic!("{l}: {e}"))
        })
        .collect();
    let hex_line = data
        .lines()
        .find(|l| !l.starts_with('#'))
        .expect("hex line");
    let msg = OfpMessage::decode(&hex::decode(hex_line).expect("hex")).expect("decodes");
    let Message::MultipartReply(reply) = msg.body else {
        panic!("not a multipart reply")
    };
    let MultipartReplyBody::FlowDesc(dumped) = reply.body else {
        panic!("not a flow-desc reply")
    };
    assert_eq!(dumped.len(), sent.len());
    let mut with_tun_metadata = 0;
    for d in &dumped {
        let d = Flow::from_flow_desc(d);
        let s = sent
            .iter()
            .find(|s| {
                s.cookie == d.cookie
                    && s.priority == d.priority
                    && s.r#match.to_string() == d.r#match.to_string()
            })
            .unwrap_or_else(|| panic!("no sent flow for {d}"));
        // The same text, not necessarily the same values.
        assert_eq!(s.to_string(), d.to_string());
        let (s_actions, d_actions) = (actions(&s.instructions), actions(&d.instructions));
        if d.to_string().contains("->tun_metadata0") {
            with_tun_metadata += 1;
            assert_ne!(s_actions, d_actions, "the dump uses another encoding: {d}");
        }
        assert!(
            equivalent(&s_actions, &d_actions),
            "not equivalent: {d}\n  sent:   {s_actions:?}\n  dumped: {d_actions:?}"
        );
    }
    assert_eq!(with_tun_metadata, 3);
}
