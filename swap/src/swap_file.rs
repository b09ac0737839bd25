//! The app's swap file: checkpoints of objects in slots of one file.
//!
//! Each slot is a checked header (object key, payload length, generation, CRC-32 of the
//! payload and of the header itself; see [`layout`]) followed by the payload. Saving the
//! same object again rewrites its slot in place when the new checkpoint fits; otherwise it
//! takes a free slot (best fit) or appends one, growing the file (`posix_fallocate`, so a
//! full disk is an error when the file grows, not on a later write). Freed slots merge
//! with free neighbours, and a free tail shrinks the used region; a free touches only the
//! in-memory index, never the file (no I/O on the thread that deletes an object). When dead bytes (free
//! slots and slack in live ones) exceed a fraction of the used region,
//! [`SwapFile::compact_if_needed`] copies the live slots to a new file, in bounded
//! chunks, that atomically replaces the old one (rename) and reports where each slot went.
//!
//! The file is never mapped: checkpoints are written and read with positioned writes and
//! reads (`pwrite`, `pread`, `preadv`), so nothing of the file counts as the process's
//! resident memory, and what was written leaves the page cache once it is on disk
//! ([`SwapFile::sync_and_release`], [`SwapFile::release_all`]): the runtime holds no
//! copy of a checkpoint that the kernel would charge to the app.
//!
//! Reads check everything before trusting it: that the file still exists, has not been
//! truncated and still carries this run's file header (the run's identity, see
//! [`layout`]), that the slot header lies inside the file, its magic and checksum, the
//! key, the generation the index expects (so an older copy of the slot is refused), the
//! length, and the payload's checksum. A corrupt file is an error naming the object, never
//! a panic. Faults read with [`SwapFile::read_many`]: one `preadv` brings several
//! neighbouring checkpoints straight into their objects.
//!
//! The in-memory index (which slots exist, which are live and whose) is the source of truth
//! for allocation; the on-disk headers make each checkpoint self-checking.
//!
//! The file is made in the app's swap folder, new and never through a link
//! ([`marvin_runtime::swap_folder`]); so is a compaction's copy, which is renamed only over
//! this very file. This module holds the file, its index and the writes; reading back is
//! in `read`, compaction in `compact`, the page cache and the disk in `sync`, the formats
//! in [`layout`] and `codec`.

mod codec;
mod compact;
mod crc32;
mod error;
pub mod layout;
mod page_cache;
pub mod page_sums;
mod read;
mod sequential;
mod sync;
mod vectored;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::num::NonZeroU32;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use codec::Compression;
pub use compact::CompactionReport;
pub use crc32::crc32;
pub use error::{CorruptKind, SwapError};
use layout::{
    capacity_for, check_file_header, write_file_header, Codec, SlotHeader, SlotState,
    FILE_HEADER_BYTES, MAX_PAYLOAD, SLOT_ALIGN, SLOT_HEADER_BYTES,
};
use marvin_runtime::RunIdentity;
use marvin_runtime::SwapFolder;
pub use read::SlotRead;
pub use sequential::SequentialReader;
pub use sync::{SyncHandle, WRITE_BACK_EVERY};

/// The data region a new file starts with.
const INITIAL_DATA_BYTES: u64 = 64 * 1024;
/// Growth is rounded up to this.
const GROWTH_GRANULE: u64 = 64 * 1024;
/// A free slot is reused only when it wastes at most this factor of the space needed.
const BEST_FIT_SLACK: u64 = 2;

/// A checkpoint to read a run of pages at a time ([`SwapFile::page_source`]): the file
/// (a handle of its own, so reads need no lock of the swap file, and a compaction that
/// replaces the file leaves this one readable), where the payload starts, its length and
/// the checksum of each [`page_sums::SUM_BYTES`] piece of it.
#[derive(Clone, Debug)]
pub struct PageSource {
    pub file: Arc<File>,
    pub path: PathBuf,
    pub key: u64,
    pub slot: SlotId,
    pub payload_at: u64,
    pub len: usize,
    pub sums: Arc<[u32]>,
}

/// Where a checkpoint lives: the byte offset of its slot in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotId(u64);

impl SlotId {
    /// The slot at byte `offset` (for stubs that store it as an integer).
    pub const fn from_offset(offset: u64) -> SlotId {
        SlotId(offset)
    }

    /// The byte offset of the slot's header; the payload follows
    /// [`layout::SLOT_HEADER_BYTES`] later.
    pub const fn offset(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for SlotId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "slot@{}", self.0)
    }
}

/// A live slot's owner, length and generation, packed to 4-byte alignment: with the
/// generation never 0 (a free slot's), an index slot takes 20 bytes, not 32.
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
struct Live {
    key: u64,
    len: u32,
    generation: NonZeroU32,
}

#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
struct SlotInfo {
    capacity: u32,
    live: Option<Live>,
}

/// The generation after `g`: one more, and 1 again after `u32::MAX` (0 is a free
/// slot's).
fn next_generation(g: NonZeroU32) -> NonZeroU32 {
    g.checked_add(1).unwrap_or(NonZeroU32::MIN)
}

impl SlotInfo {
    fn end(&self, offset: u64) -> u64 {
        offset + SLOT_HEADER_BYTES + self.capacity as u64
    }
}

/// One app's swap file.
pub struct SwapFile {
    path: PathBuf,
    /// The file's name in `folder`, where it was created and where compaction replaces it.
    name: String,
    folder: Arc<SwapFolder>,
    file: File,
    /// The file's size as this process made it (reserved on disk): reads and writes stay
    /// below it, and a file found shorter was truncated behind our back.
    len: u64,
    limit: Option<u64>,
    /// Every slot, by offset; together they tile `[FILE_HEADER_BYTES, end)`.
    slots: BTreeMap<u64, SlotInfo>,
    /// Free slots as (capacity, offset), for best fit.
    free: BTreeSet<(u32, u64)>,
    /// The end of the last slot.
    end: u64,
    live_payload: u64,
    live_slots: u64,
    /// The run that owns the file, as its header says.
    owner: RunIdentity,
    /// Scratch for compressing a checkpoint before it is written.
    compressed: Vec<u8>,
    /// Piece checksums of the large checkpoints stored as they are.
    page_sums: page_sums::PageSums,
    /// A second handle on `file` for [`PageSource`]s (made at the first one).
    shared: std::sync::OnceLock<Arc<File>>,
}

/// A checkpoint's payload as it goes to the file: as it is, or compressed.
#[derive(Clone, Copy)]
struct Stored<'a> {
    bytes: &'a [u8],
    codec: Codec,
    /// The object's payload bytes.
    raw_len: u32,
}

impl std::fmt::Debug for SwapFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwapFile")
            .field("path", &self.path)
            .field("file_bytes", &self.file_bytes())
            .field("live_slots", &self.live_slots)
            .field("live_bytes", &self.live_payload)
            .field("dead_bytes", &self.dead_bytes())
            .finish()
    }
}

impl SwapFile {
    /// Creates the swap file `dir/name`, new ([`SwapFolder::create_new`]: an earlier
    /// run's file is replaced, a link or another user's file refused), with no size limit.
    pub fn create(dir: &Path, name: &str) -> Result<SwapFile, SwapError> {
        SwapFile::open_new(dir, name, None)
    }

    /// Creates the swap file `dir/name` as [`SwapFile::create`] does, which will never grow
    /// past `limit` bytes: a write that would need more fails with
    /// [`SwapError::LimitReached`].
    pub fn with_limit(dir: &Path, name: &str, limit: u64) -> Result<SwapFile, SwapError> {
        SwapFile::open_new(dir, name, Some(limit))
    }

    fn open_new(dir: &Path, name: &str, limit: Option<u64>) -> Result<SwapFile, SwapError> {
        SwapFile::create_owned(dir, name, limit, *RunIdentity::current())
    }

    /// Creates the swap file `name` in `folder` (the swap directory this run holds), with
    /// an optional size limit, as this process's run.
    pub fn create_in(
        folder: &Arc<SwapFolder>,
        name: &str,
        limit: Option<u64>,
    ) -> Result<SwapFile, SwapError> {
        SwapFile::create_owned_in(folder.clone(), name, limit, *RunIdentity::current())
    }

    /// Creates the swap file `dir/name` as run `owner`'s (the other constructors use this
    /// process's [`RunIdentity::current`]; tests play other runs).
    pub fn create_owned(
        dir: &Path,
        name: &str,
        limit: Option<u64>,
        owner: RunIdentity,
    ) -> Result<SwapFile, SwapError> {
        let folder = Arc::new(SwapFolder::open(dir)?);
        SwapFile::create_owned_in(folder, name, limit, owner)
    }

    fn create_owned_in(
        folder: Arc<SwapFolder>,
        name: &str,
        limit: Option<u64>,
        owner: RunIdentity,
    ) -> Result<SwapFile, SwapError> {
        let plain = Path::new(name).file_name().is_some_and(|n| n == name);
        if !plain {
            return Err(SwapError::BadName {
                name: name.to_string(),
            });
        }
        let path = folder.path_of(name);
        let mut size = FILE_HEADER_BYTES + INITIAL_DATA_BYTES;
        if let Some(limit) = limit {
            if limit < FILE_HEADER_BYTES + SLOT_HEADER_BYTES {
                let wanted = FILE_HEADER_BYTES + SLOT_HEADER_BYTES;
                return Err(SwapError::LimitReached {
                    path,
                    limit,
                    wanted,
                });
            }
            size = size.min(limit);
        }
        let file = new_file(&folder, name, size, &owner)?;
        Ok(SwapFile {
            path,
            name: name.to_owned(),
            folder,
            file,
            len: size,
            limit,
            slots: BTreeMap::new(),
            free: BTreeSet::new(),
            end: FILE_HEADER_BYTES,
            live_payload: 0,
            live_slots: 0,
            owner,
            compressed: Vec::new(),
            page_sums: Default::default(),
            shared: Default::default(),
        })
    }

    /// From now on the file never grows past `limit` bytes (`None`: no limit); room it
    /// already has is still used. A write that needs more fails with
    /// [`SwapError::LimitReached`], as it would on a full disk.
    pub fn set_limit(&mut self, limit: Option<u64>) {
        self.limit = limit;
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Saves `bytes` as the checkpoint of object `key`. With `existing` (the object's
    /// current slot), the slot is rewritten in place when the checkpoint fits; otherwise the
    /// checkpoint goes to another slot and `existing` is freed once it is written. Returns
    /// the slot now holding the checkpoint.
    pub fn write(
        &mut self,
        key: u64,
        bytes: &[u8],
        existing: Option<SlotId>,
    ) -> Result<SlotId, SwapError> {
        self.write_with(key, bytes, existing, Compression::None)
    }

    /// [`SwapFile::write`], storing the checkpoint as `compression` says: compressed when
    /// that saves at least an eighth of its bytes, else as it is ([`codec`]). Reads give
    /// back the object's bytes either way.
    pub fn write_with(
        &mut self,
        key: u64,
        bytes: &[u8],
        existing: Option<SlotId>,
        compression: Compression,
    ) -> Result<SlotId, SwapError> {
        if bytes.len() > MAX_PAYLOAD {
            return Err(SwapError::TooLarge {
                key,
                len: bytes.len(),
                max: MAX_PAYLOAD,
            });
        }
        let mut scratch = std::mem::take(&mut self.compressed);
        let stored = match codec::encode(compression, bytes, &mut scratch) {
            Some(len) => Stored {
                bytes: &scratch[..len],
                codec: Codec::Lz4,
                raw_len: bytes.len() as u32,
            },
            None => Stored {
                bytes,
                codec: Codec::Raw,
                raw_len: bytes.len() as u32,
            },
        };
        let r = self.write_stored(key, stored, existing);
        self.compressed = scratch;
        r
    }

    /// Writes `stored` (a payload as it goes to the file) as object `key`'s checkpoint.
    fn write_stored(
        &mut self,
        key: u64,
        stored: Stored<'_>,
        existing: Option<SlotId>,
    ) -> Result<SlotId, SwapError> {
        let bytes = stored.bytes;
        self.check_file()?;
        let mut generation = NonZeroU32::MIN;
        if let Some(slot) = existing {
            let info = self.live_info(slot)?;
            let live = info.live.expect("live_info returns live slots");
            if live.key != key {
                return Err(SwapError::WrongObject {
                    path: self.path.clone(),
                    slot,
                    key,
                    owner: live.key,
                });
            }
            generation = next_generation(live.generation);
            if bytes.len() as u64 <= info.capacity as u64 {
                self.put(slot.0, info.capacity, key, stored, generation)?;
                self.live_payload = self.live_payload - live.len as u64 + bytes.len() as u64;
                return Ok(slot);
            }
        }
        let offset = self.allocate(capacity_for(bytes.len()))?;
        let capacity = self.slots[&offset].capacity;
        if let Err(e) = self.put(offset, capacity, key, stored, generation) {
            // The slot stays free (the index, not its header, says so).
            self.free.insert((capacity, offset));
            return Err(e);
        }
        self.live_payload += bytes.len() as u64;
        self.live_slots += 1;
        if let Some(old) = existing {
            self.release(old.0);
        }
        Ok(SlotId(offset))
    }

    /// The end of the last slot: no checkpoint lies at or past it.
    pub fn used_end(&self) -> u64 {
        self.end
    }

    /// The bytes the checkpoint in `slot` stores, per the in-memory index: its object's
    /// payload length, or less when it is compressed.
    pub fn payload_len(&self, slot: SlotId) -> Option<usize> {
        self.slots.get(&slot.0)?.live.map(|l| l.len as usize)
    }

    /// How many times `slot` was written since it was allocated (or since compaction copied it).
    pub fn generation(&self, slot: SlotId) -> Option<u32> {
        self.slots.get(&slot.0)?.live.map(|l| l.generation.get())
    }

    /// Marks the checkpoint in `slot` dead; its space is reused or compacted away.
    pub fn free(&mut self, slot: SlotId) -> Result<(), SwapError> {
        self.live_info(slot)?;
        self.release(slot.0);
        Ok(())
    }

    /// Payload bytes all live checkpoints store (compressed ones count what they store).
    pub fn live_bytes(&self) -> u64 {
        self.live_payload
    }

    /// Bytes the in-memory index of the file takes (every slot by offset, free slots by
    /// size), estimated as its entries at a B-tree's typical two-thirds fill: what the
    /// swap file holds in memory besides the transient buffers of a read or a write.
    pub fn index_bytes(&self) -> usize {
        let slot = std::mem::size_of::<u64>() + std::mem::size_of::<SlotInfo>();
        let free = std::mem::size_of::<(u32, u64)>();
        (self.slots.len() * slot + self.free.len() * free) * 3 / 2 + self.page_sums.bytes()
    }

    /// At most how many bytes the piece checksums of a checkpoint of `payload` bytes add to
    /// [`SwapFile::index_bytes`] ([`page_sums`]).
    pub const fn page_sum_bytes(payload: usize) -> usize {
        if payload < page_sums::PAGE_SUMS_MIN_BYTES {
            0
        } else {
            payload.div_ceil(page_sums::SUM_BYTES) * 4 + 3 * std::mem::size_of::<(u64, usize)>()
        }
    }

    /// At most how many bytes one more checkpoint adds to [`SwapFile::index_bytes`]: its
    /// slot, and free slots split or left behind.
    pub const fn index_bytes_per_checkpoint() -> usize {
        let slot = std::mem::size_of::<u64>() + std::mem::size_of::<SlotInfo>();
        let free = std::mem::size_of::<(u32, u64)>();
        (slot + 2 * free) * 3 / 2
    }

    /// The number of live checkpoints.
    pub fn live_slots(&self) -> u64 {
        self.live_slots
    }

    /// Bytes of the used region holding no live header or payload: free slots and the slack
    /// at the end of live ones.
    pub fn dead_bytes(&self) -> u64 {
        self.used_bytes() - self.live_slots * SLOT_HEADER_BYTES - self.live_payload
    }

    /// Bytes from the first slot to the end of the last one.
    pub fn used_bytes(&self) -> u64 {
        self.end - FILE_HEADER_BYTES
    }

    /// The file's size (the used region plus room to grow into).
    pub fn file_bytes(&self) -> u64 {
        self.len
    }

    /// Dead bytes as a fraction of the used region (0 when it is empty).
    pub fn dead_fraction(&self) -> f64 {
        match self.used_bytes() {
            0 => 0.0,
            used => self.dead_bytes() as f64 / used as f64,
        }
    }

    /// Writes `bytes` at `offset` of the file.
    fn write_at(&self, bytes: &[u8], offset: u64) -> Result<(), SwapError> {
        self.file
            .write_all_at(bytes, offset)
            .map_err(|source| SwapError::Io {
                op: "write",
                path: self.path.clone(),
                source,
            })
    }

    /// Writes a live slot: payload first, then the header that vouches for it. The index
    /// records it only once both are written.
    fn put(
        &mut self,
        offset: u64,
        capacity: u32,
        key: u64,
        stored: Stored<'_>,
        generation: NonZeroU32,
    ) -> Result<(), SwapError> {
        let bytes = stored.bytes;
        self.write_at(bytes, offset + SLOT_HEADER_BYTES)?;
        let len = bytes.len() as u32;
        let header = SlotHeader {
            state: SlotState::Live,
            key,
            capacity,
            len,
            generation: generation.get(),
            payload_crc: crc32(bytes),
            codec: stored.codec,
            raw_len: stored.raw_len,
        };
        let mut encoded = [0u8; SLOT_HEADER_BYTES as usize];
        header.encode(&mut encoded);
        self.write_at(&encoded, offset)?;
        self.page_sums
            .written(offset, bytes, stored.codec == Codec::Raw);
        self.slots.insert(
            offset,
            SlotInfo {
                capacity,
                live: Some(Live {
                    key,
                    len,
                    generation,
                }),
            },
        );
        Ok(())
    }

    /// Records a free slot in the index, and only there: nothing is written to the file.
    /// Allocation trusts the index alone and a read checks the key and generation the
    /// index expects, so the old header left on disk is never taken for a checkpoint; and
    /// a free is called on the thread that deletes the object (the app's looper), where a
    /// 48-byte write into a page of the file that the kernel has evicted (clean page cache
    /// goes first under the memory limit) would first read that page from disk.
    fn put_free(&mut self, offset: u64, capacity: u32) {
        self.slots.insert(
            offset,
            SlotInfo {
                capacity,
                live: None,
            },
        );
        self.free.insert((capacity, offset));
    }

    /// Finds room for a slot of `capacity` payload bytes: a free slot that fits without
    /// wasting more than [`BEST_FIT_SLACK`] times the need, else a new slot at the end.
    /// Returns its offset; the slot is recorded (not yet live).
    fn allocate(&mut self, capacity: u64) -> Result<u64, SwapError> {
        let fit = self.free.range((capacity as u32, 0)..).next().copied();
        if let Some((cap, offset)) = fit {
            if (cap as u64) <= capacity.max(SLOT_ALIGN) * BEST_FIT_SLACK {
                self.free.remove(&(cap, offset));
                return Ok(offset);
            }
        }
        let offset = self.end;
        let end = offset + SLOT_HEADER_BYTES + capacity;
        self.ensure_len(end)?;
        self.end = end;
        self.slots.insert(
            offset,
            SlotInfo {
                capacity: capacity as u32,
                live: None,
            },
        );
        Ok(offset)
    }

    /// Frees the live slot at `offset`, merging it with free neighbours; a free slot at the
    /// end of the used region is dropped from it.
    fn release(&mut self, offset: u64) {
        let info = self.slots[&offset];
        let live = info.live.expect("release takes a live slot");
        self.page_sums.released(offset);
        self.live_payload -= live.len as u64;
        self.live_slots -= 1;
        let (mut start, mut end) = (offset, info.end(offset));
        if let Some((&next, next_info)) = self.slots.range(end..).next() {
            if next_info.live.is_none() && next == end {
                let merged = next_info.end(next);
                if merged - start - SLOT_HEADER_BYTES <= MAX_PAYLOAD as u64 {
                    self.free.remove(&(next_info.capacity, next));
                    self.slots.remove(&next);
                    end = merged;
                }
            }
        }
        if let Some((&prev, prev_info)) = self.slots.range(..start).next_back() {
            if prev_info.live.is_none()
                && prev_info.end(prev) == start
                && end - prev - SLOT_HEADER_BYTES <= MAX_PAYLOAD as u64
            {
                self.free.remove(&(prev_info.capacity, prev));
                self.slots.remove(&start);
                start = prev;
            }
        }
        if end == self.end {
            self.slots.remove(&start);
            self.end = start;
        } else {
            self.put_free(start, (end - start - SLOT_HEADER_BYTES) as u32);
        }
    }

    /// Grows the file to hold at least `needed` bytes, within the limit.
    fn ensure_len(&mut self, needed: u64) -> Result<(), SwapError> {
        let current = self.len;
        if needed <= current {
            return Ok(());
        }
        let mut wanted = needed
            .max(current + current / 2)
            .next_multiple_of(GROWTH_GRANULE);
        if let Some(limit) = self.limit {
            if needed > limit {
                return Err(SwapError::LimitReached {
                    path: self.path.clone(),
                    limit,
                    wanted: needed,
                });
            }
            wanted = wanted.min(limit);
        }
        self.check_file()?;
        reserve(&self.file, &self.path, current, wanted)?;
        self.len = wanted;
        Ok(())
    }

    /// Fails when the file was deleted or truncated behind our back.
    fn check_file(&self) -> Result<(), SwapError> {
        let meta = self.file.metadata().map_err(|source| SwapError::Io {
            op: "stat",
            path: self.path.clone(),
            source,
        })?;
        if meta.nlink() == 0 {
            return Err(SwapError::Deleted {
                path: self.path.clone(),
            });
        }
        let expected = self.len;
        if meta.len() < expected {
            return Err(SwapError::Truncated {
                path: self.path.clone(),
                actual: meta.len(),
                expected,
            });
        }
        // Another run may have written the file (the same directory given to two runs,
        // or the file replaced): its checkpoints are never read as ours.
        let mut header = [0u8; FILE_HEADER_BYTES as usize];
        self.read_exact_at(&mut header, 0)?;
        check_file_header(&header, &self.owner).map_err(|reason| SwapError::NotOurs {
            path: self.path.clone(),
            reason,
        })?;
        Ok(())
    }

    /// The run that owns the file.
    pub fn owner(&self) -> &RunIdentity {
        &self.owner
    }
}

/// Creates `name` in `folder`, new and never through a link ([`SwapFolder::create_new`]),
/// with `size` bytes reserved on disk, and writes the file header. A file that cannot be
/// made whole (a full disk) is removed.
fn new_file(
    folder: &SwapFolder,
    name: &str,
    size: u64,
    owner: &RunIdentity,
) -> Result<File, SwapError> {
    let file = folder.create_new(name)?;
    prepare_new(&file, &folder.path_of(name), size, owner).inspect_err(|_| {
        let _ = folder.remove(name);
    })?;
    Ok(file)
}

/// Reserves `size` bytes of the new, empty `file` at `path` and writes its header.
fn prepare_new(file: &File, path: &Path, size: u64, owner: &RunIdentity) -> Result<(), SwapError> {
    // Faults read what they need and their own read-ahead (`AppSwap`'s window and its
    // prefetch, which `will_need` still reads): the kernel's read-ahead on top read up to
    // `read_ahead_kb` (8 MiB on a virtio disk) past a fault's run, charged to the app's
    // group and mostly dropped unread. Only advice: a kernel that refuses it reads ahead.
    let _ = marvin_runtime::memfd::random_access(file);
    reserve(file, path, 0, size)?;
    let mut header = [0u8; FILE_HEADER_BYTES as usize];
    write_file_header(&mut header, owner);
    file.write_all_at(&header, 0)
        .map_err(|source| SwapError::Io {
            op: "write the file header",
            path: path.to_owned(),
            source,
        })
}

/// Allocates disk blocks for `[from, to)`, extending the file: a full disk fails here, as
/// [`SwapError::DiskFull`], instead of as a `SIGBUS` on a later store into the map.
fn reserve(file: &File, path: &Path, from: u64, to: u64) -> Result<(), SwapError> {
    match marvin_runtime::memfd::reserve(file, from, to - from) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => Err(SwapError::DiskFull {
            path: path.to_owned(),
            wanted: to,
        }),
        Err(source) => Err(SwapError::Io {
            op: "grow",
            path: path.to_owned(),
            source,
        }),
    }
}

#[cfg(test)]
mod compressed_tests;
#[cfg(test)]
mod tests;
