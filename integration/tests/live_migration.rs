//! Live migration with `options:activation-strategy=rarp`, with ovn-controller (the oracle)
//! and with ovn-agent on both chassis, in the same run. Port `mig` is requested on hv1 and
//! hv2 (its main and additional chassis) and has an interface on each, as a VM being
//! migrated has: until the hypervisor's RARP from hv2, hv2's interface gets and sends
//! nothing; the RARP itself is switched as usual, the controller on hv2 writes
//! `options:additional-chassis-activated=hv2`, and from then on both interfaces take part.

mod common;

use std::time::Duration;

use common::{mac, two_switches_one_router, vm_port, Net, Setup, Vm};
use integration::host::wait_for;
use integration::observe::Outcome;
use integration::packet::{ipv4_summary, Mac};

const MIG_MAC: &str = "50:54:00:00:00:10";

fn udp(from: &Vm, to: &Vm, payload: &[u8]) -> Vec<u8> {
    common::udp_to(from, to, 5000, payload)
}

fn carries(payload: &'static [u8]) -> impl FnMut(&[u8]) -> bool {
    move |f| ipv4_summary(f).is_some_and(|s| s.udp_payload() == Some(payload))
}

/// The RARP request a hypervisor sends for a VM it just resumed (who am I, from its MAC).
fn rarp(src: Mac) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&src.0);
    f.extend_from_slice(&[0x80, 0x35, 0, 1, 8, 0, 6, 4, 0, 3]);
    f.extend_from_slice(&src.0);
    f.extend_from_slice(&[0; 4]);
    f.extend_from_slice(&src.0);
    f.extend_from_slice(&[0; 4]);
    f
}

fn is_rarp_from(src: Mac) -> impl FnMut(&[u8]) -> bool {
    move |f| f.len() >= 14 && f[12..14] == [0x80, 0x35] && f[6..12] == src.0
}

fn activated(net: &Net) -> integration::Result<String> {
    let out = net.lab.central().sbctl(&[
        "--bare",
        "--columns=options",
        "find",
        "Port_Binding",
        "logical_port=mig",
    ])?;
    Ok(out
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("additional-chassis-activated="))
        .unwrap_or_default()
        .trim_matches('"')
        .to_owned())
}

fn rarp_activates_the_new_home(net: &Net) -> Outcome {
    let mut p = net.probe();
    let port = vm_port("mig", MIG_MAC, [10, 0, 0, 10]);
    p.nbctl(&[
        "lsp-add",
        "sw0",
        "mig",
        "--",
        "lsp-set-addresses",
        "mig",
        &format!("{} {}", port.mac, port.ip),
        "--",
        "lsp-set-options",
        "mig",
        "requested-chassis=hv1,hv2",
        "activation-strategy=rarp",
    ]);
    let mut homes = Vec::new();
    for (chassis, name) in [("hv1", "mig1"), ("hv2", "mig2")] {
        let vif = net
            .lab
            .chassis(chassis)
            .and_then(|c| c.add_vif(name, "mig"));
        if let Some(vif) = p.check(&format!("plug {name} on {chassis}"), vif) {
            p.watch(chassis, &vif);
            homes.push(Vm {
                port: port.clone(),
                chassis: chassis.to_owned(),
                vif,
            });
        }
    }
    let central = net.lab.central();
    let additional = wait_for(
        "hv2 as mig's additional chassis",
        Duration::from_secs(20),
        || {
            let out = central.sbctl(&[
                "--bare",
                "--columns=additional_chassis",
                "find",
                "Port_Binding",
                "logical_port=mig",
            ])?;
            Ok((!out.trim().is_empty()).then_some(()))
        },
    );
    p.check("mig bound on both chassis", additional);
    p.wait_hv("mig plugged on hv1 and hv2");
    let [mig1, mig2] = homes.as_slice() else {
        return p.finish(&net.ports());
    };
    let (vm1, vm3) = (net.vm("vm1"), net.vm("vm3"));

    p.send("vm3", &udp(vm3, mig1, b"before"));
    p.expect(
        "before activation, vm3 reaches mig on hv1",
        "mig1",
        carries(b"before"),
    );
    p.refute_on(
        "before activation, nothing reaches mig on hv2",
        "mig2",
        carries(b"before"),
    );
    p.send("mig2", &udp(mig2, vm1, b"blocked"));
    p.refute_on(
        "before activation, mig on hv2 reaches nobody",
        "vm1",
        carries(b"blocked"),
    );
    p.send("mig1", &udp(mig1, vm1, b"from hv1"));
    p.expect("mig on hv1 reaches vm1", "vm1", carries(b"from hv1"));

    p.send("mig2", &rarp(mac(MIG_MAC)));
    p.expect(
        "the RARP from hv2 is switched to vm1",
        "vm1",
        is_rarp_from(mac(MIG_MAC)),
    );
    p.expect(
        "the RARP from hv2 is switched to vm3",
        "vm3",
        is_rarp_from(mac(MIG_MAC)),
    );
    let written = wait_for(
        "options:additional-chassis-activated=hv2",
        Duration::from_secs(10),
        || Ok((activated(net)? == "hv2").then_some(())),
    );
    p.check("the RARP activates mig on hv2", written);
    p.fact("activated on", activated(net).unwrap_or_default());
    p.wait_hv("activation seen by both chassis");

    p.send("vm3", &udp(vm3, mig1, b"after"));
    p.expect(
        "after activation, vm3 reaches mig on hv1",
        "mig1",
        carries(b"after"),
    );
    p.expect(
        "after activation, vm3 reaches mig on hv2",
        "mig2",
        carries(b"after"),
    );
    p.send("mig2", &udp(mig2, vm1, b"from hv2"));
    p.expect(
        "after activation, mig on hv2 reaches vm1",
        "vm1",
        carries(b"from hv2"),
    );

    let outcome = p.finish(&net.ports());
    let _ = central.nbctl(&["lsp-del", "mig"]);
    for (chassis, name) in [("hv1", "mig1"), ("hv2", "mig2")] {
        let _ = net
            .lab
            .chassis(chassis)
            .and_then(|c| c.vsctl(&["del-port", "br-int", name]));
    }
    let _ = central.wait_hv_sync();
    outcome
}

#[test]
fn activation_strategy_rarp_as_ovn_controller() {
    let setups = Setup::oracle_and_agent(&["hv1", "hv2"]);
    let (nets, report) = common::run_all(
        &setups,
        |s| two_switches_one_router(s, &["hv1", "hv2"]),
        &[("RARP activates the new home", rarp_activates_the_new_home)],
    );
    common::conclude_healthy(nets, &report);
}
