//! Logical topologies built through `ovn-nbctl`, shared by the tests and the `ovn-lab` command.

use std::net::Ipv4Addr;

use crate::central::Central;
use crate::error::Result;
use crate::packet::Mac;

/// A VM's logical switch port: its name, and the MAC and IPv4 address in `addresses`.
#[derive(Debug, Clone)]
pub struct VmPort {
    pub name: String,
    pub mac: Mac,
    pub ip: Ipv4Addr,
}

/// A logical router port with its MAC and `address/prefix`.
#[derive(Debug, Clone, Copy)]
pub struct RouterPort {
    pub switch: &'static str,
    pub mac: Mac,
    pub ip: Ipv4Addr,
    pub prefix: u8,
}

pub fn add_switch(central: &Central, switch: &str, ports: &[VmPort]) -> Result<()> {
    central.nbctl(&["ls-add", switch])?;
    for port in ports {
        central.nbctl(&[
            "lsp-add",
            switch,
            &port.name,
            "--",
            "lsp-set-addresses",
            &port.name,
            &format!("{} {}", port.mac, port.ip),
        ])?;
    }
    Ok(())
}

/// A router `name` with one port on each listed switch.
pub fn add_router(central: &Central, name: &str, ports: &[RouterPort]) -> Result<()> {
    central.nbctl(&["lr-add", name])?;
    for port in ports {
        let network = format!("{}/{}", port.ip, port.prefix);
        attach_router_port(central, name, port.switch, &port.mac.to_string(), &network)?;
    }
    Ok(())
}

/// Joins existing router `router` to existing switch `switch`: router port `<router>-<switch>`
/// with `mac` and `network` (`address/prefix`), and its peer, the switch port
/// `<switch>-<router>` of type `router`.
pub fn attach_router_port(
    central: &Central,
    router: &str,
    switch: &str,
    mac: &str,
    network: &str,
) -> Result<()> {
    let lrp = format!("{router}-{switch}");
    let lsp = format!("{switch}-{router}");
    central.nbctl(&["lrp-add", router, &lrp, mac, network])?;
    central
        .nbctl(&[
            "lsp-add",
            switch,
            &lsp,
            "--",
            "lsp-set-type",
            &lsp,
            "router",
            "--",
            "lsp-set-addresses",
            &lsp,
            "router",
            "--",
            "lsp-set-options",
            &lsp,
            &format!("router-port={lrp}"),
        ])
        .map(drop)
}

/// Waits until the Northbound `up` column of logical switch port `port` is true, i.e. some
/// chassis claimed it and its flows are in place.
pub fn wait_port_up(central: &Central, port: &str) -> Result<()> {
    central
        .nbctl(&["wait-until", "Logical_Switch_Port", port, "up=true"])
        .map(drop)
}
