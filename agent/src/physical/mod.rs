//! The physical stage: the flows ovn-controller 23.03.1's `physical.c` installs, owner by
//! owner, from the Southbound replica, the runtime data and the table layout. Pure. Where a
//! later release builds them differently (25.03: reg13's encap id, NAT zones by datapath
//! name, the conntrack zone lookup table, ...), the layout's release row says so
//! ([`crate::lflow::dialect::PhysicalForms`]); the code never tests a version.
//!
//! | table (layout field) | what |
//! |---|---|
//! | 0 | physical to logical: VIFs, containers, localnet/l2gateway patch ports, tunnels |
//! | `output_entry`, `large_pkt_process` | defaults (per-port size checks are not built) |
//! | `remote_output` | tunnels to remote ports and chassis, HA bundles, multicast fan-out |
//! | `local_output` | local ports' zones, chassisredirect → distributed port, localnet |
//! | `check_loopback` | inport == outport drops, localnet guards |
//! | `save_inport`, `log_to_phy` | hairpin, output, VLAN push/pop, patch-port crossings |
//!
//! With debug drop sampling on (`Runtime::drop_sampling`), the drops of tables 0, 40, 41
//! and 65 sample each packet first.
//!
//! Registers, flags, zones and tunnel encodings are OVN's (`actions.rs`); cookies are the
//! first 32 bits of the owning Port_Binding / Multicast_Group / Chassis uuid, 0 for
//! chassis-wide flows.
//!
//! Owners and what each one's flows read besides its own row (an incremental engine must
//! recompute an owner when one of these changes):
//! - [`Owner::PhysicalPort`]: its datapath row and local-datapath entry (localnet port,
//!   peers), its zones, its binding/ofport, its `options:peer` port, its parent port, the
//!   `distributed-port` of a chassisredirect, its chassis and encap rows and the tunnels to
//!   them, its HA chassis group; a localnet port also reads the switch's external ports and
//!   router peers (their MACs and `cr-` ports) and this chassis' MAC mappings.
//! - [`Owner::PhysicalMcGroup`]: its members' rows, bindings and zones, their chassis and
//!   the tunnels to them, whether the datapath has a localnet port.
//! - [`Owner::TunnelIn`]: the tunnel, the negotiated Geneve field, the `vtep` ports.
//! - [`Owner::ChassisMac`]: that Chassis row.
//! - [`Owner::PhysicalDefaults`]: the layout and the drop sampling.

mod actions;
mod activation;
mod chassis_mac;
mod cx;
mod defaults;
mod error;
mod mcast;
mod ovs_order;
mod port;
mod remote;
mod tunnel;

#[cfg(test)]
mod tests;

use sbclient::ovn_sb::{Chassis, MulticastGroup, PortBinding};
use sbclient::{Replica, Uuid};

use crate::lflow::layout::TableLayout;
use crate::lflow::of::Flow;
use crate::owner::Owner;
use crate::runtime::Runtime;

pub use activation::activated_on;
pub use error::{PhysicalError, Problem};

use cx::Cx;

/// One owner's flows, and what was wrong with its input (the flows are then what
/// ovn-controller would install despite the problem: possibly none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnerFlows {
    pub flows: Vec<Flow>,
    pub problems: Vec<Problem>,
}

/// The physical flows of Port_Binding `pb` (none if it is gone or not on a local datapath).
pub fn port_flows(pb: &Uuid, sb: &Replica, rt: &Runtime, l: &TableLayout) -> OwnerFlows {
    port::port_flows(&Cx { sb, rt, l }, pb)
}

/// The flows of Multicast_Group `mc`.
pub fn mc_group_flows(mc: &Uuid, sb: &Replica, rt: &Runtime, l: &TableLayout) -> OwnerFlows {
    mcast::mc_group_flows(&Cx { sb, rt, l }, mc)
}

/// The receive flows of the tunnel on br-int port `ofport`.
pub fn tunnel_flows(ofport: u32, sb: &Replica, rt: &Runtime, l: &TableLayout) -> OwnerFlows {
    tunnel::tunnel_flows(&Cx { sb, rt, l }, ofport)
}

/// The table-0 clauses recognizing the chassis MACs of Chassis `chassis` (none for this
/// chassis).
pub fn chassis_mac_flows(
    chassis: &Uuid,
    sb: &Replica,
    rt: &Runtime,
    l: &TableLayout,
) -> OwnerFlows {
    chassis_mac::chassis_mac_flows(&Cx { sb, rt, l }, chassis)
}

/// The chassis-wide defaults (their drops sample when `rt.drop_sampling` says so).
pub fn default_flows(rt: &Runtime, l: &TableLayout) -> Vec<Flow> {
    defaults::default_flows(l, rt.drop_sampling)
}

/// Every owner's physical flows.
#[derive(Clone, Debug, Default)]
pub struct PhysicalFlows {
    /// Owners with at least one flow, in a fixed order (defaults, chassis, ports, groups,
    /// tunnels; rows by uuid).
    pub per_owner: Vec<(Owner, Vec<Flow>)>,
    pub errors: Vec<PhysicalError>,
}

impl PhysicalFlows {
    fn push(&mut self, owner: Owner, of: OwnerFlows) {
        self.errors.extend(
            of.problems
                .into_iter()
                .map(|problem| PhysicalError { owner, problem }),
        );
        if !of.flows.is_empty() {
            self.per_owner.push((owner, of.flows));
        }
    }

    /// Every flow, owner by owner.
    pub fn flows(&self) -> impl Iterator<Item = &Flow> {
        self.per_owner.iter().flat_map(|(_, f)| f)
    }
}

fn sorted_uuids<T: sbclient::Row>(sb: &Replica) -> Vec<Uuid> {
    let mut v: Vec<Uuid> = sb
        .table::<T>()
        .into_iter()
        .flat_map(|t| t.iter().map(|(u, _)| *u))
        .collect();
    v.sort_unstable();
    v
}

/// The physical flows of everything: what ovn-controller's `physical_run` installs.
pub fn all(sb: &Replica, rt: &Runtime, l: &TableLayout) -> PhysicalFlows {
    let pbs = sorted_uuids::<PortBinding>(sb);
    let mcs = sorted_uuids::<MulticastGroup>(sb);
    some(sb, rt, l, &pbs, &mcs)
}

/// The physical flows of the chassis-wide owners (defaults, chassis MACs, tunnels) and of
/// port bindings `pbs` and multicast groups `mcs` (uuids, sorted; rows that are gone give
/// nothing): what a change limited to those rows recomputes.
pub fn some(
    sb: &Replica,
    rt: &Runtime,
    l: &TableLayout,
    pbs: &[Uuid],
    mcs: &[Uuid],
) -> PhysicalFlows {
    let cx = Cx { sb, rt, l };
    let mut out = PhysicalFlows::default();
    out.push(
        Owner::PhysicalDefaults,
        OwnerFlows {
            flows: default_flows(rt, l),
            problems: Vec::new(),
        },
    );
    for c in sorted_uuids::<Chassis>(sb) {
        out.push(
            Owner::ChassisMac(c),
            chassis_mac::chassis_mac_flows(&cx, &c),
        );
    }
    for pb in pbs {
        out.push(Owner::PhysicalPort(*pb), port::port_flows(&cx, pb));
    }
    for mc in mcs {
        out.push(Owner::PhysicalMcGroup(*mc), mcast::mc_group_flows(&cx, mc));
    }
    let mut ofports: Vec<u32> = rt.tunnels.values().flatten().map(|t| t.ofport).collect();
    ofports.sort_unstable();
    ofports.dedup();
    for ofport in ofports {
        out.push(Owner::TunnelIn(ofport), tunnel::tunnel_flows(&cx, ofport));
    }
    out
}
