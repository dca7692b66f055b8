//! The chassis view of a Southbound snapshot: which datapaths and ports are local, port
//! keys, address sets, port groups filtered to local ports, and group/meter/conjunction ids.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Mutex;

use crate::lflow::flows::{conj_id_hash, ChassisView};
use crate::sbdata::SbData;

/// Chassis view over a Southbound snapshot.
pub struct SbView<'a> {
    sb: &'a SbData,
    chassis_uuid: Option<String>,
    /// Datapath uuid to port (and multicast group) name to tunnel key.
    ports: HashMap<String, HashMap<String, u32>>,
    resident: HashSet<String>,
    related: HashSet<(u32, u32)>,
    port_groups: HashMap<String, Vec<String>>,
    pub local_datapaths: BTreeSet<String>,
    vars: HashMap<String, String>,
    groups: Mutex<Ids>,
    meters: Mutex<Ids>,
    named_meters: Mutex<Ids>,
    conj: Mutex<HashSet<u32>>,
}

/// Ids allocated by description, lowest free first (ovn-controller's extend tables).
#[derive(Default)]
pub struct Ids {
    by_desc: HashMap<String, u32>,
    used: BTreeSet<u32>,
}

impl Ids {
    pub fn seed(&mut self, desc: &str, id: u32) {
        self.used.insert(id);
        self.by_desc
            .insert(canonical_hash_fields(desc).into_owned(), id);
    }

    fn get(&mut self, desc: &str) -> Option<u32> {
        if let Some(id) = self.by_desc.get(canonical_hash_fields(desc).as_ref()) {
            return Some(*id);
        }
        let id = (1..=65535u32).find(|i| !self.used.contains(i))?;
        self.seed(desc, id);
        Some(id)
    }
}

/// A group description with its `fields(…)` list as OVS prints it back (`dump-groups`):
/// canonical field names in OVS field order, so that ids seeded from a dump match what
/// OVN writes (`hash_fields="ip_dst,ip_src,tp_dst,tp_src"` is installed and dumped as
/// `fields(ip_src,ip_dst,tcp_src,tcp_dst)`; observed with OVS 3.1).
pub fn canonical_hash_fields(desc: &str) -> std::borrow::Cow<'_, str> {
    const ORDER: [&str; 13] = [
        "eth_src", "eth_dst", "ip_src", "ip_dst", "ipv6_src", "ipv6_dst", "ip_proto", "tcp_src",
        "tcp_dst", "udp_src", "udp_dst", "sctp_src", "sctp_dst",
    ];
    let Some(start) = desc.find("fields(") else {
        return desc.into();
    };
    let open = start + "fields(".len();
    let Some(len) = desc[open..].find(')') else {
        return desc.into();
    };
    let mut fields: Vec<&str> = desc[open..open + len]
        .split(',')
        .map(|f| match f.trim() {
            "dl_src" => "eth_src",
            "dl_dst" => "eth_dst",
            "nw_src" => "ip_src",
            "nw_dst" => "ip_dst",
            "nw_proto" => "ip_proto",
            "tp_src" => "tcp_src",
            "tp_dst" => "tcp_dst",
            f => f,
        })
        .collect();
    fields.sort_by_key(|f| ORDER.iter().position(|o| o == f).unwrap_or(ORDER.len()));
    fields.dedup();
    format!(
        "{}fields({}){}",
        &desc[..start],
        fields.join(","),
        &desc[open + len + 1..]
    )
    .into()
}

/// Types of port bindings that are related to every chassis that has their datapath.
const ALWAYS_RELATED: [&str; 5] = ["patch", "localnet", "l2gateway", "vtep", "l3gateway"];

impl<'a> SbView<'a> {
    pub fn new(sb: &'a SbData, chassis: &str) -> Self {
        let chassis_uuid = sb
            .chassis
            .iter()
            .find(|(_, n)| n.as_str() == chassis)
            .map(|(u, _)| u.clone());
        let here = |c: &Option<String>| c.is_some() && *c == chassis_uuid;
        let dp_key: HashMap<&str, u32> = sb
            .datapaths
            .iter()
            .map(|d| (d.uuid.as_str(), d.key))
            .collect();
        let mut ports = HashMap::new();
        for m in &sb.mcast_groups {
            ports
                .entry(m.datapath.clone())
                .or_insert_with(HashMap::new)
                .insert(m.name.clone(), m.key);
        }
        let mut resident = HashSet::new();
        let mut related = HashSet::new();
        let mut related_names = HashSet::new();
        for p in &sb.port_bindings {
            ports
                .entry(p.datapath.clone())
                .or_insert_with(HashMap::new)
                .insert(p.name.clone(), p.key);
            let active_here = match (&p.ty[..], &p.ha_chassis_group) {
                ("chassisredirect", Some(g)) => chassis_uuid
                    .as_deref()
                    .is_some_and(|me| ha_active(sb, g) == Some(me)),
                _ => here(&p.chassis),
            };
            if active_here {
                resident.insert(p.name.clone());
            }
            if here(&p.chassis) || ALWAYS_RELATED.contains(&p.ty.as_str()) {
                if let Some(k) = dp_key.get(p.datapath.as_str()) {
                    related.insert((*k, p.key));
                }
                related_names.insert(p.name.clone());
            }
        }
        // Local datapaths: those with a port here, plus everything reachable over patch peers.
        let by_name: HashMap<&str, &crate::sbdata::PortBindingRow> = sb
            .port_bindings
            .iter()
            .map(|p| (p.name.as_str(), p))
            .collect();
        let mut local = BTreeSet::new();
        let mut queue: VecDeque<String> = sb
            .port_bindings
            .iter()
            .filter(|p| here(&p.chassis))
            .map(|p| p.datapath.clone())
            .collect();
        while let Some(dp) = queue.pop_front() {
            if !local.insert(dp.clone()) {
                continue;
            }
            for p in sb
                .port_bindings
                .iter()
                .filter(|p| p.datapath == dp && (p.ty == "patch" || p.ty == "l3gateway"))
            {
                if let Some(peer) = p.options.get("peer").and_then(|n| by_name.get(n.as_str())) {
                    if p.ty == "patch" || here(&peer.chassis) {
                        queue.push_back(peer.datapath.clone());
                    }
                }
            }
        }
        let port_groups = sb
            .port_groups
            .iter()
            .map(|(n, m)| {
                (
                    n.clone(),
                    m.iter()
                        .filter(|p| related_names.contains(*p))
                        .cloned()
                        .collect(),
                )
            })
            .collect();
        let vars = sb.template_vars.get(chassis).cloned().unwrap_or_default();
        Self {
            sb,
            chassis_uuid,
            ports,
            resident,
            related,
            port_groups,
            local_datapaths: local,
            vars,
            groups: Mutex::new(Ids::default()),
            meters: Mutex::new(Ids::default()),
            named_meters: Mutex::new(Ids::default()),
            conj: Mutex::new(HashSet::new()),
        }
    }

    /// Reuses group ids from `ovs-ofctl dump-groups` output (`group_id=N,<description>`).
    pub fn seed_groups(&self, dump: &str) {
        if let Ok(mut g) = self.groups.lock() {
            for line in dump.lines() {
                let Some(rest) = line.trim().strip_prefix("group_id=") else {
                    continue;
                };
                if let Some((id, desc)) = rest.split_once(',') {
                    if let Ok(id) = id.parse() {
                        g.seed(desc, id);
                    }
                }
            }
        }
    }

    pub fn seed_meter(&self, description: &str, id: u32) {
        if let Ok(mut m) = self.meters.lock() {
            m.seed(description, id);
        }
    }

    pub fn seed_named_meter(&self, name: &str, id: u32) {
        if let Ok(mut m) = self.named_meters.lock() {
            m.seed(name, id);
        }
        // Named and per-lflow meters share one id space.
        self.seed_meter(&format!("named:{name}"), id);
    }

    /// Whether the port binding is claimed by this chassis.
    pub fn bound_here(&self, pb: &crate::sbdata::PortBindingRow) -> bool {
        pb.chassis.is_some() && pb.chassis == self.chassis_uuid
    }

    pub fn has_chassis(&self) -> bool {
        self.chassis_uuid.is_some()
    }
}

/// The active chassis of an HA chassis group: highest priority first, ties by chassis name.
/// (BFD tunnel state is not known here, so every member with a chassis counts as up.)
fn ha_active<'s>(sb: &'s SbData, group: &str) -> Option<&'s str> {
    let members = sb.ha_groups.get(group)?;
    let mut candidates: Vec<(i64, &str, &str)> = members
        .iter()
        .filter_map(|m| {
            let (ch, prio) = sb.ha_chassis.get(m)?;
            let ch = ch.as_deref()?;
            Some((*prio, sb.chassis.get(ch).map_or("", String::as_str), ch))
        })
        .collect();
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    candidates.first().map(|c| c.2)
}

impl ChassisView for SbView<'_> {
    fn address_set(&self, name: &str) -> Option<&[String]> {
        self.sb.address_sets.get(name).map(Vec::as_slice)
    }
    fn port_group(&self, name: &str) -> Option<&[String]> {
        self.port_groups.get(name).map(Vec::as_slice)
    }
    fn port_key(&self, dp_uuid: &str, name: &str) -> Option<u32> {
        if name == "none" {
            return Some(0);
        }
        self.ports.get(dp_uuid).and_then(|m| m.get(name)).copied()
    }
    fn is_resident(&self, port: &str) -> bool {
        self.resident.contains(port)
    }
    fn is_related(&self, dp_key: u32, port_key: u32) -> bool {
        self.related.contains(&(dp_key, port_key))
    }
    fn group_id(&self, d: &str) -> Option<u32> {
        self.groups.lock().ok()?.get(d)
    }
    fn meter_id(&self, d: &str) -> Option<u32> {
        self.meters.lock().ok()?.get(d)
    }
    fn named_meter(&self, n: &str) -> Option<u32> {
        if let Some(id) = self.named_meters.lock().ok()?.by_desc.get(n).copied() {
            return Some(id);
        }
        let id = self.meters.lock().ok()?.get(&format!("named:{n}"))?;
        self.named_meters.lock().ok()?.seed(n, id);
        Some(id)
    }
    fn template_vars(&self) -> &HashMap<String, String> {
        &self.vars
    }
    fn dhcp_option_known(&self, v6: bool, name: &str) -> bool {
        let catalogue = if v6 {
            &self.sb.dhcpv6_options
        } else {
            &self.sb.dhcp_options
        };
        catalogue.as_ref().is_none_or(|c| c.contains(name))
    }
    fn conj_ids(&self, lflow_uuid: &str, dp_uuid: &str, n: u32) -> u32 {
        let Ok(mut used) = self.conj.lock() else {
            return 1;
        };
        let mut start = conj_id_hash(lflow_uuid, dp_uuid).max(1);
        loop {
            let free = (0..n).all(|i| start.checked_add(i).is_some_and(|id| !used.contains(&id)));
            if free {
                used.extend((0..n).map(|i| start + i));
                return start;
            }
            start = start.wrapping_add(1).max(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::canonical_hash_fields;

    #[test]
    fn hash_fields_as_ovs_dumps_them() {
        assert_eq!(
            canonical_hash_fields(
                "type=select,selection_method=hash,fields(ip_dst,ip_src,tp_dst,tp_src),bucket=x"
            ),
            "type=select,selection_method=hash,fields(ip_src,ip_dst,tcp_src,tcp_dst),bucket=x"
        );
        assert_eq!(
            canonical_hash_fields("selection_method=hash,fields=ip_src,bucket=x"),
            "selection_method=hash,fields=ip_src,bucket=x"
        );
        assert_eq!(
            canonical_hash_fields("type=select,bucket=x"),
            "type=select,bucket=x"
        );
    }
}
