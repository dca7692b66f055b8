//! pkt.mark across chassis (issue 14): lr0 reroutes vm1's traffic to 203.0.113.10 to vm2
//! (the "egress node", on hv2) with `pkt_mark=100`, as ovn-kubernetes' egress IP does.
//!
//! - With ovn-controller, and with ovn-agent without the capability, the mark stays on the
//!   tunnel packet: the userspace datapath looks the underlay route up with it and, with no
//!   route for that mark, the packet never leaves hv1.
//! - With `external_ids:ovn-agent-tunnel-pkt-mark=true` on both chassis, the mark travels in
//!   ovn-agent's own Geneve option, the tunnel packet has none (it leaves without a route
//!   for the mark), and hv2 restores it: its datapath flows carry `skb_mark(0x64)`.
//! - Turned off on hv2 at run time, hv1 stops carrying it (without a restart).
//! - A mixed pair (hv1 ovn-agent with the capability, hv2 ovn-controller) works as OVN does:
//!   with a route for the mark on hv1 the packet passes, unmarked on hv2.

mod common;

use std::time::Duration;

use common::{two_switches_one_router, Net, Setup};
use integration::packet::{ipv4_summary, udp4};
use integration::Controller;

const EGRESS_DST: [u8; 4] = [203, 0, 113, 10];
const MARK: &str = "0x64";
const DPORT: u16 = 7100;

fn configure(net: &Net) {
    let central = net.lab.central();
    for cmd in [
        vec!["lr-route-add", "lr0", "0.0.0.0/0", "10.0.1.2"],
        vec![
            "lr-policy-add",
            "lr0",
            "100",
            "ip4.src == 10.0.0.1 && ip4.dst == 203.0.113.10",
            "reroute",
            "10.0.1.2",
            "pkt_mark=100",
        ],
        vec!["--wait=hv", "sync"],
    ] {
        central
            .nbctl(&cmd)
            .unwrap_or_else(|e| panic!("ovn-nbctl {cmd:?}: {e}"));
    }
}

fn set_capability(net: &Net, chassis: &str, on: bool) {
    net.lab
        .chassis(chassis)
        .expect("chassis")
        .vsctl(&[
            "set",
            "Open_vSwitch",
            ".",
            &format!("external-ids:ovn-agent-tunnel-pkt-mark={on}"),
        ])
        .expect("set the capability");
}

/// Waits until hv1 says pkt.mark is (or is not) carried to hv2.
fn wait_carried(net: &Net, carried: bool) -> Result<(), String> {
    let hv1 = net.lab.chassis("hv1").map_err(|e| e.to_string())?;
    integration::host::wait_for(
        &format!("hv1 to say pkt.mark carried to hv2: {carried}"),
        Duration::from_secs(20),
        || {
            let text = hv1.controller_appctl(&["tunnel/pkt-mark"])?;
            Ok((text.contains("hv2: carried") == carried).then_some(()))
        },
    )
    .map_err(|e| {
        format!(
            "{e}: {:?}; SB: {:?}",
            hv1.controller_appctl(&["tunnel/pkt-mark"]),
            net.lab
                .central()
                .sbctl(&["--columns=name,other_config", "list", "Chassis"])
        )
    })?;
    net.lab.central().wait_hv_sync().map_err(|e| e.to_string())
}

/// Sends `n` packets from vm1 to the egress destination; returns how many reached vm2 and
/// whether hv2's datapath flows show the mark.
fn send(net: &Net, tag: u8) -> (usize, bool) {
    let vm1 = net.vm("vm1");
    let vm2 = net.vm("vm2");
    let lrp0 = net.router_port("sw0");
    let before = vm2.vif.transmitted().map_or(0, |p| p.len());
    let hv1 = net.lab.chassis("hv1").expect("hv1");
    for i in 0..5u8 {
        let frame = udp4(
            vm1.port.mac,
            lrp0.mac,
            vm1.port.ip,
            EGRESS_DST.into(),
            64,
            7000,
            DPORT,
            &[tag, i],
        );
        hv1.inject(&vm1.vif, &frame).expect("inject");
    }
    std::thread::sleep(Duration::from_millis(1500));
    let arrived = vm2
        .vif
        .transmitted()
        .unwrap_or_default()
        .into_iter()
        .skip(before)
        .filter(|p| {
            ipv4_summary(p).is_some_and(|s| {
                s.udp_dst() == Some(DPORT)
                    && s.udp_payload().is_some_and(|b| b.first() == Some(&tag))
            })
        })
        .count();
    let flows = net
        .lab
        .chassis("hv2")
        .and_then(|c| c.appctl(&["dpctl/dump-flows"]))
        .unwrap_or_default();
    let marked = flows.lines().any(|l| {
        l.contains(&format!("skb_mark({MARK})")) || l.contains(&format!("skb_mark({MARK}/"))
    });
    (arrived, marked)
}

/// One step of the run-time toggle: the capability set per chassis, whether hv1 then
/// carries the mark, the packets' tag, what the step is, and (arrive, marked) expected.
type Step = (
    &'static [(&'static str, bool)],
    bool,
    u8,
    &'static str,
    (bool, bool),
);

/// Records a problem unless the packets arrived (and were marked on hv2) as `want` says.
fn check(
    problems: &mut Vec<String>,
    label: &str,
    what: &str,
    got: (usize, bool),
    want: (bool, bool),
) {
    let ok = (got.0 > 0) == want.0 && (!want.0 || got.1 == want.1);
    eprintln!(
        "[{label}] {what}: {} of 5 arrived on vm2, marked on hv2: {}",
        got.0, got.1
    );
    if !ok {
        problems.push(format!(
            "[{label}] {what}: {} of 5 arrived, marked {} (expected arrive {}, marked {})",
            got.0, got.1, want.0, want.1
        ));
    }
}

#[test]
fn pkt_mark_crosses_chassis_with_the_capability() {
    let agent = Controller::ovn_agent().expect("build ovn-agent");
    let mut problems = Vec::new();
    // The oracle, then ovn-agent without the capability: the packet does not leave hv1.
    let oracle = Setup::all(&Controller::OvnController, &["hv1", "hv2"]);
    let net = two_switches_one_router(&oracle, &["hv1", "hv2"]).expect("oracle lab");
    configure(&net);
    let baseline = send(&net, 1);
    check(
        &mut problems,
        &oracle.label,
        "as OVN does",
        baseline,
        (false, false),
    );
    drop(net);

    let agents = Setup::all(&agent, &["hv1", "hv2"]);
    let net = two_switches_one_router(&agents, &["hv1", "hv2"]).expect("agent lab");
    configure(&net);
    check(
        &mut problems,
        &agents.label,
        "capability off",
        send(&net, 2),
        (false, false),
    );
    // On both: carried, restored on hv2; then off and on again on hv2 at run time, and
    // hv1 follows.
    let steps: [Step; 3] = [
        (
            &[("hv1", true), ("hv2", true)],
            true,
            3,
            "capability on both",
            (true, true),
        ),
        (
            &[("hv2", false)],
            false,
            4,
            "turned off on hv2",
            (false, false),
        ),
        (&[("hv2", true)], true, 5, "turned on again", (true, true)),
    ];
    for (settings, carried, tag, what, want) in steps {
        for (chassis, on) in settings {
            set_capability(&net, chassis, *on);
        }
        if let Err(e) = wait_carried(&net, carried) {
            problems.push(e);
        }
        check(&mut problems, &agents.label, what, send(&net, tag), want);
    }
    drop(net);

    // Mixed: hv2 runs ovn-controller; with a route for the mark on hv1 OVN's way works.
    let mixed = Setup::mixed(&[("hv1", &agent), ("hv2", &Controller::OvnController)]);
    let net = two_switches_one_router(&mixed, &["hv1", "hv2"]).expect("mixed lab");
    configure(&net);
    set_capability(&net, "hv1", true);
    if let Err(e) = wait_carried(&net, false) {
        problems.push(e);
    }
    let hv1 = net.lab.chassis("hv1").expect("hv1");
    hv1.appctl(&["ovs/route/add", "192.168.0.0/24", "br-phys", "pkt_mark=100"])
        .expect("a route for the mark");
    check(
        &mut problems,
        &mixed.label,
        "mixed, route for the mark",
        send(&net, 6),
        (true, false),
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
