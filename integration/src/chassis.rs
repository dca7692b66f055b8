//! One hypervisor: its own `ovsdb-server` and `ovs-vswitchd` with `br-int` and `br-phys`, and a
//! controller (`ovn-controller` or `ovn-agent`). In the one-machine lab it is simulated on the
//! dummy datapath (VIFs are dummy interfaces writing pcap files); in a container it runs the
//! userspace datapath on real interfaces. Both go through the same set-up steps here.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::central::Central;
use crate::controller::Controller;
use crate::daemon::{ControlSocket, Daemon};
use crate::error::{HarnessError, Result};
use crate::host::{wait_for, Host};
use crate::kernel;
use crate::network::Network;
use crate::ovs::{start_ovsdb, start_vswitchd, vsctl};
pub use crate::ovs::{vswitch_schema, Datapath};
use crate::pcap;

/// Prefix length of the simulated underlay on which Geneve runs.
pub const UNDERLAY_PREFIX: u8 = 24;
/// How long a chassis waits for its underlay interface to appear (containerlab adds links
/// after the container started).
pub const INTERFACE_TIMEOUT: Duration = Duration::from_secs(90);

#[derive(Debug)]
pub struct Chassis {
    // Field order is drop order: the controller stops first, the database last.
    controller: Option<Daemon>,
    vswitchd: Daemon,
    ovsdb: Daemon,
    host: Host,
    datapath: Datapath,
    encap_ip: Option<Ipv4Addr>,
}

/// A VIF: a dummy interface on `br-int` whose transmitted packets land in a pcap file.
#[derive(Debug, Clone)]
pub struct Vif {
    pub name: String,
    pub iface_id: String,
    pub tx_pcap: PathBuf,
}

impl Vif {
    /// The packets that OVS delivered to this VIF so far, oldest first.
    pub fn transmitted(&self) -> Result<Vec<Vec<u8>>> {
        pcap::read_packets(&self.tx_pcap)
    }

    /// Waits until a delivered packet satisfies `matches` and returns it.
    pub fn wait_for_packet(
        &self,
        timeout: Duration,
        mut matches: impl FnMut(&[u8]) -> bool,
    ) -> Result<Vec<u8>> {
        wait_for(
            &format!("a matching packet on VIF {}", self.name),
            timeout,
            || Ok(self.transmitted()?.into_iter().find(|p| matches(p))),
        )
    }
}

impl Chassis {
    /// Starts the chassis' OVS (database, vswitchd, `br-int`) on the dummy datapath in
    /// `parent/name`, without a controller.
    pub fn start_bare(parent: &Path, name: &str) -> Result<Self> {
        Self::start_bare_on(Host::create(parent, name)?, Datapath::Dummy)
    }

    /// Starts the chassis' OVS (database, vswitchd, `br-int`) on `host` with bridges of
    /// `datapath`, without a controller. The chassis is named as the host.
    pub fn start_bare_on(host: Host, datapath: Datapath) -> Result<Self> {
        let ovsdb = start_ovsdb(&host, "db", &vswitch_schema())?;
        let vswitchd = start_vswitchd(&host, datapath)?;
        let chassis = Self {
            controller: None,
            vswitchd,
            ovsdb,
            host,
            datapath,
            encap_ip: None,
        };
        chassis.vsctl(&[
            "add-br",
            "br-int",
            "--",
            "set",
            "bridge",
            "br-int",
            &format!("datapath_type={}", datapath.bridge_type()),
            "fail-mode=secure",
            "other-config:disable-in-band=true",
        ])?;
        Ok(chassis)
    }

    /// Creates `br-phys`, links it to the simulated `network` and gives it the underlay
    /// address `ip` (the OVN testsuite's `ovn_attach` without starting the controller).
    /// Dummy datapath only.
    pub fn attach(&mut self, network: &Network, ip: Ipv4Addr) -> Result<()> {
        self.require_datapath(Datapath::Dummy, "linking to the simulated network")?;
        let stream = network.add_link(self.name())?;
        self.vsctl(&[
            "add-br",
            "br-phys",
            "--",
            "set",
            "bridge",
            "br-phys",
            "datapath_type=dummy",
            "--",
            "add-port",
            "br-phys",
            "br-phys_n1",
            "--",
            "set",
            "Interface",
            "br-phys_n1",
            &format!("options:stream={stream}"),
        ])?;
        let cidr = format!("{ip}/{UNDERLAY_PREFIX}");
        self.appctl(&["netdev-dummy/ip4addr", "br-phys", &cidr])?;
        self.appctl(&["ovs/route/add", &cidr, "br-phys"])?;
        self.encap_ip = Some(ip);
        Ok(())
    }

    /// Puts the kernel interface `iface` (a veth that containerlab, or a test, plugs in; waited
    /// for) into a new `br-phys` and gives the bridge's own port the underlay address
    /// `ip/prefix`, from which the userspace datapath sends Geneve. Netdev datapath only.
    pub fn attach_interface(&mut self, iface: &str, ip: Ipv4Addr, prefix: u8) -> Result<()> {
        self.require_datapath(Datapath::Netdev, "attaching a kernel interface")?;
        kernel::wait_for_interface(&self.host, iface, INTERFACE_TIMEOUT)?;
        self.vsctl(&[
            "add-br",
            "br-phys",
            "--",
            "set",
            "bridge",
            "br-phys",
            "datapath_type=netdev",
            "--",
            "add-port",
            "br-phys",
            iface,
        ])?;
        // An address left on the enslaved interface would make the kernel answer ARP and
        // route there instead of through the bridge that carries the tunnels.
        kernel::ip(&self.host, &["addr", "flush", "dev", iface])?;
        kernel::ip(&self.host, &["link", "set", iface, "up"])?;
        kernel::wait_for_interface(&self.host, "br-phys", INTERFACE_TIMEOUT)?;
        let cidr = format!("{ip}/{prefix}");
        kernel::ip(&self.host, &["addr", "add", &cidr, "dev", "br-phys"])?;
        kernel::ip(&self.host, &["link", "set", "br-phys", "up"])?;
        self.encap_ip = Some(ip);
        Ok(())
    }

    fn require_datapath(&self, datapath: Datapath, what: &str) -> Result<()> {
        if self.datapath == datapath {
            return Ok(());
        }
        Err(HarnessError::Config(format!(
            "chassis {}: {what} needs the {} datapath, not {}",
            self.name(),
            datapath.bridge_type(),
            self.datapath.bridge_type()
        )))
    }

    /// Points the chassis at the Southbound database `sb_remote` (`external_ids` system-id,
    /// hostname, ovn-remote, Geneve encapsulation from the underlay address).
    pub fn configure_ovn(&self, sb_remote: &str) -> Result<()> {
        let ip = self.encap_ip.ok_or_else(|| {
            HarnessError::Config(format!(
                "chassis {} is not attached to a network",
                self.name()
            ))
        })?;
        let mut settings = vec![
            format!("external-ids:system-id={}", self.name()),
            format!("external-ids:hostname={}", self.name()),
            format!("external-ids:ovn-remote={sb_remote}"),
            "external-ids:ovn-encap-type=geneve".to_owned(),
            format!("external-ids:ovn-encap-ip={ip}"),
        ];
        // On another release's stack ovn-agent follows that northd (ovn-controller ignores
        // the key); on the system's it keeps its own classic layout.
        if !crate::stack::Stack::current().is_system() {
            settings.push("external-ids:ovn-agent-table-layout=auto".to_owned());
        }
        let mut args = vec!["set", "Open_vSwitch", "."];
        args.extend(settings.iter().map(String::as_str));
        self.vsctl(&args).map(drop)
    }

    /// Starts `controller` against this chassis' OVS database (configured by
    /// [`Chassis::configure_ovn`]) and waits until it answers on its control socket.
    pub fn spawn_controller(&mut self, controller: &Controller) -> Result<()> {
        self.spawn_controller_with(controller, &[])
    }

    /// Like [`Chassis::spawn_controller`], with options before the database argument
    /// (`-p KEY -c CERT -C CA`, ...).
    pub fn spawn_controller_with(
        &mut self,
        controller: &Controller,
        options: &[String],
    ) -> Result<()> {
        let db = format!("unix:{}", self.host.path("db.sock").display());
        let mut args = options.to_vec();
        args.push(db);
        let daemon = Daemon::start(
            &self.host,
            controller.ctl_name(),
            &controller.program(),
            ControlSocket::ByPid(controller.ctl_name()),
            &args,
        )?;
        self.controller = Some(daemon);
        Ok(())
    }

    /// Points the chassis at the Southbound database of `central`, starts `controller` and
    /// waits until it registered there.
    pub fn start_controller(&mut self, central: &Central, controller: &Controller) -> Result<()> {
        self.configure_ovn(&central.sb_remote())?;
        self.spawn_controller(controller)?;
        central.wait_for_chassis(self.name(), Duration::from_secs(30))
    }

    /// The name of a daemon of this chassis that is no longer running (crashed, or killed).
    pub fn exited_daemon(&mut self) -> Option<String> {
        let daemons = self
            .controller
            .iter_mut()
            .chain([&mut self.vswitchd, &mut self.ovsdb]);
        for daemon in daemons {
            if !daemon.is_running() {
                return Some(daemon.name().to_owned());
            }
        }
        None
    }

    /// Stops the controller (by pid), leaving OVS running with the flows it installed.
    pub fn stop_controller(&mut self) {
        self.controller = None;
    }

    /// Kills the controller with SIGKILL (a crash), leaving OVS running with its flows.
    pub fn crash_controller(&mut self) {
        if let Some(mut daemon) = self.controller.take() {
            daemon.crash();
        }
    }

    /// Stops `ovs-vswitchd` (by pid) and starts it again on the same database, as an OVS
    /// upgrade or crash does: the switch comes back without flows, groups or meters. The
    /// simulated underlay's address and route (kept in vswitchd's memory) are set again.
    pub fn restart_vswitchd(&mut self) -> Result<()> {
        self.vswitchd.stop();
        self.vswitchd = start_vswitchd(&self.host, self.datapath)?;
        if let (Datapath::Dummy, Some(ip)) = (self.datapath, self.encap_ip) {
            let cidr = format!("{ip}/{UNDERLAY_PREFIX}");
            // br-phys exists once vswitchd has read its database: retried until then.
            wait_for(
                "br-phys after the vswitchd restart",
                Duration::from_secs(20),
                || {
                    Ok(self
                        .appctl(&["netdev-dummy/ip4addr", "br-phys", &cidr])
                        .ok()
                        .map(|_| ()))
                },
            )?;
            self.appctl(&["ovs/route/add", &cidr, "br-phys"])?;
        }
        Ok(())
    }

    /// Stops the controller with `exit` (the chassis leaves the Southbound database and its
    /// tunnels go from the bridge), waiting up to `timeout` for the process to end.
    pub fn exit_controller(&mut self, timeout: Duration) -> Result<()> {
        self.controller_appctl(&["exit"])?;
        let name = self.name().to_owned();
        let daemon = self
            .controller
            .as_mut()
            .ok_or_else(|| HarnessError::Config(format!("no controller runs on {name}")))?;
        wait_for(
            &format!("the controller on {name} to exit"),
            timeout,
            || Ok((!daemon.is_running()).then_some(())),
        )?;
        self.controller = None;
        Ok(())
    }

    pub fn name(&self) -> &str {
        self.host.name()
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    pub fn datapath(&self) -> Datapath {
        self.datapath
    }

    pub fn encap_ip(&self) -> Option<Ipv4Addr> {
        self.encap_ip
    }

    pub fn controller(&self) -> Option<&Daemon> {
        self.controller.as_ref()
    }

    pub fn vswitchd(&self) -> &Daemon {
        &self.vswitchd
    }

    pub fn ovsdb(&self) -> &Daemon {
        &self.ovsdb
    }

    /// The OpenFlow management socket of `br-int`, as the controller uses it.
    pub fn br_int_mgmt(&self) -> PathBuf {
        self.host.path("br-int.mgmt")
    }

    /// MAC address in use on `br-phys` (the tunnel endpoint's MAC).
    pub fn br_phys_mac(&self) -> Result<String> {
        let mac = self.vsctl(&["get", "Interface", "br-phys", "mac_in_use"])?;
        Ok(mac.trim().trim_matches('"').to_owned())
    }

    pub fn vsctl<S: AsRef<str>>(&self, args: &[S]) -> Result<String> {
        vsctl(&self.host, args)
    }

    /// `ovs-appctl` to this chassis' `ovs-vswitchd`.
    pub fn appctl<S: AsRef<str>>(&self, args: &[S]) -> Result<String> {
        let mut all = vec!["-t".to_owned(), self.vswitchd.ctl().display().to_string()];
        all.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self.host.run("ovs-appctl", &all)
    }

    /// `ovn-appctl` to this chassis' controller.
    pub fn controller_appctl<S: AsRef<str>>(&self, args: &[S]) -> Result<String> {
        let ctl = self
            .controller
            .as_ref()
            .ok_or_else(|| HarnessError::Config(format!("no controller runs on {}", self.name())))?
            .ctl()
            .display()
            .to_string();
        let mut all = vec!["-t".to_owned(), ctl];
        all.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self.host.run("ovn-appctl", &all)
    }

    /// `ovs-ofctl -O OpenFlow15 ARGS` (the bridge name resolves to `<dir>/<bridge>.mgmt`).
    pub fn ofctl<S: AsRef<str>>(&self, args: &[S]) -> Result<String> {
        let mut all = vec!["-O".to_owned(), "OpenFlow15".to_owned()];
        all.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self.host.run("ovs-ofctl", &all)
    }

    /// Number of OpenFlow flows in `bridge` (`ovs-ofctl dump-aggregate`).
    pub fn flow_count(&self, bridge: &str) -> Result<u64> {
        let out = self.ofctl(&["dump-aggregate", bridge])?;
        out.split_whitespace()
            .find_map(|w| w.strip_prefix("flow_count="))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| HarnessError::Config(format!("no flow_count in {out:?}")))
    }

    /// Adds VIF `name` on `br-int` for logical port `iface_id`.
    pub fn add_vif(&self, name: &str, iface_id: &str) -> Result<Vif> {
        let mut vifs = self.add_vifs(&[(name, iface_id)])?;
        vifs.pop()
            .ok_or_else(|| HarnessError::Config("no VIF created".into()))
    }

    /// Adds many VIFs (`(interface name, logical port)`) in one `ovs-vsctl` transaction.
    pub fn add_vifs(&self, vifs: &[(&str, &str)]) -> Result<Vec<Vif>> {
        let mut args: Vec<String> = Vec::new();
        let mut created = Vec::with_capacity(vifs.len());
        for (name, iface_id) in vifs {
            let tx_pcap = self.host.path(&format!("{name}-tx.pcap"));
            let rx_pcap = self.host.path(&format!("{name}-rx.pcap"));
            args.extend([
                "--".to_owned(),
                "add-port".to_owned(),
                "br-int".to_owned(),
                (*name).to_owned(),
                "--".to_owned(),
                "set".to_owned(),
                "Interface".to_owned(),
                (*name).to_owned(),
                format!("external-ids:iface-id={iface_id}"),
                format!("options:tx_pcap={}", tx_pcap.display()),
                format!("options:rxq_pcap={}", rx_pcap.display()),
            ]);
            created.push(Vif {
                name: (*name).to_owned(),
                iface_id: (*iface_id).to_owned(),
                tx_pcap,
            });
        }
        self.vsctl(&args)?;
        Ok(created)
    }

    /// Adds a dummy port `name` on bridge `bridge` (created, of the dummy datapath, if missing)
    /// whose transmitted packets land in a pcap file: a host on the physical network behind a
    /// localnet port when `bridge` is mapped in `ovn-bridge-mappings`.
    pub fn add_bridge_port(&self, bridge: &str, name: &str) -> Result<Vif> {
        let tx_pcap = self.host.path(&format!("{name}-tx.pcap"));
        let rx_pcap = self.host.path(&format!("{name}-rx.pcap"));
        self.vsctl(&[
            "--may-exist",
            "add-br",
            bridge,
            "--",
            "set",
            "bridge",
            bridge,
            &format!("datapath_type={}", self.datapath.bridge_type()),
            "--",
            "add-port",
            bridge,
            name,
            "--",
            "set",
            "Interface",
            name,
            &format!("options:tx_pcap={}", tx_pcap.display()),
            &format!("options:rxq_pcap={}", rx_pcap.display()),
        ])?;
        Ok(Vif {
            name: name.to_owned(),
            iface_id: String::new(),
            tx_pcap,
        })
    }

    /// Makes `packet` arrive on interface `vif` as if the VM had sent it.
    pub fn inject(&self, vif: &Vif, packet: &[u8]) -> Result<()> {
        self.appctl(&["netdev-dummy/receive", &vif.name, &hex::encode(packet)])
            .map(drop)
    }
}
