//! `marvin sweep`: an experiment's grid of runs (`marvin pressure`'s flags) split into
//! tasks, each a shard, in one folder ([`folder`]): as a Slurm job array (`--slurm`,
//! submitted with `--submit`) or one task after another here (`--local`);
//! `marvin sweep status DIR` says how each task went ([`status`]), and
//! `--rerun-missing DIR` runs the failed and missing ones again.

pub mod folder;
pub mod slurm;
pub mod status;
pub mod task;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use marvin_console::{errln, out, outln};
use marvin_console::{EXIT_FAILURE, EXIT_USAGE};
use marvin_runtime::duration::parse as parse_duration;
use marvin_system::experiment::{plan_sweep, PressureArgs, SweepPlan};

use folder::{build_id, task_dir, Backend, Job, SweepRecord, SCRIPT_FILE};
use status::State;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub cmd: Option<SweepCmd>,
    /// The experiment: `marvin pressure`'s flags (--out is the sweep's folder; --mode
    /// must be processes or in-process).
    #[command(flatten)]
    pub experiment: PressureArgs,
    /// Write a Slurm job-array script (DIR/sweep.sh): one exclusive node per task, each
    /// task running its shard into DIR/task-I/.
    #[arg(long, conflicts_with = "local")]
    pub slurm: bool,
    /// With --slurm (or --rerun-missing of a Slurm sweep): submit with sbatch and print
    /// the job id.
    #[arg(long)]
    pub submit: bool,
    /// Run the tasks here, one after another.
    #[arg(long)]
    pub local: bool,
    /// Split the grid into this many tasks (default: one per run).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub tasks: Option<u32>,
    /// Each Slurm task's time limit (default: twice its runs' expected time, at least
    /// 5 minutes).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub time_limit: Option<Duration>,
    /// An extra `#SBATCH` option for the script, e.g. --sbatch=--partition=long
    /// (repeatable).
    #[arg(long, value_name = "OPTION", allow_hyphen_values = true)]
    pub sbatch: Vec<String>,
    /// Run again the failed and missing tasks of the sweep in DIR: resubmitted to Slurm
    /// for a Slurm sweep (run here with --local), run here for a local one.
    #[arg(long, value_name = "DIR")]
    pub rerun_missing: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum SweepCmd {
    /// Which tasks of the sweep in DIR finished, failed (and why), wait or are missing;
    /// exits 0 when every task finished, 1 otherwise.
    Status { dir: PathBuf },
    /// Runs task INDEX of the sweep in DIR (what each job-array task runs).
    #[command(hide = true)]
    Task { dir: PathBuf, index: usize },
}

/// The flags `--rerun-missing` takes beside it (the experiment is the sweep's).
const RERUN_FLAGS: &[&str] = &["rerun_missing", "local", "submit", "quiet"];

/// Runs `marvin sweep`; returns the exit status.
pub fn sweep(a: &SweepArgs) -> anyhow::Result<i32> {
    match &a.cmd {
        Some(SweepCmd::Status { dir }) => return show_status(dir),
        Some(SweepCmd::Task { dir, index }) => return task::run_task(dir, *index),
        None => {}
    }
    if let Some(dir) = &a.rerun_missing {
        let other: Vec<String> = a
            .experiment
            .given
            .iter()
            // Flags only (clap also names the flattened group of pressure's flags).
            .filter(|g| g.starts_with(|c: char| c.is_ascii_lowercase()))
            .filter(|g| !RERUN_FLAGS.contains(&g.as_str()))
            .map(|g| format!("--{}", g.replace('_', "-")))
            .collect();
        if !other.is_empty() {
            return usage(format!(
                "--rerun-missing takes the experiment from {}; give only --local or --submit \
                 beside it (found {})",
                dir.join(folder::SWEEP_FILE).display(),
                other.join(", ")
            ));
        }
        return rerun(dir, a.local);
    }
    if a.slurm == a.local {
        return usage(
            "marvin sweep needs --slurm (write a job-array script; --submit submits it) or \
             --local (run the tasks here, one after another)"
                .into(),
        );
    }
    if a.submit && !a.slurm {
        return usage("--submit submits the --slurm script; give --slurm".into());
    }
    let Some(out) = &a.experiment.out else {
        return usage("marvin sweep needs --out DIR: the sweep's folder".into());
    };
    if std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_some()) {
        return usage(format!(
            "--out {}: the folder holds files already; give a new one (or --rerun-missing {} \
             to finish a sweep made there)",
            out.display(),
            out.display()
        ));
    }
    let plan = match plan_sweep(&a.experiment) {
        Ok(p) => p,
        Err(e) => return usage(e),
    };
    let tasks = a.tasks.map_or(plan.runs(), |t| t as usize);
    if tasks > plan.runs() {
        return usage(format!(
            "--tasks {tasks}: the grid has {} runs ({} columns x {} repetitions), so at most \
             {} tasks",
            plan.runs(),
            plan.columns.len(),
            plan.reps,
            plan.runs()
        ));
    }
    create(a, out, &plan, tasks)
}

/// Makes the sweep's folder and record, then writes (and submits) the script or runs
/// the tasks here.
fn create(a: &SweepArgs, out: &Path, plan: &SweepPlan, tasks: usize) -> anyhow::Result<i32> {
    let dir = std::path::absolute(out).with_context(|| format!("--out {}", out.display()))?;
    let exe = std::env::current_exe().context("finding the running marvin binary")?;
    let per_task = plan.runs().div_ceil(tasks) as u32;
    let limit = a
        .time_limit
        .unwrap_or_else(|| (plan.run_estimate * per_task * 2).max(Duration::from_secs(300)));
    let mut rec = SweepRecord {
        mode: plan.mode.to_owned(),
        tasks,
        columns: plan.columns.clone(),
        reps: plan.reps,
        args: plan.args.clone(),
        backend: if a.slurm {
            Backend::Slurm
        } else {
            Backend::Local
        },
        exe: exe.display().to_string(),
        build: build_id()?,
        time_limit: a.slurm.then(|| slurm::time_limit(limit)),
        jobs: Vec::new(),
    };
    // Every task's folder, before any task starts: Slurm writes its log there.
    for i in 0..tasks {
        let t = task_dir(&dir, i);
        std::fs::create_dir_all(&t).with_context(|| format!("creating {}", t.display()))?;
    }
    rec.write(&dir)?;
    errln!(
        "sweep: {} runs ({} columns x {} repetitions, {} mode) in {tasks} tasks in {}",
        plan.runs(),
        plan.columns.len(),
        plan.reps,
        plan.mode,
        dir.display()
    );
    if a.local {
        let all: Vec<usize> = (0..tasks).collect();
        return finish_locally(&dir, &all);
    }
    let script = dir.join(SCRIPT_FILE);
    std::fs::write(&script, slurm::script(&rec, &dir, &exe, &a.sbatch))
        .with_context(|| format!("writing {}", script.display()))?;
    make_executable(&script)?;
    if !a.submit {
        outln!(
            "wrote {}: submit it with sbatch {} (or marvin sweep --slurm --submit); then \
             marvin sweep status {}",
            script.display(),
            script.display(),
            dir.display()
        )?;
        return Ok(0);
    }
    submit(&dir, &mut rec, None)
}

/// Submits the sweep's script (for `tasks` only, or all) and records the job.
fn submit(dir: &Path, rec: &mut SweepRecord, tasks: Option<&[usize]>) -> anyhow::Result<i32> {
    let id = match slurm::submit(&dir.join(SCRIPT_FILE), tasks) {
        Ok(id) => id,
        Err(e) => {
            errln!("error: {e}");
            return Ok(EXIT_FAILURE);
        }
    };
    let tasks: Vec<usize> = tasks.map_or_else(|| (0..rec.tasks).collect(), <[usize]>::to_vec);
    outln!(
        "submitted job {id} ({} task{}): marvin sweep status {}",
        tasks.len(),
        if tasks.len() == 1 { "" } else { "s" },
        dir.display()
    )?;
    rec.jobs.push(Job { id, tasks });
    rec.write(dir)?;
    Ok(0)
}

/// Runs `tasks` here and prints the sweep's status; 0 when all finished.
fn finish_locally(dir: &Path, tasks: &[usize]) -> anyhow::Result<i32> {
    let failed = task::run_locally(dir, tasks)?;
    let code = show_status(dir)?;
    if failed > 0 {
        errln!(
            "{failed} task(s) failed; marvin sweep --rerun-missing {} runs them again",
            dir.display()
        );
    }
    Ok(code)
}

/// `marvin sweep --rerun-missing DIR`.
fn rerun(dir: &Path, local: bool) -> anyhow::Result<i32> {
    let mut rec = match SweepRecord::read(dir) {
        Ok(r) => r,
        Err(e) => return usage(format!("--rerun-missing: {e:#}")),
    };
    let mine = build_id()?;
    if mine != rec.build {
        return usage(format!(
            "this marvin (build {mine}) is not the one that made the sweep in {} (build {}): \
             its tasks must all run one binary (the sweep's is {})",
            dir.display(),
            rec.build,
            rec.exe
        ));
    }
    let states = status::states(dir, &rec)?;
    let todo: Vec<usize> = states
        .iter()
        .filter(|t| t.state.needs_rerun())
        .map(|t| t.index)
        .collect();
    let waiting = states
        .iter()
        .filter(|t| matches!(t.state, State::Queued | State::Running(_)))
        .count();
    if todo.is_empty() {
        outln!(
            "nothing to rerun in {}: no task failed or is missing ({waiting} queued or running)",
            dir.display()
        )?;
        return Ok(0);
    }
    // A task's old results go: the rerun writes its shard anew.
    for &i in &todo {
        let t = task_dir(dir, i);
        if t.exists() {
            std::fs::remove_dir_all(&t).with_context(|| format!("removing {}", t.display()))?;
        }
        std::fs::create_dir_all(&t).with_context(|| format!("creating {}", t.display()))?;
    }
    let list: Vec<String> = todo.iter().map(usize::to_string).collect();
    errln!("rerunning task(s) {} of {}", list.join(", "), dir.display());
    if rec.backend == Backend::Slurm && !local {
        return submit(dir, &mut rec, Some(&todo));
    }
    finish_locally(dir, &todo)
}

/// `marvin sweep status DIR`.
fn show_status(dir: &Path) -> anyhow::Result<i32> {
    let rec = match SweepRecord::read(dir) {
        Ok(r) => r,
        Err(e) => return usage(format!("{e:#}")),
    };
    let tasks = status::states(dir, &rec)?;
    out!("{}", status::report(&rec, &tasks))?;
    let done = tasks.iter().all(|t| t.state == State::Finished);
    Ok(if done { 0 } else { EXIT_FAILURE })
}

fn usage(message: String) -> anyhow::Result<i32> {
    errln!("error: {message}");
    Ok(EXIT_USAGE)
}

fn make_executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", path.display()))
}
