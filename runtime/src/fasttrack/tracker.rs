//! The tracker itself: its mode and settings, the observer it reports [`Event`]s to, its
//! counters, and the measurement of its own CPU time. What it does on a block, an
//! acquisition and a release is in `boost.rs`; spinning in `spin.rs`.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::boost::Boosts;
use super::known_blockers::KnownBlockers;
use super::{
    FastTrackCounters, LockKey, Mode, OsPriorities, Priorities, Stats, FAST_TRACK_NICE,
    SPIN_LIMIT_NS,
};
use crate::cpuclock;

/// Something the tracker did, reported to its observer on the thread that did it: boosts on
/// the blocked (latency-critical) thread, restores on the releasing holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A holder was boosted: because `waiter_tid` blocked on `lock` now, or (`sticky`) on
    /// its acquisition of `lock`, as a known blocker that last blocked `waiter_tid`.
    Boost {
        lock: LockKey,
        holder_tid: i32,
        waiter_tid: i32,
        from_nice: i32,
        to_nice: i32,
        sticky: bool,
    },
    Restore {
        holder_tid: i32,
        nice: i32,
    },
    /// The system refused a boost (no privilege); the holder keeps its priority.
    Denied {
        holder_tid: i32,
        error: String,
    },
}

type Observer = Box<dyn Fn(&Event) + Send + Sync>;

/// A monotonic clock in nanoseconds, for the known blockers' expiry.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// Boosts the holders of locks that latency-critical threads wait on (see the module doc).
pub struct FastTracker {
    pub(super) mode: Mode,
    pub(super) fast_nice: i32,
    pub(super) priorities: Arc<dyn Priorities>,
    pub(super) boosted: Mutex<Boosts>,
    /// Number of boosted holders: the release path's one relaxed load when nobody is.
    pub(super) active: AtomicUsize,
    pub(super) warned: AtomicBool,
    observer: Mutex<Option<Arc<Observer>>>,
    pub(super) counters: FastTrackCounters,
    /// Upper bound of a spin (0: never spin).
    pub(super) spin_limit_ns: u64,
    /// Moving average of recent spin lengths (successful or timed out while the holder ran);
    /// the budget is twice this, clamped.
    pub(super) spin_avg_ns: AtomicU64,
    pub(super) known: KnownBlockers,
    pub(super) clock: Clock,
}

impl std::fmt::Debug for FastTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastTracker")
            .field("mode", &self.mode)
            .field("fast_nice", &self.fast_nice)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl FastTracker {
    /// A tracker in `mode` setting priorities through `priorities`.
    pub fn new(mode: Mode, priorities: Arc<dyn Priorities>) -> FastTracker {
        FastTracker {
            mode,
            fast_nice: FAST_TRACK_NICE,
            priorities,
            boosted: Mutex::new(Boosts::default()),
            active: AtomicUsize::new(0),
            warned: AtomicBool::new(false),
            observer: Mutex::new(None),
            counters: FastTrackCounters::default(),
            spin_limit_ns: SPIN_LIMIT_NS,
            spin_avg_ns: AtomicU64::new(SPIN_LIMIT_NS / 2),
            known: KnownBlockers::default(),
            clock: {
                let origin = Instant::now();
                Arc::new(move || origin.elapsed().as_nanos() as u64)
            },
        }
    }

    /// Uses `clock` (monotonic nanoseconds) for the known blockers' expiry instead of the
    /// time since the tracker was made.
    pub fn with_clock(mut self, clock: Clock) -> FastTracker {
        self.clock = clock;
        self
    }

    /// Number of known blockers remembered now (expired ones included until the next
    /// acquisition by a known blocker drops them).
    pub fn known_blockers(&self) -> usize {
        self.known.len()
    }

    /// A tracker in `mode` on the operating system's priorities.
    pub fn os(mode: Mode) -> FastTracker {
        FastTracker::new(mode, Arc::new(OsPriorities))
    }

    /// Sets the nice value [`Mode::FastTrack`] gives holders.
    pub fn with_fast_nice(mut self, nice: i32) -> FastTracker {
        self.fast_nice = nice.clamp(-20, 19);
        self
    }

    /// Sets the longest spin on a fast-tracked holder (0: always park at once).
    pub fn with_spin_limit_ns(mut self, limit_ns: u64) -> FastTracker {
        self.spin_limit_ns = limit_ns;
        self.spin_avg_ns = AtomicU64::new(limit_ns / 2);
        self
    }

    pub fn spin_limit_ns(&self) -> u64 {
        self.spin_limit_ns
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn fast_nice(&self) -> i32 {
        self.fast_nice
    }

    /// Reports every later event to `observer` (replacing any earlier one).
    pub fn set_observer(&self, observer: impl Fn(&Event) + Send + Sync + 'static) {
        *self.observer.lock() = Some(Arc::new(Box::new(observer)));
    }

    /// What the tracker counted so far.
    pub fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    /// Runs `f`, one of the tracker's paths on the calling thread, and adds the thread CPU
    /// time it took to the detector's overhead (`cpu_ns`); returns `f`'s result and that
    /// time.
    pub(super) fn overhead<R>(&self, f: impl FnOnce() -> R) -> (R, u64) {
        let (r, ns) = cpuclock::measure_thread_cpu(f);
        self.counters.cpu_ns.fetch_add(ns, Ordering::Relaxed);
        (r, ns)
    }

    /// Tells the observer, if any, of `events`.
    pub(super) fn report(&self, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        let observer = self.observer.lock().clone();
        if let Some(o) = observer {
            for e in events {
                o(e);
            }
        }
    }
}
