//! The reclaim table: per app, a shared-memory array describing the objects a reclaimer may
//! take, and the lock that keeps the reclaimer and the app's threads apart.
//!
//! The runtime inserts one [`Entry`] per stubbed object (address, size in bytes, owner handle)
//! and maintains its flags ([`EntryFlags`]): OCCUPIED and RESIDENT, plus SAVED (a checkpoint
//! exists), CLEAN (the checkpoint is current) and COLD (the working-set estimator's verdict),
//! which the reclaimer reads to decide. Every access to a stubbed object holds the entry's
//! shared lock ([`Entry::lock_shared`]); a reclaimer takes an entry's exclusive lock with
//! [`Entry::try_lock_reclaimer`], which gives up at once on contention rather than wait on an
//! app thread, and then reclaims only an entry that [`ReclaimerGuard::is_reclaimable`].
//!
//! The table lives in a memory map: file-backed and shared ([`ReclaimTable::create`]) so that
//! another process can scan it through a [`ReclaimTableView`], or anonymous
//! ([`ReclaimTable::anonymous`]). The lock protocol itself is [`EntryLock`] (module `lock`),
//! written against a loom shim and model-checked by `tests/loom_reclaim_table.rs`; the map
//! and its one unsafe cast are in module `table`.
//!
//! A reclaimer's loop, in short:
//!
//! ```
//! # use marvin_runtime::reclaim_table::ReclaimTable;
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

mod lock;

pub use lock::{EntryFlags, EntryLock};

#[cfg(not(loom))]
mod entry;
#[cfg(not(loom))]
mod table;

#[cfg(not(loom))]
pub use entry::{Entry, EntryId, ReclaimerGuard, SharedGuard};
#[cfg(not(loom))]
pub use table::{ReclaimTable, ReclaimTableError, ReclaimTableView, TableFull, MAX_CAPACITY};

#[cfg(all(test, not(loom)))]
mod tests;
