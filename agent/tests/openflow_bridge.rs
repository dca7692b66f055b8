//! Every flow compiled for the reference sandbox converts to the `openflow` crate's typed
//! `Flow` and prints back identically (both crates speak exact ovs-ofctl syntax).

use agent::compile::{compile_all, SbView};
use agent::lflow::layout::TableLayout;
use agent::sbdata::SbData;

#[test]
fn compiled_flows_round_trip_through_openflow_types() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let mut sb = SbData::default();
    for e in std::fs::read_dir(format!("{data}/sandbox")).unwrap() {
        sb.load_str(&std::fs::read_to_string(e.unwrap().path()).unwrap())
            .unwrap();
    }
    sb.load_str(&std::fs::read_to_string(format!("{data}/lflows_final.json")).unwrap())
        .unwrap();
    let view = SbView::new(&sb, "hv1");
    let report = compile_all(&sb, &view, &TableLayout::OVN_23_03, None, 10_000);
    assert!(report.flows.len() > 1800);
    let mut bad = Vec::new();
    for f in &report.flows {
        let ours = f.to_string();
        match f.to_openflow() {
            Ok(t) if t.to_string().trim() == ours.trim() => {}
            Ok(t) => bad.push(format!("ours   {ours}\ntheirs {t}")),
            Err(e) => bad.push(format!("{ours}: {e}")),
        }
    }
    println!(
        "{} flows, {} do not round-trip",
        report.flows.len(),
        bad.len()
    );
    assert!(bad.is_empty(), "{}", bad[..bad.len().min(10)].join("\n"));
}

#[test]
fn identical_matches_are_parsed_once() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let mut sb = SbData::default();
    for e in std::fs::read_dir(format!("{data}/sandbox")).unwrap() {
        sb.load_str(&std::fs::read_to_string(e.unwrap().path()).unwrap())
            .unwrap();
    }
    sb.load_str(&std::fs::read_to_string(format!("{data}/lflows_final.json")).unwrap())
        .unwrap();
    let view = SbView::new(&sb, "hv1");
    let report = compile_all(&sb, &view, &TableLayout::OVN_23_03, None, 10_000);
    // Each distinct match text (per datapath when it names a port group) is parsed once:
    // every miss creates an entry, and lflows on several datapaths are hits.
    let pairs: usize = report.per_lflow.len();
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
