//! `marvin bench queue`: DeliQueue against the legacy single-lock queue (and, for plain
//! FIFO posting, crossbeam-channel and std mpsc), side by side in one run.
//!
//! Every scenario runs its implementations in interleaved rounds ([`super::rounds`]):
//! one untimed warm-up run of each, then `--reps` rounds, each running every
//! implementation once, the order rotating (DeliQueue first, then legacy first, ...), so
//! that a slow stretch of the host or what the scenario before left behind falls on both
//! queues alike. Each sample is the median over its rounds, with `round_ratio`, the
//! median over the rounds of its figure over legacy's in the same round (the figure that
//! cancels drift), and the rounds' figures (`round_ns`, `round_ratios`).
//!
//! Scenarios:
//! - `8x1000 immediate`: 8 poster threads post 1,000 due messages each; a looper thread
//!   drains them. Time: first post to last delivery.
//! - `8x1000 delays 0-5s`: the same with random due times 0-5 s ahead, on a virtual
//!   clock frozen at the start, so nothing waits 5 s of wall time: the time measured is
//!   posting plus the looper taking everything in (DeliQueue's sweep into its heap; the
//!   legacy queue's sorted insertion), with the looper polling `next` throughout.
//! - `concurrent enqueue+remove`: 4 posters (1,000 delayed messages each) against 4
//!   removers (250 `remove` calls each, by `what`) and a polling looper.
//! - `single-thread enqueue+remove`: one thread posts 10,000 delayed messages, then
//!   removes them by `what` (100 codes).
//! - `busy queue insert`: the queue already holds 100,000 pending delayed messages
//!   (swept into DeliQueue's heap, untimed); 8 threads post 250 more each at random due
//!   times in the same range. Each poster times its own posting loop; the time is the
//!   sum over posters (thread start-up and join are not counted; waiting for the lock
//!   is). The looper's take-in that follows (DeliQueue sorts the new messages into its
//!   heap there) is reported apart, as `take_in_ns`. Same messages, same due times,
//!   same pre-filled queue for both.
//! - `fifo 1x100000`: one poster, one receiver, 100,000 immediate messages: DeliQueue,
//!   legacy, crossbeam-channel (unbounded) and std mpsc. The queues' receiver blocks in
//!   `wait` when idle, as a channel receiver blocks in `recv`.
//! - `dispatch delay`: 8 busy posters post 2,500 messages each, due 0-2 ms ahead on the
//!   real clock, with a short pause between posts; they start together once the looper
//!   is running. As in Android, the posters run at background priority (nice 10) and the
//!   looper (the benchmark's thread) at normal priority, for both queues. The looper
//!   records dispatch time minus due time for every one of the 20,000 messages (the
//!   same work for both). The median of the rounds' median delays is reported, with the
//!   99th percentile and the worst over every message of the timed rounds as extra fields.
//! - `dispatch delay, FIFO UI looper`: the same, with the looper scheduled as Android
//!   schedules the UI thread of the app in front where FIFO UI scheduling is on
//!   (`SCHED_FIFO`, priority 1; see [`super::sched`]). It needs `CAP_SYS_NICE`; without
//!   it the scenario is skipped with a note saying why.
//! - `dispatch delay, Android cpu groups`: the same, with the threads grouped as Android
//!   groups them where FIFO UI scheduling is off: the posters at
//!   `THREAD_PRIORITY_BACKGROUND` (nice 10) in a background cpu group with 52 shares
//!   (`bg_non_interactive`), the looper at `THREAD_PRIORITY_DISPLAY` (nice -4) in a
//!   top-app group with 1024 (on cgroup v2, `cpu.weight` 5 and 100), asking for a short
//!   time slice (`--looper-slice-us`, default 100 us, both queues alike; see
//!   [`super::sched::LooperSlice`]) so that, woken, it preempts a poster. The benchmark
//!   makes both groups under one group of its own in its cpu cgroup, announces them,
//!   and removes them afterwards, also on a panic or Ctrl-C (which then ends the
//!   benchmark after the current run); see [`super::sched::Grouping`]. It needs root;
//!   without it the scenario is skipped with a note saying why.
//!
//! Ratios are to `legacy`. Goals: busy-queue insertion at least 5,000x faster than
//! legacy, DeliQueue never slower than legacy (every median, and the dispatch delays'
//! 99th percentiles and worst, which is what those scenarios are about; within 3% counts
//! as a tie, see `TIE`), FIFO at most 3x crossbeam-channel's time.
//!
//! What bounds DeliQueue's FIFO time (`perf record` on the scenario): a message is a node
//! (64 bytes with a word-sized payload: one cache line) that the poster writes and the
//! looper then reads from another core, reached through a chain of dependent loads (the
//! stack is walked from its head). The head is one cache line that every push CASes; the
//! looper reads it once a batch, not once a message (DeliQueue's delivery bound). Per
//! message, four locked read-modify-writes remain: the pool's taker flag and the push CAS
//! on the post, the looper's guard and the claim CAS on delivery. crossbeam-channel packs
//! four messages a line in blocks read in order, with about one such operation per side.
//! The poster thread starts while the looper waits: a looper that yielded there, rather
//! than sleep, could leave both threads on one CPU for a whole slice. See
//! `docs/benchmarks.md` for what was measured and tried.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;

mod dispatch;
mod scenarios;

use dispatch::dispatch_delays;
pub use scenarios::delay_plan;
use scenarios::{
    busy_insert, busy_queue, busy_samples, concurrent_enqueue_remove, fifo_crossbeam, fifo_mpsc,
    fifo_queue, immediate, post_with_looper, round_samples, single_thread_enqueue_remove, up_to_5s,
    BothRun, Deli, FifoRun, Legacy, BUSY, FIFO, ROUND_RATIO_CROSSBEAM,
};

use super::delay_plot::DelaySeries;
use super::rounds;
use super::sched::{self, Grouping, LooperPolicy, LooperSlice};
use super::{finish, median, percentile, CommonArgs, Sample, ROUND_RATIO};

#[derive(Debug, Args)]
pub struct QueueArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Run only the scenarios whose name contains this text (say `fifo` or `dispatch`)
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
    /// Also draw the dispatch delays (every message, both queues) into DIR as
    /// dispatch_delay.svg and .png
    #[arg(long, value_name = "DIR")]
    pub plot: Option<std::path::PathBuf>,
    /// The time slice the looper asks for in the Android-grouped scenario, for both
    /// queues: 100-100000 us, or 0 for the kernel's default
    #[arg(
        long = "looper-slice-us",
        value_name = "US",
        default_value = "100",
        value_parser = parse_looper_slice
    )]
    pub looper_slice: LooperSlice,
}

/// `--looper-slice-us`: a number of microseconds, checked once, by [`LooperSlice::from_micros`].
fn parse_looper_slice(text: &str) -> Result<LooperSlice, String> {
    let us: u64 = text
        .parse()
        .map_err(|e| format!("{text:?} is not a number of microseconds: {e}"))?;
    LooperSlice::from_micros(us)
}

const DISPATCH: &str = "dispatch delay (8 busy background posters)";
const DISPATCH_FIFO_UI: &str = "dispatch delay, FIFO UI looper (8 busy background posters)";
const DISPATCH_GROUPED: &str =
    "dispatch delay, Android cpu groups (8 busy posters in the background group)";
const IMMEDIATE: &str = "8x1000 immediate";
const DELAYED: &str = "8x1000 delays 0-5s";
const ENQUEUE_REMOVE: &str = "concurrent enqueue+remove";
const SINGLE_THREAD: &str = "single-thread enqueue+remove";

/// Every scenario, in the order they run.
const SCENARIOS: [&str; 9] = [
    IMMEDIATE,
    DELAYED,
    ENQUEUE_REMOVE,
    SINGLE_THREAD,
    BUSY,
    FIFO,
    DISPATCH,
    DISPATCH_FIFO_UI,
    DISPATCH_GROUPED,
];

/// Messages each dispatch-delay poster posts.
/// The two queues, in the order of [`rounds::interleaved`]'s indices (0: DeliQueue).
const QUEUES: [&str; 2] = ["deliqueue", "legacy"];
/// Index of the legacy queue, the baseline of the round ratios.
const LEGACY: usize = 1;

/// What [`measure`] found.
pub struct Measured {
    /// One per scenario and implementation (ratios not yet filled in).
    pub samples: Vec<Sample>,
    /// Why scenarios could not run, if any did not.
    pub notes: Vec<String>,
    /// Every message's delay in the dispatch-delay scenarios, for the figure.
    pub delays: Vec<DelaySeries>,
}

/// Runs every scenario whose name contains `only` (every one when `None`), the random
/// draws seeded from `seed`; the grouped looper asks for `looper_slice`.
pub fn measure(reps: usize, seed: u64, only: Option<&str>, looper_slice: LooperSlice) -> Measured {
    let wanted = |scenario: &str| only.is_none_or(|only| scenario.contains(only));
    let mut samples = Vec::new();
    let mut notes = Vec::new();
    let mut delays = Vec::new();
    // The scenarios timed the same way for both queues (`true`: DeliQueue).
    let plain: [(&str, BothRun); 4] = [
        (IMMEDIATE, |deli, seed| match deli {
            true => post_with_looper(Deli, 8, 1_000, immediate, seed),
            false => post_with_looper(Legacy, 8, 1_000, immediate, seed),
        }),
        (DELAYED, |deli, seed| match deli {
            true => post_with_looper(Deli, 8, 1_000, up_to_5s, seed),
            false => post_with_looper(Legacy, 8, 1_000, up_to_5s, seed),
        }),
        (ENQUEUE_REMOVE, |deli, seed| match deli {
            true => concurrent_enqueue_remove(Deli, seed),
            false => concurrent_enqueue_remove(Legacy, seed),
        }),
        (SINGLE_THREAD, |deli, seed| match deli {
            true => single_thread_enqueue_remove(Deli, seed),
            false => single_thread_enqueue_remove(Legacy, seed),
        }),
    ];
    let nanos = |d: Duration| d.as_nanos() as f64;
    for (scenario, run) in plain {
        if wanted(scenario) {
            let times = rounds::interleaved(2, reps, |i| -> Result<f64, ()> {
                Ok(nanos(run(i == 0, seed)))
            })
            .unwrap_or_else(|()| unreachable!("timed runs do not fail"));
            samples.extend(round_samples(scenario, &QUEUES, &times, LEGACY));
        }
    }
    if wanted(BUSY) {
        samples.extend(busy_samples(reps.min(5), seed));
    }
    if wanted(FIFO) {
        let fifos: [(&str, FifoRun); 4] = [
            ("deliqueue", || fifo_queue(Deli)),
            ("legacy", || fifo_queue(Legacy)),
            ("crossbeam-channel", fifo_crossbeam),
            ("std-mpsc", fifo_mpsc),
        ];
        let times = rounds::interleaved(fifos.len(), reps, |i| -> Result<f64, ()> {
            Ok(nanos(fifos[i].1()))
        })
        .unwrap_or_else(|()| unreachable!("timed runs do not fail"));
        let names: Vec<&str> = fifos.iter().map(|(name, _)| *name).collect();
        let mut fifo = round_samples(FIFO, &names, &times, LEGACY);
        // DeliQueue against crossbeam-channel, round by round: the FIFO goal's ratio.
        let to_crossbeam = rounds::ratios(&times[0], &times[2]);
        fifo[0] = fifo[0]
            .clone()
            .with(ROUND_RATIO_CROSSBEAM, median(&mut to_crossbeam.clone()));
        samples.extend(fifo);
    }
    for (scenario, policy) in [
        (DISPATCH, LooperPolicy::Normal),
        (DISPATCH_FIFO_UI, LooperPolicy::FifoUi),
        (DISPATCH_GROUPED, LooperPolicy::Grouped),
    ] {
        if !wanted(scenario) {
            continue;
        }
        if policy == LooperPolicy::FifoUi {
            if let Err(why) = sched::fifo_ui_available() {
                notes.push(format!("{scenario}: not run: {why}"));
                continue;
            }
        }
        // The grouped scenario changes the machine (cpu groups): Ctrl-C then unwinds
        // (between runs) so the groups' guard removes them.
        let grouping = if policy == LooperPolicy::Grouped {
            if let Err(e) = marvin_machine::signals::install() {
                notes.push(format!(
                    "{scenario}: not run: installing signal handlers: {e}"
                ));
                continue;
            }
            match Grouping::create(looper_slice) {
                Ok(grouping) => Some(Arc::new(grouping)),
                Err(why) => {
                    notes.push(format!("{scenario}: not run: {why}"));
                    continue;
                }
            }
        } else {
            None
        };
        match dispatch_samples(scenario, policy, reps, |i| match i {
            0 => dispatch_delays(Deli, policy, grouping.as_ref(), seed),
            _ => dispatch_delays(Legacy, policy, grouping.as_ref(), seed),
        }) {
            Ok(pairs) => {
                for (sample, series) in pairs {
                    // The grouped looper's slice (0: the kernel's default), for the record.
                    let sample = match policy {
                        LooperPolicy::Grouped => sample.with(
                            "looper_slice_us",
                            looper_slice.0.map_or(0, |s| s.as_micros() as u64),
                        ),
                        _ => sample,
                    };
                    samples.push(sample);
                    delays.push(series);
                }
            }
            Err(why) => notes.push(format!("{scenario}: not run: {why}")),
        }
    }
    Measured {
        samples,
        notes,
        delays,
    }
}

/// A dispatch-delay scenario (short and scheduling-bound) for both queues, in
/// interleaved rounds ([`rounds::interleaved`]; `run(0)` runs DeliQueue once, `run(1)`
/// the legacy queue, each returning every message's delay): per queue, the median of the
/// rounds' median delays, with [`ROUND_RATIO`] (the median over the rounds of DeliQueue's
/// median delay over legacy's in the same round); the 99th percentile and the worst over
/// every message of every timed round (the warm-up runs are not counted), whose delays
/// come back too. A stop signal ends the rounds before the next run.
fn dispatch_samples(
    scenario: &str,
    policy: LooperPolicy,
    reps: usize,
    mut run: impl FnMut(usize) -> Result<Vec<f64>, String>,
) -> Result<Vec<(Sample, DelaySeries)>, String> {
    let per_round = rounds::interleaved(QUEUES.len(), reps, |i| {
        if let Some(sig) = marvin_machine::signals::stop_requested() {
            return Err(format!("stopped by signal {sig}"));
        }
        run(i)
    })?;
    let round_medians: Vec<Vec<f64>> = per_round
        .iter()
        .map(|own| own.iter().map(|d| median(&mut d.clone())).collect())
        .collect();
    Ok(round_samples(scenario, &QUEUES, &round_medians, LEGACY)
        .into_iter()
        .zip(per_round)
        .zip(QUEUES)
        .map(|((sample, own), name)| {
            let mut all: Vec<f64> = own.into_iter().flatten().collect();
            let p99 = percentile(&mut all, 99.0);
            let worst = percentile(&mut all, 100.0);
            let sample = sample
                .with("p99_ns", p99)
                .with("max_ns", worst)
                .with("messages", all.len());
            let series = DelaySeries {
                policy,
                implementation: name.to_string(),
                delays_ns: all,
            };
            (sample, series)
        })
        .collect())
}

/// How much above legacy's figure DeliQueue's may be and still count as a tie: the
/// run-to-run spread of one implementation's medians on the 2-vCPU test machine is
/// about 5% (e.g. legacy's FIFO-UI dispatch median, 9.9-10.5 us over three runs).
const TIE: f64 = 1.03;

/// The goals, checked against the measured medians.
fn goal_notes(samples: &[Sample]) -> Vec<String> {
    let get = |scenario: &str, imp: &str| {
        samples
            .iter()
            .find(|s| s.scenario == scenario && s.implementation == imp)
            .map(|s| s.median_ns)
    };
    let mut notes = Vec::new();
    if let (Some(d), Some(l)) = (get(BUSY, "deliqueue"), get(BUSY, "legacy")) {
        notes.push(format!(
            "busy-queue insertion: deliqueue {:.0}x faster than legacy (goal: 5,000x)",
            l / d
        ));
    }
    for s in samples.iter().filter(|s| s.scenario == BUSY) {
        notes.push(format!(
            "busy-queue take-in by the looper afterwards (not in the insertion time) {}: {}",
            s.implementation,
            super::human_ns(s.extra["take_in_ns"].as_f64().unwrap_or(f64::NAN)),
        ));
    }
    // Every median, and the dispatch delay's tail too: that scenario is about the tail.
    let extra = |s: &Sample, key: &str| s.extra.get(key).and_then(|v| v.as_f64());
    let mut slower: Vec<String> = Vec::new();
    let mut tied: Vec<String> = Vec::new();
    for s in samples.iter().filter(|s| s.implementation == "deliqueue") {
        let Some(l) = samples
            .iter()
            .find(|l| l.scenario == s.scenario && l.implementation == "legacy")
        else {
            continue;
        };
        let mut judge = |what: &str, d: f64, l: f64| {
            let label = format!("{} ({what}, {:.3}x)", s.scenario, d / l);
            if d > l * TIE {
                slower.push(label);
            } else if d > l {
                tied.push(label);
            }
        };
        judge("median", s.median_ns, l.median_ns);
        for key in ["p99_ns", "max_ns"] {
            if let (Some(d), Some(l)) = (extra(s, key), extra(l, key)) {
                judge(key.trim_end_matches("_ns"), d, l);
            }
        }
    }
    if !tied.is_empty() {
        notes.push(format!(
            "deliqueue within {:.0}% of legacy (run-to-run noise here), counted as not slower: {}",
            (TIE - 1.0) * 100.0,
            tied.join(", ")
        ));
    }
    let every_scenario = SCENARIOS
        .iter()
        .all(|name| samples.iter().any(|s| s.scenario == *name));
    notes.push(if slower.is_empty() && every_scenario {
        "deliqueue is never slower than legacy, medians and dispatch-delay tails (goal met)"
            .to_string()
    } else if slower.is_empty() {
        "deliqueue is not slower than legacy in the scenarios run (--only: the goal covers all)"
            .to_string()
    } else {
        format!("deliqueue slower than legacy in: {}", slower.join(", "))
    });
    if let (Some(d), Some(c)) = (get(FIFO, "deliqueue"), get(FIFO, "crossbeam-channel")) {
        let rounds = samples
            .iter()
            .find(|s| s.scenario == FIFO && s.implementation == "deliqueue")
            .and_then(|s| extra(s, ROUND_RATIO_CROSSBEAM))
            .map_or(String::new(), |r| format!(", {r:.2}x in the median round"));
        notes.push(format!(
            "FIFO: deliqueue at {:.2}x crossbeam-channel's time{rounds} (goal: at most 3x)",
            d / c
        ));
    }
    for s in samples
        .iter()
        .filter(|s| [DISPATCH, DISPATCH_FIFO_UI, DISPATCH_GROUPED].contains(&s.scenario.as_str()))
    {
        let rounds = match (s.implementation.as_str(), extra(s, ROUND_RATIO)) {
            ("deliqueue", Some(r)) => format!(" ({r:.3}x legacy's in the median round)"),
            _ => String::new(),
        };
        notes.push(format!(
            "{} {}: median {}{rounds}, p99 {}, worst {}",
            s.scenario,
            s.implementation,
            super::human_ns(s.median_ns),
            super::human_ns(s.extra["p99_ns"].as_f64().unwrap_or(f64::NAN)),
            super::human_ns(s.extra["max_ns"].as_f64().unwrap_or(f64::NAN)),
        ));
    }
    notes
}

/// Runs the benchmark; the exit code is 0, or 128 + the signal when a stop signal ended
/// it early (the grouped scenario installs the handlers).
pub fn run(args: &QueueArgs) -> anyhow::Result<i32> {
    anyhow::ensure!(args.common.reps > 0, "--reps must be at least 1");
    if let Some(dir) = &args.plot {
        super::prepare_plot(dir)?;
    }
    if let Some(only) = args.only.as_deref() {
        anyhow::ensure!(
            SCENARIOS.iter().any(|s| s.contains(only)),
            "--only {only:?} matches no scenario; the scenarios are: {}",
            SCENARIOS.join(", ")
        );
    }
    let Measured {
        samples,
        mut notes,
        delays,
    } = measure(
        args.common.reps,
        args.common.seed,
        args.only.as_deref(),
        args.looper_slice,
    );
    if let Some(dir) = &args.plot {
        if delays.is_empty() {
            notes.push("--plot: no dispatch-delay scenario ran, so no figure".to_string());
        } else {
            for file in super::delay_plot::write(dir, &delays)? {
                notes.push(format!("figure: {}", file.display()));
            }
        }
    }
    notes.extend(goal_notes(&samples));
    finish(samples, "legacy", &args.common, &notes)?;
    if let Some(sig) = marvin_machine::signals::stop_requested() {
        // The cpu groups are gone already (their guard dropped with the scenario).
        marvin_console::errln!("marvin: stopped by signal {sig}; the cpu groups were removed");
        return Ok(128 + sig);
    }
    Ok(0)
}

/// Small entry points for the criterion benchmark (`benches/queue.rs`).
pub struct QueueBench;

impl QueueBench {
    /// One thread: 10,000 delayed posts, then removal by `what`.
    pub fn single_thread(deli: bool) -> Duration {
        if deli {
            single_thread_enqueue_remove(Deli, 0)
        } else {
            single_thread_enqueue_remove(Legacy, 0)
        }
    }

    /// 8 posters x 1,000 immediate messages into one looper.
    pub fn eight_posters(deli: bool) -> Duration {
        if deli {
            post_with_looper(Deli, 8, 1_000, immediate, 0)
        } else {
            post_with_looper(Legacy, 8, 1_000, immediate, 0)
        }
    }

    /// 100,000 FIFO messages through DeliQueue or crossbeam-channel.
    pub fn fifo(deli: bool) -> Duration {
        if deli {
            fifo_queue(Deli)
        } else {
            fifo_crossbeam()
        }
    }

    /// Insertion of 2,000 messages into a queue holding `pending` (setup untimed): the
    /// posters' summed posting time.
    pub fn busy(deli: bool, pending: u64) -> Duration {
        if deli {
            busy_insert::<Deli>(busy_queue(Deli, pending), 0).posting
        } else {
            busy_insert::<Legacy>(busy_queue(Legacy, pending), 0).posting
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fake dispatch runs: the queues alternate who goes first after one warm-up each;
    /// the round ratio is each round's DeliQueue median over legacy's, so a host that
    /// slows down by 10x between rounds does not move it; the tail figures cover every
    /// message of the timed rounds and none of the warm-ups'.
    #[test]
    fn dispatch_rounds_interleave_and_their_ratio_cancels_drift() {
        let mut order = Vec::new();
        let samples = dispatch_samples(DISPATCH, LooperPolicy::Normal, 4, |i| {
            order.push(i);
            let round = order.len().saturating_sub(3) / 2;
            // Warm-ups: a huge delay that must not reach the tail figures.
            let drift = match order.len() {
                1 | 2 => 1e9,
                _ => [1.0, 10.0, 3.0, 7.0][round],
            };
            let base = if i == 0 { 30.0 } else { 40.0 };
            Ok((1..=5).map(|k| drift * base * k as f64).collect())
        })
        .expect("fake runs do not fail");
        assert_eq!(order, [0, 1, 0, 1, 1, 0, 0, 1, 1, 0]);
        let [(deli, deli_series), (legacy, legacy_series)] = &samples[..] else {
            panic!("two samples: {}", samples.len());
        };
        assert_eq!(
            (deli.implementation.as_str(), legacy.implementation.as_str()),
            QUEUES.into()
        );
        assert_eq!(deli.extra[ROUND_RATIO].as_f64(), Some(0.75));
        assert_eq!(legacy.extra[ROUND_RATIO].as_f64(), Some(1.0));
        assert_eq!(deli.extra["messages"].as_u64(), Some(20));
        assert_eq!(legacy_series.delays_ns.len(), 20);
        // The worst of the timed rounds: drift 10, the fifth message.
        assert_eq!(deli.extra["max_ns"].as_f64(), Some(10.0 * 30.0 * 5.0));
        assert_eq!(legacy.extra["max_ns"].as_f64(), Some(10.0 * 40.0 * 5.0));
        assert!(deli_series.delays_ns.iter().all(|&d| d < 1e9));
        // Per round, the median message is the third: median over rounds of 3 * base * drift.
        assert_eq!(deli.median_ns, 30.0 * 3.0 * 5.0);
    }

    #[test]
    fn a_failed_dispatch_run_fails_the_scenario_for_both() {
        let mut runs = 0;
        let out = dispatch_samples(DISPATCH_GROUPED, LooperPolicy::Grouped, 3, |i| {
            runs += 1;
            match (runs, i) {
                (4, 1) => Err("the legacy run could not place a poster".to_string()),
                _ => Ok(vec![1.0; 4]),
            }
        });
        assert_eq!(
            out.err().as_deref(),
            Some("the legacy run could not place a poster")
        );
        assert_eq!(runs, 4);
    }
}
