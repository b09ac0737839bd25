//! Spinning on a fast-tracked holder: a latency-critical waiter spins, the lock released,
//! while the holder it boosted runs on a CPU, for at most an adaptive budget, instead of
//! parking at once (the module doc of `fasttrack` gives the rule).

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{is_latency_critical, FastTracker, Mode};
use crate::cpuclock::{self, CpuClockType};

/// Longest a waiter spins on a fast-tracked holder before parking, by default.
pub const SPIN_LIMIT_NS: u64 = 400_000;
/// Shortest spin budget the adaptation goes down to.
pub const SPIN_MIN_NS: u64 = 20_000;
/// A holder whose scheduler clock has not advanced for this long is not on a CPU: the
/// waiter stops spinning and parks.
pub const SPIN_STALL_NS: u64 = 50_000;

/// How a [`FastTracker::spin_on_holder`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinEnd {
    /// No spin (nothing fast-tracked, or spinning disabled).
    Skipped,
    /// The lock became free: take it without parking.
    Free,
    /// The spin budget ran out while the holder still ran.
    Budget,
    /// The holder stopped running (or is gone): park.
    Stalled,
}

impl FastTracker {
    /// The calling latency-critical thread, whose [`FastTracker::on_block`] boosted
    /// `holder_tid`, spins (with the lock's internal mutex released) until `is_free` says the
    /// lock can be taken, the holder stops running ([`SPIN_STALL_NS`] without CPU progress),
    /// or the adaptive budget runs out (module doc); [`SpinEnd::Free`] tells the caller to
    /// take the lock without parking. Returns [`SpinEnd::Skipped`] at once when the mode is
    /// `Off`, spinning is disabled, the caller is not latency-critical, or `holder_tid` is
    /// not boosted by this tracker.
    pub fn spin_on_holder(&self, holder_tid: i32, is_free: impl FnMut() -> bool) -> SpinEnd {
        if self.mode == Mode::Off
            || self.spin_limit_ns == 0
            || !is_latency_critical()
            || !self.is_boosted(holder_tid)
        {
            return SpinEnd::Skipped;
        }
        let (end, cpu) = self.overhead(|| self.spin(holder_tid, is_free));
        self.counters.spin_cpu_ns.fetch_add(cpu, Ordering::Relaxed);
        end
    }

    /// The spin itself, its adaptation and its counts.
    fn spin(&self, holder_tid: i32, mut is_free: impl FnMut() -> bool) -> SpinEnd {
        let start = Instant::now();
        let budget = (2 * self.spin_avg_ns.load(Ordering::Relaxed))
            .clamp(SPIN_MIN_NS.min(self.spin_limit_ns), self.spin_limit_ns);
        let clock = cpuclock::thread_cpu_clock_id(holder_tid, CpuClockType::Sched);
        let mut last_run = cpuclock::read_clock_ns(clock).ok();
        let mut last_progress = 0;
        let end = loop {
            if is_free() {
                break SpinEnd::Free;
            }
            let now = start.elapsed().as_nanos() as u64;
            if now >= budget {
                break SpinEnd::Budget;
            }
            let run = cpuclock::read_clock_ns(clock).ok();
            if run.is_none() {
                // The holder is gone; the lock's own release path wakes parked waiters.
                break SpinEnd::Stalled;
            }
            if run != last_run {
                last_run = run;
                last_progress = now;
            } else if now - last_progress >= SPIN_STALL_NS {
                break SpinEnd::Stalled;
            }
            for _ in 0..64 {
                std::hint::spin_loop();
            }
        };
        let spun = start.elapsed().as_nanos() as u64;
        // Adapt to what a wait on a running, boosted holder costs: a success or a budget
        // exhausted while the holder ran both say how long such waits are; a stall says
        // nothing about it.
        if !matches!(end, SpinEnd::Stalled) {
            let avg = self.spin_avg_ns.load(Ordering::Relaxed);
            let next = avg - avg / 8 + spun / 8;
            self.spin_avg_ns.store(next, Ordering::Relaxed);
        }
        self.counters.spins.fetch_add(1, Ordering::Relaxed);
        match end {
            SpinEnd::Free => self.counters.spins_acquired.fetch_add(1, Ordering::Relaxed),
            SpinEnd::Stalled => self.counters.spins_stalled.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        end
    }
}
