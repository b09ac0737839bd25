//! Compaction: the live checkpoints copied, in bounded chunks, to a new file made beside
//! the swap file in its folder, which then replaces it by a rename
//! ([`SwapFile::compact_if_needed`]); the report says where each slot went.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;

use super::layout::{capacity_for, SlotHeader, SlotState, FILE_HEADER_BYTES, SLOT_HEADER_BYTES};
use super::sync::drop_cached;
use super::{new_file, CorruptKind, SlotId, SlotInfo, SwapError, SwapFile, GROWTH_GRANULE};

/// What [`SwapFile::compact_if_needed`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionReport {
    /// Every live slot's old and new id, sorted by old id.
    pub remap: Vec<(SlotId, SlotId)>,
    /// The file's size before.
    pub bytes_before: u64,
    /// The file's size after.
    pub bytes_after: u64,
    /// Dead bytes dropped.
    pub dead_bytes_dropped: u64,
}

impl CompactionReport {
    /// Where the slot that was `old` lives now.
    pub fn new_slot(&self, old: SlotId) -> Option<SlotId> {
        self.remap
            .binary_search_by_key(&old, |&(o, _)| o)
            .ok()
            .map(|i| self.remap[i].1)
    }
}

/// The part of a swap file a compaction read last. Its copy reads the old file in runs of
/// about [`COMPACT_CHUNK`] bytes (not a header and a payload per slot), through the file's
/// own descriptor, which reads no read-ahead ([`new_file`] advises it `POSIX_FADV_RANDOM`):
/// read-ahead past each run was what the copy's drop of the old file's cache after every
/// chunk threw away unread (with a virtio disk's 8 MiB `read_ahead_kb`, most of what a
/// compaction read).
#[derive(Default)]
pub(super) struct SourceWindow {
    /// Where `bytes` start in the file.
    at: u64,
    bytes: Vec<u8>,
    /// Reads of the file so far.
    pub(super) reads: usize,
}

impl SourceWindow {
    /// `len` bytes of `file` at `offset` (inside its used region, or the read fails as a
    /// truncated file's would), read from the disk only when not already in the window.
    pub(super) fn get(
        &mut self,
        file: &SwapFile,
        offset: u64,
        len: usize,
    ) -> Result<&[u8], SwapError> {
        let end = offset + len as u64;
        if offset < self.at || end > self.at + self.bytes.len() as u64 {
            let want = (len.max(COMPACT_CHUNK) as u64)
                .min(file.end.max(end).saturating_sub(offset))
                .max(len as u64) as usize;
            self.bytes.resize(want, 0);
            self.at = offset;
            self.reads += 1;
            if let Err(e) = file.read_exact_at(&mut self.bytes, offset) {
                self.bytes.clear();
                return Err(e);
            }
        }
        let from = (offset - self.at) as usize;
        Ok(&self.bytes[from..from + len])
    }
}

/// Compaction writes the new file in chunks of about this many bytes (a slot larger than
/// this is written alone), so it holds at most one chunk in memory, never both files.
pub(super) const COMPACT_CHUNK: usize = 1 << 20;

impl SwapFile {
    /// Compacts when [`SwapFile::dead_fraction`] exceeds `threshold`: the live checkpoints are
    /// copied to a new file, which replaces this one by an atomic rename. Returns where each
    /// slot went, or `None` when no compaction was needed. On error the old file stays in
    /// use, unchanged. A live slot with a corrupt header stops the compaction with
    /// [`SwapError::Corrupt`] naming its object: free it (and save the object again), then retry.
    pub fn compact_if_needed(
        &mut self,
        threshold: f64,
    ) -> Result<Option<CompactionReport>, SwapError> {
        if self.dead_fraction() > threshold {
            self.compact().map(Some)
        } else {
            Ok(None)
        }
    }

    /// Compacts now, whatever the dead fraction (see [`SwapFile::compact_if_needed`]).
    pub fn compact(&mut self) -> Result<CompactionReport, SwapError> {
        self.check_file()?;
        let mut new_slots = BTreeMap::new();
        let mut remap = Vec::with_capacity(self.live_slots as usize);
        let mut at = FILE_HEADER_BYTES;
        for (&offset, info) in &self.slots {
            if let Some(live) = info.live {
                let capacity = capacity_for(live.len as usize) as u32;
                new_slots.insert(
                    at,
                    SlotInfo {
                        capacity,
                        live: Some(live),
                    },
                );
                remap.push((SlotId(offset), SlotId(at)));
                at += SLOT_HEADER_BYTES + capacity as u64;
            }
        }
        let new_end = at;
        let mut size = (new_end + GROWTH_GRANULE).next_multiple_of(GROWTH_GRANULE);
        if let Some(limit) = self.limit {
            size = size.min(limit).max(new_end);
        }
        // The copy is made new under a name of its own and renamed over this file only
        // while both names still name the two files (never a link put in their place).
        let tmp = format!("{}.compacting", self.name);
        let file = new_file(&self.folder, &tmp, size, &self.owner)?;
        let copied = self
            .copy_live_slots(&file, &tmp, &remap, &new_slots)
            .and_then(|()| {
                self.folder
                    .rename_own((&tmp, &file), (&self.name, Some(&self.file)))
                    .map_err(SwapError::from)
            });
        if let Err(e) = copied {
            let _ = self.folder.remove(&tmp);
            return Err(e);
        }
        let (bytes_before, dead_before) = (self.file_bytes(), self.dead_bytes());
        self.file = file;
        self.shared = Default::default();
        self.page_sums.moved(remap.iter().map(|(o, n)| (o.0, n.0)));
        self.len = size;
        self.slots = new_slots;
        self.free.clear();
        self.end = new_end;
        let report = CompactionReport {
            remap,
            bytes_before,
            bytes_after: self.file_bytes(),
            dead_bytes_dropped: dead_before - self.dead_bytes(),
        };
        Ok(report)
    }

    /// Creates `tmp`, sized `size`, and copies every live slot to its new place: the new
    /// slots are contiguous, so they are gathered into chunks of about [`COMPACT_CHUNK`]
    /// bytes, each written with one `pwrite`. The copy is on disk and out of the page
    /// cache when this returns.
    pub(super) fn copy_live_slots(
        &self,
        file: &File,
        tmp: &str,
        remap: &[(SlotId, SlotId)],
        new_slots: &BTreeMap<u64, SlotInfo>,
    ) -> Result<(), SwapError> {
        let tmp = self.folder.path_of(tmp);
        let write_err = |source| SwapError::Io {
            op: "write the compacted copy",
            path: tmp.clone(),
            source,
        };
        // The chunk being gathered: the bytes of the new file from `chunk_at` on.
        let mut chunk: Vec<u8> = Vec::new();
        let mut chunk_at = FILE_HEADER_BYTES;
        // The chunk written before the last one, still to be waited for and dropped.
        let mut behind: Option<(u64, usize)> = None;
        // What was last read of this (old) file: the live slots are copied in file order,
        // so one read of about a chunk brings many of them (and the dead bytes between).
        let mut source = SourceWindow::default();
        for &(old, new) in remap {
            let info = new_slots[&new.0];
            let live = info.live.expect("only live slots are remapped");
            self.check_header_bounds(live.key, old)?;
            let bytes = source.get(self, old.0, SLOT_HEADER_BYTES as usize)?;
            let header = self.decode_header(live.key, old, bytes)?;
            if header.state != SlotState::Live || header.key != live.key || header.len != live.len {
                let kind = CorruptKind::KeyMismatch { found: header.key };
                return Err(self.corrupt(live.key, old, kind));
            }
            if header.generation != live.generation.get() {
                let kind = CorruptKind::StaleGeneration {
                    found: header.generation,
                    expected: live.generation.get(),
                };
                return Err(self.corrupt(live.key, old, kind));
            }
            let len = live.len as usize;
            let slot_bytes = SLOT_HEADER_BYTES as usize + info.capacity as usize;
            if !chunk.is_empty() && chunk.len() + slot_bytes > COMPACT_CHUNK {
                file.write_all_at(&chunk, chunk_at).map_err(write_err)?;
                self.write_behind(file, (chunk_at, chunk.len()), &mut behind);
                chunk.clear();
            }
            if chunk.is_empty() {
                chunk_at = new.0;
            }
            debug_assert_eq!(
                chunk_at + chunk.len() as u64,
                new.0,
                "new slots are contiguous"
            );
            let at = chunk.len();
            chunk.resize(at + slot_bytes, 0);
            // The payload's checksum is carried over, not recomputed: a payload corrupted
            // before compaction stays detectable after it.
            let moved = SlotHeader {
                capacity: info.capacity,
                ..header
            };
            moved.encode(&mut chunk[at..]);
            let from = old.0 + SLOT_HEADER_BYTES;
            if from + len as u64 > self.len {
                let kind = CorruptKind::OutOfBounds {
                    offset: old.0,
                    file_len: self.len,
                };
                return Err(self.corrupt(live.key, old, kind));
            }
            let payload = at + SLOT_HEADER_BYTES as usize;
            chunk[payload..payload + len].copy_from_slice(source.get(self, from, len)?);
        }
        if !chunk.is_empty() {
            file.write_all_at(&chunk, chunk_at).map_err(write_err)?;
        }
        file.sync_data().map_err(|source| SwapError::Io {
            op: "flush the compacted copy",
            path: tmp.clone(),
            source,
        })?;
        drop_cached(file);
        Ok(())
    }

    /// Keeps a compaction's page cache to about two chunks: starts writing back the chunk
    /// just written to `file`, waits for the one before it and drops it, and drops what
    /// was read of this (old) file so far. A compaction copies every live checkpoint, and
    /// without this the whole copy would sit dirty in the page cache, charged to the app,
    /// until the final flush. Errors only leave pages cached (the final `sync_data`
    /// reports real write errors), so they are ignored.
    pub(super) fn write_behind(
        &self,
        file: &File,
        written: (u64, usize),
        behind: &mut Option<(u64, usize)>,
    ) {
        let fd = file.as_raw_fd();
        // SAFETY: plain calls on a descriptor `file` owns, for ranges of its file; they
        // read no memory of ours.
        unsafe {
            libc::sync_file_range(
                fd,
                written.0 as libc::off64_t,
                written.1 as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            );
            if let Some((at, len)) = behind.replace(written) {
                libc::sync_file_range(
                    fd,
                    at as libc::off64_t,
                    len as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WAIT_BEFORE
                        | libc::SYNC_FILE_RANGE_WRITE
                        | libc::SYNC_FILE_RANGE_WAIT_AFTER,
                );
                libc::posix_fadvise(
                    fd,
                    at as libc::off64_t,
                    len as libc::off64_t,
                    libc::POSIX_FADV_DONTNEED,
                );
            }
        }
        drop_cached(&self.file);
    }
}
