//! Sleeping and waking the looper without ever losing a wake-up.
//!
//! The looper publishes the due time it will sleep until (`deadline`), re-checks the
//! stack head with a read-modify-write (`Stack::head_unchanged`), then sleeps on a futex
//! word it read before checking anything. A poster pushes (an RMW on the head), then
//! reads the deadline, and wakes the looper only when its message is due earlier. The
//! two RMWs on the head are ordered: if the looper's comes first, the push acquires it
//! and the poster sees the deadline; if the push comes first, the looper's check fails
//! and it does not sleep. The wake changes the futex word first, so a sleep that starts
//! after it returns at once. (A plain SeqCst load would do on hardware, but loom models
//! SeqCst accesses as acquire/release, and the RMW costs posters nothing.)
//!
//! [`Waker::wake`] (any thread) also sets a flag, so a wake that lands while the looper
//! is busy is kept for its next `wait`.

use std::time::Duration;

use crossbeam_utils::CachePadded;
use marvin_sync::atomic::{AtomicBool, AtomicU64, Ordering};
use marvin_sync::futex::Futex;

/// The looper is not sleeping (no message is due before time 0, so no post wakes it).
const AWAKE: u64 = 0;

/// The looper's sleep state.
pub struct Waker {
    futex: CachePadded<Futex>,
    deadline: CachePadded<AtomicU64>,
    requested: AtomicBool,
}

impl Default for Waker {
    fn default() -> Self {
        Waker {
            futex: CachePadded::new(Futex::new(0)),
            deadline: CachePadded::new(AtomicU64::new(AWAKE)),
            requested: AtomicBool::new(false),
        }
    }
}

impl Waker {
    /// Poster side, after its push: wakes the looper if it sleeps past `when`.
    #[inline]
    pub fn notify_if_earlier(&self, when: u64) {
        if when < self.deadline.load(Ordering::SeqCst) {
            self.kick();
        }
    }

    /// Wakes the looper so it re-checks, now or at its next `wait`.
    pub fn wake(&self) {
        self.requested.store(true, Ordering::SeqCst);
        self.kick();
    }

    fn kick(&self) {
        self.futex.word().fetch_add(1, Ordering::SeqCst);
        self.futex.wake_all();
    }

    /// Looper: the futex word, read before anything the sleep decision depends on.
    pub fn snapshot(&self) -> u32 {
        self.futex.load()
    }

    /// Looper: whether a `wake` request is pending (a hint; not consumed).
    pub fn has_request(&self) -> bool {
        self.requested.load(Ordering::Relaxed)
    }

    /// Looper: consumes a pending `wake` request.
    pub fn take_request(&self) -> bool {
        self.requested.swap(false, Ordering::SeqCst)
    }

    /// Looper: announces it will sleep until `deadline` (then re-check the stack).
    pub fn publish_deadline(&self, deadline: u64) {
        self.deadline
            .store(deadline.max(AWAKE + 1), Ordering::SeqCst);
    }

    /// Looper: sleeps unless the futex word moved since `snapshot`.
    pub fn sleep(&self, snapshot: u32, timeout: Option<Duration>) {
        self.futex.wait(snapshot, timeout);
    }

    /// Looper: back to work.
    pub fn clear_deadline(&self) {
        self.deadline.store(AWAKE, Ordering::SeqCst);
    }
}
