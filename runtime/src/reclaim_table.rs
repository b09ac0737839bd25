//! The reclaim table: per app, a shared-memory array describing the objects a reclaimer may
//! take, and the lock that keeps the reclaimer and the app's threads apart.
//!
//! The runtime inserts one [`Entry`] per stubbed object (address, size in bytes, owner handle)
//! and maintains its flags ([`EntryFlags`]): OCCUPIED and RESIDENT, plus SAVED (a checkpoint
//! exists), CLEAN (the checkpoint is current) and COLD (the working-set estimator's verdict),
//! which the reclaimer reads to decide. Every access to a stubbed object holds the entry's
//! shared lock ([`Entry::lock_shared`], a wait bounded by [`LOCK_WAIT_LIMIT`]) and checks
//! the entry against what the runtime knows of the object ([`SharedGuard::check`]): the
//! table is shared memory, and what another process (or a stray write) left there is an
//! [`EntryFault`] naming the object, never a hang or a wrong object; a reclaimer takes an entry's exclusive lock with
//! [`Entry::try_lock_reclaimer`], which gives up at once on contention rather than wait on an
//! app thread, and then reclaims only an entry that [`ReclaimerGuard::is_reclaimable`].
//!
//! The table lives in a memory map: file-backed and shared ([`ReclaimTable::create`]) so that
//! another process can scan it through a [`ReclaimTableView`], or anonymous
//! ([`ReclaimTable::anonymous`]). The lock protocol itself is [`EntryLock`] (module `lock`),
//! written against the atomics of module `atomics` and model-checked by
//! `tests/loom_reclaim_table.rs` over `marvin-sync`'s loom atomics; the map and its one unsafe
//! cast are in module `table`.
//!
//! A reclaimer's loop, in short:
//!
//! ```
//! # use marvin_runtime::ReclaimTable;
//! # let table = ReclaimTable::anonymous(4).unwrap();
//! if !table.is_foreground() {
//!     for (_id, entry) in table.iter_occupied() {
//!         if !entry.looks_reclaimable() {
//!             continue;
//!         }
//!         if let Some(guard) = entry.try_lock_reclaimer() {
//!             if guard.is_reclaimable() {
//!                 // drop the pages of [entry.addr(), entry.addr() + entry.size()) here
//!                 guard.mark_reclaimed();
//!             }
//!         } // contention: skip this entry, never wait
//!     }
//! }
//! ```

mod entry;
mod lock;
mod table;

pub use entry::{
    Entry, EntryError, EntryFault, EntryId, ReclaimerGuard, SharedGuard, LOCK_WAIT_LIMIT,
};
pub use lock::{EntryFlags, EntryLock};
pub use table::{
    ReclaimTable, ReclaimTableError, ReclaimTableView, TableFull, TableOwner, ENTRY_BYTES,
    MAX_CAPACITY,
};

/// What the entry lock is built from: `std`'s atomics, whose 4-byte layout the mapped table
/// relies on. The loom model (`tests/loom_reclaim_table.rs`) compiles `lock.rs` a second
/// time, into the test alone, with this module taken from `marvin-sync` instead, which hands
/// out loom's atomics under `cfg(loom)`: the model checks this very code, and nothing else in
/// the crate changes under loom.
mod atomics {
    pub(super) use std::hint::spin_loop as spin_hint;
    pub(super) use std::sync::atomic::{fence, AtomicU32, Ordering};
}

#[cfg(test)]
mod tests;
