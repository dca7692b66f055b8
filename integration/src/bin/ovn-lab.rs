//! `ovn-lab`: starts a small multi-chassis OVN deployment on this machine (real ovsdb-server,
//! ovn-northd and ovs-vswitchd on the dummy datapath), builds two switches joined by a router
//! with one VM per chassis, sends pings across chassis and shows where they arrived.

use std::io::BufRead as _;
use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{bail, Context as _};
use clap::Parser;
use integration::packet::{describe, icmp4_echo, icmp4_echo_reply, ipv4_summary, Mac};
use integration::scenario::{
    add_router, add_switch, wait_port_up, RouterPort, SnatGateway, VmPort,
};
use integration::{Controller, Lab, Vif};

#[derive(Parser, Debug)]
#[command(about = "Run a multi-chassis OVN lab and send traffic across it")]
struct Args {
    /// Number of chassis (hv1, hv2, ...), at least 2.
    #[arg(long, default_value_t = 3)]
    chassis: usize,
    /// Controller on every chassis: "rust" (ovn-agent, the default), "c" (the real
    /// ovn-controller) or "mixed" (ovn-controller on hv1, ovn-agent on the others).
    #[arg(long, default_value = "rust")]
    controller: String,
    /// Keep the lab running after the pings until Enter is pressed.
    #[arg(long)]
    keep: bool,
}

struct Vm {
    port: VmPort,
    chassis: String,
    vif: Vif,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.chassis < 2 {
        bail!("--chassis must be at least 2");
    }
    let (first, rest) = match args.controller.as_str() {
        "rust" => (Controller::ovn_agent()?, Controller::ovn_agent()?),
        "c" => (Controller::OvnController, Controller::OvnController),
        "mixed" => (Controller::OvnController, Controller::ovn_agent()?),
        other => bail!("--controller {other}: expected rust, c or mixed"),
    };
    println!("starting central node and network");
    let mut lab = Lab::start()?;
    println!("lab directory: {}", lab.dir().display());
    for i in 1..=args.chassis {
        let name = format!("hv{i}");
        let controller = if i == 1 { &first } else { &rest };
        lab.add_chassis(&name, controller)
            .with_context(|| format!("start chassis {name}"))?;
        println!("chassis {name} up, controller: {}", controller.program());
    }

    // VMs alternate between two subnets; vm<i> lives on hv<i>.
    let router_ports = [
        RouterPort {
            switch: "sw0",
            mac: "00:00:00:00:ff:01".parse().map_err(anyhow::Error::msg)?,
            ip: Ipv4Addr::new(10, 0, 0, 254),
            prefix: 24,
        },
        RouterPort {
            switch: "sw1",
            mac: "00:00:00:00:ff:02".parse().map_err(anyhow::Error::msg)?,
            ip: Ipv4Addr::new(10, 0, 1, 254),
            prefix: 24,
        },
    ];
    let mut ports: [Vec<VmPort>; 2] = [Vec::new(), Vec::new()];
    for i in 1..=args.chassis {
        let subnet = (i + 1) % 2;
        let octet = u8::try_from(i).context("too many chassis")?;
        ports[subnet].push(VmPort {
            name: format!("vm{i}"),
            mac: Mac([0x50, 0x54, 0, 0, subnet as u8, octet]),
            ip: Ipv4Addr::new(10, 0, subnet as u8, octet),
        });
    }
    let central = lab.central();
    add_switch(central, "sw0", &ports[0])?;
    add_switch(central, "sw1", &ports[1])?;
    add_router(central, "lr0", &router_ports)?;
    let mut vms = Vec::new();
    for (subnet, list) in ports.iter().enumerate() {
        for port in list {
            let index = port.name.trim_start_matches("vm");
            let chassis = format!("hv{index}");
            let vif = lab
                .chassis(&chassis)?
                .add_vif(&format!("vif{index}"), &port.name)?;
            vms.push((
                subnet,
                Vm {
                    port: port.clone(),
                    chassis,
                    vif,
                },
            ));
        }
    }
    for (_, vm) in &vms {
        wait_port_up(central, &vm.port.name)?;
    }
    central.wait_hv_sync()?;
    // The last chassis is lr0's gateway to the outside: SNAT through it.
    let gateway_name = format!("hv{}", args.chassis);
    let gateway = SnatGateway::LAB;
    let ext_host = gateway.build(central, "lr0", lab.chassis(&gateway_name)?)?;
    print!("{}", central.sbctl(&["show"])?);

    let (_, src) = vms
        .iter()
        .find(|(_, vm)| vm.port.name == "vm1")
        .context("vm1")?;
    let mut failures = 0;
    for (subnet, dst) in vms.iter().filter(|(_, vm)| vm.port.name != "vm1") {
        let routed = *subnet != 0;
        let dst_mac = if routed {
            router_ports[0].mac
        } else {
            dst.port.mac
        };
        let frame = icmp4_echo(src.port.mac, dst_mac, src.port.ip, dst.port.ip, 64, 56);
        println!(
            "\n{} ({}) -> {} ({}), {}: sending {}",
            src.port.name,
            src.chassis,
            dst.port.name,
            dst.chassis,
            if routed {
                "routed by lr0"
            } else {
                "switched by sw0"
            },
            describe(&frame)
        );
        lab.chassis(&src.chassis)?.inject(&src.vif, &frame)?;
        let arrived = dst.vif.wait_for_packet(Duration::from_secs(10), |p| {
            ipv4_summary(p).is_some_and(|s| s.src == src.port.ip && s.dst == dst.port.ip)
        });
        match arrived {
            Ok(p) => println!(
                "  arrived on {}/{}: {}",
                dst.chassis,
                dst.vif.name,
                describe(&p)
            ),
            Err(e) => {
                failures += 1;
                println!("  NOT delivered: {e}");
            }
        }
    }
    if !snat_through_gateway(
        &lab,
        src,
        &router_ports[0],
        &gateway,
        &gateway_name,
        &ext_host,
    )? {
        failures += 1;
    }
    if args.keep {
        println!(
            "\nlab running in {}; press Enter to stop it",
            lab.dir().display()
        );
        let _ = std::io::stdin().lock().lines().next();
    }
    drop(lab);
    if failures > 0 {
        bail!("{failures} packet(s) did not arrive");
    }
    println!("\nall packets arrived; lab stopped");
    Ok(())
}

/// vm1 pings the external host: lr0 redirects it to the gateway chassis, SNATs it and sends
/// it out through the localnet port there; the host's reply comes back to vm1 un-SNATed.
/// Whether both arrived.
fn snat_through_gateway(
    lab: &Lab,
    src: &Vm,
    first_hop: &RouterPort,
    gateway: &SnatGateway,
    gateway_name: &str,
    ext_host: &Vif,
) -> anyhow::Result<bool> {
    const TTL: u8 = 64;
    let request = icmp4_echo(
        src.port.mac,
        first_hop.mac,
        src.port.ip,
        gateway.host_ip,
        TTL,
        56,
    );
    println!(
        "\n{} ({}) -> external host {} behind {gateway_name}, SNAT by lr0: sending {}",
        src.port.name,
        src.chassis,
        gateway.host_ip,
        describe(&request)
    );
    lab.chassis(&src.chassis)?.inject(&src.vif, &request)?;
    let out = ext_host.wait_for_packet(Duration::from_secs(10), |p| {
        ipv4_summary(p).is_some_and(|s| s.icmp_echo_request && s.dst == gateway.host_ip)
    });
    let out = match out {
        Ok(p) => p,
        Err(e) => {
            println!("  NOT delivered: {e}");
            return Ok(false);
        }
    };
    println!(
        "  left {gateway_name} through the localnet port: {}",
        describe(&out)
    );
    let Some(seen) = ipv4_summary(&out) else {
        return Ok(false);
    };
    if seen.src != gateway.router_ip {
        println!(
            "  NOT SNATed: source {} instead of {}",
            seen.src, gateway.router_ip
        );
        return Ok(false);
    }
    let reply = icmp4_echo_reply(
        gateway.host_mac,
        gateway.router_mac,
        gateway.host_ip,
        gateway.router_ip,
        TTL,
        56,
    );
    println!(
        "external host replies to {}: sending {}",
        gateway.router_ip,
        describe(&reply)
    );
    lab.chassis(gateway_name)?.inject(ext_host, &reply)?;
    let back = src.vif.wait_for_packet(Duration::from_secs(10), |p| {
        ipv4_summary(p).is_some_and(|s| s.src == gateway.host_ip && !s.icmp_echo_request)
    });
    match back {
        Ok(p) => {
            println!(
                "  arrived on {}/{}: {}",
                src.chassis,
                src.vif.name,
                describe(&p)
            );
            Ok(true)
        }
        Err(e) => {
            println!("  NOT delivered: {e}");
            Ok(false)
        }
    }
}
