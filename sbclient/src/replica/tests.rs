use super::*;
use crate::datum::Atom;
use crate::generated::ovn_sb::{DatapathBinding, PortBinding};
use serde_json::json;

const PB1: &str = "00000000-0000-0000-0000-0000000000b1";
const PB2: &str = "00000000-0000-0000-0000-0000000000b2";
const DP1: &str = "00000000-0000-0000-0000-0000000000d1";

fn uuid(s: &str) -> Uuid {
    Uuid::parse_str(s).unwrap()
}

fn replica() -> Replica {
    let mut r = Replica::new("OVN_Southbound");
    r.add_table::<PortBinding>()
        .unwrap()
        .add_index("logical_port");
    r.add_table::<DatapathBinding>()
        .unwrap()
        .add_index("tunnel_key");
    r
}

fn apply(r: &mut Replica, v: &serde_json::Value) {
    let text = v.to_string();
    r.apply_update(raw(&text).unwrap()).unwrap();
}

fn initial() -> serde_json::Value {
    json!({
        "Port_Binding": {
            PB1: {"initial": {"logical_port": "lp1", "tunnel_key": 1, "datapath": ["uuid", DP1],
                              "mac": ["set", ["00:00:00:00:00:01 10.0.0.1"]],
                              "options": ["map", [["a", "1"], ["b", "2"]]], "type": ""}},
            PB2: {"initial": {"logical_port": "lp2", "tunnel_key": 2, "datapath": ["uuid", DP1]}}
        },
        "Datapath_Binding": {
            DP1: {"initial": {"tunnel_key": 5, "external_ids": ["map", [["name", "ls1"]]]}}
        }
    })
}

#[test]
fn initial_rows_are_typed_and_indexed() {
    let mut r = replica();
    apply(&mut r, &initial());
    let pbs = r.table::<PortBinding>().unwrap();
    assert_eq!(pbs.len(), 2);
    let pb1 = pbs.get(&uuid(PB1)).unwrap();
    assert_eq!(pb1.logical_port, "lp1");
    assert_eq!(pb1.datapath, uuid(DP1));
    assert_eq!(pb1.options.get("b").map(String::as_str), Some("2"));
    assert_eq!(pb1.chassis, None);
    let (found, _) = pbs.find_one("logical_port", &Atom::from("lp2")).unwrap();
    assert_eq!(*found, uuid(PB2));
    let dps = r.table::<DatapathBinding>().unwrap();
    assert_eq!(
        dps.find_one("tunnel_key", &Atom::from(5)).unwrap().0,
        &uuid(DP1)
    );
    assert_eq!(pbs.changes().inserted.len(), 2);
    assert_eq!(r.changed_tables(), vec!["Datapath_Binding", "Port_Binding"]);
    assert_eq!(r.stats().rows_applied, 3);
}

#[test]
fn modify_uses_diff_semantics_and_records_old_values() {
    let mut r = replica();
    apply(&mut r, &initial());
    r.clear_changes();
    apply(
        &mut r,
        &json!({"Port_Binding": {PB1: {"modify": {
            "logical_port": "lp1-renamed",
            "mac": ["set", ["00:00:00:00:00:01 10.0.0.1", "00:00:00:00:00:09"]],
            "options": ["map", [["a", "1"], ["b", "3"], ["c", "4"]]],
            "chassis": ["uuid", DP1]
        }}}}),
    );
    let pbs = r.table::<PortBinding>().unwrap();
    let pb1 = pbs.get(&uuid(PB1)).unwrap();
    assert_eq!(pb1.logical_port, "lp1-renamed");
    assert_eq!(
        pb1.mac.iter().collect::<Vec<_>>(),
        vec!["00:00:00:00:00:09"]
    );
    assert_eq!(
        pb1.options,
        [("b".into(), "3".into()), ("c".into(), "4".into())].into()
    );
    assert_eq!(pb1.chassis, Some(uuid(DP1)));
    let old = &pbs.changes().modified[&uuid(PB1)];
    assert_eq!(old.logical_port, "lp1");
    assert!(pbs.changes().inserted.is_empty());
    // The index follows the rename.
    assert!(pbs.find_one("logical_port", &Atom::from("lp1")).is_none());
    assert!(pbs
        .find_one("logical_port", &Atom::from("lp1-renamed"))
        .is_some());
    // A second modify in the same batch keeps the first old value.
    apply(
        &mut r,
        &json!({"Port_Binding": {PB1: {"modify": {"logical_port": "lp1-again"}}}}),
    );
    let pbs = r.table::<PortBinding>().unwrap();
    assert_eq!(pbs.changes().modified[&uuid(PB1)].logical_port, "lp1");
}

#[test]
fn delete_and_insert_change_sets() {
    let mut r = replica();
    apply(&mut r, &initial());
    r.clear_changes();
    apply(
        &mut r,
        &json!({"Port_Binding": {PB2: {"delete": null}},
                "Datapath_Binding": {"00000000-0000-0000-0000-0000000000d2": {"insert": {"tunnel_key": 6}}}}),
    );
    let pbs = r.table::<PortBinding>().unwrap();
    assert_eq!(pbs.len(), 1);
    assert_eq!(pbs.changes().deleted[&uuid(PB2)].logical_port, "lp2");
    assert!(pbs.find_one("logical_port", &Atom::from("lp2")).is_none());
    let dps = r.table::<DatapathBinding>().unwrap();
    assert_eq!(dps.changes().inserted.len(), 1);
    // Inserted then deleted in one batch: no trace.
    apply(
        &mut r,
        &json!({"Datapath_Binding": {"00000000-0000-0000-0000-0000000000d2": {"delete": null}}}),
    );
    assert!(r.table::<DatapathBinding>().unwrap().changes().is_empty());
}

#[test]
fn bad_rows_are_skipped_and_counted() {
    let mut r = replica();
    apply(&mut r, &initial());
    r.clear_changes();
    apply(
        &mut r,
        &json!({
            "Port_Binding": {
                PB1: {"modify": {"no_such_column": 1}},
                PB2: {"modify": {"tunnel_key": "not a number"}},
                "not-a-uuid": {"insert": {}},
                "00000000-0000-0000-0000-0000000000b9": {"modify": {"tunnel_key": 3}},
                "00000000-0000-0000-0000-0000000000b8": {"frobnicate": {}},
                "00000000-0000-0000-0000-0000000000b7": {"insert": {"logical_port": "lp7", "tunnel_key": 7}}
            },
            "No_Such_Table": {PB1: {"insert": {}}}
        }),
    );
    let stats = r.stats();
    assert_eq!(stats.rows_skipped, 5);
    assert_eq!(stats.unknown_tables, 1);
    let pbs = r.table::<PortBinding>().unwrap();
    assert_eq!(pbs.len(), 3, "the good insert was applied");
    assert_eq!(
        pbs.get(&uuid(PB1)).unwrap().logical_port,
        "lp1",
        "bad rows left untouched"
    );
    assert_eq!(pbs.get(&uuid(PB2)).unwrap().tunnel_key, 2);
    // The replica keeps working after bad input.
    apply(
        &mut r,
        &json!({"Port_Binding": {PB2: {"modify": {"tunnel_key": 22}}}}),
    );
    assert_eq!(
        r.table::<PortBinding>()
            .unwrap()
            .get(&uuid(PB2))
            .unwrap()
            .tunnel_key,
        22
    );
    // A malformed table-updates object is an error, counted, not a panic.
    assert!(r.apply_update(raw("[1,2]").unwrap()).is_err());
    assert_eq!(r.stats().bad_messages, 1);
}

#[test]
fn snapshot_reports_the_difference() {
    let mut r = replica();
    apply(&mut r, &initial());
    r.clear_changes();
    // Reconnect without resume: lp1 unchanged, lp2 gone, lp3 new, dp changed.
    let snapshot = json!({
        "Port_Binding": {
            PB1: {"initial": {"logical_port": "lp1", "tunnel_key": 1, "datapath": ["uuid", DP1],
                              "mac": ["set", ["00:00:00:00:00:01 10.0.0.1"]],
                              "options": ["map", [["a", "1"], ["b", "2"]]], "type": ""}},
            "00000000-0000-0000-0000-0000000000b3": {"initial": {"logical_port": "lp3"}}
        },
        "Datapath_Binding": {DP1: {"initial": {"tunnel_key": 9}}}
    })
    .to_string();
    r.apply_snapshot(raw(&snapshot).unwrap()).unwrap();
    let pbs = r.table::<PortBinding>().unwrap();
    assert_eq!(pbs.len(), 2);
    assert!(pbs.changes().modified.is_empty());
    assert_eq!(pbs.changes().deleted.len(), 1);
    assert_eq!(pbs.changes().inserted.len(), 1);
    let dps = r.table::<DatapathBinding>().unwrap();
    assert_eq!(dps.changes().modified[&uuid(DP1)].tunnel_key, 5);
    assert_eq!(
        dps.find_one("tunnel_key", &Atom::from(9)).unwrap().0,
        &uuid(DP1)
    );
    assert!(dps.find_one("tunnel_key", &Atom::from(5)).is_none());
}

#[test]
fn monitor_requests_list_all_columns_and_conditions() {
    let r = replica();
    let mut conds = BTreeMap::new();
    conds.insert(
        "Port_Binding".to_owned(),
        Condition(vec![crate::Clause::eq("logical_port", "lp1")]),
    );
    let req = r.monitor_requests(&conds);
    assert_eq!(
        req["Port_Binding"][0]["where"],
        json!([["logical_port", "==", "lp1"]])
    );
    assert!(req["Datapath_Binding"][0].get("where").is_none());
    let cols = req["Port_Binding"][0]["columns"].as_array().unwrap();
    assert_eq!(cols.len(), PortBinding::COLUMNS.len());
}
