//! What can be wrong with the rows or the runtime state a physical flow is built from.
//! ovn-controller logs these (rate-limited) and installs what it can; so do we, and the
//! problems are returned to the caller to be counted and logged.

use sbclient::Uuid;

use crate::owner::Owner;

/// Why (part of) an owner's physical flows could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    #[error("datapath {0} does not exist")]
    MissingDatapath(Uuid),
    #[error("{what} tunnel key {value} is out of range")]
    BadKey { what: &'static str, value: i64 },
    #[error("VLAN tag {0} is out of range 1..4095")]
    BadTag(i64),
    #[error("port {port}: MAC {value:?} does not parse")]
    BadMac { port: String, value: String },
    /// An `ovn-chassis-mac-mappings` entry without a MAC (ovn-controller's words).
    #[error("Parsing of ovn-chassis-mac-mappings failed for: \"{0}\", the correct format is \"br-name1:MAC1\".")]
    ChassisMacMapping(String),
    #[error("router port {port} has {count} MACs; exactly one is needed")]
    RouterPortMacCount { port: String, count: usize },
    #[error("no tunnel to chassis {0}")]
    NoTunnel(String),
    #[error("HA chassis group of port {0} mixes encapsulations")]
    MixedHaEncapsulations(String),
    #[error("no tunnel to any chassis of the HA chassis group of port {0}")]
    NoHaTunnel(String),
    #[error("chassisredirect port {cr}: distributed port {distributed:?} does not exist")]
    NoDistributedPort { cr: String, distributed: String },
    #[error("chassisredirect port {cr}: distributed port {distributed} is on another datapath")]
    DistributedPortElsewhere { cr: String, distributed: String },
    #[error("multicast group member {0} is on another datapath")]
    MemberOnOtherDatapath(Uuid),
    /// ovn-controller's words.
    #[error("Unknown activation strategy defined for port {port}: {strategy}")]
    UnknownActivationStrategy { port: String, strategy: String },
    #[error("Geneve tunnels exist but no tun_metadata field carries OVN's option yet")]
    NoGeneveField,
}

impl Problem {
    /// Whether the problem is the local switch not having caught up yet (tunnels or the
    /// Geneve option field are created by the same run's OVS transaction): expected at
    /// start and when a chassis joins, so not worth a warning.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::NoTunnel(_) | Self::NoHaTunnel(_) | Self::NoGeneveField
        )
    }
}

/// A problem and the owner it belongs to.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{owner}: {problem}")]
pub struct PhysicalError {
    pub owner: Owner,
    pub problem: Problem,
}
