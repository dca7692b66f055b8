//! `ovn-bench`: runs `ovn-controller` and `ovn-agent` on the same Southbound content, one after
//! the other on a fresh chassis, and prints time to first full sync, peak RSS, port-up latency
//! and change latency for each, their ratios, and the floor that `ovs-vswitchd` itself sets
//! (`ovs-ofctl --bundle add-flows` of the same flows into an empty bridge).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::Parser;
use integration::scale::{build, vm_port, ScaleSpec};
use integration::scenario::wait_port_up;
use integration::{Chassis, Controller, Lab};

#[derive(Parser, Debug)]
#[command(about = "Compare ovn-controller and ovn-agent on the same Southbound content")]
struct Args {
    #[arg(long, default_value_t = 20)]
    switches: usize,
    #[arg(long, default_value_t = 50)]
    ports_per_switch: usize,
    #[arg(long, default_value_t = 10)]
    acls_per_switch: usize,
    /// Ports of each switch that are bound on the measured chassis.
    #[arg(long, default_value_t = 2)]
    bound_per_switch: usize,
    /// Port-up and change-latency samples per controller.
    #[arg(long, default_value_t = 5)]
    samples: usize,
    /// Controllers to measure, in order: "c" (ovn-controller), "rust" (ovn-agent).
    /// Default: c, plus rust when the ovn-agent binary is found.
    #[arg(long, value_delimiter = ',')]
    controllers: Vec<String>,
}

#[derive(Debug)]
struct Measurement {
    label: String,
    first_sync: Duration,
    flows: u64,
    peak_rss_kib: u64,
    port_up: Duration,
    change: Duration,
    floor: Duration,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let controllers = pick_controllers(&args.controllers)?;
    let spec = ScaleSpec {
        switches: args.switches,
        ports_per_switch: args.ports_per_switch,
        acls_per_switch: args.acls_per_switch,
    };
    let mut lab = Lab::start()?;
    let t = Instant::now();
    build(lab.central(), spec)?;
    lab.central().wait_sb_sync()?;
    let lflows = count_rows(&lab, "Logical_Flow")?;
    println!(
        "topology {spec:?}: {} ports, {lflows} logical flows, built in {:.1?}",
        spec.total_ports(),
        t.elapsed()
    );

    let mut results = Vec::new();
    for (round, controller) in controllers.iter().enumerate() {
        let m = measure(&mut lab, &args, controller, round)?;
        println!(
            "{:<15} first sync {:>8.3?}  flows {:>7}  peak RSS {:>7} KiB  port-up {:>8.3?}  change {:>8.3?}  floor (ovs-ofctl --bundle add-flows) {:>8.3?}",
            m.label, m.first_sync, m.flows, m.peak_rss_kib, m.port_up, m.change, m.floor
        );
        results.push(m);
    }
    if let [c, rust] = results.as_slice() {
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        println!(
            "ratios ovn-agent/ovn-controller: first sync {:.2}, peak RSS {:.2}, port-up {:.2}, change {:.2}; ovn-agent first sync / floor {:.2}",
            ratio(rust.first_sync, c.first_sync),
            rust.peak_rss_kib as f64 / c.peak_rss_kib as f64,
            ratio(rust.port_up, c.port_up),
            ratio(rust.change, c.change),
            ratio(rust.first_sync, rust.floor),
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

fn count_rows(lab: &Lab, table: &str) -> anyhow::Result<usize> {
    let out = lab
        .central()
        .sbctl(&["--bare", "--columns=_uuid", "list", table])?;
    Ok(out.lines().filter(|l| !l.trim().is_empty()).count())
}

fn measure(
    lab: &mut Lab,
    args: &Args,
    controller: &Controller,
    round: usize,
) -> anyhow::Result<Measurement> {
    let name = format!("bench{round}");
    let bound: Vec<(String, String)> = (0..args.switches)
        .flat_map(|s| (0..args.bound_per_switch.min(args.ports_per_switch)).map(move |p| (s, p)))
        .map(|(s, p)| (format!("v{s}_{p}"), vm_port(s, p).0))
        .collect();
    let chassis = lab.add_bare_chassis(&name)?;
    let pairs: Vec<(&str, &str)> = bound
        .iter()
        .map(|(v, p)| (v.as_str(), p.as_str()))
        .collect();
    chassis.add_vifs(&pairs)?;

    let start = Instant::now();
    lab.start_controller(&name, controller)?;
    lab.central().wait_hv_sync()?;
    let first_sync = start.elapsed();

    let chassis = lab.chassis(&name)?;
    let flows = flow_count(chassis)?;
    let mut port_up = Duration::ZERO;
    let mut change = Duration::ZERO;
    for i in 0..args.samples {
        let port = format!("new{round}_{i}");
        let (_, mac, _) = vm_port(0, 200 + i);
        let ip = format!("10.100.0.{}", 200 + i);
        lab.central().nbctl(&[
            "--wait=sb",
            "lsp-add",
            "sw0",
            &port,
            "--",
            "lsp-set-addresses",
            &port,
            &format!("{mac} {ip}"),
        ])?;
        let t = Instant::now();
        chassis.add_vif(&format!("n{round}_{i}"), &port)?;
        wait_port_up(lab.central(), &port)?;
        port_up += t.elapsed();

        let t = Instant::now();
        let acl = format!(
            "ip4.src == 10.{}.0.{} && udp.dst == {}",
            200 + round,
            i,
            5000 + i
        );
        lab.central().nbctl(&[
            "--wait=hv",
            "acl-add",
            "sw0",
            "from-lport",
            "2000",
            &acl,
            "drop",
        ])?;
        change += t.elapsed();
    }
    let samples = u32::try_from(args.samples.max(1)).context("samples")?;
    let peak_rss_kib = chassis.controller().context("controller")?.peak_rss_kib()?;
    let export = export_flows(chassis)?;
    let floor = floor(lab, &export, round)?;
    let label = match controller {
        Controller::OvnController => "ovn-controller".to_owned(),
        _ => "ovn-agent".to_owned(),
    };
    lab.remove_chassis(&name)?;
    lab.remove_chassis(&format!("floor{round}"))?;
    Ok(Measurement {
        label,
        first_sync,
        flows,
        peak_rss_kib,
        port_up: port_up / samples,
        change: change / samples,
        floor,
    })
}

fn flow_count(chassis: &Chassis) -> anyhow::Result<u64> {
    let out = chassis.ofctl(&["dump-aggregate", "br-int"])?;
    out.split_whitespace()
        .find_map(|w| w.strip_prefix("flow_count="))
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("no flow_count in {out:?}"))
}

/// A chassis' installed OpenFlow state, written to files that `ovs-ofctl` reads back.
struct Export {
    flows_file: std::path::PathBuf,
    groups_file: std::path::PathBuf,
    tlv_maps: Vec<String>,
    flows: u64,
}

fn export_flows(measured: &Chassis) -> anyhow::Result<Export> {
    let dir = measured.host().dir().to_owned();
    let flows: String = measured
        .ofctl(&["--no-stats", "dump-flows", "br-int"])?
        .lines()
        .filter(|l| l.contains("actions="))
        .fold(String::new(), |mut s, l| {
            let _ = writeln!(s, "{}", l.trim());
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
    let flows_file = dir.join("floor-flows.txt");
    let groups_file = dir.join("floor-groups.txt");
    std::fs::write(&flows_file, &flows)?;
    std::fs::write(&groups_file, groups)?;
    Ok(Export {
        flows: flows.lines().count() as u64,
        flows_file,
        groups_file,
        tlv_maps,
    })
}

/// Time for `ovs-ofctl --bundle add-flows` to install the exported flows (after the groups and
/// the Geneve TLV map they need) into an empty `br-int` of a fresh chassis.
fn floor(lab: &mut Lab, export: &Export, round: usize) -> anyhow::Result<Duration> {
    let target = lab.add_bare_chassis(&format!("floor{round}"))?;
    for map in &export.tlv_maps {
        target.ofctl(&["add-tlv-map", "br-int", map])?;
    }
    let groups = export.groups_file.display().to_string();
    target.ofctl(&["--bundle", "add-groups", "br-int", &groups])?;
    let t = Instant::now();
    target.ofctl(&[
        "--bundle",
        "add-flows",
        "br-int",
        &export.flows_file.display().to_string(),
    ])?;
    let took = t.elapsed();
    let installed = flow_count(target)?;
    if installed != export.flows {
        bail!(
            "floor chassis has {installed} flows, exported {}",
            export.flows
        );
    }
    Ok(took)
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
