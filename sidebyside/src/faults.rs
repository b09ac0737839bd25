//! `marvin bench faults`: heap-walk speed when part of the walked objects must be faulted
//! in first.
//!
//! The heap is a [`SavedHeap`] (one-page int arrays, stubbed and saved; 128 MiB, 4 MiB
//! with `--quick`). Before each timed walk (not timed), a fraction of the arrays spread
//! evenly over the heap (0, 10, 20, 30, 40, 50%) is reclaimed: the others are written
//! once, which makes them dirty and so not reclaimable, then everything clean is
//! reclaimed. The walk reads every word of every array through [`Heap::access`], so an
//! array that is out takes an object fault (read back from a warm swap file). After the
//! walk the written arrays are saved again, for the next repetition.
//!
//! A fault reads the out arrays whose checkpoints lie next to its own along with it
//! (read-ahead), so an out array is brought back either by its own fault or by a
//! neighbour's: rows report both counts (`object_faults`, `read_ahead_objects`), whose
//! sum is `faulted_objects`.
//!
//! Rows report `bytes` walked, `objects_per_s`, `mb_per_s` and the speed relative to the
//! walk with no faults. The published finding: walk speed drops 49% going from 10% to
//! 20% of objects faulted.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::ensure;
use clap::Args;
use marvin_runtime::{AccessKind, Barriers};
use marvin_swap::{reclaimer, saver};

use super::reclaim::SavedHeap;
use super::{finish, median, CommonArgs, Sample};
use marvin_figures::{Chart, Curve};

#[derive(Debug, Args)]
pub struct FaultsArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// A 4 MiB heap instead of 128 MiB.
    #[arg(long)]
    pub quick: bool,
    /// Draw the paper's figure 10 from the results (SVG and PNG, with the published
    /// values beside marvin's) into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<std::path::PathBuf>,
}

/// Object faults and objects read ahead with them so far.
fn fault_counts(saved: &SavedHeap) -> (u64, u64) {
    let faults = saved
        .heap
        .stub_space()
        .map_or(0, |s| s.counters.faults.load(Ordering::Relaxed));
    let ahead = saved
        .swap
        .counters
        .read_ahead_objects
        .load(Ordering::Relaxed);
    (faults, ahead)
}

/// Percentages of walked objects faulted in.
const FRACTIONS: [u64; 6] = [0, 10, 20, 30, 40, 50];
const IMPL: &str = "marvin";

/// Whether object `i` is among the `pct`% spread evenly over the heap.
fn selected(i: u64, pct: u64) -> bool {
    (i + 1) * pct / 100 > i * pct / 100
}

/// Makes exactly the selected arrays reclaimed: the others are written (dirty), then
/// everything clean goes. Returns the number reclaimed.
fn reclaim_fraction(saved: &SavedHeap, pct: u64) -> anyhow::Result<u64> {
    for (i, &h) in saved.handles.iter().enumerate() {
        if !selected(i as u64, pct) {
            let a = saved.heap.access::<Barriers>(h, AccessKind::Write)?;
            let w = &a.obj().words()[1];
            w.store(w.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
    Ok(reclaimer::reclaim_from(&saved.heap, u64::MAX).objects)
}

/// Reads every word of every array; returns the sum of the first words.
fn walk(saved: &SavedHeap) -> anyhow::Result<u64> {
    let mut first = 0u64;
    let mut all = 0u64;
    for &h in &saved.handles {
        let a = saved.heap.access::<Barriers>(h, AccessKind::Read)?;
        let words = a.obj().words();
        first = first.wrapping_add(words[0].load(Ordering::Relaxed));
        for w in words {
            all = all.wrapping_add(w.load(Ordering::Relaxed));
        }
    }
    std::hint::black_box(all);
    Ok(first)
}

pub fn run(args: &FaultsArgs) -> anyhow::Result<()> {
    let bytes = if args.quick { 4 << 20 } else { 128 << 20 };
    if let Some(dir) = &args.plot {
        super::prepare_plot(dir)?;
    }
    let saved = SavedHeap::build(bytes)?;
    let n = saved.handles.len() as u64;
    let reps = args.common.reps.max(1);
    let mut samples: Vec<Sample> = Vec::new();
    let mut speeds = Vec::new();
    for pct in FRACTIONS {
        let mut times = Vec::new();
        let mut faulted = 0;
        let mut walk_faults = (0, 0);
        for rep in 0..=reps {
            faulted = reclaim_fraction(&saved, pct)?;
            let expected: u64 = (0..n).filter(|&i| selected(i, pct)).count() as u64;
            ensure!(
                faulted == expected,
                "reclaimed {faulted} of {expected} arrays"
            );
            let faults_before = fault_counts(&saved);
            let t = Instant::now();
            let sum = walk(&saved)?;
            let ns = t.elapsed().as_nanos() as f64;
            let after = fault_counts(&saved);
            walk_faults = (after.0 - faults_before.0, after.1 - faults_before.1);
            ensure!(
                walk_faults.0 + walk_faults.1 == faulted,
                "{faulted} arrays were out, {} faults and {} read ahead brought back",
                walk_faults.0,
                walk_faults.1
            );
            ensure!(sum == saved.checksum, "the walk read wrong values");
            if rep > 0 {
                times.push(ns);
            }
            saver::save(&saved.heap, &saved.swap, Duration::MAX, true);
        }
        let ns = median(&mut times);
        let object_bytes = saved.object_bytes();
        let objects_per_s = n as f64 / (ns / 1e9);
        speeds.push(objects_per_s);
        samples.push(
            Sample::new(format!("walk, {pct}% faulted"), IMPL, ns)
                .with("bytes", object_bytes)
                .with("objects", n)
                .with("faulted_objects", faulted)
                .with("object_faults", walk_faults.0)
                .with("read_ahead_objects", walk_faults.1)
                .with("objects_per_s", objects_per_s)
                .with("mb_per_s", object_bytes as f64 / 1e6 / (ns / 1e9))
                .with("speed_vs_no_faults", objects_per_s / speeds[0]),
        );
    }
    let mut notes = vec![format!(
        "{} MiB of one-page arrays, every word read through the barrier; faults read a warm swap file; median of {reps} after a warm-up",
        bytes >> 20
    )];
    for (i, pct) in FRACTIONS.iter().enumerate() {
        let mbs = samples[i].extra["mb_per_s"].as_f64().unwrap_or(0.0);
        notes.push(format!(
            "{pct:>2}% faulted: {:.2} M objects/s, {mbs:.0} MB/s, {:.1}% of the fault-free speed",
            speeds[i] / 1e6,
            100.0 * speeds[i] / speeds[0]
        ));
    }
    notes.push(format!(
        "going from 10% to 20% faulted, walk speed drops {:.0}% (published: 49%)",
        100.0 * (1.0 - speeds[2] / speeds[1])
    ));
    if let Some(dir) = &args.plot {
        // Speeds relative to the walk with 10% faulted, where the published drop starts.
        let chart = Chart {
            name: "faults",
            title: "Figure 10: heap-walk speed under object faults".into(),
            x_label: "objects faulted in during the walk (%)",
            y_label: "walk speed relative to 10% faulted",
            curves: vec![
                Curve {
                    label: "marvin".into(),
                    points: FRACTIONS
                        .iter()
                        .zip(&speeds)
                        .map(|(&pct, s)| (pct as f64, s / speeds[1]))
                        .collect(),
                    published: false,
                },
                Curve {
                    label: "published (Marvin, ATC 2020): -49% from 10% to 20%".into(),
                    points: vec![(10.0, 1.0), (20.0, 0.51)],
                    published: true,
                },
            ],
            bars: Vec::new(),
            y_log: true,
            caption: format!(
                "marvin bench faults, {} MiB of one-page arrays, warm swap file, median of {reps}, commit {}",
                bytes >> 20,
                marvin_system::provenance::commit()
            ),
        };
        for f in chart.write(dir)? {
            notes.push(format!("wrote {}", f.display()));
        }
    }
    finish(samples, IMPL, &args.common, &notes)?;
    Ok(())
}
