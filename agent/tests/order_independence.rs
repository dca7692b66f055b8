//! The flow table, group ids and conjunction ids are a function of the Southbound content:
//! a full compile (on one thread or two) equals any sequence of incremental compiles that
//! adds, removes and re-adds owners in random order. Meters are numbered as ovn-controller
//! numbers them (lowest free id, so the order of first use decides), and compared by
//! content: a flow's meter id stands for the meter it names.

mod common;

use std::collections::BTreeMap;

use agent::compile::{compile_all, compile_logical_flow, Compiled, Context, Owner};
use agent::lflow::flows::MatchCache;
use agent::lflow::layout::TableLayout;
use agent::ofctrl::DesiredFlows;
use agent::view::{Ids, SbView};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sbclient::ovn_sb::LogicalFlow;

/// Everything that reaches the switch: flows as text, and the group and meter tables.
type State = (Vec<String>, Vec<(u32, String)>, Vec<(u32, String)>);

fn state(d: &DesiredFlows, ids: &Ids) -> State {
    let meters: BTreeMap<u32, String> = ids.meter_list().into_iter().collect();
    let mut flows: Vec<String> = d
        .iter()
        .map(|f| meters_by_key(&f.to_flow().to_string(), &meters))
        .collect();
    flows.sort();
    let mut meter_keys: Vec<(u32, String)> = meters.into_values().map(|k| (0, k)).collect();
    meter_keys.sort();
    (flows, ids.group_list(), meter_keys)
}

/// `flow` with each meter id (`meter:N`, `meter_id=N`) replaced by the meter's key.
fn meters_by_key(flow: &str, meters: &BTreeMap<u32, String>) -> String {
    let mut out = String::new();
    let mut rest = flow;
    while let Some(at) = ["meter:", "meter_id="]
        .iter()
        .filter_map(|p| rest.find(p).map(|i| i + p.len()))
        .min()
    {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let id: u32 = rest[..digits].parse().expect("a meter id");
        out.push('<');
        out.push_str(&meters[&id]);
        out.push('>');
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

#[test]
fn full_compile_equals_random_incremental_sequences() {
    let sb = common::sandbox(true);
    let layout = TableLayout::OVN_23_03;
    let full = |threads: usize| {
        let ids = Ids::default();
        let view = SbView::new(&sb, "hv1", &ids);
        let cache = MatchCache::default();
        let cx = Context {
            view: &view,
            layout: &layout,
            cache: &cache,
            only_dp: None,
            limit: 10_000,
        };
        let r = compile_all(&cx, threads);
        state(&r.desired, &ids)
    };
    let reference = full(1);
    assert!(reference.0.len() > 1800);
    assert!(
        !reference.1.is_empty(),
        "the sandbox has load-balancer groups"
    );
    assert_eq!(full(2), reference, "two threads");

    let lflows: Vec<(sbclient::Uuid, &LogicalFlow)> = sb
        .replica
        .table::<LogicalFlow>()
        .unwrap()
        .iter()
        .map(|(u, l)| (*u, l))
        .collect();
    for seed in 0..4u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let ids = Ids::default();
        let view = SbView::new(&sb, "hv1", &ids);
        let cache = MatchCache::default();
        let cx = Context {
            view: &view,
            layout: &layout,
            cache: &cache,
            only_dp: None,
            limit: 10_000,
        };
        // The owners that are not logical flows, compiled once as a full compile does.
        let full_report = compile_all(&cx, 1);
        let mut desired = DesiredFlows::new();
        let mut held: BTreeMap<Owner, Compiled> = BTreeMap::new();
        for (owner, _) in full_report
            .per_owner
            .iter()
            .filter(|(o, _)| !matches!(o, Owner::Lflow(_)))
        {
            desired.replace(*owner, full_report.desired.flows_of(*owner));
        }
        // Forget the lflows' ids the full compile took: start from what the rows alone hold.
        for (owner, c) in &full_report.per_owner {
            if matches!(owner, Owner::Lflow(_)) {
                ids.release(&c.uses);
            }
        }
        let mut order = lflows.clone();
        order.shuffle(&mut rng);
        let mut steps = 0;
        for (u, lf) in &order {
            let mut c = compile_logical_flow(u, lf, &cx);
            desired.replace(Owner::Lflow(*u), std::mem::take(&mut c.flows));
            held.insert(Owner::Lflow(*u), c);
            // Now and then take a random owner away, and maybe put it back later.
            if rng.gen_bool(0.2) {
                let victim = *held.keys().nth(rng.gen_range(0..held.len())).unwrap();
                if let Some(c) = held.remove(&victim) {
                    desired.remove(victim);
                    ids.release(&c.uses);
                }
                if rng.gen_bool(0.5) {
                    if let Owner::Lflow(v) = victim {
                        let row = lflows.iter().find(|(x, _)| *x == v).unwrap().1;
                        let mut c = compile_logical_flow(&v, row, &cx);
                        desired.replace(victim, std::mem::take(&mut c.flows));
                        held.insert(victim, c);
                    }
                }
            }
            steps += 1;
        }
        // Put back whatever is missing, in random order.
        let mut missing: Vec<_> = lflows
            .iter()
            .filter(|(u, _)| !held.contains_key(&Owner::Lflow(*u)))
            .collect();
        missing.shuffle(&mut rng);
        for (u, lf) in missing {
            let mut c = compile_logical_flow(u, lf, &cx);
            desired.replace(Owner::Lflow(*u), std::mem::take(&mut c.flows));
            held.insert(Owner::Lflow(*u), c);
        }
        assert!(steps >= lflows.len());
        assert_eq!(state(&desired, &ids), reference, "seed {seed}");
        // Removing every lflow leaves exactly the flows and ids of the other rows.
        for (owner, c) in std::mem::take(&mut held) {
            desired.remove(owner);
            ids.release(&c.uses);
        }
        let rest = state(&desired, &ids);
        assert!(
            rest.1.is_empty(),
            "no lflow left to hold a group: {:?}",
            rest.1
        );
        assert!(
            rest.0.iter().all(|f| !f.contains(", table=8,")),
            "no ingress-pipeline flow left"
        );
    }
}
