//! The ovn-kubernetes shaped generator at a small size: northd accepts it, the Southbound has
//! the shape of such a cluster (load balancers shared through datapath groups, every node's
//! ports bound to its chassis), and the real ovn-controller, run as one of the nodes, keeps
//! that node's bindings and installs its flows.

use std::collections::BTreeSet;

use integration::sbdump::{uuid_of, Dump, DumpTable};
use integration::scale::k8s::{
    gateway_router, node_bound_ports, node_name, run_node_controller, service, LB_GROUP,
};
use integration::scale::{build_k8s, K8sSpec};
use integration::{Controller, Lab};
use serde_json::Value;

const SPEC: K8sSpec = K8sSpec {
    nodes: 5,
    pods_per_node: 6,
    services: 20,
    namespaces: 4,
    policies_per_namespace: 2,
    hairpin_snat_ip: true,
};

/// The UUIDs in an OVSDB value that is one UUID or a set of them.
fn uuids(value: &Value) -> BTreeSet<String> {
    if let Some(u) = uuid_of(value) {
        return BTreeSet::from([u.to_owned()]);
    }
    value
        .get(1)
        .and_then(Value::as_array)
        .map(|set| set.iter().filter_map(uuid_of).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Value of `key` in an OVSDB map value.
fn map_get<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(1)?.as_array()?.iter().find_map(|pair| {
        (pair.get(0)?.as_str()? == key)
            .then(|| pair.get(1)?.as_str())
            .flatten()
    })
}

fn table<'a>(dump: &'a Dump, name: &str) -> &'a DumpTable {
    dump.table(name)
        .unwrap_or_else(|| panic!("no {name} table in the dump"))
}

/// UUIDs of the datapaths whose Northbound name is one of `names`.
fn datapaths(dump: &Dump, names: &[String]) -> BTreeSet<String> {
    table(dump, "Datapath_Binding")
        .pairs("_uuid", "external_ids")
        .filter(|(_, ids)| map_get(ids, "name").is_some_and(|n| names.iter().any(|x| x == n)))
        .filter_map(|(uuid, _)| uuid_of(uuid).map(str::to_owned))
        .collect()
}

/// The datapath groups of the logical flows of `stage` whose match contains `needle`.
fn groups_of_flows(dump: &Dump, stage: &str, needle: &str) -> Vec<BTreeSet<String>> {
    let lflows = table(dump, "Logical_Flow");
    let groups: Vec<(String, BTreeSet<String>)> = table(dump, "Logical_DP_Group")
        .pairs("_uuid", "datapaths")
        .filter_map(|(u, d)| Some((uuid_of(u)?.to_owned(), uuids(d))))
        .collect();
    lflows
        .pairs("match", "external_ids")
        .zip(lflows.column("logical_dp_group"))
        .filter(|((m, ids), _)| {
            map_get(ids, "stage-name") == Some(stage)
                && m.as_str().is_some_and(|m| m.contains(needle))
        })
        .map(|(_, group)| {
            let group = uuid_of(group).expect("flow of a shared load balancer has a group");
            groups
                .iter()
                .find(|(u, _)| u == group)
                .map(|(_, d)| d.clone())
                .expect("group exists")
        })
        .collect()
}

fn nb_column(lab: &Lab, table: &str, column: &str) -> Vec<String> {
    lab.central()
        .nbctl(&["--bare", &format!("--columns={column}"), "list", table])
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn small_cluster_has_the_shape_of_ovn_kubernetes_and_ovn_controller_runs_it() {
    let mut lab = Lab::start().unwrap();
    let build = build_k8s(lab.central(), SPEC).unwrap();
    assert_eq!(build.bound_ports, SPEC.nodes * (SPEC.pods_per_node + 1 + 4));

    // Northbound: one load balancer group with every service, on every node switch and GR.
    let group = lab
        .central()
        .nbctl(&[
            "--bare",
            "--columns=_uuid",
            "find",
            "Load_Balancer_Group",
            &format!("name={LB_GROUP}"),
        ])
        .unwrap();
    let group = group.trim();
    assert!(!group.is_empty(), "{LB_GROUP} exists");
    let members = lab
        .central()
        .nbctl(&["get", "Load_Balancer_Group", group, "load_balancer"])
        .unwrap();
    assert_eq!(members.split(',').count(), SPEC.services);
    let users = |table: &str| {
        nb_column(&lab, table, "load_balancer_group")
            .iter()
            .filter(|g| g.as_str() == group)
            .count()
    };
    assert_eq!(users("Logical_Switch"), SPEC.nodes);
    assert_eq!(users("Logical_Router"), SPEC.nodes);

    let path = lab.dir().join("sb.json");
    lab.central().dump_sb_json(&path).unwrap();
    let dump = Dump::read(&path).unwrap();
    // Node switches, external switches, gateway routers, join and the cluster router.
    assert_eq!(dump.count("Datapath_Binding"), 3 * SPEC.nodes + 2);
    assert_eq!(dump.count("Load_Balancer"), SPEC.services);
    assert_eq!(dump.count("Chassis"), SPEC.nodes);
    // 965 at this size with OVN 23.03.1.
    let lflows = dump.count("Logical_Flow");
    assert!(lflows > 900, "only {lflows} logical flows");

    // Each service's flows exist once, for the group of all node switches (switch stages)
    // or of all gateway routers (router stages).
    let switches = datapaths(&dump, &(0..SPEC.nodes).map(node_name).collect::<Vec<_>>());
    let routers = datapaths(
        &dump,
        &(0..SPEC.nodes).map(gateway_router).collect::<Vec<_>>(),
    );
    assert_eq!((switches.len(), routers.len()), (SPEC.nodes, SPEC.nodes));
    assert!(dump.count("Logical_DP_Group") >= 2);
    let vip = service(&SPEC, 7).vip;
    let needle = format!("ip4.dst == {} && tcp.dst == {}", vip.ip(), vip.port());
    assert_eq!(
        groups_of_flows(&dump, "ls_in_pre_stateful", &needle),
        [switches]
    );
    assert_eq!(
        groups_of_flows(
            &dump,
            "lr_in_dnat",
            &needle.replace(" && tcp.dst", " && tcp && tcp.dst")
        ),
        [routers]
    );

    // Every node's pods, management port and gateway ports are bound to its chassis.
    let expected = |node: usize| {
        let mut ports = node_bound_ports(&SPEC, node);
        ports.sort_unstable();
        ports
    };
    for node in 0..SPEC.nodes {
        assert_eq!(
            dump.ports_bound_to(&node_name(node)),
            expected(node),
            "node {node}"
        );
    }

    // The real ovn-controller as node1 takes over its chassis, keeps exactly those bindings
    // and installs flows for the whole cluster.
    let run = run_node_controller(&mut lab, &SPEC, 1, &Controller::OvnController).unwrap();
    assert_eq!(run.bound_ports, expected(1));
    // 2964 flows at this size with OVN 23.03.1.
    assert!(
        run.flows > 2500,
        "ovn-controller installed only {} flows",
        run.flows
    );
    let chassis = lab.chassis("node1").unwrap();
    let flows = chassis
        .ofctl(&["--no-stats", "dump-flows", "br-int"])
        .unwrap();
    let vip_flows = flows
        .lines()
        .filter(|l| l.contains(&format!("nw_dst={}", vip.ip())))
        .count();
    assert!(
        vip_flows > SPEC.nodes,
        "VIP {vip} on every node switch: {vip_flows} flows"
    );
}
