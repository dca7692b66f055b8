//! Which logical flows to compile again when what they depend on besides their own row
//! changed: the view's [`ViewChanges`] (local datapaths, port keys, residence and
//! relatedness, filtered port groups) or a changed Southbound row (address sets, port groups,
//! datapath groups), found through the reverse [`LflowIndex`], so that a claim, a release or
//! a new port does not recompile every logical flow.

use std::collections::{BTreeSet, HashMap, HashSet};

use sbclient::ovn_sb::{LogicalDpGroup, LogicalFlow};
use sbclient::{Replica, Row, Table, Uuid};

use super::lflow_index::{LflowIndex, Named, TemplateRefs};
use crate::lflow::chassis_view::ChassisView;
use crate::view::{SbView, ViewChanges};

/// The logical flows whose compiled flows may differ after `changed`: those on a datapath
/// that became local or stopped being local, and those on a local datapath whose match,
/// actions or `in_out_port` tag name a changed port or a changed port group (`@name`).
/// Found through the reverse index: the cost follows the number of names, not of lflows.
pub fn affected_lflows(view: &SbView<'_>, changed: &ViewChanges, index: &LflowIndex) -> Vec<Uuid> {
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
    let refs = TemplateRefs::new(view.template_vars());
    for name in &changed.names {
        index.naming_port(name).for_each(&mut consider);
        index
            .naming_through_templates(&refs, Named::Port(name))
            .iter()
            .for_each(&mut consider);
    }
    for pg in &changed.port_groups {
        for needle in port_group_names(pg) {
            index.naming_port_group(needle).for_each(&mut consider);
            index
                .naming_through_templates(&refs, Named::PortGroup(needle))
                .iter()
                .for_each(&mut consider);
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
