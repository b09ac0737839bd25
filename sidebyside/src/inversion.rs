//! `marvin bench inversion`: priority inversion on a looper, with the fast tracker off, in
//! priority-inheritance mode, and fast-tracking (see `marvin_runtime::fasttrack`).
//!
//! Real threads on one `Monitors` table (the runtime's object monitors), `--reps` rounds
//! with the modes interleaved (off, inherit, fasttrack, off, ...):
//! - a looper (latency-critical, nice -4 like Android's display threads when the process
//!   may raise priorities, else 0) dispatches every `--period-us`: it takes the shared
//!   monitor, does `--work-us` of CPU work, releases it;
//! - `--low` low-priority threads (nice 19), each with a fixed workload: `--sections`
//!   critical sections of `--cs-us` CPU work on the same monitor, arriving at fixed times
//!   from the round start (seeded random gaps of 1/3 to 5/3 of `--gap-us`, so 8-42 ms by
//!   default: the sections spread over about a second of the round); a section that arrives while the thread is still behind starts as soon as
//!   the previous one ends;
//! - `--medium` medium-priority threads (nice 0; default two per core) spin, saturating
//!   every core.
//!
//! Same work in every mode: the arrival times depend only on the round number and the
//! thread, so every mode of a round runs the identical low-priority workload. A round ends
//! when `--duration-ms` has passed *and* every low section is done (the looper dispatches
//! until then), so a mode that starves the low threads runs a longer round with more
//! dispatches, not fewer sections: the blocking count then compares the same sections
//! meeting the same looper, and `count_per_1k_dispatches` compares rounds of different
//! lengths. A round stops waiting after ten times `--duration-ms`; sections not done by
//! then are reported (`sections_not_done`), never silently dropped.
//!
//! Reported per mode, with the same definitions in every mode (those of
//! `marvin_runtime::monitor`): the looper's blocking time on the monitor, from the failed
//! `try_enter` to holding the monitor, spin included (p50 as `median_ns`, p99, p99.9 over
//! every contended acquisition of every round); the blocking count, contended acquisitions
//! that had to park (`count`; `contended` counts them all); janky dispatches (a dispatch,
//! blocking included, over 16 ms); and the CPU overhead of the detector: CPU time in the
//! tracker's block, spin and release paths over the process's CPU time (`cpu_overhead`;
//! the spin's share alone is `spin_cpu_overhead`).
//!
//! `--spin-us` sets the longest spin on a fast-tracked holder (0 turns spinning off, to
//! see what the boost alone does).
//!
//! Published (SuperPass, Pixel 8): -72.0% p99.9 blocking time, -47.7% blocking count, 0.74%
//! CPU overhead.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use clap::Args;
use marvin_runtime::cpuclock::{current_tid, thread_cpu_time_ns};
use marvin_runtime::fasttrack::{self, FastTracker, Mode};
use marvin_runtime::process_cpu_time_ns;
use marvin_runtime::{thread_id, Monitors};
use rand::Rng;

use super::{finish, percentile, stream_rng, CommonArgs, Sample};

#[derive(Debug, Args)]
pub struct InversionArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Length of one round of one mode.
    #[arg(long, default_value_t = 2000)]
    pub duration_ms: u64,
    /// The looper's dispatch period.
    #[arg(long, default_value_t = 2000)]
    pub period_us: u64,
    /// CPU work of one dispatch while holding the monitor.
    #[arg(long, default_value_t = 50)]
    pub work_us: u64,
    /// Low-priority threads taking the monitor.
    #[arg(long, default_value_t = 2)]
    pub low: usize,
    /// CPU work of a low-priority thread's critical section.
    #[arg(long, default_value_t = 300)]
    pub cs_us: u64,
    /// Medium-priority spinning threads (default: two per core).
    #[arg(long)]
    pub medium: Option<usize>,
    /// Critical sections of each low-priority thread per round (its fixed workload).
    #[arg(long, default_value_t = SECTIONS)]
    pub sections: usize,
    /// Mean gap between the arrivals of a low-priority thread's critical sections (the
    /// default spreads the 40 sections over about a second of the round).
    #[arg(long, default_value_t = 25_000)]
    pub gap_us: u64,
    /// Longest spin of the looper on a fast-tracked holder before it parks (0: never spin).
    #[arg(long, default_value_t = fasttrack::SPIN_LIMIT_NS / 1000)]
    pub spin_us: u64,
}

/// A dispatch longer than this is janky (one missed frame at 60 Hz).
const JANK_NS: u64 = 16_000_000;
const MONITOR: u64 = 0x4000;
const LOW_NICE: i32 = 19;
const LOOPER_NICE: i32 = -4;
const MODES: [Mode; 3] = [Mode::Off, Mode::Inherit, Mode::FastTrack];
/// Default critical sections per low-priority thread and round.
const SECTIONS: usize = 40;
/// A round gives up waiting for the low threads after this many times `--duration-ms`.
const ROUND_CAP: u32 = 10;

/// The arrival times (from the round start) of each low thread's critical sections in
/// round `rep`: the same in every mode, drawn from `--seed`'s stream of that round and
/// thread.
pub fn schedule(args: &InversionArgs, rep: usize) -> Vec<Vec<Duration>> {
    let (lo, hi) = (
        args.gap_us / 3,
        (5 * args.gap_us / 3).max(args.gap_us / 3 + 1),
    );
    (0..args.low)
        .map(|thread| {
            let mut rng = stream_rng(args.common.seed, rep as u64, thread as u64);
            let mut at = Duration::ZERO;
            (0..args.sections)
                .map(|_| {
                    at += Duration::from_micros(rng.gen_range(lo..hi));
                    at
                })
                .collect()
        })
        .collect()
}

/// Burns `ns` of the calling thread's CPU time.
fn spin_cpu(ns: u64) {
    let start = thread_cpu_time_ns();
    let mut x = 0u64;
    while thread_cpu_time_ns().saturating_sub(start) < ns {
        for i in 0..500u64 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
    }
    black_box(x);
}

/// What one round of one mode measured.
#[derive(Default)]
struct Round {
    /// Low-priority critical sections done, and those not done when the round gave up.
    sections: u64,
    sections_not_done: u64,
    /// Wall time of the round.
    round_ns: u64,
    /// Wait of every contended acquisition.
    blocked_ns: Vec<f64>,
    /// Contended acquisitions that parked.
    parked: u64,
    dispatches: u64,
    janky: u64,
    detector_cpu_ns: u64,
    spin_cpu_ns: u64,
    spins: u64,
    spins_acquired: u64,
    spins_stalled: u64,
    process_cpu_ns: u64,
}

fn round(
    args: &InversionArgs,
    mode: Mode,
    medium: usize,
    looper_nice: i32,
    arrivals: &[Vec<Duration>],
) -> Round {
    let tracker = Arc::new(FastTracker::os(mode).with_spin_limit_ns(args.spin_us * 1000));
    let monitors = Arc::new(Monitors::with_fast_track(tracker.clone()));
    // `stop` ends the looper and the spinners; `abort` ends low threads that are late.
    let (stop, abort) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let done = Arc::new(AtomicU64::new(0));
    let cpu0 = process_cpu_time_ns();
    let mut spinners = Vec::new();
    for _ in 0..medium {
        let stop = stop.clone();
        spinners.push(thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                spin_cpu(1_000_000);
            }
        }));
    }
    // Every thread counts from the same start, a little ahead so that all are running.
    let start = Instant::now() + Duration::from_millis(5);
    let mut lows = Vec::new();
    for times in arrivals {
        let (abort, done, monitors) = (abort.clone(), done.clone(), monitors.clone());
        let (times, cs) = (times.clone(), args.cs_us * 1000);
        lows.push(thread::spawn(move || {
            let (me, tid) = (thread_id(), current_tid());
            // Lowering one's own priority needs no privilege.
            let _ = fasttrack::set_thread_nice(tid, LOW_NICE);
            for at in times {
                if abort.load(Ordering::Relaxed) {
                    break;
                }
                sleep_until(start + at);
                if monitors.try_enter(MONITOR, me, tid).is_err() {
                    monitors.enter_blocking(MONITOR, me, tid);
                }
                spin_cpu(cs);
                let _ = monitors.exit(MONITOR, me);
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let looper = {
        let (stop, monitors) = (stop.clone(), monitors.clone());
        let (period, work) = (Duration::from_micros(args.period_us), args.work_us * 1000);
        thread::spawn(move || {
            let (me, tid) = (thread_id(), current_tid());
            let _ = fasttrack::set_thread_nice(tid, looper_nice);
            fasttrack::set_latency_critical(true);
            let mut r = Round::default();
            let mut next = start;
            sleep_until(start);
            while !stop.load(Ordering::Relaxed) {
                next += period;
                let begin = Instant::now();
                if monitors.try_enter(MONITOR, me, tid).is_err() {
                    let b = Instant::now();
                    let entry = monitors.enter_blocking(MONITOR, me, tid);
                    r.blocked_ns.push(b.elapsed().as_nanos() as f64);
                    r.parked += u64::from(entry.parked);
                }
                spin_cpu(work);
                let _ = monitors.exit(MONITOR, me);
                r.dispatches += 1;
                if begin.elapsed().as_nanos() as u64 > JANK_NS {
                    r.janky += 1;
                }
                let now = Instant::now();
                if next > now {
                    thread::sleep(next - now);
                } else {
                    next = now;
                }
            }
            r
        })
    };
    // The round: at least the duration, then until every section is done (bounded).
    let total: u64 = arrivals.iter().map(|t| t.len() as u64).sum();
    let duration = Duration::from_millis(args.duration_ms);
    sleep_until(start + duration);
    let give_up = start + duration * ROUND_CAP;
    while done.load(Ordering::Relaxed) < total && Instant::now() < give_up {
        thread::sleep(Duration::from_millis(1));
    }
    abort.store(true, Ordering::Relaxed);
    for w in lows {
        let _ = w.join();
    }
    stop.store(true, Ordering::Relaxed);
    let mut r = looper.join().expect("looper thread");
    r.round_ns = start.elapsed().as_nanos() as u64;
    for w in spinners {
        let _ = w.join();
    }
    r.sections = done.load(Ordering::Relaxed);
    r.sections_not_done = total - r.sections;
    r.process_cpu_ns = process_cpu_time_ns().saturating_sub(cpu0);
    let stats = tracker.stats();
    r.detector_cpu_ns = stats.cpu_ns;
    r.spin_cpu_ns = stats.spin_cpu_ns;
    (r.spins, r.spins_acquired, r.spins_stalled) =
        (stats.spins, stats.spins_acquired, stats.spins_stalled);
    r
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        thread::sleep(t - now);
    }
}

/// Whether this process may raise a thread's priority (probed on a throwaway thread).
fn may_raise_priority() -> bool {
    thread::spawn(|| {
        let tid = current_tid();
        fasttrack::set_thread_nice(tid, 5).is_ok() && fasttrack::set_thread_nice(tid, -1).is_ok()
    })
    .join()
    .unwrap_or(false)
}

pub fn run(args: &InversionArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.duration_ms > 0 && args.period_us > 0 && args.gap_us > 0,
        "--duration-ms, --period-us and --gap-us must be positive"
    );
    let cores = thread::available_parallelism().map_or(2, |n| n.get());
    let medium = args.medium.unwrap_or(2 * cores);
    let privileged = may_raise_priority();
    let looper_nice = if privileged { LOOPER_NICE } else { 0 };
    let mut totals: Vec<Round> = MODES.iter().map(|_| Round::default()).collect();
    for rep in 0..args.common.reps.max(1) {
        let arrivals = schedule(args, rep);
        for (i, &mode) in MODES.iter().enumerate() {
            let r = round(args, mode, medium, looper_nice, &arrivals);
            let t = &mut totals[i];
            t.sections += r.sections;
            t.sections_not_done += r.sections_not_done;
            t.round_ns += r.round_ns;
            t.blocked_ns.extend(r.blocked_ns);
            t.parked += r.parked;
            t.dispatches += r.dispatches;
            t.janky += r.janky;
            t.detector_cpu_ns += r.detector_cpu_ns;
            t.spin_cpu_ns += r.spin_cpu_ns;
            t.spins += r.spins;
            t.spins_acquired += r.spins_acquired;
            t.spins_stalled += r.spins_stalled;
            t.process_cpu_ns += r.process_cpu_ns;
        }
    }
    let mut samples = Vec::new();
    let mut summary = Vec::new();
    for (mode, t) in MODES.iter().zip(totals.iter_mut()) {
        let contended = t.blocked_ns.len();
        let count = t.parked;
        let per_1k = if t.dispatches > 0 {
            1000.0 * count as f64 / t.dispatches as f64
        } else {
            0.0
        };
        let (p50, p99, p999) = (
            percentile(&mut t.blocked_ns, 50.0),
            percentile(&mut t.blocked_ns, 99.0),
            percentile(&mut t.blocked_ns, 99.9),
        );
        let share = |ns: u64| {
            if t.process_cpu_ns > 0 {
                ns as f64 / t.process_cpu_ns as f64
            } else {
                0.0
            }
        };
        let (cpu_overhead, spin_cpu_overhead) = (share(t.detector_cpu_ns), share(t.spin_cpu_ns));
        summary.push((p999, count as f64, per_1k, t.janky as f64, cpu_overhead));
        samples.push(
            Sample::new("looper blocking on a monitor", mode.to_string(), p50)
                .with("p99_ns", p99)
                .with("p999_ns", p999)
                .with("count", count)
                .with("contended", contended)
                .with("spins", t.spins)
                .with("spins_acquired", t.spins_acquired)
                .with("spins_stalled", t.spins_stalled)
                .with("janky", t.janky)
                .with("dispatches", t.dispatches)
                .with("count_per_1k_dispatches", per_1k)
                .with("sections", t.sections)
                .with("sections_not_done", t.sections_not_done)
                .with("round_ms", t.round_ns as f64 / 1e6)
                .with("cpu_overhead", cpu_overhead)
                .with("spin_cpu_overhead", spin_cpu_overhead),
        );
    }
    let change = |new: f64, old: f64| {
        if old > 0.0 {
            100.0 * (new - old) / old
        } else {
            0.0
        }
    };
    let mut notes = vec![format!(
        "{} rounds x at least {} ms per mode; {} medium spinners on {cores} cores, {} low \
         threads x {} critical sections of {} us (mean gap {} us, the same in every mode), \
         looper nice {looper_nice}, every {} us, spin limit {} us; count = contended \
         acquisitions that parked, times over every contended acquisition",
        args.common.reps.max(1),
        args.duration_ms,
        medium,
        args.low,
        args.sections,
        args.cs_us,
        args.gap_us,
        args.period_us,
        args.spin_us
    )];
    if !privileged {
        notes.push(
            "this process may not raise priorities: inherit and fasttrack cannot boost \
             (run with CAP_SYS_NICE for meaningful figures)"
                .into(),
        );
    }
    for (mode, t) in MODES.iter().zip(&totals) {
        if t.sections_not_done > 0 {
            notes.push(format!(
                "{mode}: {} low sections not done after {ROUND_CAP}x --duration-ms; its \
                 figures cover less work than the other modes'",
                t.sections_not_done
            ));
        }
    }
    for (i, mode) in MODES.iter().enumerate().skip(1) {
        let (p999, count, per_1k, janky, cpu) = summary[i];
        let (p999_0, count_0, per_1k_0, janky_0, _) = summary[0];
        notes.push(format!(
            "{mode} vs off: p99.9 blocking {:+.1}%, blocking count {:+.1}% (per 1000 \
             dispatches {:+.1}%), janky dispatches {:+.1}%, detector CPU {:.3}% of process CPU",
            change(p999, p999_0),
            change(count, count_0),
            change(per_1k, per_1k_0),
            change(janky, janky_0),
            100.0 * cpu
        ));
    }
    let (p999, count, _, _, cpu) = summary[2];
    let (p999_0, count_0, _, _, _) = summary[0];
    let met = change(p999, p999_0) <= -72.0 && change(count, count_0) <= -47.7 && cpu <= 0.0074;
    notes.push(format!(
        "goal (at least -72% p99.9, -47.7% count, at most 0.74% CPU): {}",
        if met { "met" } else { "NOT met" }
    ));
    finish(samples, "off", &args.common, &notes)?;
    Ok(())
}
