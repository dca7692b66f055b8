//! The forwarding scenarios of issue 9, each run with the real ovn-controller (the oracle) and
//! with ovn-agent on every chassis, in the same test run: every run must meet the scenario's
//! expectations, and ovn-agent's runs must observe exactly what the oracle observed (the
//! packets out of every VIF, the Port_Binding chassis and `up`, the facts a scenario reads).
//! `ovn-nbctl --wait=hv sync` must return after every configuration step. The scenarios of one
//! topology share a lab per setup; each one undoes its own configuration.

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::{mac, two_switches_one_router, Net, Scenario, Setup, Vm, ORACLE};
use integration::observe::{Outcome, Probe, Report};
use integration::packet::{
    arp_reply, arp_request, arp_summary, icmp4_echo, icmp4_echo_reply, ipv4_summary, tcp4, udp4,
    Mac, TcpFlags, ARP_REPLY,
};
use integration::scenario::{attach_router_port, SnatGateway};
use integration::{Controller, Result};

const TTL: u8 = 64;
const PAYLOAD: usize = 56;

fn udp(from: &Vm, dst_mac: Mac, dst_ip: Ipv4Addr, ports: (u16, u16), payload: &[u8]) -> Vec<u8> {
    udp4(
        from.port.mac,
        dst_mac,
        from.port.ip,
        dst_ip,
        TTL,
        ports.0,
        ports.1,
        payload,
    )
}

/// A UDP packet from `from` straight to `to` on the same switch.
fn udp_to(from: &Vm, to: &Vm, ports: (u16, u16), payload: &[u8]) -> Vec<u8> {
    udp(from, to.port.mac, to.port.ip, ports, payload)
}

fn has_udp_payload(payload: &'static [u8]) -> impl Fn(&[u8]) -> bool {
    move |p| ipv4_summary(p).is_some_and(|s| s.udp_payload() == Some(payload))
}

// ---- scenario 1: L2 across chassis -------------------------------------------------------

fn l2_across_chassis(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm3) = (net.vm("vm1"), net.vm("vm3"));
    let request = icmp4_echo(
        vm1.port.mac,
        vm3.port.mac,
        vm1.port.ip,
        vm3.port.ip,
        TTL,
        PAYLOAD,
    );
    p.send("vm1", &request);
    p.expect_exact(
        "vm1's echo request reaches vm3 on hv2 unchanged",
        "vm3",
        &request,
    );
    let reply = icmp4_echo_reply(
        vm3.port.mac,
        vm1.port.mac,
        vm3.port.ip,
        vm1.port.ip,
        TTL,
        PAYLOAD,
    );
    p.send("vm3", &reply);
    p.expect_exact(
        "vm3's echo reply reaches vm1 on hv1 unchanged",
        "vm1",
        &reply,
    );
    // A unicast to a MAC nobody has (no port has "unknown" addresses) goes nowhere; the marker
    // behind it on the same path shows it has been processed.
    let nowhere = mac("50:54:00:00:00:99");
    let lost = icmp4_echo(
        vm1.port.mac,
        nowhere,
        vm1.port.ip,
        Ipv4Addr::new(10, 0, 0, 99),
        TTL,
        PAYLOAD,
    );
    p.send("vm1", &lost);
    p.send("vm1", &request);
    p.expect_exact("the marker behind it reaches vm3", "vm3", &request);
    p.refute("a packet to an unknown MAC is delivered nowhere", |f| {
        f.starts_with(&nowhere.0)
    });
    p.refute_on("vm1's request is not reflected to vm1", "vm1", |f| {
        f == request.as_slice()
    });
    p.finish(&net.ports())
}

// ---- scenario 2: routing between switches on different chassis ---------------------------

fn routed_across_chassis(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (lrp0, lrp1) = (net.router_port("sw0"), net.router_port("sw1"));
    for (a, b, a_side, b_side) in [
        (net.vm("vm1"), net.vm("vm2"), lrp0, lrp1),
        (net.vm("vm5"), net.vm("vm3"), lrp1, lrp0),
    ] {
        let request = icmp4_echo(a.port.mac, a_side.mac, a.port.ip, b.port.ip, TTL, PAYLOAD);
        p.send(&a.port.name, &request);
        // The router rewrites the Ethernet header and decrements the TTL; nothing else.
        let routed = icmp4_echo(
            b_side.mac,
            b.port.mac,
            a.port.ip,
            b.port.ip,
            TTL - 1,
            PAYLOAD,
        );
        p.expect_equal(
            &format!("{}'s request routed to {}", a.port.name, b.port.name),
            &b.port.name,
            |f| ipv4_summary(f).is_some_and(|s| s.src == a.port.ip && s.icmp_echo_request),
            &routed,
        );
        let reply = icmp4_echo_reply(b.port.mac, b_side.mac, b.port.ip, a.port.ip, TTL, PAYLOAD);
        p.send(&b.port.name, &reply);
        let back = icmp4_echo_reply(
            a_side.mac,
            a.port.mac,
            b.port.ip,
            a.port.ip,
            TTL - 1,
            PAYLOAD,
        );
        p.expect_equal(
            &format!("{}'s reply routed back to {}", b.port.name, a.port.name),
            &a.port.name,
            |f| ipv4_summary(f).is_some_and(|s| s.src == b.port.ip && s.is_icmp_echo_reply()),
            &back,
        );
    }
    p.finish(&net.ports())
}

// ---- scenario 3: ARP and ICMP echo answered by the router --------------------------------

fn router_answers_arp_and_ping(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (lrp0, lrp1) = (net.router_port("sw0"), net.router_port("sw1"));
    for (vm, lrp, far) in [(net.vm("vm1"), lrp0, lrp1), (net.vm("vm2"), lrp1, lrp0)] {
        let name = vm.port.name.as_str();
        p.send(name, &arp_request(vm.port.mac, vm.port.ip, lrp.ip));
        let answer = arp_reply(lrp.mac, lrp.ip, vm.port.mac, vm.port.ip);
        p.expect_exact(
            &format!("lr0 answers {name}'s ARP for {}", lrp.ip),
            name,
            &answer,
        );
        // The router answers pings to its own addresses, the far port's as well.
        for target in [lrp.ip, far.ip] {
            let request = icmp4_echo(vm.port.mac, lrp.mac, vm.port.ip, target, TTL, PAYLOAD);
            p.send(name, &request);
            // ip.ttl = 255, then the reply is routed like any packet: 254.
            let reply = icmp4_echo_reply(lrp.mac, vm.port.mac, target, vm.port.ip, 254, PAYLOAD);
            p.expect_equal(
                &format!("lr0 answers {name}'s ping to {target}"),
                name,
                |f| ipv4_summary(f).is_some_and(|s| s.src == target && s.is_icmp_echo_reply()),
                &reply,
            );
        }
    }
    // The switch's ARP responder answers for a VM on another chassis.
    let (vm1, vm3) = (net.vm("vm1"), net.vm("vm3"));
    p.send("vm1", &arp_request(vm1.port.mac, vm1.port.ip, vm3.port.ip));
    p.expect_exact(
        "sw0 answers vm1's ARP for vm3",
        "vm1",
        &arp_reply(vm3.port.mac, vm3.port.ip, vm1.port.mac, vm1.port.ip),
    );
    p.finish(&net.ports())
}

// ---- scenario 4: ACLs --------------------------------------------------------------------

fn acl_drop(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm3) = (net.vm("vm1"), net.vm("vm3"));
    p.nbctl(&[
        "acl-add",
        "sw0",
        "to-lport",
        "1001",
        r#"outport == "vm3" && udp.dst == 9999"#,
        "drop",
    ]);
    p.wait_hv("drop ACL added");
    p.send("vm1", &udp_to(vm1, vm3, (4000, 9999), b"dropped"));
    let marker = udp_to(vm1, vm3, (4000, 5000), b"allowed");
    p.send("vm1", &marker);
    p.expect_exact("UDP to another port still reaches vm3", "vm3", &marker);
    p.refute(
        "UDP to port 9999 is dropped by the ACL",
        has_udp_payload(b"dropped"),
    );
    p.nbctl(&["acl-del", "sw0"]);
    p.wait_hv("ACLs removed");
    let again = udp_to(vm1, vm3, (4000, 9999), b"passes again");
    p.send("vm1", &again);
    p.expect_exact("without the ACL, UDP 9999 passes", "vm3", &again);
    p.finish(&net.ports())
}

fn acl_allow_related(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm3) = (net.vm("vm1"), net.vm("vm3"));
    p.nbctl(&[
        "--",
        "acl-add",
        "sw0",
        "from-lport",
        "1002",
        r#"inport == "vm1" && ip4"#,
        "allow-related",
        "--",
        "acl-add",
        "sw0",
        "to-lport",
        "1002",
        r#"outport == "vm1" && ip4"#,
        "drop",
    ]);
    p.wait_hv("allow-related ACLs added");
    let request = udp_to(vm1, vm3, (40000, 7000), b"request");
    p.send("vm1", &request);
    p.expect_exact("vm1's request reaches vm3", "vm3", &request);
    let reply = udp_to(vm3, vm1, (7000, 40000), b"reply");
    p.send("vm3", &reply);
    p.expect_exact(
        "vm3's reply is allowed back to vm1 (related to vm1's request)",
        "vm1",
        &reply,
    );
    p.send("vm3", &udp_to(vm3, vm1, (7001, 40001), b"unsolicited"));
    // ARP is not ip4: the ACLs let it through, on the same path, behind the dropped packet.
    let marker = arp_reply(vm3.port.mac, vm3.port.ip, vm1.port.mac, vm1.port.ip);
    p.send("vm3", &marker);
    p.expect_exact("an ARP reply from vm3 reaches vm1", "vm1", &marker);
    p.refute(
        "an unsolicited packet to vm1 is dropped",
        has_udp_payload(b"unsolicited"),
    );
    p.nbctl(&["acl-del", "sw0"]);
    p.wait_hv("ACLs removed");
    let free = udp_to(vm3, vm1, (7001, 40001), b"unsolicited, no ACL");
    p.send("vm3", &free);
    p.expect_exact("without the ACLs the packet passes", "vm1", &free);
    p.finish(&net.ports())
}

// ---- scenario 5: port security -----------------------------------------------------------

fn port_security(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm3) = (net.vm("vm1").clone(), net.vm("vm3"));
    p.nbctl(&[
        "lsp-set-port-security",
        "vm1",
        &format!("{} {}", vm1.port.mac, vm1.port.ip),
    ]);
    p.wait_hv("port security set on vm1");
    let genuine = udp_to(&vm1, vm3, (1000, 2000), b"genuine 1");
    p.send("vm1", &genuine);
    p.expect_exact("vm1's genuine packet reaches vm3", "vm3", &genuine);
    let spoofed_mac = udp4(
        mac("50:54:00:00:00:66"),
        vm3.port.mac,
        vm1.port.ip,
        vm3.port.ip,
        TTL,
        1000,
        2000,
        b"spoofed mac",
    );
    let spoofed_ip = udp4(
        vm1.port.mac,
        vm3.port.mac,
        Ipv4Addr::new(10, 0, 0, 66),
        vm3.port.ip,
        TTL,
        1000,
        2000,
        b"spoofed ip",
    );
    p.send("vm1", &spoofed_mac);
    p.send("vm1", &spoofed_ip);
    let marker = udp_to(&vm1, vm3, (1000, 2000), b"genuine 2");
    p.send("vm1", &marker);
    p.expect_exact("the genuine packet behind them reaches vm3", "vm3", &marker);
    p.refute(
        "a spoofed source MAC is dropped",
        has_udp_payload(b"spoofed mac"),
    );
    p.refute(
        "a spoofed source IP is dropped",
        has_udp_payload(b"spoofed ip"),
    );
    // Egress: vm1 accepts IPv4 only to its own address.
    p.send(
        "vm3",
        &udp(
            vm3,
            vm1.port.mac,
            Ipv4Addr::new(10, 0, 0, 77),
            (3000, 4000),
            b"wrong destination",
        ),
    );
    let to_vm1 = udp_to(vm3, &vm1, (3000, 4000), b"to vm1");
    p.send("vm3", &to_vm1);
    p.expect_exact("vm3's packet to vm1's address reaches vm1", "vm1", &to_vm1);
    p.refute(
        "a packet to another IP is not delivered to vm1",
        has_udp_payload(b"wrong destination"),
    );
    p.nbctl(&["lsp-set-port-security", "vm1"]);
    p.wait_hv("port security removed");
    let free = udp4(
        mac("50:54:00:00:00:66"),
        vm3.port.mac,
        vm1.port.ip,
        vm3.port.ip,
        TTL,
        1000,
        2000,
        b"any mac",
    );
    p.send("vm1", &free);
    p.expect_exact("without port security any source MAC passes", "vm3", &free);
    p.finish(&net.ports())
}

// ---- scenario 6: a load-balancer VIP with a backend on another chassis -------------------

fn load_balancer(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm2) = (net.vm("vm1"), net.vm("vm2"));
    let (lrp0, lrp1) = (net.router_port("sw0"), net.router_port("sw1"));
    let vip = Ipv4Addr::new(172, 16, 1, 100);
    p.nbctl(&[
        "lb-add",
        "lb0",
        &format!("{vip}:80"),
        &format!("{}:8080", vm2.port.ip),
        "tcp",
    ]);
    p.nbctl(&["ls-lb-add", "sw0", "lb0"]);
    p.wait_hv("load balancer added to sw0");
    let syn = tcp4(
        vm1.port.mac,
        lrp0.mac,
        vm1.port.ip,
        vip,
        TTL,
        33000,
        80,
        1000,
        TcpFlags::Syn,
    );
    p.send("vm1", &syn);
    let dnat = tcp4(
        lrp1.mac,
        vm2.port.mac,
        vm1.port.ip,
        vm2.port.ip,
        TTL - 1,
        33000,
        8080,
        1000,
        TcpFlags::Syn,
    );
    p.expect_equal(
        "vm1's SYN to the VIP reaches the backend vm2 on hv2, DNATed",
        "vm2",
        |f| ipv4_summary(f).is_some_and(|s| s.src == vm1.port.ip),
        &dnat,
    );
    let syn_ack = tcp4(
        vm2.port.mac,
        lrp1.mac,
        vm2.port.ip,
        vm1.port.ip,
        TTL,
        8080,
        33000,
        5000,
        TcpFlags::SynAck(1001),
    );
    p.send("vm2", &syn_ack);
    let un_dnat = tcp4(
        lrp0.mac,
        vm1.port.mac,
        vip,
        vm1.port.ip,
        TTL - 1,
        80,
        33000,
        5000,
        TcpFlags::SynAck(1001),
    );
    p.expect_equal(
        "the backend's SYN+ACK reaches vm1 from the VIP (un-DNATed)",
        "vm1",
        |f| ipv4_summary(f).is_some_and(|s| s.dst == vm1.port.ip),
        &un_dnat,
    );
    p.nbctl(&["lb-del", "lb0"]);
    p.wait_hv("load balancer removed");
    p.finish(&net.ports())
}

// ---- scenario 8: a reroute policy with pkt_mark ------------------------------------------

/// The `pkt_mark` that `ofproto/trace` of `frame` entering br-int at `vif` on `chassis` shows
/// set on the packet when it leaves (the datapath actions' `set(skb_mark(..))`; "none").
fn traced_pkt_mark(p: &mut Probe<'_>, chassis: &str, vif: &str, frame: &[u8]) -> String {
    traced(p, chassis, vif, frame).0
}

/// The mark as [`traced_pkt_mark`] finds it, and the whole trace.
fn traced(p: &mut Probe<'_>, chassis: &str, vif: &str, frame: &[u8]) -> (String, String) {
    let lab = p.lab();
    let trace = lab.chassis(chassis).and_then(|c| {
        c.appctl(&[
            "ofproto/trace",
            "br-int",
            &format!("in_port={vif}"),
            &hex::encode(frame),
        ])
    });
    let Some(trace) = p.check("ofproto/trace", trace) else {
        return (String::new(), String::new());
    };
    let Some(actions) = trace
        .lines()
        .find_map(|l| l.strip_prefix("Datapath actions:"))
    else {
        p.fail(format!(
            "ofproto/trace printed no datapath actions:\n{trace}"
        ));
        return (String::new(), trace);
    };
    let mark = actions
        .split("skb_mark(")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or("none")
        .to_owned();
    (mark, trace)
}

fn reroute_policy_sets_pkt_mark(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm2, vm5) = (net.vm("vm1"), net.vm("vm2"), net.vm("vm5"));
    let (lrp0, lrp1) = (net.router_port("sw0"), net.router_port("sw1"));
    p.nbctl(&[
        "lr-policy-add",
        "lr0",
        "100",
        &format!("ip4.src == {} && ip4.dst == {}", vm1.port.ip, vm2.port.ip),
        "reroute",
        &vm5.port.ip.to_string(),
        "pkt_mark=100",
    ]);
    p.wait_hv("reroute policy added");
    let request = icmp4_echo(
        vm1.port.mac,
        lrp0.mac,
        vm1.port.ip,
        vm2.port.ip,
        TTL,
        PAYLOAD,
    );
    // lr0's pipeline runs where the packet enters it: on hv1, vm1's chassis.
    let (mark, trace) = traced(&mut p, "hv1", "vm1", &request);
    if mark != "0x64" {
        p.fail(format!(
            "ofproto/trace on hv1: the rerouted packet leaves with pkt_mark {mark}, expected 0x64:\n{trace}"
        ));
    }
    p.fact("pkt_mark of vm1 -> vm2 in ofproto/trace on hv1", mark);
    p.send("vm1", &request);
    let rerouted = icmp4_echo(
        lrp1.mac,
        vm5.port.mac,
        vm1.port.ip,
        vm2.port.ip,
        TTL - 1,
        PAYLOAD,
    );
    p.expect_equal(
        "the policy reroutes vm1's packet for vm2 to the next hop vm5",
        "vm5",
        |f| ipv4_summary(f).is_some_and(|s| s.src == vm1.port.ip),
        &rerouted,
    );
    p.refute_on("vm2 gets nothing of it", "vm2", |f| {
        ipv4_summary(f).is_some_and(|s| s.src == vm1.port.ip)
    });
    // A packet the policy does not match keeps its mark clear.
    let other = icmp4_echo(
        vm1.port.mac,
        lrp0.mac,
        vm1.port.ip,
        vm5.port.ip,
        TTL,
        PAYLOAD,
    );
    let unmarked = traced_pkt_mark(&mut p, "hv1", "vm1", &other);
    p.fact("pkt_mark of vm1 -> vm5 in ofproto/trace on hv1", unmarked);
    p.nbctl(&["lr-policy-del", "lr0", "100"]);
    p.wait_hv("policy removed");
    p.send("vm1", &request);
    p.expect_equal(
        "without the policy vm1's packet reaches vm2",
        "vm2",
        |f| ipv4_summary(f).is_some_and(|s| s.src == vm1.port.ip),
        &icmp4_echo(
            lrp1.mac,
            vm2.port.mac,
            vm1.port.ip,
            vm2.port.ip,
            TTL - 1,
            PAYLOAD,
        ),
    );
    p.finish(&net.ports())
}

// ---- scenario 10: --wait=hv returns only after the flows are in -------------------------

fn wait_hv_is_exact(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm3) = (net.vm("vm1"), net.vm("vm3"));
    // to-lport ACLs run on vm3's chassis (hv2), from-lport ones on vm1's (hv1). In a mixed
    // setup, a round whose ACL runs on ovn-controller's chassis measures the oracle, which was
    // seen (with both one and two ovn-controllers) to leave the packet sent right after
    // `acl-del --wait=hv` of the address-set ACL dropped.
    // The last two ACLs take thousands of flows (a large address set holding vm1's address),
    // so that the switch takes a while to install them: an acknowledgement that runs ahead
    // of the installation has a window to show.
    let big: Vec<String> = (0..4000u32)
        .map(|i| {
            let [_, _, c, d] = (i * 7 + 3).to_be_bytes();
            format!("10.{}.{c}.{d}", 100 + i % 50)
        })
        .chain(std::iter::once(vm1.port.ip.to_string()))
        .collect();
    p.nbctl(&[
        "create",
        "Address_Set",
        "name=big",
        &format!(
            "addresses={}",
            big.iter()
                .map(|a| format!("\"{a}\""))
                .collect::<Vec<_>>()
                .join(",")
        ),
    ]);
    let acls = [
        ("to-lport", r#"outport == "vm3" && udp.dst == 9999"#),
        ("from-lport", r#"inport == "vm1" && udp.dst == 9999"#),
        ("to-lport", r#"outport == "vm3" && udp.dst == 9999"#),
        (
            "to-lport",
            r#"outport == "vm3" && udp.dst == 9999 && ip4.src == $big"#,
        ),
        (
            "from-lport",
            r#"inport == "vm1" && udp.dst == 9999 && ip4.src == $big"#,
        ),
    ];
    for (round, (direction, matching)) in acls.iter().enumerate() {
        p.nbctl(&[
            "--wait=hv",
            "acl-add",
            "sw0",
            direction,
            "1001",
            matching,
            "drop",
        ]);
        let blocked = udp_to(
            vm1,
            vm3,
            (4000, 9999),
            format!("blocked {round}").as_bytes(),
        );
        let marker = udp_to(vm1, vm3, (4000, 5000), format!("marker {round}").as_bytes());
        p.send("vm1", &blocked);
        p.send("vm1", &marker);
        p.expect_exact(
            &format!("round {round}: the marker passes the {direction} ACL"),
            "vm3",
            &marker,
        );
        // Only the chassis enforcing the ACL decides the packet's fate right after --wait=hv.
        let enforcer = if *direction == "to-lport" {
            "hv2"
        } else {
            "hv1"
        };
        p.judged_by_oracle(net.oracle_decides(enforcer), |p| {
            p.refute_on(
                &format!(
                    "round {round}: sent right after acl-add --wait=hv, the packet is dropped"
                ),
                "vm3",
                |f| f == blocked.as_slice(),
            );
        });
        p.nbctl(&["--wait=hv", "acl-del", "sw0"]);
        let open = udp_to(vm1, vm3, (4000, 9999), format!("open {round}").as_bytes());
        p.send("vm1", &open);
        p.judged_by_oracle(net.oracle_decides(enforcer), |p| {
            p.expect_exact(
                &format!("round {round}: sent right after acl-del --wait=hv, the packet passes"),
                "vm3",
                &open,
            );
        });
    }
    p.nbctl(&["destroy", "Address_Set", "big"]);
    p.wait_hv("address set removed");
    p.finish(&net.ports())
}

/// `--wait=hv` also covers a datapath that just became local through a patch port: hv2 has no
/// port on the new switch sw2, which it only reaches through lr0 (its conditional monitoring
/// must add sw2 first), and must have sw2's flows when `--wait=hv` returns.
fn wait_hv_covers_a_new_local_datapath(net: &Net) -> Outcome {
    let mut p = net.probe();
    let vm2 = net.vm("vm2");
    let lrp1 = net.router_port("sw1");
    let vm6 = common::vm_port("vm6", "50:54:00:00:02:06", [10, 0, 2, 6]);
    let lrp2_mac = mac("00:00:00:00:ff:04");
    p.nbctl(&[
        "--",
        "ls-add",
        "sw2",
        "--",
        "lsp-add",
        "sw2",
        "vm6",
        "--",
        "lsp-set-addresses",
        "vm6",
        &format!("{} {}", vm6.mac, vm6.ip),
    ]);
    let lab = p.lab();
    let vif = lab.chassis("hv1").and_then(|c| c.add_vif("vm6", "vm6"));
    let Some(vif) = p.check("plug vm6 on hv1", vif) else {
        return p.finish(&net.ports());
    };
    p.watch("hv1", &vif);
    let up = integration::scenario::wait_port_up(lab.central(), "vm6");
    p.check("vm6 comes up on hv1", up);
    // Joining sw2 to lr0 makes sw2 local to hv2 through lr0's new patch port.
    let joined = attach_router_port(
        lab.central(),
        "lr0",
        "sw2",
        "00:00:00:00:ff:04",
        "10.0.2.254/24",
    );
    p.check("join sw2 to lr0", joined);
    p.wait_hv("sw2 joined to lr0");
    let request = icmp4_echo(vm2.port.mac, lrp1.mac, vm2.port.ip, vm6.ip, TTL, PAYLOAD);
    p.send("vm2", &request);
    p.expect_equal(
        "sent from hv2 right after --wait=hv, vm2's ping is routed to vm6 through sw2",
        "vm6",
        |f| ipv4_summary(f).is_some_and(|s| s.src == vm2.port.ip),
        &icmp4_echo(lrp2_mac, vm6.mac, vm2.port.ip, vm6.ip, TTL - 1, PAYLOAD),
    );
    let reply = icmp4_echo_reply(vm6.mac, lrp2_mac, vm6.ip, vm2.port.ip, TTL, PAYLOAD);
    p.send("vm6", &reply);
    p.expect_equal(
        "vm6's reply comes back to vm2",
        "vm2",
        |f| ipv4_summary(f).is_some_and(|s| s.src == vm6.ip),
        &icmp4_echo_reply(
            lrp1.mac,
            vm2.port.mac,
            vm6.ip,
            vm2.port.ip,
            TTL - 1,
            PAYLOAD,
        ),
    );
    let mut ports = net.ports();
    ports.push("vm6");
    let outcome = p.finish(&ports);
    // Undo: the VIF, the switch and the router port.
    let undo = lab
        .chassis("hv1")
        .and_then(|c| c.vsctl(&["del-port", "br-int", "vm6"]))
        .and_then(|_| {
            lab.central()
                .nbctl(&["--", "lrp-del", "lr0-sw2", "--", "ls-del", "sw2"])
        })
        .and_then(|_| lab.central().wait_hv_sync());
    let mut outcome = outcome;
    if let Err(e) = undo {
        outcome.failures.push(format!("remove sw2 again: {e}"));
    }
    outcome
}

const SINGLE_TOPOLOGY: &[Scenario] = &[
    ("1 L2 across chassis", l2_across_chassis),
    ("2 routed across chassis", routed_across_chassis),
    ("3 router answers ARP and ping", router_answers_arp_and_ping),
    ("4a ACL drop", acl_drop),
    ("4b ACL allow-related", acl_allow_related),
    ("5 port security", port_security),
    ("6 load balancer, backend on hv2", load_balancer),
    (
        "8 reroute policy sets pkt_mark",
        reroute_policy_sets_pkt_mark,
    ),
    ("10 --wait=hv is exact", wait_hv_is_exact),
    (
        "10b --wait=hv covers a new local datapath",
        wait_hv_covers_a_new_local_datapath,
    ),
];

#[test]
fn scenarios_with_each_controller() {
    let setups = Setup::oracle_and_agent(&["hv1", "hv2"]);
    let (mut nets, mut report) = common::run_all(
        &setups,
        |s| two_switches_one_router(s, &["hv1", "hv2"]),
        SINGLE_TOPOLOGY,
    );
    // After all the incremental changes of the scenarios, a fresh start of each controller
    // must find the switch exactly as it wants it.
    for net in &mut nets {
        let outcome = common::restart_changes_no_flow(net, &["hv1", "hv2"]);
        report.add(
            "12 a restart changes no flow",
            &net.setup.label.clone(),
            outcome,
        );
    }
    common::conclude_healthy(nets, &report);
}

// ---- scenario 9: mixed chassis -----------------------------------------------------------

/// One ovn-controller and one ovn-agent, both ways round, pass the traffic of the scenarios
/// that cross between the two chassis (switched, routed, conntrack across chassis, a load
/// balancer, the router's answers) exactly as two ovn-controllers do.
#[test]
fn mixed_chassis_pass_the_same_traffic() {
    let agent = Controller::ovn_agent().expect("build ovn-agent");
    let c = Controller::OvnController;
    let setups = [
        Setup::all(&c, &["hv1", "hv2"]),
        Setup::mixed(&[("hv1", &c), ("hv2", &agent)]),
        Setup::mixed(&[("hv1", &agent), ("hv2", &c)]),
    ];
    let scenarios: &[Scenario] = &[
        ("1 L2 across chassis", l2_across_chassis),
        ("2 routed across chassis", routed_across_chassis),
        ("3 router answers ARP and ping", router_answers_arp_and_ping),
        ("4b ACL allow-related", acl_allow_related),
        ("6 load balancer, backend on hv2", load_balancer),
        ("10 --wait=hv is exact", wait_hv_is_exact),
    ];
    let (nets, report) = common::run_all(
        &setups,
        |s| two_switches_one_router(s, &["hv1", "hv2"]),
        scenarios,
    );
    common::conclude_healthy(nets, &report);
}

// ---- scenario 7: a distributed gateway port with SNAT on a third chassis -----------------

const GATEWAY: SnatGateway = SnatGateway::LAB;
const EXT_HOST_IP: Ipv4Addr = GATEWAY.host_ip;
const LR0_PUBLIC_IP: Ipv4Addr = GATEWAY.router_ip;

/// The shared topology plus lr0's distributed gateway port with SNAT on hv3
/// ([`SnatGateway`]): 10.0.0.0/16 leaves as 172.16.0.1 through the localnet port there.
fn gateway_topology(setup: &Setup) -> Result<Net> {
    let mut net = two_switches_one_router(setup, &["hv1", "hv2", "hv3"])?;
    let ext = GATEWAY.build(net.lab.central(), "lr0", net.lab.chassis("hv3")?)?;
    net.extra.push(("hv3".to_owned(), ext));
    Ok(net)
}

fn snat_through_gateway_chassis(net: &Net) -> Outcome {
    let mut p = net.probe();
    let ext_mac = GATEWAY.host_mac;
    let public_mac = GATEWAY.router_mac;
    let (lrp0, lrp1) = (net.router_port("sw0"), net.router_port("sw1"));
    // The external host finds the router's address: answered on hv3, where cr-lr0-public is.
    p.send(
        "ext-host",
        &arp_request(ext_mac, EXT_HOST_IP, LR0_PUBLIC_IP),
    );
    p.expect_exact(
        "lr0 answers the external host's ARP for 172.16.0.1 on hv3",
        "ext-host",
        &arp_reply(public_mac, LR0_PUBLIC_IP, ext_mac, EXT_HOST_IP),
    );
    // vm1 (hv1) pings the external host: redirected to hv3, SNATed, out through ln-public.
    let vm1 = net.vm("vm1");
    p.send(
        "vm1",
        &icmp4_echo(
            vm1.port.mac,
            lrp0.mac,
            vm1.port.ip,
            EXT_HOST_IP,
            TTL,
            PAYLOAD,
        ),
    );
    let out = p.expect(
        "vm1's ping leaves hv3 through the localnet port, SNATed to 172.16.0.1",
        "ext-host",
        |f| ipv4_summary(f).is_some_and(|s| s.icmp_echo_request && s.dst == EXT_HOST_IP),
    );
    if let Some(out) = out {
        let s = ipv4_summary(&out);
        let expected = icmp4_echo(
            public_mac,
            ext_mac,
            LR0_PUBLIC_IP,
            EXT_HOST_IP,
            TTL - 1,
            PAYLOAD,
        );
        if out != expected {
            p.fail(format!("vm1's ping left as {s:?}, expected {expected:?}"));
        }
        // The external host answers the SNAT address.
        p.send(
            "ext-host",
            &icmp4_echo_reply(
                ext_mac,
                public_mac,
                EXT_HOST_IP,
                LR0_PUBLIC_IP,
                TTL,
                PAYLOAD,
            ),
        );
        p.expect_equal(
            "the external host's reply comes back to vm1 on hv1, un-SNATed",
            "vm1",
            |f| ipv4_summary(f).is_some_and(|s| s.src == EXT_HOST_IP),
            &icmp4_echo_reply(
                lrp0.mac,
                vm1.port.mac,
                EXT_HOST_IP,
                vm1.port.ip,
                TTL - 1,
                PAYLOAD,
            ),
        );
    }
    // vm2 (hv2, sw1) sends UDP: the same through hv3; its reply comes back to hv2.
    let vm2 = net.vm("vm2");
    p.send(
        "vm2",
        &udp(vm2, lrp1.mac, EXT_HOST_IP, (5555, 53), b"query"),
    );
    p.expect_equal(
        "vm2's datagram leaves hv3 SNATed to 172.16.0.1",
        "ext-host",
        has_udp_payload(b"query"),
        &udp4(
            public_mac,
            ext_mac,
            LR0_PUBLIC_IP,
            EXT_HOST_IP,
            TTL - 1,
            5555,
            53,
            b"query",
        ),
    );
    p.send(
        "ext-host",
        &udp4(
            ext_mac,
            public_mac,
            EXT_HOST_IP,
            LR0_PUBLIC_IP,
            TTL,
            53,
            5555,
            b"answer",
        ),
    );
    p.expect_equal(
        "the answer comes back to vm2 on hv2, un-SNATed",
        "vm2",
        has_udp_payload(b"answer"),
        &udp4(
            lrp1.mac,
            vm2.port.mac,
            EXT_HOST_IP,
            vm2.port.ip,
            TTL - 1,
            53,
            5555,
            b"answer",
        ),
    );
    // Nothing leaves for the outside anywhere but hv3, and the router port is bound there.
    for vm in net.vms.keys() {
        p.refute_on("no VM sees the SNATed traffic", vm, |f| {
            ipv4_summary(f).is_some_and(|s| s.dst == EXT_HOST_IP || s.src == LR0_PUBLIC_IP)
        });
    }
    let mut ports = net.ports();
    ports.extend(["cr-lr0-public", "ln-public", "public-lr0"]);
    let outcome = p.finish(&ports);
    let mut outcome = outcome;
    let cr = outcome.observation.bindings.get("cr-lr0-public").cloned();
    if cr.as_ref().and_then(|b| b.chassis.as_deref()) != Some("hv3") {
        outcome
            .failures
            .push(format!("cr-lr0-public is bound as {cr:?}, expected on hv3"));
    }
    // ARP replies from the router are not gratuitous: they stay in the comparison.
    let arp_replies = outcome.observation.packets.get("ext-host").map_or(0, |ps| {
        ps.iter()
            .filter(|f| arp_summary(f).is_some_and(|a| a.op == ARP_REPLY))
            .count()
    });
    if arp_replies != 1 {
        outcome.failures.push(format!(
            "the external host got {arp_replies} ARP replies, expected 1"
        ));
    }
    outcome
}

#[test]
fn gateway_snat_on_a_third_chassis() {
    let setups = Setup::oracle_and_agent(&["hv1", "hv2", "hv3"]);
    let (nets, report) = common::run_all(
        &setups,
        gateway_topology,
        &[(
            "7 distributed gateway port, SNAT on hv3",
            snat_through_gateway_chassis,
        )],
    );
    common::conclude_healthy(nets, &report);
}

// ---- scenario 11: restart with traffic flowing -------------------------------------------

/// Lost packets tolerated for ovn-agent per restart (0 is the goal: it must not remove flows
/// while it is down or while it starts).
const AGENT_LOSS_BOUND: usize = 5;

/// The numbered stream of [`common::stream_during`] while the controller of `restart` is
/// stopped by pid, kept down for 1 s and started again; the stream goes on 1.5 s after the
/// restarted controller caught up (`--wait=hv`). Returns (sent, the numbers received).
fn stream_across_restart(
    net: &mut Net,
    restart: &str,
    failures: &mut Vec<String>,
) -> (usize, Vec<u32>) {
    let controller = net
        .setup
        .controller(restart)
        .cloned()
        .expect("a controller for the restarted chassis");
    let restart_it = |net: &mut Net| {
        let mut failures = Vec::new();
        let before = common::flow_dump(&net.lab, restart);
        if let Ok(chassis) = net.lab.chassis_mut(restart) {
            chassis.stop_controller();
        }
        std::thread::sleep(Duration::from_secs(1));
        if let Err(e) = net.lab.start_controller(restart, &controller) {
            failures.push(format!("restart the controller on {restart}: {e}"));
        }
        if let Err(e) = net.lab.central().wait_hv_sync() {
            failures.push(format!("--wait=hv after the restart on {restart}: {e}"));
        }
        match (before, common::flow_dump(&net.lab, restart)) {
            (Ok(before), Ok(after)) => failures.extend(common::compare_across_restart(
                restart,
                &before,
                &after,
                controller == Controller::OvnController,
            )),
            (Err(e), _) | (_, Err(e)) => failures.push(format!("dump the flows of {restart}: {e}")),
        }
        failures
    };
    common::stream_during(net, Duration::from_millis(1500), restart_it, failures)
}

#[test]
fn restart_with_traffic_flowing() {
    let mut report = Report::default();
    let mut nets = Vec::new();
    let mut losses = Vec::new();
    for setup in Setup::oracle_and_agent(&["hv1", "hv2"]) {
        let mut net = two_switches_one_router(&setup, &["hv1", "hv2"])
            .unwrap_or_else(|e| panic!("build the lab for {}: {e}", setup.label));
        for restart in ["hv1", "hv2"] {
            let started = Instant::now();
            let mut failures = Vec::new();
            let (sent, received) = stream_across_restart(&mut net, restart, &mut failures);
            let common::StreamLoss { lost, missing, .. } =
                common::judge_stream(sent, &received, &mut failures);
            eprintln!(
                "[{}] restart of the controller on {restart}: {sent} sent, {} received, {lost} lost {missing:?}",
                setup.label,
                sent - lost
            );
            losses.push(format!(
                "{} restart {restart}: {lost} of {sent} lost",
                setup.label
            ));
            if setup.label != ORACLE && lost > AGENT_LOSS_BOUND {
                failures.push(format!(
                    "{lost} packets lost across the restart on {restart} (bound {AGENT_LOSS_BOUND}): {missing:?}"
                ));
            }
            let mut outcome = Outcome {
                failures,
                elapsed: started.elapsed(),
                ..Outcome::default()
            };
            if let Ok(b) = net.lab.central().port_bindings() {
                outcome.observation.bindings = net
                    .ports()
                    .iter()
                    .filter_map(|p| Some(((*p).to_owned(), b.get(*p)?.clone())))
                    .collect();
            }
            report.add(&format!("11 restart on {restart}"), &setup.label, outcome);
        }
        nets.push(net);
    }
    eprintln!("packets lost: {}", losses.join("; "));
    common::conclude_healthy(nets, &report);
}
