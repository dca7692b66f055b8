//! What the oracle tests share: controller setups (which controller runs on which chassis),
//! the labs they build, and the loop that runs a list of scenarios in one lab per setup and
//! compares every setup's observations with the oracle's.

#![allow(dead_code)] // each test file uses its own part of this module

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::Instant;

use integration::observe::{Outcome, Probe, Report};
use integration::packet::Mac;
use integration::scenario::{add_router, add_switch, wait_port_up, RouterPort, VmPort};
use integration::{Controller, Lab, Result, Vif};

pub mod pki;

/// The label of the oracle setup: the real ovn-controller on every chassis.
pub const ORACLE: &str = "ovn-controller";

pub fn mac(s: &str) -> Mac {
    s.parse().expect("valid MAC literal")
}

pub fn vm_port(name: &str, mac_text: &str, ip: [u8; 4]) -> VmPort {
    VmPort {
        name: name.to_owned(),
        mac: mac(mac_text),
        ip: Ipv4Addr::from(ip),
    }
}

/// Which controller runs on which chassis, under a label for the report.
#[derive(Debug, Clone)]
pub struct Setup {
    pub label: String,
    pub controllers: Vec<(String, Controller)>,
}

impl Setup {
    /// `controller` on every one of `chassis`, labelled by the controller.
    pub fn all(controller: &Controller, chassis: &[&str]) -> Self {
        let label = match controller {
            Controller::OvnController => ORACLE.to_owned(),
            _ => "ovn-agent".to_owned(),
        };
        Self {
            label,
            controllers: chassis
                .iter()
                .map(|c| ((*c).to_owned(), controller.clone()))
                .collect(),
        }
    }

    /// One controller per chassis, labelled `hv1=ovn-controller hv2=ovn-agent`.
    pub fn mixed(controllers: &[(&str, &Controller)]) -> Self {
        let label = controllers
            .iter()
            .map(|(c, ctl)| format!("{c}={}", ctl.ctl_name()))
            .collect::<Vec<_>>()
            .join(" ");
        Self {
            label,
            controllers: controllers
                .iter()
                .map(|(c, ctl)| ((*c).to_owned(), (*ctl).clone()))
                .collect(),
        }
    }

    /// The oracle and ovn-agent, each on every one of `chassis`. On a stack other than the
    /// system's ([`integration::stack`]), the oracle alone unless `OVN_STACK_AGENT=1`: the
    /// release's own ovn-controller shows the scenario holds there before ovn-agent is asked
    /// to.
    pub fn oracle_and_agent(chassis: &[&str]) -> Vec<Self> {
        let oracle = Self::all(&Controller::OvnController, chassis);
        if !integration::stack::Stack::current().is_system()
            && std::env::var("OVN_STACK_AGENT").as_deref() != Ok("1")
        {
            return vec![oracle];
        }
        let agent = Controller::ovn_agent().expect("build ovn-agent");
        vec![oracle, Self::all(&agent, chassis)]
    }

    pub fn controller(&self, chassis: &str) -> Option<&Controller> {
        self.controllers
            .iter()
            .find(|(c, _)| c == chassis)
            .map(|(_, ctl)| ctl)
    }
}

/// `agent` started with `args` before the harness's own: a shell script in `dir` that runs
/// it so (the harness starts a controller as one program).
pub fn agent_with_args(
    dir: &std::path::Path,
    agent: &Controller,
    args: &[&str],
) -> std::result::Result<Controller, String> {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join(format!("ovn-agent{}", args.join("").replace('-', "_")));
    let text = format!(
        "#!/bin/sh\nexec '{}' {} \"$@\"\n",
        agent.program(),
        args.join(" ")
    );
    std::fs::write(&script, text)
        .and_then(|()| std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)))
        .map_err(|e| format!("write {}: {e}", script.display()))?;
    Ok(Controller::OvnAgent(script))
}

/// Whether `p` is an IPv4 ICMP message of `icmp_type` and `code`.
pub fn is_icmp(p: &[u8], icmp_type: u8, code: u8) -> bool {
    integration::packet::ipv4_summary(p).is_some_and(|s| {
        matches!(s.l4, integration::packet::L4::Icmp { icmp_type: t, code: c } if t == icmp_type && c == code)
    })
}

/// Adds logical port `vm6` (50:54:00:00:00:06, 10.0.0.6) to `sw0` and plugs its VIF on
/// hv1; a failure is recorded in `p` and gives `None`.
pub fn plug_vm6_on_hv1(p: &mut integration::observe::Probe<'_>, net: &Net) -> Option<Vm> {
    let port = vm_port("vm6", "50:54:00:00:00:06", [10, 0, 0, 6]);
    p.nbctl(&[
        "lsp-add",
        "sw0",
        "vm6",
        "--",
        "lsp-set-addresses",
        "vm6",
        &format!("{} {}", port.mac, port.ip),
    ]);
    let vif = net.lab.chassis("hv1").and_then(|c| c.add_vif("vm6", "vm6"));
    p.check("plug vm6 on hv1", vif).map(|vif| Vm {
        port,
        chassis: "hv1".to_owned(),
        vif,
    })
}

/// A VM: its logical port and the VIF (named like the port) on its chassis.
#[derive(Debug, Clone)]
pub struct Vm {
    pub port: VmPort,
    pub chassis: String,
    pub vif: Vif,
}

/// A lab with a logical topology and its VMs, built for one setup.
pub struct Net {
    pub lab: Lab,
    pub setup: Setup,
    pub vms: BTreeMap<String, Vm>,
    /// Other watched ports (hosts behind localnet bridges, extra interfaces): chassis, VIF.
    pub extra: Vec<(String, Vif)>,
    pub routers: BTreeMap<String, RouterPort>,
}

impl Net {
    pub fn vm(&self, name: &str) -> &Vm {
        self.vms
            .get(name)
            .unwrap_or_else(|| panic!("no VM named {name}"))
    }

    pub fn router_port(&self, switch: &str) -> RouterPort {
        *self
            .routers
            .get(switch)
            .unwrap_or_else(|| panic!("no router port on {switch}"))
    }

    /// Every VIF the scenarios watch.
    pub fn watched(&self) -> Vec<(String, Vif)> {
        self.vms
            .values()
            .map(|v| (v.chassis.clone(), v.vif.clone()))
            .chain(self.extra.iter().cloned())
            .collect()
    }

    pub fn probe(&self) -> Probe<'_> {
        Probe::start(&self.lab, &self.watched())
    }

    /// Whether, in a mixed setup, `chassis` runs the oracle (ovn-controller): expectations only
    /// that chassis decides are then the oracle's ([`Probe::judged_by_oracle`]).
    pub fn oracle_decides(&self, chassis: &str) -> bool {
        let runs = |c: &str| {
            self.setup
                .controllers
                .iter()
                .find(|(name, _)| name == c)
                .map(|(_, controller)| controller == &Controller::OvnController)
        };
        let mixed = self
            .setup
            .controllers
            .iter()
            .any(|(_, controller)| controller != &Controller::OvnController);
        mixed && runs(chassis) == Some(true)
    }

    /// The names of the VMs' ports (for the bindings an outcome records).
    pub fn ports(&self) -> Vec<&str> {
        self.vms.keys().map(String::as_str).collect()
    }
}

/// Starts a lab with `chassis` running the controllers of `setup`.
pub fn start_lab(setup: &Setup, chassis: &[&str]) -> Result<Lab> {
    start_lab_from(Lab::start()?, setup, chassis)
}

/// Adds `chassis` running the controllers of `setup` to a started `lab`.
pub fn start_lab_from(mut lab: Lab, setup: &Setup, chassis: &[&str]) -> Result<Lab> {
    for name in chassis {
        let ctl = setup
            .controller(name)
            .unwrap_or_else(|| panic!("setup {} has no controller for {name}", setup.label));
        lab.add_chassis(name, ctl)?;
    }
    Ok(lab)
}

/// Plugs every VM into its chassis, waits for the ports to come up and for every chassis to
/// catch up.
pub fn plug_vms(lab: &Lab, vms: &[(VmPort, &str)]) -> Result<BTreeMap<String, Vm>> {
    let mut out = BTreeMap::new();
    for (port, chassis) in vms {
        let vif = lab.chassis(chassis)?.add_vif(&port.name, &port.name)?;
        out.insert(
            port.name.clone(),
            Vm {
                port: port.clone(),
                chassis: (*chassis).to_owned(),
                vif,
            },
        );
    }
    for (port, _) in vms {
        wait_port_up(lab.central(), &port.name)?;
    }
    lab.central().wait_hv_sync()?;
    Ok(out)
}

pub const LR0_SW0_MAC: &str = "00:00:00:00:ff:01";
pub const LR0_SW1_MAC: &str = "00:00:00:00:ff:02";

/// The shared topology: switches sw0 (10.0.0.0/24) and sw1 (10.0.1.0/24) joined by router lr0
/// (.254 on each); vm1 (sw0) and vm5 (sw1) on hv1, vm3 (sw0) and vm2 (sw1) on hv2, so that
/// every kind of path (switched, routed, local, across the tunnel) is there. `chassis` lists
/// the chassis to start (at least hv1 and hv2).
pub fn two_switches_one_router(setup: &Setup, chassis: &[&str]) -> Result<Net> {
    two_switches_one_router_in(Lab::start()?, setup, chassis)
}

/// [`two_switches_one_router`] in a started `lab` (e.g. one with another Southbound schema).
pub fn two_switches_one_router_in(lab: Lab, setup: &Setup, chassis: &[&str]) -> Result<Net> {
    let lab = start_lab_from(lab, setup, chassis)?;
    let vm1 = vm_port("vm1", "50:54:00:00:00:01", [10, 0, 0, 1]);
    let vm3 = vm_port("vm3", "50:54:00:00:00:03", [10, 0, 0, 3]);
    let vm2 = vm_port("vm2", "50:54:00:00:01:02", [10, 0, 1, 2]);
    let vm5 = vm_port("vm5", "50:54:00:00:01:05", [10, 0, 1, 5]);
    let lrp0 = RouterPort {
        switch: "sw0",
        mac: mac(LR0_SW0_MAC),
        ip: Ipv4Addr::new(10, 0, 0, 254),
        prefix: 24,
    };
    let lrp1 = RouterPort {
        switch: "sw1",
        mac: mac(LR0_SW1_MAC),
        ip: Ipv4Addr::new(10, 0, 1, 254),
        prefix: 24,
    };
    let central = lab.central();
    add_switch(central, "sw0", &[vm1.clone(), vm3.clone()])?;
    add_switch(central, "sw1", &[vm2.clone(), vm5.clone()])?;
    add_router(central, "lr0", &[lrp0, lrp1])?;
    let vms = plug_vms(
        &lab,
        &[(vm1, "hv1"), (vm5, "hv1"), (vm3, "hv2"), (vm2, "hv2")],
    )?;
    Ok(Net {
        lab,
        setup: setup.clone(),
        vms,
        extra: Vec::new(),
        routers: [("sw0".to_owned(), lrp0), ("sw1".to_owned(), lrp1)]
            .into_iter()
            .collect(),
    })
}

/// [`two_switches_one_router`] on hv1-hv3 plus lr0's distributed gateway port
/// `lr0-public` on hv3 ([`integration::scenario::SnatGateway::LAB`]), its external host
/// watched.
pub fn gateway_lab(setup: &Setup) -> Result<Net> {
    let mut net = two_switches_one_router(setup, &["hv1", "hv2", "hv3"])?;
    let ext = integration::scenario::SnatGateway::LAB.build(
        net.lab.central(),
        "lr0",
        net.lab.chassis("hv3")?,
    )?;
    net.extra.push(("hv3".to_owned(), ext));
    Ok(net)
}

/// A scenario: runs in a built lab, leaves the lab as it found it, returns what it observed.
pub type Scenario = (&'static str, fn(&Net) -> Outcome);

/// Runs `scenarios` in one lab per setup (built by `build`), the oracle's first, and returns
/// the labs (kept running so that a failure keeps their directories) and the report.
pub fn run_all(
    setups: &[Setup],
    build: impl Fn(&Setup) -> Result<Net>,
    scenarios: &[Scenario],
) -> (Vec<Net>, Report) {
    let mut report = Report::default();
    let mut nets = Vec::new();
    for setup in setups {
        let started = Instant::now();
        let net = build(setup).unwrap_or_else(|e| panic!("build the lab for {}: {e}", setup.label));
        eprintln!(
            "[{}] lab {} ready in {:.1}s",
            setup.label,
            net.lab.dir().display(),
            started.elapsed().as_secs_f64()
        );
        for (name, scenario) in scenarios {
            let started = Instant::now();
            let mut outcome = scenario(&net);
            // The whole scenario, its undoing included.
            outcome.elapsed = started.elapsed();
            eprintln!(
                "[{}] {name}: {} unmet, {:.1}s",
                setup.label,
                outcome.failures.len(),
                outcome.elapsed.as_secs_f64()
            );
            report.add(name, &setup.label, outcome);
        }
        eprintln!(
            "[{}] done in {:.1}s",
            setup.label,
            started.elapsed().as_secs_f64()
        );
        nets.push(net);
    }
    (nets, report)
}

/// Prints the report and panics, with the labs still alive (so their directories are kept),
/// if any setup missed an expectation or differed from the oracle.
pub fn conclude(nets: Vec<Net>, report: &Report) {
    eprintln!("\n{}", report.table(ORACLE));
    for miss in report.oracle_misses(ORACLE) {
        eprintln!("note: the oracle missed an expectation (not a failure of ovn-agent): {miss}");
    }
    let problems = report.problems(ORACLE);
    if !problems.is_empty() {
        let text = problems.join("\n");
        // The labs are dropped while the panic unwinds: their directories are kept.
        let _keep = nets;
        panic!("{} problem(s):\n{text}", problems.len());
    }
}

/// [`conclude`] for runs that had only good input: ovn-agent's logs must have no WARN, ERR
/// or EMER line either (OVN's testsuite fails on any), but the line a SIGTERM stop prints.
pub fn conclude_healthy(nets: Vec<Net>, report: &Report) {
    let mut unhealthy = Vec::new();
    for net in &nets {
        for (chassis, controller) in &net.setup.controllers {
            if *controller == Controller::OvnController {
                continue;
            }
            for line in controller_log(net, chassis).lines() {
                if ["|WARN|", "|ERR|", "|EMER|"]
                    .iter()
                    .any(|l| line.contains(l))
                    && !line.contains("terminating with signal 15")
                {
                    unhealthy.push(format!("[{}] {chassis}: {line}", net.setup.label));
                }
            }
        }
    }
    if !unhealthy.is_empty() {
        let _keep = nets;
        panic!(
            "ovn-agent logged {} warning(s) in a healthy run:\n{}",
            unhealthy.len(),
            unhealthy.join("\n")
        );
    }
    conclude(nets, report);
}

/// br-int's flows on `chassis`, as sorted `dump-flows --no-stats` lines.
pub fn flow_dump(lab: &Lab, chassis: &str) -> Result<Vec<String>> {
    let dump = lab
        .chassis(chassis)?
        .ofctl(&["--no-stats", "dump-flows", "br-int"])?;
    let mut lines: Vec<String> = dump
        .lines()
        .filter(|l| l.contains("table="))
        .map(|l| l.trim().to_owned())
        .collect();
    lines.sort();
    Ok(lines)
}

/// br-int's groups (`ovs-ofctl dump-groups`) and meters (`dump-meters`, each meter's
/// lines joined into one) on `chassis`, sorted.
pub fn group_meter_dump(lab: &Lab, chassis: &str) -> Result<Vec<String>> {
    let c = lab.chassis(chassis)?;
    let groups = c.ofctl(&["dump-groups", "br-int"])?;
    let mut lines: Vec<String> = groups
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("group_id="))
        .map(str::to_owned)
        .collect();
    let meters = c.ofctl(&["dump-meters", "br-int"])?;
    for line in meters.lines().map(str::trim) {
        if line.starts_with("meter=") {
            lines.push(line.to_owned());
        } else if let Some(last) = lines.last_mut().filter(|l| l.starts_with("meter=")) {
            last.push(' ');
            last.push_str(line);
        }
    }
    lines.sort();
    Ok(lines)
}

/// `flow` with the zone numbers loaded into the datapath DNAT and SNAT zone registers (reg11,
/// reg12) replaced by `Z`.
fn without_datapath_zones(flow: &str) -> String {
    flow.split(',')
        .map(|part| match part.find("set_field:0x") {
            Some(at) if part.ends_with("->reg11") || part.ends_with("->reg12") => {
                format!("{}set_field:Z->{}", &part[..at], &part[part.len() - 5..])
            }
            _ => part.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `flow` without its port zone loads (`set_field:Z->reg13`). ovn-controller 23.03.1's
/// port zones depend on its history: after ports moved between chassis (an external port
/// with its HA group, a VIF), its incremental flows and a fresh start's differ in which
/// zone a port has, and in multicast flows that load the zone of an external port no
/// output follows.
fn without_port_zone_loads(flow: &str) -> String {
    flow.split(',')
        .filter_map(|part| match part.find("set_field:") {
            // The first action of the list comes after the match: keep that part.
            Some(at) if part.ends_with("->reg13") => (at > 0).then(|| &part[..at]),
            _ => Some(part),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// What changed in br-int's flows on `chassis` across a restart of its controller (dumps
/// from [`flow_dump`]), see [`restart_changes_no_flow`] for the intended difference that
/// `oracle` leaves out.
pub fn compare_across_restart(
    chassis: &str,
    before: &[String],
    after: &[String],
    oracle: bool,
) -> Vec<String> {
    let norm = |v: &[String]| {
        let mut v: Vec<String> = if oracle {
            v.iter()
                .map(|f| without_port_zone_loads(&without_datapath_zones(f)))
                .collect()
        } else {
            v.to_vec()
        };
        v.sort();
        v
    };
    let (before, after) = (norm(before), norm(after));
    let mut out = Vec::new();
    for f in before.iter().filter(|f| !after.contains(f)) {
        out.push(format!("{chassis}: the restart removed or changed {f}"));
    }
    for f in after.iter().filter(|f| !before.contains(f)) {
        out.push(format!("{chassis}: the restart added {f}"));
    }
    out
}

/// Restarts the controller of each of `chassis` in turn (stopped by pid, started again,
/// `--wait=hv`) and expects br-int's flows, groups and meters to be exactly what they were: what the running
/// controller installed, through any sequence of incremental changes, is what a fresh start
/// computes from the same databases, the switch has every flow the controller believes it
/// has, and conntrack zones are kept (live connections keep their state).
///
/// Intended difference: ovn-controller 23.03.1 gives the local datapaths new DNAT/SNAT zones
/// when it restarts after datapaths came and went (observed here after scenario 10b; a port's
/// zone is kept), which breaks the NAT state of live connections; ovn-agent keeps them. On a
/// chassis running ovn-controller the datapath zone numbers are left out of the comparison,
/// and so are its port zone loads ([`without_port_zone_loads`]).
/// Flows, groups and meters are compared.
pub fn restart_changes_no_flow(net: &mut Net, chassis: &[&str]) -> Outcome {
    let started = Instant::now();
    let mut outcome = Outcome::default();
    for name in chassis {
        let Some(ctl) = net.setup.controller(name).cloned() else {
            outcome.failures.push(format!("no controller for {name}"));
            continue;
        };
        let dump = |lab: &Lab| -> Result<Vec<String>> {
            let mut all = flow_dump(lab, name)?;
            all.extend(group_meter_dump(lab, name)?);
            Ok(all)
        };
        let before = match dump(&net.lab) {
            Ok(d) => d,
            Err(e) => {
                outcome.failures.push(format!("dump {name}: {e}"));
                continue;
            }
        };
        let restarted = net
            .lab
            .chassis_mut(name)
            .map(integration::Chassis::stop_controller);
        let restarted = restarted
            .and_then(|()| net.lab.start_controller(name, &ctl))
            .and_then(|()| net.lab.central().wait_hv_sync());
        if let Err(e) = restarted {
            outcome.failures.push(format!("restart on {name}: {e}"));
            continue;
        }
        let after = match dump(&net.lab) {
            Ok(d) => d,
            Err(e) => {
                outcome.failures.push(format!("dump {name}: {e}"));
                continue;
            }
        };
        outcome.failures.extend(compare_across_restart(
            name,
            &before,
            &after,
            ctl == Controller::OvnController,
        ));
    }
    outcome.elapsed = started.elapsed();
    outcome
}

/// The log of the controller on `chassis` (empty if there is none).
pub fn controller_log(net: &Net, chassis: &str) -> String {
    net.lab
        .chassis(chassis)
        .ok()
        .and_then(|c| c.controller())
        .and_then(|d| std::fs::read_to_string(d.log()).ok())
        .unwrap_or_default()
}

/// How many lines of the controller log on `chassis`, from byte `from` on, contain `needle`.
pub fn logged_since(net: &Net, chassis: &str, from: usize, needle: &str) -> usize {
    controller_log(net, chassis)
        .get(from..)
        .unwrap_or("")
        .lines()
        .filter(|l| l.contains(needle))
        .count()
}

/// ovn-agent's `debug/engine-stats` on `chassis` (empty if it does not answer: the
/// command is the agent's own).
pub fn show_stats(net: &Net, chassis: &str) -> String {
    net.lab
        .chassis(chassis)
        .and_then(|c| c.controller_appctl(&["debug/engine-stats"]))
        .unwrap_or_default()
}

/// A counter of ovn-agent's `debug/engine-stats` ("bad rows 3" -> 3).
pub fn agent_counter(net: &Net, chassis: &str, name: &str) -> Option<u64> {
    show_stats(net, chassis).split(',').find_map(|part| {
        let part = part.trim();
        let at = part.find(name)?;
        part[at + name.len()..]
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}

/// Sends an echo request from vm1 to vm2 (through sw0's router port) and from vm5 to vm3
/// (through sw1's) and expects each routed to its destination; `prefix` starts each
/// expectation's name.
pub fn expect_routed_pings(p: &mut Probe<'_>, net: &Net, prefix: &str) {
    for (a, b, a_side) in [
        (net.vm("vm1"), net.vm("vm2"), net.router_port("sw0")),
        (net.vm("vm5"), net.vm("vm3"), net.router_port("sw1")),
    ] {
        let ping =
            integration::packet::icmp4_echo(a.port.mac, a_side.mac, a.port.ip, b.port.ip, 64, 24);
        p.send(&a.port.name, &ping);
        p.expect(
            &format!("{prefix}{} -> {} routed", a.port.name, b.port.name),
            &b.port.name,
            |f| {
                integration::packet::ipv4_summary(f).is_some_and(|s| {
                    s.src == a.port.ip && s.dst == b.port.ip && s.icmp_echo_request
                })
            },
        );
    }
}

/// A UDP packet from `from` to `to` on the same switch, source port 4000, TTL 64.
pub fn udp_to(from: &Vm, to: &Vm, dport: u16, payload: &[u8]) -> Vec<u8> {
    integration::packet::udp4(
        from.port.mac,
        to.port.mac,
        from.port.ip,
        to.port.ip,
        64,
        4000,
        dport,
        payload,
    )
}

/// Sends `frame(n)` for n = 0, 1, ... into VIF `vif` through the vswitchd control socket
/// `ctl` on `host`, one every `interval`, until `stop` is set; `sent` follows the count.
/// Returns how many were sent. (Runs in its own thread beside the scenario.)
pub fn stream_numbered(
    host: &integration::Host,
    ctl: &str,
    vif: &str,
    interval: std::time::Duration,
    stop: &std::sync::atomic::AtomicBool,
    sent: &std::sync::atomic::AtomicU32,
    frame: impl Fn(u32) -> Vec<u8>,
) -> u32 {
    use std::sync::atomic::Ordering;
    let started = Instant::now();
    let mut n: u32 = 0;
    while !stop.load(Ordering::Relaxed) {
        let packet = hex::encode(frame(n));
        let _ = host.run(
            "ovs-appctl",
            &["-t", ctl, "netdev-dummy/receive", vif, &packet],
        );
        n += 1;
        sent.store(n, Ordering::Relaxed);
        let next = started + interval * n;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    n
}

/// Interval between the packets of [`stream_during`]'s stream.
pub const STREAM_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);

/// A numbered UDP stream from vm1 (hv1) to vm2 (hv2, routed by lr0) around `event`: the
/// stream runs 1 s, then `event` runs (it reports its failures), then the stream goes on for
/// `after` and stops. Returns (packets sent, the numbers vm2 received, in arrival order).
pub fn stream_during(
    net: &mut Net,
    after: std::time::Duration,
    event: impl FnOnce(&mut Net) -> Vec<String>,
    failures: &mut Vec<String>,
) -> (usize, Vec<u32>) {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    let vm1 = net.vm("vm1").clone();
    let vm2 = net.vm("vm2").clone();
    let lrp0 = net.router_port("sw0");
    let mark_before = vm2.vif.transmitted().map_or(0, |p| p.len());
    let Ok(hv1) = net.lab.chassis("hv1") else {
        failures.push("no chassis hv1".to_owned());
        return (0, Vec::new());
    };
    let host = hv1.host().clone();
    let ctl = hv1.vswitchd().ctl().display().to_string();
    let stop = AtomicBool::new(false);
    let counter = AtomicU32::new(0);
    let sent = std::thread::scope(|s| {
        let sender = s.spawn(|| {
            stream_numbered(&host, &ctl, "vm1", STREAM_INTERVAL, &stop, &counter, |n| {
                integration::packet::udp4(
                    vm1.port.mac,
                    lrp0.mac,
                    vm1.port.ip,
                    vm2.port.ip,
                    64,
                    6000,
                    6001,
                    &n.to_be_bytes(),
                )
            })
        });
        std::thread::sleep(std::time::Duration::from_secs(1));
        failures.extend(event(net));
        std::thread::sleep(after);
        stop.store(true, Ordering::Relaxed);
        sender.join().unwrap_or(0) as usize
    });
    // Let the last packets arrive.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let received = vm2
        .vif
        .transmitted()
        .unwrap_or_default()
        .into_iter()
        .skip(mark_before)
        .filter_map(|f| {
            let s = integration::packet::ipv4_summary(&f)?;
            let b: [u8; 4] = s.udp_payload()?.try_into().ok()?;
            (s.udp_dst() == Some(6001)).then(|| u32::from_be_bytes(b))
        })
        .collect();
    (sent, received)
}

/// The longest run of missing numbers in `seen` (sorted) between `from` and `to`: the
/// packets lost in one outage.
pub fn longest_gap(seen: &[u32], from: u32, to: u32) -> u32 {
    let mut best = 0;
    let mut last = None::<u32>;
    for n in seen.iter().copied().filter(|n| (from..to).contains(n)) {
        let gap = n - last.map_or(from, |l| l + 1);
        best = best.max(gap);
        last = Some(n);
    }
    best.max(to - last.map_or(from, |l| l + 1))
}

/// What happened to a numbered stream across an event.
pub struct StreamLoss {
    pub sent: usize,
    pub lost: usize,
    /// The numbers that never arrived.
    pub missing: Vec<u32>,
    /// The longest run of them ([`longest_gap`]).
    pub longest_gap: u32,
}

/// Checks a numbered stream around an event, with any controller: enough packets sent, none
/// duplicated, the first 50 (before the event) and the last 50 (after it) all arrived.
/// Measures what was lost.
pub fn judge_stream(sent: usize, received: &[u32], failures: &mut Vec<String>) -> StreamLoss {
    let mut seen = received.to_vec();
    seen.sort_unstable();
    seen.dedup();
    if received.len() != seen.len() {
        failures.push(format!(
            "{} packets duplicated",
            received.len() - seen.len()
        ));
    }
    if sent < 200 {
        failures.push(format!("only {sent} packets sent in the stream"));
    }
    let head = seen.iter().take_while(|n| **n < 50).count();
    if head != 50 {
        failures.push(format!(
            "only {head} of the first 50 packets (before the event) arrived"
        ));
    }
    let sent32 = u32::try_from(sent).unwrap_or(u32::MAX);
    let tail_from = sent32.saturating_sub(50);
    let tail = seen.iter().filter(|n| **n >= tail_from).count();
    if tail != (sent32 - tail_from) as usize {
        failures.push(format!(
            "only {tail} of the last {} packets (after the event) arrived",
            sent32 - tail_from
        ));
    }
    StreamLoss {
        sent,
        lost: sent.saturating_sub(seen.len()),
        missing: (0..sent32)
            .filter(|n| seen.binary_search(n).is_err())
            .collect(),
        longest_gap: longest_gap(&seen, 0, sent32),
    }
}
