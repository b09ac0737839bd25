//! What a tracker counted: [`FastTrackCounters`], bumped by the threads that do the work,
//! and [`Stats`], a snapshot of them. Both are declared from one list, so a counter cannot
//! be added to one and forgotten in the other.

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// Counters of what a tracker did. Each is a count of its own, added to with a
        /// relaxed increment and read only for reports.
        #[derive(Debug, Default)]
        pub struct FastTrackCounters {
            $($(#[$doc])* pub $name: AtomicU64,)*
        }

        /// A snapshot of a tracker's [`FastTrackCounters`].
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct Stats {
            $($(#[$doc])* pub $name: u64,)*
        }

        impl FastTrackCounters {
            /// Every counter, read now.
            pub fn snapshot(&self) -> Stats {
                Stats {
                    $($name: self.$name.load(Ordering::Relaxed),)*
                }
            }
        }
    };
}

counters! {
    /// Times a latency-critical thread blocked on a lock (with the tracker on).
    blocks,
    /// Holders boosted (sticky boosts included).
    boosts,
    /// Boosted holders whose own priority was given back.
    restores,
    /// Boosts the system refused (no privilege).
    denied,
    /// CPU time spent in the tracker's block, spin, acquire and release paths (the
    /// detector's overhead, spins included).
    cpu_ns,
    /// Spins on a fast-tracked holder.
    spins,
    /// Spins that ended with the lock free.
    spins_acquired,
    /// Spins that stopped because the holder was not running.
    spins_stalled,
    /// CPU time spent spinning (also counted in `cpu_ns`).
    spin_cpu_ns,
    /// Boosts of known blockers on acquisition (also counted in `boosts`).
    sticky_boosts,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_reads_each_counter_into_its_own_field() {
        let c = FastTrackCounters::default();
        let all = [
            &c.blocks,
            &c.boosts,
            &c.restores,
            &c.denied,
            &c.cpu_ns,
            &c.spins,
            &c.spins_acquired,
            &c.spins_stalled,
            &c.spin_cpu_ns,
            &c.sticky_boosts,
        ];
        for (i, counter) in all.iter().enumerate() {
            counter.fetch_add(i as u64 + 1, Ordering::Relaxed);
        }
        assert_eq!(
            c.snapshot(),
            Stats {
                blocks: 1,
                boosts: 2,
                restores: 3,
                denied: 4,
                cpu_ns: 5,
                spins: 6,
                spins_acquired: 7,
                spins_stalled: 8,
                spin_cpu_ns: 9,
                sticky_boosts: 10,
            }
        );
    }
}
