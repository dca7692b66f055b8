//! The physical network between chassis: a separate `ovs-vswitchd` whose bridge `n1` is joined
//! to every chassis' `br-phys` by a dummy port pair over a unix socket (the OVN testsuite's
//! `net_add` / `net_attach`).

use std::path::Path;

use crate::daemon::Daemon;
use crate::error::Result;
use crate::host::Host;
pub(crate) use crate::ovs::{start_ovsdb, start_vswitchd, vsctl};
use crate::ovs::{vswitch_schema, Datapath};

pub const NETWORK_BRIDGE: &str = "n1";

#[derive(Debug)]
pub struct Network {
    vswitchd: Daemon,
    ovsdb: Daemon,
    host: Host,
}

impl Network {
    pub fn start(parent: &Path) -> Result<Self> {
        let host = Host::create(parent, "network")?;
        let ovsdb = start_ovsdb(&host, "db", &vswitch_schema())?;
        let vswitchd = start_vswitchd(&host, Datapath::Dummy)?;
        let net = Self {
            vswitchd,
            ovsdb,
            host,
        };
        net.vsctl(&[
            "add-br",
            NETWORK_BRIDGE,
            "--",
            "set",
            "bridge",
            NETWORK_BRIDGE,
            "datapath_type=dummy",
        ])?;
        Ok(net)
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    pub fn vsctl<S: AsRef<str>>(&self, args: &[S]) -> Result<String> {
        vsctl(&self.host, args)
    }

    /// Adds the network side of a link for `chassis` and returns the unix socket that the
    /// chassis' end must connect to.
    pub(crate) fn add_link(&self, chassis: &str) -> Result<String> {
        let port = format!("{chassis}_br-phys");
        let sock = self.host.path(&format!("{port}.sock"));
        self.vsctl(&[
            "add-port",
            NETWORK_BRIDGE,
            &port,
            "--",
            "set",
            "Interface",
            &port,
            &format!("options:pstream=punix:{}", sock.display()),
        ])?;
        Ok(format!("unix:{}", sock.display()))
    }

    /// Removes the network side of `chassis`' link (after the chassis stopped), so that a
    /// chassis of the same name can be linked again.
    pub(crate) fn remove_link(&self, chassis: &str) -> Result<()> {
        let port = format!("{chassis}_br-phys");
        self.vsctl(&["--if-exists", "del-port", NETWORK_BRIDGE, &port])
            .map(drop)
    }

    pub fn vswitchd(&self) -> &Daemon {
        &self.vswitchd
    }

    pub fn ovsdb(&self) -> &Daemon {
        &self.ovsdb
    }
}
