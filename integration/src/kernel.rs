//! Kernel interfaces of a node that runs on real networking (a container, or a network
//! namespace in a test) rather than the dummy datapath: waiting for the links containerlab
//! plugs in, the central node's underlay bridge, and VMs as network namespaces joined to
//! `br-int` by a veth pair.

use std::net::Ipv4Addr;
use std::time::Duration;

use crate::error::{HarnessError, Result};
use crate::host::{wait_for, Host};
use crate::ovs::vsctl;
use crate::packet::Mac;

/// Runs `ip ARGS` in the node's network namespace (the caller's).
pub fn ip<S: AsRef<str>>(host: &Host, args: &[S]) -> Result<String> {
    host.run("ip", args)
}

/// Waits until interface `name` exists (asked over netlink, so the answer is about the
/// caller's network namespace even where `/sys` belongs to another).
pub fn wait_for_interface(host: &Host, name: &str, timeout: Duration) -> Result<()> {
    wait_for(&format!("interface {name}"), timeout, || {
        Ok(ip(host, &["link", "show", "dev", name]).ok().map(drop))
    })
}

/// Makes the kernel fill in the checksums of what it sends on `iface` (`ethtool -K IFACE tx
/// off`). Needed on every veth whose peer the userspace datapath reads: it takes packets
/// from the socket as they are, so a checksum left for the NIC to compute stays wrong and
/// the receiving stack drops the packet (TCP and UDP; ICMP is complete either way).
pub fn compute_tx_checksums(host: &Host, iface: &str) -> Result<()> {
    host.run("ethtool", &["-K", iface, "tx", "off"]).map(drop)
}

/// A Linux bridge `name` joining `ports` (each waited for), with address `cidr`: the central
/// node is the underlay switch of the chassis linked to it, and serves the databases on it.
/// The chassis on the far ends run the userspace datapath, so the ports send full checksums.
pub fn underlay_bridge(
    host: &Host,
    name: &str,
    ports: &[String],
    cidr: &str,
    timeout: Duration,
) -> Result<()> {
    ip(host, &["link", "add", name, "type", "bridge"])?;
    for port in ports {
        wait_for_interface(host, port, timeout)?;
        ip(host, &["link", "set", port, "master", name])?;
        compute_tx_checksums(host, port)?;
        ip(host, &["link", "set", port, "up"])?;
    }
    ip(host, &["addr", "add", cidr, "dev", name])?;
    ip(host, &["link", "set", name, "up"]).map(drop)
}

/// A VM: a network namespace whose `eth0` is one end of a veth pair; the other end, on
/// `br-int`, carries `external_ids:iface-id` of its logical switch port.
#[derive(Debug, Clone)]
pub struct NamespaceVm {
    /// The network namespace, also the base of the `br-int` end's name.
    pub netns: String,
    pub iface_id: String,
    pub mac: Mac,
    pub ip: Ipv4Addr,
    pub prefix: u8,
    pub gateway: Option<Ipv4Addr>,
    /// Small enough for a Geneve-encapsulated frame to fit the underlay's 1500 bytes.
    pub mtu: u16,
}

impl NamespaceVm {
    /// The `br-int` end of the veth pair (interface names have at most 15 bytes).
    pub fn port_name(&self) -> Result<String> {
        let name = format!("{}-p", self.netns);
        if name.len() > 15 {
            return Err(HarnessError::Config(format!(
                "VM namespace {:?} is too long: {name:?} must fit in 15 bytes",
                self.netns
            )));
        }
        Ok(name)
    }

    /// Creates the namespace and the veth pair and plugs the VM into the chassis on `host`.
    pub fn plug(&self, host: &Host) -> Result<()> {
        let port = self.port_name()?;
        let ns = self.netns.as_str();
        ip(host, &["netns", "add", ns])?;
        ip(
            host,
            &[
                "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", ns,
            ],
        )?;
        let mtu = self.mtu.to_string();
        let mac = self.mac.to_string();
        let cidr = format!("{}/{}", self.ip, self.prefix);
        ip(host, &["-n", ns, "link", "set", "lo", "up"])?;
        ip(host, &["-n", ns, "link", "set", "eth0", "address", &mac])?;
        ip(host, &["-n", ns, "link", "set", "eth0", "mtu", &mtu])?;
        ip(host, &["-n", ns, "addr", "add", &cidr, "dev", "eth0"])?;
        ip(host, &["-n", ns, "link", "set", "eth0", "up"])?;
        // The br-int end is read by the userspace datapath (see compute_tx_checksums).
        host.run(
            "ip",
            &["netns", "exec", ns, "ethtool", "-K", "eth0", "tx", "off"],
        )?;
        if let Some(gateway) = self.gateway {
            let gateway = gateway.to_string();
            ip(
                host,
                &["-n", ns, "route", "add", "default", "via", &gateway],
            )?;
        }
        ip(host, &["link", "set", &port, "mtu", &mtu])?;
        ip(host, &["link", "set", &port, "up"])?;
        vsctl(
            host,
            &[
                "add-port",
                "br-int",
                &port,
                "--",
                "set",
                "Interface",
                &port,
                &format!("external-ids:iface-id={}", self.iface_id),
            ],
        )
        .map(drop)
    }
}

/// Removes VM namespace `netns` from the chassis on `host`: its `br-int` port and the
/// namespace (which takes the veth pair with it).
pub fn unplug_vm(host: &Host, netns: &str) -> Result<()> {
    let port = format!("{netns}-p");
    vsctl(host, &["--if-exists", "del-port", "br-int", &port])?;
    ip(host, &["netns", "delete", netns]).map(drop)
}
