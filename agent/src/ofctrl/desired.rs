//! The flow table of the chassis: every key (table, priority, match) with the owners that
//! want it and what the switch has for it.
//!
//! Several owners may want a flow with the same key: duplicate ACLs, conjunction clauses
//! shared by logical flows, a physical flow and a logical one. The switch gets one flow per
//! key, chosen as ovn-controller's ofctrl chooses: a flow that does something over a drop
//! over a conjunction-only flow; conjunction-only flows are merged into one flow carrying
//! every conjunction. Ties go to the smallest owner, so the result is a function of the set
//! of contributions, not of the order they came in. Removing an owner removes exactly its
//! contributions.
//!
//! The installed side lives in the same entries (no second copy of the matches): each entry
//! remembers the cookie and actions the switch was last told. Entries whose desired and
//! installed flows may differ are marked dirty; [`FlowTable::pending`] turns them into
//! flow_mods and [`FlowTable::commit`] records that the switch took them.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::HashTable;
use openflow::flow::FlowModCommand;
use smallvec::SmallVec;

use super::entry::{Contribution, EffectiveFlow, Entry, FlowOp, Installed};
use super::pages::Pages;
use crate::lflow::hash::FxBuild;
use crate::lflow::of::{Action, Flow, FlowMatch, Slot};
use crate::owner::Owner;

/// The flow table of the chassis.
#[derive(Default)]
pub struct FlowTable {
    entries: Pages<Entry>,
    free: Vec<u32>,
    index: HashTable<u32>,
    hasher: FxBuild,
    by_owner: HashMap<Owner, Vec<u32>, FxBuild>,
    /// Entries that may need a flow_mod.
    dirty: Vec<u32>,
    /// Freed entries still listed in `dirty`: reusable once `dirty` is drained (a key
    /// reusing the id meanwhile would be listed twice).
    freed_dirty: Vec<u32>,
    /// Contributions currently hidden behind another owner's flow for the same key.
    duplicates: usize,
    /// Keys with an effective flow.
    wanted: usize,
    /// The same, by OpenFlow table (index = table id), kept as keys come and go so that
    /// per-table counts cost nothing to read.
    wanted_by_table: Vec<usize>,
}

/// The flow table's memory, by part ([`FlowTable::memory`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowTableMemory {
    /// Entries, the key index and the by-owner lists.
    pub entries_bytes: usize,
    /// The matches' bytes.
    pub match_bytes: usize,
    /// References to action lists (contributions, merged and installed lists).
    pub action_refs: usize,
    /// Distinct action list allocations, and their bytes.
    pub action_lists: usize,
    pub action_bytes: usize,
    /// Distinct action list contents (fewer than `action_lists` when equal lists are
    /// allocated apart).
    pub distinct_action_contents: usize,
}

/// The desired-flow side is what most callers use.
pub type DesiredFlows = FlowTable;

/// The entries of flow_mods in flight, with what was sent for each.
#[derive(Debug, Default)]
pub struct FlowBatch {
    items: Vec<(u32, Option<Installed>)>,
    /// Items whose entry an earlier item of the same batch sent already (a put that takes
    /// more as it goes, [`FlowTable::take_more`]): the switch state they start from is that
    /// earlier message, not the installed flow, so they are sent as a full add (or a strict
    /// delete), which is right whatever the switch has.
    resent: HashSet<usize, FxBuild>,
}

impl FlowBatch {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// A flow the switch reported that no owner wants and that the table could not hold
/// (a match outside [`FlowMatch`]): deleted by its raw match.
#[derive(Clone, Debug, PartialEq)]
pub struct ForeignFlow {
    pub table: u8,
    pub priority: u16,
    pub m: openflow::oxm::Match,
}

impl FlowTable {
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
    fn insert_key(&mut self, table: u8, priority: u16, mut m: FlowMatch) -> u32 {
        m.shrink_to_fit();
        let h = self.hash(table, priority, &m);
        let e = Entry {
            table,
            priority,
            m,
            contribs: SmallVec::new(),
            merged: None,
            installed: None,
            installed_dumped: false,
            dirty: false,
            in_flight: false,
        };
        let id = if let Some(id) = self.free.pop() {
            self.entries[id as usize] = Some(e);
            id
        } else {
            self.entries.push(Some(e));
            (self.entries.len() - 1) as u32
        };
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index.insert_unique(h, id, |&i| {
            entries[i as usize]
                .as_ref()
                .map_or(0, |e| hasher.hash_one((e.table, e.priority, &e.m)))
        });
        id
    }

    fn mark(&mut self, id: u32) {
        if let Some(e) = self.entries[id as usize].as_mut() {
            if !e.dirty {
                e.dirty = true;
                self.dirty.push(id);
            }
        }
    }

    /// Drops an entry nobody wants and the switch does not have.
    fn drop_if_unused(&mut self, id: u32) {
        let Some(e) = self.entries[id as usize].as_ref() else {
            return;
        };
        if !e.contribs.is_empty() || e.installed.is_some() || e.in_flight {
            return;
        }
        let dirty = e.dirty;
        let h = self.hasher.hash_one((e.table, e.priority, &e.m));
        if let Ok(slot) = self.index.find_entry(h, |&i| i == id) {
            slot.remove();
        }
        self.entries[id as usize] = None;
        if dirty {
            self.freed_dirty.push(id);
        } else {
            self.free.push(id);
        }
    }

    /// Makes room for `additional` more keys (a full compile knows its count: growing by
    /// doubling would leave up to half the entries' memory unused).
    pub fn reserve(&mut self, additional: usize) {
        self.entries.reserve(additional);
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index.reserve(additional, |&i| {
            entries[i as usize]
                .as_ref()
                .map_or(0, |e| hasher.hash_one((e.table, e.priority, &e.m)))
        });
    }

    /// Makes room for `keys` keys in all (nothing when there is room already).
    pub fn reserve_total(&mut self, keys: usize) {
        let have = self.entries.len() - self.free.len();
        if keys > self.entries.capacity() {
            self.reserve(keys.saturating_sub(have));
        }
    }

    /// Replaces everything `owner` wants with `flows`.
    pub fn replace(&mut self, owner: Owner, flows: Vec<Flow>) {
        // Recomputed owners mostly want what they wanted: then nothing is touched (no
        // rehash, no pending flow_mod to check).
        if self.wants_exactly(owner, &flows) {
            return;
        }
        self.remove(owner);
        let ids = self.contribute(owner, flows);
        if !ids.is_empty() {
            self.by_owner.insert(owner, ids);
        }
    }

    /// Adds `flows` to what `owner` wants (a key it wants already keeps what it had).
    pub fn add(&mut self, owner: Owner, flows: Vec<Flow>) {
        let ids = self.contribute(owner, flows);
        if !ids.is_empty() {
            self.by_owner.entry(owner).or_default().extend(ids);
        }
    }

    /// Takes `owner`'s contributions to the keys of `flows` away (its other flows stay).
    pub fn remove_some(&mut self, owner: Owner, flows: &[Flow]) {
        let mut gone: HashSet<u32, FxBuild> = HashSet::default();
        for f in flows {
            let Some(id) = self.find(f.table, f.priority, &f.m) else {
                continue;
            };
            if self.withdraw(owner, id) {
                gone.insert(id);
            }
        }
        if let Some(ids) = self.by_owner.get_mut(&owner) {
            ids.retain(|id| !gone.contains(id));
            if ids.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
    }

    /// Adds `owner`'s contribution for each of `flows`; the entries it now contributes to.
    fn contribute(&mut self, owner: Owner, flows: Vec<Flow>) -> Vec<u32> {
        let mut ids = Vec::with_capacity(flows.len());
        for mut f in flows {
            let id = match self.find(f.table, f.priority, &f.m) {
                Some(id) => id,
                None => self.insert_key(f.table, f.priority, std::mem::take(&mut f.m)),
            };
            let Some(e) = self.entries[id as usize].as_mut() else {
                continue;
            };
            // One owner may produce one key twice (two DNF terms with the same match): the
            // first stays, as ofctrl keeps the first.
            if e.contribs.iter().any(|x| x.owner == owner) {
                self.duplicates += 1;
                continue;
            }
            let at = e.contribs.partition_point(|x| x.owner < owner);
            e.contribs.insert(
                at,
                Contribution {
                    owner,
                    cookie: f.cookie,
                    actions: f.actions,
                },
            );
            if e.contribs.len() > 1 {
                self.duplicates += 1;
            } else {
                self.wanted += 1;
                let table = usize::from(e.table);
                if self.wanted_by_table.len() <= table {
                    self.wanted_by_table.resize(table + 1, 0);
                }
                self.wanted_by_table[table] += 1;
            }
            e.remerge();
            ids.push(id);
            self.mark(id);
        }
        ids
    }

    /// Whether `owner` already wants exactly `flows`, in that order.
    fn wants_exactly(&self, owner: Owner, flows: &[Flow]) -> bool {
        let Some(ids) = self.by_owner.get(&owner) else {
            return flows.is_empty();
        };
        ids.len() == flows.len()
            && ids.iter().zip(flows).all(|(&id, f)| {
                self.entries[id as usize].as_ref().is_some_and(|e| {
                    e.table == f.table
                        && e.priority == f.priority
                        && e.m == f.m
                        && e.contribs.iter().any(|c| {
                            c.owner == owner
                                && c.cookie == f.cookie
                                && (Arc::ptr_eq(&c.actions, &f.actions) || c.actions == f.actions)
                        })
                })
            })
    }

    /// Removes everything `owner` wants.
    pub fn remove(&mut self, owner: Owner) {
        let Some(ids) = self.by_owner.remove(&owner) else {
            return;
        };
        for id in ids {
            self.withdraw(owner, id);
        }
    }

    /// Takes `owner`'s contribution to entry `id` away; whether it had one.
    fn withdraw(&mut self, owner: Owner, id: u32) -> bool {
        let Some(e) = self.entries[id as usize].as_mut() else {
            return false;
        };
        let before = e.contribs.len();
        e.contribs.retain(|c| c.owner != owner);
        if e.contribs.len() == before {
            return false;
        }
        if e.contribs.is_empty() {
            self.wanted -= 1;
            self.wanted_by_table[usize::from(e.table)] -= 1;
        } else {
            self.duplicates = self.duplicates.saturating_sub(1);
        }
        e.remerge();
        self.mark(id);
        self.drop_if_unused(id);
        true
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

    /// The owners of the flow at entry `id` (from a [`FlowOp`]).
    pub fn owners_of_entry(&self, id: u32) -> Vec<Owner> {
        self.entries
            .get(id as usize)
            .and_then(Option::as_ref)
            .map(|e| e.contribs.iter().map(|c| c.owner).collect())
            .unwrap_or_default()
    }

    /// Every effective flow, in the order keys were first wanted.
    pub fn iter(&self) -> impl Iterator<Item = EffectiveFlow<'_>> {
        self.entries.iter().flatten().filter_map(Entry::effective)
    }

    /// What the table holds in memory (estimates from capacities; an action's own heap
    /// parts, such as a learn spec list, are not counted).
    pub fn memory(&self) -> FlowTableMemory {
        let mut m = FlowTableMemory {
            entries_bytes: self.entries.capacity() * std::mem::size_of::<Option<Entry>>()
                + self.index.capacity() * std::mem::size_of::<u32>()
                + self.by_owner.capacity()
                    * (std::mem::size_of::<Owner>() + std::mem::size_of::<Vec<u32>>())
                + self
                    .by_owner
                    .values()
                    .map(|v| v.capacity() * 4)
                    .sum::<usize>(),
            ..FlowTableMemory::default()
        };
        let mut seen: std::collections::HashSet<*const Vec<Action>, FxBuild> =
            std::collections::HashSet::default();
        // Content hashes (a collision only makes the count a little low).
        let mut contents: std::collections::HashSet<u64, FxBuild> =
            std::collections::HashSet::default();
        let mut count = |a: &Arc<Vec<Action>>, m: &mut FlowTableMemory| {
            m.action_refs += 1;
            if seen.insert(Arc::as_ptr(a)) {
                m.action_lists += 1;
                m.action_bytes += 16 + a.capacity() * std::mem::size_of::<Action>();
                contents.insert(self.hasher.hash_one(a.as_slice()));
            }
        };
        for e in self.entries.iter().flatten() {
            m.match_bytes += e.m.heap_bytes();
            if e.contribs.spilled() {
                m.entries_bytes += e.contribs.capacity() * std::mem::size_of::<Contribution>();
            }
            for c in &e.contribs {
                count(&c.actions, &mut m);
            }
            if let Some(a) = &e.merged {
                count(a, &mut m);
            }
            if let Some(i) = &e.installed {
                count(&i.actions, &mut m);
            }
        }
        m.distinct_action_contents = contents.len();
        m
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

    /// Every owner with flows.
    pub fn owners_all(&self) -> impl Iterator<Item = &Owner> {
        self.by_owner.keys()
    }

    pub fn owners_count(&self) -> usize {
        self.by_owner.len()
    }

    /// Number of keys with an effective flow (flows the switch gets).
    pub fn len(&self) -> usize {
        self.wanted
    }

    pub fn is_empty(&self) -> bool {
        self.wanted == 0
    }

    /// Keys with an effective flow by OpenFlow table: entry `t` counts table `t` (tables
    /// past the end have none). Kept up to date as flows come and go.
    pub fn len_by_table(&self) -> &[usize] {
        &self.wanted_by_table
    }

    /// Contributions currently hidden behind another owner's flow for the same key.
    pub fn duplicates(&self) -> usize {
        self.duplicates
    }

    /// Whether some flow_mod may be pending.
    pub fn has_pending(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// The flow_mods that bring the switch to the desired table, for the entries changed
    /// since the last [`Self::commit`] (all of them after [`Self::forget_installed`]).
    pub fn pending(&self) -> impl Iterator<Item = FlowOp<'_>> {
        self.dirty.iter().filter_map(|&id| {
            self.entries
                .get(id as usize)
                .and_then(Option::as_ref)
                .and_then(|e| e.op(id))
        })
    }

    /// The flow_mods of `batch` from its item `from` on, with the index of the item after
    /// each (where the next part of a put resumes). The table must not change between
    /// [`Self::take_batch`] and the last call (the ops are computed from it).
    pub fn batch_ops<'a>(
        &'a self,
        batch: &'a FlowBatch,
        from: usize,
    ) -> impl Iterator<Item = (usize, FlowOp<'a>)> + 'a {
        batch.items[from.min(batch.items.len())..]
            .iter()
            .enumerate()
            .filter_map(move |(i, (id, _))| {
                let e = self.entries.get(*id as usize)?.as_ref()?;
                let op = if batch.resent.contains(&(from + i)) {
                    e.overwrite_op(*id)
                } else {
                    e.op(*id)?
                };
                // A part that ends after the delete resumes at the same item (the delete
                // again, a no-op in the same bundle, then the add).
                let delete = e.forgets_learned(&op).then(|| {
                    (
                        from + i,
                        FlowOp {
                            command: FlowModCommand::DeleteStrict,
                            actions: &[],
                            ..op.clone()
                        },
                    )
                });
                let op = match delete {
                    Some(_) => FlowOp {
                        command: FlowModCommand::Add,
                        ..op
                    },
                    None => op,
                };
                Some([delete, Some((from + i + 1, op))])
            })
            .flatten()
            .flatten()
    }

    /// Marks every pending entry as sent (the flow_mods from [`Self::pending`] went out in
    /// one batch): changes made from now on are pending again. Finish the batch with
    /// [`Self::commit_batch`] or [`Self::fail_batch`].
    pub fn take_batch(&mut self) -> FlowBatch {
        let mut batch = FlowBatch::default();
        self.take_more(&mut batch, false);
        batch
    }

    /// Adds the entries changed since `batch` was taken to it (a put whose table is still
    /// being computed as its first parts go out). Their flow_mods follow the batch's earlier
    /// ones in [`Self::batch_ops`]. With `adds_only`, only wanted flows the switch does not
    /// have are taken: the rest stays pending until the table is complete (a flow the
    /// switch has may be wanted as it is once all is computed; it must not be deleted or
    /// changed on the way).
    pub fn take_more(&mut self, batch: &mut FlowBatch, adds_only: bool) {
        batch.items.reserve(self.dirty.len());
        let mut held = Vec::new();
        for id in std::mem::take(&mut self.dirty) {
            let Some(e) = self.entries[id as usize].as_mut() else {
                continue;
            };
            if adds_only && (e.installed.is_some() || e.effective().is_none()) {
                held.push(id);
                continue;
            }
            e.dirty = false;
            // Only one put is in flight: an entry in flight is in this batch already.
            if e.in_flight {
                batch.resent.insert(batch.items.len());
            }
            e.in_flight = true;
            let sent = e.effective().map(|w| Installed {
                cookie: w.cookie,
                actions: w.actions.clone(),
            });
            batch.items.push((id, sent));
        }
        // Freed entries left the list above (held ones are all live): reusable now.
        self.dirty = held;
        self.free.append(&mut self.freed_dirty);
    }

    /// The switch took the batch: what was sent is what it has.
    pub fn commit_batch(&mut self, batch: FlowBatch) {
        for (id, sent) in batch.items {
            if let Some(e) = self.entries.get_mut(id as usize).and_then(Option::as_mut) {
                e.installed = sent;
                e.installed_dumped = false;
                e.in_flight = false;
            }
            self.drop_if_unused(id);
        }
    }

    /// The switch refused the batch (nothing of it was applied): its entries are pending.
    pub fn fail_batch(&mut self, batch: FlowBatch) {
        for (id, _) in batch.items {
            if let Some(e) = self.entries.get_mut(id as usize).and_then(Option::as_mut) {
                e.in_flight = false;
            }
            self.mark(id);
            self.drop_if_unused(id);
        }
    }

    /// Every pending flow_mod went out and the switch took it: installed becomes desired.
    pub fn commit(&mut self) {
        let b = self.take_batch();
        self.commit_batch(b);
    }

    /// What the switch has is unknown (a new connection): every wanted flow is pending.
    pub fn forget_installed(&mut self) {
        let ids: Vec<u32> = (0..self.entries.len() as u32).collect();
        for id in ids {
            if let Some(e) = self.entries[id as usize].as_mut() {
                e.installed = None;
                e.installed_dumped = false;
                // A batch that was in flight on the old connection is forgotten with it.
                e.in_flight = false;
            }
            self.drop_if_unused(id);
            self.mark(id);
        }
    }

    /// Records what a switch dump shows (after [`Self::forget_installed`]): flows for known
    /// keys become their installed state (compared by meaning), flows for keys nobody wants
    /// become tombstones to delete, and flows whose match the table cannot hold are returned
    /// (delete them by their raw match).
    pub fn record_dump(
        &mut self,
        dumped: impl IntoIterator<Item = (u8, u16, u64, openflow::oxm::Match, Vec<Action>)>,
    ) -> Vec<ForeignFlow> {
        // Desired keys as the switch stores them (VLAN fields change form after OF1.5).
        let mut canon: HashMap<u64, SmallVec<[u32; 1]>, FxBuild> = HashMap::default();
        for (id, e) in self.entries.iter().enumerate() {
            if let Some(e) = e {
                let h = if e.m.get(Slot::VlanTci).is_some() {
                    self.hash(e.table, e.priority, &e.m.canonical_of15())
                } else {
                    self.hash(e.table, e.priority, &e.m)
                };
                canon.entry(h).or_default().push(id as u32);
            }
        }
        let mut foreign = Vec::new();
        for (table, priority, cookie, raw, actions) in dumped {
            let Ok(m) = FlowMatch::from_match(&raw) else {
                foreign.push(ForeignFlow {
                    table,
                    priority,
                    m: raw,
                });
                continue;
            };
            let h = self.hash(table, priority, &m);
            let found = canon.get(&h).and_then(|ids| {
                ids.iter().copied().find(|&id| {
                    self.entries[id as usize].as_ref().is_some_and(|e| {
                        e.table == table && e.priority == priority && e.m.canonical_of15() == m
                    })
                })
            });
            let id = if let Some(id) = found {
                id
            } else {
                let id = self.insert_key(table, priority, m);
                canon.entry(h).or_default().push(id);
                id
            };
            if let Some(e) = self.entries[id as usize].as_mut() {
                e.installed = Some(Installed {
                    cookie,
                    actions: Arc::new(actions),
                });
                e.installed_dumped = true;
            }
            self.mark(id);
        }
        foreign
    }
}

#[cfg(test)]
#[path = "desired_tests.rs"]
mod tests;
