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

mod model {
    //! Model-based check of update2 semantics: a tiny reference implementation
    //! over datums, compared with the typed replica after random operations.
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    const CHASSIS: [&str; 2] = [
        "00000000-0000-0000-0000-0000000000c1",
        "00000000-0000-0000-0000-0000000000c2",
    ];

    #[derive(Debug, Clone)]
    enum Op {
        Insert(usize, String, i64),
        Modify {
            row: usize,
            port: Option<String>,
            macs: Vec<String>,
            options: Vec<(String, String)>,
            chassis: Vec<usize>,
        },
        Delete(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..4usize, "[ab]{1,2}", 0..5i64).prop_map(|(r, p, k)| Op::Insert(r, p, k)),
            (
                0..4usize,
                proptest::option::of("[ab]{1,2}"),
                proptest::collection::vec("[xyz]", 0..3),
                proptest::collection::vec(("[kl]", "[12]"), 0..3),
                proptest::collection::vec(0..2usize, 0..3),
            )
                .prop_map(|(row, port, macs, options, chassis)| Op::Modify {
                    row,
                    port,
                    macs,
                    options,
                    chassis
                }),
            (0..4usize).prop_map(Op::Delete),
        ]
    }

    fn row_uuid(i: usize) -> String {
        format!("00000000-0000-0000-0000-00000000000{i}")
    }

    #[derive(Debug, Clone, Default, PartialEq)]
    struct ModelRow {
        port: String,
        key: i64,
        macs: BTreeSet<String>,
        options: BTreeMap<String, String>,
        chassis: BTreeSet<usize>,
    }

    fn wire(op: &Op) -> serde_json::Value {
        match op {
            Op::Insert(r, p, k) => {
                json!({"Port_Binding": {row_uuid(*r): {"insert": {"logical_port": p, "tunnel_key": k}}}})
            }
            Op::Modify {
                row,
                port,
                macs,
                options,
                chassis,
            } => {
                let mut m = serde_json::Map::new();
                if let Some(p) = port {
                    m.insert("logical_port".into(), json!(p));
                }
                if !macs.is_empty() {
                    m.insert("mac".into(), json!(["set", macs]));
                }
                if !options.is_empty() {
                    let pairs: Vec<_> = options.iter().map(|(k, v)| json!([k, v])).collect();
                    m.insert("options".into(), json!(["map", pairs]));
                }
                if !chassis.is_empty() {
                    let set: Vec<_> = chassis
                        .iter()
                        .map(|c| json!(["uuid", CHASSIS[*c]]))
                        .collect();
                    m.insert("chassis".into(), json!(["set", set]));
                }
                json!({"Port_Binding": {row_uuid(*row): {"modify": m}}})
            }
            Op::Delete(r) => json!({"Port_Binding": {row_uuid(*r): {"delete": null}}}),
        }
    }

    fn apply_model(model: &mut BTreeMap<usize, ModelRow>, op: &Op) {
        match op {
            Op::Insert(r, p, k) => {
                model.entry(*r).or_insert_with(|| ModelRow {
                    port: p.clone(),
                    key: *k,
                    ..ModelRow::default()
                });
            }
            Op::Modify {
                row,
                port,
                macs,
                options,
                chassis,
            } => {
                let Some(old) = model.get(row) else { return };
                // An optional column's "diff" is its new value: more than one value makes
                // the whole row update invalid (the replica skips it).
                if chassis.len() > 1 {
                    return;
                }
                let mut new = old.clone();
                if let Some(p) = port {
                    new.port.clone_from(p);
                }
                for m in macs {
                    if !new.macs.remove(m) {
                        new.macs.insert(m.clone());
                    }
                }
                for (k, v) in options {
                    if new.options.get(k) == Some(v) {
                        new.options.remove(k);
                    } else {
                        new.options.insert(k.clone(), v.clone());
                    }
                }
                if !chassis.is_empty() {
                    new.chassis = chassis.iter().copied().collect();
                }
                model.insert(*row, new);
            }
            Op::Delete(r) => {
                model.remove(r);
            }
        }
    }

    fn as_model(pb: &PortBinding) -> ModelRow {
        ModelRow {
            port: pb.logical_port.clone(),
            key: pb.tunnel_key,
            macs: pb.mac.clone(),
            options: pb
                .options
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            chassis: pb
                .chassis
                .iter()
                .map(|c| CHASSIS.iter().position(|s| uuid(s) == *c).unwrap())
                .collect(),
        }
    }

    proptest! {
        #[test]
        fn replica_matches_reference_model(ops in proptest::collection::vec(op(), 1..40)) {
            let mut r = replica();
            let mut model = BTreeMap::new();
            for op in &ops {
                apply(&mut r, &wire(op));
                apply_model(&mut model, op);
            }
            let table = r.table::<PortBinding>().unwrap();
            let ours: BTreeMap<usize, ModelRow> = (0..4)
                .filter_map(|i| table.get(&uuid(&row_uuid(i))).map(|pb| (i, as_model(pb))))
                .collect();
            prop_assert_eq!(&ours, &model);
            // The index agrees with the rows.
            for (u, pb) in table.iter() {
                let hits: Vec<_> = table.find("logical_port", &Atom::from(pb.logical_port.as_str())).map(|(u, _)| *u).collect();
                prop_assert!(hits.contains(u));
            }
            let indexed: usize = ["a", "b", "aa", "ab", "ba", "bb"]
                .iter()
                .map(|p| table.find("logical_port", &Atom::from(*p)).count())
                .sum();
            prop_assert_eq!(indexed, table.len());
            // Change sets: every present row inserted in this batch is in `inserted`
            // (nothing was cleared), and nothing is both inserted and deleted.
            let ch = table.changes();
            prop_assert_eq!(ch.inserted.len(), table.len());
            prop_assert!(ch.modified.is_empty());
            prop_assert!(ch.deleted.is_empty());
        }
    }

    proptest! {
        #[test]
        fn change_sets_are_exact(first in proptest::collection::vec(op(), 0..20),
                                 second in proptest::collection::vec(op(), 0..20)) {
            let mut r = replica();
            let mut model = BTreeMap::new();
            for op in &first {
                apply(&mut r, &wire(op));
                apply_model(&mut model, op);
            }
            r.clear_changes();
            let mid = model.clone();
            for op in &second {
                apply(&mut r, &wire(op));
                apply_model(&mut model, op);
            }
            let table = r.table::<PortBinding>().unwrap();
            let ch = table.changes();
            for i in 0..4 {
                let u = uuid(&row_uuid(i));
                match (mid.get(&i), model.get(&i)) {
                    (None, Some(_)) => {
                        prop_assert!(ch.inserted.contains(&u));
                        prop_assert!(!ch.modified.contains_key(&u) && !ch.deleted.contains_key(&u));
                    }
                    (Some(before), None) => {
                        prop_assert_eq!(&as_model(&ch.deleted[&u]), before);
                        prop_assert!(!ch.inserted.contains(&u) && !ch.modified.contains_key(&u));
                    }
                    (Some(before), Some(after)) if before != after => {
                        prop_assert_eq!(&as_model(&ch.modified[&u]), before);
                        prop_assert!(!ch.inserted.contains(&u) && !ch.deleted.contains_key(&u));
                    }
                    _ => {
                        prop_assert!(!ch.inserted.contains(&u));
                        prop_assert!(!ch.modified.contains_key(&u) && !ch.deleted.contains_key(&u));
                    }
                }
            }
        }
    }
}

#[test]
fn a_change_undone_in_the_same_batch_is_not_reported() {
    let mut r = replica();
    apply(&mut r, &initial());
    r.clear_changes();
    apply(
        &mut r,
        &json!({"Port_Binding": {PB1: {"modify": {"tunnel_key": 9}}}}),
    );
    apply(
        &mut r,
        &json!({"Port_Binding": {PB1: {"modify": {"tunnel_key": 1}}}}),
    );
    assert!(r.table::<PortBinding>().unwrap().changes().is_empty());
}

mod fuzz {
    //! Arbitrary table-updates never panic the replica.
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(json!(null)),
            any::<bool>().prop_map(|b| json!(b)),
            any::<i64>().prop_map(|i| json!(i)),
            Just(json!(["uuid", PB1])),
            Just(json!(["uuid", "nope"])),
            Just(json!(["set", []])),
            Just(json!(["map", [["a", "b"]]])),
            "[a-z_]{0,8}".prop_map(|s| json!(s)),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("logical_port".to_owned()),
                        Just("tunnel_key".to_owned()),
                        Just("options".to_owned()),
                        Just("mac".to_owned()),
                        Just("chassis".to_owned()),
                        Just("insert".to_owned()),
                        Just("modify".to_owned()),
                        Just("delete".to_owned()),
                        Just("initial".to_owned()),
                        "[a-z]{1,3}",
                    ],
                    inner,
                    0..4
                )
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn updates() -> impl Strategy<Value = serde_json::Value> {
        proptest::collection::btree_map(
            prop_oneof![
                Just("Port_Binding".to_owned()),
                Just("Datapath_Binding".to_owned()),
                "[A-Z][a-z]{0,4}"
            ],
            proptest::collection::btree_map(
                prop_oneof![Just(PB1.to_owned()), Just(PB2.to_owned()), "[0-9a-f-]{0,8}"],
                value(),
                0..4,
            ),
            0..3,
        )
        .prop_map(|m| json!(m))
    }

    proptest! {
        #[test]
        fn never_panics(batches in proptest::collection::vec(prop_oneof![updates(), value()], 1..6)) {
            let mut r = replica();
            apply(&mut r, &initial());
            for (i, batch) in batches.iter().enumerate() {
                let text = batch.to_string();
                let raw = raw(&text).unwrap();
                let _ = if i % 3 == 2 { r.apply_snapshot(raw) } else { r.apply_update(raw) };
            }
            // Indexes stay consistent with the rows.
            let table = r.table::<PortBinding>().unwrap();
            for (u, pb) in table.iter() {
                let found = table.find("logical_port", &Atom::from(pb.logical_port.as_str())).any(|(x, _)| x == u);
                prop_assert!(found);
            }
        }
    }
}

#[test]
fn snapshots_are_immutable_and_share_rows() {
    let mut r = replica();
    apply(&mut r, &initial());
    r.clear_changes();
    let snap = r.snapshot();
    apply(
        &mut r,
        &json!({"Port_Binding": {PB1: {"modify": {"tunnel_key": 9}},
                                             PB2: {"delete": null}}}),
    );
    let before = snap.table::<PortBinding>().unwrap();
    assert_eq!(before.len(), 2);
    assert_eq!(before[&uuid(PB1)].tunnel_key, 1);
    let now = r.table::<PortBinding>().unwrap();
    assert_eq!(now.len(), 1);
    assert_eq!(now.get(&uuid(PB1)).unwrap().tunnel_key, 9);
    // The change set's old value is the very row the snapshot holds.
    assert!(std::sync::Arc::ptr_eq(
        &now.changes().modified[&uuid(PB1)],
        &before[&uuid(PB1)]
    ));
    assert!(snap.table::<crate::generated::ovn_sb::Chassis>().is_none());
}

#[test]
fn a_malformed_snapshot_deletes_nothing() {
    let mut r = replica();
    apply(&mut r, &initial());
    r.clear_changes();
    // Port_Binding is fine, then the next table is not an object.
    let text = json!({"Datapath_Binding": [1, 2], "Port_Binding": {PB1: {"initial": {"logical_port": "lp1"}}}})
        .to_string();
    assert!(r.apply_snapshot(raw(&text).unwrap()).is_err());
    assert_eq!(r.table::<PortBinding>().unwrap().len(), 2);
    assert_eq!(r.table::<DatapathBinding>().unwrap().len(), 1);
    assert!(r
        .table::<DatapathBinding>()
        .unwrap()
        .changes()
        .deleted
        .is_empty());
}
