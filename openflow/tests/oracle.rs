//! Golden test (b): text -> our wire bytes -> the real `ovs-ofctl ofp-parse` -> text must
//! equal the input line. All messages go to one file so ovs-ofctl runs once per test.

use std::fmt::Write as _;
use std::process::Command;

use openflow::text::Flow;
use openflow::wire::group_mod::OFPGC_ADD;
use openflow::wire::{Group, GroupMod, Message, OfpMessage};

fn lines(name: &str) -> Vec<String> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .filter(|l| l.starts_with(' '))
        .map(|l| l.trim().to_owned())
        .collect()
}

/// Run `ovs-ofctl ofp-parse` on the concatenated messages; one output block per message.
fn ofp_parse(msgs: &[OfpMessage]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("msgs.bin");
    let mut bytes = Vec::new();
    for m in msgs {
        bytes.extend(m.to_bytes());
    }
    std::fs::write(&path, &bytes).expect("write");
    let out = Command::new("ovs-ofctl")
        .arg("ofp-parse")
        .arg(&path)
        .output()
        .unwrap_or_else(|e| {
            panic!("this test needs the real `ovs-ofctl` (Open vSwitch 3.1) on PATH: {e}")
        });
    assert!(
        out.status.success(),
        "ovs-ofctl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Messages start at column 0; continuation lines are indented.
    let text = String::from_utf8_lossy(&out.stdout);
    let mut blocks: Vec<String> = Vec::new();
    for l in text.lines() {
        if l.starts_with("OFPT_") || blocks.is_empty() {
            blocks.push(l.to_owned());
        } else if let Some(b) = blocks.last_mut() {
            b.push('\n');
            b.push_str(l);
        }
    }
    blocks
}

/// `OFPT_FLOW_MOD (OF1.5) (xid=0x1): ADD table:8 MATCH cookie:0x5 actions=..` -> dump form.
fn flow_mod_to_dump(block: &str) -> String {
    let body = block.split_once("): ADD ").map_or(block, |(_, b)| b);
    let (table, body) = match body.strip_prefix("table:") {
        Some(r) => r.split_once(' ').unwrap_or((r, "")),
        None => ("0", body),
    };
    let (head, actions) = body.split_once("actions=").unwrap_or((body, ""));
    let mut cookie = "0x0";
    let mut matches = "";
    for tok in head.split_whitespace() {
        if let Some(c) = tok.strip_prefix("cookie:") {
            cookie = c;
        } else if !tok.contains(':') || tok.contains('=') {
            matches = tok;
        }
    }
    let sep = if matches.is_empty() { "" } else { " " };
    format!("cookie={cookie}, table={table}, {matches}{sep}actions={actions}")
}

#[test]
fn of_final_flows_survive_the_real_decoder() {
    check_flows("of_final.txt");
}

#[test]
fn experiment_flows_survive_the_real_decoder() {
    check_flows("experiments_of_table35.txt");
}

fn check_flows(file: &str) {
    let lines = lines(file);
    let msgs: Vec<OfpMessage> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let f: Flow = l.parse().unwrap_or_else(|e| panic!("{e}: {l}"));
            OfpMessage::new(i as u32 + 1, Message::FlowMod(f.add()))
        })
        .collect();
    let blocks = ofp_parse(&msgs);
    assert_eq!(
        blocks.len(),
        lines.len(),
        "one ofp-parse block per flow_mod"
    );
    let mut bad = String::new();
    let mut n_bad = 0;
    for (line, block) in lines.iter().zip(&blocks) {
        let got = flow_mod_to_dump(block);
        if &got != line {
            n_bad += 1;
            if n_bad <= 15 {
                let _ = write!(bad, "\n  in:  {line}\n  got: {got}");
            }
        }
    }
    assert_eq!(n_bad, 0, "{n_bad} flows differ:{bad}");
}

#[test]
fn groups_survive_the_real_decoder() {
    let mut lines = lines("groups_final.txt");
    lines.extend(self::lines("experiments_groups.txt"));
    let msgs: Vec<OfpMessage> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let g: Group = l.parse().unwrap_or_else(|e| panic!("{e}: {l}"));
            let gm = GroupMod {
                command: OFPGC_ADD,
                command_bucket_id: 0xffff_ffff,
                group: g,
            };
            OfpMessage::new(i as u32 + 1, Message::GroupMod(gm))
        })
        .collect();
    let blocks = ofp_parse(&msgs);
    assert_eq!(blocks.len(), lines.len());
    for (line, block) in lines.iter().zip(&blocks) {
        let got = block
            .split_once(" ADD ")
            .map_or(block.as_str(), |(_, b)| b)
            .trim()
            .to_owned();
        assert_eq!(&got, line, "block: {block}");
    }
}
