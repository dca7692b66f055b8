//! Behind an `ovsdb-server` relay (`relay:OVN_Southbound:<server>`), as OVN is deployed for
//! thousands of chassis: the controllers of both chassis are pointed at one relay
//! (`external_ids:ovn-remote`) and must go on working through it. Reads (conditional
//! monitors through the relay), writes the relay forwards to the Southbound server (a new
//! port's claim and `up`, the `nb_cfg` acknowledgement behind `--wait=hv`), and the traffic
//! they set up. ovn-controller on both chassis, then ovn-agent, in the same test.

mod common;

use common::{two_switches_one_router, Net, Setup};
use integration::observe::{Outcome, Report};
use integration::scenario::wait_port_up;
use integration::Daemon;

/// Starts a relay of the lab's Southbound database on the central node; returns it and its
/// remote.
fn start_relay(net: &Net) -> integration::Result<(Daemon, String)> {
    let host = net.lab.central().host();
    let socket = host.path("sb_relay.sock");
    let relay = Daemon::start(
        host,
        "sb_relay",
        "ovsdb-server",
        integration::daemon::ControlSocket::Explicit,
        &[
            format!("--remote=punix:{}", socket.display()),
            format!("relay:OVN_Southbound:{}", net.lab.central().sb_remote()),
        ],
    )?;
    Ok((relay, format!("unix:{}", socket.display())))
}

fn through_the_relay(net: &Net) -> Outcome {
    let (relay, remote) = match start_relay(net) {
        Ok(r) => r,
        Err(e) => {
            return Outcome {
                failures: vec![format!("start the relay: {e}")],
                ..Outcome::default()
            }
        }
    };
    let mut p = net.probe();
    for chassis in ["hv1", "hv2"] {
        let set = net.lab.chassis(chassis).and_then(|c| {
            c.vsctl(&[
                "set",
                "Open_vSwitch",
                ".",
                &format!("external-ids:ovn-remote={remote}"),
            ])
        });
        if let Err(e) = set {
            p.fail(format!("point {chassis} at the relay: {e}"));
        }
    }
    // Both controllers connect to the relay (they leave the server's socket).
    let relay_sessions =
        || integration::ovsdb_cluster::sessions(net.lab.central().host(), &relay).unwrap_or(0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while relay_sessions() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let sessions = relay_sessions();
    eprintln!("[{}] relay sessions: {sessions}", net.setup.label);
    if sessions < 2 {
        p.fail(format!(
            "the relay serves {sessions} sessions, not both controllers"
        ));
    }
    p.wait_hv("both chassis acknowledge through the relay");

    // A new port on hv1: claimed and set up through the relay.
    let Some(vm6) = common::plug_vm6_on_hv1(&mut p, net) else {
        return p.finish(&[]);
    };
    if let Err(e) = wait_port_up(net.lab.central(), "vm6") {
        p.fail(format!("vm6 up through the relay: {e}"));
    }
    p.wait_hv("vm6 bound");
    if !matches!(net.lab.central().port_binding_chassis("vm6"), Ok(Some(_))) {
        p.fail("vm6 has no chassis after --wait=hv");
    }

    // Traffic: vm6 -> vm3 (switched across the tunnel) and the routed pairs.
    let vm3 = net.vm("vm3").clone();
    p.watch("hv1", &vm6.vif);
    p.send("vm6", &common::udp_to(&vm6, &vm3, 7000, b"relay"));
    p.expect("vm6 -> vm3 switched", "vm3", move |f| {
        integration::packet::ipv4_summary(f)
            .is_some_and(|s| s.src == vm6.port.ip && s.udp_payload() == Some(b"relay"))
    });
    common::expect_routed_pings(&mut p, net, "through the relay: ");
    let outcome = p.finish(&["vm1", "vm2", "vm3", "vm5", "vm6"]);
    drop(relay);
    outcome
}

#[test]
fn controllers_work_behind_a_southbound_relay() {
    let mut report = Report::default();
    let mut nets = Vec::new();
    for setup in Setup::oracle_and_agent(&["hv1", "hv2"]) {
        let net = two_switches_one_router(&setup, &["hv1", "hv2"])
            .unwrap_or_else(|e| panic!("build the lab for {}: {e}", setup.label));
        let outcome = through_the_relay(&net);
        report.add("two chassis behind one relay", &setup.label, outcome);
        nets.push(net);
    }
    common::conclude_healthy(nets, &report);
}
