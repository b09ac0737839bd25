//! One reclaim-table entry as it sits in shared memory, its id, and the two lock guards.
//!
//! The entry is shared memory: the runtime never trusts what it reads back blindly. Its
//! shared lock waits a bounded time ([`LOCK_WAIT_LIMIT`]), and [`SharedGuard::check`]
//! compares the entry with what the runtime knows of its object (address, size, owner,
//! flags that can coexist, a sane holder count); a failure is an [`EntryError`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::lock::{EntryFlags, EntryLock};

/// The index of an entry in its table. Stubs keep it to find their entry again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryId(u32);

impl EntryId {
    /// The id of the entry at `index` (the table checks it against its capacity).
    pub const fn from_index(index: u32) -> EntryId {
        EntryId(index)
    }

    /// The entry's index in its table.
    pub const fn index(self) -> u32 {
        self.0
    }
}

impl std::fmt::Display for EntryId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// How long a runtime thread waits for an entry's reclaimer lock before it gives up: a
/// reclaimer holds an entry for a scan and one `madvise` of its batch, so a lock held far
/// longer was set by something other than a reclaimer (the shared table overwritten).
pub const LOCK_WAIT_LIMIT: Duration = Duration::from_secs(3);

/// More runtime threads than this holding one entry shared is not a count the runtime
/// made: the entry was overwritten.
const MAX_SHARED_HOLDERS: u32 = 1 << 16;

/// What is wrong with an entry read back from the shared table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// The reclaimer's bit stayed set for longer than any reclaimer holds an entry.
    #[error("its reclaimer lock stayed held for more than {0:?}")]
    Stuck(Duration),
    /// A field does not hold what the runtime wrote or knows.
    #[error("it is corrupt: {0}")]
    Corrupt(String),
    /// The object was freed meanwhile (its entry emptied, perhaps reused): nothing is
    /// wrong with the table.
    #[error("the object was freed")]
    Freed,
    /// Another entry of the table failed its checks before: the table is not trusted.
    #[error("the table is not trusted since an earlier failure ({0})")]
    Distrusted(String),
}

/// One entry: 32 bytes, `#[repr(C)]`, valid when all zero (a free entry).
///
/// Layout (little-endian, as another process reads it):
///
/// ```text
/// offset 0   u32  flags (EntryFlags)
/// offset 4   u32  runtime lock counter
/// offset 8   u64  object address
/// offset 16  u64  object size in bytes
/// offset 24  u64  owner handle (the runtime's handle of the object or its stub)
/// ```
///
/// The location and owner are written before `OCCUPIED` is set (published by its Release)
/// and are changed afterwards only under the shared lock ([`SharedGuard::set_location`]);
/// the reclaimer reads them under its exclusive lock ([`ReclaimerGuard`]).
#[repr(C)]
#[derive(Debug, Default)]
pub struct Entry {
    lock: EntryLock,
    addr: AtomicU64,
    size: AtomicU64,
    owner: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<Entry>() == 32);

impl Entry {
    /// The entry's lock word and counter.
    pub fn lock(&self) -> &EntryLock {
        &self.lock
    }

    /// Takes the runtime's shared lock for the length of one access, waiting at most
    /// [`LOCK_WAIT_LIMIT`] for the reclaimer's bit to clear (yielding the CPU while it
    /// waits past a first short spin); [`EntryError::Stuck`] when it stays set that long
    /// without a break. (Reclaimers that come and go do not add up to a stuck entry.)
    pub fn lock_shared(&self) -> Result<SharedGuard<'_>, EntryError> {
        let mut turns = 0u32;
        let mut since: Option<Instant> = None;
        let locked = self.lock.lock_shared_or_give_up(|seen_clear| {
            if seen_clear {
                (turns, since) = (0, None);
            }
            turns = turns.saturating_add(1);
            if turns < 128 {
                return false;
            }
            std::thread::yield_now();
            since.get_or_insert_with(Instant::now).elapsed() > LOCK_WAIT_LIMIT
        });
        if locked {
            Ok(SharedGuard { entry: self })
        } else {
            Err(EntryError::Stuck(LOCK_WAIT_LIMIT))
        }
    }

    /// Takes the runtime's shared lock unless the reclaimer holds the entry; `None` at
    /// once then (see [`EntryLock::try_lock_shared`]).
    pub fn try_lock_shared(&self) -> Option<SharedGuard<'_>> {
        // Build the guard only on success: a guard dropped on failure would unlock.
        if self.lock.try_lock_shared() {
            Some(SharedGuard { entry: self })
        } else {
            None
        }
    }

    /// Tries the reclaimer's exclusive lock; `None` at once on any contention.
    pub fn try_lock_reclaimer(&self) -> Option<ReclaimerGuard<'_>> {
        // Build the guard only on success: a guard dropped on failure would unlock.
        if self.lock.try_lock_reclaimer() {
            Some(ReclaimerGuard { entry: self })
        } else {
            None
        }
    }

    /// All flags, the reclaimer's lock bit included.
    pub fn flags(&self) -> EntryFlags {
        self.lock.flags()
    }

    /// Object address.
    pub fn addr(&self) -> u64 {
        // Relaxed: published by the OCCUPIED flag or a lock (see the type's doc).
        self.addr.load(Ordering::Relaxed)
    }

    /// Object size in bytes.
    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Relaxed)
    }

    /// The owner handle given at insert.
    pub fn owner(&self) -> u64 {
        self.owner.load(Ordering::Relaxed)
    }

    /// Whether the entry describes an object.
    pub fn is_occupied(&self) -> bool {
        self.flags().contains(EntryFlags::OCCUPIED)
    }

    /// Whether the object's pages are in memory.
    pub fn is_resident(&self) -> bool {
        self.flags().contains(EntryFlags::RESIDENT)
    }

    /// Whether a checkpoint exists in the swap file.
    pub fn is_saved(&self) -> bool {
        self.flags().contains(EntryFlags::SAVED)
    }

    /// Whether the checkpoint is current.
    pub fn is_clean(&self) -> bool {
        self.flags().contains(EntryFlags::CLEAN)
    }

    /// Whether the object was judged cold.
    pub fn is_cold(&self) -> bool {
        self.flags().contains(EntryFlags::COLD)
    }

    /// Whether the reclaimer holds its lock.
    pub fn is_reclaimer_locked(&self) -> bool {
        self.lock.is_reclaimer_locked()
    }

    /// A snapshot for the reclaimer's scan: reclaimable flags, no lock held by anyone.
    /// Only a hint: the reclaimer re-checks under its lock ([`ReclaimerGuard::is_reclaimable`]).
    pub fn looks_reclaimable(&self) -> bool {
        let flags = self.flags();
        flags.contains(EntryFlags::RECLAIMABLE)
            && !flags.contains(EntryFlags::RECLAIMER_LOCK)
            && self.lock.shared_count() == 0
    }

    /// What makes this occupied entry contradict itself, as a reclaimer must refuse it
    /// before acting on it: flag bits no runtime sets, CLEAN without SAVED, out (not
    /// RESIDENT) without SAVED (reclaimed, but never saved), more shared holders than any
    /// runtime has threads, or a location that is not whole pages. `None` for an entry
    /// that could be the runtime's. (A free entry is not asked: scans skip it.)
    pub fn contradiction(&self) -> Option<&'static str> {
        let flags = self.flags();
        if flags.bits() & !EntryFlags::all().bits() != 0 {
            return Some("carries flag bits no runtime sets");
        }
        if !flags.contains(EntryFlags::OCCUPIED) {
            return None;
        }
        if flags.contains(EntryFlags::CLEAN) && !flags.contains(EntryFlags::SAVED) {
            return Some("is CLEAN but not SAVED");
        }
        if !flags.contains(EntryFlags::RESIDENT) && !flags.contains(EntryFlags::SAVED) {
            return Some("is reclaimed (not RESIDENT) but was never SAVED");
        }
        if self.lock.shared_count() > MAX_SHARED_HOLDERS {
            return Some("counts more shared holders than a runtime has threads");
        }
        const PAGE: u64 = 4096;
        let (addr, size) = (self.addr(), self.size());
        if size == 0 || addr % PAGE != 0 || size % PAGE != 0 || addr.checked_add(size).is_none() {
            return Some("describes no whole run of pages");
        }
        None
    }

    /// Sets or clears RESIDENT (the runtime sets it after reading the object back).
    pub fn set_resident(&self, on: bool) {
        self.set(EntryFlags::RESIDENT, on);
    }

    /// Sets or clears SAVED.
    pub fn set_saved(&self, on: bool) {
        self.set(EntryFlags::SAVED, on);
    }

    /// Sets or clears CLEAN. Clear it holding the shared lock on a write, so a reclaimer
    /// holding its lock can trust a CLEAN it reads.
    pub fn set_clean(&self, on: bool) {
        self.set(EntryFlags::CLEAN, on);
    }

    /// Sets or clears COLD.
    pub fn set_cold(&self, on: bool) {
        self.set(EntryFlags::COLD, on);
    }

    fn set(&self, flag: EntryFlags, on: bool) {
        if on {
            self.lock.insert_flags(flag);
        } else {
            self.lock.remove_flags(flag);
        }
    }

    /// Fills a free entry and publishes it (OCCUPIED | RESIDENT). Only the table calls this,
    /// on an entry it took off its free list.
    pub(super) fn occupy(&self, addr: u64, size: u64, owner: u64) {
        // Relaxed stores: published by the AcqRel flag update that follows.
        self.addr.store(addr, Ordering::Relaxed);
        self.size.store(size, Ordering::Relaxed);
        self.owner.store(owner, Ordering::Relaxed);
        self.lock
            .insert_flags(EntryFlags::OCCUPIED | EntryFlags::RESIDENT);
    }

    /// Empties an occupied entry, waiting out a reclaimer that holds it (a bounded wait,
    /// as [`Entry::lock_shared`]). Only the table calls this, before putting the entry
    /// back on its free list.
    pub(super) fn vacate(&self) -> Result<(), EntryError> {
        let _guard = self.lock_shared()?;
        self.lock
            .remove_flags(EntryFlags::all().difference(EntryFlags::RECLAIMER_LOCK));
        Ok(())
    }
}

/// The runtime's shared hold on an entry; released on drop.
#[derive(Debug)]
pub struct SharedGuard<'a> {
    entry: &'a Entry,
}

impl<'a> SharedGuard<'a> {
    /// The locked entry.
    pub fn entry(&self) -> &'a Entry {
        self.entry
    }

    /// Checks the entry against what the runtime knows of its object (its address, its
    /// size in bytes and its owner handle, as given at insert) and the rules its flags
    /// keep: only known bits, OCCUPIED, CLEAN only with SAVED, out (not RESIDENT) only
    /// once SAVED, and a count of shared holders that includes this one and is sane.
    pub fn check(&self, addr: u64, size: u64, owner: u64) -> Result<(), EntryError> {
        let e = self.entry;
        let flags = e.flags();
        let bad = |what: String| Err(EntryError::Corrupt(what));
        let unknown = flags.bits() & !EntryFlags::all().bits();
        if unknown != 0 {
            return bad(format!(
                "flags {:#x} carry unknown bits {unknown:#x}",
                flags.bits()
            ));
        }
        if !flags.contains(EntryFlags::OCCUPIED) {
            return bad("it is not occupied".into());
        }
        if flags.contains(EntryFlags::CLEAN) && !flags.contains(EntryFlags::SAVED) {
            return bad("it is CLEAN but not SAVED".into());
        }
        if !flags.contains(EntryFlags::RESIDENT) && !flags.contains(EntryFlags::SAVED) {
            return bad("it is out (not RESIDENT) but was never SAVED".into());
        }
        let holders = e.lock.shared_count();
        if holders == 0 || holders > MAX_SHARED_HOLDERS {
            return bad(format!("{holders} shared holders while one holds it"));
        }
        let checks = [
            ("address", e.addr(), addr),
            ("size", e.size(), size),
            ("owner", e.owner(), owner),
        ];
        for (what, found, expected) in checks {
            if found != expected {
                return bad(format!("{what} {found:#x}, expected {expected:#x}"));
            }
        }
        Ok(())
    }

    /// Records that the object now lives at `addr` with `size` bytes. The reclaimer cannot
    /// hold the entry meanwhile, so it never sees a half-updated location.
    pub fn set_location(&self, addr: u64, size: u64) {
        // Relaxed: the reclaimer reads these only after taking its lock, which synchronizes
        // with the Release of our unlock.
        self.entry.addr.store(addr, Ordering::Relaxed);
        self.entry.size.store(size, Ordering::Relaxed);
    }
}

impl Drop for SharedGuard<'_> {
    fn drop(&mut self) {
        self.entry.lock.unlock_shared();
    }
}

/// The reclaimer's exclusive hold on an entry; released on drop.
#[derive(Debug)]
pub struct ReclaimerGuard<'a> {
    entry: &'a Entry,
}

impl<'a> ReclaimerGuard<'a> {
    /// The locked entry.
    pub fn entry(&self) -> &'a Entry {
        self.entry
    }

    /// Whether the entry may be reclaimed now: occupied, resident, saved, clean and cold.
    /// No runtime thread can change that while the guard is held.
    pub fn is_reclaimable(&self) -> bool {
        self.entry.flags().contains(EntryFlags::RECLAIMABLE)
    }

    /// Records that the object's pages were dropped (clears RESIDENT).
    pub fn mark_reclaimed(&self) {
        self.entry.lock.remove_flags(EntryFlags::RESIDENT);
    }

    /// Records that the object's pages were dropped and releases the entry, in one
    /// atomic step: [`ReclaimerGuard::mark_reclaimed`] then the guard's drop.
    pub fn release_reclaimed(self) {
        self.entry
            .lock
            .unlock_reclaimer_removing(EntryFlags::RESIDENT);
        // The lock is released above; the guard's drop would release it again.
        std::mem::forget(self);
    }
}

impl Drop for ReclaimerGuard<'_> {
    fn drop(&mut self) {
        self.entry.lock.unlock_reclaimer();
    }
}

/// An entry that failed its checks, named by its table, its id and its object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("reclaim table {table}: entry {id} of object {object}: {reason}")]
pub struct EntryFault {
    /// The table ([`super::ReclaimTable::describe`]).
    pub table: String,
    /// The entry.
    pub id: EntryId,
    /// The object's handle.
    pub object: u64,
    /// What is wrong.
    pub reason: EntryError,
}
