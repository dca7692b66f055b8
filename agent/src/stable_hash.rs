//! FNV-1a: a hash whose value is the same on every run, so that ids and report hashes
//! made from content do not depend on the order or the process that made them.

/// FNV-1a, 64 bits: stable across runs, platforms and Rust versions.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher as _;
    let mut h = Fnv::default();
    h.write(bytes);
    h.0
}

/// FNV-1a as a `Hasher`: over a derived `Hash` (fields written in declaration order) it
/// gives the same value on every run of one build.
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
