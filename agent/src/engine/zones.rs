//! Conntrack zones (reference §2.5): one per local logical port and two per local datapath
//! (`<dp uuid>_dnat`, `<dp uuid>_snat`), kept in br-int `external_ids:ct-zone-*` so they
//! survive restarts; a new zone is flushed before flows use it.

use std::collections::{BTreeMap, BTreeSet};

/// Zones by name, with the ones assigned since the last flush request.
#[derive(Clone, Debug, Default)]
pub struct Zones {
    pub by_name: BTreeMap<String, u16>,
    /// Zones to flush (`NXT_CT_FLUSH_ZONE`) before the next flows go in.
    pub to_flush: BTreeSet<u16>,
}

impl Zones {
    /// Restores the zones the bridge recorded (`ct-zone-<name>=<zone>`).
    pub fn restore<'a>(&mut self, external_ids: impl Iterator<Item = (&'a String, &'a String)>) {
        let mut used: BTreeSet<u16> = self.by_name.values().copied().collect();
        for (k, v) in external_ids {
            if let (Some(name), Ok(z)) = (k.strip_prefix("ct-zone-"), v.parse::<u16>()) {
                // A zone recorded twice is kept by its first name; the other gets a new one.
                if z != 0 && !self.by_name.contains_key(name) && used.insert(z) {
                    self.by_name.insert(name.to_owned(), z);
                }
            }
        }
    }

    /// Makes the zones exactly `wanted` (names, with a requested zone where the datapath
    /// asks for one): kept names keep their zone, new names take the requested zone if it
    /// is free or the lowest free one, gone names are freed (and flushed) if
    /// `release_unwanted`. Until the first complete view (a restart: the bindings and local
    /// datapaths are not all known yet) nothing is released, or the restored zones of live
    /// ports would be flushed and given to others.
    pub fn update(&mut self, wanted: &BTreeMap<String, Option<u16>>, release_unwanted: bool) {
        let gone: Vec<String> = self
            .by_name
            .keys()
            .filter(|n| release_unwanted && !wanted.contains_key(*n))
            .cloned()
            .collect();
        for n in gone {
            if let Some(z) = self.by_name.remove(&n) {
                self.to_flush.insert(z);
            }
        }
        let mut used: BTreeSet<u16> = self.by_name.values().copied().collect();
        // Requested zones first, so that a free-running allocation does not take them. As
        // in ovn-controller, a requested zone is taken from a name that holds it without
        // having asked for it (that name gets another zone below); of two that ask for one
        // zone, the one holding it keeps it.
        for (n, req) in wanted {
            let Some(r) = req else { continue };
            if self.by_name.get(n) == Some(r) {
                continue;
            }
            let holder = self
                .by_name
                .iter()
                .find(|(m, z)| **z == *r && *m != n)
                .map(|(m, _)| m.clone());
            if let Some(h) = holder {
                if wanted.get(&h).copied().flatten() == Some(*r) {
                    continue;
                }
                self.by_name.remove(&h);
            }
            if let Some(old) = self.by_name.insert(n.clone(), *r) {
                used.remove(&old);
                self.to_flush.insert(old);
            }
            used.insert(*r);
            self.to_flush.insert(*r);
        }
        let mut next = 1u16;
        for n in wanted.keys() {
            if self.by_name.contains_key(n) {
                continue;
            }
            while used.contains(&next) {
                next = next.wrapping_add(1).max(1);
            }
            self.by_name.insert(n.clone(), next);
            used.insert(next);
            self.to_flush.insert(next);
        }
    }

    pub fn get(&self, name: &str) -> Option<u16> {
        self.by_name.get(name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restored_zones_survive_an_incomplete_first_view() {
        let mut z = Zones::default();
        let ids = [
            ("ct-zone-vm3".to_owned(), "7".to_owned()),
            ("ct-zone-vm2".to_owned(), "8".to_owned()),
        ];
        z.restore(ids.iter().map(|(k, v)| (k, v)));
        // Before the first put: nothing bound yet, then vm2 only.
        z.update(&BTreeMap::new(), false);
        z.update(&BTreeMap::from([("vm2".to_owned(), None)]), false);
        z.update(
            &BTreeMap::from([("vm2".to_owned(), None), ("vm3".to_owned(), None)]),
            false,
        );
        assert_eq!((z.get("vm2"), z.get("vm3")), (Some(8), Some(7)));
        assert!(z.to_flush.is_empty(), "no live zone is flushed");
    }

    #[test]
    fn zones_are_stable_and_requested_ones_honoured() {
        let mut z = Zones::default();
        let ids = [("ct-zone-vm1".to_owned(), "3".to_owned())];
        z.restore(ids.iter().map(|(k, v)| (k, v)));
        let wanted = BTreeMap::from([
            ("vm1".to_owned(), None),
            ("vm2".to_owned(), None),
            ("d_snat".to_owned(), Some(7)),
        ]);
        z.update(&wanted, true);
        assert_eq!(z.get("vm1"), Some(3), "restored zone kept");
        assert_eq!(z.get("d_snat"), Some(7), "requested zone");
        assert_eq!(z.get("vm2"), Some(1), "lowest free");
        assert!(!z.to_flush.contains(&3), "a kept zone is not flushed");
        z.to_flush.clear();
        z.update(&BTreeMap::from([("vm2".to_owned(), None)]), true);
        assert_eq!(z.by_name.len(), 1);
        assert!(z.to_flush.contains(&3) && z.to_flush.contains(&7));
    }

    #[test]
    fn a_requested_zone_is_taken_from_a_port_and_a_recorded_conflict_resolved() {
        let mut z = Zones::default();
        let wanted = BTreeMap::from([
            ("p1".to_owned(), None),
            ("p2".to_owned(), None),
            ("d_snat".to_owned(), None),
        ]);
        z.update(&wanted, true);
        let p1 = z.get("p1").unwrap();
        let mut wanted = wanted;
        wanted.insert("d_snat".to_owned(), Some(p1));
        z.update(&wanted, true);
        assert_eq!(z.get("d_snat"), Some(p1));
        let zones: BTreeSet<u16> = z.by_name.values().copied().collect();
        assert_eq!(
            zones.len(),
            3,
            "every name has its own zone: {:?}",
            z.by_name
        );

        let mut z = Zones::default();
        let ids = [
            ("ct-zone-a".to_owned(), "5".to_owned()),
            ("ct-zone-b".to_owned(), "5".to_owned()),
        ];
        z.restore(ids.iter().map(|(k, v)| (k, v)));
        z.update(
            &BTreeMap::from([("a".to_owned(), None), ("b".to_owned(), None)]),
            true,
        );
        assert_eq!(z.get("a"), Some(5));
        assert_ne!(z.get("b"), Some(5));
    }
}
