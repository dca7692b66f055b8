//! The engine's inputs: the Southbound and local OVS replicas ([`Inputs`]), the tables
//! whose changes leave the runtime as it is, and the functions that read the rows a run
//! needs from the replicas. What the engine notes when they change is in
//! `engine/core/input_changes.rs`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sbclient::datum::Atom;
use sbclient::ovn_sb::{self, *};
use sbclient::vswitch::{Interface, OpenVswitch, Port};
use sbclient::{Replica, Uuid};

use super::binding;
use super::config::ChassisConfig;
use crate::runtime::{EncapType, Runtime, Tunnel};
use crate::southbound::Southbound;

/// Southbound tables the runtime (bindings, local datapaths, tunnels, zones, conditions)
/// is not computed from: their changes leave it as it is.
pub(super) const NOT_RUNTIME_INPUTS: &[&str] = &[
    "Logical_Flow",
    "Logical_DP_Group",
    "Address_Set",
    "Port_Group",
    "MAC_Binding",
    "Static_MAC_Binding",
    "FDB",
    "Load_Balancer",
    "DNS",
    "DHCP_Options",
    "DHCPv6_Options",
    "Controller_Event",
    "Service_Monitor",
    "IGMP_Group",
    "Meter",
    "Meter_Band",
    "Chassis_Template_Var",
    "Connection",
    "SSL",
    "RBAC_Role",
    "RBAC_Permission",
];

/// The replicas a run reads.
pub struct Inputs {
    pub sb: Southbound,
    pub ovs: Replica,
}

/// The local `Open_vSwitch` row, once the OVS replica has it.
pub(super) fn open_vswitch_row(ovs: &Replica) -> Option<&OpenVswitch> {
    ovs.table::<OpenVswitch>()
        .and_then(|t| t.iter().next().map(|(_, r)| r))
}

/// Every logical flow in uuid order (the compile's results must not depend on hash order).
pub(super) fn lflows_in_order(replica: &Replica) -> Vec<(&Uuid, &LogicalFlow)> {
    let mut lflows: Vec<(&Uuid, &LogicalFlow)> = replica
        .table::<LogicalFlow>()
        .map(|t| t.iter().collect())
        .unwrap_or_default();
    lflows.sort_unstable_by_key(|(u, _)| **u);
    lflows
}

pub(super) fn only_modified<T: sbclient::Row + Clone + PartialEq>(
    replica: &Replica,
    ignore: impl Fn(&mut T, &T),
) -> bool {
    let Some(t) = replica.table::<T>() else {
        return false;
    };
    let c = t.changes();
    c.inserted.is_empty()
        && c.deleted.is_empty()
        && c.modified.iter().all(|(u, old)| {
            t.get(u).is_some_and(|new| {
                let mut old = (**old).clone();
                ignore(&mut old, new);
                old == *new
            })
        })
}

/// Tunnels on the bridge: ports with `external_ids:ovn-chassis-id` and an ofport.
pub(super) fn tunnels_of(ovs: &Replica, bridge_name: &str) -> BTreeMap<String, Vec<Tunnel>> {
    let mut out: BTreeMap<String, Vec<Tunnel>> = BTreeMap::new();
    let (Some((_, br)), Some(ports), Some(ifaces)) = (
        binding::bridge(ovs, bridge_name),
        ovs.table::<Port>(),
        ovs.table::<Interface>(),
    ) else {
        return out;
    };
    for p in br.ports.iter().filter_map(|p| ports.get(p)) {
        let Some(id) = p.external_ids.get("ovn-chassis-id") else {
            continue;
        };
        let (chassis, ip) = id.split_once('@').unwrap_or((id.as_str(), ""));
        for i in p.interfaces.iter().filter_map(|i| ifaces.get(i)) {
            let (Some(ofport), Some(encap)) = (
                i.ofport
                    .and_then(|o| u32::try_from(o).ok())
                    .filter(|o| *o > 0 && *o < 0xff00),
                EncapType::parse(&i.type_),
            ) else {
                continue;
            };
            out.entry(chassis.to_owned()).or_default().push(Tunnel {
                chassis: chassis.to_owned(),
                remote_ip: ip.to_owned(),
                encap,
                ofport,
            });
        }
    }
    // A port that names no encap goes through the chassis' first tunnel: the oldest one
    // (lowest ofport), usually its first encap IP, rather than whichever the database
    // listed first.
    for tunnels in out.values_mut() {
        tunnels.sort_by_key(|t| t.ofport);
    }
    out
}

/// br-int ofports of the patch ports to mapped bridges, by localnet/l2gateway PB.
pub(super) fn patch_ofports(ovs: &Replica, bridge_name: &str, sb: &Replica) -> HashMap<Uuid, u32> {
    let mut out = HashMap::new();
    let (Some((_, br)), Some(ports), Some(ifaces), Some(pbs)) = (
        binding::bridge(ovs, bridge_name),
        ovs.table::<Port>(),
        ovs.table::<Interface>(),
        sb.table::<PortBinding>(),
    ) else {
        return out;
    };
    // Through the logical_port index (a scan only for a replica built without it).
    let pb_named = |name: &str| {
        pbs.find_one("logical_port", &Atom::String(name.to_owned()))
            .or_else(|| pbs.iter().find(|(_, p)| p.logical_port == name))
            .map(|(u, _)| *u)
    };
    for p in br.ports.iter().filter_map(|p| ports.get(p)) {
        let Some(lp) = p
            .external_ids
            .get("ovn-localnet-port")
            .or_else(|| p.external_ids.get("ovn-l2gateway-port"))
        else {
            continue;
        };
        let Some(pb) = pb_named(lp) else {
            continue;
        };
        if let Some(ofport) = p
            .interfaces
            .iter()
            .filter_map(|i| ifaces.get(i))
            .find_map(|i| {
                i.ofport
                    .and_then(|o| u32::try_from(o).ok())
                    .filter(|o| *o > 0 && *o < 0xff00)
            })
        {
            out.insert(pb, ofport);
        }
    }
    out
}

/// Zone names this chassis needs: local ports and two per local datapath (with the SNAT
/// zone a router asks for); `by_name`: datapaths' zones are named after their
/// `external_ids:name` (the release's physical forms say), else after their uuid.
pub(super) fn wanted_zones(
    sb: &Replica,
    rt: &Runtime,
    by_name: bool,
) -> BTreeMap<String, Option<u16>> {
    let mut out = BTreeMap::new();
    let pbs = sb.table::<PortBinding>();
    let name = |u: &Uuid| pbs.and_then(|t| t.get(u)).map(|p| p.logical_port.clone());
    for u in rt
        .bound
        .keys()
        .chain(rt.localports.keys())
        .chain(rt.patch_ofports.keys())
    {
        if let Some(n) = name(u) {
            out.insert(n, None);
        }
    }
    let dps = sb.table::<ovn_sb::DatapathBinding>();
    for (dp, local) in &rt.local_datapaths {
        let row = dps.and_then(|t| t.get(dp));
        // Named by uuid, or by `external_ids:name` where the release does (a datapath
        // without a name then gets no NAT zones, as there).
        let zone_name = if by_name {
            match row.and_then(|d| d.external_ids.get("name")) {
                Some(n) => n.clone(),
                None => continue,
            }
        } else {
            dp.to_string()
        };
        out.insert(format!("{zone_name}_dnat"), None);
        let requested = row
            .and_then(|d| d.external_ids.get("snat-ct-zone"))
            .and_then(|z| z.parse::<u16>().ok());
        out.insert(format!("{zone_name}_snat"), requested);
        if let Some(ln) = local.localnet.and_then(|u| name(&u)) {
            out.insert(ln, None);
        }
    }
    out
}

/// The remote chassis pkt.mark is carried with: those advertising the capability, when
/// this chassis has it on and the switch mapped the option.
pub(super) fn pkt_mark_peers(
    sb: &Replica,
    cfg: &ChassisConfig,
    mark_field: Option<u8>,
) -> BTreeSet<String> {
    if !cfg.tunnel_pkt_mark || mark_field.is_none() {
        return BTreeSet::new();
    }
    sb.table::<sbclient::ovn_sb::Chassis>()
        .into_iter()
        .flat_map(sbclient::Table::iter)
        .filter(|(_, c)| c.name != cfg.system_id)
        .filter(|(_, c)| {
            c.other_config
                .get(super::config::TUNNEL_PKT_MARK)
                .is_some_and(|v| v == "true")
        })
        .map(|(_, c)| c.name.clone())
        .collect()
}
