//! What logical flows depend on besides their own row, as one run's view saw it: the local
//! datapaths, and for every port and multicast group name its tunnel key, whether it is
//! resident here and whether it is related to this chassis, and the port groups as filtered
//! to related ports. Comparing two runs' [`Deps`] names what changed; [`affected_lflows`]
//! turns that into the logical flows to compile again, so that a claim, a release or a new
//! port does not recompile every logical flow.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use sbclient::ovn_sb::{LogicalDpGroup, LogicalFlow};
use sbclient::{Replica, Row, Table, Uuid};

use super::lflow_index::LflowIndex;
use crate::view::{DepParts, SbView};

/// How one port (or multicast group) name of a datapath looks to the compiler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PortState {
    key: u32,
    resident: bool,
    related: bool,
}

/// What the compiler read of the view, beyond the logical flows themselves: the view's own
/// parts, shared, so that keeping them costs nothing and unchanged parts compare at once.
#[derive(Clone, Default)]
pub struct Deps(DepParts);

/// What differs between two [`Deps`].
#[derive(Debug, Default)]
pub struct Changed {
    pub datapaths: HashSet<Uuid>,
    pub names: HashSet<String>,
    pub port_groups: HashSet<String>,
}

impl Changed {
    pub fn is_empty(&self) -> bool {
        self.datapaths.is_empty() && self.names.is_empty() && self.port_groups.is_empty()
    }
}

impl Deps {
    pub fn of(view: &SbView<'_>) -> Self {
        Self(view.dep_parts())
    }

    /// The state of port `name` (key `key`) of datapath `dp`.
    fn port_state(&self, dp: &Uuid, name: &str, key: u32) -> PortState {
        let d = &self.0;
        let dp_key = d.datapaths.get(dp).map_or(0, |i| i.key);
        PortState {
            key,
            resident: d.ports.resident.contains(name),
            related: d.ports.related.contains(&(dp_key, key)),
        }
    }

    /// What changed from `self` to `new`.
    pub fn changes(&self, new: &Self) -> Changed {
        let (old, now) = (&self.0, &new.0);
        let mut out = Changed::default();
        if !Arc::ptr_eq(&old.local_datapaths, &now.local_datapaths) {
            out.datapaths = old
                .local_datapaths
                .symmetric_difference(&now.local_datapaths)
                .copied()
                .collect();
        }
        if !Arc::ptr_eq(&old.ports, &now.ports) || !Arc::ptr_eq(&old.datapaths, &now.datapaths) {
            let empty = HashMap::default();
            for (dp, names) in &old.ports.ports {
                let new_names = now.ports.ports.get(dp).unwrap_or(&empty);
                for (name, key) in names {
                    let same = new_names.get(name).is_some_and(|k| {
                        new.port_state(dp, name, *k) == self.port_state(dp, name, *key)
                    });
                    if !same {
                        out.names.insert(name.clone());
                    }
                }
            }
            for (dp, names) in &now.ports.ports {
                let old_names = old.ports.ports.get(dp).unwrap_or(&empty);
                for name in names.keys() {
                    if !old_names.contains_key(name) {
                        out.names.insert(name.clone());
                    }
                }
            }
        }
        if !Arc::ptr_eq(&old.port_groups, &now.port_groups) {
            for (name, members) in old.port_groups.iter() {
                if now.port_groups.get(name) != Some(members) {
                    out.port_groups.insert(name.clone());
                }
            }
            for name in now.port_groups.keys() {
                if !old.port_groups.contains_key(name) {
                    out.port_groups.insert(name.clone());
                }
            }
        }
        out
    }
}

/// The logical flows whose compiled flows may differ after `changed`: those on a datapath
/// that became local or stopped being local, and those on a local datapath whose match,
/// actions or `in_out_port` tag name a changed port or a changed port group (`@name`).
/// Found through the reverse index: the cost follows the number of names, not of lflows.
pub fn affected_lflows(view: &SbView<'_>, changed: &Changed, index: &LflowIndex) -> Vec<Uuid> {
    let replica = view.replica();
    let Some(lflows) = replica.table::<LogicalFlow>() else {
        return Vec::new();
    };
    if changed.is_empty() {
        return Vec::new();
    }
    // Per datapath group, once: whether it holds a changed datapath, and a local one.
    let group_touches: HashMap<Uuid, (bool, bool)> = replica
        .table::<LogicalDpGroup>()
        .map(|t| {
            t.iter()
                .map(|(u, g)| {
                    let moved = g.datapaths.iter().any(|d| changed.datapaths.contains(d));
                    let local = g.datapaths.iter().any(|d| view.local_datapaths.contains(d));
                    (*u, (moved, local))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out: HashSet<Uuid> = HashSet::new();
    for d in &changed.datapaths {
        out.extend(index.on_datapath(d));
    }
    for (g, (moved, _)) in &group_touches {
        if *moved {
            out.extend(index.on_dp_group(g));
        }
    }
    let is_local = |lf: &LogicalFlow| match (lf.logical_datapath, lf.logical_dp_group) {
        (Some(d), _) => view.local_datapaths.contains(&d),
        (None, Some(g)) => group_touches.get(&g).is_some_and(|t| t.1),
        (None, None) => false,
    };
    let mut consider = |u: &Uuid| {
        if !out.contains(u) && lflows.get(u).is_some_and(is_local) {
            out.insert(*u);
        }
    };
    for name in &changed.names {
        index.naming_port(name).for_each(&mut consider);
    }
    for pg in &changed.port_groups {
        for needle in port_group_names(pg) {
            index.naming_port_group(needle).for_each(&mut consider);
        }
    }
    let mut out: Vec<Uuid> = out.into_iter().collect();
    out.sort_unstable();
    out
}

/// How a match names port group `name`: as it is, and without the datapath key northd puts
/// in front of the Southbound copy's name ("<dp key>_<name>"), as matches keep the name they
/// were written with.
pub fn port_group_names(name: &str) -> Vec<&str> {
    let mut out = vec![name];
    if let Some((key, rest)) = name.split_once('_') {
        if !rest.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) {
            out.push(rest);
        }
    }
    out
}

/// The names of the rows of `table` in its current change set: inserted and modified rows'
/// names now, and modified and deleted rows' names before.
pub fn changed_names<T: Row>(table: &Table<T>, name: impl Fn(&T) -> &str) -> BTreeSet<String> {
    let c = table.changes();
    let now = c
        .inserted
        .iter()
        .chain(c.modified.keys())
        .filter_map(|u| table.get(u));
    let before = c
        .modified
        .values()
        .chain(c.deleted.values())
        .map(AsRef::as_ref);
    now.chain(before).map(|r| name(r).to_owned()).collect()
}

/// The uuids of the rows of `table` in its current change set.
pub fn changed_rows<T: Row>(table: &Table<T>) -> BTreeSet<Uuid> {
    let c = table.changes();
    c.inserted
        .iter()
        .chain(c.modified.keys())
        .chain(c.deleted.keys())
        .copied()
        .collect()
}

/// The logical flows in one of `groups`, or on one of `datapaths` directly or through their
/// datapath group.
pub fn lflows_on(
    replica: &Replica,
    index: &LflowIndex,
    datapaths: &BTreeSet<Uuid>,
    groups: &BTreeSet<Uuid>,
) -> Vec<Uuid> {
    let mut out: BTreeSet<Uuid> = BTreeSet::new();
    for d in datapaths {
        out.extend(index.on_datapath(d));
    }
    for g in groups {
        out.extend(index.on_dp_group(g));
    }
    if !datapaths.is_empty() {
        if let Some(t) = replica.table::<LogicalDpGroup>() {
            for (g, grp) in t.iter() {
                if grp.datapaths.iter().any(|d| datapaths.contains(d)) {
                    out.extend(index.on_dp_group(g));
                }
            }
        }
    }
    out.into_iter().collect()
}
