//! `marvin bench atomics`: field atomics with operands resolved once at load against the
//! same instructions resolved by name on every execution (`--no-resolve`, the reflective
//! field-updater path), single- and multi-threaded.
//!
//! The programs are `benches/programs/atomics_cas.masm` (a getfield + cas retry loop) and
//! `atomics_xadd.masm` (one xadd per iteration), run in-process with `THREADS` spawned
//! threads each doing `N` increments of one shared field. `atomics_loop.masm` runs the same
//! counting loop without the atomic. The figure (`median_ns`) is the cost of one operation:
//! (wall time of the program - wall time of the bare loop) / `N`, as each thread sees it
//! (with several threads they run at once, so it includes contention on the shared field);
//! `iteration_ns` is the whole loop iteration, atomic included. Each run checks the printed
//! total (`N * THREADS`).
//!
//! Published (R8 / kotlinx.coroutines): `AtomicReferenceFieldUpdater.compareAndSet` 135 ns
//! vs 50.7 ns for the direct atomic, 2.7x; the goal here is at least 2.7x.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use marvin_interpreter::exec::{self, RunConfig};
use marvin_interpreter::{load, verify};

use super::{finish, median, CommonArgs, Sample};

const CAS: &str = include_str!("../../benches/programs/atomics_cas.masm");
const XADD: &str = include_str!("../../benches/programs/atomics_xadd.masm");
const LOOP: &str = include_str!("../../benches/programs/atomics_loop.masm");

const RESOLVED: &str = "resolved";
const BY_NAME: &str = "by-name";

#[derive(Debug, Args)]
pub struct AtomicsArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Increments per thread.
    #[arg(long, default_value_t = 2_000_000)]
    pub n: u64,
    /// Threads of the multi-threaded scenarios.
    #[arg(long, default_value_t = 2)]
    pub threads: u64,
}

/// A `Write` into a shared buffer, to read a run's output afterwards.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("output buffer").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `source` once with `n` and `threads`; returns the wall time in ns.
fn run_once(name: &str, source: &str, n: u64, threads: u64, resolve: bool) -> anyhow::Result<f64> {
    let mut p = load::load_bytes(name, source.as_bytes())
        .map_err(|d| anyhow::anyhow!("{d}"))
        .context("loading a benchmark program")?;
    p.link(&[("N".into(), n as i64), ("THREADS".into(), threads as i64)])
        .map_err(|d| anyhow::anyhow!("{d}"))?;
    let vp = verify::verify(p).map_err(|d| anyhow::anyhow!("{d}"))?;
    let out = Captured::default();
    let cfg = RunConfig {
        out: Box::new(out.clone()),
        resolve,
        ..RunConfig::default()
    };
    let t = Instant::now();
    let outcome = exec::run(vp, cfg).context("starting the app")?;
    let ns = t.elapsed().as_nanos() as f64;
    if outcome.status != 0 {
        bail!("{name} failed: {:?}", outcome.error);
    }
    let printed = String::from_utf8_lossy(&out.0.lock().expect("output buffer")).into_owned();
    if printed.trim() != (n * threads).to_string() {
        bail!("{name} printed {printed:?}, expected {}", n * threads);
    }
    Ok(ns)
}

pub fn run(args: &AtomicsArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.n > 0 && args.threads > 0,
        "--n and --threads must be positive"
    );
    let mut samples = Vec::new();
    let mut notes = Vec::new();
    for (op, file, source) in [
        ("cas", "atomics_cas.masm", CAS),
        ("xadd", "atomics_xadd.masm", XADD),
    ] {
        for threads in [1, args.threads] {
            if threads == 1
                && samples
                    .iter()
                    .any(|s: &Sample| s.scenario == format!("{op} x1"))
            {
                continue;
            }
            let scenario = format!("{op} x{threads}");
            let per_op = |resolve: bool| -> anyhow::Result<f64> {
                run_once(file, source, args.n / 10, threads, resolve)?; // warm-up
                let mut v = (0..args.common.reps.max(1))
                    .map(|_| run_once(file, source, args.n, threads, resolve))
                    .collect::<anyhow::Result<Vec<f64>>>()?;
                Ok(median(&mut v) / args.n as f64)
            };
            let bare = {
                let mut v = (0..args.common.reps.max(1))
                    .map(|_| run_once("atomics_loop.masm", LOOP, args.n, threads, true))
                    .collect::<anyhow::Result<Vec<f64>>>()?;
                median(&mut v) / args.n as f64
            };
            let by_name = per_op(false)?;
            let resolved = per_op(true)?;
            for (name, iteration) in [(BY_NAME, by_name), (RESOLVED, resolved)] {
                samples.push(
                    Sample::new(&scenario, name, (iteration - bare).max(0.0))
                        .with("iteration_ns", iteration)
                        .with("threads", threads)
                        .with("ops_per_thread", args.n),
                );
            }
            let speedup = (by_name - bare) / (resolved - bare).max(f64::MIN_POSITIVE);
            notes.push(format!(
                "{scenario}: per operation, resolved is {speedup:.2}x faster than by-name \
                 (goal >= 2.7x, {}); per loop iteration {:.2}x (bare loop {bare:.1} ns)",
                if speedup >= 2.7 { "met" } else { "NOT met" },
                by_name / resolved
            ));
        }
    }
    finish(samples, BY_NAME, args.common.json, &notes);
    Ok(())
}
