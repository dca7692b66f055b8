//! A flood of packet-ins (issue 11), with ovn-controller and then ovn-agent in one run:
//! TTL-1 pings from a port on sw0, each of which the router sends to the controller
//! (`icmp4 {}`: time exceeded), at 100k a second for 10 s. They enter hv1's br-int through
//! a tap interface, written with raw Ethernet frames, so that ovs-vswitchd's datapath makes
//! the packet-ins (a packet-out per packet would cap the rate at what its main thread can
//! decode, about 35k/s on two cores). Printed for each controller: what the tap delivered
//! to ovs-vswitchd, the packet-ins it queued to the controller and dropped for a controller
//! that did not read fast enough, what the controller counted and handled, the CPU of each
//! process and the peak RSS. Afterwards the flows are all there, the Southbound is
//! connected and reaches the chassis, and the controller answers.
//!
//! `OVN_AGENT_FLOOD_RATE` sets the rate (packets a second). Figures are printed, not
//! asserted: a debug build of ovn-agent reads far fewer packet-ins a second than a release
//! build (`OVN_AGENT_BIN=target/release/ovn-agent`).

mod common;

use std::time::{Duration, Instant};

use common::{is_icmp, mac, two_switches_one_router, Net, Setup, LR0_SW0_MAC};
use integration::host::Host;
use integration::packet::{icmp4_echo, udp4};
use integration::scenario::wait_port_up;

const FLOOD: Duration = Duration::from_secs(10);
/// The logical port the flood comes from, and its addresses.
const FLOOD_PORT: &str = "vmf";
const FLOOD_MAC: &str = "50:54:00:00:00:99";
const FLOOD_IP: [u8; 4] = [10, 0, 0, 99];

fn flood_rate() -> u64 {
    std::env::var("OVN_AGENT_FLOOD_RATE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(100_000)
}

/// A tap interface on hv1's br-int, bound to [`FLOOD_PORT`]. ovs-vswitchd makes it
/// persistent, so it is deleted when this is dropped (also when the test fails).
struct Tap {
    name: String,
    host: Host,
}

impl Tap {
    fn plug(net: &Net, name: &str) -> std::result::Result<Self, String> {
        let hv1 = net.lab.chassis("hv1").map_err(|e| e.to_string())?;
        let tap = Self {
            name: name.to_owned(),
            host: hv1.host().clone(),
        };
        hv1.vsctl(&[
            "add-port",
            "br-int",
            name,
            "--",
            "set",
            "Interface",
            name,
            "type=tap",
            &format!("external-ids:iface-id={FLOOD_PORT}"),
        ])
        .map_err(|e| format!("add tap {name}: {e}"))?;
        integration::kernel::ip(&tap.host, &["link", "set", name, "up"])
            .map_err(|e| format!("ip link set {name} up: {e}"))?;
        Ok(tap)
    }

    /// `(delivered, dropped)`: frames the kernel queued to the tap's reader (ovs-vswitchd)
    /// and those it dropped because the queue was full.
    fn counters(&self) -> (u64, u64) {
        let read = |what: &str| {
            std::fs::read_to_string(format!("/sys/class/net/{}/statistics/{what}", self.name))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0)
        };
        (read("tx_packets"), read("tx_dropped"))
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        let _ = integration::kernel::ip(&self.host, &["link", "del", &self.name]);
    }
}

/// Writes `frame` into tap `name` at `rate` frames a second for [`FLOOD`]; returns how
/// many were written.
fn flood(name: &str, frame: &[u8], rate: u64) -> std::result::Result<u64, String> {
    let iface = pnet_datalink::interfaces()
        .into_iter()
        .find(|i| i.name == name)
        .ok_or_else(|| format!("no interface {name}"))?;
    let config = pnet_datalink::Config {
        read_timeout: Some(Duration::from_millis(10)),
        ..pnet_datalink::Config::default()
    };
    let mut tx = match pnet_datalink::channel(&iface, config) {
        Ok(pnet_datalink::Channel::Ethernet(tx, _rx)) => tx,
        Ok(_) => return Err(format!("{name}: not an Ethernet channel")),
        Err(e) => return Err(format!("open a packet socket on {name}: {e}")),
    };
    let started = Instant::now();
    let mut sent = 0u64;
    while started.elapsed() < FLOOD {
        // Paced: as many as are due by now, then a short sleep.
        let due = (started.elapsed().as_secs_f64() * rate as f64) as u64;
        while sent < due {
            match tx.send_to(frame, None) {
                Some(Ok(())) => sent += 1,
                Some(Err(e)) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Some(Err(e)) => return Err(format!("send on {name}: {e}")),
                None => return Err(format!("send on {name}: no room")),
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(sent)
}

/// Clock ticks (`utime` + `stime`) a thread of `pid` has used (`tid` = `pid`: the main
/// thread).
fn thread_ticks(pid: u32, tid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Busy clock ticks of the whole machine so far (`/proc/stat`: all but idle and iowait).
fn machine_busy_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|v| v.parse().ok())
        .collect();
    Some(cpu.iter().sum::<u64>() - cpu.get(3)? - cpu.get(4)?)
}

/// One of ovs-vswitchd's coverage counters on hv1 (0 if it cannot be read).
fn vswitchd_counter(net: &Net, name: &str) -> u64 {
    net.lab
        .chassis("hv1")
        .and_then(|c| c.appctl(&["coverage/read-counter", name]))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
}

/// The lab, the flood port bound on hv1 (through the tap) and the frame it floods with.
fn flood_lab(setup: &Setup, tap_name: &str) -> (Net, Tap, Vec<u8>) {
    let label = &setup.label;
    let net = two_switches_one_router(setup, &["hv1", "hv2"])
        .unwrap_or_else(|e| panic!("[{label}] build the lab: {e}"));
    let central = net.lab.central();
    let addresses = format!("{FLOOD_MAC} {}", std::net::Ipv4Addr::from(FLOOD_IP));
    central
        .nbctl(&[
            "lsp-add",
            "sw0",
            FLOOD_PORT,
            "--",
            "lsp-set-addresses",
            FLOOD_PORT,
            &addresses,
        ])
        .unwrap_or_else(|e| panic!("[{label}] the flood port: {e}"));
    let tap = Tap::plug(&net, tap_name).unwrap_or_else(|e| panic!("[{label}] {e}"));
    wait_port_up(central, FLOOD_PORT)
        .unwrap_or_else(|e| panic!("[{label}] {FLOOD_PORT} never up: {e}"));
    central
        .wait_hv_sync()
        .unwrap_or_else(|e| panic!("[{label}] --wait=hv sync: {e}"));
    let frame = icmp4_echo(
        mac(FLOOD_MAC),
        mac(LR0_SW0_MAC),
        std::net::Ipv4Addr::from(FLOOD_IP),
        net.vm("vm2").port.ip,
        1,
        56,
    );
    (net, tap, frame)
}

#[test]
fn a_flood_of_packet_ins_leaves_the_controller_working() {
    let rate = flood_rate();
    let ticks = integration::daemon::clock_ticks_per_second();
    let mut problems = Vec::new();
    for (i, setup) in Setup::oracle_and_agent(&["hv1", "hv2"]).iter().enumerate() {
        let label = setup.label.clone();
        let oracle = label == common::ORACLE;
        let tap_name = format!("ovnfl{}x{i}", std::process::id() % 100_000);
        let (net, tap, frame) = flood_lab(setup, &tap_name);
        let hv1 = net.lab.chassis("hv1").expect("hv1");
        let controller = hv1.controller().expect("a controller on hv1");
        let vswitchd = hv1.vswitchd();
        let read_total = || {
            hv1.controller_appctl(&["coverage/read-counter", "pinctrl_total_pin_pkts"])
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let flows_before = hv1.flow_count("br-int").unwrap_or(0);
        let total_before = read_total();
        let queued_before = vswitchd_counter(&net, "rconn_queued");
        let overflow_before = vswitchd_counter(&net, "rconn_overflow");
        let tap_before = tap.counters();
        let rss_before = controller.peak_rss_kib().unwrap_or(0);
        let cpu_before = controller.cpu_seconds().unwrap_or(0.0);
        let vs_cpu_before = vswitchd.cpu_seconds().unwrap_or(0.0);
        let vs_main_before = thread_ticks(vswitchd.pid(), vswitchd.pid()).unwrap_or(0);
        let machine_before = machine_busy_ticks().unwrap_or(0);
        let started = Instant::now();
        let sent = flood(&tap_name, &frame, rate).unwrap_or_else(|e| {
            problems.push(format!("[{label}] flood: {e}"));
            0
        });
        let secs = started.elapsed().as_secs_f64();
        let vs_cpu = vswitchd.cpu_seconds().unwrap_or(0.0) - vs_cpu_before;
        let vs_main = thread_ticks(vswitchd.pid(), vswitchd.pid())
            .unwrap_or(0)
            .saturating_sub(vs_main_before) as f64
            / ticks;
        let cpu_flood = controller.cpu_seconds().unwrap_or(0.0) - cpu_before;
        let machine = machine_busy_ticks()
            .unwrap_or(0)
            .saturating_sub(machine_before) as f64
            / ticks;
        // The controller catches up with what ovs-vswitchd queued to it.
        std::thread::sleep(Duration::from_secs(2));
        let rss_after = controller.peak_rss_kib().unwrap_or(0);
        let cpu = controller.cpu_seconds().unwrap_or(0.0) - cpu_before;
        let counted = read_total().saturating_sub(total_before);
        let queued = vswitchd_counter(&net, "rconn_queued").saturating_sub(queued_before);
        let overflow = vswitchd_counter(&net, "rconn_overflow").saturating_sub(overflow_before);
        let tap_after = tap.counters();
        let (delivered, dropped) = (
            tap_after.0.saturating_sub(tap_before.0),
            tap_after.1.saturating_sub(tap_before.1),
        );
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        eprintln!(
            "[{label}] flood: {sent} frames in {secs:.1} s ({:.0}/s) into the tap, {delivered} \
             delivered to ovs-vswitchd ({dropped} dropped by the tap's queue); ovs-vswitchd \
             queued {queued} messages to its OpenFlow connections ({:.0}/s) and dropped \
             {overflow} for a controller that did not read fast enough; the controller \
             counted {counted} packet-ins ({:.0}/s); CPU: ovs-vswitchd {:.0}% (main thread \
             {:.0}%), controller {:.0}% during the flood ({cpu:.1} s with the 2 s after), the \
             whole machine {:.0}% of {}%; controller peak RSS {rss_before} -> {rss_after} KiB",
            sent as f64 / secs,
            queued as f64 / secs,
            counted as f64 / secs,
            100.0 * vs_cpu / secs,
            100.0 * vs_main / secs,
            100.0 * cpu_flood / secs,
            100.0 * machine / secs,
            100 * cores,
        );
        if oracle {
            // ovn-controller has no per-opcode figures: its pinctrl coverage counters.
            let coverage = hv1
                .controller_appctl(&["coverage/show"])
                .unwrap_or_default();
            let pinctrl: Vec<&str> = coverage
                .lines()
                .filter(|l| l.starts_with("pinctrl") || l.contains("packet_in"))
                .collect();
            eprintln!("[{label}] coverage: {}", pinctrl.join("\n    "));
        } else {
            let stats = hv1
                .controller_appctl(&["pinctrl/show-stats"])
                .unwrap_or_default();
            eprintln!("[{label}] pinctrl/show-stats:\n{stats}");
            if !stats.contains("icmp: received") {
                problems.push(format!("[{label}] no icmp packet-ins counted: {stats}"));
            }
            if rss_after.saturating_sub(rss_before) > 100 * 1024 {
                problems.push(format!(
                    "[{label}] peak RSS grew from {rss_before} to {rss_after} KiB"
                ));
            }
        }
        if counted == 0 {
            problems.push(format!("[{label}] the controller counted no packet-in"));
        }
        let status = hv1
            .controller_appctl(&["connection-status"])
            .unwrap_or_default();
        let flows_after = hv1.flow_count("br-int").unwrap_or(0);
        eprintln!(
            "[{label}] after the flood: SB connection-status {:?}, br-int flows {flows_before} -> {flows_after}",
            status.trim()
        );
        if status.trim() != "connected" {
            problems.push(format!(
                "[{label}] connection-status after the flood: {status:?}"
            ));
        }
        if flows_after != flows_before || flows_after == 0 {
            problems.push(format!(
                "[{label}] br-int flows {flows_before} before the flood, {flows_after} after"
            ));
        }
        problems.extend(still_works(&net, &label));
        drop(tap);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// After the flood the controller still answers, the flows still route, and the Southbound
/// still reaches the chassis (a change waited for with `--wait=hv`).
fn still_works(net: &Net, label: &str) -> Vec<String> {
    let (vm1, vm2) = (net.vm("vm1"), net.vm("vm2"));
    let expiring = icmp4_echo(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        vm2.port.ip,
        1,
        56,
    );
    let mut p = net.probe();
    p.send("vm1", &expiring);
    p.expect(
        "after the flood, TTL 1 still gets time exceeded",
        "vm1",
        |f| is_icmp(f, 11, 0),
    );
    common::expect_routed_pings(&mut p, net, "after the flood: ");
    p.nbctl(&[
        "acl-add",
        "sw1",
        "to-lport",
        "1002",
        "ip4 && udp.dst == 7790",
        "reject",
    ]);
    p.wait_hv("after the flood, an ACL reaches the chassis");
    let udp = udp4(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        vm2.port.ip,
        64,
        40010,
        7790,
        b"after",
    );
    p.send("vm1", &udp);
    p.expect(
        "after the flood, the new ACL rejects with port unreachable",
        "vm1",
        |f| is_icmp(f, 3, 3),
    );
    let outcome = p.finish(&net.ports());
    eprintln!(
        "[{label}] after the flood: {} unmet expectation(s)",
        outcome.failures.len()
    );
    outcome
        .failures
        .iter()
        .map(|f| format!("[{label}] {f}"))
        .collect()
}
