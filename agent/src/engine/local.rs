//! Local datapaths (reference §5.4): the datapaths of ports bound here, and everything
//! reachable from them over patch ports (both directions) and local l3gateway peers, with
//! the distributed-gateway-port exception.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use sbclient::ovn_sb::{DatapathBinding, PortBinding};
use sbclient::{Atom, Replica, Table, Uuid};

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
    let ports = Ports::new(pbs);
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
        // The ports in any order, with the results ordered by port name afterwards: sorting
        // every port of every local datapath on each run cost more than the rest.
        let mut localnet: Option<(&str, Uuid)> = None;
        let mut multichassis: Vec<(&str, Uuid)> = Vec::new();
        let mut peers: Vec<(&str, (Uuid, Uuid))> = Vec::new();
        for (u, p) in ports.of_datapath(dp) {
            let name = p.logical_port.as_str();
            if p.type_.is_empty() && p.parent_port.is_none() && !p.additional_chassis.is_empty() {
                multichassis.push((name, *u));
            }
            match p.type_.as_str() {
                "localnet" => {
                    // The first mapped one by name.
                    let net = p.options.get("network_name").map_or("", String::as_str);
                    if localnet.is_none_or(|(n, _)| name < n) && mapped(net) {
                        localnet = Some((name, *u));
                    }
                }
                "patch" | "l3gateway" => {
                    let Some((peer_uuid, peer)) =
                        p.options.get("peer").and_then(|n| ports.by_name(n))
                    else {
                        continue;
                    };
                    if peer.type_ != p.type_ {
                        continue;
                    }
                    if p.type_ == "l3gateway" && !(chassis.is_some() && peer.chassis == chassis) {
                        continue;
                    }
                    if !pulls_peer(p, &ports, ha_member) {
                        continue;
                    }
                    peers.push((name, (*u, *peer_uuid)));
                }
                _ => {}
            }
        }
        // The traversal order follows the ports' names too (it decides the depth at which
        // a datapath is first reached).
        peers.sort_unstable_by(|a, b| a.0.cmp(b.0).then(a.1.cmp(&b.1)));
        multichassis.sort_unstable_by(|a, b| a.0.cmp(b.0).then(a.1.cmp(&b.1)));
        for (_, (u, peer_uuid)) in peers {
            if let Some(peer) = pbs.get(&peer_uuid) {
                queue.push_back((peer.datapath, depth + 1));
            }
            local.peers.push((u, peer_uuid));
        }
        local.localnet = localnet.map(|(_, u)| u);
        local.multichassis_ports = multichassis.into_iter().map(|(_, u)| u).collect();
        out.insert(dp, local);
    }
    out
}

/// A distributed gateway port (a patch port with `chassis-redirect-port`) pulls its peer in
/// only when its cr port is not `always-redirect`, or when this chassis is in its HA group.
fn pulls_peer(p: &PortBinding, ports: &Ports<'_>, ha_member: &dyn Fn(&Uuid) -> bool) -> bool {
    let Some(cr_name) = p.options.get("chassis-redirect-port") else {
        return true;
    };
    let Some((cr_uuid, cr)) = ports.by_name(cr_name) else {
        return true;
    };
    let always = cr
        .options
        .get("always-redirect")
        .is_some_and(|v| v == "true");
    !always || ha_member(cr_uuid)
}

/// Port_Binding lookups by name and by datapath: through the replica's indexes when it has
/// them (the daemon's does), so that a run costs what the local datapaths hold; else through
/// maps built over every row (a replica made without them).
enum Ports<'a> {
    Indexed(&'a Table<PortBinding>),
    Mapped {
        by_name: HashMap<&'a str, (&'a Uuid, &'a PortBinding), FxBuild>,
        by_dp: HashMap<Uuid, Vec<(&'a Uuid, &'a PortBinding)>, FxBuild>,
    },
}

impl<'a> Ports<'a> {
    fn new(pbs: &'a Table<PortBinding>) -> Self {
        if pbs.has_index("logical_port") && pbs.has_index("datapath") {
            return Self::Indexed(pbs);
        }
        let by_name = pbs
            .iter()
            .map(|(u, p)| (p.logical_port.as_str(), (u, p)))
            .collect();
        let mut by_dp: HashMap<Uuid, Vec<_>, FxBuild> = HashMap::default();
        for (u, p) in pbs.iter() {
            by_dp.entry(p.datapath).or_default().push((u, p));
        }
        Self::Mapped { by_name, by_dp }
    }

    fn by_name(&self, name: &str) -> Option<(&'a Uuid, &'a PortBinding)> {
        match self {
            Self::Indexed(t) => t.find_one("logical_port", &Atom::String(name.to_owned())),
            Self::Mapped { by_name, .. } => by_name.get(name).copied(),
        }
    }

    fn of_datapath(&self, dp: Uuid) -> Box<dyn Iterator<Item = (&'a Uuid, &'a PortBinding)> + '_> {
        match self {
            Self::Indexed(t) => Box::new(t.find("datapath", &Atom::Uuid(dp))),
            Self::Mapped { by_dp, .. } => Box::new(by_dp.get(&dp).into_iter().flatten().copied()),
        }
    }
}
