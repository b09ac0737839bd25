//! Checksums of a large checkpoint's pages, so that a page of it can be read and checked
//! alone ([`crate::page_restore`]): the slot header's checksum covers the whole payload,
//! which a restore of one page cannot verify without reading them all.
//!
//! The checksums cover the payload in [`SUM_BYTES`] pieces from its first byte (the last
//! piece shorter), and stay in the file's in-memory index beside the slot, never on disk: a
//! checkpoint is read back only by the process that wrote it. Only checkpoints stored as
//! they are ([`super::layout::Codec::Raw`]) and of at least [`PAGE_SUMS_MIN_BYTES`] get
//! them (4 bytes per 4 KiB, a thousandth of the payload).

use std::collections::HashMap;
use std::sync::Arc;

use super::crc32;

/// Bytes one checksum covers.
pub const SUM_BYTES: usize = 4096;

/// The smallest payload whose pieces get checksums of their own.
pub const PAGE_SUMS_MIN_BYTES: usize = 64 << 10;

/// The checksums of each [`SUM_BYTES`] piece of `payload`.
pub fn sums_of(payload: &[u8]) -> Arc<[u32]> {
    payload.chunks(SUM_BYTES).map(crc32).collect()
}

/// Per slot offset, the piece checksums of its live checkpoint.
#[derive(Debug, Default)]
pub(super) struct PageSums {
    by_slot: HashMap<u64, Arc<[u32]>>,
}

impl PageSums {
    /// The slot at `offset` now holds `payload` (stored raw when `raw`).
    pub(super) fn written(&mut self, offset: u64, payload: &[u8], raw: bool) {
        if raw && payload.len() >= PAGE_SUMS_MIN_BYTES {
            self.by_slot.insert(offset, sums_of(payload));
        } else {
            self.by_slot.remove(&offset);
        }
    }

    /// The slot at `offset` holds no checkpoint any more.
    pub(super) fn released(&mut self, offset: u64) {
        self.by_slot.remove(&offset);
    }

    pub(super) fn get(&self, offset: u64) -> Option<Arc<[u32]>> {
        self.by_slot.get(&offset).cloned()
    }

    /// Every slot moved as `remap` (old offset, new offset) says.
    pub(super) fn moved(&mut self, remap: impl Iterator<Item = (u64, u64)>) {
        let mut old = std::mem::take(&mut self.by_slot);
        for (from, to) in remap {
            if let Some(s) = old.remove(&from) {
                self.by_slot.insert(to, s);
            }
        }
    }

    /// Bytes the index spends on checksums.
    pub(super) fn bytes(&self) -> usize {
        self.by_slot
            .values()
            .map(|s| s.len() * 4 + 16 + std::mem::size_of::<(u64, Arc<[u32]>)>())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_or_compressed_checkpoints_get_no_sums_and_moves_follow_the_slot() {
        let mut s = PageSums::default();
        let big = vec![7u8; PAGE_SUMS_MIN_BYTES + 100];
        s.written(100, &big, true);
        let sums = s.get(100).expect("a large raw checkpoint has sums");
        assert_eq!(sums.len(), big.len().div_ceil(SUM_BYTES));
        assert_eq!(sums[sums.len() - 1], crc32(&big[big.len() - 100..]));
        s.written(200, &big, false);
        assert!(s.get(200).is_none(), "compressed: no sums");
        s.written(300, &big[..PAGE_SUMS_MIN_BYTES - 1], true);
        assert!(s.get(300).is_none(), "small: no sums");
        s.written(100, &big[..10], true);
        assert!(s.get(100).is_none(), "rewritten small: its old sums go");
        s.written(100, &big, true);
        s.moved([(100, 40)].into_iter());
        assert!(s.get(100).is_none());
        assert_eq!(s.get(40).as_deref(), Some(&*sums));
        s.released(40);
        assert!(s.get(40).is_none());
    }
}
