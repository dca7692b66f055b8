//! Port mirroring (`ovn-nbctl mirror-add`, `lsp-attach-mirror`) with ovn-controller (the
//! oracle) and with ovn-agent, in the same run: the OVS `Mirror` on hv1's br-int, its
//! selected ports and its tunnel port `ovn-mirror0` must be the same after each step (GRE
//! to-lport, ERSPAN, from-lport, detached), and the mirrored traffic must leave hv1.

mod common;

use common::{two_switches_one_router, Net, Setup};
use integration::observe::{Outcome, Probe};
use integration::packet::udp4;

/// hv1's OVN-owned mirrors as `name: dst=<ports> src=<ports> out=<type> <options>`.
fn mirrors(net: &Net) -> integration::Result<String> {
    let hv1 = net.lab.chassis("hv1")?;
    let names = hv1.vsctl(&["--bare", "--columns=name", "list", "Mirror"])?;
    let mut out = Vec::new();
    for name in names.split_whitespace() {
        let get = |column: &str| hv1.vsctl(&["get", "Mirror", name, column]);
        let port_names = |column: &str| -> integration::Result<String> {
            let uuids = get(column)?;
            let mut names = Vec::new();
            for u in uuids
                .trim_matches(|c| c == '[' || c == ']' || c == '\n')
                .split(", ")
            {
                if !u.is_empty() {
                    names.push(hv1.vsctl(&["get", "Port", u, "name"])?.trim().to_owned());
                }
            }
            Ok(names.join(","))
        };
        let iface = format!("ovn-{name}");
        out.push(format!(
            "{name}: owned={} dst={} src={} out={} {} {}",
            get("external_ids:ovn-owned")?.trim(),
            port_names("select_dst_port")?,
            port_names("select_src_port")?,
            hv1.vsctl(&["get", "Interface", &iface, "type"])?.trim(),
            hv1.vsctl(&["get", "Interface", &iface, "options"])?.trim(),
            port_names("output_port")?,
        ));
    }
    Ok(out.join("; "))
}

fn step(p: &mut Probe<'_>, net: &Net, what: &str, nbctl: &[&str]) {
    p.nbctl(nbctl);
    p.wait_hv(what);
    let seen = p.check(&format!("read hv1's mirrors after {what}"), mirrors(net));
    p.fact(what, seen.unwrap_or_default());
}

fn mirror_follows_the_northbound(net: &Net) -> Outcome {
    let mut p = net.probe();
    step(
        &mut p,
        net,
        "gre to-lport attached",
        &[
            "mirror-add",
            "mirror0",
            "gre",
            "0",
            "to-lport",
            "192.168.0.12",
            "--",
            "lsp-attach-mirror",
            "vm1",
            "mirror0",
        ],
    );
    let (vm1, vm3) = (net.vm("vm1"), net.vm("vm3"));
    p.send(
        "vm3",
        &udp4(
            vm3.port.mac,
            vm1.port.mac,
            vm3.port.ip,
            vm1.port.ip,
            64,
            4000,
            5000,
            b"mirrored",
        ),
    );
    p.expect("vm3 -> vm1 still arrives", "vm1", |f| {
        f.ends_with(b"mirrored")
    });
    let sent = net
        .lab
        .chassis("hv1")
        .and_then(|c| c.vsctl(&["get", "Interface", "ovn-mirror0", "statistics:tx_packets"]));
    let sent = sent
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0);
    p.fact("ovn-mirror0 sent packets", (sent > 0).to_string());
    step(
        &mut p,
        net,
        "erspan",
        &["set", "mirror", ".", "type=erspan"],
    );
    step(
        &mut p,
        net,
        "from-lport",
        &["set", "mirror", ".", "filter=from-lport"],
    );
    step(
        &mut p,
        net,
        "vm3 attached too",
        &["lsp-attach-mirror", "vm3", "mirror0"],
    );
    step(
        &mut p,
        net,
        "vm1 detached",
        &["lsp-detach-mirror", "vm1", "mirror0"],
    );
    step(&mut p, net, "mirror deleted", &["mirror-del", "mirror0"]);
    p.finish(&net.ports())
}

#[test]
fn port_mirroring_as_ovn_controller() {
    let setups = Setup::oracle_and_agent(&["hv1", "hv2"]);
    let (nets, report) = common::run_all(
        &setups,
        |s| two_switches_one_router(s, &["hv1", "hv2"]),
        &[(
            "mirror follows the northbound",
            mirror_follows_the_northbound,
        )],
    );
    common::conclude_healthy(nets, &report);
}
