//! `ovn-bench`: runs `ovn-controller` and `ovn-agent` in turn, each on a fresh chassis (its own
//! `ovsdb-server` and `ovs-vswitchd`) against the same Southbound content, and prints a table
//! per controller with their ratio ovn-agent/ovn-controller:
//!
//! - time to the first full sync: from starting the controller to `ovn-nbctl --wait=hv sync`
//!   returning (every chassis acknowledged the current `nb_cfg`, which a controller does only
//!   once the flows for it are installed), with the controller's and the switch's CPU seconds
//!   and the controller's peak RSS by then;
//! - the OpenFlow flows installed in `br-int` (by table role when the counts differ);
//! - peak RSS (`VmHWM`) and CPU seconds (`utime` + `stime`) of the controller over its run;
//! - port-up of a VIF added 0, 1, 5 and 30 s after the first sync (its logical port made
//!   before the controller started), one sample each: what a port waits behind while the
//!   first sync's work is still settling;
//! - port-up latency: from adding an OVS interface with `external_ids:iface-id` to the
//!   Southbound `Port_Binding.up` being true (median of `--samples`);
//! - one-object change latencies (median of `--samples`): one ACL, one address added to an
//!   address set, one port added to a port group, each from `ovn-northd`'s Southbound commit
//!   (`SB_Global.nb_cfg`) to the chassis' acknowledgement (`Chassis_Private.nb_cfg`), both
//!   timestamped by an outside watcher ([`integration::sbwatch`]); and the whole
//!   `ovn-nbctl --wait=hv acl-add`, northd included;
//! - the floor that `ovs-vswitchd` itself sets: `ovs-ofctl --bundle add-flows` of the flows the
//!   controller installed (dumped after the first sync, stats and cookies stripped) into an
//!   empty `br-int` of another fresh switch (median of `--floor-runs`).
//!
//! Two shapes of Southbound: `--shape synthetic` (switches on one router, port group and
//! address-set ACLs: [`integration::scale::build`]; the measured chassis binds
//! `--bound-per-switch` ports of every switch), and `--shape k8s` (an ovn-kubernetes cluster:
//! [`integration::scale::build_k8s`]; the measured chassis is node0, with its pods and
//! management port as VIFs and `physnet` mapped to a bridge `breth0`).
//!
//! What a round changes in the Northbound (the sample ports and ACLs) is removed before the
//! next round, so every controller starts from the same content. A benchmark, not a test: it
//! prints figures and judges nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::{Parser, ValueEnum};
use integration::central::DB_TIMEOUT_SECS;
use integration::flows::{TableLayout, TableRole};
use integration::sbwatch::{SbEvent, SbWatch};
use integration::scale::k8s::{
    mac_for, namespace_address_set, node_name, node_subnet_host, node_vifs, policy_port_group,
    K8sArgs, CLUSTER_PORT_GROUP, LARGE_DB_TIMEOUT_SECS, PHYSNET,
};
use integration::scale::{build, build_k8s, vm_port, K8sSpec, ScaleSpec};
use integration::{Central, Chassis, Controller, Lab};

#[derive(Parser, Debug)]
#[command(about = "Compare ovn-controller and ovn-agent on the same Southbound content")]
struct Args {
    /// The shape of the generated Southbound.
    #[arg(long, value_enum, default_value_t = Shape::Synthetic)]
    shape: Shape,
    /// Same as `--shape k8s`.
    #[arg(long)]
    k8s: bool,

    /// synthetic: logical switches, all on one router.
    #[arg(long, default_value_t = 20)]
    switches: usize,
    /// synthetic: VM ports per switch.
    #[arg(long, default_value_t = 50)]
    ports_per_switch: usize,
    /// synthetic: port-group/address-set ACLs per switch.
    #[arg(long, default_value_t = 10)]
    acls_per_switch: usize,
    /// synthetic: ports of each switch that are bound on the measured chassis.
    #[arg(long, default_value_t = 2)]
    bound_per_switch: usize,

    #[command(flatten)]
    k8s_shape: K8sArgs,

    /// ACLs added in one Northbound transaction (and then removed in one): a huge update
    /// of their logical flows (0: none).
    #[arg(long, default_value_t = 10_000)]
    huge_acls: usize,
    /// Port-up and change-latency samples per controller.
    #[arg(long, default_value_t = 5)]
    samples: usize,
    /// Timed `ovs-ofctl --bundle add-flows` runs per controller's dump.
    #[arg(long, default_value_t = 3)]
    floor_runs: usize,
    /// Controllers to measure, in order: "c" (ovn-controller), "rust" (ovn-agent).
    /// Default: c, plus rust when the ovn-agent binary is found (`OVN_AGENT_BIN`, or built).
    #[arg(long, value_delimiter = ',')]
    controllers: Vec<String>,
    /// Keep the lab directory (every daemon's log and database) and print its path.
    #[arg(long)]
    keep: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Shape {
    Synthetic,
    K8s,
}

/// The generated Southbound and where the measured chassis sits in it.
#[derive(Debug, Clone, Copy)]
enum Topology {
    Synthetic {
        spec: ScaleSpec,
        bound_per_switch: usize,
    },
    K8s(K8sSpec),
}

impl Topology {
    fn from_args(args: &Args) -> anyhow::Result<Self> {
        if args.k8s || args.shape == Shape::K8s {
            let spec = args.k8s_shape.spec();
            spec.check()?;
            // Sample ports take the addresses after node0's pods: .3 + pods onwards.
            if 3 + spec.pods_per_node + args.samples + AFTER_SYNC_S.len() > 254 {
                bail!("--pods-per-node + --samples must leave room in node0's /24");
            }
            Ok(Self::K8s(spec))
        } else {
            let spec = ScaleSpec {
                switches: args.switches,
                ports_per_switch: args.ports_per_switch,
                acls_per_switch: args.acls_per_switch,
            };
            if spec.switches == 0 || spec.ports_per_switch + args.samples + AFTER_SYNC_S.len() > 250
            {
                bail!("needs a switch, and --ports-per-switch + --samples at most 250");
            }
            Ok(Self::Synthetic {
                spec,
                bound_per_switch: args.bound_per_switch.min(args.ports_per_switch),
            })
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Synthetic {
                spec,
                bound_per_switch,
            } => format!(
                "synthetic {spec:?}: {} ports, {bound_per_switch} per switch bound on the measured chassis",
                spec.total_ports()
            ),
            Self::K8s(spec) => format!(
                "k8s {spec:?}: {} pods, measured chassis node0",
                spec.total_pods()
            ),
        }
    }

    fn build(&self, central: &Central) -> anyhow::Result<()> {
        match self {
            Self::Synthetic { spec, .. } => {
                build(central, *spec)?;
                central.nbctl_with_timeout(LARGE_DB_TIMEOUT_SECS, &["--wait=sb", "sync"])?;
            }
            Self::K8s(spec) => {
                let built = build_k8s(central, *spec)?;
                for (phase, took) in &built.phases {
                    println!("  {phase:<36} {took:>9.1?}");
                }
            }
        }
        Ok(())
    }

    /// The measured chassis of round `round`. The synthetic shape takes a new chassis each
    /// round (the last one's is deleted); the k8s one is always node0, whose `Chassis` row the
    /// generator made and every port of node0 requests.
    fn chassis_name(&self, round: usize) -> String {
        match self {
            Self::Synthetic { .. } => format!("bench{round}"),
            Self::K8s(_) => node_name(0),
        }
    }

    /// VIFs (interface, iface-id) on the measured chassis before its controller starts.
    fn vifs(&self) -> Vec<(String, String)> {
        match self {
            Self::Synthetic {
                spec,
                bound_per_switch,
            } => (0..spec.switches)
                .flat_map(|s| (0..*bound_per_switch).map(move |p| (s, p)))
                .map(|(s, p)| (format!("v{s}_{p}"), vm_port(s, p).0))
                .collect(),
            Self::K8s(spec) => node_vifs(spec, 0),
        }
    }

    /// The address set that gets one address per sample, and the port group that gets each
    /// sample port: both used by ACLs of the measured chassis' switch.
    fn sample_address_set(&self) -> String {
        match self {
            Self::Synthetic { .. } => "as_sw0".to_owned(),
            // Namespace 0 has a pod on node0 (pod g is in namespace g mod namespaces).
            Self::K8s(_) => namespace_address_set(0),
        }
    }

    fn sample_port_group(&self) -> String {
        match self {
            Self::Synthetic { .. } => "pg_vms".to_owned(),
            Self::K8s(spec) if spec.policies_per_namespace > 0 => policy_port_group(0, 0),
            Self::K8s(_) => CLUSTER_PORT_GROUP.to_owned(),
        }
    }

    /// The logical switch that gets the sample ports and ACLs.
    fn sample_switch(&self) -> String {
        match self {
            Self::Synthetic { .. } => "sw0".to_owned(),
            Self::K8s(_) => node_name(0),
        }
    }

    /// `ovn-nbctl` arguments that add sample port `name` (number `i`) to the sample switch.
    fn sample_port_commands(&self, name: &str, i: usize) -> Vec<String> {
        let switch = self.sample_switch();
        let mut cmd: Vec<String> = vec!["lsp-add".into(), switch, name.into()];
        match self {
            Self::Synthetic { spec, .. } => {
                let (_, mac, ip) = vm_port(0, spec.ports_per_switch + i);
                cmd.extend(["--".into(), "lsp-set-addresses".into(), name.into()]);
                cmd.push(format!("{mac} {ip}"));
            }
            Self::K8s(spec) => {
                let host = u8::try_from(3 + spec.pods_per_node + i).unwrap_or(u8::MAX);
                let ip = node_subnet_host(0, host);
                let address = format!("{} {ip}", mac_for(ip));
                for (command, value) in [
                    ("lsp-set-addresses", address.clone()),
                    ("lsp-set-port-security", address),
                    (
                        "lsp-set-options",
                        format!("requested-chassis={}", node_name(0)),
                    ),
                ] {
                    cmd.extend(["--".into(), command.into(), name.into(), value]);
                }
            }
        }
        cmd
    }

    /// Prepares the measured chassis' OVS beyond its VIFs: in the k8s shape, `physnet` is
    /// mapped to a bridge `breth0`, as ovn-kubernetes does on every node.
    fn prepare(&self, chassis: &Chassis) -> anyhow::Result<()> {
        if let Self::K8s(_) = self {
            chassis.vsctl(&[
                "add-br",
                "breth0",
                "--",
                "set",
                "bridge",
                "breth0",
                "datapath_type=dummy",
                "--",
                "set",
                "Open_vSwitch",
                ".",
                &format!("external-ids:ovn-bridge-mappings={PHYSNET}:breth0"),
            ])?;
        }
        Ok(())
    }

    /// Stops the measured chassis: the synthetic shape deletes its Southbound records; node0
    /// keeps them (its ports and `Chassis` row belong to the generated cluster) for the next
    /// round's controller to take over.
    fn stop_chassis(&self, lab: &mut Lab, name: &str) -> anyhow::Result<()> {
        match self {
            Self::Synthetic { .. } => lab.remove_chassis(name)?,
            Self::K8s(_) => lab.stop_chassis(name)?,
        }
        Ok(())
    }
}

/// What one controller did.
#[derive(Debug)]
struct Round {
    label: &'static str,
    first_sync: Duration,
    /// CPU seconds of the controller and of the chassis' `ovs-vswitchd` from the controller's
    /// start to the first sync.
    cpu_at_sync: f64,
    vswitchd_cpu_at_sync: f64,
    /// `VmHWM` at the first sync.
    rss_at_sync_kib: u64,
    /// `ovs-ofctl dump-aggregate` flow count after the first sync.
    flows: u64,
    /// Flows per table role after the first sync.
    by_role: BTreeMap<TableRole, u64>,
    port_up: Vec<Duration>,
    /// Port-up of a VIF added [`AFTER_SYNC_S`] seconds after the first sync (its
    /// logical port made before the controller started), one each.
    port_up_after_sync: Vec<Duration>,
    /// `ovn-nbctl --wait=hv acl-add`, northd included.
    acl_wait_hv: Vec<Duration>,
    /// One-object changes, from northd's Southbound commit to the chassis' acknowledgement.
    acl: Vec<Duration>,
    address: Vec<Duration>,
    port_group: Vec<Duration>,
    /// The huge update, if made.
    huge: Option<Huge>,
    /// Over the whole round (first sync and all samples).
    peak_rss_kib: u64,
    cpu_total: f64,
    floor: Vec<Duration>,
    /// What the controller's incremental engine says it did ([`engine_stats_command`]).
    engine_stats: String,
    /// `memory/show` at the first sync: what each structure holds.
    memory_at_sync: String,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let topology = Topology::from_args(&args)?;
    let controllers = pick_controllers(&args.controllers)?;
    let mut lab = Lab::start()?;
    if args.keep {
        lab.keep_dir();
    }
    let t = Instant::now();
    println!("{}", topology.describe());
    topology.build(lab.central())?;
    let counts = [
        "Logical_Flow",
        "Logical_DP_Group",
        "Port_Binding",
        "Datapath_Binding",
    ]
    .iter()
    .map(|table| Ok(format!("{} {table}", count_rows(lab.central(), table)?)))
    .collect::<anyhow::Result<Vec<_>>>()?;
    println!(
        "Southbound: {}; built in {:.1?}",
        counts.join(", "),
        t.elapsed()
    );
    for controller in &controllers {
        println!("controller: {}", controller.program());
    }

    let mut rounds = Vec::new();
    for (round, controller) in controllers.iter().enumerate() {
        let r = measure(&mut lab, &args, &topology, controller, round)
            .with_context(|| format!("round {round} ({})", controller.program()))?;
        println!(
            "{}: first sync {:.3?}, {} flows, peak RSS {} KiB, CPU {:.2} s",
            r.label, r.first_sync, r.flows, r.peak_rss_kib, r.cpu_total
        );
        rounds.push(r);
    }
    println!();
    print!("{}", table(&rounds, args.samples, args.floor_runs));
    print!("{}", flow_differences(&rounds));
    for r in &rounds {
        println!("\n{} engine statistics:\n{}", r.label, r.engine_stats);
        println!(
            "{} memory/show at the first sync:\n  {}",
            r.label,
            r.memory_at_sync.trim()
        );
    }
    Ok(())
}

fn pick_controllers(names: &[String]) -> anyhow::Result<Vec<Controller>> {
    if names.is_empty() {
        let mut all = vec![Controller::OvnController];
        all.extend(Controller::ovn_agent().ok());
        return Ok(all);
    }
    names
        .iter()
        .map(|n| match n.as_str() {
            "c" => Ok(Controller::OvnController),
            "rust" => Ok(Controller::ovn_agent()?),
            other => bail!("unknown controller {other:?}: expected c or rust"),
        })
        .collect()
}

fn count_rows(central: &Central, table: &str) -> anyhow::Result<usize> {
    let out = central.sbctl_with_timeout(
        LARGE_DB_TIMEOUT_SECS,
        &["--bare", "--columns=_uuid", "list", table],
    )?;
    Ok(out.lines().filter(|l| !l.trim().is_empty()).count())
}

/// `ovn-nbctl --wait=hv ARGS` with a timeout that large databases need.
fn nbctl_wait_hv(central: &Central, args: &[&str]) -> anyhow::Result<()> {
    let mut all = vec!["--wait=hv"];
    all.extend_from_slice(args);
    central.nbctl_with_timeout(LARGE_DB_TIMEOUT_SECS, &all)?;
    Ok(())
}

fn measure(
    lab: &mut Lab,
    args: &Args,
    topology: &Topology,
    controller: &Controller,
    round: usize,
) -> anyhow::Result<Round> {
    let (label, layout) = match controller {
        Controller::OvnController => ("ovn-controller", TableLayout::Ovn2303),
        // The harness leaves ovn-agent at its default layout.
        _ => ("ovn-agent", TableLayout::Classic),
    };
    let name = topology.chassis_name(round);
    let vifs = topology.vifs();
    let pairs: Vec<(&str, &str)> = vifs.iter().map(|(v, p)| (v.as_str(), p.as_str())).collect();
    let chassis = lab.add_bare_chassis(&name)?;
    chassis.add_vifs(&pairs)?;
    topology.prepare(chassis)?;
    let vswitchd_cpu_before = chassis.vswitchd().cpu_seconds()?;

    // The logical ports of the after-sync samples exist before the controller starts: the
    // samples then time only the VIF's claim and flows.
    let mut ports = Vec::new();
    for k in 0..AFTER_SYNC_S.len() {
        let port = format!("bench{round}-sync{k}");
        let mut cmd = vec!["--wait=sb".to_owned()];
        cmd.extend(topology.sample_port_commands(&port, args.samples + k));
        lab.central().nbctl(&cmd)?;
        ports.push(port);
    }

    let start = Instant::now();
    lab.start_controller(&name, controller)?;
    let central = lab.central();
    central
        .wait_for_chassis_private(&name, Duration::from_secs(u64::from(LARGE_DB_TIMEOUT_SECS)))?;
    // The Southbound watch must be up before the first after-sync sample; its start (the
    // monitors' first contents, once Chassis_Private has our row) is not the controller's
    // time and is left out of the first sync.
    let watch_started = Instant::now();
    let watch = central.watch_sb(Duration::from_secs(u64::from(LARGE_DB_TIMEOUT_SECS)))?;
    let watch_setup = watch_started.elapsed();
    nbctl_wait_hv(central, &["sync"])?;
    let synced_at = Instant::now();
    let first_sync = start.elapsed().saturating_sub(watch_setup);

    let chassis = lab.chassis(&name)?;
    let daemon = chassis.controller().context("controller")?;
    let cpu_at_sync = daemon.cpu_seconds()?;
    let rss_at_sync_kib = daemon.peak_rss_kib()?;
    let timeout = Duration::from_secs(u64::from(DB_TIMEOUT_SECS));
    let mut port_up_after_sync = Vec::new();
    for (k, after) in AFTER_SYNC_S.iter().enumerate() {
        let due = synced_at + Duration::from_secs(*after);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let t = Instant::now();
        chassis.add_vif(&format!("sync{k}"), &ports[k])?;
        let port = &ports[k];
        let up = watch.first_after(
            "the after-sync port up",
            t,
            timeout,
            |e| matches!(e, SbEvent::PortUp { port: p, up: true } if p == port),
        )?;
        port_up_after_sync.push(up - t);
    }
    let vswitchd_cpu_at_sync = chassis.vswitchd().cpu_seconds()? - vswitchd_cpu_before;
    let flows = chassis.flow_count("br-int")?;
    let dump = chassis.ofctl(&["--no-stats", "dump-flows", "br-int"])?;
    let by_role = flows_by_role(&dump, layout);
    let export = export_flows(chassis, &dump)?;
    let stats_at_sync = chassis
        .controller_appctl(&[engine_stats_command(controller)])
        .unwrap_or_default();
    let memory_at_sync = chassis
        .controller_appctl(&["memory/show"])
        .unwrap_or_default();

    let switch = topology.sample_switch();
    let address_set = topology.sample_address_set();
    let port_group = topology.sample_port_group();
    let mut samples = Samples::default();
    let mut acls = Vec::new();
    let mut addresses = Vec::new();
    for i in 0..args.samples {
        let port = format!("bench{round}-new{i}");
        let mut cmd = vec!["--wait=sb".to_owned()];
        cmd.extend(topology.sample_port_commands(&port, i));
        central.nbctl(&cmd)?;
        ports.push(port.clone());
        let t = Instant::now();
        chassis.add_vif(&format!("new{i}"), &port)?;
        let up = watch.first_after(
            "the sample port up",
            t,
            timeout,
            |e| matches!(e, SbEvent::PortUp { port: p, up: true } if *p == port),
        )?;
        samples.port_up.push(up - t);

        let acl = format!(
            "ip4.src == 198.18.{round}.{} && udp.dst == {}",
            i % 250,
            5000 + i
        );
        let t = Instant::now();
        nbctl_wait_hv(
            central,
            &["acl-add", &switch, "from-lport", "2000", &acl, "drop"],
        )?;
        samples.acl_wait_hv.push(t.elapsed());
        samples.acl.push(northd_to_ack(central, &watch, &name, t)?);
        acls.push(acl);

        let address = format!("\"198.19.{round}.{}\"", 1 + i % 250);
        let t = Instant::now();
        nbctl_wait_hv(
            central,
            &["add", "Address_Set", &address_set, "addresses", &address],
        )?;
        samples
            .address
            .push(northd_to_ack(central, &watch, &name, t)?);
        addresses.push(address);

        let lsp = central.nbctl(&["get", "Logical_Switch_Port", &port, "_uuid"])?;
        let t = Instant::now();
        nbctl_wait_hv(
            central,
            &["add", "Port_Group", &port_group, "ports", lsp.trim()],
        )?;
        samples
            .port_group
            .push(northd_to_ack(central, &watch, &name, t)?);
    }
    drop(watch);
    let huge = (args.huge_acls > 0)
        .then(|| huge_update(central, daemon, &switch, args.huge_acls))
        .transpose()?;
    let peak_rss_kib = daemon.peak_rss_kib()?;
    let cpu_total = daemon.cpu_seconds()?;
    let engine_stats = engine_stats(chassis, controller, &stats_at_sync);

    // Back to the content the round started from, for the next controller.
    let mut undo: Vec<String> = Vec::new();
    for port in &ports {
        undo.extend(["--".into(), "lsp-del".into(), port.clone()]);
    }
    for address in &addresses {
        undo.extend(
            [
                "--",
                "remove",
                "Address_Set",
                &address_set,
                "addresses",
                address,
            ]
            .iter()
            .map(|s| (*s).to_owned()),
        );
    }
    for acl in &acls {
        undo.extend(
            ["--", "acl-del", &switch, "from-lport", "2000", acl]
                .iter()
                .map(|s| (*s).to_owned()),
        );
    }
    if !undo.is_empty() {
        let mut cmd = vec!["--wait=hv".to_owned()];
        cmd.extend(undo.into_iter().skip(1));
        central.nbctl_with_timeout(LARGE_DB_TIMEOUT_SECS, &cmd)?;
    }
    topology.stop_chassis(lab, &name)?;

    let floor = floor(lab, &export, round, args.floor_runs)?;
    lab.remove_chassis(&format!("floor{round}"))?;
    Ok(Round {
        label,
        first_sync,
        cpu_at_sync,
        vswitchd_cpu_at_sync,
        rss_at_sync_kib,
        flows,
        by_role,
        port_up: samples.port_up,
        port_up_after_sync,
        acl_wait_hv: samples.acl_wait_hv,
        acl: samples.acl,
        address: samples.address,
        port_group: samples.port_group,
        huge,
        peak_rss_kib,
        cpu_total,
        floor,
        engine_stats,
        memory_at_sync,
    })
}

/// What one huge update did to the controller: `acls` ACLs added to the sample switch in
/// one Northbound transaction, then removed in one.
#[derive(Debug)]
struct Huge {
    acls: usize,
    add: Duration,
    remove: Duration,
    /// `VmRSS` before, after the addition and after the removal; `VmHWM` before and after.
    rss_kib: [u64; 3],
    peak_kib: [u64; 2],
}

fn huge_update(
    central: &Central,
    daemon: &integration::Daemon,
    switch: &str,
    acls: usize,
) -> anyhow::Result<Huge> {
    let matches: Vec<String> = (0..acls)
        .map(|i| format!("ip4.src == 198.51.{}.{} && tcp.dst == 80", i / 250, i % 250))
        .collect();
    let command = |verb: &str, extra: &[&str]| -> Vec<String> {
        let mut cmd = Vec::new();
        for m in &matches {
            cmd.extend(["--", verb, switch, "from-lport", "1900", m].map(str::to_owned));
            cmd.extend(extra.iter().map(|s| (*s).to_owned()));
        }
        cmd.split_off(1)
    };
    let rss_before = daemon.rss_kib()?;
    let peak_before = daemon.peak_rss_kib()?;
    let t = Instant::now();
    nbctl_wait_hv(central, &strs(&command("acl-add", &["drop"])))?;
    let add = t.elapsed();
    let rss_added = daemon.rss_kib()?;
    let t = Instant::now();
    nbctl_wait_hv(central, &strs(&command("acl-del", &[])))?;
    let remove = t.elapsed();
    Ok(Huge {
        acls,
        add,
        remove,
        rss_kib: [rss_before, rss_added, daemon.rss_kib()?],
        peak_kib: [peak_before, daemon.peak_rss_kib()?],
    })
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// When the after-sync port-up samples are taken, in seconds after the first sync.
const AFTER_SYNC_S: [u64; 4] = [0, 1, 5, 30];

/// Latency samples of one round.
#[derive(Default)]
struct Samples {
    port_up: Vec<Duration>,
    acl_wait_hv: Vec<Duration>,
    acl: Vec<Duration>,
    address: Vec<Duration>,
    port_group: Vec<Duration>,
}

/// For the Northbound change just made with `--wait=hv` (started at `since`): from
/// `ovn-northd`'s Southbound commit of it to `chassis` acknowledging it.
fn northd_to_ack(
    central: &Central,
    watch: &SbWatch,
    chassis: &str,
    since: Instant,
) -> anyhow::Result<Duration> {
    let nb_cfg: i64 = central
        .nbctl(&["get", "NB_Global", ".", "nb_cfg"])?
        .trim()
        .parse()
        .context("NB_Global nb_cfg")?;
    let timeout = Duration::from_secs(u64::from(DB_TIMEOUT_SECS));
    Ok(watch.nb_cfg_latency(chassis, nb_cfg, since, timeout)?)
}

/// The controller's engine statistics at the first sync and at the end of the round: all of
/// ovn-agent's; ovn-controller's recompute and compute counts of its flow nodes.
fn engine_stats(chassis: &Chassis, controller: &Controller, at_sync: &str) -> String {
    let now = chassis
        .controller_appctl(&[engine_stats_command(controller)])
        .unwrap_or_else(|e| format!("({e})"));
    let brief = |text: &str| -> String {
        match controller {
            Controller::OvnController => {
                let mut out = Vec::new();
                let mut node = "";
                for line in text.lines() {
                    if let Some(n) = line.strip_prefix("Node: ") {
                        node = n.trim();
                    } else if ["logical_flow_output", "physical_flow_output", "flow_output"]
                        .contains(&node)
                    {
                        let l = line.trim().trim_start_matches("- ");
                        if l.starts_with("recompute") || l.starts_with("compute") {
                            out.push(format!(
                                "{node} {}",
                                l.split_whitespace().collect::<Vec<_>>().join(" ")
                            ));
                        }
                    }
                }
                out.join(", ")
            }
            _ => text.trim_end().lines().collect::<Vec<_>>().join("\n    "),
        }
    };
    format!(
        "  at first sync:\n    {}\n  at the end of the round:\n    {}",
        brief(at_sync),
        brief(&now)
    )
}

/// The command that shows the controller's engine statistics: ovn-controller's node
/// counters, or everything ovn-agent counts.
fn engine_stats_command(controller: &Controller) -> &'static str {
    match controller {
        Controller::OvnController => "inc-engine/show-stats",
        _ => "debug/engine-stats",
    }
}

/// Flow counts of a `dump-flows` by the role of their table under `layout`.
fn flows_by_role(dump: &str, layout: TableLayout) -> BTreeMap<TableRole, u64> {
    let mut by_role = BTreeMap::new();
    for line in dump.lines().filter(|l| l.contains("actions=")) {
        let table = line
            .split([',', ' '])
            .find_map(|w| w.strip_prefix("table="))
            .and_then(|t| t.parse::<u8>().ok())
            .unwrap_or(0);
        *by_role.entry(layout.role(table)).or_insert(0) += 1;
    }
    by_role
}

/// A chassis' installed OpenFlow state, written to files that `ovs-ofctl` reads back.
struct Export {
    flows_file: std::path::PathBuf,
    groups_file: std::path::PathBuf,
    tlv_maps: Vec<String>,
    flows: u64,
}

/// Writes `dump` (`dump-flows --no-stats`) as `add-flows` input without cookies, and the
/// chassis' groups, for [`floor`].
fn export_flows(measured: &Chassis, dump: &str) -> anyhow::Result<Export> {
    let dir = measured
        .host()
        .dir()
        .parent()
        .context("lab dir")?
        .to_owned();
    let name = measured.name();
    let flows: String =
        dump.lines()
            .filter(|l| l.contains("actions="))
            .fold(String::new(), |mut s, l| {
                let l = l.trim();
                let l = match l.split_once(", ") {
                    Some((cookie, rest)) if cookie.starts_with("cookie=") => rest,
                    _ => l,
                };
                let _ = writeln!(s, "{l}");
                s
            });
    let groups: String = measured
        .ofctl(&["dump-groups", "br-int"])?
        .lines()
        .filter(|l| l.trim_start().starts_with("group_id="))
        .fold(String::new(), |mut s, l| {
            let _ = writeln!(s, "{}", l.trim());
            s
        });
    let tlv_maps = tlv_maps(&measured.ofctl(&["dump-tlv-map", "br-int"])?);
    // Next to the chassis' directory, which is renamed or left behind when it stops.
    let flows_file = dir.join(format!("floor-{name}-flows.txt"));
    let groups_file = dir.join(format!("floor-{name}-groups.txt"));
    std::fs::write(&flows_file, &flows)?;
    std::fs::write(&groups_file, groups)?;
    Ok(Export {
        flows: flows.lines().count() as u64,
        flows_file,
        groups_file,
        tlv_maps,
    })
}

/// Times of `ovs-ofctl --bundle add-flows` installing the exported flows (after the groups and
/// the Geneve TLV map they need) into the empty `br-int` of a fresh chassis without a
/// controller, `runs` times (the flows are deleted between runs, untimed).
fn floor(
    lab: &mut Lab,
    export: &Export,
    round: usize,
    runs: usize,
) -> anyhow::Result<Vec<Duration>> {
    let target = lab.add_bare_chassis(&format!("floor{round}"))?;
    for map in &export.tlv_maps {
        target.ofctl(&["add-tlv-map", "br-int", map])?;
    }
    let groups = export.groups_file.display().to_string();
    target.ofctl(&["--bundle", "add-groups", "br-int", &groups])?;
    let flows = export.flows_file.display().to_string();
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        target.ofctl(&["--bundle", "add-flows", "br-int", &flows])?;
        times.push(t.elapsed());
        let installed = target.flow_count("br-int")?;
        if installed != export.flows {
            bail!(
                "floor chassis has {installed} flows, exported {}",
                export.flows
            );
        }
        target.ofctl(&["del-flows", "br-int"])?;
    }
    Ok(times)
}

/// `ovs-ofctl dump-tlv-map` rows (` 0x102  0x80  4  0`) as `add-tlv-map` arguments.
fn tlv_maps(dump: &str) -> Vec<String> {
    dump.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                [class, ty, len, index] if class.starts_with("0x") => {
                    Some(format!("{{class={class},type={ty},len={len}}}->{index}"))
                }
                _ => None,
            }
        })
        .collect()
}

fn median(values: &[Duration]) -> Duration {
    let mut v = values.to_vec();
    v.sort_unstable();
    match v.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2,
    }
}

fn spread(values: &[Duration]) -> String {
    let min = values.iter().min().copied().unwrap_or_default();
    let max = values.iter().max().copied().unwrap_or_default();
    format!("{:.1}-{:.1} ms", ms(min), ms(max))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

type Figure = (String, Box<dyn Fn(&Round) -> (f64, String)>);

/// A row with the median of a latency sample.
fn latency_row(name: String, samples: fn(&Round) -> &Vec<Duration>) -> Figure {
    (
        name,
        Box::new(move |r| {
            let m = median(samples(r));
            (ms(m), format!("{:.1} ms", ms(m)))
        }),
    )
}

/// The table: a row per figure, a column per controller, and the ratio ovn-agent /
/// ovn-controller when both ran.
fn table(rounds: &[Round], samples: usize, floor_runs: usize) -> String {
    let mut figures: Vec<Figure> = vec![
        (
            "first full sync (start -> --wait=hv sync)".into(),
            Box::new(|r| {
                let s = r.first_sync.as_secs_f64();
                (s, format!("{s:.3} s"))
            }),
        ),
        (
            "  controller CPU until then".into(),
            Box::new(|r| (r.cpu_at_sync, format!("{:.2} s", r.cpu_at_sync))),
        ),
        (
            "  ovs-vswitchd CPU until then".into(),
            Box::new(|r| {
                (
                    r.vswitchd_cpu_at_sync,
                    format!("{:.2} s", r.vswitchd_cpu_at_sync),
                )
            }),
        ),
        (
            "  controller peak RSS until then".into(),
            Box::new(|r| {
                let m = mib(r.rss_at_sync_kib);
                (m, format!("{m:.1} MiB"))
            }),
        ),
        (
            "installed flows (br-int)".into(),
            Box::new(|r| (r.flows as f64, r.flows.to_string())),
        ),
        (
            "peak RSS, whole run (VmHWM)".into(),
            Box::new(|r| {
                let m = mib(r.peak_rss_kib);
                (m, format!("{m:.1} MiB"))
            }),
        ),
        (
            "CPU, whole run (utime+stime)".into(),
            Box::new(|r| (r.cpu_total, format!("{:.2} s", r.cpu_total))),
        ),
        (
            format!("port-up, median of {samples} (iface -> PB.up)"),
            Box::new(|r| {
                let m = median(&r.port_up);
                (ms(m), format!("{:.1} ms", ms(m)))
            }),
        ),
        (
            "  min-max".into(),
            Box::new(|r| (f64::NAN, spread(&r.port_up))),
        ),
    ];
    for (k, after) in AFTER_SYNC_S.iter().enumerate() {
        figures.push((
            format!("port-up, VIF added {after} s after the first sync"),
            Box::new(move |r| {
                r.port_up_after_sync
                    .get(k)
                    .map_or((f64::NAN, "-".to_owned()), |d| {
                        (ms(*d), format!("{:.1} ms", ms(*d)))
                    })
            }),
        ));
    }
    figures.extend::<Vec<Figure>>(vec![
        latency_row(
            format!("ACL add --wait=hv (incl. northd), median of {samples}"),
            |r| &r.acl_wait_hv,
        ),
        latency_row("one ACL: northd SB commit -> chassis ack".into(), |r| {
            &r.acl
        }),
        ("  min-max".into(), Box::new(|r| (f64::NAN, spread(&r.acl)))),
        latency_row("one address-set address: commit -> ack".into(), |r| {
            &r.address
        }),
        (
            "  min-max".into(),
            Box::new(|r| (f64::NAN, spread(&r.address))),
        ),
        latency_row("one port-group port: commit -> ack".into(), |r| {
            &r.port_group
        }),
        (
            "  min-max".into(),
            Box::new(|r| (f64::NAN, spread(&r.port_group))),
        ),
        (
            "ACLs added in one transaction: --wait=hv".into(),
            Box::new(|r| match &r.huge {
                Some(h) => {
                    let s = h.add.as_secs_f64();
                    (s, format!("{} in {s:.3} s", h.acls))
                }
                None => (f64::NAN, "-".into()),
            }),
        ),
        (
            "  then all removed in one: --wait=hv".into(),
            Box::new(|r| match &r.huge {
                Some(h) => {
                    let s = h.remove.as_secs_f64();
                    (s, format!("{s:.3} s"))
                }
                None => (f64::NAN, "-".into()),
            }),
        ),
        (
            "  RSS before, added, removed (MiB)".into(),
            Box::new(|r| match &r.huge {
                Some(h) => {
                    let [a, b, c] = h.rss_kib.map(mib);
                    (b - a, format!("{a:.0}, {b:.0}, {c:.0}"))
                }
                None => (f64::NAN, "-".into()),
            }),
        ),
        (
            "  peak RSS before -> after (MiB)".into(),
            Box::new(|r| match &r.huge {
                Some(h) => {
                    let [a, b] = h.peak_kib.map(mib);
                    (b - a, format!("{a:.0} -> {b:.0}"))
                }
                None => (f64::NAN, "-".into()),
            }),
        ),
        (
            format!("floor: ofctl --bundle add-flows, median of {floor_runs}"),
            Box::new(|r| {
                let s = median(&r.floor).as_secs_f64();
                (s, format!("{s:.3} s"))
            }),
        ),
        (
            "first sync / floor".into(),
            Box::new(|r| {
                let x = r.first_sync.as_secs_f64() / median(&r.floor).as_secs_f64();
                (x, format!("{x:.2}"))
            }),
        ),
    ]);
    let agent = rounds.iter().position(|r| r.label == "ovn-agent");
    let c = rounds.iter().position(|r| r.label == "ovn-controller");
    let mut out = String::new();
    let _ = write!(out, "{:<46}", "");
    for r in rounds {
        let _ = write!(out, "{:>18}", r.label);
    }
    if agent.is_some() && c.is_some() {
        let _ = write!(out, "{:>14}", "agent/c");
    }
    out.push('\n');
    for (name, figure) in &figures {
        let _ = write!(out, "{name:<46}");
        let values: Vec<(f64, String)> = rounds.iter().map(figure).collect();
        for (_, text) in &values {
            let _ = write!(out, "{text:>18}");
        }
        if let (Some(a), Some(c)) = (agent, c) {
            let (a, c) = (values[a].0, values[c].0);
            if a.is_finite() && c.is_finite() && c != 0.0 {
                let _ = write!(out, "{:>14.2}", a / c);
            }
        }
        out.push('\n');
    }
    out
}

/// When the controllers installed different numbers of flows, the table roles where they
/// differ, largest difference first.
fn flow_differences(rounds: &[Round]) -> String {
    let mut out = String::new();
    let (Some(a), Some(c)) = (
        rounds.iter().find(|r| r.label == "ovn-agent"),
        rounds.iter().find(|r| r.label == "ovn-controller"),
    ) else {
        return out;
    };
    if a.flows == c.flows {
        return out;
    }
    let mut diffs: Vec<(TableRole, u64, u64)> = a
        .by_role
        .keys()
        .chain(c.by_role.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|role| {
            let get = |r: &Round| r.by_role.get(role).copied().unwrap_or(0);
            (*role, get(c), get(a))
        })
        .filter(|(_, c, a)| c != a)
        .collect();
    diffs.sort_by_key(|(_, c, a)| std::cmp::Reverse(c.abs_diff(*a)));
    let _ = writeln!(
        out,
        "\nflows by table role where the counts differ (ovn-controller, ovn-agent, difference):"
    );
    for (role, c, a) in diffs.iter().take(15) {
        let _ = writeln!(
            out,
            "  {:<28} {c:>8} {a:>8} {:>+8}",
            role.to_string(),
            *a as i64 - *c as i64
        );
    }
    if diffs.len() > 15 {
        let _ = writeln!(out, "  ... and {} more roles", diffs.len() - 15);
    }
    out
}
