//! A Southbound database with an older schema (issue 9, bad input): `ovn-sb.ovsschema` without
//! `Logical_Flow.controller_meter`, `Port_Binding.virtual_parent` and
//! `Port_Binding.mirror_rules` (columns newer OVN releases added; ovn-agent monitors all three
//! and writes `virtual_parent` when it releases a port). Run with the real ovn-controller (the
//! oracle) and with ovn-agent on every chassis: the controller connects, claims, forwards,
//! acknowledges nb_cfg (`--wait=hv`) and releases a port, exactly as the oracle does.
//! ovn-agent monitors only the columns the server has, leaves the missing ones out of its
//! transactions (the release's `virtual_parent` would fail the whole transaction), and logs
//! and counts the missing columns (`inc-engine/show-stats`).
//!
//! Then ovn-agent alone on a schema that also lacks `Port_Binding.requested_chassis` and
//! `Chassis_Private.nb_cfg_timestamp`. Intended differences, observed here: ovn-controller
//! 23.03.1 cannot run there. Its Port_Binding monitor condition names `requested_chassis`: the
//! server refuses the condition change ("No column requested_chassis in table Port_Binding").
//! It writes `nb_cfg_timestamp` with every nb_cfg acknowledgement: each fails ("No column
//! nb_cfg_timestamp in table Chassis_Private"), so `--wait=hv` never returns. ovn-agent leaves
//! clauses on missing columns out of its conditions and the columns out of its writes.

mod common;

use std::time::Duration;

use common::{two_switches_one_router_in, Net, Scenario, Setup};
use integration::host::wait_for;
use integration::observe::{Outcome, Probe};
use integration::{Controller, Lab};

/// Columns left out of the schema both controllers face.
const DROPPED: &[(&str, &str)] = &[
    ("Logical_Flow", "controller_meter"),
    ("Port_Binding", "virtual_parent"),
    ("Port_Binding", "mirror_rules"),
];
/// Left out too where ovn-agent runs alone.
const DROPPED_TOO: &[(&str, &str)] = &[
    ("Port_Binding", "requested_chassis"),
    ("Chassis_Private", "nb_cfg_timestamp"),
];

/// How many columns of ovn-agent's Southbound model (sbclient's schema: 23.03's plus the
/// columns of later releases it reads) the stack's own schema lacks: they count as missing
/// before anything is dropped.
fn model_columns_the_stack_lacks() -> usize {
    let read = |path: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).expect("JSON")
    };
    let model = read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../sbclient/schemas/ovn-sb.ovsschema"
    ));
    let stack = read(&integration::central::sb_schema());
    let mut lacking = 0;
    for (table, t) in model["tables"].as_object().expect("tables") {
        let Some(theirs) = stack["tables"][table]["columns"].as_object() else {
            continue;
        };
        let ours = t["columns"].as_object().expect("columns");
        lacking += ours.keys().filter(|c| !theirs.contains_key(*c)).count();
    }
    lacking
}

/// `ovn-sb.ovsschema` without the `dropped` columns, written into `dir`.
fn older_schema(dir: &std::path::Path, dropped: &[(&str, &str)]) -> String {
    let text = std::fs::read_to_string(integration::central::sb_schema()).expect("the SB schema");
    let mut schema: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    for (table, column) in dropped {
        let columns = schema["tables"][table]["columns"]
            .as_object_mut()
            .unwrap_or_else(|| panic!("no table {table}"));
        assert!(
            columns.remove(*column).is_some(),
            "no column {table}.{column}"
        );
    }
    // The checksum no longer matches; ovsdb-server does not check it.
    schema.as_object_mut().map(|o| o.remove("cksum"));
    let path = dir.join(format!("ovn-sb-without-{}.ovsschema", dropped.len()));
    std::fs::write(&path, schema.to_string()).expect("write the schema");
    path.display().to_string()
}

fn forwards(p: &mut Probe<'_>, net: &Net) {
    let (vm1, vm3) = (net.vm("vm1"), net.vm("vm3"));
    let there = common::udp_to(vm1, vm3, 5000, b"vm1 to vm3");
    p.send("vm1", &there);
    p.expect_exact("vm1 -> vm3 switched (hv1 -> hv2)", "vm3", &there);
    let back = common::udp_to(vm3, vm1, 5000, b"vm3 to vm1");
    p.send("vm3", &back);
    p.expect_exact("vm3 -> vm1 switched (hv2 -> hv1)", "vm1", &back);
    common::expect_routed_pings(p, net, "");
}

fn is_agent(net: &Net, chassis: &str) -> bool {
    net.setup
        .controller(chassis)
        .is_some_and(|c| *c != Controller::OvnController)
}

fn connect_claim_forward(net: &Net) -> Outcome {
    let mut p = net.probe();
    forwards(&mut p, net);
    for chassis in ["hv1", "hv2"] {
        if !is_agent(net, chassis) {
            continue;
        }
        let stats = common::show_stats(net, chassis);
        let base = model_columns_the_stack_lacks();
        if !stats.contains(&format!(
            "missing columns {} (0 required)",
            base + DROPPED.len()
        )) && !stats.contains(&format!(
            "missing columns {} (0 required)",
            base + DROPPED.len() + DROPPED_TOO.len()
        )) {
            p.fail(format!(
                "{chassis}: show-stats does not count the missing columns:\n{stats}"
            ));
        }
        let log = common::controller_log(net, chassis);
        for (table, column) in DROPPED {
            if !log.contains(&format!("has no column {table}.{column}")) {
                p.fail(format!("{chassis}: the log does not name {table}.{column}"));
            }
        }
        let failed: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("southbound transaction: "))
            .collect();
        if !failed.is_empty() {
            p.fail(format!(
                "{chassis}: failed transactions:\n{}",
                failed.join("\n")
            ));
        }
    }
    p.finish(&net.ports())
}

/// vm6 is plugged on hv1, claimed, unplugged and released (the release writes
/// `virtual_parent` in ovn-agent), then removed.
fn release(net: &Net) -> Outcome {
    let mut p = net.probe();
    if common::plug_vm6_on_hv1(&mut p, net).is_none() {
        return p.finish(&net.ports());
    }
    let up = integration::scenario::wait_port_up(p.lab().central(), "vm6");
    p.check("vm6 comes up", up);
    let claimed = p.lab().central().port_binding_chassis("vm6");
    if let Some(c) = p.check("vm6's chassis", claimed) {
        p.fact("vm6 bound to", c.unwrap_or_default());
    }
    let unplugged = p
        .lab()
        .chassis("hv1")
        .and_then(|c| c.vsctl(&["del-port", "br-int", "vm6"]));
    p.check("unplug vm6", unplugged);
    let central = p.lab().central();
    let released = wait_for("vm6 released", Duration::from_secs(15), || {
        Ok(central.port_binding_chassis("vm6")?.is_none().then_some(()))
    });
    p.fact(
        "vm6 released after unplugging",
        if released.is_ok() { "yes" } else { "no" },
    );
    forwards(&mut p, net);
    p.nbctl(&["lsp-del", "vm6"]);
    p.wait_hv("vm6 removed");
    p.finish(&net.ports())
}

const CASES: &[Scenario] = &[
    (
        "connect, claim, forward with an older SB schema",
        connect_claim_forward,
    ),
    ("release a port with an older SB schema", release),
];

#[test]
fn an_older_southbound_schema_still_connects_claims_and_forwards() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let schema = older_schema(dir.path(), DROPPED);
    let setups = Setup::oracle_and_agent(&["hv1", "hv2"]);
    let (nets, report) = common::run_all(
        &setups,
        |s| two_switches_one_router_in(Lab::start_with_sb_schema(&schema)?, s, &["hv1", "hv2"]),
        CASES,
    );
    common::conclude(nets, &report);
    // ovn-agent alone, on a schema ovn-controller cannot use (the intended differences above).
    let mut dropped = DROPPED.to_vec();
    dropped.extend_from_slice(DROPPED_TOO);
    let schema = older_schema(dir.path(), &dropped);
    let agent = Controller::ovn_agent().expect("build ovn-agent");
    let setup = Setup::all(&agent, &["hv1", "hv2"]);
    let net = two_switches_one_router_in(
        Lab::start_with_sb_schema(&schema).expect("start the lab"),
        &setup,
        &["hv1", "hv2"],
    )
    .expect("ovn-agent connects, claims and acknowledges nb_cfg on the even older schema");
    let mut problems = Vec::new();
    for (name, case) in CASES {
        let outcome = case(&net);
        problems.extend(outcome.failures.iter().map(|f| format!("{name}: {f}")));
        eprintln!(
            "[ovn-agent, even older schema] {name}: {} unmet",
            outcome.failures.len()
        );
    }
    for chassis in ["hv1", "hv2"] {
        let stats = common::show_stats(&net, chassis);
        let missing = model_columns_the_stack_lacks() + dropped.len();
        if !stats.contains(&format!("missing columns {missing} (0 required)")) {
            problems.push(format!("{chassis}: show-stats:\n{stats}"));
        }
        let log = common::controller_log(&net, chassis);
        for (table, column) in DROPPED_TOO {
            if !log.contains(&format!("has no column {table}.{column}")) {
                problems.push(format!("{chassis}: {table}.{column} not logged as missing"));
            }
        }
    }
    if !problems.is_empty() {
        let _keep = net;
        panic!("{}", problems.join("\n"));
    }
}
