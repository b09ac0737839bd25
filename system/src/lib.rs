//! The System: many apps under one memory budget, and the pressure experiment that
//! compares ways of handling memory pressure ([`PressurePolicy`]) on the same workload.
//!
//! [`experiment::run`] is the experiment's one entry point (`marvin pressure`): it
//! resolves its flags into a plan, runs every run of it and writes the results
//! ([`record`], [`summary`], [`series`], [`plot`]). [`run`] runs every policy of an
//! experiment, hosted as a [`Hosting`] says: with the apps as threads of this process
//! (the in-process model, `engine`) or with every app a process of its own
//! ([`processes`]). Both hosts serve the one run loop (`run_loop`: turns, launches, the
//! foreground, activity, sampling) and its activity manager (`activity_manager`); a
//! host says only how an app is started, told, observed and stopped. The policies are
//! rows of one registry ([`REGISTRY`], in `policies`): a new policy is its own file plus
//! one row there. [`budget`] holds the in-process model's shared budget.
//!
//! # Front door
//! Other crates (the command line, the benches, the tests) reach the System through
//! what this file lists, and nothing else; every other module is private.
//!
//! Public modules: `budget`, `experiment`, `guardian`, `paths`, `plot`, `processes`,
//! `processes::app_process`, `processes::launcher`, `processes::protocol`,
//! `processes::reclaimer`, `processes::run`, `provenance`, `record`, `series`, `summary`,
//! `tempdirs` (each named in the list below, with what it is for).
//!
//! - The experiment, `marvin pressure` and its settings: [`experiment`] (itself a front
//!   door: private parts and a curated list).
//! - Running every policy of an experiment in either host: [`run`], [`Hosting`],
//!   [`AllProgress`], [`SystemConfig`], [`PressurePolicy`] and the registry's
//!   [`REGISTRY`], [`PolicySpec`], [`Handling`], [`PolicyHost`].
//! - Results: [`Summary`], [`PolicySeries`], [`SeriesPoint`], [`write_data`],
//!   [`write_figures`], [`write_outputs`], [`write_launch_outputs`], [`file_names`], and
//!   the modules `marvin compare` reads and writes them with: [`summary`], [`series`],
//!   [`record`].
//! - The process mode's app side and its protocol, for `marvin app` and its tests:
//!   [`processes`] (`app_process`, `launcher`, `protocol`, and the test hooks
//!   `run::NO_LMK_ENV`, `reclaimer::PASS_DELAY_ENV`).
//! - What the benches and the command line share with the experiment (the figures
//!   themselves are the `marvin-figures` crate's): [`plot`], the in-process budget [`budget`], [`provenance`], output paths [`paths`], temporary directories
//!   [`tempdirs`] and [`sweep_stale_temp_dirs`], and the run's [`guardian`].

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its
// error handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod activity;
mod activity_manager;
pub mod budget;
mod engine;
pub mod experiment;
pub mod guardian;
mod hosting;
mod launch;
mod launch_plot;
mod native_heap;
pub mod paths;
mod plan;
pub mod plot;
mod policies;
pub mod processes;
pub mod provenance;
mod published;
mod reach;
mod reach_plot;
pub mod record;
mod run_loop;
mod scale;
pub mod series;
pub mod summary;
pub mod tempdirs;
mod timeline;
mod workloads;

use std::path::PathBuf;
use std::time::Duration;

pub use hosting::{run, AllProgress, Hosting};
pub use policies::Host as PolicyHost;
pub use policies::{Handling, PolicySpec, PressurePolicy, REGISTRY};
pub use series::{PolicySeries, SeriesPoint};
pub use summary::Summary;

/// The settings every policy of one experiment shares.
#[derive(Clone, Debug)]
pub struct SystemConfig {
    pub apps: usize,
    pub budget: usize,
    pub launch_every: Duration,
    pub duration: Duration,
    /// Switch the foreground round robin among launched apps this often once all are
    /// launched (restarting killed apps); `None` keeps the last launched in front.
    pub switch_every: Option<Duration>,
    /// The launch phase once every app is launched (its `launches` 0: none; off when
    /// `switch_every` is set).
    pub launch: launch::LaunchPlan,
    pub time_scale: f64,
    pub sample_every: Duration,
    /// The heap's largest allocation gap between collections (ART's max free).
    pub gc_max_free: usize,
    /// Where swap files and reclaim tables go (a temporary directory by default).
    pub swap_dir: Option<PathBuf>,
    /// Records every app of every policy into this trace (one process track per app).
    pub tracer: Option<marvin_runtime::trace::Tracer>,
    /// The repetition's seed (`--seed` plus the repetition's number), for anything in
    /// the run that draws random numbers.
    pub seed: u64,
}

/// A policy run's own directory (swap files, reclaim tables, the kernel-swap swap
/// file), locked for this run and removed when dropped.
pub(crate) struct RunDir {
    dir: tempfile::TempDir,
    _lock: std::sync::Arc<marvin_swap::SwapDirLock>,
}

impl RunDir {
    pub(crate) fn path(&self) -> &std::path::Path {
        self.dir.path()
    }
}

/// A policy run's own directory, named `PREFIX` + the policy + this process
/// ([`tempdirs::create`]): under `swap_dir`, or in the temporary root. It is locked for
/// this run at once, so a sweep by another run never takes it; a run that dies leaves a
/// name by which the next run's sweep ([`tempdirs::sweep`]) knows it for a dead run's.
pub(crate) fn policy_dir(
    swap_dir: Option<&std::path::Path>,
    pressure: PressurePolicy,
    prefix: &str,
) -> anyhow::Result<RunDir> {
    if let Some(d) = swap_dir {
        // A folder made here is the run's alone.
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(d)?;
    }
    let dir = tempdirs::create(prefix, Some(pressure.name()), swap_dir)?;
    let lock = marvin_swap::SwapDirLock::acquire(dir.path())?;
    Ok(RunDir { dir, _lock: lock })
}

/// Removes what runs that ended without cleaning up (killed, crashed) left in the
/// temporary root and in `swap_dir` ([`tempdirs::sweep`]; each removal said once on
/// stderr).
pub fn sweep_stale_temp_dirs(swap_dir: Option<&std::path::Path>) {
    tempdirs::sweep(&std::env::temp_dir(), None);
    if let Some(d) = swap_dir {
        tempdirs::sweep(d, None);
    }
}

/// The launches of every run, each named by its column (and repetition, when there
/// are several).
fn launches_per_run(summaries: &[Summary]) -> Vec<(String, Vec<launch::LaunchRecord>)> {
    let repeated = summaries.iter().any(|s| s.rep > 0);
    summaries
        .iter()
        .map(|s| {
            let label = if s.label.is_empty() {
                &s.policy
            } else {
                &s.label
            };
            let name = if repeated {
                format!("{label} #{}", s.rep)
            } else {
                label.clone()
            };
            (name, s.launch_records.clone())
        })
        .collect()
}

/// Writes every policy's launches (`launches.csv`) and their latency's distribution
/// (`launch_cdf.svg/.png`) into `dir`.
pub fn write_launch_outputs(dir: &std::path::Path, summaries: &[Summary]) -> anyhow::Result<()> {
    let per_policy = launches_per_run(summaries);
    launch::write_csv(&dir.join("launches.csv"), &per_policy)?;
    launch_plot::write_cdf(dir, &per_policy)?;
    Ok(())
}

/// Writes the data files of finished runs into `dir` (created if missing):
/// `summary.json`, `series.csv`, `apps.csv` and `launches.csv`. A run writes them after
/// each of its runs, so a later failure loses nothing finished; returns the files.
pub fn write_data(
    dir: &std::path::Path,
    summaries: &[Summary],
    series: &[PolicySeries],
) -> anyhow::Result<Vec<PathBuf>> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let file = |name: &str| dir.join(name);
    let summary_json = file("summary.json");
    std::fs::write(&summary_json, serde_json::to_string_pretty(summaries)?)
        .with_context(|| format!("writing {}", summary_json.display()))?;
    series::write_csv(&file("series.csv"), series)
        .with_context(|| format!("writing {}", file("series.csv").display()))?;
    let events: Vec<Vec<timeline::AppEvent>> = summaries
        .iter()
        .map(|s| {
            if s.app_events.is_empty() {
                summary::events_of(&s.apps)
            } else {
                s.app_events.clone()
            }
        })
        .collect();
    let app_runs: Vec<(&str, u32, &[timeline::AppEvent])> = summaries
        .iter()
        .zip(&events)
        .map(|(s, e)| {
            let label = if s.label.is_empty() {
                &s.policy
            } else {
                &s.label
            };
            (label.as_str(), s.rep, e.as_slice())
        })
        .collect();
    timeline::write_csv(&file("apps.csv"), &app_runs)
        .with_context(|| format!("writing {}", file("apps.csv").display()))?;
    launch::write_csv(&file("launches.csv"), &launches_per_run(summaries))
        .with_context(|| format!("writing {}", file("launches.csv").display()))?;
    Ok(["summary.json", "series.csv", "apps.csv", "launches.csv"]
        .iter()
        .map(|n| file(n))
        .collect())
}

/// Draws every figure of a set of runs into `dir`: `active_apps`, `resident` (with their
/// caption sidecars), `launch_cdf` and, in the process mode, `reach`, as SVG and PNG;
/// returns the files.
pub fn write_figures(
    dir: &std::path::Path,
    summaries: &[Summary],
    series: &[PolicySeries],
    budget: u64,
    counted: plot::Counted,
    caption: &str,
    published: Option<&published::Published>,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut files =
        plot::write_plots_published(dir, series, budget, counted, caption, published)?.files;
    files.extend(launch_plot::write_cdf(dir, &launches_per_run(summaries))?);
    files.extend(reach_plot::write(dir, summaries)?);
    Ok(files)
}

/// The names of `files`, joined for a `wrote DIR: ...` line.
pub fn file_names(files: &[PathBuf]) -> String {
    files
        .iter()
        .filter_map(|f| f.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes the time series (`series.csv`) and the plots into `dir`, the plots with a
/// one-line caption of the settings.
pub fn write_outputs(
    dir: &std::path::Path,
    series: &[PolicySeries],
    budget: u64,
    counted: plot::Counted,
    caption: &str,
) -> anyhow::Result<()> {
    series::write_csv(&dir.join("series.csv"), series)?;
    plot::write_plots_counted(dir, series, budget, counted, caption)?;
    Ok(())
}
