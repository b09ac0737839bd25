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

mod codec;
mod crc32;
mod error;
pub mod layout;
mod page_cache;
pub mod page_sums;
mod sequential;
mod vectored;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::num::NonZeroU32;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use codec::Compression;
pub use crc32::crc32;
pub use error::{CorruptKind, SwapError};
use layout::{
    capacity_for, check_file_header, write_file_header, Codec, HeaderError, SlotHeader, SlotState,
    FILE_HEADER_BYTES, MAX_PAYLOAD, SLOT_ALIGN, SLOT_HEADER_BYTES,
};
use marvin_runtime::RunIdentity;
pub use sequential::SequentialReader;

/// The data region a new file starts with.
const INITIAL_DATA_BYTES: u64 = 64 * 1024;
/// Growth is rounded up to this.
const GROWTH_GRANULE: u64 = 64 * 1024;
/// A free slot is reused only when it wastes at most this factor of the space needed.
const BEST_FIT_SLACK: u64 = 2;

/// Compaction writes the new file in chunks of about this many bytes (a slot larger than
/// this is written alone), so it holds at most one chunk in memory, never both files.
const COMPACT_CHUNK: usize = 1 << 20;

/// A second descriptor of a swap file ([`SwapFile::sync_handle`]): the saver waits for its
/// checkpoints to reach the disk through it after letting go of the file, so the app's
/// looper, whose frees and faults take the file, never waits behind an `fdatasync`.
#[derive(Debug)]
pub struct SyncHandle {
    file: File,
    path: PathBuf,
}

impl SyncHandle {
    /// [`SwapFile::sync_and_release`] through this descriptor: waits until everything
    /// written to the file is on disk, then drops its pages from the page cache. (If a
    /// compaction replaced the file meanwhile, this syncs the replaced one; the
    /// compaction synced and released its copy itself.)
    pub fn sync_and_release(&self) -> Result<(), SwapError> {
        self.file.sync_data().map_err(|source| SwapError::Io {
            op: "flush",
            path: self.path.clone(),
            source,
        })?;
        drop_cached(&self.file);
        Ok(())
    }

    /// Writes every dirty page of the file back and waits until the disk has it
    /// (`sync_file_range` with `WAIT_BEFORE | WRITE | WAIT_AFTER`: the data only, no
    /// journal commit), then drops the file's pages from the page cache. The saver calls
    /// it every [`WRITE_BACK_EVERY`] bytes, so its checkpoints never pile up as dirty
    /// pages in the app's memory cgroup: under cgroup v1, a charge at the group's limit
    /// whose reclaim finds only dirty file pages sleeps 100 ms in the kernel
    /// (`reclaim_throttle`), and direct reclaim never writes a file page itself.
    pub fn write_back_and_release(&self) -> Result<(), SwapError> {
        write_back(&self.file).map_err(|source| SwapError::Io {
            op: "write back",
            path: self.path.clone(),
            source,
        })?;
        drop_cached(&self.file);
        Ok(())
    }
}

/// Bytes of checkpoints a saver writes between two
/// [`SyncHandle::write_back_and_release`] calls: at most this much of an app's swap file
/// is dirty in the page cache at a time.
pub const WRITE_BACK_EVERY: usize = 256 << 10;

/// Writes back every dirty page of `file` and waits for them, and for any write already
/// under way (data only).
fn write_back(file: &File) -> std::io::Result<()> {
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
        | libc::SYNC_FILE_RANGE_WRITE
        | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: a plain call on a descriptor `file` owns for the call, over the whole file
    // (offset 0, length 0: to its end); it reads no memory of ours.
    let rc = unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, flags) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Drops `file`'s clean pages from the page cache: the whole file, header page included.
/// Keeping the header page cached would be worth its one page, but the advice drops
/// nothing of a large folio that the range does not cover whole (Linux 6.18: a 256 KiB
/// file kept every page when released from byte 4096), so a release that starts past the
/// header could keep the file's whole cache charged to the app. Dirty pages stay until
/// written back; an error only leaves pages cached, so it is ignored.
fn drop_cached(file: &File) {
    let _ = marvin_runtime::memfd::drop_cache(file, 0);
}

/// One slot of a [`SwapFile::read_many`], planned.
struct Planned {
    offset: u64,
    /// Its read's index.
    read: usize,
    capacity: u64,
    /// Bytes the slot stores.
    stored: usize,
    /// Where its stored bytes go in the buffer of compressed ones (`None`: stored as is,
    /// read straight into its `out`).
    packed: Option<usize>,
}

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

/// One checkpoint to read with [`SwapFile::read_many`]: its slot, its object's key, and
/// where its payload goes (exactly the checkpoint's length).
#[derive(Debug)]
pub struct SlotRead<'a> {
    pub slot: SlotId,
    pub key: u64,
    pub out: &'a mut [u8],
}

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
    /// Creates (or truncates) the swap file `dir/name`, with no size limit.
    pub fn create(dir: &Path, name: &str) -> Result<SwapFile, SwapError> {
        SwapFile::open_new(dir, name, None)
    }

    /// Creates (or truncates) the swap file `dir/name`, which will never grow past `limit`
    /// bytes: a write that would need more fails with [`SwapError::LimitReached`].
    pub fn with_limit(dir: &Path, name: &str, limit: u64) -> Result<SwapFile, SwapError> {
        SwapFile::open_new(dir, name, Some(limit))
    }

    fn open_new(dir: &Path, name: &str, limit: Option<u64>) -> Result<SwapFile, SwapError> {
        SwapFile::create_owned(dir, name, limit, *RunIdentity::current())
    }

    /// Creates (or truncates) the swap file `dir/name` as run `owner`'s (the other
    /// constructors use this process's [`RunIdentity::current`]; tests play other runs).
    pub fn create_owned(
        dir: &Path,
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
        let path = dir.join(name);
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
        let file = new_file(&path, size, &owner)?;
        Ok(SwapFile {
            path,
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

    /// Reads the checkpoint of object `key` from `slot` into `out`, whose length must be the
    /// checkpoint's. Checks the file, the header, the key, the length and the checksum.
    pub fn read(&self, slot: SlotId, key: u64, out: &mut [u8]) -> Result<(), SwapError> {
        self.check_file()?;
        self.read_checked(slot, key, out)
    }

    /// Checks the file itself (still linked, not truncated): what [`SwapFile::read`] does
    /// before each read, for a batch of [`SwapFile::read_checked`] calls.
    pub fn check(&self) -> Result<(), SwapError> {
        self.check_file()
    }

    /// As [`SwapFile::read`], for a batch whose file was [`check`](SwapFile::check)ed
    /// first: every slot check (header, key, length, checksum) still runs. On error,
    /// `out` may hold garbage.
    pub fn read_checked(&self, slot: SlotId, key: u64, out: &mut [u8]) -> Result<(), SwapError> {
        let info = self.live_info(slot)?;
        let header = self.header_at(key, slot)?;
        let start = slot.0 + SLOT_HEADER_BYTES;
        // A checkpoint stored as it is goes straight into `out`; a compressed one (the
        // index's length is not the object's) through a buffer it is decompressed from.
        let stored_len = info.live.map_or(out.len(), |l| l.len as usize);
        if start + stored_len as u64 > self.len {
            let kind = CorruptKind::OutOfBounds {
                offset: slot.0,
                file_len: self.len,
            };
            return Err(self.corrupt(key, slot, kind));
        }
        if stored_len == out.len() {
            self.read_exact_at(out, start)?;
            return self
                .check_slot(key, &info, &header, out, out.len())
                .map_err(|kind| self.corrupt(key, slot, kind));
        }
        let mut stored = vec![0u8; stored_len];
        self.read_exact_at(&mut stored, start)?;
        self.check_slot(key, &info, &header, &stored, out.len())
            .and_then(|()| codec::decode_lz4(&stored, out))
            .map_err(|kind| self.corrupt(key, slot, kind))
    }

    /// Reads several checkpoints with one vectored positioned read (`preadv`), each
    /// payload straight into its `out` buffer: slot headers and the bytes between slots go
    /// to scratch buffers. Every slot is
    /// checked as [`SwapFile::read_checked`] checks it; returns one result per read, in
    /// the order given. A read whose result is an error may have left garbage in its
    /// `out`. Like [`SwapFile::read_checked`], it assumes the file itself was
    /// [`check`](SwapFile::check)ed; a file truncated since is reported as such.
    pub fn read_many(&self, reads: &mut [SlotRead<'_>]) -> Vec<Result<(), SwapError>> {
        self.read_many_via(&self.file, reads)
    }

    /// [`SwapFile::read_many`] through `via`, a descriptor of this very file.
    ///
    /// A checkpoint stored as it is is read straight into its `out`; a compressed one
    /// (its stored length, as the index knows it, is not its object's) into one shared
    /// buffer, checked there, then decompressed into its `out`.
    fn read_many_via(&self, via: &File, reads: &mut [SlotRead<'_>]) -> Vec<Result<(), SwapError>> {
        let mut results: Vec<Result<(), SwapError>> = Vec::with_capacity(reads.len());
        // The slots to read, by offset: those the index knows. Each with its read's
        // index, its capacity, its stored length and, when compressed, where its stored
        // bytes go in `packed`.
        let mut order: Vec<Planned> = Vec::with_capacity(reads.len());
        for (i, r) in reads.iter().enumerate() {
            match self.live_info(r.slot) {
                Ok(info) => {
                    results.push(Ok(()));
                    let stored = info.live.map_or(r.out.len(), |l| l.len as usize);
                    let capacity = info.capacity;
                    // Placed in `packed` below, in file order.
                    let packed = (stored != r.out.len()).then_some(0);
                    order.push(Planned {
                        offset: r.slot.0,
                        read: i,
                        capacity: capacity as u64,
                        stored,
                        packed,
                    });
                }
                Err(e) => results.push(Err(e)),
            }
        }
        order.sort_unstable_by_key(|p| p.offset);
        let mut packed_len = 0usize;
        order.dedup_by_key(|p| p.offset);
        for p in &mut order {
            if let Some(at) = &mut p.packed {
                *at = packed_len;
                packed_len += p.stored;
            }
        }
        let Some(start) = order.first().map(|p| p.offset) else {
            return results;
        };
        // Scratch: one header per slot, one junk buffer for slack and gaps, and the
        // compressed checkpoints' stored bytes.
        let mut headers = vec![[0u8; SLOT_HEADER_BYTES as usize]; order.len()];
        let mut junk_len = 0u64;
        let mut cursor = start;
        for p in &order {
            junk_len = junk_len
                .max(p.offset - cursor)
                .max(p.capacity - p.stored as u64);
            cursor = p.offset + SLOT_HEADER_BYTES + p.capacity;
        }
        let end = cursor;
        let mut junk = vec![0u8; junk_len as usize];
        let junk_ptr = junk.as_mut_ptr();
        let mut packed = vec![0u8; packed_len];
        let mut packed_rest: &mut [u8] = &mut packed;
        // The order of reads' buffers, each borrowed once.
        let mut outs: Vec<Option<&mut [u8]>> =
            reads.iter_mut().map(|r| Some(&mut *r.out)).collect();
        let mut bufs: Vec<std::io::IoSliceMut<'_>> = Vec::with_capacity(order.len() * 4);
        let mut cursor = start;
        for (p, header) in order.iter().zip(headers.iter_mut()) {
            let gap = (p.offset - cursor) as usize;
            if gap > 0 {
                // SAFETY: `junk` is at least `gap` bytes long and outlives `bufs`; several
                // buffers may name it because its bytes are only ever discarded.
                bufs.push(std::io::IoSliceMut::new(unsafe {
                    std::slice::from_raw_parts_mut(junk_ptr, gap)
                }));
            }
            bufs.push(std::io::IoSliceMut::new(header));
            let out = outs[p.read].take().expect("each slot once");
            let into = if p.packed.is_some() {
                let (here, rest) = std::mem::take(&mut packed_rest).split_at_mut(p.stored);
                packed_rest = rest;
                here
            } else {
                out
            };
            bufs.push(std::io::IoSliceMut::new(into));
            let slack = (p.capacity - p.stored as u64) as usize;
            if slack > 0 {
                // SAFETY: as above, `junk` holds at least `slack` bytes.
                bufs.push(std::io::IoSliceMut::new(unsafe {
                    std::slice::from_raw_parts_mut(junk_ptr, slack)
                }));
            }
            cursor = p.offset + SLOT_HEADER_BYTES + p.capacity;
        }
        let got = vectored::pread_all(via, &mut bufs, start);
        drop(bufs);
        drop(outs);
        let got = match got {
            Ok(n) => n,
            Err(source) => {
                for p in &order {
                    results[p.read] = Err(SwapError::Io {
                        op: "read",
                        path: self.path.clone(),
                        source: std::io::Error::new(source.kind(), source.to_string()),
                    });
                }
                return results;
            }
        };
        for (p, header) in order.iter().zip(&headers) {
            let r = &mut reads[p.read];
            results[p.read] = if p.offset + SLOT_HEADER_BYTES + p.capacity > start + got {
                Err(SwapError::Truncated {
                    path: self.path.clone(),
                    actual: self.file.metadata().map_or(start + got, |m| m.len()),
                    expected: end.max(self.len),
                })
            } else {
                let stored = match p.packed {
                    Some(at) => &packed[at..at + p.stored],
                    None => &*r.out,
                };
                let raw_len = r.out.len();
                SlotHeader::decode(header)
                    .map_err(header_corruption)
                    .and_then(|h| match self.slots.get(&p.offset) {
                        Some(info) if info.capacity as u64 == p.capacity => {
                            self.check_slot(r.key, info, &h, stored, raw_len)
                        }
                        _ => Err(CorruptKind::NotLive),
                    })
                    .and_then(|()| match p.packed {
                        Some(at) => codec::decode_lz4(&packed[at..at + p.stored], r.out),
                        None => Ok(()),
                    })
                    .map_err(|kind| self.corrupt(r.key, r.slot, kind))
            };
        }
        results
    }

    fn corrupt(&self, key: u64, slot: SlotId, kind: CorruptKind) -> SwapError {
        SwapError::Corrupt {
            path: self.path.clone(),
            key,
            slot,
            kind,
        }
    }

    /// The checks of a read checkpoint: a live header for `key` with the slot's
    /// capacity and the generation the index expects (`info`), the stored length of
    /// `payload` (the bytes read from the slot), the object's length `raw_len`, a codec
    /// that fits them (as it is: both lengths equal, the payload is the object's bytes;
    /// compressed: fewer bytes stored, decompressed by the caller), and the stored
    /// bytes' checksum.
    fn check_slot(
        &self,
        key: u64,
        info: &SlotInfo,
        header: &SlotHeader,
        payload: &[u8],
        raw_len: usize,
    ) -> Result<(), CorruptKind> {
        Self::check_slot_fields(key, info, header, payload.len(), raw_len)?;
        let computed = crc32(payload);
        if computed != header.payload_crc {
            return Err(CorruptKind::BadPayloadChecksum {
                stored: header.payload_crc,
                computed,
            });
        }
        Ok(())
    }

    /// [`SwapFile::check_slot`] but for the payload's checksum, for a slot that stores
    /// `stored` bytes.
    fn check_slot_fields(
        key: u64,
        info: &SlotInfo,
        header: &SlotHeader,
        stored: usize,
        raw_len: usize,
    ) -> Result<(), CorruptKind> {
        let capacity = info.capacity;
        if header.state != SlotState::Live {
            return Err(CorruptKind::NotLive);
        }
        if header.key != key {
            return Err(CorruptKind::KeyMismatch { found: header.key });
        }
        // An older checkpoint of the same object (the file rolled back, or a write
        // that never reached the disk) passes every checksum: only the generation the
        // index expects tells it from the current one.
        let expected = info.live.map_or(0, |l| l.generation.get());
        if header.generation != expected {
            return Err(CorruptKind::StaleGeneration {
                found: header.generation,
                expected,
            });
        }
        if header.capacity != capacity {
            return Err(CorruptKind::LengthMismatch {
                stored: header.capacity as u64,
                expected: capacity as u64,
            });
        }
        if header.len as usize != stored || header.len > header.capacity {
            return Err(CorruptKind::LengthMismatch {
                stored: header.len as u64,
                expected: stored as u64,
            });
        }
        let codec_fits = match header.codec {
            Codec::Raw => header.len == header.raw_len,
            Codec::Lz4 => header.len < header.raw_len,
        };
        if header.raw_len as usize != raw_len || !codec_fits {
            return Err(CorruptKind::LengthMismatch {
                stored: header.raw_len as u64,
                expected: raw_len as u64,
            });
        }
        Ok(())
    }

    /// Where object `key`'s checkpoint in `slot` (of `raw_len` payload bytes) can be read
    /// a run of pages at a time, each piece checked against its own checksum
    /// ([`page_sums`]): its slot header is read and checked now, as a whole read checks
    /// it (live, its key, the generation the index expects, its lengths), and it must be
    /// stored as it is. `None` when the checkpoint has no piece checksums (small, or
    /// compressed): it is then read whole.
    pub fn page_source(
        &self,
        slot: SlotId,
        key: u64,
        raw_len: usize,
    ) -> Result<Option<PageSource>, SwapError> {
        let Some(sums) = self.page_sums.get(slot.0) else {
            return Ok(None);
        };
        self.check_file()?;
        let info = self.live_info(slot)?;
        let header = self.header_at(key, slot)?;
        Self::check_slot_fields(key, &info, &header, raw_len, raw_len)
            .map_err(|kind| self.corrupt(key, slot, kind))?;
        if header.codec != Codec::Raw || sums.len() != raw_len.div_ceil(page_sums::SUM_BYTES) {
            return Ok(None);
        }
        let file = match self.shared.get() {
            Some(f) => f.clone(),
            None => {
                let f = Arc::new(self.file.try_clone().map_err(|source| SwapError::Io {
                    op: "open a second handle on",
                    path: self.path.clone(),
                    source,
                })?);
                self.shared.get_or_init(|| f).clone()
            }
        };
        Ok(Some(PageSource {
            file,
            path: self.path.clone(),
            key,
            slot,
            payload_at: slot.0 + SLOT_HEADER_BYTES,
            len: raw_len,
            sums,
        }))
    }

    /// The live slots starting in `[from, to)`, by offset: their ids and owners' keys.
    pub fn live_slots_in(&self, from: u64, to: u64) -> impl Iterator<Item = (SlotId, u64)> + '_ {
        self.slots
            .range(from..to)
            .filter_map(|(&offset, info)| info.live.map(|l| (SlotId(offset), l.key)))
    }

    /// Starts reading the used part of `[from, to)` into the page cache without waiting
    /// ([`marvin_runtime::memfd::will_need`]), so faults of the checkpoints there find
    /// them cached or already on their way. Returns the bytes asked for (0 when the range
    /// holds no used byte, or the advice failed: an advice is only a hint).
    pub fn prefetch(&self, from: u64, to: u64) -> u64 {
        let (from, to) = (from.max(FILE_HEADER_BYTES), to.min(self.end));
        if from >= to {
            return 0;
        }
        match marvin_runtime::memfd::will_need(&self.file, from, to - from) {
            Ok(()) => to - from,
            Err(_) => 0,
        }
    }

    /// Drops the clean pages of `[from, to)` from the page cache: what a restore read into
    /// its objects, or asked for and did not read.
    pub fn drop_range(&self, from: u64, to: u64) {
        page_cache::drop_range(&self.file, from, to.min(self.len));
    }

    /// The end of the last slot: no checkpoint lies at or past it.
    pub fn used_end(&self) -> u64 {
        self.end
    }

    /// Drops the file's clean pages from the page cache ([`drop_cached`]), without
    /// starting any write (what a prefetch left unread goes).
    pub fn drop_clean(&self) {
        drop_cached(&self.file);
    }

    /// Starts writing the file's dirty pages back and drops its clean pages from the page
    /// cache, without waiting for the disk (after a batch of writes on a path that must
    /// not wait, such as a page-out). Pages still being written stay cached until a
    /// later release or [`SwapFile::sync_and_release`].
    pub fn release_all(&self) {
        // SAFETY: a plain call on a descriptor `self.file` owns, for its length; it reads
        // no memory of ours. An error only leaves pages dirty, so it is ignored.
        unsafe { libc::sync_file_range(self.file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
        drop_cached(&self.file);
    }

    /// Waits until everything written is on disk (`fdatasync`), then drops the file's
    /// pages from the page cache ([`drop_cached`]): checkpoints are durable and the kernel
    /// holds no copy of them for this process (at the end of a saver run, after a compaction).
    pub fn sync_and_release(&self) -> Result<(), SwapError> {
        self.flush()?;
        drop_cached(&self.file);
        Ok(())
    }

    /// Checks the file as a read does and returns a second descriptor of it, with which
    /// [`SyncHandle::sync_and_release`] waits for the disk without the caller holding this
    /// file (and whatever lock guards it) meanwhile.
    pub fn sync_handle(&self) -> Result<SyncHandle, SwapError> {
        self.check_file()?;
        let file = self.file.try_clone().map_err(|source| SwapError::Io {
            op: "duplicate its descriptor",
            path: self.path.clone(),
            source,
        })?;
        Ok(SyncHandle {
            file,
            path: self.path.clone(),
        })
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
        let tmp = self.path.with_file_name(format!(
            "{}.compacting",
            self.path
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        ));
        let result = self.copy_live_slots(&tmp, size, &remap, &new_slots);
        let file = match result {
            Ok(done) => done,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        if let Err(source) = std::fs::rename(&tmp, &self.path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(SwapError::Io {
                op: "replace the file with its compacted copy",
                path: self.path.clone(),
                source,
            });
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

    /// Waits until everything written to the file is on disk (`fdatasync`).
    pub fn flush(&self) -> Result<(), SwapError> {
        self.check_file()?;
        self.file.sync_data().map_err(|source| SwapError::Io {
            op: "flush",
            path: self.path.clone(),
            source,
        })
    }

    /// Creates `tmp`, sized `size`, and copies every live slot to its new place: the new
    /// slots are contiguous, so they are gathered into chunks of about [`COMPACT_CHUNK`]
    /// bytes, each written with one `pwrite`. The copy is on disk and out of the page
    /// cache when this returns.
    fn copy_live_slots(
        &self,
        tmp: &Path,
        size: u64,
        remap: &[(SlotId, SlotId)],
        new_slots: &BTreeMap<u64, SlotInfo>,
    ) -> Result<File, SwapError> {
        let file = new_file(tmp, size, &self.owner)?;
        let write_err = |source| SwapError::Io {
            op: "write the compacted copy",
            path: tmp.to_owned(),
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
                self.write_behind(&file, (chunk_at, chunk.len()), &mut behind);
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
            path: tmp.to_owned(),
            source,
        })?;
        drop_cached(&file);
        Ok(file)
    }

    /// Keeps a compaction's page cache to about two chunks: starts writing back the chunk
    /// just written to `file`, waits for the one before it and drops it, and drops what
    /// was read of this (old) file so far. A compaction copies every live checkpoint, and
    /// without this the whole copy would sit dirty in the page cache, charged to the app,
    /// until the final flush. Errors only leave pages cached (the final `sync_data`
    /// reports real write errors), so they are ignored.
    fn write_behind(&self, file: &File, written: (u64, usize), behind: &mut Option<(u64, usize)>) {
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

    /// Reads `out.len()` bytes at `offset` of the file. A file that ends before them was
    /// truncated behind our back.
    fn read_exact_at(&self, out: &mut [u8], offset: u64) -> Result<(), SwapError> {
        self.file.read_exact_at(out, offset).map_err(|source| {
            if source.kind() == std::io::ErrorKind::UnexpectedEof {
                SwapError::Truncated {
                    path: self.path.clone(),
                    actual: self.file.metadata().map_or(offset, |m| m.len()),
                    expected: self.len,
                }
            } else {
                SwapError::Io {
                    op: "read",
                    path: self.path.clone(),
                    source,
                }
            }
        })
    }

    /// The in-memory record of a live slot, or `NoSuchSlot`.
    fn live_info(&self, slot: SlotId) -> Result<SlotInfo, SwapError> {
        match self.slots.get(&slot.0) {
            Some(info) if info.live.is_some() => Ok(*info),
            _ => Err(SwapError::NoSuchSlot {
                path: self.path.clone(),
                slot,
            }),
        }
    }

    /// Reads and decodes the header of `slot` (object `key`'s, as far as the caller
    /// knows), bounds-checked against the file.
    fn header_at(&self, key: u64, slot: SlotId) -> Result<SlotHeader, SwapError> {
        self.check_header_bounds(key, slot)?;
        let mut bytes = [0u8; SLOT_HEADER_BYTES as usize];
        self.read_exact_at(&mut bytes, slot.0)?;
        self.decode_header(key, slot, &bytes)
    }

    /// Checks that `slot`'s header (object `key`'s) lies inside the file.
    fn check_header_bounds(&self, key: u64, slot: SlotId) -> Result<(), SwapError> {
        let (offset, file_len) = (slot.0, self.len);
        if offset
            .checked_add(SLOT_HEADER_BYTES)
            .is_none_or(|end| end > file_len)
        {
            let out_of_bounds = CorruptKind::OutOfBounds { offset, file_len };
            return Err(self.corrupt(key, slot, out_of_bounds));
        }
        Ok(())
    }

    /// Decodes the header `bytes` read at `slot` (inside the file), checking that the slot
    /// it describes lies inside the file.
    fn decode_header(&self, key: u64, slot: SlotId, bytes: &[u8]) -> Result<SlotHeader, SwapError> {
        let (offset, file_len) = (slot.0, self.len);
        let header =
            SlotHeader::decode(bytes).map_err(|e| self.corrupt(key, slot, header_corruption(e)))?;
        if offset + SLOT_HEADER_BYTES + header.capacity as u64 > file_len {
            let out_of_bounds = CorruptKind::OutOfBounds { offset, file_len };
            return Err(self.corrupt(key, slot, out_of_bounds));
        }
        Ok(header)
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

/// What a slot header that did not decode says about its checkpoint.
fn header_corruption(e: HeaderError) -> CorruptKind {
    match e {
        HeaderError::BadMagic(found) => CorruptKind::BadMagic { found },
        HeaderError::BadChecksum { stored, computed } => {
            CorruptKind::BadHeaderChecksum { stored, computed }
        }
        HeaderError::BadState(_) => CorruptKind::NotLive,
        HeaderError::BadCodec(found) => CorruptKind::UnknownCodec { found },
    }
}

/// The part of a swap file a compaction read last. Its copy reads the old file in runs of
/// about [`COMPACT_CHUNK`] bytes (not a header and a payload per slot), through the file's
/// own descriptor, which reads no read-ahead ([`new_file`] advises it `POSIX_FADV_RANDOM`):
/// read-ahead past each run was what the copy's drop of the old file's cache after every
/// chunk threw away unread (with a virtio disk's 8 MiB `read_ahead_kb`, most of what a
/// compaction read).
#[derive(Default)]
struct SourceWindow {
    /// Where `bytes` start in the file.
    at: u64,
    bytes: Vec<u8>,
    /// Reads of the file so far.
    reads: usize,
}

impl SourceWindow {
    /// `len` bytes of `file` at `offset` (inside its used region, or the read fails as a
    /// truncated file's would), read from the disk only when not already in the window.
    fn get(&mut self, file: &SwapFile, offset: u64, len: usize) -> Result<&[u8], SwapError> {
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

/// Creates (or truncates) `path` with `size` bytes reserved on disk and writes the file
/// header.
fn new_file(path: &Path, size: u64, owner: &RunIdentity) -> Result<File, SwapError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|source| SwapError::Io {
            op: "create",
            path: path.to_owned(),
            source,
        })?;
    // Faults read what they need and their own read-ahead (`AppSwap`'s window and its
    // prefetch, which `will_need` still reads): the kernel's read-ahead on top read up to
    // `read_ahead_kb` (8 MiB on a virtio disk) past a fault's run, charged to the app's
    // group and mostly dropped unread. Only advice: a kernel that refuses it reads ahead.
    let _ = marvin_runtime::memfd::random_access(&file);
    reserve(&file, path, 0, size)?;
    let mut header = [0u8; FILE_HEADER_BYTES as usize];
    write_file_header(&mut header, owner);
    file.write_all_at(&header, 0)
        .map_err(|source| SwapError::Io {
            op: "write the file header",
            path: path.to_owned(),
            source,
        })?;
    Ok(file)
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
