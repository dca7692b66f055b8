//! pinctrl against the real ovn-controller, in the same run (issue 11): the packets the
//! router's controller actions produce (ARP requests for an unknown next hop, the buffered
//! packet once the reply is in, ICMP errors, TCP resets, ACL rejects) and the MAC_Binding
//! row the reply creates must be the same with both controllers. Every packet out of every
//! VIF is compared byte for byte by the harness; nothing is normalized.

mod common;

use std::net::{Ipv4Addr, Ipv6Addr};

use etherparse::{Icmpv6Type, PacketBuilder, SlicedPacket, TransportSlice};

use common::{
    is_icmp, mac, two_switches_one_router, Net, Scenario, Setup, LR0_SW0_MAC, LR0_SW1_MAC,
};
use integration::observe::Outcome;
use integration::packet::{arp_summary, icmp4_echo, ipv4_summary, tcp4, udp4, Mac, TcpFlags, L4};
use integration::scenario::SnatGateway;
use integration::Result;

/// An address on sw1 that no logical port has: the router must resolve it.
const UNKNOWN_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 9);

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

/// UDP to a router address: port unreachable; TCP to a router address: reset (`tcp_reset`);
/// SCTP to a router address: abort (`sctp_abort`).
fn router_answers_udp_tcp_and_sctp_to_itself(net: &Net) -> Outcome {
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
    p.send("vm1", &sctp_init(vm1, router, 7779));
    p.expect("SCTP to the router: abort", "vm1", |f| {
        ipv4_summary(f).is_some_and(|s| s.src == router)
            && f.len() >= 50
            && f[23] == 132
            && f[46] == 6
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
    let udp = routed_udp(vm1, vm2, (40002, 7777), b"rejected");
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

// ---- IPv6 ------------------------------------------------------------------------------

/// An address on sw1 that no logical port has.
const UNKNOWN_HOST6: Ipv6Addr = Ipv6Addr::new(0xfd01, 0, 0, 0, 0, 0, 0, 9);
const VM1_IP6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1);
const LR0_SW0_IP6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 0xfe);
const VM5_IP6: Ipv6Addr = Ipv6Addr::new(0xfd01, 0, 0, 0, 0, 0, 0, 5);

fn icmp6_echo(src: Mac, dst: Mac, ip_src: Ipv6Addr, ip_dst: Ipv6Addr, hop_limit: u8) -> Vec<u8> {
    icmp6_echo_sized(src, dst, (ip_src, ip_dst), hop_limit, 24)
}

/// An ICMPv6 echo request with `payload_len` bytes of payload.
fn icmp6_echo_sized(
    src: Mac,
    dst: Mac,
    (ip_src, ip_dst): (Ipv6Addr, Ipv6Addr),
    hop_limit: u8,
    payload_len: usize,
) -> Vec<u8> {
    let b = PacketBuilder::ethernet2(src.0, dst.0)
        .ipv6(ip_src.octets(), ip_dst.octets(), hop_limit)
        .icmpv6_echo_request(0x4321, 7);
    let payload = vec![0x5a; payload_len];
    let mut out = Vec::with_capacity(b.size(payload.len()));
    b.write(&mut out, &payload)
        .expect("ICMPv6 echo fits in memory");
    out
}

/// A neighbor solicitation (135) or advertisement (136, flags S|O) for `target` with the
/// link-layer address option of `src`.
fn nd(
    src: Mac,
    dst: Mac,
    ip_src: Ipv6Addr,
    ip_dst: Ipv6Addr,
    advert: bool,
    target: Ipv6Addr,
) -> Vec<u8> {
    let (ty, flags, opt) = if advert { (136, 0x60, 2) } else { (135, 0, 1) };
    let b = PacketBuilder::ethernet2(src.0, dst.0)
        .ipv6(ip_src.octets(), ip_dst.octets(), 255)
        .icmpv6(Icmpv6Type::Unknown {
            type_u8: ty,
            code_u8: 0,
            bytes5to8: [flags, 0, 0, 0],
        });
    let mut body = target.octets().to_vec();
    body.extend_from_slice(&[opt, 1]);
    body.extend_from_slice(&src.0);
    let mut out = Vec::with_capacity(b.size(body.len()));
    b.write(&mut out, &body).expect("ND message fits in memory");
    out
}

/// ICMPv6 type and, for ND messages, the target.
fn icmp6_of(frame: &[u8]) -> Option<(u8, Option<Ipv6Addr>)> {
    let p = SlicedPacket::from_ethernet(frame).ok()?;
    let Some(TransportSlice::Icmpv6(icmp)) = p.transport else {
        return None;
    };
    let target = icmp
        .payload()
        .get(..16)
        .and_then(|t| <[u8; 16]>::try_from(t).ok())
        .map(Ipv6Addr::from);
    Some((icmp.type_u8(), target))
}

fn set_ipv6(net: &Net, on: bool) -> Result<()> {
    let c = net.lab.central();
    let (sw0, sw1, vm1, vm5, vm3) = if on {
        (
            r#"networks="10.0.0.254/24","fd00::fe/64""#,
            r#"networks="10.0.1.254/24","fd01::fe/64""#,
            "50:54:00:00:00:01 10.0.0.1 fd00::1",
            "50:54:00:00:01:05 10.0.1.5 fd01::5",
            "50:54:00:00:00:03 10.0.0.3 fd00::3",
        )
    } else {
        (
            r#"networks="10.0.0.254/24""#,
            r#"networks="10.0.1.254/24""#,
            "50:54:00:00:00:01 10.0.0.1",
            "50:54:00:00:01:05 10.0.1.5",
            "50:54:00:00:00:03 10.0.0.3",
        )
    };
    c.nbctl(&["set", "Logical_Router_Port", "lr0-sw0", sw0])?;
    c.nbctl(&["set", "Logical_Router_Port", "lr0-sw1", sw1])?;
    c.nbctl(&["lsp-set-addresses", "vm1", vm1])?;
    c.nbctl(&["lsp-set-addresses", "vm5", vm5])?;
    c.nbctl(&["lsp-set-addresses", "vm3", vm3])?;
    c.wait_hv_sync()
}

/// With IPv6 on both router ports: a ping to an unknown host on sw1 makes the router send
/// a neighbor solicitation from its link-local address and keep the ping; vm5's
/// advertisement creates the MAC_Binding row and releases the ping. The router answers a
/// solicitation for its own address (`nd_na_router`), and a hop limit of 1 gets ICMPv6
/// time exceeded.
fn nd_resolves_an_unknown_next_hop(net: &Net) -> Outcome {
    let mut p = net.probe();
    p.check("turn on IPv6", set_ipv6(net, true));
    let (vm1, vm5) = (net.vm("vm1"), net.vm("vm5"));
    let ping = icmp6_echo(vm1.port.mac, mac(LR0_SW0_MAC), VM1_IP6, UNKNOWN_HOST6, 64);
    p.send("vm1", &ping);
    let ns = p.expect("the router solicits fd01::9 on sw1 (vm5)", "vm5", |f| {
        icmp6_of(f) == Some((135, Some(UNKNOWN_HOST6)))
    });
    if let Some(ns) = &ns {
        p.fact("neighbor solicitation", hex::encode(ns));
    }
    let router_lla: Ipv6Addr = "fe80::200:ff:fe00:ff02".parse().expect("address");
    let na = nd(
        vm5.port.mac,
        mac(LR0_SW1_MAC),
        UNKNOWN_HOST6,
        router_lla,
        true,
        UNKNOWN_HOST6,
    );
    p.send("vm5", &na);
    let routed = icmp6_echo(mac(LR0_SW1_MAC), vm5.port.mac, VM1_IP6, UNKNOWN_HOST6, 63);
    p.expect_exact(
        "the buffered ping arrives once the advertisement is in",
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
            r#"ip="fd01::9""#,
        ]),
    );
    if let Some(b) = binding {
        p.fact(
            "MAC_Binding",
            b.split_whitespace().collect::<Vec<_>>().join(" "),
        );
    }
    let group: Ipv6Addr = "ff02::1:ff00:fe".parse().expect("address");
    let solicit = nd(
        vm1.port.mac,
        Mac([0x33, 0x33, 0xff, 0, 0, 0xfe]),
        VM1_IP6,
        group,
        false,
        LR0_SW0_IP6,
    );
    p.send("vm1", &solicit);
    p.expect("the router advertises its own address", "vm1", |f| {
        icmp6_of(f) == Some((136, Some(LR0_SW0_IP6)))
    });
    // The switch answers for vm3's address (`nd_na {}`).
    let vm3_ip6: Ipv6Addr = "fd00::3".parse().expect("address");
    let group: Ipv6Addr = "ff02::1:ff00:3".parse().expect("address");
    let solicit = nd(
        vm1.port.mac,
        Mac([0x33, 0x33, 0xff, 0, 0, 3]),
        VM1_IP6,
        group,
        false,
        vm3_ip6,
    );
    p.send("vm1", &solicit);
    p.expect("the switch advertises vm3's address", "vm1", |f| {
        icmp6_of(f) == Some((136, Some(vm3_ip6)))
    });
    let expiring = icmp6_echo(vm1.port.mac, mac(LR0_SW0_MAC), VM1_IP6, UNKNOWN_HOST6, 1);
    p.send("vm1", &expiring);
    p.expect("hop limit 1: ICMPv6 time exceeded", "vm1", |f| {
        icmp6_of(f).is_some_and(|(t, _)| t == 3)
    });
    let outcome = p.finish(&net.ports());
    let _ = set_ipv6(net, false);
    let _ = net
        .lab
        .central()
        .sbctl(&["--all", "destroy", "MAC_Binding"]);
    let _ = net.lab.central().wait_hv_sync();
    outcome
}

/// A UDP packet from `from` on sw0 to `to`, through lr0 (TTL 64).
fn routed_udp(from: &common::Vm, to: &common::Vm, ports: (u16, u16), payload: &[u8]) -> Vec<u8> {
    udp4(
        from.port.mac,
        mac(LR0_SW0_MAC),
        from.port.ip,
        to.port.ip,
        64,
        ports.0,
        ports.1,
        payload,
    )
}

/// An SCTP INIT from `from` to `to` (through lr0's port on sw0): verification tag 0,
/// initiate tag 0x11223344.
fn sctp_init(from: &common::Vm, to: Ipv4Addr, dport: u16) -> Vec<u8> {
    let mut sctp = Vec::new();
    sctp.extend_from_slice(&5000u16.to_be_bytes());
    sctp.extend_from_slice(&dport.to_be_bytes());
    sctp.extend_from_slice(&[0; 8]);
    sctp.extend_from_slice(&[1, 0, 0, 20]);
    sctp.extend_from_slice(&[0x11, 0x22, 0x33, 0x44, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1]);
    let crc = agent::pinctrl::packet::crc32c(&sctp);
    sctp[8..12].copy_from_slice(&crc.to_le_bytes());
    let b = PacketBuilder::ethernet2(from.port.mac.0, mac(LR0_SW0_MAC).0).ipv4(
        from.port.ip.octets(),
        to.octets(),
        64,
    );
    let mut out = Vec::new();
    b.write(&mut out, etherparse::IpNumber::SCTP, &sctp)
        .expect("SCTP INIT fits in memory");
    out
}

/// An ACL `reject` on SCTP: vm1's INIT to vm2 gets an ABORT back.
fn acl_reject_aborts_sctp(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm2) = (net.vm("vm1"), net.vm("vm2"));
    p.nbctl(&[
        "acl-add",
        "sw1",
        "to-lport",
        "1002",
        "sctp && sctp.dst == 7778",
        "reject",
    ]);
    p.wait_hv("ACL reject on SCTP added");
    p.send("vm1", &sctp_init(vm1, vm2.port.ip, 7778));
    p.expect("the rejected INIT gets an ABORT", "vm1", |f| {
        ipv4_summary(f).is_some_and(|s| s.src == vm2.port.ip)
            && f.len() >= 50
            && f[23] == 132
            && f[46] == 6
    });
    let outcome = p.finish(&net.ports());
    let _ = net.lab.central().nbctl(&["acl-del", "sw1"]);
    let _ = net.lab.central().wait_hv_sync();
    outcome
}

/// The ACL log lines (`acl_log` module) of both chassis's controllers, from the text after
/// the level on: timestamps and sequence numbers differ between runs. The number after the
/// thread name differs too: OVS numbers threads in creation order over the whole process,
/// and whether ovn-controller's pinctrl thread is `ovn_pinctrl0` or `ovn_pinctrl1` depends on
/// which of its threads started first (seen both ways), so it is compared as `ovn_pinctrlN`;
/// log parsers (ovn-kubernetes) match the module and the text, not that digit.
fn acl_log_lines(net: &Net) -> Vec<String> {
    ["hv1", "hv2"]
        .iter()
        .flat_map(|c| {
            common::controller_log(net, c)
                .lines()
                .filter(|l| l.contains("|acl_log"))
                .map(|l| {
                    let module = without_thread_number(l.split('|').nth(2).unwrap_or_default());
                    let text = l.splitn(5, '|').nth(4).unwrap_or_default().to_owned();
                    format!("{c} {module} {text}")
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `acl_log(ovn_pinctrl1)` as `acl_log(ovn_pinctrlN)`; a module without a thread name as is.
fn without_thread_number(module: &str) -> String {
    match module.strip_suffix(')').and_then(|m| m.split_once('(')) {
        Some((name, thread)) if thread.ends_with(|c: char| c.is_ascii_digit()) => {
            format!(
                "{name}({}N)",
                thread.trim_end_matches(|c: char| c.is_ascii_digit())
            )
        }
        _ => module.to_owned(),
    }
}

/// Waits up to 5 s for at least `n` ACL log lines ([`acl_log_lines`]); returns them all.
fn wait_acl_log_lines(net: &Net, n: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut lines = acl_log_lines(net);
    while lines.len() < n && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        lines = acl_log_lines(net);
    }
    lines
}

/// An allow ACL with logging on sw1: the controller that runs sw1's egress pipeline logs
/// each packet it lets through, in the same words: vm1's UDP and TCP to vm2 (hv2), vm1's
/// UDP over IPv6 to vm5 (hv1, with IPv6 on), and vm5's ARP reply to vm2 (hv2).
fn acl_log_lines_match(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm2, vm5) = (net.vm("vm1"), net.vm("vm2"), net.vm("vm5"));
    let before = acl_log_lines(net).len();
    p.nbctl(&[
        "--log",
        "--severity=warning",
        "--name=np1",
        "acl-add",
        "sw1",
        "to-lport",
        "1002",
        "udp.dst == 7779 || tcp.dst == 7780 || (arp.op == 2 && arp.tpa == 10.0.1.2)",
        "allow",
    ]);
    p.wait_hv("ACL with log added");
    let udp = routed_udp(vm1, vm2, (40003, 7779), b"logged");
    p.send("vm1", &udp);
    p.expect("the logged UDP reaches vm2", "vm2", |f| {
        ipv4_summary(f).is_some_and(|s| s.udp_dst() == Some(7779))
    });
    let syn = tcp4(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        vm2.port.ip,
        64,
        40004,
        7780,
        77,
        TcpFlags::Syn,
    );
    p.send("vm1", &syn);
    p.expect("the logged SYN reaches vm2", "vm2", |f| {
        ipv4_summary(f).is_some_and(|s| matches!(s.l4, L4::Tcp { dst: 7780, .. }))
    });
    // One packet at a time, each after the previous one's line: the lines of two chassis
    // are read chassis by chassis, so only their order within a chassis means anything.
    wait_acl_log_lines(net, before + 2);
    p.check("turn on IPv6", set_ipv6(net, true));
    let udp6 = {
        let b = PacketBuilder::ethernet2(vm1.port.mac.0, mac(LR0_SW0_MAC).0)
            .ipv6(VM1_IP6.octets(), VM5_IP6.octets(), 64)
            .udp(40006, 7779);
        let payload = b"logged over IPv6";
        let mut out = Vec::with_capacity(b.size(payload.len()));
        b.write(&mut out, payload).expect("UDP fits in memory");
        out
    };
    p.send("vm1", &udp6);
    p.expect("the logged UDP over IPv6 reaches vm5", "vm5", |f| {
        SlicedPacket::from_ethernet(f).is_ok_and(
            |s| matches!(s.transport, Some(TransportSlice::Udp(u)) if u.destination_port() == 7779),
        )
    });
    wait_acl_log_lines(net, before + 3);
    let arp = integration::packet::arp_reply(vm5.port.mac, vm5.port.ip, vm2.port.mac, vm2.port.ip);
    p.send("vm5", &arp);
    p.expect_exact("the logged ARP reply reaches vm2", "vm2", &arp);
    let lines = wait_acl_log_lines(net, before + 4);
    let new: Vec<String> = lines.into_iter().skip(before).collect();
    if new.len() != 4 {
        p.fail(format!("four ACL log lines expected, got {new:?}"));
    }
    p.fact("ACL log lines", new.join("\n"));
    let outcome = p.finish(&net.ports());
    let _ = net.lab.central().nbctl(&["acl-del", "sw1"]);
    let _ = set_ipv6(net, false);
    outcome
}

/// vm3's port takes unknown addresses: a frame from a new MAC behind it creates an FDB row,
/// and frames to that MAC then go to vm3.
/// `mac dp_key port_key` rows of the FDB as `mac <logical port>`.
fn fdb_by_port_name(net: &Net, rows: &str) -> String {
    let central = net.lab.central();
    let find = |args: &[&str]| central.sbctl(args).unwrap_or_default().trim().to_owned();
    let words: Vec<&str> = rows.split_whitespace().collect();
    words
        .chunks(3)
        .map(|row| match row {
            [mac, dp_key, port_key] => {
                let dp = find(&[
                    "--bare",
                    "--columns=_uuid",
                    "find",
                    "Datapath_Binding",
                    &format!("tunnel_key={dp_key}"),
                ]);
                let port = find(&[
                    "--bare",
                    "--columns=logical_port",
                    "find",
                    "Port_Binding",
                    &format!("tunnel_key={port_key}"),
                    &format!("datapath={dp}"),
                ]);
                format!("{mac} {port}")
            }
            other => other.join(" "),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn put_fdb_learns_a_mac_behind_a_port(net: &Net) -> Outcome {
    let mut p = net.probe();
    let vm1 = net.vm("vm1");
    p.nbctl(&[
        "lsp-set-addresses",
        "vm3",
        "50:54:00:00:00:03 10.0.0.3",
        "unknown",
    ]);
    p.wait_hv("vm3 takes unknown addresses");
    let behind = Mac([0x50, 0x54, 0, 0, 0, 0x33]);
    let behind_ip = Ipv4Addr::new(10, 0, 0, 33);
    let from_behind = udp4(
        behind,
        vm1.port.mac,
        behind_ip,
        vm1.port.ip,
        64,
        40005,
        7781,
        b"from behind vm3",
    );
    p.send("vm3", &from_behind);
    p.expect_exact("the frame from behind vm3 reaches vm1", "vm1", &from_behind);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut rows = String::new();
    while rows.trim().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        rows = net
            .lab
            .central()
            .sbctl(&["--bare", "--columns=mac,dp_key,port_key", "list", "FDB"])
            .unwrap_or_default();
    }
    if rows.trim().is_empty() {
        p.fail("no FDB row within 5 s");
    }
    // By port name: northd numbers the ports of each lab in the order it happens to see
    // them, so the keys may differ between the two controllers' labs.
    p.fact("FDB", fdb_by_port_name(net, &rows));
    p.wait_hv("the FDB row is in the flows");
    let to_behind = udp4(
        vm1.port.mac,
        behind,
        vm1.port.ip,
        behind_ip,
        64,
        7781,
        40005,
        b"to behind vm3",
    );
    p.send("vm1", &to_behind);
    p.expect_exact("a frame to the learnt MAC goes to vm3", "vm3", &to_behind);
    let outcome = p.finish(&net.ports());
    let _ = net
        .lab
        .central()
        .nbctl(&["lsp-set-addresses", "vm3", "50:54:00:00:00:03 10.0.0.3"]);
    let _ = net.lab.central().sbctl(&["--all", "destroy", "FDB"]);
    let _ = net.lab.central().wait_hv_sync();
    outcome
}

/// `inject-pkt` with a microflow from vm1 to vm2: the router forwards it (TTL 63) to vm2
/// with the 64-byte payload OVS composes; a microflow whose inport is not on the chassis
/// and an ambiguous one are refused, in the same words.
fn inject_pkt_sends_a_microflow(net: &Net) -> Outcome {
    let mut p = net.probe();
    let (vm1, vm2) = (net.vm("vm1"), net.vm("vm2"));
    let microflow = format!(
        "inport == \"vm1\" && eth.src == {} && eth.dst == {LR0_SW0_MAC} && ip4.src == {} \
         && ip4.dst == {} && ip.ttl == 64 && udp.src == 5000 && udp.dst == 7801",
        vm1.port.mac, vm1.port.ip, vm2.port.ip
    );
    let appctl = |args: &[&str]| {
        net.lab
            .chassis("hv1")
            .and_then(|c| c.controller_appctl(args))
            .map_err(|e| e.to_string())
    };
    let sent = appctl(&["inject-pkt", &microflow]);
    p.fact("inject-pkt reply", format!("{sent:?}"));
    p.expect("the injected UDP reaches vm2, routed", "vm2", |f| {
        ipv4_summary(f).is_some_and(|s| s.udp_dst() == Some(7801) && s.ttl == 63)
    });
    for (what, bad) in [
        ("elsewhere", "inport == \"vm2\" && ip4 && ip.ttl == 64"),
        ("ambiguous", "inport == \"vm1\" && (tcp || udp)"),
    ] {
        let reply = appctl(&["inject-pkt", bad]);
        if reply.is_ok() {
            p.fail(format!("inject-pkt {bad}: accepted"));
        }
        // The controller's words, after the harness's "ovn-appctl [...] failed (...): ".
        // For an ambiguous microflow ovn-controller also prints the expression with its
        // prerequisites spelled out, which ovn-agent does not (it repeats the input): only
        // the sentence before the colon is compared.
        let reply = reply.err().unwrap_or_default();
        let words = reply.split_once("): ").map_or(reply.as_str(), |(_, w)| w);
        let words = words
            .split_once(": ")
            .map_or(words, |(sentence, _)| sentence);
        p.fact(&format!("inject-pkt {what} refused"), words.trim());
    }
    p.finish(&net.ports())
}

const SCENARIOS: &[Scenario] = &[
    (
        "arp resolves an unknown next hop",
        arp_resolves_an_unknown_next_hop,
    ),
    ("ttl 1 gets time exceeded", ttl_expired_gets_time_exceeded),
    (
        "router answers udp, tcp and sctp to itself",
        router_answers_udp_tcp_and_sctp_to_itself,
    ),
    (
        "acl reject answers the sender",
        acl_reject_answers_the_sender,
    ),
    (
        "nd resolves an unknown next hop",
        nd_resolves_an_unknown_next_hop,
    ),
    ("acl reject aborts sctp", acl_reject_aborts_sctp),
    ("acl log lines match", acl_log_lines_match),
    (
        "put_fdb learns a mac behind a port",
        put_fdb_learns_a_mac_behind_a_port,
    ),
    ("inject-pkt sends a microflow", inject_pkt_sends_a_microflow),
];

/// Prints each chassis's packet-in count and, for ovn-agent, `pinctrl/show-stats`.
fn print_stats(nets: &[Net], chassis_list: &[&str]) {
    for net in nets {
        for chassis in chassis_list {
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
}

#[test]
fn pinctrl_matches_ovn_controller() {
    let setups = Setup::oracle_and_agent(&["hv1", "hv2"]);
    let (nets, report) = common::run_all(
        &setups,
        |s| two_switches_one_router(s, &["hv1", "hv2"]),
        SCENARIOS,
    );
    print_stats(&nets, &["hv1", "hv2"]);
    common::conclude_healthy(nets, &report);
}

// ---- gateway MTU: icmp4_error with icmp4.frag_mtu (pause and resume) --------------------

const GATEWAY: SnatGateway = SnatGateway::LAB;
const GATEWAY_MTU: u16 = 1300;

/// The shared topology plus lr0's distributed gateway port on hv3, with
/// `gateway_mtu=1300` on it.
fn gateway_topology(setup: &Setup) -> Result<Net> {
    let net = common::gateway_lab(setup)?;
    let mtu = format!("options:gateway_mtu={GATEWAY_MTU}");
    net.lab
        .central()
        .nbctl(&["set", "Logical_Router_Port", "lr0-public", &mtu])?;
    net.lab.central().wait_hv_sync()?;
    Ok(net)
}

/// A 1400-byte ping toward the gateway with DF set: the router answers "fragmentation
/// needed" with the next-hop MTU of the gateway port, and the ping does not leave.
fn too_big_for_the_gateway(net: &Net) -> Outcome {
    let mut p = net.probe();
    let vm1 = net.vm("vm1");
    let ping = icmp4_echo(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        GATEWAY.host_ip,
        64,
        1400,
    );
    p.send("vm1", &ping);
    let err = p.expect("vm1 gets ICMP fragmentation needed", "vm1", |f| {
        is_icmp(f, 3, 4)
    });
    if let Some(e) = err {
        let mtu = e.get(40..42).map(|m| u16::from_be_bytes([m[0], m[1]]));
        p.fact("next-hop MTU", format!("{mtu:?}"));
    }
    let small = icmp4_echo(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        GATEWAY.host_ip,
        64,
        100,
    );
    p.send("vm1", &small);
    p.expect(
        "a small ping still leaves through the gateway",
        "ext-host",
        |f| ipv4_summary(f).is_some_and(|s| s.icmp_echo_request && s.dst == GATEWAY.host_ip),
    );
    p.finish(&net.ports())
}

/// The external host's IPv6 address (behind lr0-public, `fd02::1/64` while IPv6 is on).
const GATEWAY_HOST6: Ipv6Addr = Ipv6Addr::new(0xfd02, 0, 0, 0, 0, 0, 0, 0x100);

/// IPv6 on the gateway topology: sw0's and sw1's router ports and VMs ([`set_ipv6`]),
/// `fd02::1/64` on lr0-public and a static MAC binding for the external host's
/// [`GATEWAY_HOST6`] (as the IPv4 side has for its address).
fn set_gateway_ipv6(net: &Net, on: bool) -> Result<()> {
    let c = net.lab.central();
    let host = GATEWAY_HOST6.to_string();
    if on {
        c.nbctl(&[
            "set",
            "Logical_Router_Port",
            "lr0-public",
            &format!(r#"networks="{}/24","fd02::1/64""#, GATEWAY.router_ip),
        ])?;
        c.nbctl(&[
            "static-mac-binding-add",
            "lr0-public",
            &host,
            &GATEWAY.host_mac.to_string(),
        ])?;
    } else {
        c.nbctl(&["static-mac-binding-del", "lr0-public", &host])?;
        c.nbctl(&[
            "set",
            "Logical_Router_Port",
            "lr0-public",
            &format!(r#"networks="{}/24""#, GATEWAY.router_ip),
        ])?;
    }
    set_ipv6(net, on)
}

/// The IPv6 side of [`too_big_for_the_gateway`]: a 1400-byte ICMPv6 echo from vm1 toward
/// the external host gets "packet too big" (`icmp6_error` with `icmp6.frag_mtu`) from
/// sw0's router address with the gateway port's MTU, and does not leave; a small one does.
fn too_big_for_the_gateway_v6(net: &Net) -> Outcome {
    let mut p = net.probe();
    p.check("turn on IPv6", set_gateway_ipv6(net, true));
    let vm1 = net.vm("vm1");
    let ping = icmp6_echo_sized(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        (VM1_IP6, GATEWAY_HOST6),
        64,
        1400,
    );
    p.send("vm1", &ping);
    let err = p.expect("vm1 gets ICMPv6 packet too big", "vm1", |f| {
        icmp6_of(f).is_some_and(|(t, _)| t == 2)
    });
    if let Some(e) = err {
        // Ethernet 14 + IPv6 40 + type, code, checksum 4: the MTU is at 58..62.
        let mtu = e
            .get(58..62)
            .and_then(|m| <[u8; 4]>::try_from(m).ok())
            .map(u32::from_be_bytes);
        p.fact("packet too big MTU", format!("{mtu:?}"));
        p.fact("packet too big length", e.len().to_string());
    }
    p.refute_on("the big ping does not leave", "ext-host", |f| {
        icmp6_of(f).is_some_and(|(t, _)| t == 128) && f.len() > 1000
    });
    let small = icmp6_echo_sized(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        (VM1_IP6, GATEWAY_HOST6),
        64,
        100,
    );
    p.send("vm1", &small);
    p.expect(
        "a small ping still leaves through the gateway",
        "ext-host",
        |f| icmp6_of(f).is_some_and(|(t, _)| t == 128),
    );
    let outcome = p.finish(&net.ports());
    let _ = set_gateway_ipv6(net, false);
    outcome
}

#[test]
fn pinctrl_frag_mtu_matches_ovn_controller() {
    let setups = Setup::oracle_and_agent(&["hv1", "hv2", "hv3"]);
    let scenarios: &[Scenario] = &[
        ("too big for the gateway", too_big_for_the_gateway),
        ("too big for the gateway (IPv6)", too_big_for_the_gateway_v6),
    ];
    let (nets, report) = common::run_all(&setups, gateway_topology, scenarios);
    print_stats(&nets, &["hv1", "hv3"]);
    common::conclude_healthy(nets, &report);
}
