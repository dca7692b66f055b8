//! [`OvsMap`]: the map type of generated rows. OVSDB maps in rows are small
//! (a few `external_ids` or `options` pairs), and a `BTreeMap` allocates a
//! whole node (about 550 bytes for `String` pairs) even for one pair; a sorted
//! vector costs just the pairs. With 500k Logical_Flow rows that is a quarter
//! of the replica's memory.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Index;

/// A map kept as a vector of pairs sorted by key, without duplicate keys.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OvsMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for OvsMap<K, V> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for OvsMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

impl<K: Ord, V> OvsMap<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self(Vec::new())
    }

    fn position<Q: Ord + ?Sized>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        self.0.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `key`.
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.position(key).ok().map(|i| &self.0[i].1)
    }

    /// True if `key` is present.
    pub fn contains_key<Q: Ord + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.position(key).is_ok()
    }

    /// Sets `key` to `value`; returns the previous value.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.position(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes `key`; returns its value.
    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.position(key).ok().map(|i| self.0.remove(i).1)
    }

    /// Pairs in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&K, &V)> + DoubleEndedIterator {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// Keys in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &K> + DoubleEndedIterator {
        self.0.iter().map(|(k, _)| k)
    }

    /// Values in key order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &V> + DoubleEndedIterator {
        self.0.iter().map(|(_, v)| v)
    }

    /// The pairs as a slice, in key order.
    pub fn as_slice(&self) -> &[(K, V)] {
        &self.0
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for OvsMap<K, V> {
    /// Pairs in any order; for a repeated key the last value wins.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut pairs: Vec<(K, V)> = iter.into_iter().collect();
        if !pairs.windows(2).all(|w| w[0].0 < w[1].0) {
            // Stable sort keeps insertion order among equal keys; keep the last.
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            let mut deduped: Vec<(K, V)> = Vec::with_capacity(pairs.len());
            for pair in pairs {
                match deduped.last_mut() {
                    Some(last) if last.0 == pair.0 => *last = pair,
                    _ => deduped.push(pair),
                }
            }
            pairs = deduped;
        }
        pairs.shrink_to_fit();
        Self(pairs)
    }
}

impl<K: Ord, V, const N: usize> From<[(K, V); N]> for OvsMap<K, V> {
    fn from(pairs: [(K, V); N]) -> Self {
        pairs.into_iter().collect()
    }
}

impl<K: Ord, V> Extend<(K, V)> for OvsMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K, V> IntoIterator for OvsMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a, K, V> IntoIterator for &'a OvsMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl<K: Ord + Borrow<Q>, V, Q: Ord + ?Sized> Index<&Q> for OvsMap<K, V> {
    type Output = V;
    /// Like `BTreeMap`'s: panics if the key is absent (use [`OvsMap::get`] on input).
    fn index(&self, key: &Q) -> &V {
        match self.get(key) {
            Some(v) => v,
            None => panic!("key not in OvsMap"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn behaves_like_a_map() {
        let mut m: OvsMap<String, i64> = [("b".to_owned(), 2), ("a".to_owned(), 1)].into();
        assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(m.get("a"), Some(&1));
        assert_eq!(m["b"], 2);
        assert_eq!(m.insert("a".into(), 10), Some(1));
        assert_eq!(m.insert("c".into(), 3), None);
        assert_eq!(m.remove("b"), Some(2));
        assert!(!m.contains_key("b"));
        assert_eq!(format!("{m:?}"), r#"{"a": 10, "c": 3}"#);
        let dup: OvsMap<i64, i64> = [(1, 1), (0, 0), (1, 2)].into();
        assert_eq!(dup.as_slice(), &[(0, 0), (1, 2)]);
        let pairs: Vec<(&i64, &i64)> = (&dup).into_iter().collect();
        assert_eq!(pairs, [(&0, &0), (&1, &2)]);
    }

    proptest! {
        #[test]
        fn matches_btreemap(ops in proptest::collection::vec((any::<bool>(), 0u8..8, any::<u8>()), 0..40)) {
            let mut ours = OvsMap::new();
            let mut theirs = BTreeMap::new();
            for (insert, k, v) in ops {
                if insert {
                    prop_assert_eq!(ours.insert(k, v), theirs.insert(k, v));
                } else {
                    prop_assert_eq!(ours.remove(&k), theirs.remove(&k));
                }
                prop_assert_eq!(ours.iter().collect::<Vec<_>>(), theirs.iter().collect::<Vec<_>>());
            }
        }
    }
}
