//! `ovn-node`: makes this machine (a container, or a network namespace in a test) one node of
//! an OVN deployment on real networking, with the same set-up code as the one-machine lab
//! (`integration::Central`, `integration::Chassis`): the central node (NB/SB databases and
//! northd) or a chassis (OVS on the userspace datapath and a controller). `central` and
//! `chassis` keep their daemons as children and stop them by pid on SIGTERM or SIGINT; `vm`
//! plugs a VM network namespace into the chassis and returns. The container entrypoint
//! (containers/entrypoint.sh) turns environment variables into these arguments.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{bail, Context as _};
use clap::{Args, Parser, Subcommand};
use integration::central::{sb_schema, CentralListen};
use integration::chassis::INTERFACE_TIMEOUT;
use integration::kernel::{self, NamespaceVm};
use integration::packet::Mac;
use integration::{Central, Chassis, Controller, Datapath, Host};
use nix::sys::signal::{SigSet, Signal};

#[derive(Parser, Debug)]
#[command(about = "Run one node of an OVN deployment: the central node or a chassis")]
struct Cli {
    #[command(subcommand)]
    role: Role,
}

#[derive(Subcommand, Debug)]
enum Role {
    /// NB and SB ovsdb-servers and ovn-northd, optionally bridging the chassis' underlay links.
    Central(CentralArgs),
    /// ovsdb-server, ovs-vswitchd (userspace datapath) with br-int and br-phys, and a controller.
    Chassis(ChassisArgs),
    /// Plug a VM (a network namespace with a veth pair) into this chassis' br-int.
    Vm(VmArgs),
    /// Remove a VM plugged by `vm`.
    VmDel {
        #[arg(long, env = "OVN_NODE_DIR")]
        dir: PathBuf,
        #[arg(long)]
        netns: String,
    },
}

#[derive(Args, Debug)]
struct CentralArgs {
    /// Directory of the databases, sockets, logs and pid files.
    #[arg(long, env = "OVN_NODE_DIR")]
    dir: PathBuf,
    /// Extra Northbound listener, e.g. ptcp:6641 (repeatable).
    #[arg(long)]
    nb_listen: Vec<String>,
    /// Extra Southbound listener, e.g. ptcp:6642 (repeatable).
    #[arg(long)]
    sb_listen: Vec<String>,
    /// Links to chassis to join in a Linux bridge, e.g. eth1 (repeatable; waited for).
    #[arg(long)]
    underlay_port: Vec<String>,
    /// Address of the underlay bridge, ADDRESS/PREFIX.
    #[arg(long, requires = "underlay_port")]
    underlay_ip: Option<String>,
}

#[derive(Args, Debug)]
struct ChassisArgs {
    #[arg(long, env = "OVN_NODE_DIR")]
    dir: PathBuf,
    /// Chassis name (external_ids:system-id).
    #[arg(long)]
    name: String,
    /// Southbound database, e.g. tcp:192.168.100.10:6642.
    #[arg(long)]
    sb_remote: String,
    /// Underlay interface to put into br-phys (waited for).
    #[arg(long)]
    encap_iface: String,
    /// Underlay (Geneve) address of this chassis, ADDRESS/PREFIX.
    #[arg(long)]
    encap_ip: String,
    /// "ovn-agent" or "ovn-controller" (found on PATH), or a path to an ovn-agent binary.
    #[arg(long, default_value = "ovn-agent")]
    controller: String,
}

#[derive(Args, Debug)]
struct VmArgs {
    /// The chassis' directory (as given to `chassis --dir`).
    #[arg(long, env = "OVN_NODE_DIR")]
    dir: PathBuf,
    /// Network namespace to create (at most 13 bytes: the br-int port is NETNS-p).
    #[arg(long)]
    netns: String,
    /// Logical switch port (external_ids:iface-id).
    #[arg(long)]
    iface_id: String,
    #[arg(long)]
    mac: String,
    /// ADDRESS/PREFIX.
    #[arg(long)]
    ip: String,
    #[arg(long)]
    gateway: Option<Ipv4Addr>,
    #[arg(long, default_value_t = 1400)]
    mtu: u16,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.role {
        Role::Central(args) => run_central(&args),
        Role::Chassis(args) => run_chassis(&args),
        Role::Vm(args) => plug_vm(&args),
        Role::VmDel { dir, netns } => {
            kernel::unplug_vm(&node_host(&dir, "vm")?, &netns).map_err(Into::into)
        }
    }
}

fn node_host(dir: &Path, name: &str) -> anyhow::Result<Host> {
    Host::at(dir.to_path_buf(), name).with_context(|| format!("node directory {}", dir.display()))
}

fn run_central(args: &CentralArgs) -> anyhow::Result<()> {
    let stop = stop_signals()?;
    let host = node_host(&args.dir, "central")?;
    if let Some(cidr) = &args.underlay_ip {
        kernel::underlay_bridge(
            &host,
            "br-underlay",
            &args.underlay_port,
            cidr,
            INTERFACE_TIMEOUT,
        )
        .context("underlay bridge")?;
    }
    let listen = CentralListen {
        nb: args.nb_listen.clone(),
        sb: args.sb_listen.clone(),
        sb_options: Vec::new(),
    };
    let mut central = Central::start_on(host, &sb_schema(), &listen)?;
    ready(&args.dir, "central node")?;
    wait_until_stopped(&stop, || central.exited_daemon())
}

fn run_chassis(args: &ChassisArgs) -> anyhow::Result<()> {
    let stop = stop_signals()?;
    let (ip, prefix) = parse_cidr(&args.encap_ip)?;
    let controller = match args.controller.as_str() {
        "ovn-controller" => Controller::OvnController,
        other => Controller::OvnAgent(PathBuf::from(other)),
    };
    let host = node_host(&args.dir, &args.name)?;
    let mut chassis = Chassis::start_bare_on(host, Datapath::Netdev)?;
    chassis
        .attach_interface(&args.encap_iface, ip, prefix)
        .with_context(|| format!("underlay interface {}", args.encap_iface))?;
    chassis.configure_ovn(&args.sb_remote)?;
    chassis.spawn_controller(&controller)?;
    ready(&args.dir, &format!("chassis {}", args.name))?;
    wait_until_stopped(&stop, || chassis.exited_daemon())
}

fn plug_vm(args: &VmArgs) -> anyhow::Result<()> {
    let (ip, prefix) = parse_cidr(&args.ip)?;
    let vm = NamespaceVm {
        netns: args.netns.clone(),
        iface_id: args.iface_id.clone(),
        mac: args.mac.parse::<Mac>().map_err(anyhow::Error::msg)?,
        ip,
        prefix,
        gateway: args.gateway,
        mtu: args.mtu,
    };
    vm.plug(&node_host(&args.dir, "vm")?)
        .with_context(|| format!("plug VM {}", args.netns))
}

fn parse_cidr(cidr: &str) -> anyhow::Result<(Ipv4Addr, u8)> {
    let (ip, prefix) = cidr
        .split_once('/')
        .with_context(|| format!("{cidr:?}: expected ADDRESS/PREFIX"))?;
    let ip = ip.parse().with_context(|| format!("address in {cidr:?}"))?;
    let prefix: u8 = prefix
        .parse()
        .with_context(|| format!("prefix in {cidr:?}"))?;
    if prefix > 32 {
        bail!("prefix in {cidr:?} is larger than 32");
    }
    Ok((ip, prefix))
}

/// Blocks SIGTERM and SIGINT in every thread (children get a clean mask from std) and turns
/// them into a message, so that the daemons are stopped by pid rather than orphaned.
fn stop_signals() -> anyhow::Result<mpsc::Receiver<Signal>> {
    let mut set = SigSet::empty();
    set.add(Signal::SIGTERM);
    set.add(Signal::SIGINT);
    set.thread_block().context("block SIGTERM and SIGINT")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        if let Ok(signal) = set.wait() {
            let _ = tx.send(signal);
        }
    });
    Ok(rx)
}

/// Marks the node as set up: a line on stdout and `<dir>/ready` (for health checks).
fn ready(dir: &Path, what: &str) -> anyhow::Result<()> {
    let marker = dir.join("ready");
    std::fs::write(&marker, format!("{what}\n"))
        .with_context(|| format!("write {}", marker.display()))?;
    println!("ovn-node: {what} ready in {}", dir.display());
    Ok(())
}

/// Returns when a stop signal arrives, or fails when `exited` names a daemon that died.
fn wait_until_stopped(
    stop: &mpsc::Receiver<Signal>,
    mut exited: impl FnMut() -> Option<String>,
) -> anyhow::Result<()> {
    loop {
        match stop.recv_timeout(Duration::from_secs(1)) {
            Ok(signal) => {
                println!("ovn-node: {signal}, stopping");
                return Ok(());
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => bail!("signal thread ended"),
        }
        if let Some(daemon) = exited() {
            bail!("{daemon} exited; stopping the node");
        }
    }
}
