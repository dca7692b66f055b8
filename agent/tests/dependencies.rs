//! What a claim, a release, an HA switch-over or a datapath becoming local changes in the
//! compiled logical flows is found by `engine::deps`: compiling every logical flow before
//! and after such a change, every lflow whose flows differ must be one `affected_lflows`
//! names (the engine recompiles only those), and a one-port change must not name most lflows.

mod common;

use std::collections::BTreeMap;

use agent::compile::{compile_owners, Context, Owner};
use agent::engine::deps::affected_lflows;
use agent::engine::lflow_index::LflowIndex;
use agent::lflow::flows::MatchCache;
use agent::lflow::layout::TableLayout;
use agent::southbound::Southbound;
use agent::view::{Ids, LocalFacts, SbView, TouchedRows, ViewParts};
use sbclient::ovn_sb::{DatapathBinding, LogicalFlow, PortBinding};
use sbclient::Uuid;

const CHASSIS: &str = "hv1";

/// Every logical flow's flows as sorted text, by lflow uuid.
fn lflow_flows(sb: &Southbound, ids: &Ids, facts: &LocalFacts) -> BTreeMap<Uuid, Vec<String>> {
    let view = SbView::with_facts(sb, CHASSIS, ids, facts);
    let cache = MatchCache::default();
    let layout = TableLayout::OVN_23_03;
    let cx = Context {
        view: &view,
        layout: &layout,
        cache: &cache,
        only_dp: None,
        limit: 10_000,
    };
    let (owners, _) = compile_owners(&cx, 1);
    owners
        .into_iter()
        .filter_map(|(o, c)| match o {
            Owner::Lflow(u) => {
                let mut flows: Vec<String> = c.flows.iter().map(ToString::to_string).collect();
                flows.sort();
                Some((u, flows))
            }
            _ => None,
        })
        .collect()
}

/// Checks one change of facts; returns how many lflows were named and how many differed.
fn check(sb: &Southbound, what: &str, before: &LocalFacts, after: &LocalFacts) -> (usize, usize) {
    let ids = Ids::default();
    let old = lflow_flows(sb, &ids, before);
    let new = lflow_flows(sb, &ids, after);
    // The view's parts as the engine keeps them: built for `before`, then brought up to
    // date with `after` entry by entry.
    let mut parts = ViewParts::default();
    let none = std::collections::BTreeSet::new();
    parts.refresh(sb, CHASSIS, before, &none, None);
    assert!(parts.take_changes().rebuilt);
    parts.refresh(sb, CHASSIS, after, &none, Some(&TouchedRows::default()));
    let changed = parts.take_changes();
    assert!(
        !changed.rebuilt,
        "{what}: a change of facts rebuilt the view"
    );
    let new_view = SbView::from_parts(sb, &ids, &parts);
    let mut index = LflowIndex::default();
    index.rebuild(sb.replica.table::<LogicalFlow>().expect("Logical_Flow"));
    let affected = affected_lflows(&new_view, &changed, &index);
    let differing: std::collections::BTreeSet<&Uuid> = new
        .keys()
        .chain(old.keys())
        .filter(|u| old.get(u) != new.get(u))
        .collect();
    for u in &differing {
        assert!(
            affected.contains(u),
            "{what}: lflow {u} compiles differently but was not named ({changed:?})\n\
             before: {:?}\nafter: {:?}",
            old.get(u),
            new.get(u)
        );
    }
    (affected.len(), differing.len())
}

#[test]
fn the_lflows_a_local_change_affects_are_all_named() {
    let sb = common::sandbox(true);
    let base = LocalFacts::from_southbound(&sb.replica, CHASSIS);
    assert!(
        !base.bound.is_empty(),
        "the sandbox binds ports on {CHASSIS}"
    );
    let pbs: Vec<(Uuid, &PortBinding)> = sb
        .replica
        .table::<PortBinding>()
        .unwrap()
        .iter()
        .map(|(u, p)| (*u, p))
        .collect();
    let total = sb
        .replica
        .table::<sbclient::ovn_sb::LogicalFlow>()
        .unwrap()
        .len();
    let mut checked = 0;
    let mut report = Vec::new();
    // Each bound port released.
    for u in base.bound.iter().take(4) {
        let mut after = base.clone();
        after.bound.remove(u);
        let (named, differ) = check(&sb, &format!("release {u}"), &base, &after);
        report.push(format!("release: {named} named, {differ} differ"));
        checked += 1;
        assert!(
            named < total / 2,
            "a release names {named} of {total} lflows"
        );
    }
    // VIFs on local datapaths claimed here.
    for (u, _) in pbs
        .iter()
        .filter(|(u, p)| {
            p.type_.is_empty()
                && !base.bound.contains(u)
                && base.local_datapaths.contains(&p.datapath)
        })
        .take(4)
    {
        let mut after = base.clone();
        after.bound.insert(*u);
        let (named, differ) = check(&sb, &format!("claim {u}"), &base, &after);
        report.push(format!("claim: {named} named, {differ} differ"));
        checked += 1;
        assert!(named < total / 2, "a claim names {named} of {total} lflows");
    }
    // A chassisredirect port becoming active here, or no longer.
    for (u, _) in pbs.iter().filter(|(_, p)| p.type_ == "chassisredirect") {
        let mut after = base.clone();
        if !after.active_ha.remove(u) {
            after.active_ha.insert(*u);
        }
        let (named, differ) = check(&sb, &format!("HA {u}"), &base, &after);
        report.push(format!("HA switch: {named} named, {differ} differ"));
        checked += 1;
    }
    // A localport with an interface here.
    for (u, _) in pbs.iter().filter(|(_, p)| p.type_ == "localport").take(2) {
        let mut after = base.clone();
        after.localports.insert(*u);
        let (named, differ) = check(&sb, &format!("localport {u}"), &base, &after);
        report.push(format!("localport: {named} named, {differ} differ"));
        checked += 1;
    }
    // A datapath becoming local, and one no longer local.
    let dps: Vec<Uuid> = sb
        .replica
        .table::<DatapathBinding>()
        .unwrap()
        .iter()
        .map(|(u, _)| *u)
        .collect();
    if let Some(d) = dps.iter().find(|d| !base.local_datapaths.contains(d)) {
        let mut after = base.clone();
        after.local_datapaths.insert(*d);
        let (named, differ) = check(&sb, "datapath becomes local", &base, &after);
        report.push(format!(
            "new local datapath: {named} named, {differ} differ"
        ));
        assert!(differ > 0, "a new local datapath changes flows");
        checked += 1;
    }
    if let Some(d) = base.local_datapaths.iter().next() {
        let mut after = base.clone();
        after.local_datapaths.remove(d);
        let (named, differ) = check(&sb, "datapath no longer local", &base, &after);
        report.push(format!("datapath gone: {named} named, {differ} differ"));
        checked += 1;
    }
    eprintln!("{total} lflows\n{}", report.join("\n"));
    assert!(checked >= 6, "only {checked} changes checked");
}
