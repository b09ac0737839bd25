//! `marvin bench`: side-by-side benchmarks that print a table of medians and ratios, or
//! JSON with `--json`.
//!
//! Every benchmark module returns [`Sample`]s; this module owns the shared measuring
//! loop ([`median_ns`]), the table and the JSON form, so each benchmark only says what it
//! runs.
//!
//! # Surface
//!
//! Public modules: none. The command line runs [`BenchCmd`] with [`run`]; the tests and
//! criterion benchmarks reach, besides the shared helpers here ([`Sample`],
//! [`ROUND_RATIO`], [`stream_seed`], ...):
//!
//! - the interpreter benchmark's programs and timing: [`PROGRAMS`],
//!   [`ELSEWHERE_PROGRAMS`], [`AWFY_PROGRAMS`], [`UNTUNED_PROGRAMS`], [`Suite`], [`Implementation`],
//!   [`BASELINE`], [`GEOMEAN`], [`default_dir`], [`run_timed`], [`measure_rounds`],
//!   [`geomean_samples`];
//! - the queue benchmark's criterion entry points [`QueueBench`] and its seeded delays
//!   [`delay_plan`];
//! - priority inversion's seeded [`inversion_schedule`] and its [`InversionArgs`];
//! - a saved heap of the reclaim benchmark, [`SavedHeap`] (the fault-walk probe).

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its
// error handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;

use clap::{Args, Subcommand};
use serde::Serialize;

use marvin_console::OutputError;
use marvin_console::{errln, outln};

mod alloc;
mod atomics;
mod cputime;
mod delay_plot;
mod faults;
mod interp;
mod interpose;
mod inversion;
mod queue;
mod reclaim;
mod rounds;
mod sched;

pub use interp::{
    default_dir, geomean_samples, measure_rounds, run_timed, Implementation, Suite, AWFY_PROGRAMS,
    BASELINE, ELSEWHERE_PROGRAMS, GEOMEAN, PROGRAMS, UNTUNED_PROGRAMS,
};
pub use inversion::{schedule as inversion_schedule, InversionArgs};
pub use queue::{delay_plan, QueueBench};
pub use reclaim::SavedHeap;

/// The benchmarks, one subcommand each.
#[derive(Debug, Subcommand)]
pub enum BenchCmd {
    /// MASM interpreter against Lua 5.4 and CPython on the same programs.
    Interp(interp::InterpArgs),
    /// DeliQueue against the legacy single-lock queue, crossbeam-channel and std mpsc.
    Queue(queue::QueueArgs),
    /// Thread CPU time: /proc parsing vs clock_gettime vs the current-thread fast path.
    Cputime(cputime::CputimeArgs),
    /// Field atomics resolved at load against resolution by name on every execution.
    Atomics(atomics::AtomicsArgs),
    /// Priority inversion on a looper: no fast track, priority inheritance, fast track.
    Inversion(inversion::InversionArgs),
    /// Reclaiming saved objects (coalesced vs one madvise per object) and restoring them.
    Reclaim(reclaim::ReclaimArgs),
    /// Access-barrier overhead as the share of object-accessing instructions grows.
    Interpose(interpose::InterposeArgs),
    /// Heap-walk speed as a growing fraction of the walked objects is faulted in.
    Faults(faults::FaultsArgs),
    /// Allocating with free memory vs a budget full of background apps.
    Alloc(alloc::AllocArgs),
}

/// Options every benchmark takes.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Print a JSON array of results instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Repetitions per scenario and implementation (the median is reported; at least 1).
    #[arg(long, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub reps: usize,
    /// Seed of the random draws (queue due times, inversion arrivals): every thread's
    /// and repetition's stream is derived from it ([`stream_rng`]); recorded in the JSON
    /// as `seed`. Benches without random draws record it only.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// The seed of one random stream of a bench run with `--seed seed`: repetition `rep`'s,
/// thread (or poster) `thread`'s. Distinct streams get unrelated seeds (SplitMix64
/// mixing), and the same triple always gets the same seed.
pub fn stream_seed(seed: u64, rep: u64, thread: u64) -> u64 {
    mix(seed ^ mix(rep ^ mix(thread).rotate_left(17)))
}

/// The random generator of one stream (see [`stream_seed`]).
pub fn stream_rng(seed: u64, rep: u64, thread: u64) -> rand::rngs::StdRng {
    rand::SeedableRng::seed_from_u64(stream_seed(seed, rep, thread))
}

/// SplitMix64's finaliser: a bijection of `u64` that spreads every input bit.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One measured scenario of one implementation.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub scenario: String,
    #[serde(rename = "impl")]
    pub implementation: String,
    pub median_ns: f64,
    /// Ratio of this median to the baseline implementation's median for the same
    /// scenario (filled in by [`finish`]); below 1 means faster than the baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_to_baseline: Option<f64>,
    /// Name of the baseline the ratio refers to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Extra figures a benchmark reports (bytes, percentiles, counts).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Sample {
    pub fn new(
        scenario: impl Into<String>,
        implementation: impl Into<String>,
        median_ns: f64,
    ) -> Self {
        Sample {
            scenario: scenario.into(),
            implementation: implementation.into(),
            median_ns,
            ratio_to_baseline: None,
            baseline: None,
            extra: serde_json::Map::new(),
        }
    }

    /// Adds an extra named figure.
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.extra.insert(key.to_string(), value.into());
        self
    }
}

/// Runs `f` `reps` times (after one warm-up run) and returns the median wall time in ns.
pub fn median_ns(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut times: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64
        })
        .collect();
    median(&mut times)
}

/// The median of some values (the mean of the two middle ones for an even count).
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The `p`-th percentile (0..=100) of some values, nearest-rank (NaN when there are
/// none); sorts `values`.
pub fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    marvin_figures::nearest_rank(values, p).unwrap_or(f64::NAN)
}

/// Checks that `dir` can take a figure's files before a benchmark spends its time
/// (creating nothing: the directory is made when the figure is written). The error is
/// the path error itself, so the command ends with status 2 naming `--plot`.
pub fn prepare_plot(dir: &std::path::Path) -> anyhow::Result<()> {
    marvin_system::paths::check_output_dir("--plot", dir).map_err(anyhow::Error::new)
}

/// The extra figure (JSON key) of a benchmark that runs its implementations in interleaved
/// rounds: the median over the rounds of each round's time over the baseline's in the same
/// round. The table shows it in a column of its own when any sample has it.
pub const ROUND_RATIO: &str = "round_ratio";

/// The extra figure (JSON key) naming the row of the same scenario that is this row's
/// floor: what the machine allows for the same work, measured in the same run.
pub const FLOOR: &str = "floor";
/// The extra figure (JSON key) of `bench interp`'s rows when LuaJIT's interpreter ran: the
/// median over the rounds of the row's time over `luajit -joff`'s in the same round,
/// shown as the column `rounds x luajit`.
pub const JIT_ROUND_RATIO: &str = "round_ratio_luajit";
/// The extra figure (JSON key) of a row measured against a floor ([`FLOOR`]): its time
/// per byte over the floor's (the time ratio when both move the same bytes). The table
/// shows it in an `x floor` column when any sample has it.
pub const FLOOR_RATIO: &str = "ratio_to_floor";

/// Fills in each sample's ratio to `baseline` in the same scenario, then prints the
/// table (or, with `--json`, the JSON array, every sample carrying the run's `seed`); a
/// failed write to stdout is returned.
pub fn finish(
    mut samples: Vec<Sample>,
    baseline: &str,
    common: &CommonArgs,
    notes: &[String],
) -> Result<(), OutputError> {
    let json = common.json;
    let base: std::collections::HashMap<String, f64> = samples
        .iter()
        .filter(|s| s.implementation == baseline)
        .map(|s| (s.scenario.clone(), s.median_ns))
        .collect();
    for s in &mut samples {
        if let Some(b) = base.get(&s.scenario) {
            if *b > 0.0 {
                s.ratio_to_baseline = Some(s.median_ns / b);
                s.baseline = Some(baseline.to_string());
            }
        }
    }
    if json {
        for s in &mut samples {
            s.extra.insert("seed".to_string(), common.seed.into());
        }
        let text = serde_json::to_string_pretty(&samples)
            .unwrap_or_else(|e| format!("{{\"error\": \"the samples do not serialise: {e}\"}}"));
        outln!("{text}")?;
        for n in notes {
            errln!("note: {n}");
        }
        return Ok(());
    }
    let rounds = samples.iter().any(|s| s.extra.contains_key(ROUND_RATIO));
    let round_column = |text: String| {
        if rounds {
            format!(" {text:>16}")
        } else {
            String::new()
        }
    };
    let jits = samples
        .iter()
        .any(|s| s.extra.contains_key(JIT_ROUND_RATIO));
    let jit_column = |text: String| {
        if jits {
            format!(" {text:>16}")
        } else {
            String::new()
        }
    };
    let floors = samples.iter().any(|s| s.extra.contains_key(FLOOR_RATIO));
    let floor_column = |text: String| {
        if floors {
            format!(" {text:>8}")
        } else {
            String::new()
        }
    };
    outln!(
        "{:<34} {:<22} {:>14} {:>10}{}{}{}",
        "scenario",
        "impl",
        "median",
        format!("x {baseline}"),
        round_column(format!("rounds x {baseline}")),
        jit_column("rounds x luajit".into()),
        floor_column("x floor".into())
    )?;
    for s in &samples {
        let ratio = s
            .ratio_to_baseline
            .map(|r| format!("{r:.3}"))
            .unwrap_or_else(|| "-".into());
        let round_ratio = s
            .extra
            .get(ROUND_RATIO)
            .and_then(|v| v.as_f64())
            .map(|r| format!("{r:.3}"))
            .unwrap_or_else(|| "-".into());
        let jit_ratio = s
            .extra
            .get(JIT_ROUND_RATIO)
            .and_then(|v| v.as_f64())
            .map(|r| format!("{r:.3}"))
            .unwrap_or_else(|| "-".into());
        let floor_ratio = s
            .extra
            .get(FLOOR_RATIO)
            .and_then(|v| v.as_f64())
            .map(|r| format!("{r:.2}"))
            .unwrap_or_else(|| "-".into());
        outln!(
            "{:<34} {:<22} {:>14} {:>10}{}{}{}",
            s.scenario,
            s.implementation,
            human_ns(s.median_ns),
            ratio,
            round_column(round_ratio),
            jit_column(jit_ratio),
            floor_column(floor_ratio)
        )?;
    }
    for n in notes {
        outln!("note: {n}")?;
    }
    Ok(())
}

/// Formats nanoseconds with a sensible unit.
pub fn human_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.3} us", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}

/// Dispatches a `marvin bench` subcommand.
/// Runs a benchmark; the process's exit code (0, or 128 + the signal when a stop signal
/// ended it early).
pub fn run(cmd: &BenchCmd) -> anyhow::Result<i32> {
    let done = match cmd {
        BenchCmd::Queue(a) => return queue::run(a),
        BenchCmd::Interp(a) => interp::run(a),
        BenchCmd::Cputime(a) => cputime::run(a),
        BenchCmd::Atomics(a) => atomics::run(a),
        BenchCmd::Inversion(a) => inversion::run(a),
        BenchCmd::Reclaim(a) => reclaim::run(a),
        BenchCmd::Interpose(a) => interpose::run(a),
        BenchCmd::Faults(a) => faults::run(a),
        BenchCmd::Alloc(a) => alloc::run(a),
    };
    done.map(|()| 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unwritable_plot_directory_is_refused_up_front() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        assert!(prepare_plot(&file).is_err());
        let new = dir.path().join("new");
        assert!(prepare_plot(&new).is_ok());
        assert!(
            !new.exists(),
            "nothing is created before the figure is written"
        );
    }
}
