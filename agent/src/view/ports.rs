//! The ports part of the view (every port and multicast group key by datapath, which ports
//! are resident or related here) and the port groups filtered to related ports. Both are
//! kept up to date row by row: a claim touches one port's entry and the groups naming it,
//! not the thousands of rows a rebuild reads, and says which names it changed.

use std::collections::{HashMap, HashSet};

use sbclient::ovn_sb::{MulticastGroup, PortBinding, PortGroup};
use sbclient::{Replica, Uuid};

use super::{key_u32, rows, DatapathInfo, LocalFacts, ViewChanges};
use crate::lflow::hash::FxBuild;

/// What one Port_Binding or Multicast_Group row puts into [`PortsPart`].
#[derive(Clone, Debug, PartialEq, Eq)]
struct RowEntry {
    datapath: Uuid,
    name: String,
    key: u32,
    /// The datapath's tunnel key (`None`: the datapath is unknown).
    dp_key: Option<u32>,
    resident: bool,
    related: bool,
}

/// Port keys and which ports are resident or related here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PortsPart {
    /// Datapath to port (and multicast group) name to tunnel key.
    pub(crate) ports: HashMap<Uuid, HashMap<String, u32, FxBuild>, FxBuild>,
    pub(crate) resident: HashSet<String, FxBuild>,
    pub(crate) related: HashSet<(u32, u32), FxBuild>,
    /// Names of the related ports (what port groups are filtered to).
    pub(super) related_names: HashSet<String, FxBuild>,
    /// Each row's share of the sets above, to take it back when the row changes or goes.
    rows: HashMap<Uuid, RowEntry, FxBuild>,
}

/// The rows changed since the view last saw them: Port_Binding and Multicast_Group rows by
/// uuid, Address_Set and Port_Group rows by name (each changed row's name before and after).
#[derive(Debug, Default)]
pub struct TouchedRows {
    pub port_bindings: HashSet<Uuid>,
    pub multicast_groups: HashSet<Uuid>,
    pub address_sets: HashSet<String>,
    pub port_groups: HashSet<String>,
}

impl TouchedRows {
    pub fn is_empty(&self) -> bool {
        self.port_bindings.is_empty()
            && self.multicast_groups.is_empty()
            && self.address_sets.is_empty()
            && self.port_groups.is_empty()
    }
}

/// Inputs every entry is computed from.
pub(super) struct PortInputs<'a> {
    pub replica: &'a Replica,
    pub chassis: &'a str,
    pub facts: &'a LocalFacts,
    pub datapaths: &'a HashMap<Uuid, DatapathInfo, FxBuild>,
}

impl PortInputs<'_> {
    fn port_entry(&self, u: &Uuid, p: &PortBinding) -> RowEntry {
        let f = self.facts;
        RowEntry {
            datapath: p.datapath,
            name: p.logical_port.clone(),
            key: key_u32(p.tunnel_key),
            dp_key: self.datapaths.get(&p.datapath).map(|d| d.key),
            resident: f.bound.contains(u) || f.active_ha.contains(u),
            related: is_related_port(u, p, self.chassis, f),
        }
    }

    fn group_entry(&self, m: &MulticastGroup) -> RowEntry {
        RowEntry {
            datapath: m.datapath,
            name: m.name.clone(),
            key: key_u32(m.tunnel_key),
            dp_key: self.datapaths.get(&m.datapath).map(|d| d.key),
            resident: false,
            related: false,
        }
    }
}

impl PortsPart {
    pub(super) fn build(inputs: &PortInputs<'_>) -> Self {
        let mut part = Self::default();
        for (u, m) in rows::<MulticastGroup>(inputs.replica) {
            part.add(*u, inputs.group_entry(m));
        }
        for (u, p) in rows::<PortBinding>(inputs.replica) {
            part.add(*u, inputs.port_entry(u, p));
        }
        part
    }

    /// Brings the entries of the `touched` rows up to date; the names whose key, residence
    /// or relatedness changed go to `changes.names`, those whose relatedness changed also
    /// to `related_flips`.
    pub(super) fn update(
        &mut self,
        inputs: &PortInputs<'_>,
        touched: &TouchedRows,
        changes: &mut ViewChanges,
        related_flips: &mut HashSet<String>,
    ) {
        let pbs = inputs.replica.table::<PortBinding>();
        let mcs = inputs.replica.table::<MulticastGroup>();
        let now_pb = touched.port_bindings.iter().map(|u| {
            let e = pbs.and_then(|t| t.get(u)).map(|p| inputs.port_entry(u, p));
            (*u, e)
        });
        let now_mc = touched.multicast_groups.iter().map(|u| {
            let e = mcs.and_then(|t| t.get(u)).map(|m| inputs.group_entry(m));
            (*u, e)
        });
        let moved: Vec<(Uuid, Option<RowEntry>)> = now_pb
            .chain(now_mc)
            .filter(|(u, e)| self.rows.get(u) != e.as_ref())
            .collect();
        // Every old share first, then every new one: a row deleted and another inserted
        // under the same name in one change keep the new row's entry.
        let mut was_related: HashMap<String, bool> = HashMap::new();
        for (u, _) in &moved {
            if let Some(old) = self.remove(u) {
                changes.names.insert(old.name.clone());
                *was_related.entry(old.name).or_default() |= old.related;
            }
        }
        for (u, new) in moved {
            if let Some(new) = new {
                changes.names.insert(new.name.clone());
                was_related.entry(new.name.clone()).or_default();
                self.add(u, new);
            }
        }
        for (name, before) in was_related {
            if before != self.related_names.contains(&name) {
                related_flips.insert(name);
            }
        }
    }

    fn add(&mut self, u: Uuid, e: RowEntry) {
        self.ports
            .entry(e.datapath)
            .or_default()
            .insert(e.name.clone(), e.key);
        if e.resident {
            self.resident.insert(e.name.clone());
        }
        if e.related {
            if let Some(dp_key) = e.dp_key {
                self.related.insert((dp_key, e.key));
            }
            self.related_names.insert(e.name.clone());
        }
        self.rows.insert(u, e);
    }

    fn remove(&mut self, u: &Uuid) -> Option<RowEntry> {
        let e = self.rows.remove(u)?;
        if let Some(names) = self.ports.get_mut(&e.datapath) {
            names.remove(&e.name);
            if names.is_empty() {
                self.ports.remove(&e.datapath);
            }
        }
        if e.resident {
            self.resident.remove(&e.name);
        }
        if e.related {
            if let Some(dp_key) = e.dp_key {
                self.related.remove(&(dp_key, e.key));
            }
            self.related_names.remove(&e.name);
        }
        Some(e)
    }

    /// The names whose entry differs between `self` and `new` (after a rebuild).
    pub(super) fn changed_names(&self, new: &Self) -> HashSet<String> {
        let mut out = HashSet::new();
        for (u, e) in &self.rows {
            if new.rows.get(u) != Some(e) {
                out.insert(e.name.clone());
            }
        }
        for (u, e) in &new.rows {
            if self.rows.get(u) != Some(e) {
                out.insert(e.name.clone());
            }
        }
        out
    }
}

/// Types of port bindings that are related to every chassis that has their datapath.
const ALWAYS_RELATED: [&str; 3] = ["patch", "localnet", "vtep"];

/// Whether `p` is related to chassis `chassis` (its `in_out_port` flows are installed here):
/// bound or active here, a localport with an interface here, a member of an HA group naming
/// this chassis, a port of a type related everywhere, or an l2gateway / l3gateway port whose
/// option names this chassis (as ovn-controller's binding decides).
fn is_related_port(u: &Uuid, p: &PortBinding, chassis: &str, facts: &LocalFacts) -> bool {
    let gateway_here = |option: &str| p.options.get(option).is_some_and(|c| c == chassis);
    facts.bound.contains(u)
        || facts.localports.contains(u)
        || facts.active_ha.contains(u)
        || facts.ha_members.contains(u)
        || ALWAYS_RELATED.contains(&p.type_.as_str())
        || (p.type_ == "l2gateway" && gateway_here("l2gateway-chassis"))
        || (p.type_ == "l3gateway" && gateway_here("l3gateway-chassis"))
}

pub(super) type PortGroups = HashMap<String, Vec<String>, FxBuild>;

/// Every port group with its members filtered to `related_names`.
pub(super) fn port_groups(
    replica: &Replica,
    related_names: &HashSet<String, FxBuild>,
) -> PortGroups {
    rows::<PortGroup>(replica)
        .map(|(_, g)| (g.name.clone(), filtered(g, related_names)))
        .collect()
}

fn filtered(g: &PortGroup, related_names: &HashSet<String, FxBuild>) -> Vec<String> {
    g.ports
        .iter()
        .filter(|p| related_names.contains(*p))
        .cloned()
        .collect()
}

/// Filters again the groups that name one of `flips` (ports that became or stopped being
/// related); the groups whose filtered members changed go to `changes.port_groups`.
pub(super) fn update_port_groups(
    groups: &mut PortGroups,
    replica: &Replica,
    related_names: &HashSet<String, FxBuild>,
    flips: &HashSet<String>,
    changes: &mut ViewChanges,
) {
    for (_, g) in rows::<PortGroup>(replica) {
        if !flips.iter().any(|n| g.ports.contains(n)) {
            continue;
        }
        let members = filtered(g, related_names);
        if groups.get(&g.name) != Some(&members) {
            changes.port_groups.insert(g.name.clone());
            groups.insert(g.name.clone(), members);
        }
    }
}

/// Filters again the groups named in `names` (rows that changed, were added or went); the
/// groups whose filtered members changed go to `changes.port_groups`.
pub(super) fn update_named_groups(
    groups: &mut PortGroups,
    replica: &Replica,
    related_names: &HashSet<String, FxBuild>,
    names: &HashSet<String>,
    changes: &mut ViewChanges,
) {
    let mut present: HashSet<&str> = HashSet::new();
    for (_, g) in rows::<PortGroup>(replica) {
        if !names.contains(&g.name) {
            continue;
        }
        present.insert(&g.name);
        let members = filtered(g, related_names);
        if groups.get(&g.name) != Some(&members) {
            changes.port_groups.insert(g.name.clone());
            groups.insert(g.name.clone(), members);
        }
    }
    for gone in names.iter().filter(|n| !present.contains(n.as_str())) {
        if groups.remove(gone).is_some() {
            changes.port_groups.insert(gone.clone());
        }
    }
}

/// The groups whose filtered members differ between `old` and `new`.
pub(super) fn changed_groups(old: &PortGroups, new: &PortGroups) -> HashSet<String> {
    let mut out: HashSet<String> = old
        .iter()
        .filter(|(name, members)| new.get(*name) != Some(*members))
        .map(|(name, _)| name.clone())
        .collect();
    out.extend(new.keys().filter(|n| !old.contains_key(*n)).cloned());
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use sbclient::ovn_sb::AddressSet;

    use super::*;
    use crate::southbound::Southbound;
    use crate::view::ViewParts;

    const CHASSIS: &str = "hv1";

    fn id(n: u128) -> String {
        Uuid::from_u128(n).to_string()
    }

    fn apply(sb: &mut Southbound, update: &serde_json::Value) -> TouchedRows {
        let raw = serde_json::value::RawValue::from_string(update.to_string()).unwrap();
        sb.replica.apply_update(&raw).unwrap();
        let mut touched = TouchedRows::default();
        if let Some(t) = sb.replica.table::<PortBinding>() {
            let c = t.changes();
            touched.port_bindings.extend(c.inserted.iter().copied());
            touched.port_bindings.extend(c.modified.keys().copied());
            touched.port_bindings.extend(c.deleted.keys().copied());
        }
        if let Some(t) = sb.replica.table::<MulticastGroup>() {
            let c = t.changes();
            touched.multicast_groups.extend(c.inserted.iter().copied());
            touched.multicast_groups.extend(c.modified.keys().copied());
            touched.multicast_groups.extend(c.deleted.keys().copied());
        }
        if let Some(t) = sb.replica.table::<AddressSet>() {
            touched
                .address_sets
                .extend(crate::engine::deps::changed_names(t, |a| &a.name));
        }
        if let Some(t) = sb.replica.table::<PortGroup>() {
            touched
                .port_groups
                .extend(crate::engine::deps::changed_names(t, |g| &g.name));
        }
        sb.replica.clear_changes();
        touched
    }

    fn port(name: &str, key: i64, type_: &str) -> serde_json::Value {
        json!({"insert": {"logical_port": name, "tunnel_key": key, "type": type_,
            "datapath": ["uuid", id(0xd1)]}})
    }

    /// The parts brought up to date entry by entry equal the parts built anew.
    fn assert_same_as_rebuilt(parts: &ViewParts, sb: &Southbound, facts: &LocalFacts) {
        let mut fresh = ViewParts::default();
        fresh.refresh(sb, CHASSIS, facts, &BTreeSet::new(), None);
        assert_eq!(*parts.ports, *fresh.ports);
        assert_eq!(*parts.port_groups, *fresh.port_groups);
        assert_eq!(*parts.address_sets, *fresh.address_sets);
    }

    fn sorted(s: &HashSet<String>) -> Vec<&str> {
        let mut v: Vec<&str> = s.iter().map(String::as_str).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn entries_follow_claims_row_changes_and_renames() {
        let mut sb = Southbound::default();
        apply(
            &mut sb,
            &json!({
                "Datapath_Binding": {id(0xd1): {"insert": {"tunnel_key": 1}}},
                "Port_Binding": {
                    id(1): port("p1", 1, ""), id(2): port("p2", 2, ""),
                    id(3): port("p3", 3, ""), id(4): port("r1", 4, "patch"),
                },
                "Multicast_Group": {id(0x10): {"insert": {"name": "_MC_flood",
                    "tunnel_key": 32768, "datapath": ["uuid", id(0xd1)]}}},
                "Port_Group": {id(0x20): {"insert": {"name": "pg1",
                    "ports": ["set", ["p1", "p2", "p3"]]}}},
            }),
        );
        let none = BTreeSet::new();
        let mut facts = LocalFacts::default();
        let mut parts = ViewParts::default();
        parts.refresh(&sb, CHASSIS, &facts, &none, None);
        assert!(parts.take_changes().rebuilt);
        assert_eq!(*parts.port_groups.get("pg1").unwrap(), Vec::<String>::new());

        // A claim: p1 becomes resident and related, pg1 gains it.
        facts.bound.insert(Uuid::from_u128(1));
        parts.refresh(&sb, CHASSIS, &facts, &none, Some(&TouchedRows::default()));
        let c = parts.take_changes();
        assert_eq!(sorted(&c.names), ["p1"]);
        assert_eq!(c.port_groups, HashSet::from(["pg1".to_owned()]));
        assert_eq!(*parts.port_groups.get("pg1").unwrap(), ["p1"]);
        assert_same_as_rebuilt(&parts, &sb, &facts);

        // A new key for p2 and the multicast group; p3 deleted and inserted again under
        // a new uuid in the same change.
        let touched = apply(
            &mut sb,
            &json!({
                "Port_Binding": {
                    id(2): {"modify": {"tunnel_key": 12}},
                    id(3): {"delete": null},
                    id(5): port("p3", 13, ""),
                },
                "Multicast_Group": {id(0x10): {"modify": {"tunnel_key": 32769}}},
            }),
        );
        let tables = BTreeSet::from(["Port_Binding", "Multicast_Group"]);
        parts.refresh(&sb, CHASSIS, &facts, &tables, Some(&touched));
        let c = parts.take_changes();
        assert_eq!(sorted(&c.names), ["_MC_flood", "p2", "p3"]);
        assert!(c.port_groups.is_empty(), "{c:?}");
        assert_eq!(parts.ports.ports[&Uuid::from_u128(0xd1)]["p3"], 13);
        assert_same_as_rebuilt(&parts, &sb, &facts);

        // A release and a row that does not change: only the released port.
        facts.bound.clear();
        let touched = apply(
            &mut sb,
            &json!({"Port_Binding": {id(4): {"modify": {"external_ids": ["map", [["a", "b"]]]}}}}),
        );
        parts.refresh(&sb, CHASSIS, &facts, &tables, Some(&touched));
        let c = parts.take_changes();
        assert_eq!(sorted(&c.names), ["p1"]);
        assert_eq!(c.port_groups, HashSet::from(["pg1".to_owned()]));
        assert_same_as_rebuilt(&parts, &sb, &facts);
    }

    #[test]
    fn address_sets_and_port_groups_follow_their_changed_rows() {
        let mut sb = Southbound::default();
        apply(
            &mut sb,
            &json!({
                "Datapath_Binding": {id(0xd1): {"insert": {"tunnel_key": 1}}},
                "Port_Binding": {id(1): port("p1", 1, ""), id(2): port("p2", 2, "")},
                "Port_Group": {
                    id(0x20): {"insert": {"name": "pg1", "ports": ["set", ["p2"]]}},
                    id(0x21): {"insert": {"name": "pg2", "ports": ["set", ["p1"]]}},
                },
                "Address_Set": {
                    id(0x30): {"insert": {"name": "as1", "addresses": ["set", ["10.0.0.1"]]}},
                    id(0x31): {"insert": {"name": "as2", "addresses": "10.0.0.9"}},
                },
            }),
        );
        let none = BTreeSet::new();
        let mut facts = LocalFacts::default();
        facts.bound.insert(Uuid::from_u128(1));
        let mut parts = ViewParts::default();
        parts.refresh(&sb, CHASSIS, &facts, &none, None);
        parts.take_changes();
        let tables = BTreeSet::from(["Port_Group", "Address_Set"]);

        // One address more; p1 joins pg1 (p2 is not related: pg1's filtered members change by
        // p1 only); pg2 goes and pg3 comes with p1.
        let touched = apply(
            &mut sb,
            &json!({
                "Address_Set": {id(0x30): {"modify": {"addresses": "10.0.0.2"}}},
                "Port_Group": {
                    id(0x20): {"modify": {"ports": "p1"}},
                    id(0x21): {"delete": null},
                    id(0x22): {"insert": {"name": "pg3", "ports": "p1"}},
                },
            }),
        );
        parts.refresh(&sb, CHASSIS, &facts, &tables, Some(&touched));
        let c = parts.take_changes();
        assert_eq!(sorted(&c.port_groups), ["pg1", "pg2", "pg3"]);
        assert_eq!(parts.address_sets["as1"], ["10.0.0.1", "10.0.0.2"]);
        assert_eq!(parts.address_sets["as2"], ["10.0.0.9"]);
        assert!(!parts.port_groups.contains_key("pg2"));
        assert_same_as_rebuilt(&parts, &sb, &facts);

        // A rename of an address set, and a member change no related port sees.
        let touched = apply(
            &mut sb,
            &json!({
                "Address_Set": {id(0x31): {"modify": {"name": "as9"}}},
                "Port_Group": {id(0x22): {"modify": {"ports": "p2"}}},
            }),
        );
        parts.refresh(&sb, CHASSIS, &facts, &tables, Some(&touched));
        let c = parts.take_changes();
        assert!(c.port_groups.is_empty(), "{c:?}");
        assert!(!parts.address_sets.contains_key("as2"));
        assert_eq!(parts.address_sets["as9"], ["10.0.0.9"]);
        assert_same_as_rebuilt(&parts, &sb, &facts);
    }
}
