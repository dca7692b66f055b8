//! pinctrl against the real ovn-controller, in the same run (issue 11): the packets the
//! router's controller actions produce (ARP requests for an unknown next hop, the buffered
//! packet once the reply is in, ICMP errors, TCP resets, ACL rejects) and the MAC_Binding
//! row the reply creates must be the same with both controllers. Every packet out of every
//! VIF is compared byte for byte by the harness; nothing is normalized.

mod common;

use std::net::Ipv4Addr;

use common::{mac, two_switches_one_router, Net, Scenario, Setup, LR0_SW0_MAC, LR0_SW1_MAC};
use integration::observe::Outcome;
use integration::packet::{arp_summary, icmp4_echo, ipv4_summary, tcp4, udp4, TcpFlags, L4};

/// An address on sw1 that no logical port has: the router must resolve it.
const UNKNOWN_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 9);

fn is_icmp(p: &[u8], icmp_type: u8, code: u8) -> bool {
    ipv4_summary(p).is_some_and(
        |s| matches!(s.l4, L4::Icmp { icmp_type: t, code: c } if t == icmp_type && c == code),
    )
}

/// vm1 pings a host on sw1 that the router has no MAC for: the router asks with an ARP
/// request out of sw1's ports and keeps the ping; vm5 answers for the host, which creates
/// a MAC_Binding row; the kept ping then arrives at vm5, routed (TTL decremented).
fn arp_resolves_an_unknown_next_hop(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm5) = (net.vm("vm1"), net.vm("vm5"));
    let ping = icmp4_echo(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        UNKNOWN_HOST,
        64,
        56,
    );
    p.send("vm1", &ping);
    let request = p.expect(
        "the router asks who has 10.0.1.9, on sw1 (vm5)",
        "vm5",
        |f| arp_summary(f).is_some_and(|a| a.op == 1 && a.tpa == UNKNOWN_HOST),
    );
    if let Some(r) = &request {
        p.fact("ARP request", hex::encode(r));
    }
    let reply = integration::packet::arp_reply(
        vm5.port.mac,
        UNKNOWN_HOST,
        mac(LR0_SW1_MAC),
        Ipv4Addr::new(10, 0, 1, 254),
    );
    p.send("vm5", &reply);
    let routed = icmp4_echo(
        mac(LR0_SW1_MAC),
        vm5.port.mac,
        vm1.port.ip,
        UNKNOWN_HOST,
        63,
        56,
    );
    p.expect_exact(
        "the buffered ping arrives once the reply is in",
        "vm5",
        &routed,
    );
    let binding = p.check(
        "read the MAC_Binding row",
        net.lab.central().sbctl(&[
            "--bare",
            "--columns=logical_port,ip,mac",
            "find",
            "MAC_Binding",
            "ip=10.0.1.9",
        ]),
    );
    if let Some(b) = binding {
        p.fact(
            "MAC_Binding",
            b.split_whitespace().collect::<Vec<_>>().join(" "),
        );
    }
    let stamp = p.check(
        "read the MAC_Binding timestamp",
        net.lab.central().sbctl(&[
            "--bare",
            "--columns=timestamp",
            "find",
            "MAC_Binding",
            "ip=10.0.1.9",
        ]),
    );
    if let Some(t) = stamp {
        p.fact(
            "MAC_Binding timestamp set",
            (t.trim().parse::<i64>().unwrap_or(0) > 0).to_string(),
        );
    }
    // A second ping now goes straight through (the binding is in the flows).
    let ping2 = icmp4_echo(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        UNKNOWN_HOST,
        60,
        56,
    );
    p.send("vm1", &ping2);
    let routed2 = icmp4_echo(
        mac(LR0_SW1_MAC),
        vm5.port.mac,
        vm1.port.ip,
        UNKNOWN_HOST,
        59,
        56,
    );
    p.expect_exact(
        "a later ping is routed without asking again",
        "vm5",
        &routed2,
    );
    let outcome = p.finish(&net.ports());
    let _ = net
        .lab
        .central()
        .sbctl(&["--all", "destroy", "MAC_Binding"]);
    let _ = net.lab.central().wait_hv_sync();
    outcome
}

/// A ping with TTL 1 through the router gets ICMP time exceeded back from the router.
fn ttl_expired_gets_time_exceeded(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm2) = (net.vm("vm1"), net.vm("vm2"));
    let ping = icmp4_echo(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        vm2.port.ip,
        1,
        56,
    );
    p.send("vm1", &ping);
    p.expect("vm1 gets ICMP time exceeded from the router", "vm1", |f| {
        is_icmp(f, 11, 0)
    });
    p.refute_on("the expired ping goes nowhere", "vm2", |f| {
        ipv4_summary(f).is_some_and(|s| s.icmp_echo_request)
    });
    p.finish(&net.ports())
}

/// UDP to a router address: port unreachable; TCP to a router address: reset.
fn router_answers_udp_and_tcp_to_itself(net: &Net) -> Outcome {
    let mut p = net.probe();
    let vm1 = net.vm("vm1");
    let router = Ipv4Addr::new(10, 0, 0, 254);
    let udp = udp4(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        router,
        64,
        40000,
        5555,
        b"hello",
    );
    p.send("vm1", &udp);
    p.expect("UDP to the router: port unreachable", "vm1", |f| {
        is_icmp(f, 3, 3)
    });
    let syn = tcp4(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        router,
        64,
        40001,
        80,
        1000,
        TcpFlags::Syn,
    );
    p.send("vm1", &syn);
    p.expect("TCP to the router: reset", "vm1", |f| {
        ipv4_summary(f).is_some_and(|s| matches!(s.l4, L4::Tcp { .. }) && s.src == router)
    });
    p.finish(&net.ports())
}

/// An ACL `reject` on sw1: vm1's UDP to vm2 gets port unreachable from vm2's address.
fn acl_reject_answers_the_sender(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm2) = (net.vm("vm1"), net.vm("vm2"));
    p.nbctl(&[
        "acl-add",
        "sw1",
        "to-lport",
        "1002",
        "ip4 && udp.dst == 7777",
        "reject",
    ]);
    p.wait_hv("ACL reject added");
    let udp = udp4(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        vm2.port.ip,
        64,
        40002,
        7777,
        b"rejected",
    );
    p.send("vm1", &udp);
    p.expect("the rejected UDP gets port unreachable", "vm1", |f| {
        is_icmp(f, 3, 3)
    });
    p.refute_on("the rejected UDP does not reach vm2", "vm2", |f| {
        ipv4_summary(f).is_some_and(|s| s.udp_dst() == Some(7777))
    });
    let outcome = p.finish(&net.ports());
    let _ = net.lab.central().nbctl(&["acl-del", "sw1"]);
    let _ = net.lab.central().wait_hv_sync();
    outcome
}

const SCENARIOS: &[Scenario] = &[
    (
        "arp resolves an unknown next hop",
        arp_resolves_an_unknown_next_hop,
    ),
    ("ttl 1 gets time exceeded", ttl_expired_gets_time_exceeded),
    (
        "router answers udp and tcp to itself",
        router_answers_udp_and_tcp_to_itself,
    ),
    (
        "acl reject answers the sender",
        acl_reject_answers_the_sender,
    ),
];

#[test]
fn pinctrl_matches_ovn_controller() {
    let setups = Setup::oracle_and_agent(&["hv1", "hv2"]);
    let (nets, report) = common::run_all(
        &setups,
        |s| two_switches_one_router(s, &["hv1", "hv2"]),
        SCENARIOS,
    );
    for net in &nets {
        for chassis in ["hv1", "hv2"] {
            let appctl = |args: &[&str]| {
                net.lab
                    .chassis(chassis)
                    .and_then(|c| c.controller_appctl(args))
                    .unwrap_or_default()
            };
            let total = appctl(&["coverage/read-counter", "pinctrl_total_pin_pkts"]);
            eprintln!(
                "[{}] {chassis}: {} packet-ins",
                net.setup.label,
                total.trim()
            );
            if net.setup.label != common::ORACLE {
                eprintln!("{}", appctl(&["pinctrl/show-stats"]));
            }
        }
    }
    common::conclude_healthy(nets, &report);
}
