//! CPU time accounting of the runtime's own work: collections, the swap saver, the
//! reclaimer and restores, so a run can report them as a share of the process's CPU time.
//!
//! Each piece of work is measured on the thread doing it with the thread CPU clock
//! ([`crate::cpuclock::thread_cpu_time_ns`]) and added to one [`CpuAccount`] per app:
//!
//! ```
//! use marvin_runtime::{Activity, CpuAccount};
//!
//! let account = CpuAccount::new();
//! let sum = account.measure(Activity::Saver, || (0..1000u64).sum::<u64>());
//! assert_eq!(sum, 499_500);
//! assert!(account.share_of(u64::MAX) <= 1.0);
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use crate::cpuclock;

/// Which part of the runtime did the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activity {
    Gc,
    Saver,
    Reclaimer,
    Restore,
}

impl Activity {
    pub const ALL: [Activity; 4] = [
        Activity::Gc,
        Activity::Saver,
        Activity::Reclaimer,
        Activity::Restore,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Activity::Gc => "gc",
            Activity::Saver => "saver",
            Activity::Reclaimer => "reclaimer",
            Activity::Restore => "restore",
        }
    }
}

/// CPU nanoseconds spent per [`Activity`]; shared by the threads that do the work.
#[derive(Debug, Default)]
pub struct CpuAccount {
    ns: [AtomicU64; 4],
}

impl CpuAccount {
    pub fn new() -> CpuAccount {
        CpuAccount::default()
    }

    /// Adds `ns` of CPU time to `activity`.
    pub fn add(&self, activity: Activity, ns: u64) {
        self.ns[activity as usize].fetch_add(ns, Ordering::Relaxed);
    }

    /// Runs `f` on the calling thread and adds the thread CPU time it took to `activity`.
    pub fn measure<R>(&self, activity: Activity, f: impl FnOnce() -> R) -> R {
        let (r, ns) = cpuclock::measure_thread_cpu(f);
        self.add(activity, ns);
        r
    }

    /// CPU nanoseconds spent on `activity` so far.
    pub fn get(&self, activity: Activity) -> u64 {
        self.ns[activity as usize].load(Ordering::Relaxed)
    }

    /// CPU nanoseconds spent on every activity.
    pub fn total(&self) -> u64 {
        Activity::ALL.iter().map(|&a| self.get(a)).sum()
    }

    /// [`total`](CpuAccount::total) as a fraction of `process_cpu_ns` (0 when that is 0),
    /// at most 1.
    pub fn share_of(&self, process_cpu_ns: u64) -> f64 {
        if process_cpu_ns == 0 {
            return 0.0;
        }
        (self.total() as f64 / process_cpu_ns as f64).min(1.0)
    }
}

/// CPU time (user + system) of the whole process in nanoseconds
/// (`CLOCK_PROCESS_CPUTIME_ID`), 0 if it cannot be read.
pub fn process_cpu_time_ns() -> u64 {
    cpuclock::read_clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hint::black_box;

    #[test]
    fn measured_work_is_accounted_to_its_activity() {
        let account = CpuAccount::new();
        let p0 = process_cpu_time_ns();
        account.measure(Activity::Gc, || {
            let start = cpuclock::thread_cpu_time_ns();
            while cpuclock::thread_cpu_time_ns() - start < 5_000_000 {
                black_box((0..1000u64).sum::<u64>());
            }
        });
        let p1 = process_cpu_time_ns();
        assert!(account.get(Activity::Gc) >= 5_000_000);
        assert_eq!(account.get(Activity::Saver), 0);
        account.add(Activity::Restore, 7);
        assert_eq!(account.total(), account.get(Activity::Gc) + 7);
        assert!(p1 - p0 >= account.get(Activity::Gc) - 1_000_000);
        // Other threads of the test process add to its CPU time, so only the bounds hold.
        let share = account.share_of(p1 - p0 + 7);
        assert!(share > 0.0 && share <= 1.0, "share {share}");
        assert_eq!(account.share_of(account.total() * 4), 0.25);
        assert_eq!(account.share_of(0), 0.0);
    }
}
