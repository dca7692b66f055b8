//! `ovn-agent compile` against the real ovn-controller, live: each reference topology runs
//! with ovn-controller on two chassis; then ovn-agent compiles the same Southbound database
//! for hv1 in the table layout of that release (ovn-23.03 on the system's stack), and the
//! flows are compared lflow by lflow.
//!
//! Intended differences (23.03.1 bugs that ovn-agent does not copy, agent/LFLOW.md) are applied
//! to the oracle's flows first, counted and printed; after that every flow must match.
//!
//! The lookup tables the release's physical stage fills (25.03: 80-84, 26.03: 71's default
//! and 80-88) are not what `compile` builds: a difference there is reported, not required
//! (tests/physical_differential compares them); every other lookup flow must match.

use std::fmt::Write as _;
use std::process::Command;

use integration::differential::{compare, lflow_cookies};
use integration::flows::{normalize_dump, TableLayout};
use integration::oracle::{installed, installed_on, start_scenario, Installed, UNDER_TEST};
use integration::reference::SCENARIOS;
use integration::scale::k8s::{node_name, run_node_controller};
use integration::scale::{build_k8s, K8sSpec};
use integration::stack::Stack;
use integration::{Controller, Lab};

/// `ovn-agent compile` of the lab's Southbound for `chassis`, reusing the oracle's group ids
/// (allocation-order artifacts), normalized under `layout`.
fn agent_compiled(
    agent: &std::path::Path,
    lab: &Lab,
    chassis: &str,
    agent_layout: &str,
    layout: TableLayout,
    oracle: &Installed,
    what: &str,
) -> Vec<integration::flows::NormalizedFlow> {
    let groups_file = lab.dir().join("oracle-groups.txt");
    std::fs::write(&groups_file, oracle.groups.join("\n")).unwrap();
    let out = Command::new(agent)
        .args([
            "compile",
            "--table-layout",
            agent_layout,
            "--as-installed",
            "--chassis",
            chassis,
        ])
        .arg("--sb")
        .arg(lab.central().sb_remote())
        .arg("--groups")
        .arg(&groups_file)
        .output()
        .expect("run ovn-agent compile");
    assert!(
        out.status.success(),
        "{what}: ovn-agent compile failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    normalize_dump(&String::from_utf8_lossy(&out.stdout), layout)
}

/// What a comparison on this run's stack needs: the agent, its layout for the stack's
/// release (ovn-agent's name and the harness's), and the tables its physical stage fills.
struct Run {
    agent: std::path::PathBuf,
    agent_layout: &'static str,
    layout: TableLayout,
    physical_tables: &'static [u8],
}

impl Run {
    fn on_this_stack() -> Self {
        let Controller::OvnAgent(agent) = Controller::ovn_agent().expect("ovn-agent is built")
        else {
            unreachable!("ovn_agent() selects the agent")
        };
        let stack = Stack::current();
        let agent_layout = stack
            .agent_layout()
            .unwrap_or_else(|| panic!("ovn-agent has no table layout for stack {}", stack.name));
        Self {
            agent,
            agent_layout,
            layout: TableLayout::of_agent_layout(agent_layout).expect("a known layout"),
            physical_tables: agent::lflow::layout::TableLayout::by_name(agent_layout)
                .expect("a layout ovn-agent knows")
                .physical_only_tables(),
        }
    }

    /// Whether a lookup flow is one `compile` builds (not the physical stage's).
    fn built_by_compile(&self, flow: &str) -> bool {
        fixed_table(flow).is_none_or(|t| !self.physical_tables.contains(&t))
    }
}

/// The table number of a flow as the comparison prints it (`table=80,`), for the fixed
/// tables (64 and up) the lookups are in.
fn fixed_table(flow: &str) -> Option<u8> {
    let rest = &flow[flow.find("table=")? + "table=".len()..];
    rest[..rest.find(',')?].parse().ok()
}

#[test]
fn ovn_agent_compiles_what_ovn_controller_installs() {
    let run = Run::on_this_stack();
    let (agent, agent_layout, layout) = (&run.agent, run.agent_layout, run.layout);
    let stack = Stack::current();
    let mut report = String::new();
    let mut failed = Vec::new();
    for scenario in SCENARIOS {
        let lab = start_scenario(scenario, &Controller::OvnController).expect("scenario starts");
        let oracle = installed(&lab, layout).expect("dump hv1");
        let ours = agent_compiled(
            agent,
            &lab,
            UNDER_TEST,
            agent_layout,
            layout,
            &oracle,
            scenario.name,
        );
        let uuids = lab
            .central()
            .sbctl(&["--bare", "--columns=_uuid", "list", "Logical_Flow"])
            .unwrap();
        let result = compare(&oracle.flows, &ours, &lflow_cookies(&uuids));
        let _ = write!(report, "{}: {result}", scenario.name);
        let holds = result.different.is_empty()
            && !result
                .lookup_missing
                .iter()
                .chain(&result.lookup_extra)
                .any(|f| run.built_by_compile(f));
        if !holds {
            failed.push(scenario.name);
        }
    }
    println!("{report}");
    assert!(failed.is_empty(), "flows differ in {failed:?}:\n{report}");
    if !stack.is_system() {
        return;
    }
    // The ACL topology has a port with port security and IPv6: the one known 23.03.1 bug in
    // these topologies shows up there, and must have been recognized.
    assert!(
        report.contains("intended difference port-security-nd-ttl: 4 flows"),
        "{report}"
    );
}

/// An ovn-kubernetes shaped cluster (the generator of `ovn-bench --k8s`, small): node0 runs
/// the stack's ovn-controller; ovn-agent compiles the same Southbound for node0 and every
/// logical flow must give the same flows (load balancers on datapath groups, per-node
/// gateway routers, network-policy ACLs on port groups and address sets).
#[test]
fn ovn_agent_compiles_what_ovn_controller_installs_on_a_k8s_cluster() {
    const SPEC: K8sSpec = K8sSpec {
        nodes: 4,
        pods_per_node: 5,
        services: 12,
        namespaces: 3,
        policies_per_namespace: 2,
        hairpin_snat_ip: false,
    };
    let run = Run::on_this_stack();
    let (agent, agent_layout, layout) = (&run.agent, run.agent_layout, run.layout);
    let mut lab = Lab::start().expect("start the lab");
    build_k8s(lab.central(), SPEC).expect("build the cluster");
    run_node_controller(&mut lab, &SPEC, 0, &Controller::OvnController).expect("node0 syncs");
    let node = node_name(0);
    let oracle = installed_on(&lab, &node, layout).expect("dump node0");
    let ours = agent_compiled(agent, &lab, &node, agent_layout, layout, &oracle, "k8s");
    let uuids = lab
        .central()
        .sbctl(&["--bare", "--columns=_uuid", "list", "Logical_Flow"])
        .unwrap();
    let result = compare(&oracle.flows, &ours, &lflow_cookies(&uuids));
    println!(
        "k8s ({} flows installed by ovn-controller): {result}",
        oracle.flows.len()
    );
    assert!(
        result.identical > 100,
        "a cluster's worth of logical flows: {result}"
    );
    assert!(result.different.is_empty(), "{result}");
    let stray: Vec<&String> = result
        .lookup_missing
        .iter()
        .chain(&result.lookup_extra)
        .filter(|f| run.built_by_compile(f))
        .collect();
    assert!(
        stray.is_empty(),
        "lookup flows differ: {stray:#?}\n{result}"
    );
}
