//! pinctrl's DNS answers and IPv6 router advertisements against the real ovn-controller,
//! in the same run (issue 11): `dns_lookup` for A, AAAA, ANY and PTR queries (and the
//! queries it leaves unanswered), `put_nd_ra_opts` for a router solicitation, and the
//! periodic RAs of `ipv6_ra_configs:send_periodic`. Every packet out of every VIF is
//! compared byte for byte with the oracle's; the periodic RAs, which come at random times,
//! are compared as facts (their bytes, and that they keep the configured interval).

mod common;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use etherparse::{PacketBuilder, SlicedPacket, TransportSlice};

use common::{mac, two_switches_one_router, Net, Scenario, Setup, LR0_SW0_MAC};
use integration::observe::Outcome;
use integration::packet::{ipv4_summary, udp4, Mac, L4};
use integration::Result;

const ROUTER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 254);
const VM1_IP6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1);
const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);
const DNS_SERVER6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 0x53);
/// The records of sw0's DNS row (northd lowercases the names).
const RECORDS: &str = r#"records={"vm1.ovn.org"="10.0.0.1 fd00::1 fd00::11", "vm3.ovn.org"="10.0.0.3", "1.0.0.10.in-addr.arpa"="vm1.ovn.org"}"#;
/// sw0's router port with IPv6, and its RA configuration.
const RA_CONFIGS: [&str; 6] = [
    "ipv6_ra_configs:address_mode=dhcpv6_stateless",
    "ipv6_ra_configs:mtu=1400",
    "ipv6_ra_configs:rdnss=fd00::53",
    r#"ipv6_ra_configs:dnssl="ovn.org,lab.example""#,
    r#"ipv6_ra_configs:route_info="HIGH-fd05::/64,LOW-fd06::/48""#,
    "ipv6_ra_configs:router_preference=HIGH",
];

/// A DNS query for `name` of type `qtype`, with `additional` empty additional records
/// (an EDNS OPT record when 1).
fn dns_query(id: u16, name: &str, qtype: u16, additional: u16) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    // Standard query, recursion desired; one question.
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0]);
    q.extend_from_slice(&additional.to_be_bytes());
    for label in name.split('.') {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&1u16.to_be_bytes());
    if additional == 1 {
        // OPT: root name, type 41, UDP size 4096, no flags, no data.
        q.extend_from_slice(&[0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0]);
    }
    q
}

/// The DNS message of a UDP reply from port 53 to `port`, over IPv4 or IPv6.
fn dns_reply_to(frame: &[u8], port: u16) -> Option<Vec<u8>> {
    let p = SlicedPacket::from_ethernet(frame).ok()?;
    let Some(TransportSlice::Udp(udp)) = p.transport else {
        return None;
    };
    (udp.source_port() == 53 && udp.destination_port() == port).then(|| udp.payload().to_vec())
}

/// DNS id, whether it is a response, and the answer count.
fn dns_header(m: &[u8]) -> Option<(u16, bool, u16)> {
    let h = m.get(..12)?;
    Some((
        u16::from_be_bytes([h[0], h[1]]),
        h[2] & 0x80 != 0,
        u16::from_be_bytes([h[6], h[7]]),
    ))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn dns4(net: &Net, sport: u16, query: &[u8]) -> Vec<u8> {
    let vm1 = net.vm("vm1");
    udp4(
        vm1.port.mac,
        mac(LR0_SW0_MAC),
        vm1.port.ip,
        ROUTER_IP,
        64,
        sport,
        53,
        query,
    )
}

fn dns6(net: &Net, sport: u16, query: &[u8]) -> Vec<u8> {
    let vm1 = net.vm("vm1");
    let b = PacketBuilder::ethernet2(vm1.port.mac.0, mac(LR0_SW0_MAC).0)
        .ipv6(VM1_IP6.octets(), DNS_SERVER6.octets(), 64)
        .udp(sport, 53);
    let mut out = Vec::with_capacity(b.size(query.len()));
    b.write(&mut out, query)
        .expect("UDP datagram fits in memory");
    out
}

fn is_port_unreachable(f: &[u8]) -> bool {
    ipv4_summary(f).is_some_and(|s| {
        matches!(
            s.l4,
            L4::Icmp {
                icmp_type: 3,
                code: 3
            }
        )
    })
}

/// vm1 asks sw0's DNS: A, AAAA (in capitals: names match without case), ANY and PTR get
/// answers sent back to vm1, also over IPv6; an unknown name, a query with an EDNS record
/// and an MX query get none, and go on to the router, which answers port unreachable.
fn dns_answers_from_the_dns_table(net: &Net) -> Outcome {
    let mut p = net.probe();
    // (id, name, type, answers, bytes in an answer)
    let answered: [(u16, &str, u16, u16, &[u8]); 4] = [
        (0x1001, "vm1.ovn.org", 1, 1, &[10, 0, 0, 1]),
        (0x1002, "VM1.OVN.ORG", 28, 2, &VM1_IP6.octets()),
        (0x1003, "vm1.ovn.org", 255, 3, &[10, 0, 0, 1]),
        (
            0x1004,
            "1.0.0.10.in-addr.arpa",
            12,
            1,
            b"\x03vm1\x03ovn\x03org\x00",
        ),
    ];
    for (i, (id, name, qtype, answers, rdata)) in answered.iter().enumerate() {
        let sport = 41000 + i as u16;
        p.send("vm1", &dns4(net, sport, &dns_query(*id, name, *qtype, 0)));
        let reply = p.expect(&format!("{name} type {qtype} is answered"), "vm1", |f| {
            dns_reply_to(f, sport).is_some()
        });
        let Some(m) = reply.as_deref().and_then(|f| dns_reply_to(f, sport)) else {
            continue;
        };
        if dns_header(&m) != Some((*id, true, *answers)) || !contains(&m, rdata) {
            p.fail(format!(
                "{name} type {qtype}: expected {answers} answer(s) with {rdata:02x?}, got {}",
                hex::encode(&m)
            ));
        }
    }
    let sport = 41010;
    p.send(
        "vm1",
        &dns6(net, sport, &dns_query(0x1010, "vm3.ovn.org", 1, 0)),
    );
    p.expect("an A query over IPv6 is answered", "vm1", |f| {
        dns_reply_to(f, sport).is_some_and(|m| {
            dns_header(&m) == Some((0x1010, true, 1)) && contains(&m, &[10, 0, 0, 3])
        })
    });
    // A query with an EDNS record: answered (header, question and answer only) by the
    // releases that do, left to the router by 23.03.
    let sport = 41011;
    p.send(
        "vm1",
        &dns4(net, sport, &dns_query(0x1011, "vm1.ovn.org", 1, 1)),
    );
    if integration::stack::Stack::current().dns_answers_edns() {
        p.expect("an A query with an EDNS record is answered", "vm1", |f| {
            dns_reply_to(f, sport).is_some_and(|m| {
                dns_header(&m) == Some((0x1011, true, 1))
                    && contains(&m, &[10, 0, 0, 1])
                    && m[10..12] == [0, 0]
            })
        });
    } else {
        p.expect(
            "vm1.ovn.org type 1 (additional 1) goes on to the router",
            "vm1",
            |f| is_port_unreachable(f) && contains(f, &sport.to_be_bytes()),
        );
    }
    let unanswered: [(u16, &str, u16, u16); 2] = [
        (0x1020, "nobody.ovn.org", 1, 0),
        (0x1022, "vm1.ovn.org", 15, 0),
    ];
    for (i, (id, name, qtype, additional)) in unanswered.iter().enumerate() {
        let sport = 41020 + i as u16;
        p.send(
            "vm1",
            &dns4(net, sport, &dns_query(*id, name, *qtype, *additional)),
        );
        p.expect(
            &format!("{name} type {qtype} (additional {additional}) goes on to the router"),
            "vm1",
            |f| is_port_unreachable(f) && contains(f, &sport.to_be_bytes()),
        );
    }
    p.refute("no DNS reply for the unanswered queries", |f| {
        (41020..41022).any(|port| dns_reply_to(f, port).is_some())
    });
    let mut outcome = p.finish(&net.ports());
    if integration::stack::Stack::current().dns_shuffles() {
        // Each controller answers in its own random order: compare the answers as a set.
        for frames in outcome.observation.packets.values_mut() {
            for f in frames.iter_mut() {
                if let Some(canonical) = answers_sorted(f) {
                    *f = canonical;
                }
            }
            frames.sort();
        }
    }
    outcome
}

/// A DNS reply (from port 53) with its answer records sorted and its UDP checksum cleared,
/// or `None` for any other frame. Names are plain labels or 2-byte pointers.
fn answers_sorted(frame: &[u8]) -> Option<Vec<u8>> {
    let p = SlicedPacket::from_ethernet(frame).ok()?;
    let Some(TransportSlice::Udp(udp)) = p.transport else {
        return None;
    };
    if udp.source_port() != 53 {
        return None;
    }
    let payload = udp.payload();
    let dns_at = payload.as_ptr() as usize - frame.as_ptr() as usize;
    let m = payload;
    let (_, true, ancount) = dns_header(m)? else {
        return None;
    };
    let skip_name = |mut at: usize| -> Option<usize> {
        loop {
            let len = *m.get(at)?;
            if len & 0xc0 == 0xc0 {
                return Some(at + 2);
            }
            at += 1 + usize::from(len);
            if len == 0 {
                return Some(at);
            }
        }
    };
    let answers_at = skip_name(12)? + 4;
    let mut at = answers_at;
    let mut records = Vec::new();
    for _ in 0..ancount {
        let fixed = skip_name(at)?;
        let rdlen = usize::from(u16::from_be_bytes([*m.get(fixed + 8)?, *m.get(fixed + 9)?]));
        let end = fixed + 10 + rdlen;
        records.push(m.get(at..end)?.to_vec());
        at = end;
    }
    records.sort();
    let mut out = frame.to_vec();
    let mut w = dns_at + answers_at;
    for r in records {
        out[w..w + r.len()].copy_from_slice(&r);
        w += r.len();
    }
    out[dns_at - 2..dns_at].fill(0);
    Some(out)
}

/// A router solicitation from vm1's link-local address.
fn router_solicitation(src: Mac) -> Vec<u8> {
    let lla = link_local(src);
    let b = PacketBuilder::ethernet2(src.0, [0x33, 0x33, 0, 0, 0, 2])
        .ipv6(lla.octets(), ALL_ROUTERS.octets(), 255)
        .icmpv6(etherparse::Icmpv6Type::Unknown {
            type_u8: 133,
            code_u8: 0,
            bytes5to8: [0; 4],
        });
    let mut body = vec![1, 1];
    body.extend_from_slice(&src.0);
    let mut out = Vec::with_capacity(b.size(body.len()));
    b.write(&mut out, &body).expect("RS fits in memory");
    out
}

fn link_local(m: Mac) -> Ipv6Addr {
    let m = m.0;
    Ipv6Addr::from([
        0xfe,
        0x80,
        0,
        0,
        0,
        0,
        0,
        0,
        m[0] ^ 2,
        m[1],
        m[2],
        0xff,
        0xfe,
        m[3],
        m[4],
        m[5],
    ])
}

/// The ICMPv6 body of a router advertisement.
fn ra_body(frame: &[u8]) -> Option<Vec<u8>> {
    let p = SlicedPacket::from_ethernet(frame).ok()?;
    let Some(TransportSlice::Icmpv6(icmp)) = p.transport else {
        return None;
    };
    (icmp.type_u8() == 134).then(|| icmp.slice().to_vec())
}

/// What an RA of sw0's router port must say: the router preference and O flag, MTU 1400,
/// prefix fd00::/64 on-link and autonomous, the DNS server, the search list and the two
/// routes.
fn check_ra(p: &mut integration::observe::Probe<'_>, what: &str, ra: &[u8]) {
    let needles: [(&str, &[u8]); 6] = [
        ("MTU option", &[5, 1, 0, 0, 0, 0, 0x05, 0x78]),
        (
            "prefix option",
            &[
                3, 4, 64, 0xc0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xfd, 0,
            ],
        ),
        (
            "RDNSS option",
            &[25, 3, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xfd, 0],
        ),
        ("DNSSL option", b"\x03ovn\x03org\x00\x03lab\x07example\x00"),
        (
            "HIGH route",
            &[24, 2, 64, 0x08, 0xff, 0xff, 0xff, 0xff, 0xfd, 0x05],
        ),
        (
            "LOW route",
            &[24, 2, 48, 0x18, 0xff, 0xff, 0xff, 0xff, 0xfd, 0x06],
        ),
    ];
    // Managed 0, other 1, preference HIGH.
    if ra.get(5) != Some(&0x48) {
        p.fail(format!("{what}: flags {:02x?}, expected 0x48", ra.get(5)));
    }
    for (name, needle) in needles {
        if !contains(ra, needle) {
            p.fail(format!("{what}: no {name} in {}", hex::encode(ra)));
        }
    }
}

/// vm1 solicits: lr0 answers with the RA its `ipv6_ra_configs` describe, from its
/// link-local address to vm1's.
fn solicitation_gets_an_advertisement(net: &Net) -> Outcome {
    let mut p = net.probe();
    let vm1 = net.vm("vm1");
    p.send("vm1", &router_solicitation(vm1.port.mac));
    let ra = p.expect("the router advertises to vm1", "vm1", |f| {
        ra_body(f).is_some() && f[..6] == vm1.port.mac.0
    });
    if let Some(body) = ra.as_deref().and_then(ra_body) {
        check_ra(&mut p, "solicited RA", &body);
    }
    p.finish(&net.ports())
}

/// Router advertisements seen on `vifs` since `marks`, with when they were first seen.
fn collect_ras(net: &Net, vifs: &[&str], marks: &[usize], seen: &mut [Vec<(Instant, Vec<u8>)>]) {
    for (i, vif) in vifs.iter().enumerate() {
        let Ok(all) = net.vm(vif).vif.transmitted() else {
            continue;
        };
        let ras: Vec<Vec<u8>> = all
            .into_iter()
            .skip(marks[i])
            .filter(|f| ra_body(f).is_some())
            .collect();
        for ra in ras.into_iter().skip(seen[i].len()) {
            seen[i].push((Instant::now(), ra));
        }
    }
}

/// With `send_periodic=true` and 3-4 s intervals, each chassis advertises on its own ports
/// of sw0 (vm1 on hv1, vm3 on hv2) to all nodes: the same RA as solicited but for its
/// destination, every 3 to 4 seconds.
fn periodic_advertisements(net: &Net) -> Outcome {
    let vifs = ["vm1", "vm3"];
    let marks: Vec<usize> = vifs
        .iter()
        .map(|v| net.vm(v).vif.transmitted().map_or(0, |p| p.len()))
        .collect();
    let c = net.lab.central();
    let enabled = c
        .nbctl(&[
            "set",
            "Logical_Router_Port",
            "lr0-sw0",
            "ipv6_ra_configs:send_periodic=true",
            "ipv6_ra_configs:min_interval=3",
            "ipv6_ra_configs:max_interval=4",
        ])
        .and_then(|_| c.wait_hv_sync());
    let mut seen: Vec<Vec<(Instant, Vec<u8>)>> = vec![Vec::new(); vifs.len()];
    let deadline = Instant::now() + Duration::from_secs(12);
    while Instant::now() < deadline && (seen[0].len() < 2 || seen[1].is_empty()) {
        std::thread::sleep(Duration::from_millis(25));
        collect_ras(net, &vifs, &marks, &mut seen);
    }
    let disabled = c
        .nbctl(&[
            "remove",
            "Logical_Router_Port",
            "lr0-sw0",
            "ipv6_ra_configs",
            "send_periodic",
        ])
        .and_then(|_| c.wait_hv_sync());
    // Whatever was already on its way.
    std::thread::sleep(Duration::from_millis(300));
    let mut p = net.probe();
    p.check("enable periodic RAs", enabled);
    p.check("disable periodic RAs", disabled);
    let mut all_nodes = [0x33, 0x33, 0, 0, 0, 1].to_vec();
    all_nodes.extend_from_slice(&mac(LR0_SW0_MAC).0);
    for (i, vif) in vifs.iter().enumerate() {
        let Some((_, first)) = seen[i].first() else {
            p.fail(format!("no periodic RA on {vif} within 12 s"));
            continue;
        };
        if first[..12] != all_nodes[..] {
            p.fail(format!(
                "{vif}: not from the router to all nodes: {}",
                hex::encode(first)
            ));
        }
        if let Some(body) = ra_body(first) {
            check_ra(&mut p, &format!("periodic RA on {vif}"), &body);
        }
        p.fact(&format!("periodic RA on {vif}"), hex::encode(first));
    }
    match seen[0].as_slice() {
        [(t1, a), (t2, b), ..] => {
            let gap = t2.duration_since(*t1).as_secs_f64();
            p.fact(
                "vm1: second RA 3 to 4 s after the first, the same bytes",
                ((2.8..=4.4).contains(&gap) && a == b).to_string(),
            );
            if !(2.8..=4.4).contains(&gap) {
                p.fail(format!("vm1: RAs {gap:.2} s apart"));
            }
        }
        _ => p.fail("vm1: fewer than two periodic RAs within 12 s"),
    }
    // After send_periodic is gone, no more: the next scenarios' captures stay clean.
    let quiet_marks: Vec<usize> = vifs
        .iter()
        .map(|v| net.vm(v).vif.transmitted().map_or(0, |p| p.len()))
        .collect();
    std::thread::sleep(Duration::from_secs(4));
    let mut after = vec![Vec::new(); vifs.len()];
    collect_ras(net, &vifs, &quiet_marks, &mut after);
    if after.iter().any(|a| !a.is_empty()) {
        p.fail("periodic RAs go on after send_periodic was removed");
    }
    p.finish(&net.ports())
}

/// The shared topology, with a DNS row on sw0 and IPv6 with RA options on lr0-sw0.
fn topology(setup: &Setup) -> Result<Net> {
    let net = two_switches_one_router(setup, &["hv1", "hv2"])?;
    let c = net.lab.central();
    let dns = c.nbctl(&["create", "DNS", RECORDS])?;
    c.nbctl(&["add", "Logical_Switch", "sw0", "dns_records", dns.trim()])?;
    c.nbctl(&[
        "set",
        "Logical_Router_Port",
        "lr0-sw0",
        r#"networks="10.0.0.254/24","fd00::fe/64""#,
    ])?;
    let mut args = vec!["set", "Logical_Router_Port", "lr0-sw0"];
    args.extend(RA_CONFIGS);
    c.nbctl(&args)?;
    c.wait_hv_sync()?;
    Ok(net)
}

const SCENARIOS: &[Scenario] = &[
    (
        "dns answers from the dns table",
        dns_answers_from_the_dns_table,
    ),
    (
        "solicitation gets an advertisement",
        solicitation_gets_an_advertisement,
    ),
    ("periodic advertisements", periodic_advertisements),
];

#[test]
fn dns_and_router_advertisements_match_ovn_controller() {
    let setups = Setup::oracle_and_agent(&["hv1", "hv2"]);
    let (nets, report) = common::run_all(&setups, topology, SCENARIOS);
    for net in &nets {
        if net.setup.label != common::ORACLE {
            for chassis in ["hv1", "hv2"] {
                let stats = net
                    .lab
                    .chassis(chassis)
                    .and_then(|c| c.controller_appctl(&["pinctrl/show-stats"]))
                    .unwrap_or_default();
                eprintln!("[{}] {chassis}:\n{stats}", net.setup.label);
            }
        }
    }
    common::conclude_healthy(nets, &report);
}
