//! The heap of one app: allocation, handles, accounting and freeing.
//!
//! Small objects (under [`LARGE_OBJECT_BYTES`]) come from [`small_space`]'s size-class
//! free lists; large objects come from the page-aligned [`large_space`], so their pages
//! can be returned to the OS alone or with their neighbours. Every object is reached through the
//! [`handle_table`]. Reading and writing objects goes through [`crate::barrier`].
//! A mutator thread allocates small objects through its [`alloc_buffer`], without locks
//! or atomic read-modify-writes; everything else goes through [`Heap::alloc`].

pub mod alloc_buffer;
pub(crate) mod chunk;
pub(crate) mod chunk_access;
pub mod handle_hash;
pub mod handle_table;
pub mod large_space;
pub mod region_dir;
pub mod small_space;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

pub use alloc_buffer::AllocBuffer;
pub use handle_table::{Handle, HandleMap, HandleTable, ENTRY_STUB};
pub use large_space::{LargeBacking, LargeSpace, PAGE};

use crate::header::{ObjHeader, ObjKind, HEADER_BYTES};
use crate::object::Obj;

/// Objects of this many bytes (header included) and more start on a page boundary.
pub const LARGE_OBJECT_BYTES: usize = 2048;

// A buffer's block is zeroed past its first grain, which the header covers whole.
const _: () = assert!(small_space::GRAIN == HEADER_BYTES);

/// Largest array length MASM may ask for.
pub const MAX_ARRAY_LEN: u64 = u32::MAX as u64 / 2;

/// Why an allocation failed.
#[derive(Debug, thiserror::Error)]
pub enum AllocError {
    #[error("out of memory")]
    OutOfMemory,
    #[error("out of memory: {0}")]
    TableFull(#[from] handle_table::TableFull),
    #[error("out of memory: cannot map heap space: {0}")]
    Map(#[from] std::io::Error),
}

/// A heap setting that can be made once was made again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AlreadySet {
    /// [`Heap::enable_stubs`] a second time.
    #[error("stubs are already enabled")]
    Stubs,
    /// [`Heap::set_pressure`] a second time.
    #[error("a memory budget is already set")]
    Pressure,
}

/// Settings of a heap.
#[derive(Clone, Debug)]
pub struct HeapConfig {
    /// Maximum number of live objects.
    pub handle_capacity: u32,
    /// `--heap-limit`: live bytes the heap may hold after a collection.
    pub limit: Option<usize>,
    /// The next collection comes after allocating a third of the live bytes (a 75%
    /// target utilisation, as ART), but at least `gc_min_free` and at most
    /// `gc_max_free` bytes.
    pub gc_min_free: usize,
    pub gc_max_free: usize,
    /// What backs the large-object space (anonymous memory unless a reclaimer in another
    /// process must reach it).
    pub large_backing: LargeBacking,
}

impl Default for HeapConfig {
    fn default() -> Self {
        HeapConfig {
            handle_capacity: 1 << 24,
            limit: None,
            gc_min_free: 32 << 20,
            gc_max_free: 64 << 20,
            large_backing: LargeBacking::Anonymous,
        }
    }
}

/// Counters of a heap, read by `--stats` and the experiments.
#[derive(Debug, Default)]
pub struct HeapCounters {
    pub allocations: AtomicU64,
    pub bytes_allocated: AtomicU64,
    pub objects_freed: AtomicU64,
    pub bytes_freed: AtomicU64,
    /// Bytes of live objects (header included; large objects count whole pages).
    pub in_use: AtomicUsize,
    pub peak_in_use: AtomicUsize,
    /// Bytes of large objects (at least [`LARGE_OBJECT_BYTES`], whole pages) ever
    /// allocated, and freed: the large part of `bytes_allocated` and `bytes_freed`.
    pub large_allocated: AtomicU64,
    pub large_freed: AtomicU64,
    /// Bytes allocated since the last collection.
    pub since_gc: AtomicUsize,
}

impl HeapCounters {
    /// Raises `peak_in_use` to `now` if that is higher, writing the shared line only then.
    fn raise_peak(&self, now: usize) {
        if now > self.peak_in_use.load(Ordering::Relaxed) {
            self.peak_in_use.fetch_max(now, Ordering::Relaxed);
        }
    }
}

/// Writes a new object's header at `addr`.
///
/// # Safety
/// `addr` is 16-byte aligned, writable memory of at least the object's size that no
/// other thread can reach yet.
#[inline(always)]
unsafe fn write_header(addr: usize, kind: ObjKind, class: u32, len: u32, nrefs: u16) {
    // SAFETY: the caller's contract: aligned, writable, and ours alone.
    unsafe {
        std::ptr::write(
            addr as *mut ObjHeader,
            ObjHeader::new(kind, class, len, nrefs),
        )
    };
}

/// What an allocation of some size should do first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcNeed {
    /// Allocate now.
    None,
    /// Collect first (allocation volume or the limit); allocate regardless after.
    Collect,
}

/// One app's heap.
pub struct Heap {
    table: HandleTable,
    large: LargeSpace,
    small: small_space::SmallSpace,
    config: HeapConfig,
    pub counters: HeapCounters,
    /// Stubs and the reclaim table, once swapping is enabled.
    stubs: std::sync::OnceLock<crate::stub::StubSpace>,
    /// Bytes of allocation that trigger the next collection.
    gc_trigger: AtomicUsize,
    /// Bytes live when the last collection ended (`in_use` with the world stopped).
    live_after_gc: AtomicUsize,
    /// Called before every allocation when a memory budget is shared (the System).
    pressure: std::sync::OnceLock<std::sync::Arc<dyn AllocPressure>>,
    /// What the runtime's holdings for this heap are charged at ([`Heap::charged_bytes`]).
    runtime: RuntimeCharge,
    /// Cold chunks of small objects ([`chunk`]).
    chunks: chunk::ChunkSpace,
}

/// Bytes the charge of the runtime's holdings keeps above what they hold
/// ([`Heap::runtime_growth`]), and the step it moves by: small growth between two
/// announcements (a handle-table page, a free list doubling) stays covered.
pub const RUNTIME_HEADROOM: usize = 32 << 10;

/// The charge of the runtime's holdings of one heap: raised only through a reservation
/// with the budget (or out of memory the heap has just given back), lowered when the
/// holdings shrink.
#[derive(Default)]
struct RuntimeCharge {
    /// Bytes charged.
    charged: AtomicUsize,
    /// Growth announced by [`RuntimeGrowth`]s alive now, not yet in the holdings.
    pending: AtomicUsize,
    /// Serialises changes of `charged` with the reading of what it must cover (never
    /// held across a reservation).
    lock: parking_lot::Mutex<()>,
}

/// Growth of the runtime's holdings announced with [`Heap::runtime_growth`]: the charge
/// covers it until this is dropped; by then the holdings count it.
#[must_use = "the announced growth is covered until this is dropped"]
pub struct RuntimeGrowth<'h> {
    heap: &'h Heap,
    bytes: usize,
}

impl Drop for RuntimeGrowth<'_> {
    fn drop(&mut self) {
        self.heap
            .runtime
            .pending
            .fetch_sub(self.bytes, Ordering::SeqCst);
        self.heap.trim_runtime_charge();
    }
}

/// A memory budget shared by several heaps: asked to make room before each allocation,
/// on the allocating thread (where a low-memory killer or a swap-out would run).
///
/// The heap reserves before it grows and releases the reservation once the growth is
/// counted in its own figures (or did not happen), so that concurrent allocators never
/// see the same room twice.
pub trait AllocPressure: Send + Sync {
    /// Makes room for `bytes` more (by killing, swapping or reclaiming) if the budget
    /// would be exceeded, and holds them reserved until [`AllocPressure::release`].
    /// Must not allocate from `heap`.
    fn reserve(&self, heap: &Heap, bytes: usize);
    /// Gives back a reservation of `bytes`: the heap now counts them itself, or the
    /// growth did not happen.
    fn release(&self, heap: &Heap, bytes: usize);
}

/// Budget reserved for a growth of the heap ([`Heap::before_growth`]), given back when
/// dropped: keep it until the heap counts the new bytes as resident.
#[must_use = "the reservation ends when this is dropped"]
pub struct Growth<'h> {
    heap: &'h Heap,
    bytes: usize,
}

impl Drop for Growth<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.heap.pressure.get() {
            p.release(self.heap, self.bytes);
        }
    }
}

/// Bytes an object of this shape occupies (header included, large objects in pages).
pub fn footprint(kind: ObjKind, len: u32) -> usize {
    let raw = HEADER_BYTES + kind.payload_bytes(len);
    if raw >= LARGE_OBJECT_BYTES {
        large_space::page_round(raw)
    } else {
        raw.div_ceil(16) * 16
    }
}

impl Heap {
    pub fn new(config: HeapConfig) -> std::io::Result<Heap> {
        let heap = Heap {
            table: HandleTable::new(config.handle_capacity)?,
            large: LargeSpace::with_backing(config.large_backing),
            small: small_space::SmallSpace::new(),
            counters: HeapCounters::default(),
            stubs: std::sync::OnceLock::new(),
            pressure: std::sync::OnceLock::new(),
            gc_trigger: AtomicUsize::new(config.gc_min_free),
            live_after_gc: AtomicUsize::new(0),
            runtime: RuntimeCharge::default(),
            chunks: chunk::ChunkSpace::default(),
            config,
        };
        // The handle table's first page (no budget yet: nothing to reserve with).
        drop(heap.runtime_growth(0));
        Ok(heap)
    }

    /// Enables stubs for this heap (once; later calls are refused).
    pub fn enable_stubs(&self, space: crate::stub::StubSpace) -> Result<(), AlreadySet> {
        if self.stubs.get().is_some() {
            return Err(AlreadySet::Stubs);
        }
        // The stub space's table and the swap layer's index are the heap's from now on:
        // charged first.
        let _charged = self.runtime_growth(space.held_bytes());
        self.stubs.set(space).map_err(|_| AlreadySet::Stubs)
    }

    /// Asks the shared budget, if any, to make room for `bytes` more resident bytes and
    /// reserves them until the returned [`Growth`] is dropped.
    pub fn before_growth(&self, bytes: usize) -> Option<Growth<'_>> {
        let p = self.pressure.get()?;
        p.reserve(self, bytes);
        Some(Growth { heap: self, bytes })
    }

    /// Installs the shared budget's hook (once).
    pub fn set_pressure(&self, p: std::sync::Arc<dyn AllocPressure>) -> Result<(), AlreadySet> {
        // What the runtime holds already is charged as it is: whoever adds this heap to
        // the budget reserves [`Heap::charged_bytes`] first.
        self.pressure.set(p).map_err(|_| AlreadySet::Pressure)
    }

    /// Bytes of this heap's objects that are in memory: live bytes less the bytes of
    /// stubbed objects whose pages were returned to the OS.
    pub fn resident_bytes(&self) -> usize {
        let out = self.stub_space().map_or(0, |s| s.out_bytes());
        self.in_use().saturating_sub(out as usize)
    }

    /// Bytes the runtime holds in memory for this heap besides its objects, as a kernel
    /// would count them: the handle table's touched pages and free list, and with
    /// swapping the stubs, their registry, the reclaim table and the swap layer's index
    /// ([`crate::stub::StubSpace::held_bytes`]).
    pub fn runtime_bytes(&self) -> usize {
        self.table.resident_bytes()
            + self.stub_space().map_or(0, |s| s.held_bytes())
            + self.chunks.held_bytes()
    }

    /// What this heap holds in memory in all: its resident objects
    /// ([`Heap::resident_bytes`]) and what the runtime holds for it
    /// ([`Heap::runtime_bytes`]), as a kernel would count them.
    pub fn accounted_bytes(&self) -> usize {
        self.resident_bytes() + self.runtime_bytes()
    }

    /// What a memory budget charges this heap: its resident objects and the charge of
    /// the runtime's holdings ([`Heap::runtime_charge`]), which covers
    /// [`Heap::runtime_bytes`] with up to a few [`RUNTIME_HEADROOM`]s to spare. Read in
    /// that order: a give-back that first raises the charge and then books the freed
    /// pages is never seen as a dip.
    pub fn charged_bytes(&self) -> usize {
        let resident = self.resident_bytes();
        resident + self.runtime.charged.load(Ordering::SeqCst)
    }

    /// Bytes the runtime's holdings are charged at.
    pub fn runtime_charge(&self) -> usize {
        self.runtime.charged.load(Ordering::SeqCst)
    }

    /// Announces that the runtime's holdings for this heap are about to grow by at most
    /// `more` bytes: when the charge does not cover what they hold, the growth and the
    /// headroom, it is raised first, in steps of [`RUNTIME_HEADROOM`], each reserved with
    /// the budget as an allocation is ([`Heap::before_growth`]). Keep the guard until the
    /// holdings count the growth. Must not be called with a lock held that the budget's
    /// making room may take (the same rule as an allocation).
    pub fn runtime_growth(&self, more: usize) -> RuntimeGrowth<'_> {
        let rc = &self.runtime;
        rc.pending.fetch_add(more, Ordering::SeqCst);
        loop {
            let step = {
                let _l = rc.lock.lock();
                let need = self.runtime_need();
                let have = rc.charged.load(Ordering::SeqCst);
                if need <= have {
                    break;
                }
                (need - have).next_multiple_of(RUNTIME_HEADROOM)
            };
            let reserved = self.before_growth(step);
            rc.charged.fetch_add(step, Ordering::SeqCst);
            drop(reserved);
        }
        RuntimeGrowth {
            heap: self,
            bytes: more,
        }
    }

    /// Raises the charge to cover the runtime's holdings again out of `freed` bytes this
    /// heap has given back and not yet booked (pages returned, objects freed): call it
    /// after the holdings grew and before the give-back is booked, so what the budget
    /// counts ends no higher than before. Takes at most `freed`; lowers the charge when
    /// the holdings shrank.
    pub fn absorb_runtime_growth(&self, freed: usize) {
        let rc = &self.runtime;
        let _l = rc.lock.lock();
        let need = self.runtime_need();
        let have = rc.charged.load(Ordering::SeqCst);
        if need > have {
            let step = (need - have).next_multiple_of(RUNTIME_HEADROOM).min(freed);
            rc.charged.fetch_add(step, Ordering::SeqCst);
        } else if have > need.next_multiple_of(RUNTIME_HEADROOM) + RUNTIME_HEADROOM {
            // The holdings shrank (stubs freed): so does the charge.
            rc.charged
                .store(need.next_multiple_of(RUNTIME_HEADROOM), Ordering::SeqCst);
        }
    }

    /// What the charge must cover: the holdings, the growth announced and the headroom.
    fn runtime_need(&self) -> usize {
        self.runtime.pending.load(Ordering::SeqCst) + self.runtime_bytes() + RUNTIME_HEADROOM
    }

    /// Lowers the charge when it is more than a headroom above what it must cover.
    fn trim_runtime_charge(&self) {
        let rc = &self.runtime;
        let _l = rc.lock.lock();
        let target = self.runtime_need().next_multiple_of(RUNTIME_HEADROOM);
        let have = rc.charged.load(Ordering::SeqCst);
        if have > target + RUNTIME_HEADROOM {
            rc.charged.store(target, Ordering::SeqCst);
        }
    }

    /// The stub space, when swapping is enabled.
    #[inline]
    pub fn stub_space(&self) -> Option<&crate::stub::StubSpace> {
        self.stubs.get()
    }

    pub fn config(&self) -> &HeapConfig {
        &self.config
    }

    pub fn table(&self) -> &HandleTable {
        &self.table
    }

    /// Where the small-object space's pages are: each chunk's address and length.
    pub fn small_ranges(&self) -> Vec<(usize, usize)> {
        self.small.ranges()
    }

    /// Bytes of the small-object space's current chunk never handed out.
    pub fn small_untouched_bytes(&self) -> usize {
        self.small.untouched_bytes()
    }

    pub fn large_space(&self) -> &LargeSpace {
        &self.large
    }

    /// Whether allocating `bytes` now should be preceded by a collection.
    #[inline]
    pub fn gc_need(&self, bytes: usize) -> GcNeed {
        let since = self.counters.since_gc.load(Ordering::Relaxed);
        if since + bytes > self.gc_trigger.load(Ordering::Relaxed) {
            return GcNeed::Collect;
        }
        match self.config.limit {
            Some(limit) if self.counters.in_use.load(Ordering::Relaxed) + bytes > limit => {
                GcNeed::Collect
            }
            _ => GcNeed::None,
        }
    }

    /// Whether `bytes` more would pass the heap limit now.
    pub fn over_limit(&self, bytes: usize) -> bool {
        match self.config.limit {
            Some(limit) => self.counters.in_use.load(Ordering::Relaxed) + bytes > limit,
            None => false,
        }
    }

    /// Whether `bytes` more do not fit under the heap limit even beside only what the
    /// last collection found live: out of memory. Asked after a collection instead of
    /// [`Heap::over_limit`]: the other threads run again as soon as the world restarts
    /// and may have filled the heap with new garbage before the collecting thread looks,
    /// which is no reason to fail it.
    pub fn full_after_gc(&self, bytes: usize) -> bool {
        match self.config.limit {
            Some(limit) => self.live_after_gc.load(Ordering::Relaxed) + bytes > limit,
            None => false,
        }
    }

    /// Allocates a zeroed object. Collection policy is the caller's (see [`Heap::gc_need`]).
    pub fn alloc(
        &self,
        kind: ObjKind,
        class: u32,
        len: u32,
        nrefs: u16,
    ) -> Result<Handle, AllocError> {
        let raw = HEADER_BYTES + kind.payload_bytes(len);
        let stub_now = raw >= LARGE_OBJECT_BYTES
            && self.stubs.get().is_some_and(|s| {
                s.stub_on_alloc.load(Ordering::Relaxed) && s.hooks.stub_at_allocation(kind, raw)
            });
        // Held until `in_use` (and the stub space, for a stub) counts the object, at the end.
        let stubbing = if stub_now {
            let ref_words = match kind {
                ObjKind::Instance => nrefs as usize,
                ObjKind::RefArray => len as usize,
                _ => 0,
            };
            crate::stub::stubbing_bytes(ref_words)
        } else {
            0
        };
        // The runtime's holdings grow with a stub, and by a page of the handle table
        // when fresh handles reach a new one: charged first, as the object is.
        let table_page = self.table.fresh_page_near();
        let _runtime = (stubbing > 0 || table_page)
            .then(|| self.runtime_growth(stubbing + if table_page { PAGE } else { 0 }));
        let _growth = self.before_growth(footprint(kind, len));
        let (addr, size) = if raw >= LARGE_OBJECT_BYTES {
            (self.large.alloc(raw)?, large_space::page_round(raw))
        } else {
            let size = small_space::block_size(raw);
            (self.small.alloc(size)?, size)
        };
        // SAFETY: `addr` is fresh, zeroed, 16-byte aligned memory of at least `raw` bytes
        // that nothing else references yet.
        unsafe { write_header(addr, kind, class, len, nrefs) };
        let h = match self.table.allocate(addr as u64) {
            Ok(h) => h,
            Err(e) => {
                // SAFETY: the object was never published; give its memory back.
                unsafe { self.release_memory(addr, raw) };
                return Err(e.into());
            }
        };
        if stub_now {
            // SAFETY: the handle is not published yet: no other thread can reach it.
            unsafe { self.stub_object(h) }.map_err(|_| AllocError::OutOfMemory)?;
        }
        let c = &self.counters;
        c.allocations.fetch_add(1, Ordering::Relaxed);
        c.bytes_allocated.fetch_add(size as u64, Ordering::Relaxed);
        c.since_gc.fetch_add(size, Ordering::Relaxed);
        if raw >= LARGE_OBJECT_BYTES {
            c.large_allocated.fetch_add(size as u64, Ordering::Relaxed);
        }
        c.raise_peak(c.in_use.fetch_add(size, Ordering::Relaxed) + size);
        Ok(h)
    }

    /// Allocates a zeroed small object from `buf` alone, if the buffer has a block, a
    /// handle and allowance for it: no lock, no atomic read-modify-write. `None` sends
    /// the caller to [`Heap::alloc_buffered`] (after any collection it wants).
    #[inline(always)]
    pub fn alloc_fast(
        &self,
        buf: &mut AllocBuffer,
        kind: ObjKind,
        class: u32,
        len: u32,
        nrefs: u16,
    ) -> Option<Handle> {
        let raw = HEADER_BYTES + kind.payload_bytes(len);
        let size = small_space::block_size(raw);
        if raw >= LARGE_OBJECT_BYTES || size > buf.allowance {
            return None;
        }
        let idx = *buf.handles.last()?;
        let addr = buf.take_block(size)?;
        buf.handles.pop();
        debug_assert_eq!(buf.heap, self as *const Heap as usize);
        // SAFETY: `addr` is a fresh, zeroed, 16-byte aligned block of `size >= raw`
        // bytes that only this buffer held.
        unsafe { write_header(addr, kind, class, len, nrefs) };
        let h = self.table.publish(idx, addr as u64);
        buf.allowance -= size;
        buf.allocations += 1;
        buf.bytes += size as u64;
        Some(h)
    }

    /// Allocates a zeroed object for the thread owning `buf`: settles the buffer, refills
    /// it and allocates from it ([`Heap::alloc_fast`]); large objects, and every object of
    /// a heap with a limit or a shared budget, go through [`Heap::alloc`] (exact
    /// accounting, the budget asked first). Collection policy is the caller's: settle,
    /// then ask [`Heap::gc_need`].
    pub fn alloc_buffered(
        &self,
        buf: &mut AllocBuffer,
        kind: ObjKind,
        class: u32,
        len: u32,
        nrefs: u16,
    ) -> Result<Handle, AllocError> {
        self.settle(buf);
        let raw = HEADER_BYTES + kind.payload_bytes(len);
        if raw >= LARGE_OBJECT_BYTES || self.pressure.get().is_some() || self.config.limit.is_some()
        {
            return self.alloc(kind, class, len, nrefs);
        }
        self.bind(buf);
        let size = small_space::block_size(raw);
        if buf.handles.is_empty() {
            let n = alloc_buffer::BATCH_HANDLES;
            // The runtime's holdings grow by a page of the table when fresh handles reach
            // one: charged first, as in `alloc`.
            let _runtime = self
                .table
                .reserve_touches_page(n)
                .then(|| self.runtime_growth(PAGE));
            self.table.reserve(n, &mut buf.handles)?;
        }
        if !buf.has_block(size) {
            let class = size / small_space::GRAIN;
            let gen = self.small.free_gen();
            if gen != buf.empty_gen {
                buf.empty = Default::default();
                buf.empty_gen = gen;
            }
            let found = self.small.refill(buf, size, buf.known_empty(class))?;
            if !found {
                buf.mark_empty(class);
            }
        }
        // The grant: charged to `in_use` whole, so `in_use` never counts less than the
        // live objects; the peak is taken before it, from exact figures.
        let c = &self.counters;
        c.raise_peak(c.in_use.load(Ordering::Relaxed));
        let grant = alloc_buffer::GRANT;
        c.in_use.fetch_add(grant, Ordering::Relaxed);
        buf.allowance = grant;
        self.alloc_fast(buf, kind, class, len, nrefs)
            .ok_or(AllocError::OutOfMemory)
    }

    /// Books what `buf` allocated since it last settled into the heap's counters and
    /// gives back its unused allowance: afterwards the counters are exact for this
    /// thread. Cheap when there is nothing to book.
    pub fn settle(&self, buf: &mut AllocBuffer) {
        let c = &self.counters;
        if buf.allocations > 0 {
            c.allocations.fetch_add(buf.allocations, Ordering::Relaxed);
            c.bytes_allocated.fetch_add(buf.bytes, Ordering::Relaxed);
            c.since_gc.fetch_add(buf.bytes as usize, Ordering::Relaxed);
            buf.allocations = 0;
            buf.bytes = 0;
        }
        if buf.allowance > 0 {
            let now = c.in_use.fetch_sub(buf.allowance, Ordering::Relaxed) - buf.allowance;
            buf.allowance = 0;
            c.raise_peak(now);
        }
    }

    /// Settles `buf` and gives back the memory and handles it holds (its thread exits).
    pub fn retire(&self, buf: &mut AllocBuffer) {
        self.settle(buf);
        if buf.heap == 0 {
            return;
        }
        self.bind(buf);
        self.small.give_back(buf);
        self.table.unreserve(buf.handles.drain(..));
        buf.empty = Default::default();
        buf.heap = 0;
    }

    /// Binds a buffer to this heap on its first refill.
    fn bind(&self, buf: &mut AllocBuffer) {
        let me = self as *const Heap as usize;
        assert!(
            buf.heap == 0 || buf.heap == me,
            "an allocation buffer is used with one heap only"
        );
        buf.heap = me;
    }

    /// The object behind a handle entry that is not a stub, without any barrier: for the
    /// collector and the runtime itself.
    ///
    /// # Safety
    /// The handle must be live and its object resident and not moved for `'h`: in
    /// practice, the world is stopped or the caller is a mutator between safepoints.
    #[inline(always)]
    pub unsafe fn raw_object(&self, h: Handle) -> Option<Obj<'_>> {
        let e = self.table.entry(h).load(Ordering::Acquire);
        if e == 0 || e & ENTRY_STUB != 0 {
            return None;
        }
        // SAFETY: a non-stub entry holds a live object's address; the caller
        // guarantees it stays valid.
        Some(unsafe { Obj::from_addr(e as usize) })
    }

    /// Frees objects the collector found dead. Large objects' pages go back to the OS,
    /// neighbours together.
    ///
    /// # Safety
    /// No thread may hold or later use these handles: the world is stopped and the
    /// handles are unreachable.
    pub unsafe fn free(&self, dead: &[Handle]) {
        let mut runs = Vec::new();
        let mut small = Vec::new();
        let mut bytes = 0usize;
        let mut large = 0usize;
        for &h in dead {
            let e = self.table.entry(h).load(Ordering::Acquire);
            if e == 0 || e & ENTRY_STUB != 0 {
                continue;
            }
            // SAFETY: a live non-stub entry; the caller guarantees exclusivity.
            let obj = unsafe { Obj::from_addr(e as usize) };
            let raw = obj.size();
            if raw >= LARGE_OBJECT_BYTES {
                runs.push((e as usize, raw));
                bytes += large_space::page_round(raw);
                large += large_space::page_round(raw);
            } else {
                let size = small_space::block_size(raw);
                bytes += size;
                small.push((e as usize, size));
            }
        }
        self.small.free(small);
        self.large.free(&mut runs);
        self.table.release(dead.iter().copied());
        // The free list may have grown: charged out of what was just freed, before it
        // is booked.
        self.absorb_runtime_growth(bytes);
        self.account_freed(dead.len() as u64, bytes);
        self.counters
            .large_freed
            .fetch_add(large as u64, Ordering::Relaxed);
    }

    /// Books objects freed by a layer above (for example stubs and their objects).
    pub fn account_freed(&self, objects: u64, bytes: usize) {
        let c = &self.counters;
        c.objects_freed.fetch_add(objects, Ordering::Relaxed);
        c.bytes_freed.fetch_add(bytes as u64, Ordering::Relaxed);
        c.in_use.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// # Safety
    /// `addr` must be memory from [`Heap::alloc`] of `raw` bytes that nothing uses.
    unsafe fn release_memory(&self, addr: usize, raw: usize) {
        if raw >= LARGE_OBJECT_BYTES {
            self.large.free(&mut [(addr, raw)]);
        } else {
            self.small.free([(addr, small_space::block_size(raw))]);
        }
    }

    /// Resets the allocation-volume trigger after a collection.
    pub fn collected(&self) {
        self.counters.since_gc.store(0, Ordering::Relaxed);
        self.live_after_gc.store(self.in_use(), Ordering::Relaxed);
        let c = &self.config;
        let next = (self.in_use() / 3).clamp(c.gc_min_free, c.gc_max_free.max(c.gc_min_free));
        self.gc_trigger.store(next, Ordering::Relaxed);
    }

    /// Live bytes now.
    pub fn in_use(&self) -> usize {
        self.counters.in_use.load(Ordering::Relaxed)
    }
}
