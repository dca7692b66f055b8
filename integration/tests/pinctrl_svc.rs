//! Load balancer health checks, controller events and virtual ports against the real
//! ovn-controller, in the same run (issue 11): the Service_Monitor statuses, the
//! Controller_Event rows and the virtual port's Port_Binding must be the same with both
//! controllers, and so must the probes' and resets' headers (their random sequence
//! numbers and source ports blanked) and the packets of the virtual port scenario.
//!
//! One chassis: sw0 holds the backends vm1 (answers TCP port 80) and vm2 (silent), the
//! client vm3, and vm4, the parent of the virtual port sw0-vir (10.0.0.10); sw1 holds
//! vm5, behind router lr0.

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::{mac, plug_vms, start_lab, vm_port, Net, Scenario, Setup};
use integration::observe::{Outcome, Probe};
use integration::packet::{arp_request, icmp4_echo, ipv4_summary, tcp4, TcpFlags, L4};
use integration::scenario::{add_router, add_switch, RouterPort};
use integration::Result;

const SVC_MAC: &str = "0a:58:0a:00:00:fe";
const SVC_SRC_IP: &str = "10.0.0.254";
const LR0_SW0_MAC: &str = "00:00:00:00:ff:01";
const LR0_SW1_MAC: &str = "00:00:00:00:ff:02";
const VIP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 10);

fn build(setup: &Setup) -> Result<Net> {
    let lab = start_lab(setup, &["hv1"])?;
    let vms = [
        vm_port("vm1", "50:54:00:00:00:01", [10, 0, 0, 1]),
        vm_port("vm2", "50:54:00:00:00:02", [10, 0, 0, 2]),
        vm_port("vm3", "50:54:00:00:00:03", [10, 0, 0, 3]),
        vm_port("vm4", "50:54:00:00:00:04", [10, 0, 0, 4]),
    ];
    let vm5 = vm_port("vm5", "50:54:00:00:01:05", [10, 0, 1, 5]);
    let central = lab.central();
    add_switch(central, "sw0", &vms)?;
    add_switch(central, "sw1", std::slice::from_ref(&vm5))?;
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
    add_router(central, "lr0", &[lrp0, lrp1])?;
    central.nbctl(&[
        "set",
        "NB_Global",
        ".",
        &format!("options:svc_monitor_mac={SVC_MAC}"),
        "options:controller_event=true",
    ])?;
    // The virtual port: VIP 10.0.0.10, parent vm4.
    central.nbctl(&[
        "lsp-add",
        "sw0",
        "sw0-vir",
        "--",
        "lsp-set-addresses",
        "sw0-vir",
        "50:54:00:00:00:10 10.0.0.10",
        "--",
        "lsp-set-type",
        "sw0-vir",
        "virtual",
        "--",
        "set",
        "Logical_Switch_Port",
        "sw0-vir",
        "options:virtual-ip=10.0.0.10",
        "options:virtual-parents=vm4",
    ])?;
    let mut placed: Vec<_> = vms.iter().map(|v| (v.clone(), "hv1")).collect();
    placed.push((vm5, "hv1"));
    let vms = plug_vms(&lab, &placed)?;
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

/// A probe watching only `vms` (the others may carry health checks with random fields).
fn probe_on<'a>(net: &'a Net, vms: &[&str]) -> Probe<'a> {
    let watched: Vec<_> = vms
        .iter()
        .map(|v| {
            let vm = net.vm(v);
            (vm.chassis.clone(), vm.vif.clone())
        })
        .collect();
    Probe::start(&net.lab, &watched)
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A TCP segment from the health check source: (its flags, source port, sequence, ack).
fn svc_tcp(frame: &[u8]) -> Option<(u16, u16, u32, u32)> {
    let s = ipv4_summary(frame)?;
    if s.src_mac != mac(SVC_MAC) || !matches!(s.l4, L4::Tcp { .. }) || frame.len() < 54 {
        return None;
    }
    let t = &frame[34..];
    Some((be16(t, 12) & 0xfff, be16(t, 0), be32(t, 4), be32(t, 8)))
}

/// `frame` with the random fields of a probe blanked: TCP ports, numbers and checksum.
fn blanked(frame: &[u8]) -> String {
    let mut f = frame.to_vec();
    f[34..36].fill(0);
    f[38..46].fill(0);
    f[50..52].fill(0);
    hex::encode(f)
}

fn sb_field(net: &Net, column: &str, table: &str, cond: &str) -> String {
    net.lab
        .central()
        .sbctl(&[
            "--bare",
            &format!("--columns={column}"),
            "find",
            table,
            cond,
        ])
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn chassis_name(net: &Net, uuid: &str) -> String {
    if uuid.is_empty() {
        return String::new();
    }
    net.lab
        .central()
        .sbctl(&["--bare", "--columns=name", "list", "Chassis", uuid])
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Health checks of lb0 (10.0.0.100:80 -> vm1:80, vm2:80): the test answers vm1's SYNs
/// with SYN-ACKs, vm2 stays silent; vm1 must go online, vm2 offline.
fn health_checks_mark_backends_online_and_offline(net: &Net) -> Outcome {
    let mut p = probe_on(net, &[]);
    let lab = &net.lab;
    let (vm1, vm2) = (net.vm("vm1"), net.vm("vm2"));
    // The first probe may leave before the configuration is acknowledged: count from here.
    let mut seen = vm1.vif.transmitted().map_or(0, |v| v.len());
    p.nbctl(&[
        "lb-add",
        "lb0",
        "10.0.0.100:80",
        "10.0.0.1:80,10.0.0.2:80",
        "tcp",
    ]);
    p.nbctl(&["ls-lb-add", "sw0", "lb0"]);
    p.nbctl(&[
        "set",
        "Load_Balancer",
        "lb0",
        &format!("ip_port_mappings:10.0.0.1=vm1:{SVC_SRC_IP}"),
        &format!("ip_port_mappings:10.0.0.2=vm2:{SVC_SRC_IP}"),
    ]);
    p.nbctl(&[
        "--id=@hc",
        "create",
        "Load_Balancer_Health_Check",
        "vip=\"10.0.0.100:80\"",
        "options:interval=5",
        "options:timeout=3",
        "options:success_count=1",
        "options:failure_count=1",
        "--",
        "add",
        "Load_Balancer",
        "lb0",
        "health_check",
        "@hc",
    ]);
    p.wait_hv("health check configured");
    let hv1 = lab.chassis("hv1").ok();
    let mut answered = 0;
    let mut first: Option<(Vec<u8>, Vec<u8>)> = None;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(25);
    let (mut s1, mut s2) = (String::new(), String::new());
    while Instant::now() < deadline {
        let frames = vm1.vif.transmitted().unwrap_or_default();
        for f in frames.iter().skip(seen) {
            match svc_tcp(f) {
                Some((0x002, sport, seq, _)) => {
                    let synack = tcp4(
                        vm1.port.mac,
                        mac(SVC_MAC),
                        vm1.port.ip,
                        SVC_SRC_IP.parse().expect("ip"),
                        64,
                        80,
                        sport,
                        5000,
                        TcpFlags::SynAck(seq.wrapping_add(1)),
                    );
                    if let Some(h) = hv1 {
                        let _ = h.inject(&vm1.vif, &synack);
                    }
                    answered += 1;
                    if first.is_none() {
                        first = Some((f.clone(), Vec::new()));
                        p.fact("probe to vm1 (random fields blanked)", blanked(f));
                    }
                }
                Some((0x014, _, rst_seq, rst_ack)) => {
                    if let Some((syn, rst)) = first.as_mut() {
                        if rst.is_empty() {
                            rst.clone_from(f);
                            let syn_seq = be32(syn, 38);
                            p.fact("reset (random fields blanked)", blanked(f));
                            p.fact(
                                "reset seq - probe seq",
                                rst_seq.wrapping_sub(syn_seq).to_string(),
                            );
                            p.fact("reset ack", rst_ack.to_string());
                        }
                    }
                }
                _ => {}
            }
        }
        seen = frames.len();
        s1 = sb_field(net, "status", "Service_Monitor", "ip=10.0.0.1");
        s2 = sb_field(net, "status", "Service_Monitor", "ip=10.0.0.2");
        if s1 == "online" && s2 == "offline" {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    p.fact("vm1 status", s1.clone());
    p.fact("vm2 status", s2.clone());
    if s1 != "online" || s2 != "offline" {
        p.fail(format!(
            "statuses after {:?}: vm1 {s1:?} (want online), vm2 {s2:?} (want offline); {answered} SYNs answered",
            started.elapsed()
        ));
    }
    match vm2
        .vif
        .transmitted()
        .unwrap_or_default()
        .iter()
        .rev()
        .find(|f| svc_tcp(f).is_some_and(|t| t.0 == 0x002))
    {
        Some(f) => p.fact("probe to vm2 (random fields blanked)", blanked(f)),
        None => p.fail("no probe reached vm2"),
    }
    p.nbctl(&["lb-del", "lb0"]);
    p.nbctl(&["--all", "destroy", "Load_Balancer_Health_Check"]);
    p.wait_hv("health check removed");
    p.finish(&[])
}

/// lb1 (10.0.0.200:80) has no backends and `options:event=true`: vm3's SYN to it makes
/// one Controller_Event row; a second SYN none more; after the rows are deleted, a third
/// SYN makes a new one with the next sequence number.
fn an_empty_load_balancer_raises_a_controller_event(net: &Net) -> Outcome {
    let mut p = probe_on(net, &["vm3"]);
    p.nbctl(&["lb-add", "lb1", "10.0.0.200:80", "", "tcp"]);
    p.nbctl(&["set", "Load_Balancer", "lb1", "options:event=true"]);
    p.nbctl(&["ls-lb-add", "sw0", "lb1"]);
    p.wait_hv("empty load balancer configured");
    let lb_uuid = net
        .lab
        .central()
        .nbctl(&[
            "--bare",
            "--columns=_uuid",
            "find",
            "Load_Balancer",
            "name=lb1",
        ])
        .unwrap_or_default()
        .trim()
        .to_owned();
    let vm3 = net.vm("vm3");
    let syn = |sport| {
        tcp4(
            vm3.port.mac,
            mac(LR0_SW0_MAC),
            vm3.port.ip,
            Ipv4Addr::new(10, 0, 0, 200),
            64,
            sport,
            80,
            1000,
            TcpFlags::Syn,
        )
    };
    let rows = |net: &Net| -> Vec<String> {
        let out = net
            .lab
            .central()
            .sbctl(&[
                "--bare",
                "--columns=event_type,event_info,seq_num,chassis",
                "list",
                "Controller_Event",
            ])
            .unwrap_or_default();
        out.split("\n\n")
            .map(|r| r.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|r| !r.is_empty())
            .map(|r| r.replace(&lb_uuid, "<lb1>"))
            .collect()
    };
    let wait_rows = |net: &Net, n: usize| -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let r = rows(net);
            if r.len() >= n || Instant::now() >= deadline {
                return r;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let chassis_uuid = net
        .lab
        .central()
        .sbctl(&["--bare", "--columns=_uuid", "find", "Chassis", "name=hv1"])
        .unwrap_or_default()
        .trim()
        .to_owned();
    let named = |rows: Vec<String>| -> String {
        rows.into_iter()
            .map(|r| r.replace(&chassis_uuid, "<hv1>"))
            .collect::<Vec<_>>()
            .join(" | ")
    };
    p.send("vm3", &syn(40000));
    let first = wait_rows(net, 1);
    p.fact("rows after the first SYN", named(first.clone()));
    if first.len() != 1 {
        p.fail(format!("one Controller_Event row expected, got {first:?}"));
    }
    p.send("vm3", &syn(40001));
    std::thread::sleep(Duration::from_millis(500));
    p.wait_hv("after the second SYN");
    p.fact("rows after the second SYN", named(rows(net)));
    let _ = net
        .lab
        .central()
        .sbctl(&["--all", "destroy", "Controller_Event"]);
    std::thread::sleep(Duration::from_millis(300));
    p.send("vm3", &syn(40002));
    p.fact(
        "rows after clearing and a third SYN",
        named(wait_rows(net, 1)),
    );
    p.nbctl(&["lb-del", "lb1"]);
    let _ = net
        .lab
        .central()
        .sbctl(&["--all", "destroy", "Controller_Event"]);
    p.wait_hv("empty load balancer removed");
    p.finish(&["vm3"])
}

/// vm4 announces the virtual IP with a gratuitous ARP: sw0-vir is claimed by hv1 with
/// vm4 as its virtual parent; vm5's ping to the VIP, through the router, reaches vm4.
fn a_gratuitous_arp_binds_the_virtual_port(net: &Net) -> Outcome {
    let mut p = probe_on(net, &["vm3", "vm4", "vm5"]);
    let (vm4, vm5) = (net.vm("vm4"), net.vm("vm5"));
    p.send("vm4", &arp_request(vm4.port.mac, VIP, VIP));
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut chassis = String::new();
    while Instant::now() < deadline {
        chassis = sb_field(net, "chassis", "Port_Binding", "logical_port=sw0-vir");
        if !chassis.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    p.fact("sw0-vir chassis", chassis_name(net, &chassis));
    p.fact(
        "sw0-vir virtual_parent",
        sb_field(
            net,
            "virtual_parent",
            "Port_Binding",
            "logical_port=sw0-vir",
        ),
    );
    p.wait_hv("after the claim");
    let ping = icmp4_echo(vm5.port.mac, mac(LR0_SW1_MAC), vm5.port.ip, VIP, 64, 56);
    p.send("vm5", &ping);
    p.expect("vm5's ping to the VIP reaches the parent vm4", "vm4", |f| {
        ipv4_summary(f).is_some_and(|s| s.dst == VIP && s.icmp_echo_request)
    });
    let outcome = p.finish(&["vm4", "sw0-vir"]);
    let _ = net
        .lab
        .central()
        .sbctl(&["--all", "destroy", "MAC_Binding"]);
    outcome
}

/// ovn-agent answered the three actions itself: `pinctrl/show-stats` counts them
/// handled, none skipped (the oracle has no such command: nothing to check there).
fn the_agent_counted_the_three_actions(net: &Net) -> Outcome {
    let mut p = probe_on(net, &[]);
    if net.setup.label != common::ORACLE {
        let stats = net
            .lab
            .chassis("hv1")
            .and_then(|c| c.controller_appctl(&["pinctrl/show-stats"]))
            .unwrap_or_default();
        for name in ["handle_svc_check", "event", "bind_vport"] {
            let line = stats
                .lines()
                .find(|l| l.starts_with(&format!("{name}: ")))
                .unwrap_or_default();
            let handled = line.contains("handled ") && !line.contains("handled 0,");
            if !handled || !line.contains("skipped 0,") {
                p.fail(format!("{name} not handled cleanly: {line:?} in\n{stats}"));
            }
        }
    }
    p.finish(&[])
}

const SCENARIOS: &[Scenario] = &[
    (
        "health checks mark backends online and offline",
        health_checks_mark_backends_online_and_offline,
    ),
    (
        "an empty load balancer raises a controller event",
        an_empty_load_balancer_raises_a_controller_event,
    ),
    (
        "a gratuitous ARP binds the virtual port",
        a_gratuitous_arp_binds_the_virtual_port,
    ),
    (
        "the agent counted the three actions",
        the_agent_counted_the_three_actions,
    ),
];

#[test]
fn service_monitors_events_and_virtual_ports_match_ovn_controller() {
    let setups = Setup::oracle_and_agent(&["hv1"]);
    let (nets, report) = common::run_all(&setups, build, SCENARIOS);
    common::conclude_healthy(nets, &report);
}
