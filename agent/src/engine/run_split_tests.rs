//! A run in two halves: the claim leaves with the first, before any flow is compiled.

use std::time::{Duration, Instant};

use sbclient::Replica;
use serde_json::{json, Value};

use super::core::{Engine, EngineOptions};

const OVS_ROOT: &str = "00000000-0000-0000-0000-00000000a001";
const BRIDGE: &str = "00000000-0000-0000-0000-00000000a002";
const PORT: &str = "00000000-0000-0000-0000-00000000a003";
const IFACE: &str = "00000000-0000-0000-0000-00000000a004";
const CHASSIS: &str = "00000000-0000-0000-0000-00000000b001";
const ENCAP: &str = "00000000-0000-0000-0000-00000000b002";
const DATAPATH: &str = "00000000-0000-0000-0000-00000000b003";
const BINDING: &str = "00000000-0000-0000-0000-00000000b004";

fn apply(replica: &mut Replica, update: &Value) {
    let raw = serde_json::value::RawValue::from_string(update.to_string()).unwrap();
    replica.apply_update(&raw).unwrap();
}

fn uuid_set(u: &str) -> Value {
    json!(["set", [["uuid", u]]])
}

fn map(pairs: &[(&str, &str)]) -> Value {
    json!([
        "map",
        pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
    ])
}

/// A chassis `hv1` with br-int and one VIF (iface-id `lp1`, ofport 1), and a Southbound
/// database where `hv1` is registered and `lp1` is unbound.
pub(super) fn engine_with_unbound_vif() -> Engine {
    let mut e = Engine::new(EngineOptions::default());
    apply(
        &mut e.inputs.ovs,
        &json!({
            "Open_vSwitch": { OVS_ROOT: { "insert": {
                "bridges": uuid_set(BRIDGE),
                "external_ids": map(&[
                    ("system-id", "hv1"),
                    ("ovn-remote", "unix:/nonexistent"),
                    ("ovn-encap-type", "geneve"),
                    ("ovn-encap-ip", "192.0.2.1"),
                ]),
            }}},
            "Bridge": { BRIDGE: { "insert": { "name": "br-int", "ports": uuid_set(PORT) }}},
            "Port": { PORT: { "insert": { "name": "vif1", "interfaces": uuid_set(IFACE) }}},
            "Interface": { IFACE: { "insert": {
                "name": "vif1",
                "ofport": 1,
                "external_ids": map(&[("iface-id", "lp1")]),
            }}},
        }),
    );
    e.ovs_connected = true;
    e.ovs_changed();
    let started = Instant::now();
    e.sb_connected(started, false);
    apply(
        &mut e.inputs.sb.replica,
        &json!({
            "SB_Global": { "00000000-0000-0000-0000-00000000b000": { "insert": { "nb_cfg": 1 }}},
            "Encap": { ENCAP: { "insert": {
                "chassis_name": "hv1", "type": "geneve", "ip": "192.0.2.1",
                "options": map(&[("csum", "true")]),
            }}},
            "Chassis": { CHASSIS: { "insert": {
                "name": "hv1", "hostname": "host", "encaps": uuid_set(ENCAP),
            }}},
            "Datapath_Binding": { DATAPATH: { "insert": {
                "tunnel_key": 1,
                "external_ids": map(&[("name", "ls1")]),
            }}},
            "Port_Binding": { BINDING: { "insert": {
                "logical_port": "lp1",
                "datapath": ["uuid", DATAPATH],
                "tunnel_key": 1,
                "mac": ["set", ["00:00:00:00:00:01 10.0.0.1"]],
                "up": false,
            }}},
        }),
    );
    e.sb_changed();
    e
}

#[test]
fn the_claim_leaves_with_the_first_half_and_the_flows_follow_in_the_second() {
    let mut e = engine_with_unbound_vif();
    // Past the initial settling time, so that the first run compiles.
    let now = Instant::now() + Duration::from_secs(11);
    let mut actions = e.run_bindings(now);
    let txn = actions.sb_txn.take().expect("the claim");
    let ops = txn.to_params().to_string();
    assert!(
        ops.contains("Port_Binding") && ops.contains(CHASSIS),
        "{ops}"
    );
    assert_eq!(e.flows.len(), 0, "no flow before the second half");
    e.run_flows(now, &mut actions);
    assert!(!e.flows.is_empty(), "the bound port's flows");
    // The second half wrote the bridge's keys (never applied to the replica here, so a
    // second half would write them again); without a first half before it, it does nothing.
    assert!(actions.ovs_txn.take().is_some(), "the bridge's keys");
    e.ovs_changed();
    e.run_flows(now, &mut actions);
    assert!(actions.ovs_txn.is_none(), "a second half without a first");
    let mut again = e.run_bindings(now);
    e.run_flows(now, &mut again);
    assert!(again.ovs_txn.is_some(), "a whole run writes them again");
}

#[test]
fn a_port_whose_flows_are_in_goes_up_behind_its_claim_in_flight() {
    let mut e = engine_with_unbound_vif();
    let now = Instant::now() + Duration::from_secs(11);
    let binding: sbclient::Uuid = BINDING.parse().unwrap();
    let mut actions = e.run_bindings(now);
    assert!(actions.sb_txn.take().is_some(), "the claim");
    e.run_flows(now, &mut actions);
    // The claim is in flight; the switch confirms the port's flows.
    e.sb_busy = true;
    let actions = e.run_bindings(now);
    assert!(actions.sb_up_txn.is_none(), "no up before the flows are in");
    e.sb_writes.installed_ports.insert(binding);
    let mut actions = e.run_bindings(now);
    assert!(
        actions.sb_txn.is_none(),
        "nothing else while the claim is in flight"
    );
    let up = actions.sb_up_txn.take().expect("up behind the claim");
    let ops = up.to_params();
    let ops = ops.as_array().unwrap();
    assert_eq!(ops[1]["op"], "wait", "{ops:?}");
    assert_eq!(ops[1]["until"], "==");
    assert_eq!(ops[1]["rows"][0]["chassis"], json!(["uuid", CHASSIS]));
    assert_eq!(ops[2]["op"], "update");
    assert_eq!(ops[2]["row"]["up"], json!(true));
    e.run_flows(now, &mut actions);
    // While it is in flight, and once the claim showed, up is not written again.
    e.sb_up_busy = true;
    assert!(e.run_bindings(now).sb_up_txn.is_none());
    apply(
        &mut e.inputs.sb.replica,
        &json!({"Port_Binding": { BINDING: { "modify": { "chassis": ["uuid", CHASSIS] }}}}),
    );
    e.sb_changed();
    e.sb_busy = false;
    let mut actions = e.run_bindings(now);
    let again = actions.sb_txn.take().map(|t| t.to_params().to_string());
    assert!(
        again.as_ref().is_none_or(|t| !t.contains("\"up\"")),
        "{again:?}"
    );
    // Had the up transaction failed, the next run writes up the usual way.
    e.run_flows(now, &mut actions);
    e.sb_up_busy = false;
    let mut actions = e.run_bindings(now);
    let normal = actions.sb_txn.take().expect("up the usual way");
    assert!(normal.to_params().to_string().contains("\"up\""));
}

#[test]
fn an_interface_whose_port_is_seen_gets_its_clauses_once_bound_here() {
    let mut e = engine_with_unbound_vif();
    let now = Instant::now() + Duration::from_secs(11);
    let pb_condition = |actions: &super::core::Actions| {
        actions
            .conditions
            .iter()
            .find(|(t, _)| *t == "Port_Binding")
            .map(|(_, c)| format!("{c:?}"))
    };
    // lp1 is seen (its datapath is local) and unbound: no clause for it delays the claim.
    let mut actions = e.run_bindings(now);
    assert!(actions.sb_txn.take().is_some(), "the claim");
    e.run_flows(now, &mut actions);
    let first = pb_condition(&actions).expect("a Port_Binding condition");
    assert!(!first.contains("lp1"), "{first}");
    // Once the claim shows, the interface's clauses come (its nested ports are found).
    apply(
        &mut e.inputs.sb.replica,
        &json!({"Port_Binding": { BINDING: { "modify": { "chassis": ["uuid", CHASSIS] }}}}),
    );
    e.sb_changed();
    let mut actions = e.run_bindings(now);
    e.run_flows(now, &mut actions);
    let bound = pb_condition(&actions).expect("the Port_Binding condition again");
    assert!(
        bound.contains("logical_port") && bound.contains("parent_port") && bound.contains("lp1"),
        "{bound}"
    );
}
