//! The System: many apps under one memory budget, and the pressure experiment that
//! compares ways of handling memory pressure ([`PressurePolicy`]) on the same workload.
//!
//! [`experiment::run`] is the experiment's one entry point (`marvin pressure`): it
//! resolves its flags into a plan ([`plan`]), runs every run of it and writes the results
//! ([`record`], [`summary`], [`series`], [`plot`]). A run of one policy goes through
//! [`run`] with the apps as threads of this process (the engine, [`engine`]) or through
//! [`processes::run`] with every app a process of its own; both are hosts of the one
//! activity manager ([`activity_manager`]). [`budget`] holds the shared
//! budget and the policies; [`activity`] when an app counts as active; [`launch`] the
//! launch phase and its latencies.

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its
// error handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod activity;
pub mod activity_manager;
pub mod budget;
pub mod engine;
pub mod experiment;
pub mod guardian;
pub mod launch;
pub mod launch_plot;
pub mod native_heap;
pub mod paths;
pub mod plan;
pub mod plot;
pub mod processes;
pub mod provenance;
pub mod published;
pub mod record;
pub mod scale;
pub mod series;
pub mod summary;
pub mod tempdirs;
pub mod timeline;
pub mod workloads;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use marvin_interpreter::exec::Loaded;
use marvin_swap::PolicyConfig;

pub use series::{PolicySeries, SeriesPoint};
pub use summary::Summary;

/// How memory pressure is handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PressurePolicy {
    /// Android's low-memory killer.
    Kill,
    /// A model of a Linux swap file inside the runtime: page-granular, synchronous, on
    /// demand (the in-process mode's swap baseline).
    PageSwap,
    /// Real Linux swap for the apps' cgroup (the process mode's swap baseline).
    KernelSwap,
    /// Marvin's ahead-of-time object swap.
    Marvin,
}

impl PressurePolicy {
    pub fn name(self) -> &'static str {
        match self {
            PressurePolicy::Kill => "kill",
            PressurePolicy::PageSwap => "page-swap",
            PressurePolicy::KernelSwap => "kernel-swap",
            PressurePolicy::Marvin => "marvin",
        }
    }

    /// How an app swaps under this policy (not at all when killed).
    pub fn swap_mode(self) -> Option<marvin_app::SwapMode> {
        match self {
            // Kernel swap is the kernel's business: the app runs a plain heap.
            PressurePolicy::Kill | PressurePolicy::KernelSwap => None,
            PressurePolicy::PageSwap => Some(marvin_app::SwapMode::PageSwap),
            PressurePolicy::Marvin => Some(marvin_app::SwapMode::Objects),
        }
    }

    pub fn parse(s: &str) -> Result<PressurePolicy, String> {
        match s.trim() {
            "kill" => Ok(PressurePolicy::Kill),
            "page-swap" | "pageswap" => Ok(PressurePolicy::PageSwap),
            "kernel-swap" => Ok(PressurePolicy::KernelSwap),
            "marvin" => Ok(PressurePolicy::Marvin),
            other => Err(format!(
                "unknown policy '{other}' (expected kill, page-swap, kernel-swap or marvin)"
            )),
        }
    }
}

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

/// Runs every policy in turn; `progress` gets (policy, elapsed, alive, active, kills,
/// accounted bytes) as each run goes.
pub fn run(
    cfg: &SystemConfig,
    policies: &[PressurePolicy],
    loaded: Arc<Loaded>,
    policy: Arc<PolicyConfig>,
    progress: &(dyn Fn(PressurePolicy, Duration, u32, u32, u64, u64) + Sync),
) -> anyhow::Result<Vec<(Summary, PolicySeries)>> {
    if let Some(p) = policies.iter().find(|p| **p == PressurePolicy::KernelSwap) {
        anyhow::bail!(
            "{} is real Linux swap and runs only in the process mode (--mode processes); \
             the in-process model's swap baseline is page-swap",
            p.name()
        );
    }
    native_heap::limit_arenas();
    let mut out = Vec::new();
    for &p in policies {
        let cb = |t: Duration, alive: u32, active: u32, kills: u64, bytes: u64| {
            progress(p, t, alive, active, kills, bytes)
        };
        out.push(engine::run_policy(
            cfg,
            p,
            loaded.clone(),
            policy.clone(),
            &cb,
        )?);
        if let Some(sig) = marvin_machine::signals::stop_requested() {
            anyhow::bail!("stopped by signal {sig}");
        }
    }
    Ok(out)
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
        std::fs::create_dir_all(d)?;
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
                timeline::from_records(&s.apps)
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
/// caption sidecars) and `launch_cdf`, as SVG and PNG; returns the files.
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
