//! Fast-tracked lock holders: when a latency-critical thread (an app's main looper) blocks
//! on a runtime lock, the threads holding that lock are boosted at once, and restored when
//! they release it.
//!
//! A low-priority thread holding a lock the looper wants is delayed mostly by waiting for a
//! CPU, not by its critical section; giving it the CPU first shortens the looper's wait. The
//! runtime's locks a looper can wait on record their holders (a monitor its owner; a shared
//! lock up to [`MAX_READERS`] readers in a [`ReaderSet`]) and call [`FastTracker::on_block`]
//! when a latency-critical thread is about to wait, and [`FastTracker::on_release`] when a
//! holder lets go. The DeliQueue has no internal lock waits (it is lock-free; the looper only
//! sleeps on its futex when it has nothing to do), so it needs no hook.
//!
//! Three [`Mode`]s, compared by `marvin bench inversion`:
//! - [`Mode::Off`]: nothing happens; the holder runs at whatever priority it has.
//! - [`Mode::Inherit`]: priority inheritance only: the holder gets the waiter's nice value
//!   (never a weaker one than it has), as a priority-inheriting mutex would give it.
//! - [`Mode::FastTrack`]: the holder gets [`FastTracker::fast_nice`] (by default
//!   [`FAST_TRACK_NICE`], the strongest CFS weight), ahead of every normal thread including
//!   the waiter's peers, for what is left of its critical section.
//!
//! Priorities are nice values set per thread (`setpriority(PRIO_PROCESS, tid)`), through the
//! [`Priorities`] trait so tests can use a mock. Raising a priority needs `CAP_SYS_NICE` (or
//! a high enough `RLIMIT_NICE`); without it the tracker says so once on stderr, counts the
//! refusal and carries on. Every boost, restore and refusal is reported to an optional
//! observer (the interpreter records them in the trace).
//!
//! Spinning on a fast-tracked holder: once a holder is boosted, the waiter's expected wait is
//! what is left of one critical section run at full speed, often shorter than a park and a
//! wake-up. [`FastTracker::spin_on_holder`] lets the waiter spin (lock released) while the
//! boosted holder is on a CPU (its scheduler clock advances), for at most an adaptive budget
//! (twice the recent successful spins, between [`SPIN_MIN_NS`] and the tracker's limit,
//! [`SPIN_LIMIT_NS`] by default), and stops at once when the holder has not run for
//! [`SPIN_STALL_NS`]: an adaptive mutex's rule (spin while the owner runs, then sleep). It
//! spins only on holders this tracker boosted, so [`Mode::Off`] never spins. The spin's CPU
//! time is part of the detector's overhead ([`Stats::cpu_ns`], and on its own in
//! [`Stats::spin_cpu_ns`]).
//!
//! Sticky fast track for known blockers (as SuperPass's lock-level detector, which tracks a
//! bounded number of blockers): in [`Mode::FastTrack`], a thread that blocked a
//! latency-critical thread on a lock is remembered as a *known blocker* of that lock, in a
//! table of at most [`MAX_KNOWN_BLOCKERS`] entries (the oldest is evicted when it is full);
//! an entry expires when its thread has not blocked a latency-critical thread on that lock
//! for [`KNOWN_BLOCKER_TTL_NS`]. When a known blocker *acquires* that lock again, the lock
//! calls [`FastTracker::on_acquire`] and the thread is boosted at once, for its whole hold,
//! and restored at release as any boost: it is not preempted inside its critical section,
//! so the looper is less likely to find the lock held at all, and waits less when it does.
//! The check on acquisition is a scan of [`MAX_KNOWN_BLOCKERS`] atomics when the acquirer is
//! not a known blocker; a sticky boost's syscalls count in [`Stats::cpu_ns`], and it is
//! reported as an [`Event::Boost`] with `sticky: true`. [`Mode::Inherit`] boosts only while
//! a latency-critical thread waits, and [`Mode::Off`] never, so neither remembers blockers.
//!
//! Ordering contract for lock implementations: call `on_block` while the lock's own state
//! cannot change (under its internal mutex) and `on_release` under the same mutex, so a
//! release always sees a boost made before it.
//!
//! Files, one job each: `tracker.rs` (the tracker, its settings and its observer),
//! `boost.rs` (boosting and restoring holders: the block, acquire and release paths),
//! `spin.rs` (adaptive spinning on a boosted holder), `known_blockers.rs` (the sticky
//! table), `counters.rs` (what a tracker counted), `readers.rs` (a shared lock's holders)
//! and `priority.rs` (nice values through the system calls: the module's only `unsafe`).

mod boost;
mod counters;
mod known_blockers;
mod priority;
mod readers;
mod spin;
mod tracker;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicU64, Ordering};

pub use counters::{FastTrackCounters, Stats};
pub use known_blockers::{KNOWN_BLOCKER_TTL_NS, MAX_KNOWN_BLOCKERS};
pub use priority::{set_thread_nice, thread_nice, OsPriorities, Priorities};
pub use readers::{ReaderSet, MAX_READERS};
pub use spin::{SpinEnd, SPIN_LIMIT_NS, SPIN_MIN_NS, SPIN_STALL_NS};
pub use tracker::{Clock, Event, FastTracker};

/// The nice value [`Mode::FastTrack`] gives a holder by default.
pub const FAST_TRACK_NICE: i32 = -20;

/// What a latency-critical thread blocking on a lock does to the lock's holders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Off,
    Inherit,
    FastTrack,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "off" => Ok(Mode::Off),
            "inherit" => Ok(Mode::Inherit),
            "fasttrack" | "fast-track" => Ok(Mode::FastTrack),
            _ => Err(format!(
                "unknown fast-track mode {s:?} (expected off, inherit or fasttrack)"
            )),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Off => "off",
            Mode::Inherit => "inherit",
            Mode::FastTrack => "fasttrack",
        })
    }
}

/// Identifies one lock across the process: a domain (one lock table, from [`new_domain`])
/// and the lock's id within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LockKey {
    pub domain: u64,
    pub id: u64,
}

/// A fresh lock domain id, unique in the process.
pub fn new_domain() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

thread_local! {
    static LATENCY_CRITICAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread latency-critical (an app's main looper) or not.
pub fn set_latency_critical(critical: bool) {
    LATENCY_CRITICAL.with(|c| c.set(critical));
}

/// Whether the calling thread is latency-critical.
pub fn is_latency_critical() -> bool {
    LATENCY_CRITICAL.with(|c| c.get())
}
