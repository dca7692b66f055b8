//! Each stage counts its work as a node of `inc-engine/show-stats`.

use std::time::{Duration, Instant};

use super::run_split_tests::engine_with_unbound_vif;
use crate::daemon::commands::{self, Control, Outcome};

fn show_stats(e: &mut super::core::Engine, args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    match commands::handle(e, &mut Control::default(), "inc-engine/show-stats", &args) {
        Outcome::Reply(Ok(text)) => text,
        _ => panic!("inc-engine/show-stats did not reply"),
    }
}

#[test]
fn the_stages_are_listed_in_the_order_data_flows() {
    let mut e = engine_with_unbound_vif();
    let names: Vec<String> = show_stats(&mut e, &[])
        .lines()
        .filter_map(|l| l.strip_prefix("Node: ").map(str::to_owned))
        .collect();
    assert_eq!(
        names,
        [
            "inputs",
            "runtime_data",
            "physical_flow_output",
            "logical_flow_output",
            "flow_output",
            "install",
            "sb_writes",
            "ovs_writes",
        ]
    );
}

#[test]
fn each_stage_counts_its_own_work() {
    let mut e = engine_with_unbound_vif();
    // The OVS and the Southbound replica changed once each, on a connection from scratch.
    assert_eq!(show_stats(&mut e, &["inputs", "compute"]), "2");
    assert_eq!(show_stats(&mut e, &["inputs", "recompute"]), "1");
    let now = Instant::now() + Duration::from_secs(11);
    let mut actions = e.run_bindings(now);
    assert!(actions.sb_txn.is_some(), "the claim");
    e.run_flows(now, &mut actions);
    assert!(actions.ovs_txn.is_some(), "the bridge's keys");
    assert_eq!(show_stats(&mut e, &["sb_writes", "compute"]), "1");
    assert_eq!(show_stats(&mut e, &["ovs_writes", "compute"]), "1");
    assert_eq!(show_stats(&mut e, &["runtime_data", "recompute"]), "1");
    assert_eq!(
        show_stats(&mut e, &["logical_flow_output", "recompute"]),
        "1"
    );
    // No switch yet: nothing was put.
    assert_eq!(show_stats(&mut e, &["install", "compute"]), "0");
    assert_eq!(show_stats(&mut e, &["install", "recompute"]), "0");
}
