//! The desired flow table: every flow knows the owners that want it.
//!
//! Several owners may want a flow with the same (table, priority, match): duplicate ACLs,
//! conjunction clauses shared by logical flows, a physical flow and a logical one. The
//! switch gets one flow per key, chosen as ovn-controller's ofctrl chooses: a flow that does
//! something over a drop over a conjunction-only flow; conjunction-only flows are merged into
//! one flow carrying every conjunction. Ties go to the smallest owner, so the result is a
//! function of the set of contributions, not of the order they came in. Removing an owner
//! removes exactly its contributions; the keys whose effective flow may have changed are
//! remembered for the next incremental diff.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::HashTable;
use smallvec::SmallVec;

use crate::lflow::hash::FxBuild;
use crate::lflow::of::{Action, Flow, FlowMatch};
use crate::owner::Owner;

/// One owner's wish for a key.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Contribution {
    owner: Owner,
    cookie: u64,
    actions: Arc<Vec<Action>>,
}

#[derive(Clone, Debug)]
struct Entry {
    table: u8,
    priority: u16,
    m: FlowMatch,
    /// Sorted by owner.
    contribs: SmallVec<[Contribution; 1]>,
    /// The merged action list when every contribution is conjunction-only and there are
    /// several.
    merged: Option<Arc<Vec<Action>>>,
}

/// What the switch should have for one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectiveFlow<'a> {
    pub table: u8,
    pub priority: u16,
    pub m: &'a FlowMatch,
    pub cookie: u64,
    pub actions: &'a Arc<Vec<Action>>,
}

impl EffectiveFlow<'_> {
    pub fn to_flow(&self) -> Flow {
        Flow {
            table: self.table,
            priority: self.priority,
            cookie: self.cookie,
            m: self.m.clone(),
            actions: self.actions.clone(),
        }
    }
}

fn is_conj(actions: &[Action]) -> bool {
    !actions.is_empty()
        && actions
            .iter()
            .all(|a| matches!(a, Action::Conjunction { .. }))
}

/// ofctrl's preference: flows that do something, then drops, then conjunctions.
fn rank(actions: &[Action]) -> u8 {
    if is_conj(actions) {
        2
    } else {
        u8::from(actions.is_empty())
    }
}

impl Entry {
    fn effective(&self) -> Option<EffectiveFlow<'_>> {
        let first = self.contribs.iter().min_by_key(|c| rank(&c.actions))?;
        let actions = match &self.merged {
            Some(m) if is_conj(&first.actions) => m,
            _ => &first.actions,
        };
        Some(EffectiveFlow {
            table: self.table,
            priority: self.priority,
            m: &self.m,
            cookie: first.cookie,
            actions,
        })
    }

    fn remerge(&mut self) {
        let conj: Vec<&Contribution> = self
            .contribs
            .iter()
            .filter(|c| is_conj(&c.actions))
            .collect();
        self.merged = if conj.len() > 1 && conj.len() == self.contribs.len() {
            let mut all: Vec<Action> = Vec::new();
            for c in conj {
                for a in c.actions.iter() {
                    if !all.contains(a) {
                        all.push(a.clone());
                    }
                }
            }
            Some(Arc::new(all))
        } else {
            None
        };
    }
}

/// The desired flows of the chassis.
#[derive(Default)]
pub struct DesiredFlows {
    entries: Vec<Option<Entry>>,
    free: Vec<u32>,
    index: HashTable<u32>,
    hasher: FxBuild,
    by_owner: HashMap<Owner, Vec<u32>, FxBuild>,
    /// Entries whose effective flow may have changed since [`Self::take_changes`].
    changed: Vec<u32>,
    /// Keys that lost their last owner since then.
    removed: Vec<(u8, u16, FlowMatch)>,
    /// Contributions that lost to another owner's flow for the same key.
    duplicates: usize,
}

impl DesiredFlows {
    pub fn new() -> Self {
        Self::default()
    }

    fn hash(&self, table: u8, priority: u16, m: &FlowMatch) -> u64 {
        self.hasher.hash_one((table, priority, m))
    }

    fn find(&self, table: u8, priority: u16, m: &FlowMatch) -> Option<u32> {
        let h = self.hash(table, priority, m);
        self.index
            .find(h, |&i| {
                self.entries[i as usize]
                    .as_ref()
                    .is_some_and(|e| e.table == table && e.priority == priority && e.m == *m)
            })
            .copied()
    }

    /// A new, empty entry for a key (the match is stored compacted).
    fn insert_key(&mut self, table: u8, priority: u16, m: &mut FlowMatch) -> u32 {
        m.shrink_to_fit();
        let e = Entry {
            table,
            priority,
            m: m.clone(),
            contribs: SmallVec::new(),
            merged: None,
        };
        let id = if let Some(id) = self.free.pop() {
            self.entries[id as usize] = Some(e);
            id
        } else {
            self.entries.push(Some(e));
            (self.entries.len() - 1) as u32
        };
        let h = self.hash(table, priority, m);
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index.insert_unique(h, id, |&i| {
            entries[i as usize]
                .as_ref()
                .map_or(0, |e| hasher.hash_one((e.table, e.priority, &e.m)))
        });
        id
    }

    /// Replaces everything `owner` wants with `flows`.
    pub fn replace(&mut self, owner: Owner, flows: Vec<Flow>) {
        self.remove(owner);
        if flows.is_empty() {
            return;
        }
        let mut ids = Vec::with_capacity(flows.len());
        for mut f in flows {
            let id = match self.find(f.table, f.priority, &f.m) {
                Some(id) => id,
                None => self.insert_key(f.table, f.priority, &mut f.m),
            };
            let Some(e) = self.entries[id as usize].as_mut() else {
                continue;
            };
            let c = Contribution {
                owner,
                cookie: f.cookie,
                actions: f.actions,
            };
            // One owner may produce one key twice (two DNF terms with the same match): the
            // first stays, as ofctrl keeps the first.
            if e.contribs.iter().any(|x| x.owner == owner) {
                self.duplicates += 1;
                continue;
            }
            let at = e.contribs.partition_point(|x| x.owner < owner);
            e.contribs.insert(at, c);
            if e.contribs.len() > 1 {
                self.duplicates += 1;
            }
            e.remerge();
            self.changed.push(id);
            ids.push(id);
        }
        if !ids.is_empty() {
            self.by_owner.insert(owner, ids);
        }
    }

    /// Removes everything `owner` wants.
    pub fn remove(&mut self, owner: Owner) {
        let Some(ids) = self.by_owner.remove(&owner) else {
            return;
        };
        for id in ids {
            let Some(e) = self.entries[id as usize].as_mut() else {
                continue;
            };
            let before = e.contribs.len();
            e.contribs.retain(|c| c.owner != owner);
            if e.contribs.len() == before {
                continue;
            }
            if !e.contribs.is_empty() {
                self.duplicates = self.duplicates.saturating_sub(1);
            }
            if e.contribs.is_empty() {
                let h = self.hasher.hash_one((e.table, e.priority, &e.m));
                if let Ok(slot) = self.index.find_entry(h, |&i| i == id) {
                    slot.remove();
                }
                if let Some(e) = self.entries[id as usize].take() {
                    self.removed.push((e.table, e.priority, e.m));
                }
                self.free.push(id);
            } else {
                e.remerge();
                self.changed.push(id);
            }
        }
    }

    /// The effective flow for a key, if any owner wants it.
    pub fn get(&self, table: u8, priority: u16, m: &FlowMatch) -> Option<EffectiveFlow<'_>> {
        let id = self.find(table, priority, m)?;
        self.entries[id as usize].as_ref()?.effective()
    }

    /// The owners that want a key.
    pub fn owners(&self, table: u8, priority: u16, m: &FlowMatch) -> Vec<Owner> {
        self.find(table, priority, m)
            .and_then(|id| self.entries[id as usize].as_ref())
            .map(|e| e.contribs.iter().map(|c| c.owner).collect())
            .unwrap_or_default()
    }

    /// Every effective flow, in the order keys were first wanted.
    pub fn iter(&self) -> impl Iterator<Item = EffectiveFlow<'_>> {
        self.entries.iter().flatten().filter_map(Entry::effective)
    }

    /// The flows `owner` contributed (as it asked for them).
    pub fn flows_of(&self, owner: Owner) -> Vec<Flow> {
        let Some(ids) = self.by_owner.get(&owner) else {
            return Vec::new();
        };
        ids.iter()
            .filter_map(|id| self.entries[*id as usize].as_ref())
            .filter_map(|e| {
                let c = e.contribs.iter().find(|c| c.owner == owner)?;
                Some(Flow {
                    table: e.table,
                    priority: e.priority,
                    cookie: c.cookie,
                    m: e.m.clone(),
                    actions: c.actions.clone(),
                })
            })
            .collect()
    }

    pub fn owners_count(&self) -> usize {
        self.by_owner.len()
    }

    /// Number of keys (flows the switch gets).
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Contributions currently hidden behind another owner's flow for the same key.
    pub fn duplicates(&self) -> usize {
        self.duplicates
    }

    /// Keys whose effective flow may have changed since the last call (each once): look
    /// each up with [`Self::get`] (`None`: delete it from the switch).
    pub fn take_changes(&mut self) -> Vec<(u8, u16, FlowMatch)> {
        let mut ids = std::mem::take(&mut self.changed);
        ids.sort_unstable();
        ids.dedup();
        let mut v = std::mem::take(&mut self.removed);
        v.extend(
            ids.into_iter()
                .filter_map(|id| self.entries.get(id as usize)?.as_ref())
                .map(|e| (e.table, e.priority, e.m.clone())),
        );
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Drops the change log (after a full comparison made it moot).
    pub fn clear_changes(&mut self) {
        self.changed = Vec::new();
        self.removed = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lflow::of::{conjunction, resubmit, FieldId};
    use sbclient::Uuid;

    fn flow(cookie: u64, actions: Vec<Action>) -> Flow {
        let mut m = FlowMatch::new();
        assert!(m.add(FieldId::METADATA, 1, u128::from(u64::MAX)));
        Flow {
            table: 8,
            priority: 10,
            cookie,
            m,
            actions: Arc::new(actions),
        }
    }

    fn lf(n: u128) -> Owner {
        Owner::Lflow(Uuid::from_u128(n))
    }

    fn effective(d: &DesiredFlows) -> Vec<String> {
        d.iter().map(|f| f.to_flow().to_string()).collect()
    }

    #[test]
    fn preference_and_merging_follow_ofctrl() {
        let mut d = DesiredFlows::new();
        d.replace(lf(1), vec![flow(1, vec![])]);
        d.replace(lf(2), vec![flow(2, vec![resubmit(9)])]);
        d.replace(lf(3), vec![flow(3, vec![])]);
        assert_eq!(d.len(), 1);
        assert_eq!(
            d.iter().next().unwrap().cookie,
            2,
            "a flow with actions beats drops"
        );
        assert_eq!(d.duplicates(), 2);
        d.remove(lf(2));
        assert_eq!(
            d.iter().next().unwrap().cookie,
            1,
            "then the smallest owner's drop"
        );
        let mut c = DesiredFlows::new();
        c.replace(lf(5), vec![flow(0, vec![conjunction(6, 0, 2)])]);
        c.replace(lf(4), vec![flow(0, vec![conjunction(5, 0, 2)])]);
        assert_eq!(
            effective(&c),
            [" cookie=0x0, table=8, priority=10,metadata=0x1 actions=conjunction(5,1/2),conjunction(6,1/2)"]
        );
        c.replace(lf(9), vec![flow(7, vec![])]);
        assert_eq!(
            c.iter().next().unwrap().cookie,
            7,
            "a drop beats conjunctions"
        );
        c.remove(lf(9));
        c.remove(lf(4));
        assert_eq!(
            effective(&c),
            [" cookie=0x0, table=8, priority=10,metadata=0x1 actions=conjunction(6,1/2)"]
        );
        c.remove(lf(5));
        assert!(c.is_empty());
        assert_eq!(c.take_changes().len(), 1, "one key changed, reported once");
    }
}
