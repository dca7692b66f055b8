//! Shared helpers of the oracle tests: the real `ovs-ofctl` as decoder.
#![allow(dead_code)]

use std::process::Command;

use openflow::text::Flow;
use openflow::wire::{Message, OfpMessage};

/// Run `ovs-ofctl ofp-parse` on the concatenated messages; one output block per message.
pub fn ofp_parse(msgs: &[OfpMessage]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("msgs.bin");
    let mut bytes = Vec::new();
    for m in msgs {
        bytes.extend(m.to_bytes().unwrap());
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
        // A message starts at column 0 with its name; hex dumps start with digits.
        if l.starts_with(|c: char| c.is_ascii_uppercase()) || blocks.is_empty() {
            blocks.push(l.to_owned());
        } else if let Some(b) = blocks.last_mut() {
            b.push('\n');
            b.push_str(l);
        }
    }
    blocks
}

/// `OFPT_FLOW_MOD (OF1.5) (xid=0x1): ADD table:8 MATCH cookie:0x5 actions=..` -> dump form.
pub fn flow_mod_to_dump(block: &str) -> String {
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

/// Encodes each flow as an add flow_mod, has the real `ovs-ofctl ofp-parse` decode them, and
/// returns one line pair (ours, ovs) for every flow that ovs-ofctl prints differently.
pub fn disagreements_with_ovs(flows: &[Flow]) -> Vec<String> {
    let msgs: Vec<OfpMessage> = flows
        .iter()
        .enumerate()
        .map(|(i, f)| OfpMessage::new(i as u32 + 1, Message::FlowMod(f.add())))
        .collect();
    let blocks = ofp_parse(&msgs);
    assert_eq!(blocks.len(), flows.len(), "one ofp-parse block per message");
    flows
        .iter()
        .zip(&blocks)
        .filter_map(|(f, block)| {
            let (got, ours) = (flow_mod_to_dump(block), f.to_string());
            (got != ours).then(|| {
                format!(
                    "\n  ours: {ours}\n  ovs:  {got}\n  raw:  {}",
                    block.lines().next().unwrap_or("")
                )
            })
        })
        .collect()
}
