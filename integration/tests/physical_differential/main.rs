//! The physical stage against the real ovn-controller: a lab of three chassis running
//! the stack's ovn-controller (23.03.1 on the system's stack, 25.03 or 26.03 with `OVN_STACK`)
//! and a fourth, VXLAN-only chassis that exists only in the SB; then, for hv1, the runtime
//! data is rebuilt from its OVS (ofports, tunnels, patch ports, conntrack zones, TLV map)
//! and the SB, `agent::physical::all` computes the flows in that release's layout, and they
//! are compared as text with what ovn-controller installed in table 0, the output stage,
//! 64, 65 and the tables the release added (25.03: 80-84; 26.03: 71's default, 80-88).
//!
//! Topology: sw0 with vm1 (hv1), vm2 (hv2), vm3 (hv3), vm6 (the VXLAN chassis), container c1
//! (parent vm1, tag 42) and localport lp1; sw1 with a localnet port (VLAN 100, network
//! `phys` mapped on hv1 and hv2), vm4 (hv2) and vm5 (hv1); router lr0 joining sw0 and sw1,
//! with a gateway port to `pub` on an HA group (hv2 priority 20, hv3 priority 10); router
//! lr1 on sw0 with a gateway port on hv2 alone. hv1 and hv2 have chassis MAC mappings.

mod runtime;

use std::collections::BTreeSet;
use std::time::Duration;

use agent::lflow::layout::TableLayout;
use agent::ofctrl::DesiredFlows;
use agent::southbound::Southbound;
use integration::host::wait_for;
use integration::local_ovs::{
    br_int_interfaces, br_int_sample_collector_sets, ct_zones, geneve_tlv_field,
};
use integration::scenario::{attach_router_port, wait_port_up};
use integration::{Central, Controller, Lab};
use openflow::flow::{Flow, FlowModCommand};

/// The release this run's stack is, and its table layout in ovn-agent.
fn layout() -> TableLayout {
    let stack = integration::stack::Stack::current();
    let name = stack
        .agent_layout()
        .unwrap_or_else(|| panic!("ovn-agent has no table layout for stack {}", stack.name));
    TableLayout::by_name(name).expect("a layout ovn-agent knows")
}

/// The tables the physical stage fills: table 0, the output stage, 64 and 65, and the
/// tables later releases added.
fn tables(l: &TableLayout) -> Vec<u8> {
    let mut t = vec![0];
    t.extend(l.output_entry..=l.check_loopback);
    t.extend([l.save_inport, l.log_to_phy]);
    t.extend(l.physical_only_tables());
    t
}

fn nb(central: &Central, words: &[&str]) {
    central
        .nbctl(words)
        .unwrap_or_else(|e| panic!("ovn-nbctl {words:?}: {e}"));
}

fn vm(central: &Central, switch: &str, port: &str, addresses: &str) {
    nb(
        central,
        &[
            "lsp-add",
            switch,
            port,
            "--",
            "lsp-set-addresses",
            port,
            addresses,
        ],
    );
}

fn build_topology(central: &Central) {
    nb(
        central,
        &[
            "ls-add", "sw0", "--", "ls-add", "sw1", "--", "ls-add", "pub", "--", "ls-add", "pub2",
        ],
    );
    vm(central, "sw0", "vm1", "50:54:00:00:00:01 10.0.0.1");
    vm(central, "sw0", "vm2", "50:54:00:00:00:02 10.0.0.2");
    vm(central, "sw0", "vm3", "50:54:00:00:00:03 10.0.0.3");
    vm(central, "sw0", "vm6", "50:54:00:00:00:06 10.0.0.6");
    nb(
        central,
        &[
            "lsp-add",
            "sw0",
            "c1",
            "vm1",
            "42",
            "--",
            "lsp-set-addresses",
            "c1",
            "50:54:00:00:00:11 10.0.0.11",
        ],
    );
    nb(
        central,
        &[
            "lsp-add",
            "sw0",
            "lp1",
            "--",
            "lsp-set-type",
            "lp1",
            "localport",
            "--",
            "lsp-set-addresses",
            "lp1",
            "50:54:00:00:00:21 10.0.0.21",
        ],
    );
    nb(
        central,
        &[
            "lsp-add",
            "sw1",
            "ln1",
            "",
            "100",
            "--",
            "lsp-set-type",
            "ln1",
            "localnet",
            "--",
            "lsp-set-addresses",
            "ln1",
            "unknown",
            "--",
            "lsp-set-options",
            "ln1",
            "network_name=phys",
        ],
    );
    vm(central, "sw1", "vm4", "50:54:00:00:01:04 10.0.1.4");
    vm(central, "sw1", "vm5", "50:54:00:00:01:05 10.0.1.5");
    nb(central, &["lr-add", "lr0", "--", "lr-add", "lr1"]);
    for (router, switch, mac, net) in [
        ("lr0", "sw0", "00:00:00:00:ff:01", "10.0.0.254/24"),
        ("lr0", "sw1", "00:00:00:00:ff:02", "10.0.1.254/24"),
        ("lr0", "pub", "00:00:00:00:ff:03", "172.16.0.1/24"),
        ("lr1", "sw0", "00:00:00:00:fe:01", "10.0.0.253/24"),
        ("lr1", "pub2", "00:00:00:00:fe:02", "172.16.1.1/24"),
    ] {
        attach_router_port(central, router, switch, mac, net).expect("router port");
    }
    nb(
        central,
        &["lrp-set-gateway-chassis", "lr0-pub", "hv2", "20"],
    );
    nb(
        central,
        &["lrp-set-gateway-chassis", "lr0-pub", "hv3", "10"],
    );
    nb(
        central,
        &["lrp-set-gateway-chassis", "lr1-pub2", "hv2", "1"],
    );
    // A gateway router pinned to hv1 on the localnet switch: l3gateway ports.
    nb(
        central,
        &[
            "lr-add",
            "gr0",
            "--",
            "set",
            "Logical_Router",
            "gr0",
            "options:chassis=hv1",
        ],
    );
    attach_router_port(central, "gr0", "sw1", "00:00:00:00:fd:01", "10.0.1.253/24")
        .expect("gateway router port");
    // An external port on sw1 claimed by hv1 (its only HA chassis), and an l2gateway port
    // on sw0 bound to hv1.
    nb(
        central,
        &[
            "ha-chassis-group-add",
            "ext-ha",
            "--",
            "ha-chassis-group-add-chassis",
            "ext-ha",
            "hv1",
            "30",
        ],
    );
    let group = central
        .nbctl(&[
            "--bare",
            "--columns=_uuid",
            "find",
            "HA_Chassis_Group",
            "name=ext-ha",
        ])
        .expect("HA group");
    nb(
        central,
        &[
            "lsp-add",
            "sw1",
            "ext1",
            "--",
            "lsp-set-type",
            "ext1",
            "external",
            "--",
            "lsp-set-addresses",
            "ext1",
            "50:54:00:00:01:99 10.0.1.99",
        ],
    );
    nb(
        central,
        &[
            "set",
            "Logical_Switch_Port",
            "ext1",
            &format!("ha_chassis_group={}", group.trim()),
        ],
    );
    nb(
        central,
        &[
            "lsp-add",
            "sw0",
            "l2gw0",
            "--",
            "lsp-set-type",
            "l2gw0",
            "l2gateway",
            "--",
            "lsp-set-addresses",
            "l2gw0",
            "unknown",
            "--",
            "lsp-set-options",
            "l2gw0",
            "network_name=phys",
            "l2gateway-chassis=hv1",
        ],
    );
}

/// The lab, settled: every port bound and every chassis caught up.
fn start_lab() -> Lab {
    let mut lab = Lab::start().expect("lab");
    for name in ["hv1", "hv2", "hv3"] {
        lab.add_bare_chassis(name).expect("chassis");
        let c = lab.chassis(name).unwrap();
        let mac = match name {
            "hv1" => Some("phys:0a:00:00:00:00:01"),
            "hv2" => Some("phys:0a:00:00:00:00:02"),
            _ => None,
        };
        if let Some(mac) = mac {
            c.vsctl(&[
                "add-br",
                "br-ln",
                "--",
                "set",
                "bridge",
                "br-ln",
                "datapath_type=dummy",
            ])
            .unwrap();
            c.vsctl(&[
                "set",
                "Open_vSwitch",
                ".",
                "external-ids:ovn-bridge-mappings=phys:br-ln",
                &format!("external-ids:ovn-chassis-mac-mappings={mac}"),
            ])
            .unwrap();
        }
        lab.start_controller(name, &Controller::OvnController)
            .expect("ovn-controller");
    }
    // Debug drop sampling: the SB_Global options (copied by northd from NB_Global) and a
    // collector set with that id on hv1's br-int.
    lab.central()
        .nbctl(&[
            "set",
            "NB_Global",
            ".",
            "options:debug_drop_collector_set=5",
            "options:debug_drop_domain_id=2",
        ])
        .unwrap();
    lab.chassis("hv1")
        .unwrap()
        .vsctl(&[
            "--",
            "--id=@br",
            "get",
            "Bridge",
            "br-int",
            "--",
            "create",
            "Flow_Sample_Collector_Set",
            "id=5",
            "bridge=@br",
        ])
        .unwrap();
    // hv1 also speaks VXLAN, so that it makes a tunnel to the VXLAN-only chassis.
    lab.chassis("hv1")
        .unwrap()
        .vsctl(&[
            "set",
            "Open_vSwitch",
            ".",
            "external-ids:ovn-encap-type=geneve,vxlan",
        ])
        .unwrap();
    let central = lab.central();
    build_topology(central);
    // A chassis that only exists in the Southbound database, with VXLAN only.
    central
        .sbctl(&["chassis-add", "hv4", "vxlan", "192.168.0.4"])
        .unwrap();
    central.wait_sb_sync().unwrap();
    central.sbctl(&["lsp-bind", "vm6", "hv4"]).unwrap();
    for (chassis, vifs) in [
        (
            "hv1",
            &[("vif-vm1", "vm1"), ("vif-lp1", "lp1"), ("vif-vm5", "vm5")][..],
        ),
        ("hv2", &[("vif-vm2", "vm2"), ("vif-vm4", "vm4")][..]),
        ("hv3", &[("vif-vm3", "vm3")][..]),
    ] {
        lab.chassis(chassis).unwrap().add_vifs(vifs).unwrap();
    }
    for port in ["vm1", "vm2", "vm3", "vm4", "vm5", "c1"] {
        wait_port_up(central, port).expect("port up");
    }
    // Ports without an interface are claimed but not reported up.
    for port in ["ext1", "l2gw0", "sw1-gr0"] {
        wait_for(&format!("{port} claimed"), Duration::from_secs(30), || {
            Ok(central.port_binding_chassis(port)?.filter(|c| c == "hv1"))
        })
        .expect("claimed by hv1");
    }
    central.wait_hv_sync().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    central.wait_hv_sync().unwrap();
    lab
}

/// `cookie=..., table=N, priority=...` for every line (ovs-ofctl leaves out a zero cookie
/// and `table=0`).
fn oracle_lines(dump: &str, tables: &[u8]) -> BTreeSet<String> {
    dump.lines()
        .map(str::trim)
        .filter(|l| l.contains(" actions="))
        .map(|l| {
            if l.starts_with("cookie=") {
                l.to_owned()
            } else {
                format!("cookie=0x0, {l}")
            }
        })
        .map(|l| match l.split_once(", ") {
            Some((cookie, rest)) if !rest.starts_with("table=") => {
                format!("{cookie}, table=0, {rest}")
            }
            _ => l.clone(),
        })
        .filter(|l| {
            let table = l
                .split("table=")
                .nth(1)
                .and_then(|t| t.split(',').next())
                .and_then(|t| t.parse::<u8>().ok());
            table.is_some_and(|t| tables.contains(&t))
        })
        .collect()
}

/// The datapath keys (`metadata=`) matched in the logical ingress tables.
fn ingress_datapaths(dump: &str, l: &TableLayout) -> BTreeSet<u32> {
    let ingress = l.ingress..l.ingress + l.ingress_len;
    dump.lines()
        .filter(|l| {
            l.split("table=")
                .nth(1)
                .and_then(|t| t.split(',').next())
                .and_then(|t| t.parse::<u8>().ok())
                .is_some_and(|t| ingress.contains(&t))
        })
        .filter_map(|l| {
            let hex = l.split("metadata=0x").nth(1)?;
            let hex: String = hex.chars().take_while(char::is_ascii_hexdigit).collect();
            u32::from_str_radix(&hex, 16).ok()
        })
        .collect()
}

/// Splits off the flows that several owners want alike and whose cookie is therefore the
/// first owner's (`flow without cookie` -> cookie).
fn split_shared(
    lines: &BTreeSet<String>,
) -> (BTreeSet<String>, std::collections::BTreeMap<String, String>) {
    let mut rest = BTreeSet::new();
    let mut shared = std::collections::BTreeMap::new();
    for l in lines {
        let is_shared =
            l.contains(", priority=180,") && l.ends_with("actions=conjunction(100,2/2)");
        match l.split_once(", ") {
            Some((cookie, flow)) if is_shared => {
                shared.insert(flow.to_owned(), cookie.to_owned());
            }
            _ => {
                rest.insert(l.clone());
            }
        }
    }
    (rest, shared)
}

/// Our flow as the switch stores it: VLAN matches in OF1.5 form.
fn our_line(f: &Flow) -> String {
    Flow {
        m: f.m.canonical_of15(),
        ..f.clone()
    }
    .to_string()
    .trim()
    .to_owned()
}

#[test]
fn physical_flows_equal_what_ovn_controller_installs() {
    let lab = start_lab();
    let hv1 = lab.chassis("hv1").unwrap();
    let dump = hv1
        .ofctl(&["--no-names", "--no-stats", "dump-flows", "br-int"])
        .unwrap();
    let ovs = runtime::OvsState {
        interfaces: br_int_interfaces(hv1).unwrap(),
        ct_zones: ct_zones(hv1).unwrap(),
        geneve_field: geneve_tlv_field(hv1).unwrap(),
        mapped_networks: ["phys".to_owned()].into_iter().collect(),
        sample_collector_sets: br_int_sample_collector_sets(hv1).unwrap(),
    };
    let sb = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(Southbound::fetch(
            &lab.central().sb_remote(),
            Duration::from_secs(30),
            None,
        ))
        .expect("fetch the SB");
    let rt = runtime::build(&sb, "hv1", &ovs);
    assert!(
        rt.tunnels.contains_key("hv4"),
        "a VXLAN tunnel to the SB-only chassis: {:?}",
        rt.tunnels
    );

    // The hand-built local datapaths are those ovn-controller translates lflows for.
    let ours_local: BTreeSet<u32> = rt.local_datapaths.values().map(|ld| ld.key).collect();
    let layout = layout();
    let tables = tables(&layout);
    assert_eq!(
        ours_local,
        ingress_datapaths(&dump, &layout),
        "local datapaths"
    );

    let physical = agent::physical::all(&sb.replica, &rt, &layout);
    for e in &physical.errors {
        println!("problem: {e}");
    }
    // Every flow encodes (its match has an OF1.5 form, its actions fit).
    let mut buf = bytes::BytesMut::new();
    for f in physical.flows() {
        buf.clear();
        f.encode_flow_mod_body(&mut buf, FlowModCommand::Add)
            .unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    // Merged as ofctrl merges them (one flow per table, priority and match).
    let mut desired = DesiredFlows::new();
    for (owner, flows) in &physical.per_owner {
        desired.replace(*owner, flows.clone());
    }
    let ours_exact: BTreeSet<String> = desired.iter().map(|f| our_line(&f.to_flow())).collect();
    let theirs_exact = oracle_lines(&dump, &tables);
    // Intended difference: a flow several router peers of a localnet switch want alike (the
    // VLAN clause of the chassis-MAC conjunction) is installed once, with the cookie of the
    // peer computed first: ovn-controller's local-datapath discovery order, our runtime's
    // peer order. The flow is the same; its cookie may name another of those peers.
    let (ours, ours_shared) = split_shared(&ours_exact);
    let (theirs, theirs_shared) = split_shared(&theirs_exact);
    let shared_same = ours_shared.keys().eq(theirs_shared.keys());
    if !shared_same {
        println!(
            "shared flows differ: ovn-agent {:?}, ovn-controller {:?}",
            ours_shared.keys().collect::<Vec<_>>(),
            theirs_shared.keys().collect::<Vec<_>>()
        );
    }
    let other_cookie = ours_shared
        .iter()
        .filter(|(k, c)| theirs_shared.get(*k) != Some(*c))
        .count();
    println!(
        "intended difference shared-flow-cookie: {other_cookie} of {} shared flows",
        ours_shared.len()
    );

    let identical = ours.intersection(&theirs).count() + ours_shared.len();
    let only_theirs: Vec<&String> = theirs.difference(&ours).collect();
    let only_ours: Vec<&String> = ours.difference(&theirs).collect();
    println!(
        "physical flows of hv1, tables {tables:?}: {identical} identical, {} only in ovn-controller, {} only in ovn-agent",
        only_theirs.len(),
        only_ours.len()
    );
    for l in &only_theirs {
        println!("  ovn-controller: {l}");
    }
    for l in &only_ours {
        println!("  ovn-agent:      {l}");
    }
    // No intended differences in this topology: where ovn-controller 23.03.1 behaves in
    // a way we do not copy (a chassis MAC that does not parse stops its processing for
    // every chassis, in hash order; we skip that chassis only), the lab does not go.
    assert!(
        shared_same && only_theirs.is_empty() && only_ours.is_empty(),
        "flows differ"
    );
    // The lab exercises what it is meant to: an HA bundle, the VXLAN fan-out, a container,
    // the tagged localnet port, chassis MACs.
    let sample = format!(
        "sample(probability=65535,collector_set_id=5,obs_domain_id=33554432,obs_point_id={})",
        layout.check_loopback
    );
    for needle in [
        "bundle(eth_src,0,active_backup,ofport,members:",
        "dl_vlan=42 actions=set_field:0x20/0x20->reg10,pop_vlan",
        "dl_vlan=100 actions=pop_vlan",
        "actions=conjunction(100,1/2)",
        "set_field:0a:00:00:00:00:01->eth_src",
        "priority=105,tun_id=0x800000/0x800000",
        "set_field:0x400/0x400->reg10",
        "priority=170,reg10=0x400/0x400",
        "actions=clone(ct_clear,",
        &sample,
    ] {
        assert!(
            ours.iter().any(|l| l.contains(needle)),
            "no flow with {needle:?}"
        );
    }
    assert!(identical > 80, "{identical} flows compared");
}
