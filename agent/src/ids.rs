//! Ids with reference counts: the OpenFlow group, meter and conjunction ids of compiled
//! flows.
//!
//! Meters take the lowest free id, as ovn-controller numbers them (its tests and operators'
//! scripts read `meter_id=1`); ids the switch already holds are taken back by a meter of
//! the same content after a restart, so a restart changes no flow. Groups are
//! content-addressed: an id is a function of its content: the search for a free id starts at a stable hash of
//! the key (FNV-1a of its canonical text), so the same content gets the same id whatever
//! order or thread compiled it. Each user acquires the key and releases it when its flows
//! go; the id is freed with the last user. Only two keys whose hashes collide in the id
//! space depend on order (the first takes the slot, the next probes onward); the spaces are
//! wide enough that this is rare, and it never gives two keys one id.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};

use crate::lflow::hash::FxBuild;
use std::hash::Hash;
use std::ops::RangeInclusive;

pub use crate::stable_hash::{stable_hash, Fnv};

/// Keys whose id search starts at a stable hash of their content.
pub trait StableKey: Hash + Eq + Clone {
    fn stable_hash(&self) -> u64;
}

impl StableKey for String {
    fn stable_hash(&self) -> u64 {
        stable_hash(self.as_bytes())
    }
}

impl<T: Hash + Eq> StableKey for std::sync::Arc<T> {
    fn stable_hash(&self) -> u64 {
        use std::hash::Hasher as _;
        let mut h = Fnv::default();
        (**self).hash(&mut h);
        h.finish()
    }
}

#[derive(Debug, Clone)]
struct Slot<V> {
    id: u32,
    refs: u32,
    /// Seeded ids (from a switch dump) stay even without users.
    pinned: bool,
    value: V,
}

/// How a new key finds its id.
#[derive(Debug, Clone)]
pub enum Allocation<V> {
    /// The search starts at a stable hash of the key.
    Hashed,
    /// The lowest free id, preferring one the switch holds with a value that is `same`.
    LowestFree { same: fn(&V, &V) -> bool },
}

/// Ids for keys `K`, each carrying the value `V` to install under that id.
#[derive(Debug, Clone)]
pub struct IdTable<K, V> {
    range: RangeInclusive<u32>,
    allocation: Allocation<V>,
    /// `(id, value)` the switch holds that no key has taken yet ([`IdTable::prefer`]).
    preferred: Vec<(u32, V)>,
    by_key: HashMap<K, Slot<V>, FxBuild>,
    by_id: BTreeMap<u32, K>,
    /// Moves whenever an id, its key or its value changes (what is installed must follow).
    version: u64,
}

impl<K: StableKey, V: Clone> IdTable<K, V> {
    /// An empty table whose ids come from `range` (0 is never used), content-addressed.
    pub fn new(range: RangeInclusive<u32>) -> Self {
        Self::with_allocation(range, Allocation::Hashed)
    }

    pub fn with_allocation(range: RangeInclusive<u32>, allocation: Allocation<V>) -> Self {
        Self {
            range,
            allocation,
            preferred: Vec::new(),
            by_key: HashMap::default(),
            by_id: BTreeMap::new(),
            version: 0,
        }
    }

    /// See `version`: equal values mean the same ids, keys and values.
    pub fn version(&self) -> u64 {
        self.version
    }

    fn start(&self, key: &K) -> u32 {
        let (lo, hi) = (u64::from(*self.range.start()), u64::from(*self.range.end()));
        (lo + key.stable_hash() % (hi - lo + 1)) as u32
    }

    /// The id of `key`, taking one reference; allocates on first use. `None` when the
    /// space is full.
    pub fn acquire(&mut self, key: &K, value: impl FnOnce() -> V) -> Option<u32> {
        if let Some(s) = self.by_key.get_mut(key) {
            if s.refs == 0 {
                // A seeded id gets the content to install with its first user.
                s.value = value();
                self.version += 1;
            }
            s.refs += 1;
            return Some(s.id);
        }
        let value = value();
        let id = match self.allocation {
            Allocation::Hashed => self.free_from(self.start(key))?,
            Allocation::LowestFree { same } => match self.take_preferred(&value, same) {
                Some(id) => id,
                None => self.free_from(*self.range.start())?,
            },
        };
        self.insert(key.clone(), id, value, 1, false);
        Some(id)
    }

    /// Ids the switch holds (read after a connect), each with its value: a new key of the
    /// same value takes that id before the lowest free one (`LowestFree` tables only).
    pub fn prefer(&mut self, held: impl IntoIterator<Item = (u32, V)>) {
        self.preferred = held.into_iter().collect();
    }

    fn take_preferred(&mut self, value: &V, same: fn(&V, &V) -> bool) -> Option<u32> {
        let at = self
            .preferred
            .iter()
            .position(|(id, v)| same(v, value) && !self.by_id.contains_key(id))?;
        Some(self.preferred.swap_remove(at).0)
    }

    /// Replaces the value installed under `key` (its id and references stay), for a key
    /// whose content comes from elsewhere and changed (a Southbound `Meter` row).
    pub fn set_value(&mut self, key: &K, value: V)
    where
        V: PartialEq,
    {
        if let Some(s) = self.by_key.get_mut(key) {
            if s.value != value {
                s.value = value;
                self.version += 1;
            }
        }
    }

    /// The table's own copy of `key` (so that users holding keys share one copy when `K`
    /// is reference-counted).
    pub fn interned(&self, key: &K) -> Option<K> {
        self.by_key.get_key_value(key).map(|(k, _)| k.clone())
    }

    /// Pins `key` to `id` (ids read back from a switch, or fixed by an operator). A key
    /// already holding another id keeps it.
    /// An id pinned by an earlier seed that nothing uses yet is taken over.
    pub fn seed(&mut self, key: K, id: u32, value: V) {
        if self.by_key.contains_key(&key) || !self.range.contains(&id) {
            return;
        }
        if let Some(holder) = self.by_id.get(&id) {
            if !self
                .by_key
                .get(holder)
                .is_some_and(|s| s.pinned && s.refs == 0)
            {
                return;
            }
            let holder = holder.clone();
            self.by_key.remove(&holder);
        }
        self.insert(key, id, value, 0, true);
    }

    fn insert(&mut self, key: K, id: u32, value: V, refs: u32, pinned: bool) {
        self.version += 1;
        self.by_id.insert(id, key.clone());
        self.by_key.insert(
            key,
            Slot {
                id,
                refs,
                pinned,
                value,
            },
        );
    }

    fn free_from(&self, start: u32) -> Option<u32> {
        let (lo, hi) = (*self.range.start(), *self.range.end());
        let span = u64::from(hi - lo) + 1;
        (0..span.min(1 << 20)).find_map(|i| {
            let id = lo + ((u64::from(start - lo) + i) % span) as u32;
            (!self.by_id.contains_key(&id)).then_some(id)
        })
    }

    /// Drops one reference to `key`; the id is freed when none remain (unless pinned).
    pub fn release(&mut self, key: &K) {
        if let Entry::Occupied(mut e) = self.by_key.entry(key.clone()) {
            let s = e.get_mut();
            s.refs = s.refs.saturating_sub(1);
            if s.refs == 0 && !s.pinned {
                self.by_id.remove(&s.id);
                e.remove();
                self.version += 1;
            }
        }
    }

    pub fn get(&self, key: &K) -> Option<u32> {
        self.by_key.get(key).map(|s| s.id)
    }

    /// Live entries in id order: `(id, key, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &K, &V)> {
        // From the slots, sorted: looking each key up would hash its whole content (a
        // group's buckets), and this runs on every engine run.
        let mut live: Vec<(u32, &K, &V)> = self
            .by_key
            .iter()
            .map(|(k, s)| (s.id, k, &s.value))
            .collect();
        live.sort_unstable_by_key(|e| e.0);
        live.into_iter()
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

/// Conjunction ids: `n` consecutive ids per (logical flow, datapath), starting at OVN's hash
/// of the pair (so ids match ovn-controller's when nothing collides), with reference counts.
#[derive(Debug, Default, Clone)]
pub struct ConjIds {
    /// (lflow, datapath) to (first id, count, users).
    by_owner: HashMap<(sbclient::Uuid, sbclient::Uuid), (u32, u32, u32), FxBuild>,
    used: BTreeMap<u32, (sbclient::Uuid, sbclient::Uuid)>,
}

impl ConjIds {
    /// The first of `n` ids for (lflow, datapath), starting the search at `start`.
    pub fn acquire(
        &mut self,
        lflow: sbclient::Uuid,
        dp: sbclient::Uuid,
        n: u32,
        start: u32,
    ) -> u32 {
        if let Some(e) = self.by_owner.get_mut(&(lflow, dp)) {
            if e.1 >= n {
                e.2 += 1;
                return e.0;
            }
        }
        if let Some((first, count, _)) = self.by_owner.remove(&(lflow, dp)) {
            // Held, but too few: freed and taken again (ovn-controller counts this too,
            // as a sign that ids were not released when the lflow was compiled again).
            for id in first..first.saturating_add(count) {
                self.used.remove(&id);
            }
            crate::coverage::LFLOW_CONJ_FREE.add(u64::from(count));
            crate::coverage::LFLOW_CONJ_FREE_UNEXPECTED.inc();
        }
        let mut first = start.max(1);
        loop {
            let fits = (0..n).all(|i| {
                first
                    .checked_add(i)
                    .is_some_and(|id| !self.used.contains_key(&id))
            });
            if fits {
                break;
            }
            crate::coverage::LFLOW_CONJ_CONFLICT.inc();
            first = first.checked_add(1).unwrap_or(1);
        }
        for id in first..first + n {
            self.used.insert(id, (lflow, dp));
        }
        crate::coverage::LFLOW_CONJ_ALLOC.add(u64::from(n));
        self.by_owner.insert((lflow, dp), (first, n, 1));
        first
    }

    /// The first id (lflow, datapath) holds.
    pub fn held(&self, lflow: sbclient::Uuid, dp: sbclient::Uuid) -> Option<u32> {
        self.by_owner.get(&(lflow, dp)).map(|e| e.0)
    }

    /// Drops one user of (lflow, datapath)'s ids.
    pub fn release(&mut self, lflow: sbclient::Uuid, dp: sbclient::Uuid) {
        if let Entry::Occupied(mut e) = self.by_owner.entry((lflow, dp)) {
            let (first, count, users) = e.get_mut();
            *users = users.saturating_sub(1);
            if *users == 0 {
                for id in *first..first.saturating_add(*count) {
                    self.used.remove(&id);
                }
                crate::coverage::LFLOW_CONJ_FREE.add(u64::from(*count));
                e.remove();
            }
        }
    }

    /// `(lflow, datapath, first id, count)` of every allocation, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (sbclient::Uuid, sbclient::Uuid, u32, u32)> + '_ {
        let mut v: Vec<_> = self
            .by_owner
            .iter()
            .map(|((l, d), (f, n, _))| (*l, *d, *f, *n))
            .collect();
        v.sort_by_key(|e| e.2);
        v.into_iter()
    }

    pub fn total(&self) -> usize {
        self.used.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_content_same_id_in_any_order_and_freed_with_the_last_user() {
        let keys: Vec<String> = (0..200)
            .map(|i| format!("type=select,bucket={i}"))
            .collect();
        let mut a: IdTable<String, ()> = IdTable::new(1..=u32::MAX - 256);
        let mut b: IdTable<String, ()> = IdTable::new(1..=u32::MAX - 256);
        for k in &keys {
            a.acquire(k, || ());
        }
        for k in keys.iter().rev() {
            b.acquire(k, || ());
        }
        for k in &keys {
            assert_eq!(a.get(k), b.get(k));
        }
        let k = &keys[0];
        let id = a.acquire(k, || ()).unwrap();
        a.release(k);
        assert_eq!(a.get(k), Some(id), "one user left");
        a.release(k);
        assert_eq!(a.get(k), None);
        assert_eq!(a.acquire(k, || ()), Some(id), "the same id again");
    }

    #[test]
    fn colliding_keys_get_distinct_ids() {
        let mut t: IdTable<String, ()> = IdTable::new(1..=3);
        let ids: Vec<u32> = ["a", "b", "c"]
            .iter()
            .map(|k| t.acquire(&(*k).to_string(), || ()).unwrap())
            .collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![1, 2, 3]);
        assert_eq!(t.acquire(&"d".to_string(), || ()), None, "space full");
    }

    #[test]
    fn lowest_free_reuses_freed_ids_and_prefers_held_ones() {
        let same = |a: &u32, b: &u32| a == b;
        let mut t: IdTable<String, u32> =
            IdTable::with_allocation(1..=100, Allocation::LowestFree { same });
        let key = |k: &str| k.to_string();
        assert_eq!(t.acquire(&key("event-elb"), || 10), Some(1));
        t.release(&key("event-elb"));
        assert_eq!(
            t.acquire(&key("acl-meter"), || 20),
            Some(1),
            "1 is free again"
        );
        assert_eq!(t.acquire(&key("arp-meter"), || 30), Some(2));

        let mut restarted: IdTable<String, u32> =
            IdTable::with_allocation(1..=100, Allocation::LowestFree { same });
        restarted.prefer([(1, 20), (2, 30)]);
        assert_eq!(restarted.acquire(&key("arp-meter"), || 30), Some(2));
        assert_eq!(
            restarted.acquire(&key("new"), || 40),
            Some(1),
            "lowest free"
        );
        assert_eq!(
            restarted.acquire(&key("acl-meter"), || 20),
            Some(3),
            "1 taken"
        );
    }

    #[test]
    fn conj_ids_are_consecutive_and_released() {
        let mut c = ConjIds::default();
        let (l1, l2, d) = (
            sbclient::Uuid::from_u128(1),
            sbclient::Uuid::from_u128(2),
            sbclient::Uuid::from_u128(9),
        );
        let a = c.acquire(l1, d, 3, 100);
        let b = c.acquire(l2, d, 2, 101);
        assert_eq!((a, b), (100, 103));
        c.release(l1, d);
        assert_eq!(c.total(), 2);
        assert_eq!(c.acquire(l1, d, 3, 100), 100);
    }

    #[test]
    fn conj_id_conflicts_and_unexpected_frees_are_counted() {
        use crate::coverage::{LFLOW_CONJ_CONFLICT, LFLOW_CONJ_FREE_UNEXPECTED};
        let mut c = ConjIds::default();
        let (l1, l2, d) = (
            sbclient::Uuid::from_u128(1),
            sbclient::Uuid::from_u128(2),
            sbclient::Uuid::from_u128(9),
        );
        let (conflicts, unexpected) = (
            LFLOW_CONJ_CONFLICT.total(),
            LFLOW_CONJ_FREE_UNEXPECTED.total(),
        );
        c.acquire(l1, d, 2, 100);
        // l2 hashes into l1's ids: two probes.
        assert_eq!(c.acquire(l2, d, 1, 100), 102);
        assert!(LFLOW_CONJ_CONFLICT.total() >= conflicts + 2);
        // l1 needs more ids than it holds: its ids are freed and taken again.
        assert_eq!(c.acquire(l1, d, 3, 100), 103);
        assert!(LFLOW_CONJ_FREE_UNEXPECTED.total() > unexpected);
    }
}
