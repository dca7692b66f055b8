//! `ovn-sbgen`: generates the Southbound database of an ovn-kubernetes shaped cluster. It
//! starts a lab in a temporary directory (its central node: NB and SB `ovsdb-server`,
//! `ovn-northd`; its simulated network is only used by `--ovn-controller`),
//! writes the topology to the Northbound database, lets northd compute the Southbound, binds
//! every node's ports to its chassis, and writes `ovsdb-client -f json dump` of the Southbound
//! to `--out` (what `ovn-agent compile --sb FILE` reads). With `--ovn-controller` it then runs
//! the real ovn-controller as the local node's chassis and reports the OpenFlow flows it
//! installs. With `--keep` the central node keeps running (for `--sb unix:...`) until Enter is
//! pressed.

use std::io::BufRead as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context as _};
use clap::Parser;
use integration::sbdump::Dump;
use integration::scale::build_k8s;
use integration::scale::k8s::{node_bound_ports, node_name, run_node_controller, K8sArgs};
use integration::{Controller, Lab};

#[derive(Parser, Debug)]
#[command(about = "Generate the Southbound database of an ovn-kubernetes shaped cluster")]
struct Args {
    #[command(flatten)]
    k8s: K8sArgs,
    /// The node whose chassis is reported as the local one (every node's ports are bound).
    #[arg(long, default_value_t = 0)]
    local_node: usize,
    /// Where to write the Southbound dump.
    #[arg(long)]
    out: PathBuf,
    /// After the dump, run ovn-controller as the local node's chassis and report the flows it
    /// installs.
    #[arg(long)]
    ovn_controller: bool,
    /// Keep the central node running after the dump until Enter is pressed.
    #[arg(long)]
    keep: bool,
}

const COUNTED: [&str; 9] = [
    "Logical_Flow",
    "Logical_DP_Group",
    "Datapath_Binding",
    "Port_Binding",
    "Load_Balancer",
    "Port_Group",
    "Address_Set",
    "Multicast_Group",
    "Chassis",
];

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let spec = args.k8s.spec();
    spec.check()?;
    if args.local_node >= spec.nodes {
        bail!(
            "--local-node {} but only {} nodes",
            args.local_node,
            spec.nodes
        );
    }
    let total = Instant::now();
    let t = Instant::now();
    let mut lab = Lab::start()?;
    println!(
        "central started in {:.1?} ({})",
        t.elapsed(),
        lab.dir().display()
    );
    let central = lab.central();

    println!("{spec:?}: {} pods", spec.total_pods());
    let build = build_k8s(central, spec)?;
    for (phase, took) in &build.phases {
        println!("  {phase:<36} {took:>9.1?}");
    }
    println!(
        "  ({} ovn-nbctl invocations, {} ports bound)",
        build.nbctl_invocations, build.bound_ports
    );

    let t = Instant::now();
    central.dump_sb_json(&args.out)?;
    let size = std::fs::metadata(&args.out)
        .with_context(|| format!("stat {}", args.out.display()))?
        .len();
    println!(
        "  {:<36} {:>9.1?}  ({}, {:.1} MB)",
        "dump (ovsdb-client -f json dump)",
        t.elapsed(),
        args.out.display(),
        size as f64 / 1e6
    );

    let dump = Dump::read(&args.out)?;
    println!("Southbound rows:");
    for table in COUNTED {
        println!("  {table:<18} {:>7}", dump.count(table));
    }
    let local = node_name(args.local_node);
    let bound = dump.ports_bound_to(&local);
    let mut expected = node_bound_ports(&spec, args.local_node);
    expected.sort_unstable();
    if bound != expected {
        bail!("ports bound to {local} in the dump: {bound:?}, expected {expected:?}");
    }
    println!(
        "local chassis {local}: {} ports bound ({} pods, k8s-{local}, 4 ports of GR_{local})",
        bound.len(),
        spec.pods_per_node
    );
    println!(
        "compile with: ovn-agent compile --sb {} --chassis {local}",
        args.out.display()
    );
    println!("generated in {:.1?}", total.elapsed());

    if args.ovn_controller {
        let run =
            run_node_controller(&mut lab, &spec, args.local_node, &Controller::OvnController)?;
        println!(
            "ovn-controller as {local}: --wait=hv after {:.1?}, {} OpenFlow flows in br-int, peak RSS {} KiB",
            run.first_sync, run.flows, run.peak_rss_kib
        );
        if run.bound_ports != expected {
            bail!(
                "after ovn-controller ran, ports bound to {local}: {:?}, expected {expected:?}",
                run.bound_ports
            );
        }
        println!("  it kept all {} bindings of {local}", expected.len());
    }

    if args.keep {
        let central = lab.central();
        println!(
            "central node running: SB {}  NB {}",
            central.sb_remote(),
            central.nb_remote()
        );
        println!(
            "  e.g. ovn-agent compile --sb {} --chassis {local}",
            central.sb_remote()
        );
        println!("press Enter to stop it");
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
    }
    // Dropping the lab stops every daemon by pid and removes its directory.
    drop(lab);
    Ok(())
}
