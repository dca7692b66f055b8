//! The OVS processes of a host: `ovsdb-server` for a fresh database, `ovs-vswitchd` on
//! a datapath, and `ovs-vsctl` against the host's database. The layer under the network,
//! the central node and the chassis.

use crate::daemon::{ControlSocket, Daemon};
use crate::error::Result;
use crate::host::Host;

/// The schemas of the stack the harness runs ([`crate::stack`]).
pub fn nb_schema() -> String {
    crate::stack::Stack::current().nb_schema()
}

pub fn sb_schema() -> String {
    crate::stack::Stack::current().sb_schema()
}

pub fn vswitch_schema() -> String {
    crate::stack::Stack::current().vswitch_schema()
}

/// The datapath of a chassis' bridges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Datapath {
    /// OVS's simulated datapath (`--enable-dummy`): interfaces are pcap files and unix
    /// sockets, so many chassis fit on one machine without touching the kernel.
    Dummy,
    /// The userspace datapath on real kernel interfaces (veths, taps): it needs no kernel
    /// module, so it runs in any container or network namespace.
    Netdev,
}

impl Datapath {
    /// The bridges' `datapath_type`.
    pub fn bridge_type(self) -> &'static str {
        match self {
            Self::Dummy => "dummy",
            Self::Netdev => "netdev",
        }
    }

    /// What `ovs-vswitchd` needs on its command line for this datapath.
    pub(crate) fn vswitchd_options(self) -> &'static [&'static str] {
        match self {
            Self::Dummy => &["--enable-dummy=system", "--disable-system"],
            Self::Netdev => &[],
        }
    }
}

/// Starts an `ovsdb-server` named `name` on `host` for a fresh database of `schema`, listening
/// on `<dir>/<name>.sock`.
pub fn start_ovsdb(host: &Host, name: &str, schema: &str) -> Result<Daemon> {
    start_ovsdb_listening(host, name, schema, &[])
}

/// Like [`start_ovsdb`], also listening on `extra_remotes` (e.g. `ptcp:6642`, for chassis on
/// other machines).
pub fn start_ovsdb_listening(
    host: &Host,
    name: &str,
    schema: &str,
    extra_remotes: &[String],
) -> Result<Daemon> {
    let db = host.path(&format!("{name}.db"));
    host.run("ovsdb-tool", &["create", &db.display().to_string(), schema])?;
    serve_ovsdb(host, name, extra_remotes, &[])
}

/// Starts an `ovsdb-server` named `name` on `host` for its existing database
/// `<dir>/<name>.db`, listening on `<dir>/<name>.sock` and on `extra_remotes`.
pub(crate) fn serve_ovsdb(
    host: &Host,
    name: &str,
    extra_remotes: &[String],
    options: &[String],
) -> Result<Daemon> {
    let db = host.path(&format!("{name}.db")).display().to_string();
    let mut args = vec![format!(
        "--remote=punix:{}",
        host.path(&format!("{name}.sock")).display()
    )];
    args.extend(extra_remotes.iter().map(|r| format!("--remote={r}")));
    args.extend(options.iter().cloned());
    args.push(db);
    Daemon::start(host, name, "ovsdb-server", ControlSocket::Explicit, &args)
}

/// `ovs-vswitchd` for bridges of `datapath`.
pub(crate) fn start_vswitchd(host: &Host, datapath: Datapath) -> Result<Daemon> {
    let db = format!("unix:{}", host.path("db.sock").display());
    host.run(
        "ovs-vsctl",
        &[format!("--db={db}"), "--no-wait".into(), "init".into()],
    )?;
    let mut args: Vec<&str> = datapath.vswitchd_options().to_vec();
    args.push(&db);
    Daemon::start(
        host,
        "ovs-vswitchd",
        "ovs-vswitchd",
        ControlSocket::Explicit,
        &args,
    )
}

pub(crate) fn vsctl<S: AsRef<str>>(host: &Host, args: &[S]) -> Result<String> {
    let mut all = vec![
        format!("--db=unix:{}", host.path("db.sock").display()),
        "--timeout=30".to_owned(),
    ];
    all.extend(args.iter().map(|a| a.as_ref().to_owned()));
    host.run("ovs-vsctl", &all)
}
