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

use crate::view::{DepParts, SbView};

/// More changed names than this recompile everything (scanning every lflow for each name
/// would cost more than compiling).
const MAX_CHANGED_NAMES: usize = 256;

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
/// actions or `in_out_port` tag name a changed port (as a quoted string, as northd writes
/// port names) or a changed port group (`@name`). `None` when the change is too large to be
/// worth the scan, or names a port that could be written otherwise (escaped characters).
pub fn affected_lflows(view: &SbView<'_>, changed: &Changed) -> Option<Vec<Uuid>> {
    if changed.names.len() > MAX_CHANGED_NAMES
        || changed
            .names
            .iter()
            .any(|n| n.contains(['"', '\\']) || n.is_empty())
    {
        return None;
    }
    let quoted: Vec<String> = changed.names.iter().map(|n| format!("\"{n}\"")).collect();
    let groups: Vec<String> = changed
        .port_groups
        .iter()
        .flat_map(|n| port_group_needles(n))
        .collect();
    let mentions = |lf: &LogicalFlow| {
        quoted
            .iter()
            .any(|q| lf.match_.contains(q.as_str()) || lf.actions.contains(q.as_str()))
            || groups.iter().any(|g| lf.match_.contains(g.as_str()))
            || lf
                .tags
                .get("in_out_port")
                .is_some_and(|p| changed.names.contains(p))
    };
    let lflows = view.replica().table::<LogicalFlow>()?;
    if quoted.is_empty() && groups.is_empty() && changed.datapaths.is_empty() {
        return Some(Vec::new());
    }
    // Per datapath group, once: whether it holds a changed datapath, and a local one.
    let group_touches: HashMap<Uuid, (bool, bool)> = view
        .replica()
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
    let mut out = Vec::new();
    for (u, lf) in lflows.iter() {
        let (moved, local) = match (lf.logical_datapath, lf.logical_dp_group) {
            (Some(d), _) => (
                changed.datapaths.contains(&d),
                view.local_datapaths.contains(&d),
            ),
            (None, Some(g)) => group_touches.get(&g).copied().unwrap_or_default(),
            (None, None) => (false, false),
        };
        if moved || (local && mentions(lf)) {
            out.push(*u);
        }
    }
    Some(out)
}

/// How a match names port group `name`: `@name`, and without the datapath key northd puts
/// in front of the Southbound copy's name ("<dp key>_<name>"), as matches keep the name they
/// were written with.
pub fn port_group_needles(name: &str) -> Vec<String> {
    let mut out = vec![format!("@{name}")];
    if let Some((key, rest)) = name.split_once('_') {
        if !rest.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) {
            out.push(format!("@{rest}"));
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

/// The logical flows whose match contains one of `needles` (`$set`, `@group`).
pub fn lflows_matching(replica: &Replica, needles: &[String]) -> Vec<Uuid> {
    let Some(lflows) = replica.table::<LogicalFlow>() else {
        return Vec::new();
    };
    lflows
        .iter()
        .filter(|(_, lf)| needles.iter().any(|n| lf.match_.contains(n.as_str())))
        .map(|(u, _)| *u)
        .collect()
}

/// The logical flows in one of `groups`, or on one of `datapaths` directly or through their
/// datapath group.
pub fn lflows_on(
    replica: &Replica,
    datapaths: &BTreeSet<Uuid>,
    groups: &BTreeSet<Uuid>,
) -> Vec<Uuid> {
    let Some(lflows) = replica.table::<LogicalFlow>() else {
        return Vec::new();
    };
    let dp_groups = replica.table::<LogicalDpGroup>();
    let in_group = |g: &Uuid| {
        groups.contains(g)
            || dp_groups
                .and_then(|t| t.get(g))
                .is_some_and(|g| g.datapaths.iter().any(|d| datapaths.contains(d)))
    };
    lflows
        .iter()
        .filter(|(_, lf)| {
            lf.logical_datapath.is_some_and(|d| datapaths.contains(&d))
                || lf.logical_dp_group.as_ref().is_some_and(in_group)
        })
        .map(|(u, _)| *u)
        .collect()
}
