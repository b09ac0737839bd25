//! The low-memory killer's policy, as plain functions with no system calls: the one
//! victim chooser of both hosts of the System. Which apps are in the background, least
//! recently used first ([`lru_background`]), the state each gets from its place there
//! ([`background_states`]), the `oom_score_adj` an app gets from its state (the bands of
//! Android's `ProcessList`), when to kill ([`Trigger`]), and whom ([`choose_victim`]:
//! the highest adj, then the largest RSS, as lmkd does with `ro.lmk.kill_heaviest_task`).
//! The process mode's killer ([`crate::lmk`]) and the in-process model's budget both
//! choose through these.

/// The app in front (`ProcessList.FOREGROUND_APP_ADJ`).
pub const FOREGROUND_APP_ADJ: i32 = 0;
/// The app the user was in before the current one (`PREVIOUS_APP_ADJ`).
pub const PREVIOUS_APP_ADJ: i32 = 700;
/// The band of cached (background, invisible) apps (`CACHED_APP_MIN_ADJ` ..
/// `CACHED_APP_MAX_ADJ`).
pub const CACHED_APP_MIN_ADJ: i32 = 900;
pub const CACHED_APP_MAX_ADJ: i32 = 999;

/// What an app is doing, as the activity manager sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppState {
    Foreground,
    Previous,
    /// A cached app; `lru_rank` 0 is the most recently used of them.
    Cached {
        lru_rank: u32,
    },
}

/// The `oom_score_adj` of an app in `state`: cached apps take one step of the cached
/// band per LRU position, so the least recently used has the highest adj and dies
/// first; from the hundredth on they share `CACHED_APP_MAX_ADJ`.
pub fn oom_score_adj(state: AppState) -> i32 {
    match state {
        AppState::Foreground => FOREGROUND_APP_ADJ,
        AppState::Previous => PREVIOUS_APP_ADJ,
        AppState::Cached { lru_rank } => {
            CACHED_APP_MIN_ADJ
                + lru_rank.min((CACHED_APP_MAX_ADJ - CACHED_APP_MIN_ADJ) as u32) as i32
        }
    }
}

/// An app as the activity manager last placed it: whether it is in front, and when it
/// last left the foreground (any clock that orders, `Instant` or ns since the run began).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Standing<T> {
    pub id: usize,
    pub foreground: bool,
    pub left_foreground: T,
}

/// The background apps (every one given but those in front), least recently used first:
/// by when each last left the foreground, ties by the lower id.
pub fn lru_background<T: Ord + Copy>(apps: &[Standing<T>]) -> Vec<usize> {
    let mut v: Vec<(T, usize)> = apps
        .iter()
        .filter(|a| !a.foreground)
        .map(|a| (a.left_foreground, a.id))
        .collect();
    v.sort();
    v.into_iter().map(|(_, id)| id).collect()
}

/// The state of each background app from its place in `lru` (least recently used
/// first): the most recently used is the previous app, the others are cached, ranked
/// from the most recently used (rank 0) on; in `lru`'s order.
pub fn background_states(lru: &[usize]) -> Vec<(usize, AppState)> {
    let n = lru.len();
    lru.iter()
        .enumerate()
        .map(|(i, &id)| {
            let state = match n - 1 - i {
                0 => AppState::Previous,
                rank => AppState::Cached {
                    lru_rank: rank as u32 - 1,
                },
            };
            (id, state)
        })
        .collect()
}

/// An app that may be killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub pid: u32,
    pub adj: i32,
    pub rss_bytes: u64,
}

/// The app to kill: among those with adj at least `min_adj`, the highest adj, and
/// within it the largest RSS (ties: the lower pid, so the choice is deterministic).
pub fn choose_victim(candidates: &[Candidate], min_adj: i32) -> Option<Candidate> {
    candidates
        .iter()
        .filter(|c| c.adj >= min_adj)
        .max_by(|a, b| {
            a.adj
                .cmp(&b.adj)
                .then(a.rss_bytes.cmp(&b.rss_bytes))
                .then(b.pid.cmp(&a.pid))
        })
        .copied()
}

/// When the killer acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trigger {
    /// Kill while the group's usage is above `limit - headroom` (the mode without
    /// swap: act before the kernel's OOM killer must). `None`: never on usage alone.
    pub headroom_bytes: Option<u64>,
    /// Kill on a complete stall (a PSI `full` memory stall of 700 ms in a second,
    /// lmkd's `psi_complete_stall_ms`, or v1's `critical` vmpressure level where the
    /// kernel has no PSI): lmkd's `NOT_RESPONDING` kill when the device has swap.
    pub on_critical: bool,
    /// With swap: kill when the run's swap device has less than this free (lmkd's
    /// `swap_free_low_percentage`), since a group that cannot swap any more meets the
    /// kernel's OOM killer at its limit ...
    pub swap_free_low_bytes: Option<u64>,
    /// ... and, where set, only while usage is also above the limit less this (lmkd's
    /// `LOW_MEM_AND_SWAP`: the watermark breached and swap low).
    pub swap_low_headroom_bytes: Option<u64>,
    /// Apps with a lower adj are never killed.
    pub min_adj: i32,
}

impl Trigger {
    /// Without swap: kill when usage comes within `headroom_bytes` of the limit.
    pub fn usage(headroom_bytes: u64) -> Trigger {
        Trigger {
            headroom_bytes: Some(headroom_bytes),
            on_critical: false,
            swap_free_low_bytes: None,
            swap_low_headroom_bytes: None,
            min_adj: FOREGROUND_APP_ADJ,
        }
    }

    /// With swap, lmkd's PSI strategy: usage sits at the limit by design and is no
    /// reason to kill; kill on a complete stall (and, with
    /// [`Trigger::with_swap_free_low`], when the swap device runs low).
    pub fn pressure() -> Trigger {
        Trigger {
            headroom_bytes: None,
            on_critical: true,
            swap_free_low_bytes: None,
            swap_low_headroom_bytes: None,
            min_adj: FOREGROUND_APP_ADJ,
        }
    }

    /// Also kill when the run's swap device has less than `bytes` free.
    pub fn with_swap_free_low(self, bytes: u64) -> Trigger {
        Trigger {
            swap_free_low_bytes: Some(bytes),
            ..self
        }
    }

    /// The swap-low kill waits until usage is also above the limit less
    /// `headroom_bytes` (memory low as well as swap).
    pub fn with_swap_low_needing_headroom(self, headroom_bytes: u64) -> Trigger {
        Trigger {
            swap_low_headroom_bytes: Some(headroom_bytes),
            ..self
        }
    }
}

/// What the watcher saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub usage: u64,
    pub limit: u64,
    /// A critical pressure event arrived since the last sample.
    pub critical: bool,
    /// Free bytes on the run's swap device, where it has one.
    pub swap_free: Option<u64>,
}

/// Why the killer acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Usage above the limit less the headroom.
    Headroom { usage: u64, threshold: u64 },
    /// A complete stall (or, without PSI, a critical vmpressure event).
    Critical,
    /// The swap device is nearly full.
    SwapLow { free: u64, threshold: u64 },
}

impl Reason {
    /// A short name for counts and reports.
    pub fn name(&self) -> &'static str {
        match self {
            Reason::Headroom { .. } => "headroom",
            Reason::Critical => "complete-stall",
            Reason::SwapLow { .. } => "swap-low",
        }
    }
}

/// Whether `sample` calls for a kill under `trigger`, and why.
pub fn kill_reason(sample: &Sample, trigger: &Trigger) -> Option<Reason> {
    if let Some(h) = trigger.headroom_bytes {
        let threshold = sample.limit.saturating_sub(h);
        if sample.usage > threshold {
            return Some(Reason::Headroom {
                usage: sample.usage,
                threshold,
            });
        }
    }
    if trigger.on_critical && sample.critical {
        return Some(Reason::Critical);
    }
    if let (Some(threshold), Some(free)) = (trigger.swap_free_low_bytes, sample.swap_free) {
        let memory_low = trigger
            .swap_low_headroom_bytes
            .is_none_or(|h| sample.usage > sample.limit.saturating_sub(h));
        if free < threshold && memory_low {
            return Some(Reason::SwapLow { free, threshold });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(pid: u32, adj: i32, rss_mib: u64) -> Candidate {
        Candidate {
            pid,
            adj,
            rss_bytes: rss_mib << 20,
        }
    }

    #[test]
    fn adj_follows_the_android_bands_and_lru_order() {
        assert_eq!(oom_score_adj(AppState::Foreground), 0);
        assert_eq!(oom_score_adj(AppState::Previous), 700);
        assert_eq!(oom_score_adj(AppState::Cached { lru_rank: 0 }), 900);
        assert_eq!(oom_score_adj(AppState::Cached { lru_rank: 5 }), 905);
        assert_eq!(oom_score_adj(AppState::Cached { lru_rank: 99 }), 999);
        assert_eq!(
            oom_score_adj(AppState::Cached { lru_rank: 1000 }),
            999,
            "capped at the band's top"
        );
        let older = oom_score_adj(AppState::Cached { lru_rank: 3 });
        let newer = oom_score_adj(AppState::Cached { lru_rank: 2 });
        assert!(older > newer && newer > oom_score_adj(AppState::Previous));
    }

    #[test]
    fn the_background_is_ordered_least_recently_used_first_and_ranked() {
        let at = |id, foreground, left| Standing {
            id,
            foreground,
            left_foreground: left,
        };
        let apps = [
            at(0, false, 30),
            at(1, true, 50),
            at(2, false, 10),
            at(3, false, 30),
        ];
        let lru = lru_background(&apps);
        assert_eq!(lru, [2, 0, 3], "the app in front left out, ties by id");
        let states = background_states(&lru);
        assert_eq!(
            states,
            [
                (2, AppState::Cached { lru_rank: 1 }),
                (0, AppState::Cached { lru_rank: 0 }),
                (3, AppState::Previous),
            ]
        );
        // The killer's choice over those states is the least recently used.
        let candidates: Vec<Candidate> = states
            .iter()
            .map(|&(id, st)| c(id as u32, oom_score_adj(st), 1))
            .collect();
        assert_eq!(choose_victim(&candidates, 0).unwrap().pid, 2);
        assert!(background_states(&[]).is_empty());
        assert_eq!(background_states(&[7]), [(7, AppState::Previous)]);
    }

    #[test]
    fn the_highest_adj_dies_first_then_the_heaviest() {
        let apps = [
            c(10, 0, 300),
            c(11, 700, 200),
            c(12, 901, 10),
            c(13, 900, 100),
        ];
        assert_eq!(
            choose_victim(&apps, 0).unwrap().pid,
            12,
            "highest adj even when small"
        );
        let apps = [
            c(10, 0, 300),
            c(11, 905, 20),
            c(12, 905, 50),
            c(13, 905, 30),
        ];
        assert_eq!(
            choose_victim(&apps, 0).unwrap().pid,
            12,
            "same adj: the largest RSS"
        );
        let apps = [c(14, 905, 50), c(12, 905, 50)];
        assert_eq!(
            choose_victim(&apps, 0).unwrap().pid,
            12,
            "full tie: the lower pid"
        );
        let apps = [c(10, 0, 300), c(11, 700, 20)];
        assert_eq!(
            choose_victim(&apps, 900),
            None,
            "nothing at or above min_adj"
        );
        assert_eq!(choose_victim(&apps, 0).unwrap().pid, 11);
        assert_eq!(choose_victim(&[], 0), None);
    }

    #[test]
    fn usage_trigger_fires_above_limit_less_headroom() {
        let t = Trigger::usage(16 << 20);
        let at = |usage| Sample {
            usage,
            limit: 64 << 20,
            critical: false,
            swap_free: Some(0),
        };
        assert_eq!(
            kill_reason(&at(48 << 20), &t),
            None,
            "exactly at the threshold"
        );
        assert_eq!(
            kill_reason(&at((48 << 20) + 1), &t),
            Some(Reason::Headroom {
                usage: (48 << 20) + 1,
                threshold: 48 << 20
            })
        );
        // Critical events and a full swap device alone do not fire a usage trigger.
        assert_eq!(
            kill_reason(
                &Sample {
                    critical: true,
                    ..at(1)
                },
                &t
            ),
            None
        );
    }

    #[test]
    fn pressure_trigger_fires_on_critical_or_a_nearly_full_swap() {
        let t = Trigger::pressure().with_swap_free_low(8 << 20);
        let full = Sample {
            usage: 64 << 20,
            limit: 64 << 20,
            critical: false,
            swap_free: Some(100 << 20),
        };
        assert_eq!(
            kill_reason(&full, &t),
            None,
            "a swapping group sits at its limit"
        );
        let critical = Sample {
            critical: true,
            ..full
        };
        assert_eq!(kill_reason(&critical, &t), Some(Reason::Critical));
        let low = Sample {
            swap_free: Some((8 << 20) - 1),
            ..full
        };
        assert_eq!(
            kill_reason(&low, &t),
            Some(Reason::SwapLow {
                free: (8 << 20) - 1,
                threshold: 8 << 20
            })
        );
        let exactly = Sample {
            swap_free: Some(8 << 20),
            ..full
        };
        assert_eq!(kill_reason(&exactly, &t), None, "exactly at the threshold");
        let unknown = Sample {
            swap_free: None,
            ..full
        };
        assert_eq!(kill_reason(&unknown, &t), None, "no swap device known");
    }

    #[test]
    fn swap_low_kills_wait_for_memory_low_too() {
        let t = Trigger::pressure()
            .with_swap_free_low(8 << 20)
            .with_swap_low_needing_headroom(4 << 20);
        let low_swap = Sample {
            usage: 60 << 20,
            limit: 64 << 20,
            critical: false,
            swap_free: Some(1 << 20),
        };
        assert_eq!(
            kill_reason(&low_swap, &t),
            None,
            "usage exactly at limit less headroom: memory is not low"
        );
        let both = Sample {
            usage: (60 << 20) + 1,
            ..low_swap
        };
        assert_eq!(
            kill_reason(&both, &t),
            Some(Reason::SwapLow {
                free: 1 << 20,
                threshold: 8 << 20
            })
        );
        let plenty = Sample {
            swap_free: Some(9 << 20),
            ..both
        };
        assert_eq!(kill_reason(&plenty, &t), None, "memory low, swap not");
        // A complete stall kills whatever usage and swap say.
        let stalled = Sample {
            critical: true,
            usage: 0,
            ..plenty
        };
        assert_eq!(kill_reason(&stalled, &t), Some(Reason::Critical));
    }
}
