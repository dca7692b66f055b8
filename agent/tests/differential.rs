//! Flow-for-flow comparison with what the real ovn-controller 23.03.1 installed for the
//! reference sandbox (tests/data/of_final.txt), table layout `ovn-23.03`.
//!
//! Southbound tables other than Logical_Flow were not saved with the dump; they are rebuilt
//! by tests/data/derive_sandbox.py (keys recovered from the real flows). Group ids are taken
//! from the real `dump-groups` (ids are allocation-order artifacts), named meters as observed.

use std::collections::{BTreeMap, HashMap, HashSet};

use agent::compile::{compile_all, SbView};
use agent::lflow::layout::TableLayout;
use agent::sbdata::SbData;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

fn load_sb() -> SbData {
    let mut sb = SbData::default();
    let mut files: Vec<_> = std::fs::read_dir(format!("{DATA}/sandbox"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.push(format!("{DATA}/lflows_final.json").into());
    for f in files {
        sb.load_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    }
    sb
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
            .push(flow.to_string());
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

fn names_unrelated_port(view: &SbView<'_>, sb: &SbData, lf: &agent::sbdata::LflowRow) -> bool {
    use agent::lflow::flows::ChassisView;
    let Some(dp) = sb
        .datapaths
        .iter()
        .find(|d| Some(&d.uuid) == lf.datapath.as_ref())
    else {
        return false;
    };
    lf.match_text.split('"').skip(1).step_by(2).any(|p| {
        view.port_key(&dp.uuid, p)
            .is_some_and(|k| k < 32768 && !view.is_related(dp.key, k))
    })
}

#[test]
fn identical_flows_percentage() {
    let sb = load_sb();
    assert_eq!(sb.lflows.len(), 761);
    let view = SbView::new(&sb, "hv1");
    view.seed_groups(&std::fs::read_to_string(format!("{DATA}/groups_final.txt")).unwrap());
    view.seed_named_meter("acl-meter", 3);
    view.seed_named_meter("copp-arp", 4);
    let report = compile_all(
        &sb,
        &view,
        &TableLayout::OVN_23_03,
        None,
        agent::lflow::DEFAULT_FLOW_LIMIT,
    );
    assert_eq!(report.duplicates, 0);
    let ours_text: Vec<String> = report.flows.iter().map(ToString::to_string).collect();
    let ours = by_cookie(ours_text.iter().map(String::as_str));
    let real_text = std::fs::read_to_string(format!("{DATA}/of_final.txt")).unwrap();
    let real = by_cookie(real_text.lines());

    let known: HashSet<u32> = sb
        .lflows
        .iter()
        .map(|l| u32::from_str_radix(&l.uuid[..8], 16).unwrap())
        .collect();
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
    let actions_of: HashMap<u32, &str> = sb
        .lflows
        .iter()
        .map(|l| {
            (
                u32::from_str_radix(&l.uuid[..8], 16).unwrap(),
                l.actions.as_str(),
            )
        })
        .collect();
    for lf in &sb.lflows {
        let c = u32::from_str_radix(&lf.uuid[..8], 16).unwrap();
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
        } else if r.is_empty() && names_unrelated_port(&view, &sb, lf) {
            // The dump lacks the `tags` column (in_out_port), which makes ovn-controller skip
            // lflows of ports that are not related to the chassis.
            data_gap += 1;
        } else {
            other.push(format!(
                "{} {} {}: {:?}\n   real {:?}\n   ours {:?}",
                lf.uuid,
                lf.pipeline,
                lf.table_id,
                lf.match_text,
                r.first(),
                o.first()
            ));
        }
    }
    let total = sb.lflows.len();
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
    let view = SbView::new(&sb, "hv1");
    let ours: Vec<String> = {
        let mut v: Vec<String> =
            agent::compile::port_security_flows(&sb, &view, &TableLayout::OVN_23_03, None)
                .iter()
                .map(|f| f.to_string().trim().to_string())
                .collect();
        v.sort();
        v
    };
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
    let view = SbView::new(&sb, "hv1");
    let mut ours: Vec<String> = agent::compile::hairpin_flows(&sb, &view, &TableLayout::OVN_23_03)
        .iter()
        .map(|f| f.to_string().trim().to_string())
        .collect();
    ours.sort();
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
