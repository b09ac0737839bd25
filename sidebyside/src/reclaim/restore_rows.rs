//! The restore rows of the reclaim benchmark: eager and on-fault restores, warm and
//! cold, of plain and compressed checkpoints, in interleaved rounds against their
//! floors, and the restore figure.

use std::time::Instant;

use anyhow::ensure;
use marvin_runtime::LargeBacking;
use marvin_swap::{Compression, PolicyConfig};

use super::super::{median, Sample};
use super::floors::{against_floor, cold_file_read, cold_file_read_fresh, warm_file_read};
use super::saved_heap::{Fill, SavedHeap, MIB};
use marvin_figures::{Bar, Chart};

pub(super) const PUBLISHED: &str = "published";
/// In a reclaim or restore row (JSON): each timed round's time (ms), in the order run.
pub(super) const ROUNDS_MS: &str = "rounds_ms";
/// The cold restores' floor: the swap file read from the disk, front to back.
pub(super) const DISK_FLOOR: &str = "disk-sequential-read";
/// In a cold restore's row (JSON): the median time (ms) of the disk floor's reads made
/// into a fresh anonymous mapping, its page faults included, and the row's time per byte
/// over it.
pub(super) const FRESH_MEMORY_FLOOR_MS: &str = "disk_into_fresh_memory_ms";
pub(super) const FRESH_MEMORY_RATIO: &str = "ratio_to_disk_into_fresh_memory";
/// The warm restores' floor: one `pread` of the cached swap file into fresh memory.
pub(super) const PAGE_CACHE_FLOOR: &str = "page-cache-read-floor";
/// The anonymous reclaims' floor: the kernel's drop of the same pages, right after the
/// same restore ([`madvise_restored_pages`]).
pub(super) const MADVISE_FLOOR: &str = "kernel-madvise-floor";
/// In the madvise floor's row (JSON): the median time (ms) of one `madvise` over as many
/// freshly touched pages of a mapping of its own (the floor before 2026-12-03's third
/// pass), beside the floor, not instead of it.
pub(super) const FRESH_PAGES_MS: &str = "fresh_pages_ms";
/// Published Marvin restore throughput.
pub(super) const PUBLISHED_RESTORE_MB_S: f64 = 100.0;

pub(super) fn mb_per_s(bytes: u64, ns: f64) -> f64 {
    bytes as f64 / 1e6 / (ns / 1e9)
}

/// The restores of `large` MiB beside their floors, as bars of time: each mode's warm
/// and cold restores, the page-cache and disk floors, and the published rate's time.
pub(super) fn restore_chart(samples: &[Sample], large: u64, reps: usize, quick: bool) -> Chart {
    let scenario = |mode: &str, cache: &str| format!("restore {} MiB {mode} {cache}", large / MIB);
    let get = |scenario: &str, imp: &str| {
        samples
            .iter()
            .find(|s| s.scenario == scenario && s.implementation == imp)
            .map(|s| s.median_ns / 1e6)
    };
    let mut bars = Vec::new();
    let mut bar = |label: String, value: Option<f64>, published: bool| {
        if let Some(value) = value {
            bars.push(Bar {
                label,
                value,
                published,
            });
        }
    };
    for cache in ["warm", "cold"] {
        for mode in ["eager", "on-fault"] {
            bar(
                format!("{mode} {cache}"),
                get(&scenario(mode, cache), "marvin"),
                false,
            );
        }
        let (floor, label) = if cache == "warm" {
            (PAGE_CACHE_FLOOR, "page-cache floor")
        } else {
            (DISK_FLOOR, "disk floor")
        };
        bar(label.into(), get(&scenario("eager", cache), floor), false);
    }
    bar(
        "published".into(),
        get(&scenario("eager", "warm"), PUBLISHED),
        true,
    );
    Chart {
        name: "restore",
        title: format!("Restore of {} MiB beside its floors", large / MIB),
        x_label: "restore (mode, page cache) and floor",
        y_label: "time to restore (ms)",
        curves: Vec::new(),
        bars,
        y_log: true,
        caption: format!(
            "marvin bench reclaim{}, one-page arrays stubbed and saved, median of {reps}, commit {}",
            if quick { " --quick" } else { "" },
            marvin_system::provenance::commit()
        ),
    }
}

/// Times restoring every array of `saved` (eagerly, or on fault by a walk), from a warm
/// or a cold page cache: one warm-up then `reps` rounds, each after the floor's own
/// measurement (the page-cache floor warm, the disk floor cold, over the first
/// `floor_bytes` of the swap file). Returns marvin's row, carrying its ratio to the
/// floor, and the floor's row.
pub(super) fn restore_rows(
    saved: &SavedHeap,
    scenario: &str,
    (eager, cold): (bool, bool),
    floor_bytes: u64,
    reps: usize,
) -> anyhow::Result<(Sample, Sample)> {
    let mut rounds = RestoreRounds::new(saved, scenario, (eager, cold), floor_bytes);
    for rep in 0..=reps {
        rounds.round(rep > 0)?;
    }
    rounds.rows()
}

/// The rounds of one restore row and its floor's ([`restore_rows`]), kept apart so that
/// rows to be compared can take their rounds in turn.
pub(super) struct RestoreRounds<'a> {
    saved: &'a SavedHeap,
    scenario: &'a str,
    eager: bool,
    cold: bool,
    floor_bytes: u64,
    times: Vec<f64>,
    floor_times: Vec<f64>,
    fresh_times: Vec<f64>,
    file_bytes: u64,
    bytes: u64,
}

impl<'a> RestoreRounds<'a> {
    fn new(
        saved: &'a SavedHeap,
        scenario: &'a str,
        (eager, cold): (bool, bool),
        floor_bytes: u64,
    ) -> RestoreRounds<'a> {
        RestoreRounds {
            saved,
            scenario,
            eager,
            cold,
            floor_bytes,
            times: Vec::new(),
            floor_times: Vec::new(),
            fresh_times: Vec::new(),
            file_bytes: 0,
            bytes: 0,
        }
    }

    /// One round: the floor's measurement, then everything reclaimed and restored
    /// (timed), then checked. A round not `timed` (the warm-up) records nothing.
    fn round(&mut self, timed: bool) -> anyhow::Result<()> {
        let saved = self.saved;
        let cold = self.cold;
        if timed {
            let path = saved.swap.file.lock().path().to_path_buf();
            let limit = self.floor_bytes;
            let (b, ns) = if cold {
                cold_file_read(&path, limit)?
            } else {
                warm_file_read(&path, limit)?
            };
            self.file_bytes = b;
            self.floor_times.push(ns);
            if cold {
                self.fresh_times.push(cold_file_read_fresh(&path, limit)?.1);
            }
        }
        let taken = saved.reclaim_all();
        ensure!(
            taken == saved.bytes(),
            "reclaimed {taken} of {}",
            saved.bytes()
        );
        if cold {
            saved.drop_swap_cache()?;
        }
        let t = Instant::now();
        if self.eager {
            self.bytes = saved.restore_eager()?;
        } else {
            saved.walk_first_words()?;
            self.bytes = saved.object_bytes();
        }
        let ns = t.elapsed().as_nanos() as f64;
        if timed {
            self.times.push(ns);
        }
        saved.walk_first_words()
    }

    /// marvin's row, carrying its ratio to the floor, and the floor's row.
    fn rows(self) -> anyhow::Result<(Sample, Sample)> {
        let saved = self.saved;
        let (bytes, file_bytes, cold) = (self.bytes, self.file_bytes, self.cold);
        ensure!(
            bytes == saved.object_bytes(),
            "restored {bytes} of {}",
            saved.object_bytes()
        );
        let rounds = |ns: &[f64]| ns.iter().map(|t| t / 1e6).collect::<Vec<f64>>();
        let ns = median(&mut self.times.clone());
        let floor_ns = median(&mut self.floor_times.clone());
        let floor_row = Sample::new(
            self.scenario,
            if cold { DISK_FLOOR } else { PAGE_CACHE_FLOOR },
            floor_ns,
        )
        .with("bytes", file_bytes)
        .with("mb_per_s", mb_per_s(file_bytes, floor_ns))
        .with(ROUNDS_MS, rounds(&self.floor_times));
        let mut row = Sample::new(self.scenario, "marvin", ns)
            .with("bytes", bytes)
            .with("file_bytes", saved.stored_bytes())
            .with("mb_per_s", mb_per_s(bytes, ns))
            .with(ROUNDS_MS, rounds(&self.times));
        if cold {
            // Beside the floor, not instead of it: the disk floor reads into one reused
            // buffer, a restore into fresh pages; this says what those pages' faults add.
            let fresh_ns = median(&mut self.fresh_times.clone());
            let per_byte = |ns: f64, b: u64| ns / b as f64;
            row = row.with(
                FRESH_MEMORY_RATIO,
                per_byte(ns, bytes) / per_byte(fresh_ns, file_bytes),
            );
            row = row.with(FRESH_MEMORY_FLOOR_MS, fresh_ns / 1e6);
        }
        Ok((against_floor(row, &floor_row), floor_row))
    }
}

/// Eager restores of `large` bytes of arrays saved with `[saver] compress = "lz4"`:
/// random arrays (which do not compress, so each is stored as it is) beside the same
/// arrays saved without compression, and the workload's arrays (which do). Each row's
/// floor reads as many bytes of its own swap file as its checkpoints take, so a
/// compressed restore reads fewer bytes than it restores (`file_bytes` against
/// `bytes`).
///
/// The two random rows, which are compared with each other, take their rounds in turn
/// (plain first in even rounds, lz4 first in odd ones), both heaps built before either
/// is timed: measured one after the other, a change in the machine's load between the
/// two rows' rounds (other work on a shared machine) made either look slower.
pub(super) fn compressed_rows(large: u64, reps: usize) -> anyhow::Result<Vec<Sample>> {
    let mut samples = Vec::new();
    let lz4 = PolicyConfig {
        saver: marvin_swap::SaverConfig {
            compress: Compression::Lz4,
            ..Default::default()
        },
        ..Default::default()
    };
    let scenario = |cache: &str, arrays: &str, codec: &str| {
        format!(
            "restore {} MiB eager {cache}, {arrays} arrays, compress {codec}",
            large / MIB
        )
    };
    {
        let random = [
            (
                "none",
                SavedHeap::build_with(
                    large,
                    LargeBacking::Anonymous,
                    Fill::Random,
                    PolicyConfig::default(),
                )?,
            ),
            (
                "lz4",
                SavedHeap::build_with(large, LargeBacking::Anonymous, Fill::Random, lz4.clone())?,
            ),
        ];
        for (cache, cold) in [("warm", false), ("cold", true)] {
            let names: Vec<String> = random
                .iter()
                .map(|(codec, _)| scenario(cache, "random", codec))
                .collect();
            let mut rows: Vec<RestoreRounds<'_>> = random
                .iter()
                .zip(&names)
                .map(|((_, saved), name)| {
                    RestoreRounds::new(saved, name, (true, cold), saved.stored_bytes())
                })
                .collect();
            for rep in 0..=reps {
                let order = if rep % 2 == 0 { [0, 1] } else { [1, 0] };
                for k in order {
                    rows[k].round(rep > 0)?;
                }
            }
            for rounds in rows {
                let (row, floor_row) = rounds.rows()?;
                samples.push(row);
                samples.push(floor_row);
            }
        }
    }
    let saved = SavedHeap::build_with(large, LargeBacking::Anonymous, Fill::Workload, lz4)?;
    for (cache, cold) in [("warm", false), ("cold", true)] {
        let name = scenario(cache, "workload", "lz4");
        let (row, floor_row) =
            restore_rows(&saved, &name, (true, cold), saved.stored_bytes(), reps)?;
        samples.push(row);
        samples.push(floor_row);
    }
    Ok(samples)
}
