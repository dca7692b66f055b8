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
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, u) = match self {
            Self::Lflow(u) => ("lflow", u),
            Self::MacBinding(u) => ("MAC_Binding", u),
            Self::StaticMacBinding(u) => ("Static_MAC_Binding", u),
            Self::Fdb(u) => ("FDB", u),
            Self::PortSecurity(u) => ("Port_Binding", u),
            Self::LbHairpin(u) => ("Load_Balancer", u),
        };
        write!(f, "{kind} {u}")
    }
}
