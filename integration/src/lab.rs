//! A whole simulated deployment in one temporary directory: the central node, the physical
//! network and any number of chassis. Dropping the lab stops every daemon by pid; when the
//! thread is panicking (a failed test) the directory is kept and its path printed, so that the
//! logs can be read.

use std::net::Ipv4Addr;
use std::path::Path;

use tempfile::TempDir;

use crate::central::Central;
use crate::chassis::Chassis;
use crate::controller::Controller;
use crate::error::{io_error, HarnessError, Result};
use crate::network::Network;

#[derive(Debug)]
pub struct Lab {
    // Field order is drop order: chassis (and their controllers) first, the directory last.
    chassis: Vec<Chassis>,
    network: Network,
    central: Central,
    dir: Option<TempDir>,
    next_address: u8,
    /// Keep the directory when the lab is dropped (see [`Lab::keep_dir`]).
    keep_dir: bool,
}

impl Lab {
    /// Starts the central node and the network in a fresh temporary directory.
    pub fn start() -> Result<Self> {
        Self::start_with_sb_schema(&crate::central::sb_schema())
    }

    /// Like [`Lab::start`], with the Southbound database created from `sb_schema` (for
    /// controllers facing an older schema).
    pub fn start_with_sb_schema(sb_schema: &str) -> Result<Self> {
        Self::start_with(|dir| Central::start_with_sb_schema(dir, sb_schema))
    }

    /// Like [`Lab::start`], the central node's databases also listening (and the
    /// Southbound server started with the options) of `listen`.
    pub fn start_listening(listen: &crate::central::CentralListen) -> Result<Self> {
        Self::start_with(|dir| {
            let host = crate::host::Host::create(dir, "central")?;
            Central::start_on(host, &crate::central::sb_schema(), listen)
        })
    }

    /// Like [`Lab::start`], with the Southbound database a Raft cluster of `servers` servers.
    pub fn start_clustered(servers: usize) -> Result<Self> {
        Self::start_with(|dir| Central::start_clustered(dir, servers))
    }

    fn start_with(central: impl FnOnce(&Path) -> Result<Central>) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("ovn-lab-")
            .tempdir()
            .map_err(io_error("create the lab directory"))?;
        let central = central(dir.path())?;
        let network = Network::start(dir.path())?;
        Ok(Self {
            chassis: Vec::new(),
            network,
            central,
            dir: Some(dir),
            next_address: 1,
            keep_dir: false,
        })
    }

    /// Adds a chassis named `name` with the next underlay address (192.168.0.1, .2, ...), links
    /// it to the network, teaches every chassis the others' tunnel MACs, and starts
    /// `controller` on it.
    pub fn add_chassis(&mut self, name: &str, controller: &Controller) -> Result<&mut Chassis> {
        self.add_bare_chassis(name)?;
        self.start_controller(name, controller)?;
        self.chassis_mut(name)
    }

    /// Like [`Lab::add_chassis`] but without a controller, so that VIFs can be plugged first.
    pub fn add_bare_chassis(&mut self, name: &str) -> Result<&mut Chassis> {
        let index = self.next_address;
        if index == u8::MAX {
            return Err(HarnessError::Config("too many chassis".into()));
        }
        self.next_address += 1;
        let ip = Ipv4Addr::new(192, 168, 0, index);
        let mut chassis = Chassis::start_bare(self.dir(), name)?;
        chassis.attach(&self.network, ip)?;
        let mac = chassis.br_phys_mac()?;
        for other in &self.chassis {
            if let Some(other_ip) = other.encap_ip() {
                other.appctl(&["tnl/arp/set", "br-phys", &ip.to_string(), &mac])?;
                let other_mac = other.br_phys_mac()?;
                chassis.appctl(&["tnl/arp/set", "br-phys", &other_ip.to_string(), &other_mac])?;
            }
        }
        self.chassis.push(chassis);
        self.chassis_mut(name)
    }

    /// Starts `controller` on chassis `name` and waits until it registered in the SB.
    pub fn start_controller(&mut self, name: &str, controller: &Controller) -> Result<()> {
        let chassis = self
            .chassis
            .iter_mut()
            .find(|c| c.name() == name)
            .ok_or_else(|| HarnessError::Config(format!("no chassis named {name}")))?;
        chassis.start_controller(&self.central, controller)
    }

    /// Stops chassis `name` (controller and OVS) and deletes its Southbound records, as an
    /// operator decommissioning a hypervisor does.
    pub fn remove_chassis(&mut self, name: &str) -> Result<()> {
        let before = self.chassis.len();
        self.chassis.retain(|c| c.name() != name);
        if self.chassis.len() == before {
            return Err(HarnessError::Config(format!("no chassis named {name}")));
        }
        self.central
            .sbctl(&["--if-exists", "chassis-del", name])
            .map(drop)
    }

    /// Stops chassis `name` (controller and OVS) and leaves its Southbound records (`Chassis`,
    /// `Chassis_Private`, `Encap`, its claims), as a hypervisor that is switched off does: a
    /// chassis added later under the same name takes them over. Its directory (logs, database)
    /// is kept, renamed to `<name>.stopped<N>`, so that the name can be used again.
    pub fn stop_chassis(&mut self, name: &str) -> Result<()> {
        let before = self.chassis.len();
        self.chassis.retain(|c| c.name() != name);
        if self.chassis.len() == before {
            return Err(HarnessError::Config(format!("no chassis named {name}")));
        }
        self.network.remove_link(name)?;
        let dir = self.dir().join(name);
        let kept = (0..u32::MAX)
            .map(|n| self.dir().join(format!("{name}.stopped{n}")))
            .find(|p| !p.exists())
            .unwrap_or_else(|| self.dir().join(format!("{name}.stopped")));
        std::fs::rename(&dir, &kept).map_err(io_error(format!(
            "rename {} to {}",
            dir.display(),
            kept.display()
        )))
    }

    /// Keeps the directory (logs, databases) when the lab is dropped, and prints its path.
    pub fn keep_dir(&mut self) {
        self.keep_dir = true;
    }

    pub fn dir(&self) -> &Path {
        // The directory lives as long as the lab; it is only taken in Drop.
        self.dir
            .as_ref()
            .map_or(Path::new("/nonexistent"), TempDir::path)
    }

    pub fn central(&self) -> &Central {
        &self.central
    }

    pub fn central_mut(&mut self) -> &mut Central {
        &mut self.central
    }

    pub fn network(&self) -> &Network {
        &self.network
    }

    /// The chassis named `name`.
    pub fn chassis(&self, name: &str) -> Result<&Chassis> {
        self.chassis
            .iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| HarnessError::Config(format!("no chassis named {name}")))
    }

    pub fn chassis_mut(&mut self, name: &str) -> Result<&mut Chassis> {
        self.chassis
            .iter_mut()
            .find(|c| c.name() == name)
            .ok_or_else(|| HarnessError::Config(format!("no chassis named {name}")))
    }

    pub fn all_chassis(&self) -> &[Chassis] {
        &self.chassis
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Stop the daemons explicitly before deciding about the directory.
        self.chassis.clear();
        if self.keep_dir || std::thread::panicking() {
            if let Some(dir) = self.dir.take() {
                let kept = dir.keep();
                eprintln!("lab directory kept for inspection: {}", kept.display());
            }
        }
    }
}
