//! Local datapaths (reference §5.4): the datapaths of ports bound here, and everything
//! reachable from them over patch ports (both directions) and local l3gateway peers, with
//! the distributed-gateway-port exception.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use sbclient::ovn_sb::{DatapathBinding, PortBinding};
use sbclient::{Replica, Uuid};

use crate::lflow::hash::FxBuild;
use crate::runtime::LocalDatapath;

/// Recursion bound of ovn-controller's traversal.
const MAX_DEPTH: usize = 100;

/// Computes the local datapaths from `seeds` (PB uuids bound here, including inactive HA
/// members' cr/external ports). `mapped` tells whether a localnet network is mapped here.
pub fn local_datapaths(
    sb: &Replica,
    seeds: impl IntoIterator<Item = Uuid>,
    chassis: Option<Uuid>,
    ha_member: &dyn Fn(&Uuid) -> bool,
    mapped: &dyn Fn(&str) -> bool,
) -> BTreeMap<Uuid, LocalDatapath> {
    let mut out = BTreeMap::new();
    let (Some(pbs), Some(dps)) = (sb.table::<PortBinding>(), sb.table::<DatapathBinding>()) else {
        return out;
    };
    // Fx-hashed: built over every Port_Binding on every run.
    let by_name: HashMap<&str, (&Uuid, &PortBinding), FxBuild> = pbs
        .iter()
        .map(|(u, p)| (p.logical_port.as_str(), (u, p)))
        .collect();
    let mut by_dp: HashMap<Uuid, Vec<(&Uuid, &PortBinding)>, FxBuild> = HashMap::default();
    for (u, p) in pbs.iter() {
        by_dp.entry(p.datapath).or_default().push((u, p));
    }
    let mut queue: VecDeque<(Uuid, usize)> = seeds
        .into_iter()
        .filter_map(|u| pbs.get(&u).map(|p| (p.datapath, 0)))
        .collect();
    let mut seen = BTreeSet::new();
    while let Some((dp, depth)) = queue.pop_front() {
        if depth > MAX_DEPTH || !seen.insert(dp) {
            continue;
        }
        let Some(row) = dps.get(&dp) else { continue };
        let mut local = LocalDatapath {
            key: u32::try_from(row.tunnel_key).unwrap_or(0),
            is_switch: !row.external_ids.contains_key("logical-router"),
            ..LocalDatapath::default()
        };
        let mut ports: Vec<&(&Uuid, &PortBinding)> = by_dp
            .get(&dp)
            .map(|v| v.iter().collect())
            .unwrap_or_default();
        ports.sort_by(|a, b| a.1.logical_port.cmp(&b.1.logical_port));
        for (u, p) in ports {
            if p.type_.is_empty() && p.parent_port.is_none() && !p.additional_chassis.is_empty() {
                local.multichassis_ports.push(**u);
            }
            match p.type_.as_str() {
                "localnet" => {
                    let net = p.options.get("network_name").map_or("", String::as_str);
                    if local.localnet.is_none() && mapped(net) {
                        local.localnet = Some(**u);
                    }
                }
                "patch" | "l3gateway" => {
                    let Some((peer_uuid, peer)) =
                        p.options.get("peer").and_then(|n| by_name.get(n.as_str()))
                    else {
                        continue;
                    };
                    if peer.type_ != p.type_ {
                        continue;
                    }
                    if p.type_ == "l3gateway" && !(chassis.is_some() && peer.chassis == chassis) {
                        continue;
                    }
                    if !pulls_peer(p, &by_name, ha_member) {
                        continue;
                    }
                    local.peers.push((**u, **peer_uuid));
                    queue.push_back((peer.datapath, depth + 1));
                }
                _ => {}
            }
        }
        out.insert(dp, local);
    }
    out
}

/// A distributed gateway port (a patch port with `chassis-redirect-port`) pulls its peer in
/// only when its cr port is not `always-redirect`, or when this chassis is in its HA group.
fn pulls_peer(
    p: &PortBinding,
    by_name: &HashMap<&str, (&Uuid, &PortBinding), FxBuild>,
    ha_member: &dyn Fn(&Uuid) -> bool,
) -> bool {
    let Some(cr_name) = p.options.get("chassis-redirect-port") else {
        return true;
    };
    let Some((cr_uuid, cr)) = by_name.get(cr_name.as_str()) else {
        return true;
    };
    let always = cr
        .options
        .get("always-redirect")
        .is_some_and(|v| v == "true");
    !always || ha_member(cr_uuid)
}
