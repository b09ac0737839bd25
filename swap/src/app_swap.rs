//! One app's swap state: its swap file, its policy and its counters, and the
//! [`StubHooks`] the runtime calls to fault objects in and to free their slots.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use marvin_runtime::header::{HeaderBits, ObjHeader, ObjKind, HEADER_BYTES};
use marvin_runtime::heap::Heap;
use marvin_runtime::reclaim_table::ReclaimTable;
use marvin_runtime::stub::{Stub, StubHooks, StubSpace, StubState};
use parking_lot::Mutex;

use crate::policy::SwapPolicy;
use crate::swap_file::{SlotId, SwapError, SwapFile};

/// Counters of one app's swap activity.
#[derive(Debug, Default)]
pub struct SwapCounters {
    pub saved_objects: AtomicU64,
    pub saved_bytes: AtomicU64,
    /// Saves abandoned because a write raced the copy.
    pub save_races: AtomicU64,
    pub save_errors: AtomicU64,
    pub reclaimed_objects: AtomicU64,
    pub reclaimed_bytes: AtomicU64,
    pub restored_eager_objects: AtomicU64,
    pub restored_eager_bytes: AtomicU64,
    pub bytes_written: AtomicU64,
    pub bytes_read: AtomicU64,
    pub compactions: AtomicU64,
}

impl SwapCounters {
    /// Books objects whose pages were returned to the OS (a reclaim or a page-out).
    pub fn book_reclaim(&self, objects: u64, bytes: u64) {
        self.reclaimed_objects.fetch_add(objects, Ordering::Relaxed);
        self.reclaimed_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// The swap side of one app.
pub struct AppSwap {
    pub policy: Arc<dyn SwapPolicy>,
    pub file: Mutex<SwapFile>,
    pub counters: SwapCounters,
    /// The last swap error, for reports.
    pub last_error: Mutex<Option<String>>,
    /// Marvin's bookmarking collector, or the page-swap baseline.
    bookmarking: bool,
    /// An eager restore is reading many checkpoints: the file is checked once and its
    /// pages released once, at the end ([`AppSwap::batch`]).
    batch: std::sync::atomic::AtomicBool,
}

impl AppSwap {
    /// Creates the app's swap file and reclaim table in `dir` and enables stubs on
    /// `heap`.
    pub fn attach(
        heap: &Heap,
        dir: &Path,
        name: &str,
        policy: Arc<dyn SwapPolicy>,
        table_capacity: u32,
        bookmarking: bool,
    ) -> Result<Arc<AppSwap>, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let file = SwapFile::create(dir, name).map_err(|e| e.to_string())?;
        let table = ReclaimTable::create(&dir.join(format!("{name}.table")), table_capacity)
            .map_err(|e| e.to_string())?;
        let swap = Arc::new(AppSwap {
            policy,
            file: Mutex::new(file),
            counters: SwapCounters::default(),
            last_error: Mutex::new(None),
            bookmarking,
            batch: std::sync::atomic::AtomicBool::new(false),
        });
        heap.enable_stubs(StubSpace::new(table, swap.clone(), bookmarking))
            .map_err(|e| e.to_string())?;
        Ok(swap)
    }

    /// Runs `f` (many faults in a row, an eager restore) with the swap file checked once
    /// up front and its pages released once at the end instead of per checkpoint.
    pub fn batch<R>(&self, f: impl FnOnce() -> R) -> Result<R, SwapError> {
        self.file
            .lock()
            .check()
            .inspect_err(|e| self.record_error(e))?;
        self.batch.store(true, Ordering::Relaxed);
        let r = f();
        self.batch.store(false, Ordering::Relaxed);
        self.file.lock().release_all();
        Ok(r)
    }

    pub(crate) fn record_error(&self, e: &SwapError) {
        *self.last_error.lock() = Some(e.to_string());
    }
}

impl StubHooks for AppSwap {
    fn fault_in(&self, stub: &Stub, state: &mut StubState) -> Result<(), String> {
        let Some(slot) = state.slot else {
            return Err(format!("object {} has no checkpoint", stub.handle.value()));
        };
        let payload_len = stub.kind.payload_bytes(stub.len);
        // SAFETY: the object is not resident (its pages were dropped), the entry is
        // locked shared (no reclaimer) and the stub state locked (no saver, no other
        // fault): nothing else touches this memory, which is the object's own
        // page-aligned allocation of `stub.bytes` bytes; the checkpoint is read straight
        // into its payload.
        let payload = unsafe {
            std::slice::from_raw_parts_mut((stub.addr + HEADER_BYTES) as *mut u8, payload_len)
        };
        {
            let file = self.file.lock();
            let batch = self.batch.load(Ordering::Relaxed);
            let slot = SlotId::from_offset(slot);
            let read = if batch {
                file.read_checked(slot, stub.handle.value(), payload)
            } else {
                let r = file.read(slot, stub.handle.value(), payload);
                file.release_slot(slot);
                r
            };
            read.map_err(|e| {
                self.record_error(&e);
                e.to_string()
            })?;
        }
        let header = ObjHeader::new(stub.kind, stub.class, stub.len, stub.nrefs);
        // SAFETY: as above; the payload is in place, the header goes in front of it.
        unsafe { std::ptr::write(stub.addr as *mut ObjHeader, header) };
        // SAFETY: just written.
        let obj = unsafe { stub.object() };
        // It comes back as its checkpoint: saved and clean.
        obj.header().set(HeaderBits::STUB | HeaderBits::SAVED);
        self.counters
            .bytes_read
            .fetch_add(payload_len as u64, Ordering::Relaxed);
        Ok(())
    }

    fn freed(&self, _stub: &Stub, state: &mut StubState) {
        if let Some(slot) = state.slot.take() {
            let _ = self.file.lock().free(SlotId::from_offset(slot));
        }
    }

    fn is_cold(&self, read_history: u8, write_history: u8) -> bool {
        self.policy.is_cold(read_history, write_history)
    }

    fn stub_at_allocation(&self, kind: ObjKind, size_bytes: usize) -> bool {
        // Page-granular swapping (no bookmarking) takes every page run; Marvin only the
        // policy's candidates.
        !self.bookmarking || self.policy.is_candidate(kind, size_bytes)
    }
}
