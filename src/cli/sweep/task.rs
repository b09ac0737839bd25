//! One task of a sweep (`marvin sweep task DIR INDEX`, what a job-array task and
//! `--local` run): it records where and with which binary it runs, runs its shard of
//! the experiment into its folder, and records how that ended ([`run_task`]); and the
//! local runner, which runs tasks one after another as child processes
//! ([`run_locally`]).

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context;
use marvin_console::{errln, outln};
use marvin_console::{EXIT_FAILURE, EXIT_USAGE};
use marvin_system::experiment::PressureArgs;

use super::folder::{build_id, now, task_dir, SweepRecord, TaskRecord};

/// Runs task `index` of the sweep in `dir`; returns its exit status (recorded in its
/// `task.toml` too, with the error that ended it).
pub fn run_task(dir: &Path, index: usize) -> anyhow::Result<i32> {
    let rec = SweepRecord::read(dir)?;
    if index >= rec.tasks {
        errln!(
            "error: the sweep in {} has tasks 0 to {}, not {index}",
            dir.display(),
            rec.tasks.saturating_sub(1)
        );
        return Ok(EXIT_USAGE);
    }
    let tdir = task_dir(dir, index);
    std::fs::create_dir_all(&tdir).with_context(|| format!("creating {}", tdir.display()))?;
    let exe = std::env::current_exe().context("finding the running marvin binary")?;
    let mut record = TaskRecord::starting(index, &exe, build_id()?);
    record.write(&tdir)?;
    let (code, error) = if record.build != rec.build {
        (
            EXIT_USAGE,
            Some(format!(
                "this node's marvin ({}, build {}) is not the one that planned the sweep \
                 (build {}): every task must run the same binary",
                exe.display(),
                record.build,
                rec.build
            )),
        )
    } else {
        shard(&rec, index, &tdir)
    };
    if let Some(e) = &error {
        errln!("error: task {index}: {e}");
    }
    record.finished = Some(now());
    record.exit = Some(code);
    record.error = error;
    record.write(&tdir)?;
    Ok(code)
}

/// Runs the task's shard into `tdir`: its status, and the error that ended it.
fn shard(rec: &SweepRecord, index: usize, tdir: &Path) -> (i32, Option<String>) {
    let mut args = rec.args.clone();
    args.extend([
        "--shard".to_owned(),
        format!("{}/{}", index + 1, rec.tasks),
        "--out".to_owned(),
        tdir.display().to_string(),
        "--quiet".to_owned(),
    ]);
    let a = match PressureArgs::parse_args(&args) {
        Ok(a) => a,
        Err(e) => {
            let first = e.to_string();
            let first = first.lines().next().unwrap_or("").to_owned();
            return (
                EXIT_USAGE,
                Some(format!("the sweep's arguments do not parse: {first}")),
            );
        }
    };
    match marvin_system::experiment::run(&a) {
        Ok(0) => (0, None),
        Ok(code) if code > 128 => (code, Some(format!("stopped by signal {}", code - 128))),
        Ok(code) => (
            code,
            Some(format!(
                "marvin pressure exited {code} (its message is in the task's log)"
            )),
        ),
        Err(e) => (EXIT_FAILURE, Some(format!("{e:#}"))),
    }
}

/// Runs `tasks` of the sweep in `dir` one after another, each as `marvin sweep task` in
/// a process of its own with its output in `task-I/task.log`; prints a line per task
/// and returns how many failed.
pub fn run_locally(dir: &Path, tasks: &[usize]) -> anyhow::Result<usize> {
    let exe = std::env::current_exe().context("finding the running marvin binary")?;
    // A signal stops the task running (it gets it too) and then the runner.
    marvin_machine::signals::install().context("installing the stop-signal handlers")?;
    let mut failed = 0;
    for (done, &i) in tasks.iter().enumerate() {
        let tdir = task_dir(dir, i);
        std::fs::create_dir_all(&tdir).with_context(|| format!("creating {}", tdir.display()))?;
        let log_path = tdir.join("task.log");
        let log = std::fs::File::create(&log_path)
            .with_context(|| format!("creating {}", log_path.display()))?;
        let status = Command::new(&exe)
            .args(["sweep", "task"])
            .arg(dir)
            .arg(i.to_string())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .status()
            .with_context(|| format!("starting task {i}"))?;
        let how = match status.code() {
            Some(0) => "finished".to_owned(),
            Some(c) => {
                failed += 1;
                format!("failed (exit status {c}; see {})", log_path.display())
            }
            None => {
                failed += 1;
                format!("failed ({status}; see {})", log_path.display())
            }
        };
        outln!("task {i} ({}/{}): {how}", done + 1, tasks.len())?;
        // SIGINT of the terminal reaches the task too: stop after it.
        if marvin_machine::signals::stop_requested().is_some() {
            break;
        }
    }
    Ok(failed)
}
