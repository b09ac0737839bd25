//! Probe: where an on-fault restore's time goes. Builds `bench reclaim`'s heap of
//! one-page arrays, then in each round reclaims every array, drops the swap file from
//! the page cache (unless `warm`) and walks the arrays through the barrier, printing
//! the walk's wall time beside the walking thread's CPU time. A walk whose CPU time is
//! close to its wall time waits for its own work (placing pages, copying, checking),
//! not for the disk.
//!
//! ```text
//! cargo run --release -p marvin-sidebyside --example fault_walk_probe -- [cold|warm] [MiB] [rounds]
//! ```
//! Defaults: cold, 500 MiB, 4 rounds. Run it under `perf record -g` to see which kernel
//! paths the walk's CPU time is spent in (`docs/notes/2026-12-03-restore-at-disk-speed.md`,
//! sixth pass).

use std::time::Instant;

use anyhow::{bail, Context};
use marvin_runtime::cpuclock::measure_thread_cpu;
use marvin_sidebyside::SavedHeap;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cold = match args.first().map(String::as_str) {
        None | Some("cold") => true,
        Some("warm") => false,
        Some(other) => bail!("expected cold or warm, got {other:?}"),
    };
    let mib: u64 = match args.get(1) {
        Some(s) => s.parse().with_context(|| format!("MiB: {s:?}"))?,
        None => 500,
    };
    let rounds: usize = match args.get(2) {
        Some(s) => s.parse().with_context(|| format!("rounds: {s:?}"))?,
        None => 4,
    };
    let bytes = mib
        .checked_mul(1 << 20)
        .with_context(|| format!("{mib} MiB is more than a heap can hold"))?;
    let saved = SavedHeap::build(bytes)?;
    for round in 0..rounds {
        saved.reclaim_all();
        if cold {
            saved.drop_swap_cache()?;
        }
        let t = Instant::now();
        let (walked, cpu_ns) = measure_thread_cpu(|| saved.walk_first_words());
        let wall_ms = t.elapsed().as_secs_f64() * 1e3;
        walked?;
        let cpu_ms = cpu_ns as f64 / 1e6;
        println!(
            "round {round}: {} walk of {mib} MiB {wall_ms:.1} ms, walking thread's CPU {cpu_ms:.1} ms ({:.0}%)",
            if cold { "cold" } else { "warm" },
            100.0 * cpu_ms / wall_ms
        );
    }
    Ok(())
}
