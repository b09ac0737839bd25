//! Native memory: buffers an app holds outside its managed heap, as an Android app holds a
//! decoded bitmap's pixels in native memory since Android 8 (the MASM natives `nalloc`,
//! `nfree`, `nload`, `nstore` and `ncheck`).
//!
//! Each buffer is its own anonymous mapping, filled and so touched when it is made: the
//! runtime never moves, stubs, saves or reclaims it, and the collector does not see it. It
//! lives until the program frees it or the app ends. What the app publishes about it is
//! the address ranges of its mappings ([`NativeBuffers::ranges`]), so that a process
//! outside the app (the System) can hand those pages to the kernel's swap, as Android's
//! cached-app compaction does with `process_madvise(MADV_PAGEOUT)`.
//!
//! A buffer is named by a handle, an `int`: its slot plus one in the low 32 bits and the
//! slot's generation above, so 0 is never a handle and a freed handle stays wrong after its
//! slot is used again. Every misuse (a size out of range, an unknown or freed handle, an
//! index out of bounds) is a [`NativeError`], which the executor raises as a runtime error.
//!
//! The fill ([`fill`]) is a function of the seed and the offset alone, so `ncheck`
//! can tell whether a buffer still holds what `nalloc` wrote. It is shaped to compress like
//! real memory (Android's docs give 2:1 to 3:1 for zram with lz4): blocks of 16 bytes,
//! eight to a group, each a copy of one of three fresh blocks of its group, chosen by a
//! hash of the block, so lz4 finds a match for most blocks and none within a fresh one.

use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::MmapMut;
use parking_lot::Mutex;

/// The largest buffer `nalloc` makes: 1 GiB.
pub const MAX_BUFFER_BYTES: i64 = 1 << 30;

/// Bytes of one block of the fill.
const BLOCK: usize = 16;
/// Blocks of one group of the fill.
const GROUP: u64 = 8;
/// Fresh blocks of each group: the others repeat them.
const FRESH: u64 = 3;

/// Why a native operation failed.
#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    #[error("bad native buffer size {0} (1 to {MAX_BUFFER_BYTES} bytes)")]
    BadSize(i64),
    #[error("bad native buffer handle {0}")]
    BadHandle(i64),
    #[error("native buffer index {index} out of bounds for length {len}")]
    OutOfBounds { index: i64, len: usize },
    #[error("out of native memory: {0}")]
    Map(#[source] std::io::Error),
}

/// What an app's native buffers hold and have held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NativeStats {
    /// Buffers alive now.
    pub buffers: u64,
    /// Their bytes (as asked for; the mappings round each up to a page).
    pub live_bytes: u64,
    /// The most bytes alive at once.
    pub peak_bytes: u64,
    /// Bytes of every buffer ever made.
    pub allocated_bytes: u64,
    /// Bytes of every buffer freed by the program.
    pub freed_bytes: u64,
}

struct Buffer {
    map: MmapMut,
    len: usize,
}

#[derive(Default)]
struct Slots {
    slots: Vec<(u32, Option<Buffer>)>,
    free: Vec<usize>,
}

/// One app's native buffers.
#[derive(Default)]
pub struct NativeBuffers {
    slots: Mutex<Slots>,
    live: AtomicU64,
    count: AtomicU64,
    peak: AtomicU64,
    allocated: AtomicU64,
    freed: AtomicU64,
}

impl NativeBuffers {
    pub fn new() -> NativeBuffers {
        NativeBuffers::default()
    }

    /// `nalloc`: a buffer of `len` bytes filled with `seed`'s fill; its handle.
    pub fn alloc(&self, len: i64, seed: i64) -> Result<i64, NativeError> {
        if !(1..=MAX_BUFFER_BYTES).contains(&len) {
            return Err(NativeError::BadSize(len));
        }
        let n = len as usize;
        let mut map = MmapMut::map_anon(n).map_err(NativeError::Map)?;
        fill(&mut map[..n], seed);
        let mut s = self.slots.lock();
        let slot = match s.free.pop() {
            Some(i) => i,
            None => {
                s.slots.push((0, None));
                s.slots.len() - 1
            }
        };
        let entry = &mut s.slots[slot];
        entry.0 = entry.0.wrapping_add(1);
        entry.1 = Some(Buffer { map, len: n });
        let handle = ((entry.0 as i64) << 32) | (slot as i64 + 1);
        drop(s);
        let live = self.live.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        self.peak.fetch_max(live, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.allocated.fetch_add(n as u64, Ordering::Relaxed);
        Ok(handle)
    }

    /// `nfree`: unmaps the buffer.
    pub fn free(&self, handle: i64) -> Result<(), NativeError> {
        let mut s = self.slots.lock();
        let slot = Self::slot(&s, handle)?;
        let buf = s.slots[slot].1.take();
        s.free.push(slot);
        drop(s);
        if let Some(b) = buf {
            self.live.fetch_sub(b.len as u64, Ordering::Relaxed);
            self.count.fetch_sub(1, Ordering::Relaxed);
            self.freed.fetch_add(b.len as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    /// `nload`: the byte at `index`.
    pub fn load(&self, handle: i64, index: i64) -> Result<u8, NativeError> {
        self.with(handle, |b| Ok(b.map[Self::index(b, index)?]))
    }

    /// `nstore`: writes the low 8 bits of `value` at `index`.
    pub fn store(&self, handle: i64, index: i64, value: i64) -> Result<(), NativeError> {
        let mut s = self.slots.lock();
        let slot = Self::slot(&s, handle)?;
        let b = s.slots[slot]
            .1
            .as_mut()
            .ok_or(NativeError::BadHandle(handle))?;
        let i = Self::index(b, index)?;
        b.map[i] = value as u8;
        Ok(())
    }

    /// `ncheck`: how many bytes of the buffer differ from `seed`'s fill (0: intact). Reads
    /// every byte, so every page of the buffer is touched.
    pub fn check(&self, handle: i64, seed: i64) -> Result<u64, NativeError> {
        self.with(handle, |b| Ok(differences(&b.map[..b.len], seed)))
    }

    /// What the buffers hold now and have held.
    pub fn stats(&self) -> NativeStats {
        NativeStats {
            buffers: self.count.load(Ordering::Relaxed),
            live_bytes: self.live.load(Ordering::Relaxed),
            peak_bytes: self.peak.load(Ordering::Relaxed),
            allocated_bytes: self.allocated.load(Ordering::Relaxed),
            freed_bytes: self.freed.load(Ordering::Relaxed),
        }
    }

    /// The address and page-rounded length of every live buffer's mapping: what a process
    /// outside the app may page out. The ranges stay mapped until the buffer is freed, so
    /// they can be stale by the time another process uses them; paging out an unmapped or
    /// reused range is harmless (the kernel skips what is not there, and reused memory
    /// comes back on its next touch).
    pub fn ranges(&self) -> Vec<(usize, usize)> {
        let page = page_size();
        let s = self.slots.lock();
        s.slots
            .iter()
            .filter_map(|(_, b)| b.as_ref())
            .map(|b| (b.map.as_ptr() as usize, b.len.next_multiple_of(page)))
            .collect()
    }

    fn with<T>(
        &self,
        handle: i64,
        f: impl FnOnce(&Buffer) -> Result<T, NativeError>,
    ) -> Result<T, NativeError> {
        let s = self.slots.lock();
        let slot = Self::slot(&s, handle)?;
        f(s.slots[slot]
            .1
            .as_ref()
            .ok_or(NativeError::BadHandle(handle))?)
    }

    fn slot(s: &Slots, handle: i64) -> Result<usize, NativeError> {
        let slot = (handle & 0xffff_ffff) as usize;
        let gen = (handle >> 32) as u32;
        match slot
            .checked_sub(1)
            .and_then(|i| s.slots.get(i).map(|e| (i, e)))
        {
            Some((i, (g, Some(_)))) if *g == gen && handle >= 0 => Ok(i),
            _ => Err(NativeError::BadHandle(handle)),
        }
    }

    fn index(b: &Buffer, index: i64) -> Result<usize, NativeError> {
        usize::try_from(index)
            .ok()
            .filter(|&i| i < b.len)
            .ok_or(NativeError::OutOfBounds { index, len: b.len })
    }
}

/// The system's page size.
pub fn page_size() -> usize {
    crate::procfs::page_size() as usize
}

/// splitmix64's finaliser: a well-mixed 64-bit value of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The 16 bytes of block `block` of `seed`'s fill.
fn block_bytes(seed: i64, block: u64) -> [u8; BLOCK] {
    let group = block / GROUP;
    let pick = mix(seed as u64 ^ block.wrapping_mul(0x2545_f491_4f6c_dd1d)) % FRESH;
    let key = mix((seed as u64).rotate_left(17) ^ (group * FRESH + pick));
    let mut out = [0u8; BLOCK];
    out[..8].copy_from_slice(&key.to_le_bytes());
    out[8..].copy_from_slice(&mix(key).to_le_bytes());
    out
}

/// The byte at `offset` of `seed`'s fill (the tests' check of [`fill`]).
#[cfg(test)]
fn fill_byte(seed: i64, offset: u64) -> u8 {
    block_bytes(seed, offset / BLOCK as u64)[(offset % BLOCK as u64) as usize]
}

/// Writes `seed`'s fill over `buf` (offset 0 at its start).
pub fn fill(buf: &mut [u8], seed: i64) {
    for (b, chunk) in buf.chunks_mut(BLOCK).enumerate() {
        let bytes = block_bytes(seed, b as u64);
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// How many bytes of `buf` differ from `seed`'s fill.
pub fn differences(buf: &[u8], seed: i64) -> u64 {
    buf.chunks(BLOCK)
        .enumerate()
        .map(|(b, chunk)| {
            let want = block_bytes(seed, b as u64);
            chunk.iter().zip(want).filter(|(x, y)| **x != *y).count() as u64
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_back_are_what_was_written() {
        let n = NativeBuffers::new();
        let h = n.alloc(10_000, 7).unwrap();
        assert_eq!(n.check(h, 7).unwrap(), 0);
        for i in [0, 1, 4095, 4096, 9_999] {
            assert_eq!(n.load(h, i).unwrap(), fill_byte(7, i as u64));
        }
        n.store(h, 5000, 0x1ab).unwrap();
        assert_eq!(n.load(h, 5000).unwrap(), 0xab);
        let differs = u64::from(fill_byte(7, 5000) != 0xab);
        assert_eq!(n.check(h, 7).unwrap(), differs);
        // Another seed's fill is another buffer's.
        assert!(n.check(h, 8).unwrap() > 9_000);
        assert_eq!(n.stats().live_bytes, 10_000);
        assert_eq!(n.ranges().len(), 1);
        assert_eq!(n.ranges()[0].1 % page_size(), 0);
        n.free(h).unwrap();
        assert_eq!(n.stats().live_bytes, 0);
        assert_eq!(n.stats().freed_bytes, 10_000);
        assert!(n.ranges().is_empty());
    }

    #[test]
    fn misuse_is_an_error_not_a_panic() {
        let n = NativeBuffers::new();
        for bad in [0, -1, MAX_BUFFER_BYTES + 1, i64::MIN] {
            assert!(matches!(n.alloc(bad, 1), Err(NativeError::BadSize(b)) if b == bad));
        }
        let h = n.alloc(100, 1).unwrap();
        assert!(matches!(
            n.load(h, 100),
            Err(NativeError::OutOfBounds { index: 100, .. })
        ));
        assert!(n.load(h, -1).is_err());
        assert!(n.store(h, 1 << 40, 0).is_err());
        for bad in [0, -1, h + 1, h ^ (1 << 32), i64::MAX] {
            assert!(
                matches!(n.load(bad, 0), Err(NativeError::BadHandle(_))),
                "{bad}"
            );
        }
        n.free(h).unwrap();
        assert!(n.free(h).is_err(), "a double free is an error");
        // The slot is used again, but the old handle stays wrong.
        let h2 = n.alloc(100, 1).unwrap();
        assert_ne!(h, h2);
        assert!(n.load(h, 0).is_err());
        assert!(n.load(h2, 0).is_ok());
    }

    #[test]
    fn the_fill_compresses_like_real_memory() {
        let mut buf = vec![0u8; 1 << 20];
        fill(&mut buf, 3);
        let packed = lz4_flex::compress(&buf);
        let ratio = buf.len() as f64 / packed.len() as f64;
        assert!((2.0..=3.0).contains(&ratio), "lz4 ratio {ratio:.2}");
        let zeros = buf.iter().filter(|&&b| b == 0).count();
        assert!(zeros < buf.len() / 100, "not mostly zeros: {zeros}");
    }
}
