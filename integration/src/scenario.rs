//! Logical topologies built through `ovn-nbctl`, shared by the tests and the `ovn-lab` command.

use std::net::Ipv4Addr;
use std::time::Duration;

use crate::central::Central;
use crate::chassis::{Chassis, Vif};
use crate::error::{HarnessError, Result};
use crate::host::wait_for;
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

/// Adds localnet port `port` on `switch` for physical network `network` (addresses
/// `unknown`).
pub fn add_localnet_port(central: &Central, switch: &str, port: &str, network: &str) -> Result<()> {
    let options = format!("network_name={network}");
    central.nbctl(&[
        "lsp-add",
        switch,
        port,
        "--",
        "lsp-set-type",
        port,
        "localnet",
        "--",
        "lsp-set-addresses",
        port,
        "unknown",
        "--",
        "lsp-set-options",
        port,
        &options,
    ])?;
    Ok(())
}

/// Waits until the Northbound `up` column of logical switch port `port` is true, i.e. some
/// chassis claimed it and its flows are in place.
pub fn wait_port_up(central: &Central, port: &str) -> Result<()> {
    central
        .nbctl(&["wait-until", "Logical_Switch_Port", port, "up=true"])
        .map(drop)
}

/// A distributed gateway port with SNAT: router `router` gets port `<router>-public` on a new
/// switch `public`, whose localnet port `ln-public` (network `phys`) is mapped to bridge
/// `br-ext` on the gateway chassis only; that chassis is the port's gateway chassis, so
/// `cr-<router>-public` is bound there and the other chassis redirect to it over the tunnel.
/// The router SNATs `snat_from` to the port's address. The external host is the `ext-host`
/// port of `br-ext`; its MAC is a static MAC binding (no ARP resolution through the
/// controller).
#[derive(Debug, Clone, Copy)]
pub struct SnatGateway {
    pub router_mac: Mac,
    pub router_ip: Ipv4Addr,
    pub host_mac: Mac,
    pub host_ip: Ipv4Addr,
    /// `address/prefix` of the internal networks to SNAT.
    pub snat_from: &'static str,
}

impl SnatGateway {
    pub const LAB: Self = Self {
        router_mac: Mac([0, 0, 0, 0, 0xff, 0x03]),
        router_ip: Ipv4Addr::new(172, 16, 0, 1),
        host_mac: Mac([0xf0, 0, 0, 0, 0, 0x64]),
        host_ip: Ipv4Addr::new(172, 16, 0, 100),
        snat_from: "10.0.0.0/16",
    };

    /// Builds it with `gateway` as the gateway chassis; returns the external host's port.
    /// Returns once the gateway chassis has claimed the chassisredirect port, every chassis
    /// has caught up, and the gateway chassis forwards the localnet port's packets (neither
    /// is covered by `--wait=hv`, with either controller).
    pub fn build(&self, central: &Central, router: &str, gateway: &Chassis) -> Result<Vif> {
        let mut hosts = self.build_ha(central, router, &[(gateway, 20)], HaForm::GatewayChassis)?;
        Ok(hosts.remove(0))
    }

    /// [`Self::build`] with an HA group of gateway chassis (these priorities, highest
    /// first, in the NB `form` given), each with its own external host on its `br-ext`;
    /// returns the hosts' ports in the order of `gateways`. Returns once the first gateway
    /// has claimed the chassisredirect port (with two or more gateways that takes BFD up
    /// between them) and every gateway forwards its localnet port's packets.
    pub fn build_ha(
        &self,
        central: &Central,
        router: &str,
        gateways: &[(&Chassis, u32)],
        form: HaForm,
    ) -> Result<Vec<Vif>> {
        let hosts = gateways
            .iter()
            .map(|(g, _)| Self::attach_external_host(g))
            .collect::<Result<Vec<_>>>()?;
        central.nbctl(&["ls-add", "public"])?;
        add_localnet_port(central, "public", "ln-public", "phys")?;
        let lrp = format!("{router}-public");
        attach_router_port(
            central,
            router,
            "public",
            &self.router_mac.to_string(),
            &format!("{}/24", self.router_ip),
        )?;
        match form {
            HaForm::GatewayChassis => {
                for (gateway, priority) in gateways {
                    central.nbctl(&[
                        "lrp-set-gateway-chassis",
                        &lrp,
                        gateway.name(),
                        &priority.to_string(),
                    ])?;
                }
            }
            HaForm::Group(group) => {
                central.nbctl(&["ha-chassis-group-add", group])?;
                for (gateway, priority) in gateways {
                    central.nbctl(&[
                        "ha-chassis-group-add-chassis",
                        group,
                        gateway.name(),
                        &priority.to_string(),
                    ])?;
                }
                let uuid = ha_chassis_group_uuid(central, group)?;
                central.nbctl(&[
                    "set",
                    "Logical_Router_Port",
                    &lrp,
                    &format!("ha_chassis_group={uuid}"),
                ])?;
            }
        }
        let router_ip = self.router_ip.to_string();
        central.nbctl(&["lr-nat-add", router, "snat", &router_ip, self.snat_from])?;
        let host_ip = self.host_ip.to_string();
        let host_mac = self.host_mac.to_string();
        central.nbctl(&["static-mac-binding-add", &lrp, &host_ip, &host_mac])?;
        central.wait_hv_sync()?;
        wait_port_up(central, &format!("public-{router}"))?;
        if let Some((first, _)) = gateways.first() {
            self.wait_gateway(central, router, first)?;
        }
        for (gateway, _) in &gateways[1..] {
            wait_for(
                "a table-0 flow for ln-public's patch port on a backup gateway",
                Duration::from_secs(30),
                || localnet_patch_forwards(gateway, "ln-public"),
            )?;
        }
        Ok(hosts)
    }

    /// The external host's port on `gateway`'s `br-ext`, mapped as network `phys`.
    pub fn attach_external_host(gateway: &Chassis) -> Result<Vif> {
        let ext = gateway.add_bridge_port("br-ext", "ext-host")?;
        gateway.vsctl(&[
            "set",
            "Open_vSwitch",
            ".",
            "external-ids:ovn-bridge-mappings=phys:br-ext",
        ])?;
        Ok(ext)
    }

    /// Waits until `gateway` holds `cr-<router>-public`, every chassis caught up, and it
    /// forwards the localnet port's packets.
    pub fn wait_gateway(&self, central: &Central, router: &str, gateway: &Chassis) -> Result<()> {
        let cr = format!("cr-{router}-public");
        wait_for(
            &format!("{cr} bound to {}", gateway.name()),
            Duration::from_secs(30),
            || {
                Ok(
                    (central.port_binding_chassis(&cr)?.as_deref() == Some(gateway.name()))
                        .then_some(()),
                )
            },
        )?;
        central.wait_hv_sync()?;
        wait_for(
            "a table-0 flow for ln-public's patch port on the gateway chassis",
            Duration::from_secs(30),
            || localnet_patch_forwards(gateway, "ln-public"),
        )
    }
}

/// How a gateway port names its gateway chassis in the Northbound database.
#[derive(Debug, Clone, Copy)]
pub enum HaForm {
    /// `Gateway_Chassis` rows (`lrp-set-gateway-chassis`), the older form.
    GatewayChassis,
    /// An `HA_Chassis_Group` of this name on the port.
    Group(&'static str),
}

/// The uuid of the Northbound `HA_Chassis_Group` named `name`.
pub fn ha_chassis_group_uuid(central: &Central, name: &str) -> Result<String> {
    let out = central.nbctl(&[
        "--bare",
        "--columns=_uuid",
        "find",
        "HA_Chassis_Group",
        &format!("name={name}"),
    ])?;
    out.split_whitespace()
        .next()
        .map(str::to_owned)
        .ok_or_else(|| HarnessError::Config(format!("no HA_Chassis_Group {name}")))
}

/// Whether table 0 of `chassis` takes packets from the br-int end of `localnet`'s patch port.
fn localnet_patch_forwards(chassis: &Chassis, localnet: &str) -> Result<Option<()>> {
    let ports = chassis.vsctl(&[
        "--bare",
        "--columns=name",
        "find",
        "Port",
        &format!("external_ids:ovn-localnet-port={localnet}"),
    ])?;
    // Both ends carry the key; the br-int end is named patch-br-int-to-*.
    let Some(port) = ports
        .split_whitespace()
        .find(|p| p.starts_with("patch-br-int-to-"))
    else {
        return Ok(None);
    };
    let ofport = chassis.vsctl(&["get", "Interface", port, "ofport"])?;
    let flows = chassis.ofctl(&[
        "--no-stats",
        "dump-flows",
        "br-int",
        &format!("table=0,in_port={}", ofport.trim()),
    ])?;
    Ok(flows.lines().any(|l| l.contains("actions=")).then_some(()))
}
