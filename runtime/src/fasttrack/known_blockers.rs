//! The known-blocker table of sticky fast track: threads that blocked a latency-critical
//! thread on a lock, remembered for a while so that their next acquisition of that lock is
//! boosted at once (see the module doc of `fasttrack`).

use std::sync::atomic::{AtomicI32, Ordering};

use parking_lot::Mutex;

use super::LockKey;

/// Known blockers a tracker remembers (the oldest is evicted beyond this).
pub const MAX_KNOWN_BLOCKERS: usize = 8;
/// A known blocker that has not blocked a latency-critical thread on its lock for this long
/// is forgotten.
pub const KNOWN_BLOCKER_TTL_NS: u64 = 1_000_000_000;

/// A thread that blocked a latency-critical thread on a lock.
#[derive(Clone, Copy, Debug)]
struct KnownBlocker {
    lock: LockKey,
    tid: i32,
    /// The latency-critical thread it blocked last.
    waiter_tid: i32,
    /// When it last blocked one (tracker clock).
    last_ns: u64,
}

/// The known blockers, at most [`MAX_KNOWN_BLOCKERS`]. `tids` mirrors the slots' thread ids
/// (0 = free) so that an acquisition by a thread that is not in the table costs a scan of
/// atomics and no lock; it is written only under the `slots` mutex.
#[derive(Default)]
pub(super) struct KnownBlockers {
    slots: Mutex<[Option<KnownBlocker>; MAX_KNOWN_BLOCKERS]>,
    tids: [AtomicI32; MAX_KNOWN_BLOCKERS],
}

impl KnownBlockers {
    pub(super) fn may_know(&self, tid: i32) -> bool {
        // Relaxed: a hint; a blocker recorded concurrently is found on its next acquisition.
        self.tids.iter().any(|t| t.load(Ordering::Relaxed) == tid)
    }

    /// Records (or refreshes) `tid` as a blocker of `lock`, evicting the oldest entry when
    /// the table is full.
    pub(super) fn remember(&self, lock: LockKey, tid: i32, waiter_tid: i32, now: u64) {
        let mut slots = self.slots.lock();
        let i = slots
            .iter()
            .position(|s| matches!(s, Some(b) if b.lock == lock && b.tid == tid))
            .or_else(|| slots.iter().position(Option::is_none))
            .unwrap_or_else(|| {
                (0..MAX_KNOWN_BLOCKERS)
                    .min_by_key(|&i| slots[i].map_or(0, |b| b.last_ns))
                    .expect("non-empty table")
            });
        slots[i] = Some(KnownBlocker {
            lock,
            tid,
            waiter_tid,
            last_ns: now,
        });
        self.tids[i].store(tid, Ordering::Relaxed);
    }

    /// The latency-critical thread that `tid` last blocked on `lock`, if `tid` is a known
    /// blocker of it; drops expired entries on the way.
    pub(super) fn lookup(&self, lock: LockKey, tid: i32, now: u64) -> Option<i32> {
        let mut slots = self.slots.lock();
        let mut found = None;
        for (i, slot) in slots.iter_mut().enumerate() {
            let Some(b) = *slot else { continue };
            if now.saturating_sub(b.last_ns) > KNOWN_BLOCKER_TTL_NS {
                *slot = None;
                self.tids[i].store(0, Ordering::Relaxed);
            } else if b.lock == lock && b.tid == tid {
                found = Some(b.waiter_tid);
            }
        }
        found
    }

    pub(super) fn len(&self) -> usize {
        self.slots.lock().iter().flatten().count()
    }
}
