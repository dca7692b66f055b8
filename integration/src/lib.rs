//! Test harness that runs the real OVN and OVS daemons: NB/SB `ovsdb-server`s and
//! `ovn-northd` ([`Central`]), one `ovsdb-server` + `ovs-vswitchd` on the dummy datapath per
//! simulated hypervisor ([`Chassis`]), a separate `ovs-vswitchd` that carries Geneve between
//! them ([`Network`]), and a per-chassis controller: the real `ovn-controller` or our
//! `ovn-agent` ([`Controller`]). [`Lab`] puts them together in a temporary directory.
//! The same [`Central`] and [`Chassis`] set up one node of a container lab (the `ovn-node`
//! binary, containers/): there a chassis runs the userspace datapath on kernel interfaces
//! ([`kernel`]) instead of the dummy one.
//!
//! Every daemon is a child of the test process and is stopped by pid when its guard drops,
//! also when the test fails; nothing uses fixed ports, so tests run in parallel.

pub mod cargo;
pub mod central;
pub mod chassis;
pub mod controller;
pub mod daemon;
pub mod differential;
pub mod error;
pub mod flows;
pub mod host;
pub mod kernel;
pub mod lab;
pub mod local_ovs;
pub mod network;
pub mod observe;
pub mod oracle;
pub mod ovs;
pub mod ovsdb_cluster;
pub mod packet;
pub mod pcap;
pub mod reference;
pub mod sbdump;
pub mod sbwatch;
pub mod scale;
pub mod scenario;
pub mod stack;

pub use central::Central;
pub use chassis::{Chassis, Datapath, Vif};
pub use controller::Controller;
pub use daemon::Daemon;
pub use error::{HarnessError, Result};
pub use host::Host;
pub use lab::Lab;
pub use network::Network;
