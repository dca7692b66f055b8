//! The order in which OVS's `SSET_FOR_EACH` visits a set of strings. ovn-controller fans a
//! multicast packet out to the remote chassis in that order, so reproducing it gives the
//! same action list (and the same flow text) as ovn-controller.

/// One step of OVS's murmur-based `hash_add` (the generic build, as Debian ships it).
fn mhash_add(hash: u32, data: u32) -> u32 {
    let mut hash = hash;
    if data != 0 {
        let d = data
            .wrapping_mul(0xcc9e_2d51)
            .rotate_left(15)
            .wrapping_mul(0x1b87_3593);
        hash ^= d;
    }
    hash.rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

fn mhash_finish(mut hash: u32) -> u32 {
    hash ^= hash >> 16;
    hash = hash.wrapping_mul(0x85eb_ca6b);
    hash ^= hash >> 13;
    hash = hash.wrapping_mul(0xc2b2_ae35);
    hash ^ (hash >> 16)
}

/// OVS `hash_bytes`: 32-bit little-endian words, the tail zero-padded, the length mixed in.
pub fn hash_bytes(data: &[u8], basis: u32) -> u32 {
    let mut hash = basis;
    let mut chunks = data.chunks_exact(4);
    for w in &mut chunks {
        hash = mhash_add(hash, u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut w = [0u8; 4];
        w[..tail.len()].copy_from_slice(tail);
        hash = mhash_add(hash, u32::from_le_bytes(w));
    }
    mhash_finish(hash ^ data.len() as u32)
}

/// OVS `calc_mask`: buckets for `capacity` entries (at least 4 once there is more than one).
fn calc_mask(capacity: usize) -> usize {
    let mut mask = capacity / 2;
    for shift in [1, 2, 4, 8, 16, 32] {
        mask |= mask >> shift;
    }
    mask | ((mask & 1) << 1)
}

/// An `hmap` reduced to what decides iteration order: buckets whose nodes are pushed at the
/// head, and rehashing (bucket by bucket, head first) when it grows.
struct Hmap<'a> {
    buckets: Vec<Vec<(u32, &'a str)>>,
    n: usize,
}

impl<'a> Hmap<'a> {
    fn new() -> Self {
        Self {
            buckets: vec![Vec::new()],
            n: 0,
        }
    }

    fn mask(&self) -> usize {
        self.buckets.len() - 1
    }

    fn insert_fast(buckets: &mut [Vec<(u32, &'a str)>], hash: u32, name: &'a str) {
        let mask = buckets.len() - 1;
        buckets[hash as usize & mask].insert(0, (hash, name));
    }

    fn insert(&mut self, hash: u32, name: &'a str) {
        Self::insert_fast(&mut self.buckets, hash, name);
        self.n += 1;
        if self.n / 2 > self.mask() {
            let new_mask = calc_mask(self.n);
            if new_mask > self.mask() {
                let mut grown = vec![Vec::new(); new_mask + 1];
                for bucket in &self.buckets {
                    for (h, name) in bucket {
                        Self::insert_fast(&mut grown, *h, name);
                    }
                }
                self.buckets = grown;
            }
        }
    }

    fn contains(&self, hash: u32, name: &str) -> bool {
        self.buckets[hash as usize & self.mask()]
            .iter()
            .any(|(h, n)| *h == hash && *n == name)
    }
}

/// The strings, added to an `sset` in this order (duplicates ignored), in the order
/// `SSET_FOR_EACH` visits them.
pub fn sset_order<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut map = Hmap::new();
    for name in names {
        let hash = hash_bytes(name.as_bytes(), 0);
        if !map.contains(hash, name) {
            map.insert(hash, name);
        }
    }
    map.buckets
        .into_iter()
        .flat_map(|b| b.into_iter().map(|(_, n)| n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_bytes_matches_ovs() {
        // hash_bytes("", 0, 0) is mhash_finish(0) = 0. (The word steps are the ones the
        // conjunction-id hash uses, checked against ovn-controller's ids there.)
        assert_eq!(hash_bytes(b"", 0), 0);
        let one_word = hash_bytes(b"hv1\0", 0);
        let tail = hash_bytes(b"hv1", 0);
        assert_ne!(one_word, tail, "the length is mixed in");
        assert_eq!(
            mhash_finish(mhash_add(0, u32::from_le_bytes(*b"hv1\0")) ^ 3),
            tail
        );
    }

    #[test]
    fn order_is_a_permutation_without_duplicates() {
        let names = ["hv2", "hv3", "hv2", "hv4", "hv5", "hv6", "hv7"];
        let order = sset_order(names);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, ["hv2", "hv3", "hv4", "hv5", "hv6", "hv7"]);
        // One entry: one bucket, no rehash.
        assert_eq!(sset_order(["hv9"]), ["hv9"]);
        // Two entries: the table grows to 4 buckets, visited in bucket order.
        let two = sset_order(["hv2", "hv3"]);
        let bucket = |n: &str| hash_bytes(n.as_bytes(), 0) & 3;
        if bucket("hv2") != bucket("hv3") {
            let mut by_bucket = vec!["hv2", "hv3"];
            by_bucket.sort_by_key(|n| bucket(n));
            assert_eq!(two, by_bucket);
        }
    }
}
