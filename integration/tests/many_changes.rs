//! A thousand Northbound changes in a row, each its own transaction, in the two-switch lab
//! with ovn-controller on both chassis, then ovn-agent: an address added to an address set and removed again, a
//! drop ACL on a port group added and deleted, the port group's members changed, a logical
//! port's addresses changed. None of them may make ovn-agent recompute every flow (its
//! `full recomputes` counter stays where the start left it), and afterwards the flows it
//! installed change by change are exactly what a fresh start computes, and the routed
//! traffic passes. ovn-controller's full recomputes of its logical flows are printed beside.
//! `OVN_CHANGES=N` sets the number of changes (default 1000).

mod common;

use common::{two_switches_one_router, Setup};
use integration::observe::Report;

fn changes() -> usize {
    std::env::var("OVN_CHANGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// The NB transaction of change `i` (each undone by the next of its kind).
fn change(i: usize) -> Vec<String> {
    let k = i / 8;
    let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let addr = format!("10.9.{}.{}", (k / 250) % 250, k % 250 + 1);
    let acl_match = format!(
        "outport == @pg1 && ip4.src == 10.8.{}.{}",
        (k / 250) % 250,
        k % 250 + 1
    );
    match i % 8 {
        0 => owned(&[
            "add",
            "Address_Set",
            "as1",
            "addresses",
            &format!("\"{addr}\""),
        ]),
        1 => owned(&[
            "remove",
            "Address_Set",
            "as1",
            "addresses",
            &format!("\"{addr}\""),
        ]),
        2 => owned(&["acl-add", "pg1", "to-lport", "1001", &acl_match, "drop"]),
        3 => owned(&["acl-del", "pg1", "to-lport", "1001", &acl_match]),
        4 => owned(&["pg-set-ports", "pg1", "vm1", "vm3", "vm5"]),
        5 => owned(&["pg-set-ports", "pg1", "vm1", "vm3"]),
        6 => owned(&[
            "lsp-set-addresses",
            "vm5",
            "50:54:00:00:01:05 10.0.1.5",
            "50:54:00:00:01:55 10.0.1.55",
        ]),
        _ => owned(&["lsp-set-addresses", "vm5", "50:54:00:00:01:05 10.0.1.5"]),
    }
}

/// ovn-controller's `logical_flow_output` full recomputes (`inc-engine/show-stats`), or
/// ovn-agent's `full recomputes`, on each chassis.
fn recomputes(net: &common::Net) -> [Option<u64>; 2] {
    ["hv1", "hv2"].map(|c| {
        if net.setup.label != common::ORACLE {
            return common::agent_counter(net, c, "full recomputes");
        }
        let stats = net
            .lab
            .chassis(c)
            .and_then(|ch| ch.controller_appctl(&["inc-engine/show-stats"]))
            .ok()?;
        let node = stats
            .split("Node: ")
            .find(|n| n.starts_with("logical_flow_output"))?;
        node.lines()
            .find_map(|l| l.trim().strip_prefix("- recompute:"))?
            .trim()
            .parse()
            .ok()
    })
}

#[test]
fn a_thousand_changes_recompute_nothing() {
    let mut report = Report::default();
    let mut nets = Vec::new();
    for setup in Setup::oracle_and_agent(&["hv1", "hv2"]) {
        let mut net = two_switches_one_router(&setup, &["hv1", "hv2"]).expect("build the lab");
        let central = net.lab.central();
        central
            .nbctl(&["--wait=hv", "pg-add", "pg1", "vm1", "vm3"])
            .expect("pg1");
        central
            .nbctl(&[
                "--wait=hv",
                "--",
                "create",
                "Address_Set",
                "name=as1",
                "addresses=\"10.7.0.1\"",
                "--",
                "acl-add",
                "pg1",
                "to-lport",
                "1000",
                "outport == @pg1 && ip4.src == $as1",
                "drop",
            ])
            .expect("as1 and its ACL");
        let before = recomputes(&net);
        let n = changes();
        for i in 0..n {
            let args = change(i);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            net.lab
                .central()
                .nbctl(&args)
                .unwrap_or_else(|e| panic!("change {i} ({args:?}): {e}"));
            if i % 100 == 99 {
                net.lab.central().wait_hv_sync().expect("--wait=hv");
            }
        }
        net.lab.central().wait_hv_sync().expect("--wait=hv");
        let after = recomputes(&net);
        eprintln!(
            "[{}] {n} changes: full recomputes hv1/hv2 before {before:?}, after {after:?} {}",
            setup.label,
            common::show_stats(&net, "hv1")
                .lines()
                .next()
                .unwrap_or_default()
        );
        let mut outcome = common::restart_changes_no_flow(&mut net, &["hv1", "hv2"]);
        let agent = setup.label != common::ORACLE;
        if agent && (before.iter().any(Option::is_none) || before != after) {
            outcome.failures.push(format!(
                "full recomputes during the changes: before {before:?}, after {after:?}"
            ));
        }
        let mut p = net.probe();
        common::expect_routed_pings(&mut p, &net, "after the changes: ");
        let pings = p.finish(&["vm1", "vm2", "vm3", "vm5"]);
        outcome.failures.extend(pings.failures);
        report.add("1000 changes in a row", &setup.label, outcome);
        nets.push(net);
    }
    common::conclude_healthy(nets, &report);
}
