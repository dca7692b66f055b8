//! The runtime data ovn-controller works from, rebuilt by hand from what the chassis' OVS
//! shows (interfaces, ofports, tunnel and patch ports, persisted conntrack zones, TLV map)
//! and the Southbound rows, with ovn-controller's rules (physical-pipeline.md §5.3-§5.4).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use agent::runtime::{BindingKind, DropSampling, EncapType, LocalDatapath, Runtime, Tunnel};
use agent::southbound::Southbound;
use integration::local_ovs::OvsInterface;
use sbclient::ovn_sb::{
    Chassis, DatapathBinding, HaChassis, HaChassisGroup, PortBinding, SbGlobal,
};
use sbclient::Uuid;

/// What the chassis' OVS holds.
pub struct OvsState {
    pub interfaces: Vec<OvsInterface>,
    pub ct_zones: BTreeMap<String, u16>,
    pub geneve_field: Option<u8>,
    /// `ovn-bridge-mappings`: physical network names mapped to a bridge here.
    pub mapped_networks: BTreeSet<String>,
    /// Ids of the `Flow_Sample_Collector_Set` rows of br-int.
    pub sample_collector_sets: BTreeSet<u32>,
}

/// `SB_Global options:debug_drop_collector_set` / `debug_drop_domain_id`, if the collector
/// set exists on br-int.
fn drop_sampling(sb: &Southbound, ovs: &OvsState) -> Option<DropSampling> {
    let global = sb.replica.table::<SbGlobal>()?.iter().next()?.1;
    let option = |k: &str| global.options.get(k).and_then(|v| v.parse::<u32>().ok());
    let collector_set_id = option("debug_drop_collector_set").filter(|id| *id != 0)?;
    ovs.sample_collector_sets
        .contains(&collector_set_id)
        .then(|| DropSampling {
            collector_set_id,
            obs_domain_id: option("debug_drop_domain_id").unwrap_or(0),
        })
}

struct Sb<'a> {
    pbs: Vec<(&'a Uuid, &'a PortBinding)>,
    by_name: HashMap<&'a str, (&'a Uuid, &'a PortBinding)>,
}

impl<'a> Sb<'a> {
    fn new(sb: &'a Southbound) -> Self {
        let mut pbs: Vec<(&Uuid, &PortBinding)> = sb
            .replica
            .table::<PortBinding>()
            .map(|t| t.iter().collect())
            .unwrap_or_default();
        pbs.sort_by_key(|(u, _)| **u);
        let by_name = pbs
            .iter()
            .map(|(u, p)| (p.logical_port.as_str(), (*u, *p)))
            .collect();
        Self { pbs, by_name }
    }

    fn of_datapath(&self, dp: &Uuid) -> impl Iterator<Item = (&'a Uuid, &'a PortBinding)> + '_ {
        let dp = *dp;
        self.pbs
            .iter()
            .copied()
            .filter(move |(_, p)| p.datapath == dp)
    }
}

fn is_ha_member(sb: &Southbound, group: Option<Uuid>, me: Uuid) -> bool {
    let (Some(groups), Some(ha)) = (
        sb.replica.table::<HaChassisGroup>(),
        sb.replica.table::<HaChassis>(),
    ) else {
        return false;
    };
    group.and_then(|g| groups.get(&g)).is_some_and(|g| {
        g.ha_chassis
            .iter()
            .filter_map(|h| ha.get(h))
            .any(|h| h.chassis == Some(me))
    })
}

/// The active member of a chassisredirect port's HA group: the highest priority (every
/// member's tunnel is taken to be up, as the lab's BFD sessions are).
fn ha_active(sb: &Southbound, group: Option<Uuid>) -> Option<Uuid> {
    let g = sb.replica.table::<HaChassisGroup>()?.get(&group?)?;
    let ha = sb.replica.table::<HaChassis>()?;
    g.ha_chassis
        .iter()
        .filter_map(|h| ha.get(h))
        .filter(|h| h.chassis.is_some())
        .max_by_key(|h| h.priority)
        .and_then(|h| h.chassis)
}

/// `need_add_peer_to_local`: a patch port pulls its peer's datapath in, except a
/// distributed gateway port whose chassisredirect port always redirects elsewhere.
fn pulls_peer(sb: &Sb<'_>, all: &Southbound, pb: &PortBinding, me: Uuid) -> bool {
    if pb.type_ == "l3gateway" {
        return pb.chassis == Some(me);
    }
    if pb.type_ != "patch" {
        return false;
    }
    let Some(crp) = pb.options.get("chassis-redirect-port") else {
        return true;
    };
    let Some((_, cr)) = sb.by_name.get(crp.as_str()) else {
        return false;
    };
    if cr.options.get("always-redirect").map(String::as_str) != Some("true") {
        return true;
    }
    cr.ha_chassis_group.is_some() && is_ha_member(all, cr.ha_chassis_group, me)
}

pub fn build(sb: &Southbound, chassis_name: &str, ovs: &OvsState) -> Runtime {
    let me = sb
        .replica
        .table::<Chassis>()
        .and_then(|t| {
            t.iter()
                .find(|(_, c)| c.name == chassis_name)
                .map(|(u, _)| *u)
        })
        .expect("this chassis is registered");
    let rows = Sb::new(sb);
    let mut rt = Runtime {
        chassis_name: chassis_name.to_owned(),
        chassis: Some(me),
        ct_zones: ovs.ct_zones.clone(),
        geneve_field: ovs.geneve_field,
        drop_sampling: drop_sampling(sb, ovs),
        ..Runtime::default()
    };

    for iface in &ovs.interfaces {
        let Some(ofport) = iface.ofport else { continue };
        if let Some(id) = iface.external_ids.get("iface-id") {
            if let Some((u, pb)) = rows.by_name.get(id.as_str()) {
                if pb.type_ == "localport" {
                    rt.localports.insert(**u, ofport);
                } else if pb.type_.is_empty() {
                    let iface = iface.name.clone();
                    rt.bound.insert(**u, BindingKind::Vif { ofport, iface });
                }
            }
        }
        let patch_for = iface
            .port_external_ids
            .get("ovn-localnet-port")
            .or_else(|| iface.port_external_ids.get("ovn-l2gateway-port"));
        if let (Some(lport), "patch") = (patch_for, iface.kind.as_str()) {
            if let Some((u, _)) = rows.by_name.get(lport.as_str()) {
                rt.patch_ofports.insert(**u, ofport);
            }
        }
        if let (Some(id), Some(encap)) = (
            iface.port_external_ids.get("ovn-chassis-id"),
            EncapType::parse(&iface.kind),
        ) {
            let chassis = id.split('@').next().unwrap_or(id).to_owned();
            rt.tunnels.entry(chassis.clone()).or_default().push(Tunnel {
                chassis,
                remote_ip: iface.options.get("remote_ip").cloned().unwrap_or_default(),
                encap,
                ofport,
            });
        }
    }
    // Containers: a tagged child of a VIF that is here.
    for (u, pb) in &rows.pbs {
        let (Some(parent), Some(tag)) = (pb.parent_port.as_deref(), pb.tag) else {
            continue;
        };
        let parent_ofport = rows
            .by_name
            .get(parent)
            .and_then(|(pu, _)| match rt.bound.get(*pu) {
                Some(BindingKind::Vif { ofport, .. }) => Some(*ofport),
                _ => None,
            });
        if let Some(parent_ofport) = parent_ofport {
            let tag = u16::try_from(tag).expect("tag fits");
            rt.bound
                .insert(**u, BindingKind::Container { parent_ofport, tag });
        }
    }
    for (u, pb) in &rows.pbs {
        let claimed = matches!(
            pb.type_.as_str(),
            "l2gateway" | "l3gateway" | "chassisredirect" | "external"
        );
        if claimed && pb.chassis == Some(me) {
            rt.bound.entry(**u).or_insert(BindingKind::Claimed);
        }
        if pb.type_ == "chassisredirect" && ha_active(sb, pb.ha_chassis_group) == Some(me) {
            rt.active_ha.insert(**u);
        }
    }

    // Local datapaths: where something is bound here (or an HA member is), then across
    // patch peers.
    let mut queue: VecDeque<Uuid> = rows
        .pbs
        .iter()
        .filter(|(u, pb)| {
            rt.bound.contains_key(*u)
                || rt.localports.contains_key(*u)
                || (matches!(pb.type_.as_str(), "chassisredirect" | "external")
                    && is_ha_member(sb, pb.ha_chassis_group, me))
        })
        .map(|(_, pb)| pb.datapath)
        .collect();
    let datapaths = sb.replica.table::<DatapathBinding>().expect("datapaths");
    let mut peers: HashMap<Uuid, Vec<(Uuid, Uuid)>> = HashMap::new();
    while let Some(dp) = queue.pop_front() {
        if rt.local_datapaths.contains_key(&dp) {
            continue;
        }
        let Some(row) = datapaths.get(&dp) else {
            continue;
        };
        rt.local_datapaths.insert(
            dp,
            LocalDatapath {
                key: u32::try_from(row.tunnel_key).expect("key"),
                is_switch: row.external_ids.contains_key("logical-switch"),
                localnet: None,
                peers: Vec::new(),
                multichassis_ports: Vec::new(),
            },
        );
        for (u, pb) in rows.of_datapath(&dp) {
            let Some((pu, peer)) = pb
                .options
                .get("peer")
                .and_then(|n| rows.by_name.get(n.as_str()))
            else {
                continue;
            };
            if pulls_peer(&rows, sb, pb, me) {
                queue.push_back(peer.datapath);
                peers.entry(dp).or_default().push((*u, **pu));
                peers.entry(peer.datapath).or_default().push((**pu, *u));
            }
        }
    }
    for (dp, ld) in &mut rt.local_datapaths {
        let mut pairs = peers.remove(dp).unwrap_or_default();
        pairs.sort();
        pairs.dedup();
        ld.peers = pairs;
        // At most one localnet port counts: the first whose network is mapped here.
        ld.localnet = rows
            .of_datapath(dp)
            .find(|(_, pb)| {
                pb.type_ == "localnet"
                    && pb
                        .options
                        .get("network_name")
                        .is_some_and(|n| ovs.mapped_networks.contains(n))
            })
            .map(|(u, _)| *u);
        ld.multichassis_ports = rows
            .of_datapath(dp)
            .filter(|(_, pb)| {
                pb.type_.is_empty()
                    && pb.parent_port.as_deref().is_none_or(str::is_empty)
                    && !pb.additional_chassis.is_empty()
            })
            .map(|(u, _)| *u)
            .collect();
    }
    rt
}
