//! Hashing handles for maps keyed by them (the stub registry): a handle is already a
//! small distinct integer, so one multiplication spreads it over a table's buckets; the
//! default hasher (SipHash, built against hash flooding, which handles the runtime hands
//! out itself cannot mount) costs several times as much per look-up, and a reclaimer
//! looks up every entry it takes.

use std::hash::Hasher;

/// Fibonacci hashing of a handle's value: an odd multiplier is a bijection on every
/// run of low bits (which pick the bucket), and its high bits mix all of the value's.
#[derive(Clone, Copy, Debug, Default)]
pub struct HandleHasher(u64);

const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only handles are hashed here (`write_u32`); anything else still hashes.
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(MULTIPLIER);
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.0 = (self.0 ^ v as u64).wrapping_mul(MULTIPLIER);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::hash::BuildHasherDefault;

    #[test]
    fn handles_are_found_and_spread() {
        // A handle hashes as its `u32` value does (`write_u32`).
        let mut m: HashMap<u32, u32, BuildHasherDefault<HandleHasher>> = HashMap::default();
        for v in 1..=10_000u32 {
            m.insert(v, v);
        }
        for v in 1..=10_000u32 {
            assert_eq!(m.get(&v), Some(&v));
        }
        assert_eq!(m.get(&10_001), None);
        // Neighbouring handles land in different buckets of a small table.
        let low = |v: u64| {
            let mut h = HandleHasher::default();
            h.write_u32(v as u32);
            h.finish() & 1023
        };
        let mut buckets: Vec<u64> = (1..=1024).map(low).collect();
        buckets.sort_unstable();
        buckets.dedup();
        assert_eq!(buckets.len(), 1024);
    }
}
