//! The lock protocol of one reclaim-table entry, on two atomics (Marvin's published protocol).
//!
//! An entry has a flag word ([`EntryFlags`], which includes the reclaimer's lock bit) and a
//! counter of runtime threads holding the entry's shared lock.
//!
//! * Runtime (shared) lock: spin while the reclaimer bit is set, increment the counter, then
//!   re-check the bit; if it is set the reclaimer got in first: decrement and retry.
//!   Unlock: decrement. The wait is bounded: the caller says when to give up
//!   ([`EntryLock::lock_shared_or_give_up`]), since the flag word lives in shared memory
//!   and a bit left set by something other than a reclaimer would otherwise hold the
//!   thread forever; a thread that gives up holds nothing.
//! * Reclaimer (exclusive) lock: only when the counter is zero, set the bit, then re-check the
//!   counter; if it is no longer zero a runtime thread got in first: clear the bit and give up.
//!   The reclaimer never waits on an application thread.
//!
//! Both sides write one atomic and then read the other (a Dekker handshake). Store-then-load
//! needs sequential consistency: each side issues a `fence(SeqCst)` between its write and its
//! re-check. With the two fences in the single total order of `SeqCst` operations, whichever
//! fence comes second sees the other side's write, so at most one side can proceed. (A fence
//! rather than `SeqCst` loads: it states the requirement exactly, and loom models `SeqCst`
//! fences fully while it treats `SeqCst` loads as `AcqRel`.)
//!
//! The atomics come from the parent's `atomics` module (`std`'s). The loom model,
//! `tests/loom_reclaim_table.rs`, includes this file with `marvin-sync`'s atomics in their
//! place, so it model-checks this very code.

use super::atomics::{fence, spin_hint, AtomicU32, Ordering};

bitflags::bitflags! {
    /// The flag bits of a reclaim-table entry.
    ///
    /// The runtime maintains `OCCUPIED`, `RESIDENT`, `SAVED`, `CLEAN` and `COLD`; the
    /// reclaimer owns `RECLAIMER_LOCK` and clears `RESIDENT` when it drops an object's pages.
    /// The reclaimer takes an entry only when it is `OCCUPIED | RESIDENT | SAVED | CLEAN |
    /// COLD` and it holds the exclusive lock (see [`EntryFlags::RECLAIMABLE`]).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct EntryFlags: u32 {
        /// The entry describes an object (set last by insert, cleared first by remove).
        const OCCUPIED = 1 << 0;
        /// The object's pages are in memory; cleared by the reclaimer after dropping them,
        /// set again by the runtime once it has read the object back.
        const RESIDENT = 1 << 1;
        /// The reclaimer's exclusive lock (only [`EntryLock`] touches this bit).
        const RECLAIMER_LOCK = 1 << 2;
        /// A checkpoint of the object exists in the swap file.
        const SAVED = 1 << 3;
        /// The checkpoint is current: no write happened since it was taken. The runtime
        /// clears it (holding the shared lock) on any write to the object, and sets it only
        /// after a save that no write raced with.
        const CLEAN = 1 << 4;
        /// The working-set estimator judged the object cold under the swap policy.
        const COLD = 1 << 5;
    }
}

impl EntryFlags {
    /// The flags an entry must carry for the reclaimer to drop its object's pages.
    pub const RECLAIMABLE: EntryFlags = EntryFlags::OCCUPIED
        .union(EntryFlags::RESIDENT)
        .union(EntryFlags::SAVED)
        .union(EntryFlags::CLEAN)
        .union(EntryFlags::COLD);
}

/// The flag word and the runtime lock counter of one entry: the lock protocol and the flag
/// operations, which never disturb the reclaimer's bit.
///
/// `#[repr(C)]` and all-zero valid, so it can live in a shared memory map: zero means a free,
/// unlocked entry.
#[repr(C)]
#[derive(Debug, Default)]
pub struct EntryLock {
    flags: AtomicU32,
    readers: AtomicU32,
}

impl EntryLock {
    /// A free, unlocked entry.
    pub fn new() -> EntryLock {
        EntryLock::default()
    }

    /// Takes the runtime's shared lock, spinning only while the reclaimer holds its lock,
    /// and asking `give_up` at every turn of the wait: when it says so, returns false,
    /// holding nothing. Returns true with the lock held. `give_up` is told whether the
    /// reclaimer's bit was seen clear since its last call (a reclaimer came and went:
    /// the wait is not for one holder any more).
    pub fn lock_shared_or_give_up(&self, mut give_up: impl FnMut(bool) -> bool) -> bool {
        let reclaimer = EntryFlags::RECLAIMER_LOCK.bits();
        let mut seen_clear = false;
        loop {
            // Relaxed: only a hint to wait; the re-check below is what decides.
            while self.flags.load(Ordering::Relaxed) & reclaimer != 0 {
                if give_up(std::mem::take(&mut seen_clear)) {
                    return false;
                }
                spin_hint();
            }
            seen_clear = true;
            // Relaxed increment: ordering against the reclaimer comes from the fence.
            self.readers.fetch_add(1, Ordering::Relaxed);
            // SeqCst fence: orders our increment before our re-check of the bit, against the
            // reclaimer's fence between its bit-set and its re-check of the counter.
            fence(Ordering::SeqCst);
            // Acquire: pairs with the Release in `unlock_reclaimer`, so we see everything the
            // reclaimer did under its lock (the RESIDENT bit it cleared, the pages it dropped).
            if self.flags.load(Ordering::Acquire) & reclaimer == 0 {
                return true;
            }
            // The reclaimer got in first: back off and wait for it to finish.
            self.readers.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Takes the runtime's shared lock only if the reclaimer does not hold its lock; gives
    /// up (returns false) at once otherwise, never spinning. For a thread that already
    /// holds other locks a reclaimer may be waiting for (a fault reading neighbouring
    /// objects ahead), where waiting could deadlock. The same handshake as
    /// [`EntryLock::lock_shared_or_give_up`], one attempt.
    pub fn try_lock_shared(&self) -> bool {
        let reclaimer = EntryFlags::RECLAIMER_LOCK.bits();
        if self.flags.load(Ordering::Relaxed) & reclaimer != 0 {
            return false;
        }
        self.readers.fetch_add(1, Ordering::Relaxed);
        // SeqCst fence and Acquire re-check: as in `lock_shared`.
        fence(Ordering::SeqCst);
        if self.flags.load(Ordering::Acquire) & reclaimer == 0 {
            return true;
        }
        self.readers.fetch_sub(1, Ordering::Relaxed);
        false
    }

    /// Releases one shared lock taken with [`EntryLock::lock_shared_or_give_up`] or
    /// [`EntryLock::try_lock_shared`].
    pub fn unlock_shared(&self) {
        // Release: pairs with the Acquire loads of the counter in `try_lock_reclaimer`, so the
        // reclaimer sees every write we made under the lock (for example CLEAN cleared).
        // (No assertion on the count before: it is shared memory, which something else may
        // have overwritten; the holder's checks report that, a panic here would not.)
        self.readers.fetch_sub(1, Ordering::Release);
    }

    /// Tries the reclaimer's exclusive lock; gives up (returns false) at once if any runtime
    /// thread holds or is taking the shared lock, or another reclaimer holds the lock.
    pub fn try_lock_reclaimer(&self) -> bool {
        // Acquire: a cheap early exit; when it reads zero it also pairs with `unlock_shared`.
        if self.readers.load(Ordering::Acquire) != 0 {
            return false;
        }
        let bit = EntryFlags::RECLAIMER_LOCK.bits();
        // Relaxed RMW: ordering against the runtime comes from the fence below.
        if self.flags.fetch_or(bit, Ordering::Relaxed) & bit != 0 {
            return false; // another reclaimer holds it: the bit stays theirs
        }
        // SeqCst fence: orders our bit-set before our re-check of the counter, against the
        // runtime's fence between its increment and its re-check of the bit.
        fence(Ordering::SeqCst);
        // Acquire: pairs with the Release in `unlock_shared` of the last runtime holder.
        if self.readers.load(Ordering::Acquire) != 0 {
            // A runtime thread got in: give up rather than wait.
            self.flags.fetch_and(!bit, Ordering::Release);
            return false;
        }
        true
    }

    /// Releases the reclaimer's exclusive lock.
    pub fn unlock_reclaimer(&self) {
        let bit = EntryFlags::RECLAIMER_LOCK.bits();
        // Release: pairs with the Acquire re-check in `lock_shared`.
        // (No assertion that the bit was set: see `unlock_shared`.)
        self.flags.fetch_and(!bit, Ordering::Release);
    }

    /// Clears `flags` and releases the reclaimer's exclusive lock in one atomic step:
    /// the same as [`EntryLock::remove_flags`] then [`EntryLock::unlock_reclaimer`],
    /// with one read-modify-write instead of two (a reclaim of 500 MiB releases 128,000
    /// entries).
    pub fn unlock_reclaimer_removing(&self, flags: EntryFlags) {
        let bits = flags.union(EntryFlags::RECLAIMER_LOCK).bits();
        // AcqRel: the Release pairs with the Acquire re-check in `lock_shared`, as in
        // `unlock_reclaimer`; the Acquire is `remove_flags`'.
        self.flags.fetch_and(!bits, Ordering::AcqRel);
    }

    /// The number of runtime threads holding (or taking) the shared lock.
    pub fn shared_count(&self) -> u32 {
        self.readers.load(Ordering::Acquire)
    }

    /// Whether the reclaimer holds its lock.
    pub fn is_reclaimer_locked(&self) -> bool {
        self.flags().contains(EntryFlags::RECLAIMER_LOCK)
    }

    /// The current flags (Acquire: pairs with the Release of [`EntryLock::insert_flags`]
    /// and [`EntryLock::remove_flags`]).
    pub fn flags(&self) -> EntryFlags {
        EntryFlags::from_bits_retain(self.flags.load(Ordering::Acquire))
    }

    /// Sets `flags` (never the reclaimer bit); returns the flags before.
    pub fn insert_flags(&self, flags: EntryFlags) -> EntryFlags {
        let bits = flags.difference(EntryFlags::RECLAIMER_LOCK).bits();
        // AcqRel: publishes the writes made before (e.g. an entry's location before OCCUPIED)
        // and sees the writes published by earlier flag changes.
        EntryFlags::from_bits_retain(self.flags.fetch_or(bits, Ordering::AcqRel))
    }

    /// Clears `flags` (never the reclaimer bit); returns the flags before.
    pub fn remove_flags(&self, flags: EntryFlags) -> EntryFlags {
        let bits = flags.difference(EntryFlags::RECLAIMER_LOCK).bits();
        // AcqRel: as in `insert_flags`.
        EntryFlags::from_bits_retain(self.flags.fetch_and(!bits, Ordering::AcqRel))
    }
}
