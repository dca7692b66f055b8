//! Gratuitous ARPs against the real ovn-controller, in the same run (issues 10 and 11): a
//! gateway chassis announces its router's NAT addresses on the physical network when the
//! switch port asks for them (`nat-addresses=router`), a VIF on a switch with a localnet
//! port announces its address, and the local router learns that address at once (a
//! MAC_Binding row). Both controllers must send the same frames, each more than once (the
//! schedule repeats: 1, 3, 7, 15, 31 s after the address appears), and write the same rows.
//! Where the gap between the first two announcements is known it is printed for both.

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::{two_switches_one_router, Net, Scenario, Setup};
use integration::observe::{Outcome, Probe};
use integration::packet::arp_summary;
use integration::scenario::SnatGateway;
use integration::{Result, Vif};

const GATEWAY: SnatGateway = SnatGateway::LAB;
const CHASSIS: [&str; 2] = ["hv1", "hv2"];
/// A floating IP of vm3 (on sw0, hv2) on the gateway.
const FLOATING_IP: Ipv4Addr = Ipv4Addr::new(172, 16, 0, 50);
/// A VM on the physical network's switch, on the gateway chassis.
const LOCALNET_VM: (&str, &str, Ipv4Addr) =
    ("vmx", "50:54:00:00:00:33", Ipv4Addr::new(172, 16, 0, 33));
/// Long enough for the first two announcements (1 s and 3 s) with room to spare.
const TWO_ANNOUNCEMENTS: Duration = Duration::from_secs(12);

/// The shared topology plus lr0's distributed gateway port on hv2 with its external host.
fn gateway_topology(setup: &Setup) -> Result<Net> {
    let mut net = two_switches_one_router(setup, &CHASSIS)?;
    let ext = GATEWAY.build(net.lab.central(), "lr0", net.lab.chassis("hv2")?)?;
    net.extra.push(("hv2".to_owned(), ext));
    Ok(net)
}

fn external_host(net: &Net) -> &Vif {
    &net.extra[0].1
}

/// The gratuitous ARPs for one address the external host received after its first `skip`
/// frames, and the time between the first two as this test saw them arrive.
struct Seen {
    frames: Vec<Vec<u8>>,
    first_gap: Option<Duration>,
}

/// Polls the external host until two gratuitous ARPs for each of `ips` arrived after frame
/// `skip` (or the time is up).
fn two_garps_for(host: &Vif, skip: usize, ips: &[Ipv4Addr]) -> Vec<Seen> {
    let started = Instant::now();
    let mut arrivals: Vec<Vec<Instant>> = vec![Vec::new(); ips.len()];
    let mut frames: Vec<Vec<Vec<u8>>> = vec![Vec::new(); ips.len()];
    while started.elapsed() < TWO_ANNOUNCEMENTS && frames.iter().any(|f| f.len() < 2) {
        let all = host.transmitted().unwrap_or_default();
        for (i, ip) in ips.iter().enumerate() {
            frames[i] = all
                .iter()
                .skip(skip)
                .filter(|f| arp_summary(f).is_some_and(|a| a.is_gratuitous() && a.spa == *ip))
                .cloned()
                .collect();
            while arrivals[i].len() < frames[i].len() {
                arrivals[i].push(Instant::now());
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    frames
        .into_iter()
        .zip(arrivals)
        .map(|(frames, at)| Seen {
            first_gap: (at.len() >= 2).then(|| at[1] - at[0]),
            frames,
        })
        .collect()
}

fn hex(frame: &[u8]) -> String {
    use std::fmt::Write as _;
    frame.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Records the announcements of `ip` as facts: the distinct frames (compared with the
/// oracle's) and that there were two.
fn announced(p: &mut Probe<'_>, label: &str, what: &str, seen: &Seen) {
    if seen.frames.len() < 2 {
        p.fail(format!(
            "{what}: two gratuitous ARPs expected within {TWO_ANNOUNCEMENTS:?}, got {}",
            seen.frames.len()
        ));
    }
    let mut distinct: Vec<String> = seen.frames.iter().map(|f| hex(f)).collect();
    distinct.sort();
    distinct.dedup();
    p.fact(what, distinct.join(" "));
    eprintln!(
        "[{label}] {what}: {} frames, first gap {:?}",
        seen.frames.len(),
        seen.first_gap
    );
}

/// `nat-addresses=router` on the switch's router port: the gateway chassis announces the
/// router's SNAT address and a floating IP, from the router port's MAC.
fn nat_addresses_announced(net: &Net) -> Outcome {
    let mut p = net.probe();
    let host = external_host(net);
    let skip = host.transmitted().map_or(0, |f| f.len());
    let floating = FLOATING_IP.to_string();
    p.nbctl(&["lr-nat-add", "lr0", "dnat_and_snat", &floating, "10.0.0.3"]);
    p.nbctl(&[
        "set",
        "Logical_Switch_Port",
        "public-lr0",
        "options:nat-addresses=router",
    ]);
    p.wait_hv("nat-addresses set");
    let label = net.setup.label.clone();
    let seen = two_garps_for(host, skip, &[GATEWAY.router_ip, FLOATING_IP]);
    for (what, seen) in ["router's SNAT address announced", "floating IP announced"]
        .iter()
        .zip(&seen)
    {
        announced(&mut p, &label, what, seen);
    }
    let outcome = p.finish(&net.ports());
    let central = net.lab.central();
    let _ = central.nbctl(&[
        "remove",
        "Logical_Switch_Port",
        "public-lr0",
        "options",
        "nat-addresses",
    ]);
    let _ = central.nbctl(&["lr-nat-del", "lr0", "dnat_and_snat", &floating]);
    let _ = central.wait_hv_sync();
    outcome
}

/// A VM on the physical network's switch (bound on the gateway chassis, which maps the
/// network): it is announced, and lr0 learns its MAC without asking.
fn localnet_vif_announced_and_learnt(net: &Net) -> Outcome {
    let mut p = net.probe();
    let host = external_host(net);
    let skip = host.transmitted().map_or(0, |f| f.len());
    let (name, mac, ip) = LOCALNET_VM;
    let addresses = format!("{mac} {ip}");
    p.nbctl(&["lsp-add", "public", name]);
    p.nbctl(&["lsp-set-addresses", name, &addresses]);
    let vif = net.lab.chassis("hv2").and_then(|c| c.add_vif(name, name));
    p.check("plug the localnet VM", vif);
    p.wait_hv("localnet VM bound");
    let seen = two_garps_for(host, skip, &[ip]);
    announced(
        &mut p,
        &net.setup.label.clone(),
        "localnet VM announced",
        &seen[0],
    );
    let central = net.lab.central();
    let learnt = central
        .sbctl(&[
            "--bare",
            "--columns=logical_port,mac",
            "find",
            "MAC_Binding",
            &format!("ip={ip}"),
        ])
        .unwrap_or_default();
    let learnt: Vec<&str> = learnt.split_whitespace().collect();
    if learnt != ["lr0-public", mac] {
        p.fail(format!(
            "lr0-public must have learnt {ip} at {mac}: MAC_Binding {learnt:?}"
        ));
    }
    p.fact("MAC_Binding for the localnet VM", learnt.join(" "));
    let outcome = p.finish(&net.ports());
    if let Ok(hv2) = net.lab.chassis("hv2") {
        let _ = hv2.vsctl(&["del-port", "br-int", name]);
    }
    let _ = central.nbctl(&["lsp-del", name]);
    let _ = central.sbctl(&["--all", "destroy", "MAC_Binding"]);
    let _ = central.wait_hv_sync();
    outcome
}

const SCENARIOS: &[Scenario] = &[
    ("nat addresses announced", nat_addresses_announced),
    (
        "localnet vif announced and learnt",
        localnet_vif_announced_and_learnt,
    ),
];

#[test]
fn gratuitous_arps_match_ovn_controller() {
    let setups = Setup::oracle_and_agent(&CHASSIS);
    let (nets, report) = common::run_all(&setups, gateway_topology, SCENARIOS);
    for net in &nets {
        if net.setup.label != common::ORACLE {
            let stats = net
                .lab
                .chassis("hv2")
                .and_then(|c| c.controller_appctl(&["pinctrl/show-stats"]))
                .unwrap_or_default();
            eprintln!("[{}] hv2:\n{stats}", net.setup.label);
        }
    }
    common::conclude_healthy(nets, &report);
}
