//! What each policy's mechanism reached of the apps' memory, by kind: small objects
//! (under 2 KiB), large objects (2 KiB and more) and native buffers (`nalloc`).
//!
//! Every app process reports its bytes of each kind allocated, freed, resident, reclaimed
//! (taken by Marvin's reclaimer, in its swap file) and swapped (paged out by the kernel)
//! with its marks (`marvin_app::reach`); the System keeps each app's last report in its
//! record ([`AppReach`], `apps[].reach` in `summary.json`) and sums them per run
//! ([`RunReach`], `reach`): what the apps alive at the end hold where, and what the
//! killer freed by killing (the live bytes of each killed app at its last report).
//!
//! What a mechanism can reach at all ([`reachable`]): the killer frees a whole app; the
//! kernel's swap pages out every anonymous page, whatever it holds; Marvin's object swap
//! stubs and reclaims objects of 2 KiB and more (its policy's candidates), and the System
//! pages out a background app's native buffers (`process_madvise(MADV_PAGEOUT)`); no
//! policy reclaims small objects but by the kernel's swap or a kill.

use serde::{Deserialize, Serialize};

use crate::summary::{AppRecord, Summary};

/// One kind's bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KindReach {
    pub allocated: u64,
    pub freed: u64,
    pub resident: u64,
    pub reclaimed: u64,
    pub swapped: u64,
    /// Freed by the killer: the kind's live bytes of killed apps at their last report
    /// (per run only).
    pub killed: u64,
}

impl KindReach {
    /// Alive now: allocated less freed.
    pub fn live(&self) -> u64 {
        self.allocated.saturating_sub(self.freed)
    }

    fn add(&mut self, o: &KindReach) {
        self.allocated += o.allocated;
        self.freed += o.freed;
        self.resident += o.resident;
        self.reclaimed += o.reclaimed;
        self.swapped += o.swapped;
        self.killed += o.killed;
    }
}

/// An app's memory by kind, as it last reported it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AppReach {
    pub small: KindReach,
    pub large: KindReach,
    pub native: KindReach,
}

impl AppReach {
    /// From an app's reported counters (`small_allocated_bytes`, `large_resident_bytes`,
    /// ...; 0 for one it did not report).
    pub fn from_counters(counter: impl Fn(&str) -> u64) -> AppReach {
        let kind = |k: &str| KindReach {
            allocated: counter(&format!("{k}_allocated_bytes")),
            freed: counter(&format!("{k}_freed_bytes")),
            resident: counter(&format!("{k}_resident_bytes")),
            reclaimed: counter(&format!("{k}_reclaimed_bytes")),
            swapped: counter(&format!("{k}_swapped_bytes")),
            killed: 0,
        };
        AppReach {
            small: kind("small"),
            large: kind("large"),
            native: kind("native"),
        }
    }

    pub fn kinds(&self) -> [&KindReach; 3] {
        [&self.small, &self.large, &self.native]
    }

    fn kinds_mut(&mut self) -> [&mut KindReach; 3] {
        [&mut self.small, &mut self.large, &mut self.native]
    }
}

/// The kinds a policy's mechanism can reach: small objects, large objects, native.
pub fn reachable(policy: &str) -> [bool; 3] {
    match policy {
        "kill" | "kernel-swap" => [true, true, true],
        "page-swap" => [false, true, false],
        p if p.starts_with("marvin") => [false, true, true],
        _ => [false, false, false],
    }
}

/// A run's memory by kind: the apps alive at the end and what the killer freed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunReach {
    /// Summed over the apps alive at the end, with `killed` over the killed apps.
    pub kinds: AppReach,
    /// Which kinds the policy's mechanism can reach (small, large, native).
    pub reachable: [bool; 3],
    /// The live bytes at the end of the kinds it can reach, and of all kinds.
    pub reachable_bytes: u64,
    pub live_bytes: u64,
}

impl RunReach {
    /// The run of `policy` whose app records are `apps`.
    pub fn of(policy: &str, apps: &[AppRecord]) -> RunReach {
        let mut kinds = AppReach::default();
        for a in apps {
            let alive = a.end == "alive at the end";
            let killed = a.end == "killed";
            for (sum, k) in kinds.kinds_mut().into_iter().zip(a.reach.kinds()) {
                if alive {
                    sum.add(k);
                } else if killed {
                    sum.killed += k.live();
                }
            }
        }
        let reachable = reachable(policy);
        let live: Vec<u64> = kinds.kinds().iter().map(|k| k.live()).collect();
        RunReach {
            kinds,
            reachable,
            reachable_bytes: (0..3).filter(|&i| reachable[i]).map(|i| live[i]).sum(),
            live_bytes: live.iter().sum(),
        }
    }

    /// The share of the live bytes the policy's mechanism can reach, 0 to 1.
    pub fn reachable_share(&self) -> f64 {
        self.reachable_bytes as f64 / self.live_bytes.max(1) as f64
    }
}

/// A table cell: one figure of a run.
pub type Cell = fn(&Summary) -> f64;

/// The table's rows, in bytes: each kind's bytes of the apps alive at the end resident,
/// reclaimed and swapped, what the killer freed, and what the policy can reach.
pub fn rows() -> Vec<(&'static str, Cell)> {
    vec![
        ("small objects resident", |s| {
            s.reach.kinds.small.resident as f64
        }),
        ("small objects swapped", |s| {
            s.reach.kinds.small.swapped as f64
        }),
        ("small objects killed", |s| {
            s.reach.kinds.small.killed as f64
        }),
        ("large objects resident", |s| {
            s.reach.kinds.large.resident as f64
        }),
        ("large objects reclaimed", |s| {
            s.reach.kinds.large.reclaimed as f64
        }),
        ("large objects swapped", |s| {
            s.reach.kinds.large.swapped as f64
        }),
        ("large objects killed", |s| {
            s.reach.kinds.large.killed as f64
        }),
        ("native resident", |s| s.reach.kinds.native.resident as f64),
        ("native swapped", |s| s.reach.kinds.native.swapped as f64),
        ("native killed", |s| s.reach.kinds.native.killed as f64),
        ("live at the end", |s| s.reach.live_bytes as f64),
        ("  the policy can reach", |s| s.reach.reachable_bytes as f64),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(end: &str, live: [u64; 3]) -> AppRecord {
        let k = |l: u64| KindReach {
            allocated: l + 100,
            freed: 100,
            resident: l / 2,
            reclaimed: l / 4,
            swapped: l - l / 2 - l / 4,
            killed: 0,
        };
        AppRecord {
            end: end.into(),
            reach: AppReach {
                small: k(live[0]),
                large: k(live[1]),
                native: k(live[2]),
            },
            ..AppRecord::default()
        }
    }

    #[test]
    fn counters_are_read_by_kind() {
        let r = AppReach::from_counters(|n| match n {
            "small_allocated_bytes" => 10,
            "large_reclaimed_bytes" => 20,
            "native_swapped_bytes" => 30,
            _ => 0,
        });
        assert_eq!(r.small.allocated, 10);
        assert_eq!(r.large.reclaimed, 20);
        assert_eq!(r.native.swapped, 30);
        assert_eq!(r.native.allocated, 0);
    }

    #[test]
    fn a_run_sums_the_apps_alive_and_books_killed_apps_as_killed() {
        let apps = [
            record("alive at the end", [1000, 2000, 4000]),
            record("alive at the end", [1000, 2000, 4000]),
            record("killed", [10, 20, 40]),
            record("crashed", [7, 7, 7]),
        ];
        let r = RunReach::of("marvin", &apps);
        assert_eq!(r.kinds.small.resident, 1000);
        assert_eq!(r.kinds.large.reclaimed, 1000);
        assert_eq!(r.kinds.native.swapped, 2000);
        assert_eq!(r.kinds.large.killed, 20);
        assert_eq!(r.live_bytes, 14_000);
        // Marvin reaches large objects and native buffers, not small objects.
        assert_eq!(r.reachable_bytes, 12_000);
        assert!((r.reachable_share() - 12.0 / 14.0).abs() < 1e-9);
        for k in r.kinds.kinds() {
            assert_eq!(k.resident + k.reclaimed + k.swapped + k.freed, k.allocated);
        }
        assert_eq!(RunReach::of("kill", &apps).reachable_bytes, 14_000);
    }
}
