//! Binding plans: claims, releases, encaps, requested-chassis, virtual ports.

use super::*;

#[test]
fn unusable_port_bindings_are_problems() {
    let with_type = |name: &str, ty: &str, opts: &[(&str, &str)]| {
        let mut p = pb(name, opts);
        p.type_ = ty.into();
        p
    };
    let unknown = problem(&with_type("bogus", "frobnicate", &[])).unwrap();
    assert!(
        unknown.contains("bogus") && unknown.contains("frobnicate"),
        "{unknown}"
    );
    assert!(problem(&with_type("ln", "localnet", &[]))
        .unwrap()
        .contains("network_name"));
    assert!(problem(&with_type("cr", "chassisredirect", &[]))
        .unwrap()
        .contains("distributed-port"));
    for ok in [
        with_type("vm", "", &[]),
        with_type("ln", "localnet", &[("network_name", "phys")]),
        with_type("cr", "chassisredirect", &[("distributed-port", "lrp")]),
        with_type("p", "patch", &[("peer", "q")]),
    ] {
        assert_eq!(problem(&ok), None);
    }
}

fn pb(name: &str, opts: &[(&str, &str)]) -> PortBinding {
    let mut p = PortBinding {
        logical_port: name.into(),
        ..PortBinding::default()
    };
    for (k, v) in opts {
        p.options.insert((*k).into(), (*v).into());
    }
    p
}

/// The plan of chassis hv1 (uuid 1) with the Port_Binding rows of `table` (a table in
/// ovsdb-client's JSON form) and a VIF (ofport 1) for each of `vifs`.
fn plan_on_hv1(table: &str, vifs: &[&str]) -> BindingPlan {
    let mut sb = crate::southbound::Southbound::default();
    sb.load_json(table).expect("loads");
    let mut ifaces = LocalIfaces::default();
    for name in vifs {
        ifaces.by_iface_id.insert(
            (*name).into(),
            LocalIface {
                uuid: Uuid::from_u128(7),
                name: (*name).into(),
                ofport: Some(1),
                iface_id_ver: None,
                encap_ip: None,
                installed: true,
            },
        );
    }
    let me = Me {
        name: "hv1",
        hostname: "hv1",
        uuid: Some(Uuid::from_u128(1)),
        active_tunnels: None,
    };
    plan(&sb.replica, &ifaces, &me, &HashMap::new(), Instant::now())
}

const DP: &str = "00000000-0000-4000-8000-0000000000d1";
const HV1: &str = "00000000-0000-0000-0000-000000000001";

/// sw0-vir is claimed by this chassis with virtual parent `parent`; vm4 is bound
/// here (with an interface) and vm9 elsewhere.
fn virtual_plan(parent: &str) -> BindingPlan {
    plan_on_hv1(
        &format!(
            r#"{{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","chassis","virtual_parent"],"data":[
             [["uuid","00000000-0000-4000-8000-0000000000a1"],"vm4",["uuid","{DP}"],1,"",["uuid","{HV1}"],["set",[]]],
             [["uuid","00000000-0000-4000-8000-0000000000a2"],"vm9",["uuid","{DP}"],2,"",["uuid","00000000-0000-4000-8000-000000000009"],["set",[]]],
             [["uuid","00000000-0000-4000-8000-0000000000a3"],"sw0-vir",["uuid","{DP}"],3,"virtual",["uuid","{HV1}"],"{parent}"]]}}"#
        ),
        &["vm4", "vm9"],
    )
}

#[test]
fn a_port_held_here_whose_type_became_patch_is_released() {
    let plan = plan_on_hv1(
        &format!(
            r#"{{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","chassis"],"data":[
             [["uuid","00000000-0000-4000-8000-0000000000a1"],"lsp1",["uuid","{DP}"],1,"patch",["uuid","{HV1}"]]]}}"#
        ),
        &[],
    );
    let lsp1: Uuid = "00000000-0000-4000-8000-0000000000a1"
        .parse()
        .expect("uuid");
    assert_eq!(plan.release, [lsp1]);
}

#[test]
fn a_bound_vif_loses_its_encap_with_its_interfaces_encap_ip() {
    const ENCAP: &str = "00000000-0000-4000-8000-0000000000e1";
    let plan = plan_on_hv1(
        &format!(
            r#"{{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","chassis","encap"],"data":[
             [["uuid","00000000-0000-4000-8000-0000000000a1"],"vm1",["uuid","{DP}"],1,"",["uuid","{HV1}"],["uuid","{ENCAP}"]]]}}"#
        ),
        &["vm1"],
    );
    let vm1: Uuid = "00000000-0000-4000-8000-0000000000a1"
        .parse()
        .expect("uuid");
    assert_eq!(plan.claim, [(vm1, None)], "the encap is cleared");
}

#[test]
fn a_container_is_claimed_on_its_parents_interface_with_or_without_a_tag() {
    let plan = plan_on_hv1(
        &format!(
            r#"{{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","chassis","parent_port","tag"],"data":[
             [["uuid","00000000-0000-4000-8000-0000000000a1"],"vm1",["uuid","{DP}"],1,"",["set",[]],["set",[]],["set",[]]],
             [["uuid","00000000-0000-4000-8000-0000000000a2"],"c1",["uuid","{DP}"],2,"",["set",[]],"vm1",7],
             [["uuid","00000000-0000-4000-8000-0000000000a3"],"c2",["uuid","{DP}"],3,"",["set",[]],"vm1",["set",[]]],
             [["uuid","00000000-0000-4000-8000-0000000000a4"],"c3",["uuid","{DP}"],4,"",["uuid","{HV1}"],"vm9",5]]}}"#
        ),
        &["vm1"],
    );
    let uuid = |n: u128| Uuid::from_u128(0x0000_0000_0000_4000_8000_0000_0000_00a0 + n);
    assert_eq!(
        plan.bound.get(&uuid(2)),
        Some(&BindingKind::Container {
            parent_ofport: 1,
            tag: 7
        })
    );
    assert_eq!(
        plan.bound.get(&uuid(3)),
        Some(&BindingKind::Container {
            parent_ofport: 1,
            tag: 0
        }),
        "no tag: claimed, as ovn-controller does"
    );
    assert!(plan.claim.iter().any(|(u, _)| *u == uuid(3)));
    assert_eq!(plan.release, [uuid(4)], "its parent has no interface here");
}

#[test]
fn a_virtual_port_stays_claimed_while_its_parent_is_bound_here() {
    let vport: Uuid = "00000000-0000-4000-8000-0000000000a3"
        .parse()
        .expect("uuid");
    assert!(!virtual_plan("vm4").release.contains(&vport));
    assert!(
        virtual_plan("vm4").virtual_held.contains(&vport),
        "held here: resident for is_chassis_resident()"
    );
    assert!(!virtual_plan("vm9").virtual_held.contains(&vport));
    assert!(
        virtual_plan("vm9").release.contains(&vport),
        "parent bound elsewhere"
    );
    assert!(
        virtual_plan("vm7").release.contains(&vport),
        "parent unknown"
    );
}

#[test]
fn requested_chassis_by_name_or_hostname() {
    let me = Me {
        name: "hv1",
        hostname: "host1.example",
        uuid: Some(Uuid::from_u128(1)),
        active_tunnels: None,
    };
    assert_eq!(can_bind(&pb("a", &[]), &me, None), Bindable::Main);
    assert_eq!(
        can_bind(&pb("a", &[("requested-chassis", "hv1")]), &me, None),
        Bindable::Main
    );
    assert_eq!(
        can_bind(
            &pb("a", &[("requested-chassis", "host1.example")]),
            &me,
            None
        ),
        Bindable::Main
    );
    assert_eq!(
        can_bind(&pb("a", &[("requested-chassis", "hv2,hv1")]), &me, None),
        Bindable::Additional
    );
    assert_eq!(
        can_bind(&pb("a", &[("requested-chassis", "hv2")]), &me, None),
        Bindable::No
    );
}

/// The same plan through the replica's indexes as over every row.
#[test]
fn indexed_candidates_plan_as_a_full_scan_does() {
    const ME: &str = "00000000-0000-4000-8000-00000000c001";
    const OTHER: &str = "00000000-0000-4000-8000-00000000c002";
    const DP: &str = "00000000-0000-4000-8000-0000000000d1";
    let rows = [
        (
            "a1",
            "vm1",
            "",
            "[\"set\",[]]",
            "[\"map\",[]]",
            "[\"set\",[]]",
        ),
        (
            "a2",
            "vm2",
            "",
            &format!("[\"uuid\",\"{ME}\"]"),
            "[\"map\",[]]",
            "[\"set\",[]]",
        ),
        (
            "a3",
            "vm3",
            "",
            &format!("[\"uuid\",\"{OTHER}\"]"),
            "[\"map\",[]]",
            "[\"set\",[]]",
        ),
        ("a4", "c1", "", "[\"set\",[]]", "[\"map\",[]]", "\"vm1\""),
        (
            "a5",
            "gw",
            "l3gateway",
            "[\"set\",[]]",
            "[\"map\",[[\"l3gateway-chassis\",\"hv1\"]]]",
            "[\"set\",[]]",
        ),
        (
            "a6",
            "bogus",
            "frobnicate",
            "[\"set\",[]]",
            "[\"map\",[]]",
            "[\"set\",[]]",
        ),
        (
            "a7",
            "ln",
            "localnet",
            "[\"set\",[]]",
            "[\"map\",[]]",
            "[\"set\",[]]",
        ),
        (
            "a8",
            "p",
            "patch",
            &format!("[\"uuid\",\"{ME}\"]"),
            "[\"map\",[[\"peer\",\"q\"]]]",
            "[\"set\",[]]",
        ),
    ];
    let data: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(i, (u, name, ty, chassis, options, parent))| {
            format!(
                "[[\"uuid\",\"00000000-0000-4000-8000-0000000000{u}\"],\"{name}\",[\"uuid\",\"{DP}\"],{},\"{ty}\",{chassis},{options},{parent},{}]",
                i + 1,
                if *name == "c1" { "5" } else { "[\"set\",[]]" }
            )
        })
        .collect();
    let text = format!(
        r#"{{"caption":"Datapath_Binding table","headings":["_uuid","tunnel_key"],"data":[[["uuid","{DP}"],1]]}}
           {{"caption":"Chassis table","headings":["_uuid","name"],"data":[[["uuid","{ME}"],"hv1"],[["uuid","{OTHER}"],"hv2"]]}}
           {{"caption":"Port_Binding table","headings":["_uuid","logical_port","datapath","tunnel_key","type","chassis","options","parent_port","tag"],"data":[{}]}}"#,
        data.join(",")
    );
    let mut indexed = crate::southbound::Southbound::default();
    indexed.load_json(&text).expect("loads");
    let mut plain = crate::southbound::Southbound {
        replica: {
            let mut r = Replica::new(sbclient::ovn_sb::DATABASE);
            sbclient::ovn_sb::register_all(&mut r);
            r
        },
        tables: BTreeSet::new(),
        unknown_tables: BTreeSet::new(),
    };
    plain.load_json(&text).expect("loads");
    let mut ifaces = LocalIfaces::default();
    ifaces.by_iface_id.insert(
        "vm1".into(),
        LocalIface {
            uuid: Uuid::from_u128(9),
            name: "vm1".into(),
            ofport: Some(3),
            iface_id_ver: None,
            encap_ip: None,
            installed: false,
        },
    );
    let me = Me {
        name: "hv1",
        hostname: "hv1",
        uuid: Some(ME.parse().expect("uuid")),
        active_tunnels: None,
    };
    let now = Instant::now();
    let summary = |sb: &crate::southbound::Southbound| {
        let p = plan(
            &sb.replica,
            &ifaces,
            &me,
            &HashMap::<Uuid, Instant>::new(),
            now,
        );
        let bound: BTreeMap<_, _> = p.bound.into_iter().collect();
        format!("{bound:?} {:?} {:?} {:?}", p.claim, p.release, p.problems)
    };
    let full = summary(&plain);
    assert_eq!(summary(&indexed), full);
    // vm1 and its container and gw claimed, vm2 released, bogus and ln reported.
    for name in ["a1", "a4", "a5", "a2", "a6", "a7"] {
        assert!(
            full.contains(&format!("0000000000{name}")),
            "{name} in {full}"
        );
    }
}

/// An OVS replica with br-int holding one internal interface per `(name, iface-id)`.
fn ovs_with(ifaces: &[(&str, &str)]) -> Replica {
    use serde_json::{json, Value};
    let mut r = Replica::new(sbclient::vswitch::DATABASE);
    sbclient::vswitch::register_all(&mut r);
    let uuid = |kind: u128, name: &str| {
        let n = name.bytes().fold(0u128, |a, b| a * 31 + u128::from(b)) & 0xffff_ffff;
        Uuid::from_u128((kind << 64) | n).to_string()
    };
    let mut ports = serde_json::Map::new();
    let mut rows = serde_json::Map::new();
    for (name, id) in ifaces {
        ports.insert(
            uuid(2, name),
            json!({"initial": {"name": name, "interfaces": ["uuid", uuid(3, name)]}}),
        );
        rows.insert(
            uuid(3, name),
            json!({"initial": {"name": name, "ofport": 1, "external_ids": ["map", [["iface-id", id]]]}}),
        );
    }
    let port_refs: Vec<Value> = ifaces
        .iter()
        .map(|(n, _)| json!(["uuid", uuid(2, n)]))
        .collect();
    let update = json!({
        "Bridge": {uuid(1, "br-int"): {"initial": {"name": "br-int", "ports": ["set", port_refs]}}},
        "Port": ports,
        "Interface": rows,
    });
    r.apply_snapshot(&serde_json::value::to_raw_value(&update).unwrap())
        .unwrap();
    r
}

#[test]
fn of_several_interfaces_with_one_iface_id_the_newest_serves() {
    let serving = |ifaces: &LocalIfaces| ifaces.by_iface_id["lp"].name.clone();
    // Seen together: the first by name.
    let both = local_ifaces(
        &ovs_with(&[("lpb", "lp"), ("lpa", "lp")]),
        "br-int",
        IfaceOrder::default(),
    );
    assert_eq!(serving(&both), "lpa");
    assert_eq!(both.duplicates, [("lp".to_owned(), "lpb".to_owned())]);
    // One after the other: the newest, then the one left when it goes.
    let old = local_ifaces(
        &ovs_with(&[("lpold", "lp")]),
        "br-int",
        IfaceOrder::default(),
    );
    assert_eq!(serving(&old), "lpold");
    let new = local_ifaces(
        &ovs_with(&[("lpold", "lp"), ("lpnew", "lp")]),
        "br-int",
        old.order,
    );
    assert_eq!(serving(&new), "lpnew");
    let temp = local_ifaces(
        &ovs_with(&[("lpold", "lp"), ("lpnew", "lp"), ("lptemp", "lp")]),
        "br-int",
        new.order,
    );
    assert_eq!(serving(&temp), "lptemp");
    let back = local_ifaces(
        &ovs_with(&[("lpold", "lp"), ("lpnew", "lp")]),
        "br-int",
        temp.order,
    );
    assert_eq!(serving(&back), "lpnew");
}
