//! Flow-for-flow comparison with what the real ovn-controller 23.03.1 installed for the
//! reference sandbox (tests/data/of_final.txt), table layout `ovn-23.03`.
//!
//! Southbound tables other than Logical_Flow were not saved with the dump; they are rebuilt
//! by tests/data/derive_sandbox.py (keys recovered from the real flows). Group ids are taken
//! from the real `dump-groups` (ids are allocation-order artifacts), named meters as observed.

use std::collections::{BTreeMap, HashMap, HashSet};

mod common;

use agent::compile::{CompileReport, Owner};
use agent::lflow::layout::TableLayout;
use agent::southbound::Southbound;
use agent::view::{Ids, SbView};
use common::{compile, DATA};
use sbclient::ovn_sb::LogicalFlow;
use sbclient::Uuid;

fn load_sb() -> Southbound {
    common::sandbox(true)
}

fn lflows(sb: &Southbound) -> Vec<(Uuid, &LogicalFlow)> {
    let mut v: Vec<(Uuid, &LogicalFlow)> = sb
        .replica
        .table::<LogicalFlow>()
        .unwrap()
        .iter()
        .map(|(u, l)| (*u, l))
        .collect();
    v.sort_by_key(|(u, _)| *u);
    v
}

fn cookie(u: &Uuid) -> u32 {
    (u.as_u128() >> 96) as u32
}

/// The flows of one kind of owner, as sorted `ovs-ofctl` lines.
fn owner_lines(r: &CompileReport, kind: fn(&Owner) -> bool) -> Vec<String> {
    let mut v: Vec<String> = r
        .per_owner
        .iter()
        .filter(|(o, _)| kind(o))
        .flat_map(|(o, _)| r.desired.flows_of(*o))
        .map(|f| f.to_string().trim().to_string())
        .collect();
    v.sort();
    v
}

/// `meter:N` (a `set_meter` meter) without its number: ovn-controller numbers those in the
/// order it happens to process lflows, ours are content-addressed; the dump cannot tell.
fn unnumber_set_meter(flow: &str) -> String {
    match flow.find("meter:") {
        Some(i) => {
            let end = flow[i + 6..]
                .find(|c: char| !c.is_ascii_digit())
                .map_or(flow.len(), |e| i + 6 + e);
            format!("{}meter:N{}", &flow[..i], &flow[end..])
        }
        None => flow.to_string(),
    }
}

/// `table=..., priority=...,match actions=...` lines of lflow tables, by cookie.
fn by_cookie<'a>(lines: impl Iterator<Item = &'a str>) -> BTreeMap<u32, Vec<String>> {
    let mut out: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for l in lines {
        let l = l.trim();
        let Some(rest) = l.strip_prefix("cookie=0x") else {
            continue;
        };
        let Some((c, flow)) = rest.split_once(", ") else {
            continue;
        };
        let table: u32 = flow
            .trim_start_matches("table=")
            .split(',')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        if !(8..=36).contains(&table) && !(42..=63).contains(&table) {
            continue;
        }
        out.entry(u32::from_str_radix(c, 16).unwrap())
            .or_default()
            .push(unnumber_set_meter(flow));
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

fn names_unrelated_port(view: &SbView<'_>, lf: &LogicalFlow) -> bool {
    use agent::lflow::flows::ChassisView;
    let Some(dp) = lf.logical_datapath else {
        return false;
    };
    let Some(info) = view.datapath(&dp) else {
        return false;
    };
    lf.match_.split('"').skip(1).step_by(2).any(|p| {
        view.port_key(&dp, p)
            .is_some_and(|k| k < 32768 && !view.is_related(info.key, k))
    })
}

#[test]
fn identical_flows_percentage() {
    let sb = load_sb();
    let all = lflows(&sb);
    assert_eq!(all.len(), 761);
    let ids = Ids::default();
    ids.seed_groups(&std::fs::read_to_string(format!("{DATA}/groups_final.txt")).unwrap())
        .unwrap();
    ids.seed_meter("acl-meter", 3);
    ids.seed_meter("copp-arp", 4);
    let view = SbView::new(&sb, "hv1", &ids);
    let report = compile(
        &sb,
        "hv1",
        &ids,
        &TableLayout::OVN_23_03,
        agent::lflow::DEFAULT_FLOW_LIMIT,
    );
    assert_eq!(report.duplicates, 0);
    let ours_text: Vec<String> = report.flows().iter().map(ToString::to_string).collect();
    let ours = by_cookie(ours_text.iter().map(String::as_str));
    let real_text = std::fs::read_to_string(format!("{DATA}/of_final.txt")).unwrap();
    let real = by_cookie(real_text.lines());

    let known: HashSet<u32> = all.iter().map(|(u, _)| cookie(u)).collect();
    // Flows installed under cookies that are not in the lflow dump (the `drop` lflows were
    // re-created by northd between the two dumps): matched by content instead.
    let orphan_sets: Vec<&Vec<String>> = real
        .iter()
        .filter(|(c, _)| **c != 0 && !known.contains(c))
        .map(|(_, v)| v)
        .collect();

    let (mut by_cookie_same, mut by_content_same, mut intended, mut data_gap) = (0, 0, 0, 0);
    let mut other = Vec::new();
    let empty = Vec::new();
    let actions_of: HashMap<u32, &str> = all
        .iter()
        .map(|(u, l)| (cookie(u), l.actions.as_str()))
        .collect();
    for (uuid, lf) in &all {
        let c = cookie(uuid);
        let o = ours.get(&c).unwrap_or(&empty);
        let r = real.get(&c).unwrap_or(&empty);
        if o == r {
            by_cookie_same += 1;
        } else if r.is_empty() && orphan_sets.contains(&o) {
            by_content_same += 1;
        } else if actions_of[&c].contains("; ct_commit") {
            // 23.03.1 drops `ct_commit` when it is not the first action (expr-actions.md §9.1).
            intended += 1;
        } else if r.iter().any(|x| x.contains("meter_id="))
            && !o.iter().any(|x| x.contains("meter_id="))
        {
            // The dump lacks the Logical_Flow controller_meter column (CoPP meter).
            data_gap += 1;
        } else if r.is_empty() && names_unrelated_port(&view, lf) {
            // The dump lacks the `tags` column (in_out_port), which makes ovn-controller skip
            // lflows of ports that are not related to the chassis.
            data_gap += 1;
        } else {
            other.push(format!(
                "{} {} {}: {:?}\n   real {:?}\n   ours {:?}",
                uuid,
                lf.pipeline,
                lf.table_id,
                lf.match_,
                r.first(),
                o.first()
            ));
        }
    }
    let total = all.len();
    let identical = by_cookie_same + by_content_same;
    println!(
        "lflows {total}: identical {identical} ({:.1}%) [same cookie {by_cookie_same}, same content under a re-created cookie {by_content_same}]; \
         intended differences {intended} (ct_commit not first); data gaps {data_gap} (controller_meter/tags columns not in dump); other {}",
        100.0 * identical as f64 / total as f64,
        other.len()
    );
    println!(
        "conjunction clause flows (cookie 0): real {}, ours {}, identical {}",
        real.get(&0).map_or(0, Vec::len),
        ours.get(&0).map_or(0, Vec::len),
        real.get(&0) == ours.get(&0)
    );
    for o in &other {
        println!("  {o}");
    }
    assert_eq!(
        real.get(&0),
        ours.get(&0),
        "conjunction clause flows differ"
    );
    assert!(other.is_empty(), "{} unexplained differences", other.len());
    assert!(
        identical * 100 >= total * 99,
        "identical {identical}/{total}"
    );
}

/// Tables 73-75 (port security of sw0-p1, the one port with `port_security`) against what
/// the real ovn-controller installed. Intended difference: 23.03.1 matches `nw_ttl=225` in
/// four ND flows (a typo fixed upstream later; valid ND packets carry 255), we match 255.
#[test]
fn port_security_tables_match_real_flows() {
    let sb = load_sb();
    let r = compile(&sb, "hv1", &Ids::default(), &TableLayout::OVN_23_03, 10_000);
    let ours = owner_lines(&r, |o| matches!(o, Owner::PortSecurity(_)));
    let real_text = std::fs::read_to_string(format!("{DATA}/of_final.txt")).unwrap();
    let mut real: Vec<String> = real_text
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.contains(", table=73,") || l.contains(", table=74,") || l.contains(", table=75,")
        })
        .map(|l| l.replace("nw_ttl=225", "nw_ttl=255"))
        .collect();
    real.sort();
    assert_eq!(real.len(), 29);
    assert_eq!(ours, real);
}

/// Tables 68 and 70 (load-balancer hairpin) against the real flows.
#[test]
fn lb_hairpin_tables_match_real_flows() {
    let sb = load_sb();
    let r = compile(&sb, "hv1", &Ids::default(), &TableLayout::OVN_23_03, 10_000);
    let ours = owner_lines(&r, |o| matches!(o, Owner::LbHairpin(_)));
    let real_text = std::fs::read_to_string(format!("{DATA}/of_final.txt")).unwrap();
    let mut real: Vec<String> = real_text
        .lines()
        .map(str::trim)
        .filter(|l| l.contains(", table=68,") || l.contains(", table=70,"))
        .map(String::from)
        .collect();
    real.sort();
    assert_eq!(real.len(), 15);
    assert_eq!(ours, real);
}
