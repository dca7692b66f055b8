//! Golden test (b): text -> our wire bytes -> the real `ovs-ofctl ofp-parse` -> text must
//! equal the input line. All messages go to one file so ovs-ofctl runs once per test.

use std::fmt::Write as _;

mod common;

use common::{flow_mod_to_dump, ofp_parse};
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
