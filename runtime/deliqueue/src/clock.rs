//! Clocks for message due times: the real monotonic clock and a virtual clock that
//! tests and benchmarks move by hand.
//!
//! Times are nanoseconds and never read 0, since a due time of 0 means "front of queue".
//!
//! Every post reads the clock, so its cost is on the post path: [`MonotonicClock`] reads
//! the CPU's invariant time-stamp counter through `quanta` (about 10 ns here, against
//! about 24 ns for `Instant::now`), scaled to nanoseconds by a calibration against the
//! monotonic clock that runs once per process (about 0.6 ms on a quiet host; `quanta`
//! spins until its estimate settles or 200 ms pass, so on a busy one a process can lose
//! tens of milliseconds to it). Where the counter is not invariant, or under Miri, it is
//! the monotonic clock itself. [`InstantClock`] is the monotonic clock read through
//! `Instant::now`, with nothing to calibrate: for a process whose start counts more than
//! its posts (an app, whose main looper posts a message per MASM `send`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A source of the current time in nanoseconds (never 0). Readings never go backward:
/// the looper relies on it to skip reading the clock when a message is known due.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> u64;
}

/// The monotonic clock, counted from when it was made (plus one, so it never reads 0).
#[derive(Debug, Clone)]
pub struct MonotonicClock {
    #[cfg(not(miri))]
    source: quanta::Clock,
    #[cfg(not(miri))]
    origin: u64,
    #[cfg(miri)]
    origin: std::time::Instant,
}

impl MonotonicClock {
    pub fn new() -> MonotonicClock {
        #[cfg(not(miri))]
        {
            // One source per process: making one probes the CPU (`cpuid`, a trap to the
            // hypervisor in a VM) and, the first time, calibrates; clones share both.
            static SOURCE: std::sync::OnceLock<quanta::Clock> = std::sync::OnceLock::new();
            let source = SOURCE.get_or_init(quanta::Clock::new).clone();
            let origin = source.raw();
            MonotonicClock { source, origin }
        }
        #[cfg(miri)]
        MonotonicClock {
            origin: std::time::Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    #[inline]
    fn now(&self) -> u64 {
        // A reading before the origin (another core's counter a few cycles behind) counts
        // as the origin: the delta saturates at 0.
        #[cfg(not(miri))]
        let elapsed = self.source.delta_as_nanos(self.origin, self.source.raw());
        #[cfg(miri)]
        let elapsed = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        elapsed.saturating_add(1)
    }
}

/// The monotonic clock read through `Instant::now` (`clock_gettime`), counted from when
/// it was made (plus one, so it never reads 0): no calibration when it is made, about
/// 14 ns more per reading than [`MonotonicClock`].
#[derive(Debug, Clone)]
pub struct InstantClock {
    origin: std::time::Instant,
}

impl InstantClock {
    pub fn new() -> InstantClock {
        InstantClock {
            origin: std::time::Instant::now(),
        }
    }
}

impl Default for InstantClock {
    fn default() -> Self {
        InstantClock::new()
    }
}

impl Clock for InstantClock {
    #[inline]
    fn now(&self) -> u64 {
        let elapsed = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        elapsed.saturating_add(1)
    }
}

/// A clock that only moves when told to; clones share the same time.
#[derive(Debug, Clone)]
pub struct VirtualClock {
    now: Arc<AtomicU64>,
}

impl VirtualClock {
    /// A virtual clock reading `start` (raised to 1 if 0).
    pub fn new(start: u64) -> VirtualClock {
        VirtualClock {
            now: Arc::new(AtomicU64::new(start.max(1))),
        }
    }

    /// Moves the clock forward by `ns`.
    pub fn advance(&self, ns: u64) {
        // Relaxed: the clock is a plain value; queues read it under their own ordering.
        self.now.fetch_add(ns, Ordering::Relaxed);
    }

    /// Moves the clock forward to `ns`; an earlier time is ignored (a clock never goes
    /// backward).
    pub fn set(&self, ns: u64) {
        self.now.fetch_max(ns.max(1), Ordering::Relaxed);
    }
}

impl Clock for VirtualClock {
    #[inline]
    fn now(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instant_clock_starts_above_zero_and_never_goes_back() {
        let clock = InstantClock::new();
        let mut last = clock.now();
        assert!(last >= 1);
        for _ in 0..1000 {
            let t = clock.now();
            assert!(t >= last, "{t} after {last}");
            last = t;
        }
        // Clones count from the same origin.
        assert!(clock.clone().now() >= last);
    }
}
