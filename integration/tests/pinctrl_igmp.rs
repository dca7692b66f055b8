//! IGMP / MLD snooping and the querier against the real ovn-controller, in the same run
//! (issue 11): a switch with `mcast_snoop=true` and the querier on, two VIFs on one
//! chassis. VMs send IGMPv2 and IGMPv3 joins and an MLDv2 report, then an IGMPv2 leave
//! and an IGMPv3 TO_IN {} leave; the `IGMP_Group` rows (address, ports by name, chassis)
//! must be the same with both controllers at every step, and go when snooping is turned
//! off. The periodic IGMP and MLD general queries captured on a VIF must be the same
//! bytes. A second scenario learns a router port from a VM's query (flooded to the other
//! VM, and reports forwarded to it), fills a table of 10 groups and lets them age out; a
//! third restarts the controller (the stale group rows go) and stops it with `exit` (all
//! of the chassis's rows go).
//!
//! Intended difference (a 23.03.1 bug, DESIGN "The oracle"): ovn-controller sends the
//! MLD query to 33:33:00:00:00:00, ovn-agent to 33:33:00:00:00:01, the MAC of ff02::1
//! (RFC 2464), which hosts that filter multicast MACs accept; the compared MLD query
//! leaves the destination MAC out, and each controller's MAC is checked on its own.

mod common;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use common::{plug_vms, start_lab, vm_port, Net, Scenario, Setup, ORACLE};
use integration::observe::{is_multicast_query, Outcome, Probe};
use integration::scenario::add_switch;
use integration::Result;

const CHASSIS: [&str; 1] = ["hv1"];
const QUERIER_MAC: &str = "0a:00:00:00:00:fe";
const QUERIER_IP4: &str = "10.0.0.254";
const QUERIER_IP6: &str = "fe80::800:ff:fe00:fe";
const VM1_MAC: [u8; 6] = [0x50, 0x54, 0, 0, 0, 1];
const VM2_MAC: [u8; 6] = [0x50, 0x54, 0, 0, 0, 2];
/// Long enough for two queries 2 s apart, with room to spare.
const TWO_QUERIES: Duration = Duration::from_secs(12);
const ROWS_TIMEOUT: Duration = Duration::from_secs(10);

/// One switch, sw0, with vm1 and vm2 on hv1.
fn topology(setup: &Setup) -> Result<Net> {
    let lab = start_lab(setup, &CHASSIS)?;
    let vm1 = vm_port("vm1", "50:54:00:00:00:01", [10, 0, 0, 1]);
    let vm2 = vm_port("vm2", "50:54:00:00:00:02", [10, 0, 0, 2]);
    add_switch(lab.central(), "sw0", &[vm1.clone(), vm2.clone()])?;
    let vms = plug_vms(&lab, &[(vm1, "hv1"), (vm2, "hv1")])?;
    Ok(Net {
        lab,
        setup: setup.clone(),
        vms,
        extra: Vec::new(),
        routers: BTreeMap::new(),
    })
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn sum16(data: &[u8]) -> u32 {
    data.chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum()
}

/// An IGMP message from `src_mac` / `src` to `dst`, in IPv4 with TTL 1 and a router
/// alert option; the checksums are filled in.
fn igmp(src_mac: [u8; 6], src: Ipv4Addr, dst: Ipv4Addr, mut body: Vec<u8>) -> Vec<u8> {
    let c = fold(sum16(&body));
    body[2..4].copy_from_slice(&c.to_be_bytes());
    let d = dst.octets();
    let mut out = vec![0x01, 0x00, 0x5e, d[1] & 0x7f, d[2], d[3]];
    out.extend_from_slice(&src_mac);
    out.extend_from_slice(&[0x08, 0x00]);
    let mut ip = vec![0x46, 0xc0];
    ip.extend_from_slice(&((24 + body.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0, 0, 1, 2, 0, 0]);
    ip.extend_from_slice(&src.octets());
    ip.extend_from_slice(&d);
    ip.extend_from_slice(&[0x94, 0x04, 0, 0]);
    let c = fold(sum16(&ip));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&ip);
    out.extend_from_slice(&body);
    out
}

fn igmpv2(kind: u8, group: Ipv4Addr) -> Vec<u8> {
    let mut b = vec![kind, 0, 0, 0];
    b.extend_from_slice(&group.octets());
    b
}

/// An IGMPv3 report with records (type, group), no sources.
fn igmpv3(records: &[(u8, Ipv4Addr)]) -> Vec<u8> {
    let mut b = vec![0x22, 0, 0, 0, 0, 0];
    b.extend_from_slice(&(records.len() as u16).to_be_bytes());
    for (kind, group) in records {
        b.extend_from_slice(&[*kind, 0, 0, 0]);
        b.extend_from_slice(&group.octets());
    }
    b
}

/// An MLDv2 report to ff02::16 with records (type, group), no sources, behind a
/// hop-by-hop router alert.
fn mldv2(src_mac: [u8; 6], src: Ipv6Addr, records: &[(u8, Ipv6Addr)]) -> Vec<u8> {
    let dst: Ipv6Addr = "ff02::16".parse().expect("ip");
    let mut body = vec![143, 0, 0, 0, 0, 0];
    body.extend_from_slice(&(records.len() as u16).to_be_bytes());
    for (kind, group) in records {
        body.extend_from_slice(&[*kind, 0, 0, 0]);
        body.extend_from_slice(&group.octets());
    }
    let len = body.len() as u32;
    let c = fold(sum16(&src.octets()) + sum16(&dst.octets()) + len + 58 + sum16(&body));
    body[2..4].copy_from_slice(&c.to_be_bytes());
    let mut out = vec![0x33, 0x33, 0, 0, 0, 0x16];
    out.extend_from_slice(&src_mac);
    out.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
    out.extend_from_slice(&((8 + body.len()) as u16).to_be_bytes());
    out.extend_from_slice(&[0, 1]);
    out.extend_from_slice(&src.octets());
    out.extend_from_slice(&dst.octets());
    out.extend_from_slice(&[58, 0, 5, 2, 0, 0, 1, 0]);
    out.extend_from_slice(&body);
    out
}

/// `address ports chassis` of every IGMP_Group row, ports and rows sorted by name.
fn igmp_rows(net: &Net) -> Result<Vec<String>> {
    let central = net.lab.central();
    let names = |table: &str, column: &str| -> Result<BTreeMap<String, String>> {
        let out = central.sbctl(&[
            "--format=csv",
            "--data=bare",
            "--no-headings",
            &format!("--columns=_uuid,{column}"),
            "list",
            table,
        ])?;
        Ok(out
            .lines()
            .filter_map(|l| {
                let (u, n) = l.split_once(',')?;
                Some((u.to_owned(), n.trim_matches('"').to_owned()))
            })
            .collect())
    };
    let ports = names("Port_Binding", "logical_port")?;
    let chassis = names("Chassis", "name")?;
    let out = central.sbctl(&[
        "--format=csv",
        "--data=bare",
        "--no-headings",
        "--columns=address,ports,chassis",
        "list",
        "IGMP_Group",
    ])?;
    let mut rows: Vec<String> = out
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').map(|s| s.trim_matches('"')).collect();
            let mut p: Vec<&str> = f
                .get(1)
                .unwrap_or(&"")
                .split_whitespace()
                .map(|u| ports.get(u).map_or(u, String::as_str))
                .collect();
            p.sort_unstable();
            let ch = f
                .get(2)
                .map_or("", |c| chassis.get(*c).map_or(*c, String::as_str));
            format!("{} [{}] {}", f.first().unwrap_or(&""), p.join(" "), ch)
        })
        .collect();
    rows.sort();
    Ok(rows)
}

/// Waits until the IGMP_Group rows are `want`, records them as a fact, and an unmet
/// expectation if they never got there.
fn expect_rows(p: &mut Probe<'_>, net: &Net, what: &str, want: &[&str]) {
    let started = Instant::now();
    let mut rows = Vec::new();
    while started.elapsed() < ROWS_TIMEOUT {
        match igmp_rows(net) {
            Ok(r) => rows = r,
            Err(e) => {
                p.fail(format!("{what}: read IGMP_Group: {e}"));
                return;
            }
        }
        if rows == want {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if rows != want {
        p.fail(format!(
            "{what}: IGMP_Group rows {rows:?}, expected {want:?}"
        ));
    }
    eprintln!("[{}] {what}: {rows:?}", net.setup.label);
    p.fact(what, rows.join("; "));
}

fn is_igmp_query(f: &[u8]) -> bool {
    is_multicast_query(f) && f.get(12..14) == Some(&[0x08, 0x00])
}

fn is_mld_query(f: &[u8]) -> bool {
    is_multicast_query(f) && f.get(12..14) == Some(&[0x86, 0xdd])
}

/// Waits for two IGMP and two MLD queries on vm1 after its packet `skip`; records the
/// distinct frames (the MLD query without its destination MAC) and checks the MLD
/// destination MAC of each controller.
fn queries_seen(p: &mut Probe<'_>, net: &Net, skip: usize) {
    let vif = &net.vm("vm1").vif;
    let started = Instant::now();
    let mut arrivals: Vec<Instant> = Vec::new();
    let (mut igmp, mut mld) = (Vec::new(), Vec::new());
    while started.elapsed() < TWO_QUERIES && (igmp.len() < 2 || mld.len() < 2) {
        let all: Vec<Vec<u8>> = vif
            .transmitted()
            .unwrap_or_default()
            .into_iter()
            .skip(skip)
            .collect();
        igmp = all.iter().filter(|f| is_igmp_query(f)).cloned().collect();
        mld = all.iter().filter(|f| is_mld_query(f)).cloned().collect();
        while arrivals.len() < igmp.len() {
            arrivals.push(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if igmp.len() < 2 || mld.len() < 2 {
        p.fail(format!(
            "two IGMP and two MLD queries expected on vm1 within {TWO_QUERIES:?}, got {} and {}",
            igmp.len(),
            mld.len()
        ));
    }
    eprintln!(
        "[{}] {} IGMP and {} MLD queries, first gap {:?}",
        net.setup.label,
        igmp.len(),
        mld.len(),
        (arrivals.len() >= 2).then(|| arrivals[1] - arrivals[0])
    );
    let mut distinct: Vec<String> = igmp.iter().map(hex::encode).collect();
    distinct.sort();
    distinct.dedup();
    p.fact("IGMP general query", distinct.join(" "));
    let want_dst: &[u8] = if net.setup.label == ORACLE {
        &[0x33, 0x33, 0, 0, 0, 0]
    } else {
        &[0x33, 0x33, 0, 0, 0, 1]
    };
    let mut distinct: Vec<String> = mld
        .iter()
        .map(|f| {
            if f.get(..6) != Some(want_dst) {
                p.fail(format!(
                    "MLD query to {}, expected {}",
                    hex::encode(&f[..6]),
                    hex::encode(want_dst)
                ));
            }
            format!("<dst>{}", hex::encode(&f[6..]))
        })
        .collect();
    distinct.sort();
    distinct.dedup();
    p.fact(
        "MLD general query (less the destination MAC)",
        distinct.join(" "),
    );
}

fn snooping_and_querier(net: &Net) -> Outcome {
    let mut p = net.probe();
    let skip = net.vm("vm1").vif.transmitted().map_or(0, |f| f.len());
    let querier_mac = format!("other_config:mcast_eth_src=\"{QUERIER_MAC}\"");
    let querier_ip4 = format!("other_config:mcast_ip4_src=\"{QUERIER_IP4}\"");
    let querier_ip6 = format!("other_config:mcast_ip6_src=\"{QUERIER_IP6}\"");
    p.nbctl(&[
        "set",
        "Logical_Switch",
        "sw0",
        "other_config:mcast_snoop=true",
        "other_config:mcast_querier=true",
        "other_config:mcast_query_interval=2",
        &querier_mac,
        &querier_ip4,
        &querier_ip6,
    ]);
    p.wait_hv("snooping and querier on");
    expect_rows(&mut p, net, "rows with snooping on", &["mrouters [] hv1"]);
    queries_seen(&mut p, net, skip);

    let (vm1_ip, vm2_ip) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let g1 = Ipv4Addr::new(239, 1, 1, 1);
    let g2 = Ipv4Addr::new(239, 2, 2, 2);
    let g6: Ipv6Addr = "ff0e::1234".parse().expect("ip");
    let vm1_ll: Ipv6Addr = "fe80::5254:ff:fe00:1".parse().expect("ip");
    // IGMPv2 join of g1 from vm1; IGMPv3 CHANGE_TO_EXCLUDE {} of g1 and g2 from vm2;
    // MLDv2 CHANGE_TO_EXCLUDE {} of ff0e::1234 from vm1.
    p.send("vm1", &igmp(VM1_MAC, vm1_ip, g1, igmpv2(0x16, g1)));
    p.send(
        "vm2",
        &igmp(
            VM2_MAC,
            vm2_ip,
            Ipv4Addr::new(224, 0, 0, 22),
            igmpv3(&[(4, g1), (4, g2)]),
        ),
    );
    p.send("vm1", &mldv2(VM1_MAC, vm1_ll, &[(4, g6)]));
    expect_rows(
        &mut p,
        net,
        "rows after the joins",
        &[
            "239.1.1.1 [vm1 vm2] hv1",
            "239.2.2.2 [vm2] hv1",
            "ff0e::1234 [vm1] hv1",
            "mrouters [] hv1",
        ],
    );
    // A bad checksum teaches nothing.
    let mut bad = igmp(VM1_MAC, vm1_ip, g2, igmpv2(0x16, g2));
    let n = bad.len();
    bad[n - 5] ^= 0xff;
    p.send("vm1", &bad);
    // IGMPv2 leave of g1 from vm1; IGMPv3 CHANGE_TO_INCLUDE {} of g2 from vm2.
    p.send(
        "vm1",
        &igmp(
            VM1_MAC,
            vm1_ip,
            Ipv4Addr::new(224, 0, 0, 2),
            igmpv2(0x17, g1),
        ),
    );
    p.send(
        "vm2",
        &igmp(
            VM2_MAC,
            vm2_ip,
            Ipv4Addr::new(224, 0, 0, 22),
            igmpv3(&[(3, g2)]),
        ),
    );
    expect_rows(
        &mut p,
        net,
        "rows after the leaves",
        &[
            "239.1.1.1 [vm2] hv1",
            "ff0e::1234 [vm1] hv1",
            "mrouters [] hv1",
        ],
    );
    p.nbctl(&[
        "remove",
        "Logical_Switch",
        "sw0",
        "other_config",
        "mcast_snoop",
        "mcast_querier",
        "mcast_query_interval",
        "mcast_eth_src",
        "mcast_ip4_src",
        "mcast_ip6_src",
    ]);
    p.wait_hv("snooping off");
    expect_rows(&mut p, net, "rows with snooping off", &[]);
    p.finish(&net.ports())
}

/// vm2 runs a multicast router (the switch's own querier is off: it has no source
/// addresses): its IGMP query marks its port as a router port (the
/// `mrouters` row) and is flooded to vm1; vm1's later report is forwarded to the router
/// ports (the compared packets). Then the table holds at most 10 groups (the least
/// recently joined one goes) and groups age out after the idle timeout (15 s).
fn router_ports_table_size_and_ageing(net: &Net) -> Outcome {
    let mut p = net.probe().with_timeout(Duration::from_secs(5));
    p.nbctl(&[
        "set",
        "Logical_Switch",
        "sw0",
        "other_config:mcast_snoop=true",
        "other_config:mcast_table_size=10",
        "other_config:mcast_idle_timeout=15",
    ]);
    p.wait_hv("snooping on, 10 groups, 15 s");
    expect_rows(&mut p, net, "rows with snooping on", &["mrouters [] hv1"]);
    let (vm1_ip, vm2_ip) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let mut query = vec![0x11, 100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    query[9] = 125;
    let query = igmp(VM2_MAC, vm2_ip, Ipv4Addr::new(224, 0, 0, 1), query);
    p.send("vm2", &query);
    p.expect("vm2's query flooded to vm1", "vm1", |f| f == query);
    expect_rows(
        &mut p,
        net,
        "rows with a router port",
        &["mrouters [vm2] hv1"],
    );
    // Reports from a router port teach nothing; vm1's goes on to vm2.
    let g = |i: u8| Ipv4Addr::new(239, 9, 0, i);
    p.send("vm2", &igmp(VM2_MAC, vm2_ip, g(100), igmpv2(0x16, g(100))));
    for i in 1..=11 {
        p.send("vm1", &igmp(VM1_MAC, vm1_ip, g(i), igmpv2(0x16, g(i))));
    }
    let want: Vec<String> = (2..=11)
        .map(|i| format!("{} [vm1] hv1", g(i)))
        .chain(std::iter::once("mrouters [vm2] hv1".to_owned()))
        .collect();
    let mut want_sorted = want.clone();
    want_sorted.sort();
    let want_ref: Vec<&str> = want_sorted.iter().map(String::as_str).collect();
    expect_rows(&mut p, net, "rows of a full table", &want_ref);
    // All ten age out within the idle timeout and a pruning pass; the router port stays
    // (180 s).
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if igmp_rows(net).is_ok_and(|r| r.len() == 1) {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let aged = started.elapsed();
    eprintln!("[{}] groups aged out after {aged:?}", net.setup.label);
    expect_rows(&mut p, net, "rows after ageing", &["mrouters [vm2] hv1"]);
    p.nbctl(&[
        "remove",
        "Logical_Switch",
        "sw0",
        "other_config",
        "mcast_snoop",
        "mcast_table_size",
        "mcast_idle_timeout",
    ]);
    p.wait_hv("snooping off");
    expect_rows(&mut p, net, "rows with snooping off", &[]);
    p.finish(&net.ports())
}

const SCENARIOS: &[Scenario] = &[
    ("igmp snooping and querier", snooping_and_querier),
    (
        "router ports, table size and ageing",
        router_ports_table_size_and_ageing,
    ),
];

/// Adds `more` to `outcome`: its facts and unmet expectations.
fn merge(outcome: &mut Outcome, more: Outcome) {
    outcome.observation.facts.extend(more.observation.facts);
    outcome.failures.extend(more.failures);
}

/// A group is learnt, then the controller restarts: the new process starts with empty
/// tables and removes the rows the old one left (the `mrouters` row stays, empty). Then
/// a graceful `exit` takes the chassis's IGMP_Group rows with it (`chassis` is a weak
/// reference: they would stay, naming no chassis). The controller is started again and
/// snooping turned off.
fn restart_and_exit(net: &mut Net) -> Outcome {
    let started = Instant::now();
    let Some(ctl) = net.setup.controller("hv1").cloned() else {
        return Outcome {
            failures: vec!["no controller on hv1".to_owned()],
            ..Outcome::default()
        };
    };
    let mut p = net.probe();
    p.nbctl(&[
        "set",
        "Logical_Switch",
        "sw0",
        "other_config:mcast_snoop=true",
    ]);
    p.wait_hv("snooping on");
    let g = Ipv4Addr::new(239, 5, 5, 5);
    let vm1_ip = Ipv4Addr::new(10, 0, 0, 1);
    p.send("vm1", &igmp(VM1_MAC, vm1_ip, g, igmpv2(0x16, g)));
    expect_rows(
        &mut p,
        net,
        "rows before the restart",
        &["239.5.5.5 [vm1] hv1", "mrouters [] hv1"],
    );
    let mut outcome = p.finish(&net.ports());
    let mut failures = Vec::new();
    if let Ok(c) = net.lab.chassis_mut("hv1") {
        c.stop_controller();
    }
    if let Err(e) = net
        .lab
        .start_controller("hv1", &ctl)
        .and_then(|()| net.lab.central().wait_hv_sync())
    {
        failures.push(format!("restart the controller: {e}"));
    }
    let mut p = net.probe();
    expect_rows(&mut p, net, "rows after the restart", &["mrouters [] hv1"]);
    merge(&mut outcome, p.finish(&net.ports()));
    let exited = net
        .lab
        .chassis_mut("hv1")
        .and_then(|c| c.exit_controller(Duration::from_secs(10)));
    if let Err(e) = exited {
        failures.push(format!("exit the controller: {e}"));
    }
    let mut p = net.probe();
    expect_rows(&mut p, net, "rows after a graceful exit", &[]);
    merge(&mut outcome, p.finish(&[]));
    if let Err(e) = net
        .lab
        .start_controller("hv1", &ctl)
        .and_then(|()| net.lab.central().wait_hv_sync())
    {
        failures.push(format!("start the controller again: {e}"));
    }
    for port in net.ports() {
        if let Err(e) = integration::scenario::wait_port_up(net.lab.central(), port) {
            failures.push(format!("{port} up again: {e}"));
        }
    }
    let mut p = net.probe();
    expect_rows(
        &mut p,
        net,
        "rows after the new start",
        &["mrouters [] hv1"],
    );
    p.nbctl(&[
        "remove",
        "Logical_Switch",
        "sw0",
        "other_config",
        "mcast_snoop",
    ]);
    p.wait_hv("snooping off");
    expect_rows(&mut p, net, "rows with snooping off", &[]);
    merge(&mut outcome, p.finish(&net.ports()));
    outcome.failures.extend(failures);
    outcome.elapsed = started.elapsed();
    outcome
}

#[test]
fn igmp_snooping_matches_ovn_controller() {
    let setups = Setup::oracle_and_agent(&CHASSIS);
    let (mut nets, mut report) = common::run_all(&setups, topology, SCENARIOS);
    for net in &mut nets {
        let outcome = restart_and_exit(net);
        eprintln!(
            "[{}] restart and exit: {} unmet, {:.1}s",
            net.setup.label,
            outcome.failures.len(),
            outcome.elapsed.as_secs_f64()
        );
        report.add("restart and exit", &net.setup.label.clone(), outcome);
    }
    for net in &nets {
        if net.setup.label != ORACLE {
            let stats = net
                .lab
                .chassis("hv1")
                .and_then(|c| c.controller_appctl(&["pinctrl/show-stats"]))
                .unwrap_or_default();
            eprintln!("[{}] hv1:\n{stats}", net.setup.label);
        }
    }
    common::conclude_healthy(nets, &report);
}
