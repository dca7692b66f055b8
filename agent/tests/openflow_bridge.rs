//! Every flow compiled for the reference sandbox encodes straight to an OpenFlow 1.5
//! flow_mod (no text in between) that decodes back to the same match (in the form a switch
//! stores it), the same actions and the same `ovs-ofctl` text.

mod common;

use agent::lflow::layout::TableLayout;
use agent::view::Ids;
use bytes::BytesMut;
use openflow::flow::{FlowMatch, FlowModCommand};
use openflow::wire::{FlowMod, Instruction, Wire};

#[test]
fn compiled_flows_encode_to_flow_mods_that_decode_back() {
    let sb = common::sandbox(true);
    let report = common::compile(&sb, "hv1", &Ids::default(), &TableLayout::OVN_23_03, 10_000);
    assert!(report.flows().len() > 1800);
    let mut bad = Vec::new();
    let mut buf = BytesMut::new();
    for f in &report.flows() {
        buf.clear();
        if let Err(e) = f.encode_flow_mod_body(&mut buf, FlowModCommand::Add) {
            bad.push(format!("{f}: {e}"));
            continue;
        }
        let fm = match FlowMod::decode(&buf) {
            Ok(fm) => fm,
            Err(e) => {
                bad.push(format!("{f}: decode: {e}"));
                continue;
            }
        };
        let actions: &[_] = match fm.instructions.as_slice() {
            [] => &[],
            [Instruction::ApplyActions(a)] => a,
            other => {
                bad.push(format!("{f}: instructions {other:?}"));
                continue;
            }
        };
        let m = FlowMatch::from_match(&fm.r#match);
        if m.as_ref().ok() != Some(&f.m.canonical_of15()) || actions != f.actions.as_slice() {
            bad.push(format!(
                "ours   {f}\ntheirs {}",
                openflow::text::Flow::from_flow_mod(&fm)
            ));
        }
    }
    println!(
        "{} flows, {} do not round-trip",
        report.flows().len(),
        bad.len()
    );
    assert!(bad.is_empty(), "{}", bad[..bad.len().min(10)].join("\n"));
}

#[test]
fn identical_matches_are_parsed_once() {
    let sb = common::sandbox(true);
    let report = common::compile(&sb, "hv1", &Ids::default(), &TableLayout::OVN_23_03, 10_000);
    // Each distinct match text is parsed once: every miss creates an entry, and lflows on
    // several datapaths are hits (a match naming a port group, where the group has the
    // same members).
    let pairs: usize = report.lflows;
    println!(
        "lflows {pairs}, cache misses {}, hits {}, entries {}",
        report.cache_misses, report.cache_hits, report.cache_entries
    );
    assert_eq!(
        report.cache_misses, report.cache_entries,
        "a match text was parsed twice"
    );
    assert!(report.cache_hits > report.cache_misses);
    assert!(
        report.cache_hits + report.cache_misses > pairs,
        "dp-group lflows compile once per datapath"
    );
}
