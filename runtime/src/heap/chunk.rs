//! Cold chunks: small objects swapped together.
//!
//! A stub costs too much on an object of 80 bytes, so small objects that stayed cold are
//! moved (every object is reached through the handle table, so moving one changes only
//! its entry) into a *chunk*: one page-aligned byte-array object of the large-object
//! space that holds them packed, each at a 16-byte offset after the chunk's own header.
//! The chunk object gets an ordinary [`Stub`]: the saver, the reclaimer (in this process
//! or the System's), the swap file with its checksums, generations and compression, and
//! the lock protocol of its reclaim-table entry treat it as one large object.
//!
//! A member's handle entry points at its [`ChunkMember`] record, tagged
//! [`ENTRY_CHUNK`] | [`ENTRY_STUB`] (code that only knows stubs takes it for "not a plain
//! object"). An access to a member enters the chunk's stub (its entry locked shared for
//! the whole access, the chunk faulted in first when it is out, DIRTY set on the chunk
//! around a write: see [`crate::stub::StubAccess`]), then reaches the member at its offset.
//!
//! Bookmarking: the record keeps a copy of every reference word of its member, kept
//! current by the barrier's reference stores, so the collector marks members and follows
//! their references without reading the chunk: a collection with chunks reclaimed faults
//! none of them in. Members the collector finds dead are freed from the chunk's
//! accounting ([`Heap::free_chunk_members`]); a resident chunk with enough dead is
//! compacted into a new one ([`Heap::compact_chunks`]).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{large_space, small_space, Handle, HandleMap, Heap, ENTRY_STUB};
use crate::header::{HeaderBits, ObjKind, HEADER_BYTES};
use crate::object::Obj;
use crate::stub::{stub_bytes, Stub, StubError};

/// Tag bit of a handle entry that points at a [`ChunkMember`] (always with
/// [`ENTRY_STUB`]).
pub const ENTRY_CHUNK: u64 = 2;

/// Whether a handle entry is a chunk member's.
#[inline(always)]
pub fn is_chunk_entry(e: u64) -> bool {
    e & ENTRY_CHUNK != 0
}

/// One small object living in a chunk.
#[derive(Debug)]
pub struct ChunkMember {
    /// The chunk's stub (its object holds the member's bytes).
    stub: Arc<Stub>,
    pub handle: Handle,
    /// Offset of the member's header from the chunk object's header.
    pub offset: u32,
    /// Bytes the member takes in the chunk (its size rounded to 16).
    pub size: u32,
    /// Marked by the current collection.
    pub marked: AtomicBool,
    /// Found dead by a collection: its bytes are dead space of the chunk.
    dead: AtomicBool,
    /// Copies of the member's reference words (the bookmarks).
    refs: Box<[AtomicU64]>,
}

impl ChunkMember {
    /// The chunk's stub.
    pub fn stub(&self) -> &Stub {
        &self.stub
    }

    /// The chunk object's handle.
    pub fn chunk(&self) -> Handle {
        self.stub.handle
    }

    /// Copies of the member's reference words.
    pub fn refs(&self) -> &[AtomicU64] {
        &self.refs
    }

    /// Keeps the copy of reference word `word` current (the barrier's reference store).
    pub fn update_ref_copy(&self, word: usize, value: u64) {
        if let Some(r) = self.refs.get(word) {
            r.store(value, Ordering::Relaxed);
        }
    }

    /// The member object.
    ///
    /// # Safety
    /// The chunk must be resident and kept so (its entry held shared, or the world
    /// stopped with the chunk resident).
    pub unsafe fn object(&self) -> Obj<'_> {
        // SAFETY: the caller keeps the chunk resident; the member lies at its offset.
        unsafe { Obj::from_addr(self.stub.addr + self.offset as usize) }
    }
}

/// A chunk: its object's stub and its members.
#[derive(Debug)]
pub struct Chunk {
    stub: Arc<Stub>,
    members: Box<[ChunkMember]>,
    /// How many rounds its least cold member had been cold when packed (1 to 4).
    pub coldness: u8,
    /// Bytes of members (live or dead) in the chunk.
    pub member_bytes: u64,
    /// Bytes of members found dead since the chunk was made.
    dead_bytes: AtomicU64,
    live_members: AtomicU32,
}

impl Chunk {
    pub fn handle(&self) -> Handle {
        self.stub.handle
    }

    pub fn stub(&self) -> &Stub {
        &self.stub
    }

    pub fn members(&self) -> &[ChunkMember] {
        &self.members
    }

    pub fn dead_bytes(&self) -> u64 {
        self.dead_bytes.load(Ordering::Relaxed)
    }

    pub fn live_members(&self) -> u32 {
        self.live_members.load(Ordering::Relaxed)
    }

    /// Bytes the runtime holds for this chunk besides its object (its records and
    /// bookmarks, by the native allocator's chunks).
    fn held_bytes(&self) -> u64 {
        let refs: usize = self
            .members
            .iter()
            .map(|m| crate::stub::malloc_bytes(m.refs.len() * 8))
            .sum();
        (crate::stub::malloc_bytes(std::mem::size_of::<Chunk>() + 16)
            + crate::stub::malloc_bytes(self.members.len() * std::mem::size_of::<ChunkMember>())
            + refs) as u64
    }
}

/// Counters of chunk activity, read by the app's stats.
#[derive(Debug, Default)]
pub struct ChunkCounters {
    pub chunks_made: AtomicU64,
    /// Small objects moved into chunks, and their bytes.
    pub objects_chunked: AtomicU64,
    pub bytes_chunked: AtomicU64,
    /// Member accesses that found their chunk out and brought it back.
    pub faults: AtomicU64,
    pub fault_bytes: AtomicU64,
    /// Chunks rebuilt without their dead members.
    pub compactions: AtomicU64,
    /// Bytes of whole small-object-space pages the moved objects left, returned to the OS.
    pub small_pages_released: AtomicU64,
    /// Members found dead by collections, and their bytes.
    pub members_freed: AtomicU64,
    pub member_bytes_freed: AtomicU64,
}

/// Every chunk of a heap, by its object's handle.
#[derive(Default)]
pub struct ChunkSpace {
    chunks: Mutex<HandleMap<Arc<Chunk>>>,
    pub counters: ChunkCounters,
    held: AtomicU64,
}

/// What a chunk's members add up to now, for the stats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkFigures {
    pub chunks: u64,
    /// Live members and their bytes.
    pub members: u64,
    pub member_bytes: u64,
    /// Live member bytes of chunks whose checkpoint is current (saved and clean).
    pub saved_bytes: u64,
    /// Live member bytes of chunks whose pages are returned to the OS.
    pub reclaimed_bytes: u64,
    /// Bytes of the chunk objects (pages).
    pub chunk_bytes: u64,
}

impl ChunkSpace {
    /// Bytes of the records and bookmarks of every chunk.
    pub fn held_bytes(&self) -> usize {
        self.held.load(Ordering::Relaxed) as usize
    }

    /// Every chunk (a snapshot).
    pub fn all(&self) -> Vec<Arc<Chunk>> {
        self.chunks.lock().values().cloned().collect()
    }

    pub fn get(&self, chunk: Handle) -> Option<Arc<Chunk>> {
        self.chunks.lock().get(&chunk).cloned()
    }

    pub fn len(&self) -> usize {
        self.chunks.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn insert(&self, chunk: Arc<Chunk>) {
        self.held.fetch_add(chunk.held_bytes(), Ordering::Relaxed);
        self.chunks.lock().insert(chunk.handle(), chunk);
    }

    fn remove(&self, chunk: Handle) -> Option<Arc<Chunk>> {
        let c = self.chunks.lock().remove(&chunk)?;
        self.held.fetch_sub(c.held_bytes(), Ordering::Relaxed);
        Some(c)
    }

    /// The figures of every chunk, read from the reclaim table's flags of each (the
    /// app's own view: the entries are this app's).
    pub fn figures(&self, heap: &Heap) -> ChunkFigures {
        let mut f = ChunkFigures::default();
        let Some(space) = heap.stub_space() else {
            return f;
        };
        for c in self.all() {
            let live = c.member_bytes.saturating_sub(c.dead_bytes());
            let entry = space.table.entry(c.stub.entry);
            f.chunks += 1;
            f.members += c.live_members() as u64;
            f.member_bytes += live;
            f.chunk_bytes += large_space::page_round(c.stub.bytes()) as u64;
            if entry.is_saved() && entry.is_clean() {
                f.saved_bytes += live;
            }
            if !entry.is_resident() {
                f.reclaimed_bytes += live;
            }
        }
        f
    }
}

/// Why a chunk could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ChunkError {
    #[error(transparent)]
    Alloc(#[from] super::AllocError),
    #[error(transparent)]
    Stub(#[from] StubError),
    #[error("the chunk object could not be stubbed")]
    Refused,
}

/// What one packing or compaction did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkReport {
    pub chunks: u64,
    pub objects: u64,
    pub bytes: u64,
}

/// One object to pack: its handle, where its bytes are now and how many.
struct Source {
    handle: Handle,
    addr: usize,
    size: usize,
    /// Rounds it has been cold.
    coldness: u8,
}

/// The bytes a member takes in a chunk.
fn member_size(obj: &Obj<'_>) -> usize {
    small_space::block_size(obj.size())
}

impl Heap {
    /// The heap's chunks.
    pub fn chunks(&self) -> &ChunkSpace {
        &self.chunks
    }

    /// The chunk member behind a chunk-tagged handle entry.
    ///
    /// # Safety
    /// `e` must be a chunk-tagged entry read from this heap's table, and the member must
    /// not be freed while the reference is used (mutators stopped, or no collection
    /// running).
    pub unsafe fn member_of_entry(&self, e: u64) -> &ChunkMember {
        // SAFETY: forwarded contract: the record lives in its chunk, kept by the space.
        unsafe { &*((e & !(ENTRY_STUB | ENTRY_CHUNK)) as *const ChunkMember) }
    }

    /// Moves the small objects of `handles` (plain resident entries, smaller than
    /// [`super::LARGE_OBJECT_BYTES`], not NO_SWAP; others are skipped), each with the
    /// rounds it has been cold, into chunks of at most `chunk_bytes` bytes, in the order
    /// given. A remainder too small for a chunk object of its own (under
    /// [`super::LARGE_OBJECT_BYTES`]) stays where it is.
    ///
    /// # Safety
    /// The app's mutators must be stopped.
    pub unsafe fn pack_chunks(
        &self,
        handles: &[(Handle, u8)],
        chunk_bytes: usize,
    ) -> Result<ChunkReport, ChunkError> {
        let mut sources = Vec::new();
        for &(h, coldness) in handles {
            // SAFETY: mutators are stopped.
            let Some(obj) = (unsafe { self.raw_object(h) }) else {
                continue;
            };
            if obj.size() >= super::LARGE_OBJECT_BYTES
                || obj.header().bits().contains(HeaderBits::NO_SWAP)
            {
                continue;
            }
            sources.push(Source {
                handle: h,
                addr: obj.addr(),
                size: member_size(&obj),
                coldness,
            });
        }
        let mut report = ChunkReport::default();
        let mut freed: Vec<(usize, usize)> = Vec::new();
        let mut failed = None;
        for group in split(&sources, chunk_bytes) {
            // SAFETY: forwarded: mutators are stopped, sources are plain resident objects.
            match unsafe { self.build_chunk(group) } {
                Ok(made) => {
                    freed.extend(group.iter().map(|s| (s.addr, s.size)));
                    report.chunks += 1;
                    report.objects += made as u64;
                    report.bytes += group.iter().map(|s| s.size as u64).sum::<u64>();
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        // The whole pages the moved objects leave go back to the OS, over the whole pass
        // (neighbouring chunks' objects were neighbours), before the blocks are on a free
        // list where an allocation could take them; else the move would cost resident
        // memory until later allocations reused them.
        let released = self.small.release_pages(&mut freed);
        self.chunks
            .counters
            .small_pages_released
            .fetch_add(released as u64, Ordering::Relaxed);
        self.small.free(freed);
        self.counters
            .in_use
            .fetch_sub(report.bytes as usize, Ordering::Relaxed);
        let c = &self.chunks.counters;
        c.objects_chunked
            .fetch_add(report.objects, Ordering::Relaxed);
        c.bytes_chunked.fetch_add(report.bytes, Ordering::Relaxed);
        match failed {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }

    /// Builds one chunk from `group` (each source a resident object whose handle
    /// entry is repointed at its member record) and registers it; returns the members.
    ///
    /// # Safety
    /// Mutators stopped; each source's bytes are a live object of its handle.
    unsafe fn build_chunk(&self, group: &[Source]) -> Result<usize, ChunkError> {
        let coldness = group.iter().map(|s| s.coldness).min().unwrap_or(0);
        let total = HEADER_BYTES + group.iter().map(|s| s.size).sum::<usize>();
        let refs_words: usize = group
            .iter()
            // SAFETY: each source is a live object (the caller's contract).
            .map(|s| unsafe { Obj::from_addr(s.addr) }.ref_words().len())
            .sum();
        let records = group.len() * std::mem::size_of::<ChunkMember>() + refs_words * 8 + 256;
        let _runtime = self.runtime_growth(records + stub_bytes(0) + 64);
        let h = self.alloc(ObjKind::ByteArray, 0, (total - HEADER_BYTES) as u32, 0)?;
        let space = self.stub_space().ok_or(StubError::NotEnabled)?;
        if self.table.entry(h).load(Ordering::Acquire) & ENTRY_STUB == 0 {
            // SAFETY: mutators are stopped; `h` is not published to any of them.
            if !unsafe { self.stub_object(h)? } {
                // SAFETY: never published.
                unsafe { self.free(&[h]) };
                return Err(ChunkError::Refused);
            }
        }
        let stub = space.get(h).ok_or(ChunkError::Refused)?;
        let mut members = Vec::with_capacity(group.len());
        let mut offset = HEADER_BYTES;
        for s in group {
            // SAFETY: the chunk object is fresh and resident (just allocated, world
            // stopped), `offset + size <= total`; the source is a live object of
            // `size` bytes that does not overlap it.
            let obj = unsafe {
                std::ptr::copy_nonoverlapping(
                    s.addr as *const u8,
                    (stub.addr + offset) as *mut u8,
                    s.size,
                );
                Obj::from_addr(stub.addr + offset)
            };
            obj.header().clear(HeaderBits::MARKED);
            let refs = obj
                .ref_words()
                .iter()
                .map(|w| AtomicU64::new(w.load(Ordering::Relaxed)))
                .collect();
            members.push(ChunkMember {
                stub: stub.clone(),
                handle: s.handle,
                offset: offset as u32,
                size: s.size as u32,
                marked: AtomicBool::new(false),
                dead: AtomicBool::new(false),
                refs,
            });
            offset += s.size;
        }
        let chunk = Arc::new(Chunk {
            stub,
            coldness,
            member_bytes: (total - HEADER_BYTES) as u64,
            dead_bytes: AtomicU64::new(0),
            live_members: AtomicU32::new(group.len() as u32),
            members: members.into_boxed_slice(),
        });
        for m in chunk.members.iter() {
            let ptr = m as *const ChunkMember as u64;
            debug_assert_eq!(ptr & (ENTRY_STUB | ENTRY_CHUNK), 0);
            self.table
                .entry(m.handle)
                .store(ptr | ENTRY_CHUNK | ENTRY_STUB, Ordering::Release);
        }
        self.chunks.insert(chunk);
        self.chunks
            .counters
            .chunks_made
            .fetch_add(1, Ordering::Relaxed);
        Ok(group.len())
    }

    /// Frees chunk members the collector found dead: their handles go, their bytes
    /// become the chunk's dead space (its pages go with the chunk, or at its
    /// compaction). A chunk left without members is dropped from the space; its object,
    /// unmarked, is freed by the same sweep.
    ///
    /// # Safety
    /// The world must be stopped and the handles unreachable.
    pub unsafe fn free_chunk_members(&self, dead: &[Handle]) {
        if dead.is_empty() {
            return;
        }
        let mut bytes = 0u64;
        for &h in dead {
            let e = self.table.entry(h).load(Ordering::Acquire);
            if !is_chunk_entry(e) {
                continue;
            }
            // SAFETY: a chunk entry of this heap; the world is stopped.
            let m = unsafe { self.member_of_entry(e) };
            m.dead.store(true, Ordering::Relaxed);
            bytes += m.size as u64;
            if let Some(c) = self.chunks.get(m.chunk()) {
                c.dead_bytes.fetch_add(m.size as u64, Ordering::Relaxed);
                if c.live_members.fetch_sub(1, Ordering::Relaxed) == 1 {
                    self.chunks.remove(m.chunk());
                }
            }
        }
        self.table.release(dead.iter().copied());
        self.account_freed(dead.len() as u64, 0);
        let c = &self.chunks.counters;
        c.members_freed
            .fetch_add(dead.len() as u64, Ordering::Relaxed);
        c.member_bytes_freed.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Rebuilds every resident chunk whose dead bytes exceed `threshold` of its member
    /// bytes into a new chunk of its live members, and frees the old one (its stub,
    /// reclaim-table entry, swap-file slot and pages). A chunk that is out is left
    /// alone: compacting it would fault it in.
    ///
    /// # Safety
    /// The app's mutators must be stopped.
    pub unsafe fn compact_chunks(&self, threshold: f64) -> Result<ChunkReport, ChunkError> {
        let Some(space) = self.stub_space() else {
            return Ok(ChunkReport::default());
        };
        let mut report = ChunkReport::default();
        for c in self.chunks.all() {
            if (c.dead_bytes() as f64) <= threshold * c.member_bytes as f64 {
                continue;
            }
            let Ok(guard) = space.lock_entry(&c.stub) else {
                continue;
            };
            if !guard.entry().is_resident() {
                continue;
            }
            let live: Vec<Source> = c
                .members
                .iter()
                .filter(|m| !m.dead.load(Ordering::Relaxed))
                .map(|m| Source {
                    handle: m.handle,
                    addr: c.stub.addr + m.offset as usize,
                    size: m.size as usize,
                    coldness: c.coldness,
                })
                .collect();
            let live_bytes: usize = live.iter().map(|s| s.size).sum();
            if HEADER_BYTES + live_bytes < super::LARGE_OBJECT_BYTES {
                // Too little left for a chunk of its own: wait until it all dies.
                continue;
            }
            // SAFETY: mutators are stopped; the old chunk is resident and held.
            let made = unsafe { self.build_chunk(&live)? };
            drop(guard);
            self.chunks.remove(c.handle());
            // SAFETY: no member's entry points at the old chunk any more and nothing
            // else references its handle; the world is stopped.
            unsafe { self.free_stubs(&[c.handle()]) };
            // The old chunk's dead members were booked as freed objects already.
            self.counters.objects_freed.fetch_sub(1, Ordering::Relaxed);
            report.chunks += 1;
            report.objects += made as u64;
            report.bytes += live_bytes as u64;
            self.chunks
                .counters
                .compactions
                .fetch_add(1, Ordering::Relaxed);
        }
        Ok(report)
    }
}

/// Splits `sources` into runs of at most `chunk_bytes` bytes (header included) each big
/// enough for a large object; a remainder too small is left out.
fn split(sources: &[Source], chunk_bytes: usize) -> Vec<&[Source]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, HEADER_BYTES);
    for (i, s) in sources.iter().enumerate() {
        if bytes + s.size > chunk_bytes && i > start {
            out.push(&sources[start..i]);
            (start, bytes) = (i, HEADER_BYTES);
        }
        bytes += s.size;
    }
    if start < sources.len() && bytes >= super::LARGE_OBJECT_BYTES {
        out.push(&sources[start..]);
    }
    out
}

// The per-object cost the docs state (docs/pressure-reference.md, "Small objects in cold
// chunks"): a member record is 40 bytes, against a stub's 56 and more.
const _: () = assert!(std::mem::size_of::<ChunkMember>() == 40);
