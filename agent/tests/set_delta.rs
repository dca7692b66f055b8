//! Address-set changes made in place: for random changes of two address sets, the flow
//! table that the old compile plus each lflow's in-place change gives (or, where the change
//! cannot be made in place, the lflow compiled again) equals a full compile of the new
//! content, flow for flow. The lflows name the sets in every form the delta has to tell
//! apart: a plain match, a conjunction clause, the set twice, two sets, an OR over two
//! sets (never in place: its matches are merged), a set with a literal beside it (never in
//! place), and two lflows whose conjunction flows overlap.

mod common;

use std::collections::BTreeSet;

use agent::compile::{compile_all, logical_flow_set_delta, Context, Owner, SetChange};
use agent::lflow::flows::MatchCache;
use agent::lflow::layout::TableLayout;
use agent::ofctrl::DesiredFlows;
use agent::southbound::Southbound;
use agent::view::{Ids, SbView};
use rand::{Rng, SeedableRng};
use sbclient::ovn_sb::LogicalFlow;

const LFLOWS: [(&str, &str, bool); 7] = [
    ("plain", r#"outport == \"lp1\" && ip4.src == $as1"#, true),
    (
        "conj",
        r#"outport == \"lp1\" && ip4.src == $as1 && tcp && tcp.dst == {111, 222, 333}"#,
        true,
    ),
    (
        "twice",
        r#"outport == \"lp1\" && ip4.src == $as1 && ip4.dst == $as1"#,
        true,
    ),
    (
        "two",
        r#"outport == \"lp1\" && ip4.src == $as1 && ip4.dst == $as2"#,
        true,
    ),
    (
        "or",
        r#"outport == \"lp1\" && (ip4.src == $as1 || ip4.dst == $as2)"#,
        false,
    ),
    (
        "lit",
        r#"outport == \"lp1\" && ip4.src == {$as1, 10.9.9.9}"#,
        false,
    ),
    (
        "ovl",
        r#"outport == \"lp1\" && ip4.src == $as2 && tcp && tcp.dst == {111, 444}"#,
        true,
    ),
];

fn southbound(as1: &BTreeSet<String>, as2: &BTreeSet<String>) -> Southbound {
    let set = |s: &BTreeSet<String>| {
        let items: Vec<String> = s.iter().map(|a| format!("\"{a}\"")).collect();
        format!("[\"set\",[{}]]", items.join(","))
    };
    let lflows: Vec<String> = LFLOWS
        .iter()
        .enumerate()
        .map(|(i, (name, m, _))| {
            format!(
                r#"[["uuid","{name}"],["uuid","d"],["set",[]],"egress",4,{},"{m}","drop;",["map",[]]]"#,
                1100 + i
            )
        })
        .collect();
    let text = format!(
        r#"{{"caption":"Chassis table","headings":["_uuid","name"],"data":[[["uuid","c1"],"hv1"]]}}
        {{"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key","external_ids"],"data":[[["uuid","d"],1,["map",[["logical-switch","x"]]]]]}}
        {{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","chassis","options"],"data":[
          [["uuid","p1"],"lp1",["uuid","d"],1,"",["uuid","c1"],["map",[]]]]}}
        {{"caption":"Address_Set table","headings":["_uuid","name","addresses"],"data":[
          [["uuid","a1"],"as1",{}],[["uuid","a2"],"as2",{}]]}}
        {{"caption":"Logical_Flow table","headings":["_uuid","logical_datapath","logical_dp_group","pipeline","table_id","priority","match","actions","external_ids"],"data":[{}]}}"#,
        set(as1),
        set(as2),
        lflows.join(",")
    );
    common::load_short(&text)
}

fn full(sb: &Southbound, ids: &Ids) -> DesiredFlows {
    let view = SbView::new(sb, "hv1", ids);
    let cache = MatchCache::default();
    let cx = Context {
        view: &view,
        layout: &TableLayout::OVN_23_03,
        cache: &cache,
        only_dp: None,
        limit: 10_000,
    };
    compile_all(&cx, 1).desired
}

fn text(d: &DesiredFlows) -> Vec<String> {
    let mut v: Vec<String> = d.iter().map(|f| f.to_flow().to_string()).collect();
    v.sort();
    v
}

fn random_set(rng: &mut impl Rng, pool: usize) -> BTreeSet<String> {
    (0..pool)
        .filter(|_| rng.gen_bool(0.5))
        .map(|i| format!("10.0.0.{}", i + 1))
        .collect()
}

/// Mostly a small change (one or two addresses), now and then a large one.
fn change(rng: &mut impl Rng, s: &BTreeSet<String>) -> BTreeSet<String> {
    if rng.gen_bool(0.2) {
        return random_set(rng, 12);
    }
    let mut n = s.clone();
    for _ in 0..rng.gen_range(1..=2) {
        let a = format!("10.0.0.{}", rng.gen_range(1..=12));
        if !n.remove(&a) {
            n.insert(a);
        }
    }
    n
}

#[test]
fn in_place_changes_equal_a_full_compile() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let (mut as1, mut as2) = (random_set(&mut rng, 12), random_set(&mut rng, 12));
    let mut in_place = [0usize; LFLOWS.len()];
    for step in 0..60 {
        let ids = Ids::default();
        let old = southbound(&as1, &as2);
        let mut table = full(&old, &ids);
        assert!(!table.is_empty(), "step {step}: the lflows compile");
        let new1 = change(&mut rng, &as1);
        let new2 = if rng.gen_bool(0.5) {
            change(&mut rng, &as2)
        } else {
            as2.clone()
        };
        let new = southbound(&new1, &new2);
        let changes: Vec<SetChange> = [("as1", &as1, &new1), ("as2", &as2, &new2)]
            .into_iter()
            .filter(|(_, o, n)| o != n)
            .filter_map(|(name, o, n)| SetChange::between(name, o, n))
            .collect();
        let view = SbView::new(&new, "hv1", &ids);
        let cache = MatchCache::default();
        let cx = Context {
            view: &view,
            layout: &TableLayout::OVN_23_03,
            cache: &cache,
            only_dp: None,
            limit: 10_000,
        };
        let lflows = new.replica.table::<LogicalFlow>().unwrap();
        let mut recompile: BTreeSet<usize> = BTreeSet::new();
        for (i, (name, m, may)) in LFLOWS.iter().enumerate() {
            let uuid: sbclient::Uuid = common::short_uuid(name).parse().unwrap();
            let lf = lflows.get(&uuid).unwrap();
            let touched = [("as1", &as1, &new1), ("as2", &as2, &new2)]
                .iter()
                .filter(|(s, o, n)| o != n && m.contains(&format!("${s}")))
                .count();
            let mine: Vec<&SetChange> = changes
                .iter()
                .filter(|c| m.contains(&format!("${}", c.name)))
                .collect();
            if touched == 0 {
                continue;
            }
            if mine.len() < touched {
                recompile.insert(i);
                continue;
            }
            for c in mine {
                let d = logical_flow_set_delta(&uuid, lf, &cx, c);
                ids.release(&d.uses);
                match d.flows {
                    Some((added, removed)) if !recompile.contains(&i) => {
                        assert!(may, "{name}: {m} changed in place");
                        table.remove_some(Owner::Lflow(uuid), &removed);
                        table.add(Owner::Lflow(uuid), added);
                        in_place[i] += 1;
                    }
                    _ => {
                        recompile.insert(i);
                    }
                }
            }
        }
        // What could not be changed in place: the lflow's flows from the new content.
        let fresh = full(&new, &Ids::default());
        for i in recompile {
            let uuid: sbclient::Uuid = common::short_uuid(LFLOWS[i].0).parse().unwrap();
            table.replace(Owner::Lflow(uuid), fresh.flows_of(Owner::Lflow(uuid)));
        }
        assert_eq!(
            text(&table),
            text(&fresh),
            "step {step}: {as1:?} {as2:?} -> {new1:?} {new2:?}"
        );
        (as1, as2) = (new1, new2);
    }
    for (i, (name, _, may)) in LFLOWS.iter().enumerate() {
        assert_eq!(
            in_place[i] > 0,
            *may,
            "{name}: changed in place {} times",
            in_place[i]
        );
    }
}
