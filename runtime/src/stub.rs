//! Stubs: the indirection through which a swappable object is reached.
//!
//! When an app goes to the background, each candidate object gets a [`Stub`]: its handle
//! entry then points at the stub (tagged [`ENTRY_STUB`]), which holds where the object
//! lives, its reclaim-table entry and a copy of every reference the object holds. Large
//! objects already start on a page boundary in the large-object space, laid out address
//! ordered, so stubbing moves nothing and neighbours can be reclaimed in one call.
//!
//! An access through a stub ([`StubAccess`]) holds the entry's shared lock for the whole
//! access, faults the object in first when it is not resident (through the
//! [`StubHooks`] the swap layer installs), keeps the stub's reference copies current on
//! every reference store, and after a write marks the object dirty and its checkpoint
//! unclean while still holding the lock, so the reclaimer can never take an object whose
//! checkpoint is stale.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::access::{AccessError, AccessKind};
use crate::header::{HeaderBits, ObjKind};
use crate::heap::{Handle, HandleMap, Heap, ENTRY_STUB};
use crate::object::Obj;
use crate::reclaim_table::{
    EntryError, EntryFault, EntryFlags, EntryId, ReclaimTable, SharedGuard,
};
pub use crate::stub_bits::StubBits;

pub use crate::access::FaultError;

/// Why an object could not be stubbed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StubError {
    #[error("swapping is not enabled for this heap")]
    NotEnabled,
    #[error(transparent)]
    TableFull(#[from] crate::reclaim_table::TableFull),
}

/// What the swap layer does for stubs: the runtime knows stubs, not swap files.
pub trait StubHooks: Send + Sync {
    /// Reads the object's checkpoint back into its pages (header and payload). Called
    /// with the entry locked shared and the stub's state locked. It may read other
    /// objects of `space` that are out along with it (read-ahead), each under its own
    /// entry's shared lock and state lock, taken without waiting, and finished with
    /// [`StubSpace::finish_restore`]; the faulting object itself the caller finishes.
    fn fault_in(
        &self,
        space: &StubSpace,
        stub: &Stub,
        state: &mut StubState,
    ) -> Result<(), FaultError>;
    /// At most how many bytes one fault brings back (itself and its read-ahead), asked
    /// of the memory budget before the fault.
    fn fault_bytes(&self, stub: &Stub) -> usize {
        crate::heap::large_space::page_round(stub.bytes())
    }
    /// The stub died: release its swap slot. Called with the stub's state locked.
    fn freed(&self, stub: &Stub, state: &mut StubState);
    /// What the swap layer found wrong with the object when it marked it damaged
    /// ([`StubBits::set_damaged`]; a piece of its checkpoint that failed its check while
    /// its pages came back), if it was the swap layer that did.
    fn damage(&self, _stub: &Stub) -> Option<FaultError> {
        None
    }
    /// Bytes the swap layer holds in memory for this app (its swap file's index, for
    /// example), counted with what the runtime holds ([`StubSpace::held_bytes`]).
    fn held_bytes(&self) -> usize {
        0
    }
    /// Whether an object with these access histories is cold (the policy's call).
    fn is_cold(&self, read_history: u8, write_history: u8) -> bool;
    /// Whether a new object of this kind and size gets a stub at allocation while
    /// [`StubSpace::stub_on_alloc`] is on (the policy's call).
    fn stub_at_allocation(&self, kind: ObjKind, size_bytes: usize) -> bool;
}

/// Mutable state of a stub, under its lock: the saver, faults and the collector's
/// freeing take it in turn. One word, so that the lock and its state take 16 bytes: bit 0
/// says the stub was freed, the bits above hold the swap-file slot plus one (0: none).
#[derive(Debug, Default)]
pub struct StubState {
    word: u64,
}

/// The largest swap-file slot a [`StubState`] holds (a file offset: far above any file).
pub const MAX_SLOT: u64 = (u64::MAX >> 1) - 1;

impl StubState {
    /// The swap-file slot of the object's checkpoint, once saved.
    pub fn slot(&self) -> Option<u64> {
        (self.word >> 1).checked_sub(1)
    }

    /// Sets (or clears) the slot. A slot above [`MAX_SLOT`] is a bug in the swap layer
    /// (file offsets never get there) and panics.
    pub fn set_slot(&mut self, slot: Option<u64>) {
        let v = match slot {
            Some(s) => {
                assert!(s <= MAX_SLOT, "swap-file slot {s} out of range");
                s + 1
            }
            None => 0,
        };
        self.word = v << 1 | (self.word & 1);
    }

    /// Clears the slot, returning what it was.
    pub fn take_slot(&mut self) -> Option<u64> {
        let slot = self.slot();
        self.set_slot(None);
        slot
    }

    /// The stub was freed; nothing may touch the object any more.
    pub fn is_dead(&self) -> bool {
        self.word & 1 == 1
    }

    /// Marks the stub freed (for good).
    pub fn set_dead(&mut self) {
        self.word |= 1;
    }
}

/// The stub of one object. Its size follows the object's shape: every stub holds the
/// header's shape fields (from which the object's size follows) and its state in 56
/// bytes, and only an object with reference words has a second allocation, with a copy
/// of each (see [`stub_bytes`]).
#[derive(Debug)]
pub struct Stub {
    pub handle: Handle,
    pub entry: EntryId,
    /// Address of the object's header.
    pub addr: usize,
    /// The header's shape fields, to rebuild the header when the object comes back.
    pub class: u32,
    pub len: u32,
    pub nrefs: u16,
    pub kind: ObjKind,
    /// What the app alone knows of the object: the collector's mark, whether its
    /// checkpoint is current, whether it was found damaged ([`StubBits`]).
    pub bits: StubBits,
    /// Copies of the object's reference words (instances: leading slots), behind one
    /// thin pointer: none for objects without references (most large objects are
    /// arrays of data).
    refs: Option<Box<RefCopies>>,
    pub state: Mutex<StubState>,
}

/// The reference copies of a stub whose object holds references.
#[derive(Debug)]
struct RefCopies(Box<[AtomicU64]>);

impl Stub {
    /// Bytes of the object (header and payload), from its shape.
    pub fn bytes(&self) -> usize {
        crate::header::HEADER_BYTES + self.kind.payload_bytes(self.len)
    }

    /// Copies of the object's reference words (empty for objects without references).
    pub fn refs(&self) -> &[AtomicU64] {
        self.refs.as_deref().map_or(&[], |r| &r.0)
    }

    /// The object, whether resident or not.
    ///
    /// # Safety
    /// The object must be resident and the caller must keep it so (hold the entry's
    /// shared lock, or be the reclaim-free owner of the stub).
    pub unsafe fn object(&self) -> Obj<'_> {
        // SAFETY: the caller guarantees the object's memory holds the object.
        unsafe { Obj::from_addr(self.addr) }
    }

    /// Copies the reference copies back into a freshly restored object.
    ///
    /// # Safety
    /// The object must be resident, with the entry locked shared and the state locked.
    pub unsafe fn restore_refs(&self) {
        // SAFETY: forwarded contract.
        let obj = unsafe { self.object() };
        for (w, r) in obj.ref_words().iter().zip(self.refs()) {
            w.store(r.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}

/// Counters of stub activity.
#[derive(Debug, Default)]
pub struct StubCounters {
    pub stubbed_objects: AtomicU64,
    pub stubbed_bytes: AtomicU64,
    pub faults: AtomicU64,
    pub fault_bytes: AtomicU64,
    /// Faults that happened while a collection was running (must stay 0).
    pub gc_faults: AtomicU64,
}

/// The stub registry held by [`StubSpace::registry`].
pub struct Registry<'a>(parking_lot::MutexGuard<'a, HandleMap<Arc<Stub>>>);

impl Registry<'_> {
    /// The stub of `h`, if it has one.
    pub fn get(&self, h: Handle) -> Option<&Stub> {
        self.0.get(&h).map(|s| &**s)
    }
}

/// Everything a heap needs once swapping is on.
pub struct StubSpace {
    pub table: ReclaimTable,
    pub hooks: Arc<dyn StubHooks>,
    stubs: Mutex<HandleMap<Arc<Stub>>>,
    pub counters: StubCounters,
    /// A collection is running (faults now would be GC faults).
    pub collecting: AtomicBool,
    /// Whether the collector bookmarks stubs (Marvin) or reads objects, faulting them in
    /// (page-granular swapping, as a kernel swap file gives).
    pub bookmarking: bool,
    /// Bytes of stubbed objects not resident now, less those a reclaimer in another
    /// process took (booked in the table's header): it wraps below zero when such
    /// objects come back, and [`StubSpace::out_bytes`] adds the header's count back.
    out_bytes: AtomicU64,
    /// Give new objects stubs as they are allocated, when [`StubHooks::stub_at_allocation`]
    /// says so: in the background (objects made there are candidates like the rest), and
    /// always for page-granular swapping, where every page run is a candidate.
    pub stub_on_alloc: AtomicBool,
    /// Where the reclaimer's next scan of the table starts (a clock hand).
    pub reclaim_hand: std::sync::atomic::AtomicU32,
    /// Told of every object fault: (handle, start and end in trace-clock ns, bytes).
    pub fault_observer: std::sync::OnceLock<FaultObserver>,
    /// Bytes of the live stubs themselves ([`stub_bytes`] each).
    stub_bytes: AtomicU64,
    /// Bytes of the registry's table (its capacity), as of its last change.
    registry_bytes: AtomicU64,
    /// The first entry that failed its checks: from then on the table is not trusted,
    /// and every entry is refused at once (no more bounded waits, one per entry).
    pub(crate) distrusted: std::sync::OnceLock<String>,
    /// Why each object the runtime found damaged is ([`StubSpace::record_damage`]), by
    /// handle.
    pub(crate) damage: Mutex<HandleMap<String>>,
}

/// Bytes the registry of stubs takes per slot of its capacity: a handle and a pointer,
/// plus the hash table's control byte.
const REGISTRY_SLOT_BYTES: usize = std::mem::size_of::<(Handle, Arc<Stub>)>() + 1;

/// Bytes the native allocator takes for an allocation of `n` bytes: glibc's chunk, the
/// request and an 8-byte size word rounded up to 16, at least 32.
pub const fn malloc_bytes(n: usize) -> usize {
    let chunk = (n + 8 + 15) & !15;
    if chunk < 32 {
        32
    } else {
        chunk
    }
}

/// Bytes one stub with `nrefs` reference copies takes on the native heap, by the
/// allocator's chunks: its shared allocation with the counts (the same for every
/// object), and only when the object holds references, the copies behind one pointer.
/// Not counting its registry slot.
pub fn stub_bytes(nrefs: usize) -> usize {
    let own = malloc_bytes(std::mem::size_of::<Stub>() + 2 * std::mem::size_of::<usize>());
    if nrefs == 0 {
        own
    } else {
        own + malloc_bytes(std::mem::size_of::<RefCopies>()) + malloc_bytes(nrefs * 8)
    }
}

/// At most how many bytes stubbing one object with `nrefs` reference copies adds to
/// what the runtime holds (the stub, registry slots as the registry doubles, its
/// reclaim-table entry): what a growth reservation asks for before stubbing.
pub fn stubbing_bytes(nrefs: usize) -> usize {
    stub_bytes(nrefs) + 2 * REGISTRY_SLOT_BYTES + crate::reclaim_table::ENTRY_BYTES
}

/// A callback for object faults (for traces).
pub type FaultObserver = Box<dyn Fn(u64, u64, u64, u64) + Send + Sync>;

impl StubSpace {
    pub fn new(table: ReclaimTable, hooks: Arc<dyn StubHooks>, bookmarking: bool) -> StubSpace {
        StubSpace {
            table,
            hooks,
            stubs: Mutex::new(HandleMap::default()),
            counters: StubCounters::default(),
            collecting: AtomicBool::new(false),
            bookmarking,
            out_bytes: AtomicU64::new(0),
            stub_on_alloc: AtomicBool::new(false),
            fault_observer: std::sync::OnceLock::new(),
            reclaim_hand: std::sync::atomic::AtomicU32::new(0),
            stub_bytes: AtomicU64::new(0),
            registry_bytes: AtomicU64::new(0),
            distrusted: std::sync::OnceLock::new(),
            damage: Mutex::new(HandleMap::default()),
        }
    }

    /// Bytes the runtime holds in memory for this app's swapping, as a kernel would
    /// count them: the stubs, the registry that finds them, the reclaim table's touched
    /// pages and free list, and what the swap layer holds ([`StubHooks::held_bytes`]).
    pub fn held_bytes(&self) -> usize {
        self.stub_bytes.load(Ordering::Relaxed) as usize
            + self.registry_bytes.load(Ordering::Relaxed) as usize
            + self.table.resident_bytes()
            + self.hooks.held_bytes()
    }

    /// At most how many bytes the registry grows by when `more` stubs join it (its
    /// table doubles when full).
    pub fn registry_growth(&self, more: usize) -> usize {
        let stubs = self.stubs.lock();
        let (len, cap) = (stubs.len(), stubs.capacity());
        if len + more <= cap {
            0
        } else {
            // Doubling until it fits, as the hash table grows, and its control bytes.
            (len + more).next_power_of_two().max(2 * cap) * 2 * REGISTRY_SLOT_BYTES
        }
    }

    /// Books the registry's size after a change, under its lock.
    fn registry_changed(&self, stubs: &HandleMap<Arc<Stub>>) {
        let bytes = (stubs.capacity() * REGISTRY_SLOT_BYTES) as u64;
        self.registry_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Bytes of stubbed objects whose pages are not in memory now.
    pub fn out_bytes(&self) -> u64 {
        let (outside, _) = self.table.reclaimed_out();
        self.out_bytes.load(Ordering::Relaxed).wrapping_add(outside)
    }

    /// Books pages returned to the OS by a reclaim (or a swap-out).
    pub fn went_out(&self, bytes: u64) {
        self.out_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The stub of a handle, if it has one.
    pub fn get(&self, h: Handle) -> Option<Arc<Stub>> {
        self.stubs.lock().get(&h).cloned()
    }

    /// The registry, held until the returned view is dropped: many look-ups in a row
    /// without taking its lock (or a reference count) for each.
    pub fn registry(&self) -> Registry<'_> {
        Registry(self.stubs.lock())
    }

    /// The stubs of several handles, looked up under one hold of the registry, each
    /// with the value given along with its handle; handles without a stub are left out.
    pub fn get_many<T>(
        &self,
        handles: impl IntoIterator<Item = (Handle, T)>,
    ) -> Vec<(Arc<Stub>, T)> {
        let stubs = self.stubs.lock();
        handles
            .into_iter()
            .filter_map(|(h, t)| Some((stubs.get(&h)?.clone(), t)))
            .collect()
    }

    /// Every live stub (a snapshot).
    pub fn all(&self) -> Vec<Arc<Stub>> {
        self.stubs.lock().values().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.stubs.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Faults `stub`'s object in if it is out (an object fault when `fault`, else an
    /// eager restore). The caller holds the entry shared.
    fn ensure_resident(&self, stub: &Stub, fault: bool) -> Result<(), AccessError> {
        let entry = self.table.entry(stub.entry);
        if entry.is_resident() {
            return Ok(());
        }
        let mut st = stub.state.lock();
        if entry.is_resident() {
            return Ok(());
        }
        if st.is_dead() {
            return Err(AccessError::Dangling(stub.handle.value()));
        }
        // What the app alone knows, against the table's word that the object is out.
        self.check_restorable(stub, st.slot().is_some())?;
        let t0 = self
            .fault_observer
            .get()
            .map(|_| crate::trace::Tracer::now_ns());
        self.hooks
            .fault_in(self, stub, &mut st)
            .map_err(|reason| AccessError::Fault {
                handle: stub.handle.value(),
                reason,
            })?;
        // Before RESIDENT is set, so no new access can have begun meanwhile.
        self.check_restored(stub)?;
        // SAFETY: the checkpoint was just read back; the entry is locked shared and
        // the state locked, so nothing else touches the object.
        unsafe { self.finish_restore(stub) };
        let c = &self.counters;
        if fault {
            c.faults.fetch_add(1, Ordering::Relaxed);
            c.fault_bytes
                .fetch_add(stub.bytes() as u64, Ordering::Relaxed);
            if let (Some(obs), Some(t0)) = (self.fault_observer.get(), t0) {
                obs(
                    stub.handle.value(),
                    t0,
                    crate::trace::Tracer::now_ns(),
                    stub.bytes() as u64,
                );
            }
        }
        if self.collecting.load(Ordering::Relaxed) {
            c.gc_faults.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Finishes bringing an object back once its checkpoint is in its pages: copies the
    /// references in from the stub, marks the entry resident and books the bytes.
    ///
    /// # Safety
    /// The object's header and payload must have just been read back, with its entry
    /// locked shared and its stub's state locked (so nothing else touches it).
    pub unsafe fn finish_restore(&self, stub: &Stub) {
        // SAFETY: forwarded contract.
        unsafe { stub.restore_refs() };
        self.table
            .entry(stub.entry)
            .lock()
            .insert_flags(EntryFlags::RESIDENT);
        self.out_bytes.fetch_sub(
            crate::heap::large_space::page_round(stub.bytes()) as u64,
            Ordering::Relaxed,
        );
    }

    /// Takes `stub`'s reclaim-table entry shared (a bounded wait) and checks it against
    /// what the stub knows of the object: its address, its size, its owner and flags that
    /// can coexist (see [`SharedGuard::check`]). The table is shared memory; an entry
    /// that fails is an error naming the object, and nothing is done to it. After the
    /// first failure the table as a whole is distrusted: every entry fails at once. (A
    /// stub freed meanwhile fails with [`EntryError::Freed`], which distrusts nothing.)
    /// The caller must not hold the stub's state lock.
    pub fn lock_entry(&self, stub: &Stub) -> Result<SharedGuard<'_>, EntryFault> {
        let fault = |reason| EntryFault {
            table: self.table.describe(),
            id: stub.entry,
            object: stub.handle.value(),
            reason,
        };
        if let Some(first) = self.distrusted.get() {
            return Err(fault(EntryError::Distrusted(first.clone())));
        }
        let size = crate::heap::large_space::page_round(stub.bytes()) as u64;
        let checked = self
            .table
            .entry(stub.entry)
            .lock_shared()
            .and_then(|guard| {
                guard.check(stub.addr as u64, size, stub.handle.value())?;
                Ok(guard)
            });
        checked.map_err(|reason| {
            // A stub that died meanwhile (a snapshot of the registry outlived it) has its
            // entry emptied, or already another object's: not the table's fault.
            if stub.state.lock().is_dead() {
                return fault(EntryError::Freed);
            }
            let fault = fault(reason);
            let _ = self.distrusted.set(fault.to_string());
            fault
        })
    }

    /// Faults `stub`'s object in as an object fault (a collector that does not bookmark
    /// reads objects, as a kernel's page-granular swap would make it).
    pub fn fault(&self, stub: &Stub) -> Result<(), AccessError> {
        let _g = self.lock_entry(stub).map_err(|e| table_fault(stub, e))?;
        self.ensure_resident(stub, true)
    }

    /// Faults `stub`'s object in (an eager restore), holding its entry meanwhile.
    pub fn restore(&self, stub: &Stub) -> Result<bool, AccessError> {
        let entry = self.table.entry(stub.entry);
        let _g = self.lock_entry(stub).map_err(|e| table_fault(stub, e))?;
        let was_out = !entry.is_resident();
        self.ensure_resident(stub, false)?;
        Ok(was_out)
    }
}

/// An access error for an entry that failed its checks (a dangling reference when the
/// object was freed meanwhile, as a fault of a dead stub reports it).
fn table_fault(stub: &Stub, e: EntryFault) -> AccessError {
    if e.reason == EntryError::Freed {
        return AccessError::Dangling(stub.handle.value());
    }
    AccessError::Fault {
        handle: stub.handle.value(),
        reason: Box::new(e),
    }
}

/// The shared hold on a stub's reclaim-table entry for the length of one access.
pub struct StubAccess<'h> {
    obj: Obj<'h>,
    stub: &'h Stub,
    space: &'h StubSpace,
    guard: SharedGuard<'h>,
    write: bool,
    /// [`StubAccess::check`] was called.
    checked: std::cell::Cell<bool>,
    /// This thread's count of damaged touches when the access began.
    touch_damage: u32,
}

impl<'h> StubAccess<'h> {
    /// Resolves a stubbed handle entry `e` of `h` for one access.
    pub(crate) fn enter(
        heap: &'h Heap,
        h: Handle,
        e: u64,
        kind: AccessKind,
        barrier: bool,
    ) -> Result<StubAccess<'h>, AccessError> {
        let Some(space) = heap.stub_space() else {
            return Err(AccessError::Dangling(h.value()));
        };
        // SAFETY: a stub-tagged entry points at a stub kept alive by the stub space's
        // registry; stubs are only freed by a collection, with mutators stopped.
        let stub: &'h Stub = unsafe { &*((e & !ENTRY_STUB) as *const Stub) };
        let entry = space.table.entry(stub.entry);
        // Reading the object back takes memory, as a swap-in does: ask the budget first,
        // before holding anything, and keep the room reserved until the object (and what
        // was read ahead with it) is counted as resident again.
        let growth = (!entry.is_resident())
            .then(|| heap.before_growth(space.hooks.fault_bytes(stub)))
            .flatten();
        let guard = space.lock_entry(stub).map_err(|e| table_fault(stub, e))?;
        if stub.bits.is_damaged() {
            return Err(space.damage_error(stub));
        }
        space.ensure_resident(stub, true)?;
        drop(growth);
        // SAFETY: resident, and the shared lock keeps the reclaimer away.
        let obj = unsafe { stub.object() };
        space.check_pages_there(stub, obj)?;
        let write = kind == AccessKind::Write;
        if write {
            // Before the write: a restore the table asked for wrongly (a RESIDENT bit
            // cleared under a live object) that is still reading sees it.
            stub.bits.clear_current();
            // Always, even without barriers: the checkpoint protocol depends on it.
            obj.header().set(HeaderBits::WRITE | HeaderBits::DIRTY);
        } else if barrier {
            obj.header().ensure(HeaderBits::READ);
        }
        Ok(StubAccess {
            obj,
            stub,
            space,
            guard,
            write,
            checked: std::cell::Cell::new(false),
            touch_damage: crate::stub_bits::damage_on_this_thread(),
        })
    }

    /// Whether the object turned out damaged during the access (a page of it that came
    /// back a page run at a time, [`StubHooks::damage`], failed its check): the access's
    /// bytes are not the object's then, and the caller must report this error instead
    /// of using them. Call it after the last touch of the object's payload; an access
    /// dropped unchecked whose own touch found the object damaged ends the process
    /// (`Drop`).
    #[inline]
    pub(crate) fn check(&self) -> Result<(), AccessError> {
        self.checked.set(true);
        if self.stub.bits.is_damaged() {
            return Err(self.space.damage_error(self.stub));
        }
        Ok(())
    }

    pub(crate) fn obj(&self) -> Obj<'h> {
        self.obj
    }

    pub(crate) fn update_ref_copy(&self, word: usize, value: u64) {
        if let Some(r) = self.stub.refs().get(word) {
            r.store(value, Ordering::Relaxed);
        }
    }
}

impl Drop for StubAccess<'_> {
    fn drop(&mut self) {
        if self.write {
            // After the write and still under the shared lock: the object is dirty and
            // its checkpoint stale, before any reclaimer can look at the entry again.
            self.obj.header().set(HeaderBits::DIRTY);
            self.guard.entry().lock().remove_flags(EntryFlags::CLEAN);
            // And in the app's own record, which the table's CLEAN only publishes.
            self.stub.bits.clear_current();
        }
        if !self.checked.get()
            && crate::stub_bits::damage_on_this_thread() != self.touch_damage
            && self.stub.bits.is_damaged()
        {
            // A touch of this access found the object damaged and its caller never asked
            // whether its bytes were the object's: it must not go on with them. (A damage
            // another thread found is reported by this access's `check`, or by the next
            // access.)
            self.space.die_unchecked(self.stub);
        }
    }
}

impl Heap {
    /// Turns the object behind `h` into a stubbed object: registers a reclaim-table entry
    /// and redirects the handle to the stub. Objects under the large-object size (not on
    /// their own pages), objects marked NO_SWAP and objects already stubbed are refused
    /// (returns `Ok(false)`); which kinds are candidates is the policy's call.
    ///
    /// # Safety
    /// The app's mutators must be stopped, or `h` not yet published to any thread.
    pub unsafe fn stub_object(&self, h: Handle) -> Result<bool, StubError> {
        let Some(space) = self.stub_space() else {
            return Err(StubError::NotEnabled);
        };
        // SAFETY: mutators are stopped, the handle is live.
        let Some(obj) = (unsafe { self.raw_object(h) }) else {
            return Ok(false);
        };
        if obj.size() < crate::heap::LARGE_OBJECT_BYTES
            || obj.header().bits().contains(HeaderBits::NO_SWAP)
        {
            return Ok(false);
        }
        let bytes = obj.size();
        let entry = space.table.insert(
            obj.addr() as u64,
            crate::heap::large_space::page_round(bytes) as u64,
            h.value(),
        )?;
        space
            .table
            .entry(entry)
            .lock()
            .insert_flags(EntryFlags::RESIDENT);
        let words = obj.ref_words();
        let refs = (!words.is_empty()).then(|| {
            Box::new(RefCopies(
                words
                    .iter()
                    .map(|w| AtomicU64::new(w.load(Ordering::Relaxed)))
                    .collect(),
            ))
        });
        let stub = Arc::new(Stub {
            handle: h,
            entry,
            addr: obj.addr(),
            kind: obj.kind(),
            class: obj.header().class,
            len: obj.len(),
            nrefs: obj.header().nrefs,
            refs,
            bits: StubBits::new(),
            state: Mutex::new(StubState::default()),
        });
        obj.header().set(HeaderBits::STUB | HeaderBits::DIRTY);
        let ptr = Arc::as_ptr(&stub) as u64;
        debug_assert_eq!(ptr & ENTRY_STUB, 0);
        space
            .stub_bytes
            .fetch_add(stub_bytes(stub.refs().len()) as u64, Ordering::Relaxed);
        {
            let mut stubs = space.stubs.lock();
            stubs.insert(h, stub);
            space.registry_changed(&stubs);
        }
        self.table()
            .entry(h)
            .store(ptr | ENTRY_STUB, Ordering::Release);
        space
            .counters
            .stubbed_objects
            .fetch_add(1, Ordering::Relaxed);
        space
            .counters
            .stubbed_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
        Ok(true)
    }

    /// The stub behind a stub-tagged handle entry.
    ///
    /// # Safety
    /// `e` must be a stub-tagged entry read from this heap's table, and the stub must
    /// not be freed while the reference is used (mutators stopped, or a collection not
    /// running).
    pub unsafe fn stub_of_entry(&self, e: u64) -> &Stub {
        // SAFETY: forwarded contract.
        unsafe { &*((e & !ENTRY_STUB) as *const Stub) }
    }

    /// Frees dead stubs and their objects (the collector's sweep).
    ///
    /// # Safety
    /// The app's mutators must be stopped and the handles unreachable.
    pub unsafe fn free_stubs(&self, dead: &[Handle]) -> u64 {
        let Some(space) = self.stub_space() else {
            return 0;
        };
        let mut runs = Vec::new();
        let (mut bytes, mut out_freed) = (0u64, 0u64);
        for &h in dead {
            let Some(stub) = space.get(h) else {
                continue;
            };
            let entry = space.table.entry(stub.entry);
            // Keep the reclaimer out while the entry goes. An entry that fails its checks
            // (the shared table overwritten) cannot say whether a reclaimer still acts on
            // the object's pages: they are left where they are, never reused.
            let guard = space.lock_entry(&stub);
            let checked = guard.is_ok();
            {
                let mut st = stub.state.lock();
                st.set_dead();
                space.hooks.freed(&stub, &mut st);
                if stub.bits.is_damaged() {
                    // Its handle may name another object next.
                    space.damage.lock().remove(&h);
                }
                if checked {
                    if !entry.is_resident() {
                        out_freed += crate::heap::large_space::page_round(stub.bytes()) as u64;
                    }
                    entry.lock().remove_flags(EntryFlags::RESIDENT);
                }
            }
            drop(guard);
            // Out of the registry only now that its slot is released: a compaction
            // (which holds the state of every stub it finds there) that missed a stub
            // still owning a live slot would move that slot without telling the stub,
            // and the late release would then free another object's checkpoint.
            {
                let mut stubs = space.stubs.lock();
                stubs.remove(&h);
                space.registry_changed(&stubs);
            }
            space
                .stub_bytes
                .fetch_sub(stub_bytes(stub.refs().len()) as u64, Ordering::Relaxed);
            let size = crate::heap::large_space::page_round(stub.bytes());
            if checked {
                let _ = space.table.remove(stub.entry);
                runs.push((stub.addr, size));
            }
            bytes += size as u64;
        }
        self.large_space().free(&mut runs);
        self.table().release(dead.iter().copied());
        // The free lists may have grown: charged out of what was just freed (the
        // resident part of it), before it is booked.
        self.absorb_runtime_growth((bytes - out_freed) as usize);
        self.account_freed(dead.len() as u64, bytes as usize);
        // Every stubbed object is a large one.
        self.counters
            .large_freed
            .fetch_add(bytes, Ordering::Relaxed);
        // Only now that the heap no longer counts them: resident bytes (in use less
        // out) never read higher than they are while the stubs go.
        space.out_bytes.fetch_sub(out_freed, Ordering::Relaxed);
        bytes
    }
}
