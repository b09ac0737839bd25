//! Hashing handles for maps keyed by them (the stub registry): a handle is already a
//! small distinct integer, so it is its own bucket index, and one multiplication gives
//! the tag bits the table compares first; the default hasher (SipHash, built against
//! hash flooding, which handles the runtime hands out itself cannot mount) costs several
//! times as much per look-up, and a reclaimer looks up every entry it takes.
//!
//! Why the handle itself picks the bucket: a reclaimer looks up the entries of its table
//! in order, and objects made one after another have handles one after another, so
//! their look-ups walk the registry's buckets in order too, which the CPU prefetches. A
//! scattering hash made each of a 500 MiB reclaim's 128,000 look-ups a cache miss: half
//! of the reclaimer's own time in a profile of `marvin bench reclaim`
//! ([note](../../../docs/notes/2026-12-03-restore-at-disk-speed.md), fifth pass).

use std::hash::Hasher;

/// A handle's value in the low bits (which pick the bucket: distinct handles below the
/// table's size never collide, and neighbours sit side by side), and the top bits of
/// its Fibonacci hash (an odd multiplier mixes all of the value's bits into them) above
/// them, where the table takes the tag it compares before the key. Any other hasher's
/// bytes still hash by multiplication.
#[derive(Clone, Copy, Debug, Default)]
pub struct HandleHasher(u64);

const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// The bits above any handle's value (a `u32`), from which the table takes its tag
/// (`hashbrown`, behind `std`'s map, takes the top seven).
const TAG_BITS: u64 = !0 << 32;

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
        let v = self.0 ^ v as u64;
        self.0 = v | (v.wrapping_mul(MULTIPLIER) & TAG_BITS);
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
        let hash = |v: u32| {
            let mut h = HandleHasher::default();
            h.write_u32(v);
            h.finish()
        };
        // Neighbouring handles land in neighbouring buckets: the bucket is the handle.
        for v in [0, 1, 2, 1023, 70_000, u32::MAX] {
            assert_eq!(hash(v) & u32::MAX as u64, v as u64);
        }
        // The tags (the top seven bits) of neighbouring handles are spread: 1,024 of
        // them take every one of the 128 values.
        let mut tags: Vec<u64> = (1..=1024).map(|v| hash(v) >> 57).collect();
        tags.sort_unstable();
        tags.dedup();
        assert_eq!(tags.len(), 128);
    }
}
