//! The readers of a shared lock, recorded so that a latency-critical thread blocking on the
//! lock can boost them.

use std::sync::atomic::{AtomicI32, Ordering};

/// Readers a shared lock records for fast tracking (more readers are not boosted).
pub const MAX_READERS: usize = 4;

/// The readers of a shared lock, up to [`MAX_READERS`] tids (0 = free slot), for
/// [`FastTracker::on_block`](super::FastTracker::on_block). Readers beyond the bound are not recorded (and not boosted).
#[derive(Debug, Default)]
pub struct ReaderSet {
    slots: [AtomicI32; MAX_READERS],
}

impl ReaderSet {
    pub fn new() -> ReaderSet {
        ReaderSet::default()
    }

    /// Records reader `tid`; false when every slot is taken.
    pub fn add(&self, tid: i32) -> bool {
        self.slots.iter().any(|s| {
            // Relaxed: the set is a hint for boosting; the lock itself orders the data.
            s.compare_exchange(0, tid, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        })
    }

    /// Forgets reader `tid` (one slot).
    pub fn remove(&self, tid: i32) {
        for s in &self.slots {
            if s.compare_exchange(tid, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    /// The recorded readers.
    pub fn snapshot(&self) -> Vec<i32> {
        self.slots
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .filter(|&t| t > 0)
            .collect()
    }
}
