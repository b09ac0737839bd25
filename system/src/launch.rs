//! The launch phase of the pressure experiment and what it measures: once every app has
//! been launched, the activity manager brings apps back to the foreground one after
//! another (a seeded random order over every app but the one in front, killed ones
//! included, which start cold), as a user switching apps would, and times each launch.
//!
//! A launch lasts from the moment the System tells the app it is in the foreground
//! (for a killed app: starts it again) until the app's first frame there (`mark
//! "frame"`, see [`marvin_app::Frames`]), both read on `CLOCK_BOOTTIME`, which the
//! System and every app process read alike. Each launch is classified:
//! - **cold**: the app had been killed and started again;
//! - **warm**: it had to bring memory back first: objects restored (eager restore) or
//!   faulted (on demand), pages read back from swap, or (in the process mode) major
//!   page faults of its process during the launch;
//! - **hot**: none of that; it was still cached.
//!
//! [`LaunchStats`] gives count, median, p90 and p99 per class and over all launches.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

/// How a launch found its app.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize, PartialOrd, Ord,
)]
#[serde(rename_all = "snake_case")]
pub enum LaunchClass {
    /// Still cached: nothing had to come back.
    Hot,
    /// Cached, but some of its memory had to come back (restored, faulted, swapped in).
    Warm,
    /// Killed: started again.
    Cold,
}

impl LaunchClass {
    pub const ALL: [LaunchClass; 3] = [LaunchClass::Hot, LaunchClass::Warm, LaunchClass::Cold];

    pub fn name(self) -> &'static str {
        match self {
            LaunchClass::Hot => "hot",
            LaunchClass::Warm => "warm",
            LaunchClass::Cold => "cold",
        }
    }
}

/// What an app brought back during one launch (counter differences over the launch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Brought {
    /// Objects read back before the looper ran (eager restore).
    pub restored_objects: u64,
    /// Objects faulted back in as touched (on-demand restore, or reclaimed from outside).
    pub object_faults: u64,
    /// Bytes read back from the app's swap file (objects or, page-swap, pages).
    pub swap_read_bytes: u64,
    /// Major page faults of the app's process (process mode).
    pub major_faults: u64,
}

impl Brought {
    /// Whether anything came back.
    pub fn any(&self) -> bool {
        self.restored_objects + self.object_faults + self.swap_read_bytes + self.major_faults > 0
    }
}

/// Where a launch's time went, as far as the System and the app can tell (0 where a
/// mode cannot: a cold launch has no command to read; the in-process model has no pipe,
/// no process of its own to read the scheduler's times of, and no kernel limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LaunchParts {
    /// From the System's command until the app's control thread read it (the pipe
    /// and the thread's wake-up).
    #[serde(default)]
    pub deliver_ns: u64,
    /// From then until its transition was done and its foreground message posted
    /// (stopping its threads, and an eager restore).
    #[serde(default)]
    pub transition_ns: u64,
    /// From then until its frame (waiting for the message under way, the frame's
    /// task and its faults).
    #[serde(default)]
    pub frame_ns: u64,
    /// CPU time the app's threads ran during the launch (the process's CPU clock), and
    /// waited on a run queue (schedstat) (process mode, summed over its threads:
    /// parallel threads add up).
    #[serde(default)]
    pub run_ns: u64,
    #[serde(default)]
    pub runqueue_ns: u64,
    /// Times the group's usage ran into its limit during the launch (process mode,
    /// `memory.failcnt`; every app of the group counts).
    #[serde(default)]
    pub limit_hits: u64,
    /// The frame ran on a real-time UI thread (`SCHED_FIFO`, the app in front raised
    /// by the System): as the app saw it in the process mode, as the System raised it
    /// in the model.
    #[serde(default)]
    pub ui_fifo: bool,
    /// How long the System took making room before it told the app (marvin: dropping
    /// other apps' swap-file cache and reclaiming from them; not part of the latency,
    /// which begins at the command).
    #[serde(default)]
    pub room_ns: u64,
    /// Bytes of its swap file the app started reading ahead of its faults during the
    /// launch (marvin's launch prefetch, `[restore] prefetch_bytes`).
    #[serde(default)]
    pub prefetch_bytes: u64,
    /// Of `runqueue_ns`, the looper thread's own wait (process mode): the frame is
    /// drawn there. (`runqueue_ns` sums every thread of the app, and a thread's wait
    /// is booked when it gets to run, so it can hold waits that began before the
    /// command and exceed the latency.)
    #[serde(default)]
    pub looper_runqueue_ns: u64,
}

/// Classifies a launch.
pub fn classify(cold: bool, brought: &Brought) -> LaunchClass {
    if cold {
        LaunchClass::Cold
    } else if brought.any() {
        LaunchClass::Warm
    } else {
        LaunchClass::Hot
    }
}

/// One finished launch.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct LaunchRecord {
    /// The app's number in the run.
    pub app: usize,
    /// When it was told, in seconds since the run began.
    pub t_s: f64,
    pub class: LaunchClass,
    pub latency_ns: u64,
    #[serde(flatten)]
    pub brought: Brought,
    #[serde(flatten, default)]
    pub parts: LaunchParts,
}

/// Count and percentiles of a set of launch latencies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LaunchStats {
    pub count: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
}

impl LaunchStats {
    /// The stats of `latencies` (nearest-rank percentiles; all 0 when empty).
    pub fn of(latencies: impl IntoIterator<Item = u64>) -> LaunchStats {
        let mut v: Vec<u64> = latencies.into_iter().collect();
        v.sort_unstable();
        let pct = |p: f64| marvin_figures::nearest_rank(&v, p).unwrap_or(0);
        LaunchStats {
            count: v.len() as u64,
            p50_ns: pct(50.0),
            p90_ns: pct(90.0),
            p99_ns: pct(99.0),
        }
    }

    /// Of the records of one class (`None`: all of them).
    pub fn of_class(records: &[LaunchRecord], class: Option<LaunchClass>) -> LaunchStats {
        LaunchStats::of(
            records
                .iter()
                .filter(|r| class.is_none_or(|c| r.class == c))
                .map(|r| r.latency_ns),
        )
    }
}

/// The launch phase's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    /// How many launches (0: no launch phase).
    pub launches: usize,
    /// Time in the foreground after a launch's frame before the next launch.
    pub gap: Duration,
    /// The random order's seed.
    pub seed: u64,
    /// A launch without a frame after this long is given up (counted as unfinished).
    pub timeout: Duration,
}

impl Default for LaunchPlan {
    fn default() -> LaunchPlan {
        LaunchPlan {
            launches: 16,
            gap: Duration::from_millis(500),
            seed: 1,
            timeout: Duration::from_secs(10),
        }
    }
}

/// A launch under way.
#[derive(Clone, Debug)]
pub struct Pending<C> {
    pub app: usize,
    pub cold: bool,
    /// When the app was told (`CLOCK_BOOTTIME` ns).
    pub told_ns: u64,
    /// When, in seconds since the run began.
    pub t_s: f64,
    /// The app's counters when it was told (to difference at the frame).
    pub before: C,
    /// Frames the app had made when it was told.
    pub frames_before: u64,
    /// Objects an eager restore read back while it was told.
    pub restored_objects: u64,
}

/// The launch phase as it goes: the order, the launch under way, the records.
pub struct LaunchPhase<C> {
    plan: LaunchPlan,
    rng: StdRng,
    started: usize,
    pub pending: Option<Pending<C>>,
    /// No launch before this time since the run began.
    next_at: Duration,
    pub records: Vec<LaunchRecord>,
    /// Launches given up: no frame within the timeout, or the app died first.
    pub unfinished: u64,
}

impl<C> LaunchPhase<C> {
    /// The phase, starting at `start` (since the run began).
    pub fn new(plan: LaunchPlan, start: Duration) -> LaunchPhase<C> {
        LaunchPhase {
            plan,
            rng: StdRng::seed_from_u64(plan.seed),
            started: 0,
            pending: None,
            next_at: start,
            records: Vec::new(),
            unfinished: 0,
        }
    }

    /// Whether every launch has been made and finished (or given up).
    pub fn is_done(&self) -> bool {
        self.started >= self.plan.launches && self.pending.is_none()
    }

    /// The app to launch now, if it is time: a random one of `candidates` (every app
    /// but the one in front and those that ended by themselves). With no candidate
    /// left the phase is over.
    pub fn next_app(&mut self, now: Duration, candidates: &[usize]) -> Option<usize> {
        if self.pending.is_some() || self.started >= self.plan.launches || now < self.next_at {
            return None;
        }
        if candidates.is_empty() {
            self.started = self.plan.launches;
            return None;
        }
        self.started += 1;
        Some(candidates[self.rng.gen_range(0..candidates.len())])
    }

    /// The launch under way ended with a frame at `frame_ns`.
    pub fn finish(
        &mut self,
        now: Duration,
        frame_ns: u64,
        brought_after: impl FnOnce(&C) -> (Brought, LaunchParts),
    ) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let (mut brought, parts) = brought_after(&p.before);
        brought.restored_objects += p.restored_objects;
        self.records.push(LaunchRecord {
            app: p.app,
            t_s: p.t_s,
            class: classify(p.cold, &brought),
            latency_ns: frame_ns.saturating_sub(p.told_ns),
            brought,
            parts,
        });
        self.next_at = now + self.plan.gap;
    }

    /// Gives the launch under way up (its app died, or it timed out).
    pub fn give_up(&mut self, now: Duration) {
        if self.pending.take().is_some() {
            self.unfinished += 1;
            self.next_at = now + self.plan.gap;
        }
    }

    /// Whether the launch under way has run past the timeout at `now_ns`.
    pub fn timed_out(&self, now_ns: u64) -> bool {
        self.pending
            .as_ref()
            .is_some_and(|p| now_ns.saturating_sub(p.told_ns) > self.plan.timeout.as_nanos() as u64)
    }
}

/// Writes every policy's launches as CSV: `policy,app,t_s,class,latency_ns,...`.
pub fn write_csv(
    path: &std::path::Path,
    policies: &[(String, Vec<LaunchRecord>)],
) -> std::io::Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(
        w,
        "policy,app,t_s,class,latency_ns,restored_objects,object_faults,swap_read_bytes,major_faults,deliver_ns,transition_ns,frame_ns,run_ns,runqueue_ns,limit_hits,ui_fifo,room_ns,prefetch_bytes,looper_runqueue_ns"
    )?;
    for (policy, records) in policies {
        for r in records {
            writeln!(
                w,
                "{policy},{},{:.3},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                r.app,
                r.t_s,
                r.class.name(),
                r.latency_ns,
                r.brought.restored_objects,
                r.brought.object_faults,
                r.brought.swap_read_bytes,
                r.brought.major_faults,
                r.parts.deliver_ns,
                r.parts.transition_ns,
                r.parts.frame_ns,
                r.parts.run_ns,
                r.parts.runqueue_ns,
                r.parts.limit_hits,
                u8::from(r.parts.ui_fifo),
                r.parts.room_ns,
                r.parts.prefetch_bytes,
                r.parts.looper_runqueue_ns
            )?;
        }
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_what_came_back() {
        let none = Brought::default();
        assert_eq!(classify(false, &none), LaunchClass::Hot);
        assert_eq!(classify(true, &none), LaunchClass::Cold);
        for b in [
            Brought {
                restored_objects: 1,
                ..none
            },
            Brought {
                object_faults: 1,
                ..none
            },
            Brought {
                swap_read_bytes: 4096,
                ..none
            },
            Brought {
                major_faults: 1,
                ..none
            },
        ] {
            assert_eq!(classify(false, &b), LaunchClass::Warm, "{b:?}");
            assert_eq!(classify(true, &b), LaunchClass::Cold, "a restart is cold");
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let s = LaunchStats::of((1..=100).rev());
        assert_eq!((s.count, s.p50_ns, s.p90_ns, s.p99_ns), (100, 50, 90, 99));
        let one = LaunchStats::of([7]);
        assert_eq!((one.p50_ns, one.p99_ns), (7, 7));
        assert_eq!(LaunchStats::of([]), LaunchStats::default());
    }

    #[test]
    fn the_order_is_seeded_never_the_foreground_and_bounded() {
        let plan = LaunchPlan {
            launches: 50,
            gap: Duration::ZERO,
            seed: 9,
            timeout: Duration::from_secs(1),
        };
        let order = |seed| {
            let mut ph: LaunchPhase<()> =
                LaunchPhase::new(LaunchPlan { seed, ..plan }, Duration::ZERO);
            let mut fg = Some(0);
            let mut out = Vec::new();
            let others = |fg: Option<usize>| (0..5).filter(|&a| Some(a) != fg).collect::<Vec<_>>();
            while let Some(a) = ph.next_app(Duration::from_secs(1), &others(fg)) {
                assert_ne!(Some(a), fg, "the app in front is not launched");
                assert!(a < 5);
                out.push(a);
                fg = Some(a);
            }
            out
        };
        let a = order(9);
        assert_eq!(a.len(), 50, "exactly the planned number of launches");
        assert_eq!(a, order(9), "the same seed, the same order");
        assert_ne!(a, order(10), "another seed, another order");
        let mut seen = a.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 5, "every app comes back: {a:?}");
    }

    #[test]
    fn one_launch_at_a_time_with_a_gap_after_each() {
        let plan = LaunchPlan {
            launches: 2,
            gap: Duration::from_secs(1),
            seed: 1,
            timeout: Duration::from_secs(5),
        };
        let mut ph: LaunchPhase<u64> = LaunchPhase::new(plan, Duration::from_secs(3));
        let all = [0, 1, 2];
        assert_eq!(
            ph.next_app(Duration::from_secs(2), &all),
            None,
            "not before its start"
        );
        let a = ph.next_app(Duration::from_secs(3), &all).unwrap();
        ph.pending = Some(Pending {
            app: a,
            cold: false,
            told_ns: 1_000,
            t_s: 3.0,
            before: 10,
            frames_before: 0,
            restored_objects: 4,
        });
        assert_eq!(
            ph.next_app(Duration::from_secs(4), &all),
            None,
            "one at a time"
        );
        assert!(!ph.timed_out(1_000 + 5_000_000_000));
        assert!(ph.timed_out(1_000 + 5_000_000_001));
        let parts = LaunchParts {
            deliver_ns: 10_000,
            transition_ns: 40_000,
            frame_ns: 200_000,
            ..LaunchParts::default()
        };
        ph.finish(Duration::from_secs(4), 251_000, |before| {
            (
                Brought {
                    object_faults: 12 - before,
                    ..Brought::default()
                },
                parts,
            )
        });
        let r = &ph.records[0];
        assert_eq!(
            (r.app, r.latency_ns, r.class),
            (a, 250_000, LaunchClass::Warm)
        );
        assert_eq!(
            (r.brought.restored_objects, r.brought.object_faults),
            (4, 2)
        );
        assert_eq!(r.parts, parts, "the launch's parts are kept");
        assert_eq!(
            ph.next_app(Duration::from_millis(4_500), &all),
            None,
            "the gap"
        );
        let b = ph.next_app(Duration::from_secs(5), &all).unwrap();
        ph.pending = Some(Pending {
            app: b,
            cold: true,
            told_ns: 0,
            t_s: 5.0,
            before: 0,
            frames_before: 0,
            restored_objects: 0,
        });
        assert!(!ph.is_done());
        ph.give_up(Duration::from_secs(6));
        assert_eq!(ph.unfinished, 1);
        assert!(ph.is_done(), "both launches made and ended");
    }

    #[test]
    fn without_candidates_the_phase_is_over() {
        let mut ph: LaunchPhase<()> = LaunchPhase::new(LaunchPlan::default(), Duration::ZERO);
        assert!(!ph.is_done());
        assert_eq!(ph.next_app(Duration::from_secs(1), &[]), None);
        assert!(ph.is_done(), "every app ended by itself: nothing to launch");
        assert!(ph.records.is_empty());
    }

    #[test]
    fn the_csv_has_a_row_per_launch_with_its_parts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("launches.csv");
        let r = LaunchRecord {
            app: 3,
            t_s: 1.5,
            class: LaunchClass::Warm,
            latency_ns: 900,
            brought: Brought {
                object_faults: 2,
                ..Brought::default()
            },
            parts: LaunchParts {
                deliver_ns: 100,
                transition_ns: 200,
                frame_ns: 600,
                run_ns: 50,
                runqueue_ns: 70,
                limit_hits: 9,
                ui_fifo: true,
                room_ns: 300,
                prefetch_bytes: 131_072,
                looper_runqueue_ns: 40,
            },
        };
        write_csv(&path, &[("marvin".to_string(), vec![r])]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        let header: Vec<&str> = lines[0].split(',').collect();
        let row: Vec<&str> = lines[1].split(',').collect();
        assert_eq!(header.len(), row.len());
        let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
        assert_eq!(col("class"), "warm");
        assert_eq!(col("deliver_ns"), "100");
        assert_eq!(col("frame_ns"), "600");
        assert_eq!(col("ui_fifo"), "1");
        assert_eq!(col("limit_hits"), "9");
        assert_eq!(col("room_ns"), "300");
        assert_eq!(col("prefetch_bytes"), "131072");
        assert_eq!(col("looper_runqueue_ns"), "40");
    }
}
