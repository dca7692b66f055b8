//! Owners: what produced a set of desired flows (the key that removes exactly its share).

use sbclient::Uuid;

/// A Southbound row (or other object) whose flows come and go together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    Lflow(Uuid),
    MacBinding(Uuid),
    StaticMacBinding(Uuid),
    Fdb(Uuid),
    PortSecurity(Uuid),
    LbHairpin(Uuid),
    /// The physical flows of one Port_Binding (tables 0, 37-41, 64, 65).
    PhysicalPort(Uuid),
    /// The physical flows of one Multicast_Group (tables 39 and 40).
    PhysicalMcGroup(Uuid),
    /// The table-0 receive flows of one tunnel port, by its br-int OpenFlow port.
    TunnelIn(u32),
    /// The table-0 conjunction clauses that recognize one remote chassis' MACs (by its
    /// Chassis row).
    ChassisMac(Uuid),
    /// The chassis-wide default flows of the physical tables.
    PhysicalDefaults,
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, u) = match self {
            Self::TunnelIn(ofport) => return write!(f, "tunnel port {ofport}"),
            Self::PhysicalDefaults => return f.write_str("physical defaults"),
            Self::Lflow(u) => ("lflow", u),
            Self::MacBinding(u) => ("MAC_Binding", u),
            Self::StaticMacBinding(u) => ("Static_MAC_Binding", u),
            Self::Fdb(u) => ("FDB", u),
            Self::PortSecurity(u) => ("Port_Binding", u),
            Self::LbHairpin(u) => ("Load_Balancer", u),
            Self::PhysicalPort(u) => ("physical Port_Binding", u),
            Self::PhysicalMcGroup(u) => ("physical Multicast_Group", u),
            Self::ChassisMac(u) => ("Chassis MACs of", u),
        };
        write!(f, "{kind} {u}")
    }
}
