//! `marvin bench reclaim`: how fast saved objects of a background app go back to the OS,
//! and how fast they come back.
//!
//! Set-up (not timed): a bare heap holding N MiB of one-page int arrays (509 words, 4,088
//! bytes with the header: the published workload's 4,076-byte arrays), each stubbed and
//! saved to its swap file ([`SavedHeap`]), the app in the background.
//!
//! - **reclaim**: [`reclaimer::reclaim_from`] taking 250 MiB and 500 MiB, against the
//!   reference [`reclaimer::reclaim_from_per_object`], which makes one `madvise` per
//!   object where ours coalesces neighbours into one call. The published figures (52 ms
//!   and 108 ms) are rows of their own, marked `"measured": false`, and are the baseline
//!   of the ratio column.
//! - **restore**: everything reclaimed, then read back eagerly ([`restore::restore_all`])
//!   or on fault (each object read once through [`Heap::access`]), with the swap file in
//!   the page cache (warm) or dropped from it (cold: `fsync`, then
//!   `posix_fadvise(POSIX_FADV_DONTNEED)` on the file, which needs no privilege). Rows
//!   carry `bytes` and `mb_per_s`; the published 100 MB/s is the baseline row.
//! - **compressed checkpoints**: eager restores, warm and cold, of arrays saved with
//!   `[saver] compress = "lz4"`: random arrays (stored as they are, since they do not
//!   shrink) beside the same arrays saved without compression, and the workload's
//!   arrays (which shrink to a few dozen bytes each). Their rows carry `file_bytes`, what
//!   the restore reads, and their floors read as many bytes of their own swap file.
//!
//! - **memory files**: the same arrays in a heap whose large objects live in memory
//!   files (`--large-backing memfd`, what a reclaimer in another process needs), reclaimed
//!   in process (`memfd-punch-hole`: one `fallocate(PUNCH_HOLE)` per run) and through the
//!   external reclaimer opening this very process from outside (`external-punch-hole`:
//!   the reclaim table's file view, the region directory, descriptors taken over with
//!   `pidfd_getfd`), with `kernel-punch-hole-floor`, one hole over as many freshly touched
//!   pages of a memory file.
//!
//! Floor rows measured in the same run show what the machine allows, and every reclaim
//! and restore row carries its ratio to its floor (`floor`, `ratio_to_floor`; the
//! table's `x floor` column): `kernel-madvise-floor` under the anonymous reclaims (the
//! kernel dropping the very pages a reclaim drops, right after the same eager restore,
//! one `madvise` per region and nothing else: its own cost of dropping them; one
//! `madvise` over as many freshly touched pages of a fresh mapping is reported beside
//! it), `kernel-punch-hole-floor` under the memory-file ones,
//! `page-cache-read-floor` under the warm restores (one `pread` of as many bytes of the
//! swap file as a restore reads, cached, into a fresh anonymous mapping, its page faults
//! included) and `disk-sequential-read` under the cold ones (as many bytes of the swap
//! file, dropped from the page cache, read front to back in 1 MiB reads).
//!
//! Every restore is checked: the first word of each array holds its handle, and the
//! walk's sum must match.

use std::time::Instant;

use anyhow::ensure;
use clap::Args;
use marvin_runtime::LargeBacking;
use marvin_swap::reclaimer;
use marvin_swap::reclaimer::ReclaimReport;

use super::{finish, median, CommonArgs, Sample};
use marvin_figures::{Chart, Curve};

mod floors;
mod restore_rows;
mod saved_heap;

use floors::{
    against_floor, madvise_floor, madvise_restored_pages, punch_hole_floor, Floor, FloorPages,
};
use restore_rows::{
    compressed_rows, restore_chart, restore_rows, FRESH_PAGES_MS, MADVISE_FLOOR, PUBLISHED,
    PUBLISHED_RESTORE_MB_S, ROUNDS_MS,
};
use saved_heap::MIB;
pub use saved_heap::{SavedHeap, ARRAY_BYTES, ARRAY_WORDS};

#[derive(Debug, Args)]
#[command(mut_arg("reps", |a| a.default_value("3")))]
pub struct ReclaimArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Small sizes (8 and 16 MiB) instead of 250 and 500 MiB.
    #[arg(long)]
    pub quick: bool,
    /// Draw the paper's figure 6 from the results (SVG and PNG, with the published
    /// values beside marvin's) into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<std::path::PathBuf>,
}
type Reclaim<'a> = (&'static str, Box<dyn FnMut(u64) -> ReclaimReport + 'a>);

fn reclaim_rows(
    saved: &SavedHeap,
    sizes: [u64; 2],
    reps: usize,
    floor: &Floor,
    reclaims: &mut [Reclaim<'_>],
) -> anyhow::Result<Vec<Sample>> {
    let mut samples = Vec::new();
    for size in sizes {
        let scenario = format!("reclaim {} MiB", size / MIB);
        let mut times = vec![Vec::new(); reclaims.len()];
        let mut calls = vec![0u64; reclaims.len()];
        let mut floor_ns = Vec::new();
        let mut fresh_ns = Vec::new();
        let mut floor_calls = 1;
        for rep in 0..=reps {
            for (k, (_, reclaim)) in reclaims.iter_mut().enumerate() {
                saved.reclaim_all();
                saved.restore_eager()?;
                let t = Instant::now();
                let r = reclaim(size);
                let ns = t.elapsed().as_nanos() as f64;
                ensure!(r.bytes >= size, "reclaimed {} of {size} bytes", r.bytes);
                if rep > 0 {
                    times[k].push(ns);
                }
                calls[k] = r.madvise_calls;
            }
            let (ns, fresh) = match floor.pages {
                FloorPages::Fresh(time) => (time(size)?, None),
                FloorPages::Restored(fresh) => {
                    saved.reclaim_all();
                    let (ns, calls) = madvise_restored_pages(saved, size)?;
                    floor_calls = calls;
                    (ns, Some(fresh(size)?))
                }
            };
            if rep > 0 {
                floor_ns.push(ns);
                fresh_ns.extend(fresh);
            }
        }
        saved.restore_eager()?;
        let rounds = |ns: &[f64]| ns.iter().map(|t| t / 1e6).collect::<Vec<f64>>();
        let mut floor_row = Sample::new(&scenario, floor.name, median(&mut floor_ns.clone()))
            .with("bytes", size)
            .with(floor.calls_key, floor_calls)
            .with(ROUNDS_MS, rounds(&floor_ns));
        if !fresh_ns.is_empty() {
            floor_row = floor_row.with(FRESH_PAGES_MS, median(&mut fresh_ns) / 1e6);
        }
        for (k, (name, _)) in reclaims.iter().enumerate() {
            let row = Sample::new(&scenario, *name, median(&mut times[k].clone()))
                .with("bytes", size)
                .with(floor.calls_key, calls[k])
                .with(ROUNDS_MS, rounds(&times[k]));
            samples.push(against_floor(row, &floor_row));
        }
        samples.push(floor_row);
    }
    saved.walk_first_words()?;
    Ok(samples)
}

/// The memory-file rows of the reclaim scenarios: in process, from outside, and the
/// kernel's floor.
fn memfd_rows(small: u64, large: u64, reps: usize) -> anyhow::Result<Vec<Sample>> {
    let saved = SavedHeap::build_on(large, LargeBacking::Memfd)?;
    let mut outside = saved.open_from_outside()?;
    let floor = Floor {
        name: "kernel-punch-hole-floor",
        calls_key: "fallocate_calls",
        pages: FloorPages::Fresh(punch_hole_floor),
    };
    let heap = &saved.heap;
    let mut reclaims: [Reclaim<'_>; 2] = [
        (
            "memfd-punch-hole",
            Box::new(|size| reclaimer::reclaim_from(heap, size)),
        ),
        (
            "external-punch-hole",
            Box::new(|size| outside.reclaim(size)),
        ),
    ];
    reclaim_rows(&saved, [small, large], reps, &floor, &mut reclaims)
}

/// Reads the first `limit` bytes of the file at `path` (all of it if shorter) front to
/// back in 1 MiB reads after dropping it from the page cache: what the disk gives a
/// sequential reader of as many bytes as a restore reads. Returns bytes and ns.
pub fn run(args: &ReclaimArgs) -> anyhow::Result<()> {
    let (small, large, published) = if args.quick {
        (8 * MIB, 16 * MIB, None)
    } else {
        (250 * MIB, 500 * MIB, Some((52e6, 108e6)))
    };
    if let Some(dir) = &args.plot {
        super::prepare_plot(dir)?;
    }
    let saved = SavedHeap::build(large)?;
    let reps = args.common.reps.max(1);
    let mut samples = Vec::new();

    // Reclaim: ours (coalesced) and one madvise per object, beside the kernel's floor.
    for (size, pub_ns) in [
        (small, published.map(|p| p.0)),
        (large, published.map(|p| p.1)),
    ] {
        if let Some(p) = pub_ns {
            let scenario = format!("reclaim {} MiB", size / MIB);
            samples.push(Sample::new(&scenario, PUBLISHED, p).with("measured", false));
        }
    }
    let floor = Floor {
        name: MADVISE_FLOOR,
        calls_key: "madvise_calls",
        pages: FloorPages::Restored(madvise_floor),
    };
    let heap = &saved.heap;
    let mut reclaims: [Reclaim<'_>; 2] = [
        (
            "marvin",
            Box::new(|size| reclaimer::reclaim_from(heap, size)),
        ),
        (
            "per-object-madvise",
            Box::new(|size| reclaimer::reclaim_from_per_object(heap, size)),
        ),
    ];
    samples.extend(reclaim_rows(
        &saved,
        [small, large],
        reps,
        &floor,
        &mut reclaims,
    )?);

    samples.extend(memfd_rows(small, large, reps)?);

    // Restore: eager and on fault, warm and cold page cache.
    for (mode, eager) in [("eager", true), ("on-fault", false)] {
        for (cache, cold) in [("warm", false), ("cold", true)] {
            let scenario = format!("restore {} MiB {mode} {cache}", large / MIB);
            // As many bytes as the objects hold, as the floors always read.
            let floor_bytes = saved.object_bytes();
            let (row, floor_row) =
                restore_rows(&saved, &scenario, (eager, cold), floor_bytes, reps)?;
            let bytes = saved.object_bytes();
            samples.push(
                Sample::new(
                    &scenario,
                    PUBLISHED,
                    bytes as f64 / (PUBLISHED_RESTORE_MB_S * 1e6) * 1e9,
                )
                .with("bytes", bytes)
                .with("mb_per_s", PUBLISHED_RESTORE_MB_S)
                .with("measured", false),
            );
            samples.push(row);
            samples.push(floor_row);
        }
    }
    // Room for the compressed rows' heaps: this one is done.
    drop(reclaims);
    drop(saved);
    samples.extend(compressed_rows(large, reps)?);

    let mut notes = vec![format!(
        "one-page int arrays, stubbed and saved; median of {reps} after a warm-up; `published` rows are the paper's figures (not measured here)"
    )];
    let get = |scenario: &str, imp: &str| {
        samples
            .iter()
            .find(|s| s.scenario == scenario && s.implementation == imp)
            .map(|s| s.median_ns)
    };
    for size in [small, large] {
        let scenario = format!("reclaim {} MiB", size / MIB);
        let ours = get(&scenario, "marvin").unwrap_or(f64::NAN);
        let floor = get(&scenario, MADVISE_FLOOR).unwrap_or(f64::NAN);
        notes.push(format!(
            "{scenario}: {:.1} ms; the kernel's drop of the same pages alone takes {:.1} ms here",
            ours / 1e6,
            floor / 1e6
        ));
    }
    if let Some(p) = published {
        let ours = get(&format!("reclaim {} MiB", large / MIB), "marvin").unwrap_or(f64::NAN);
        let speedup = p.1 / ours;
        notes.push(format!(
            "reclaim of 500 MiB is {speedup:.1}x faster than published (goal >= 5x: {})",
            if speedup >= 5.0 { "met" } else { "NOT met" }
        ));
    }
    for s in &samples {
        if s.implementation == "marvin" && s.scenario.starts_with("restore") {
            let mbs = s.extra["mb_per_s"].as_f64().unwrap_or(0.0);
            notes.push(format!(
                "{}: {mbs:.0} MB/s, {:.1}x published (goal >= 10x: {})",
                s.scenario,
                mbs / PUBLISHED_RESTORE_MB_S,
                if mbs >= 10.0 * PUBLISHED_RESTORE_MB_S {
                    "met"
                } else {
                    "NOT met"
                }
            ));
        }
    }
    if let Some(dir) = &args.plot {
        let curve = |imp: &str, label: &str| Curve {
            label: label.to_owned(),
            points: [small, large]
                .iter()
                .filter_map(|&size| {
                    get(&format!("reclaim {} MiB", size / MIB), imp)
                        .map(|ns| ((size / MIB) as f64, ns / 1e6))
                })
                .collect(),
            published: false,
        };
        let chart = Chart {
            name: "reclaim",
            title: "Figure 6: reclaim latency".into(),
            x_label: "memory reclaimed (MiB)",
            y_label: "time to reclaim (ms)",
            curves: vec![
                curve("marvin", "marvin"),
                curve("per-object-madvise", "one madvise per object"),
                curve(MADVISE_FLOOR, "kernel floor: one madvise"),
                Curve {
                    label: "published (Marvin, ATC 2020)".into(),
                    points: vec![(250.0, 52.0), (500.0, 108.0)],
                    published: true,
                },
            ],
            bars: Vec::new(),
            y_log: false,
            caption: format!(
                "marvin bench reclaim{}, one-page arrays stubbed and saved, median of {reps}, commit {}",
                if args.quick { " --quick" } else { "" },
                marvin_system::provenance::commit()
            ),
        };
        for f in chart.write(dir)? {
            notes.push(format!("wrote {}", f.display()));
        }
        for f in restore_chart(&samples, large, reps, args.quick).write(dir)? {
            notes.push(format!("wrote {}", f.display()));
        }
    }
    finish(samples, PUBLISHED, &args.common, &notes)?;
    Ok(())
}
