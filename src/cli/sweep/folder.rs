//! A sweep's folder: `sweep.toml` (the experiment every task runs, how many tasks
//! share its grid, the binary that planned it and the Slurm jobs submitted for it) and
//! one folder per task, `task-I/`, holding that task's `marvin pressure --out` results
//! and its record `task.toml` (the node it ran on, the binary's build id, the machine,
//! when it started and how it ended).

use std::path::{Path, PathBuf};

use anyhow::Context;
use marvin_machine::Owner;
use marvin_system::provenance::{self, Host};
use serde::{Deserialize, Serialize};

/// The file in a sweep's folder that makes it one.
pub const SWEEP_FILE: &str = "sweep.toml";
/// The file in a task's folder that records how the task ran.
pub const TASK_FILE: &str = "task.toml";
/// The job-array script `--slurm` writes.
pub const SCRIPT_FILE: &str = "sweep.sh";

/// How a sweep's tasks are run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// A Slurm job array (`sweep.sh`).
    Slurm,
    /// One after another on the machine that made the sweep.
    Local,
}

/// One `sbatch` of the sweep's script: the job and the array indices (tasks) it ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub id: String,
    pub tasks: Vec<usize>,
}

/// `sweep.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepRecord {
    /// `processes` or `in-process`.
    pub mode: String,
    /// The tasks; task I runs shard I+1 of `tasks`.
    pub tasks: usize,
    /// The grid's columns in order, and the repetitions of each.
    pub columns: Vec<String>,
    pub reps: u32,
    /// The `marvin pressure` arguments of every task (without `--shard` and `--out`).
    pub args: Vec<String>,
    pub backend: Backend,
    /// The binary that planned the sweep: its path and build id ([`build_id`]).
    pub exe: String,
    pub build: String,
    /// The Slurm time limit of each task (`D-HH:MM:SS`), with `--slurm`.
    pub time_limit: Option<String>,
    /// Every submission, oldest first (a task's latest is the one that counts).
    #[serde(default)]
    pub jobs: Vec<Job>,
}

impl SweepRecord {
    pub fn read(dir: &Path) -> anyhow::Result<SweepRecord> {
        let path = dir.join(SWEEP_FILE);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "cannot read {} (not a folder made by marvin sweep?)",
                path.display()
            )
        })?;
        toml::from_str(&text).with_context(|| format!("{}: not a sweep's record", path.display()))
    }

    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        write_atomic(&dir.join(SWEEP_FILE), &toml::to_string(self)?)
    }

    /// The grid's runs.
    pub fn runs(&self) -> usize {
        self.columns.len() * self.reps as usize
    }

    /// The runs task `index` holds (shard `index+1` of `tasks`: every `tasks`-th run).
    pub fn runs_of(&self, index: usize) -> Vec<usize> {
        (index..self.runs()).step_by(self.tasks.max(1)).collect()
    }

    /// Run `index` as a person reads it: `LABEL #REP`.
    pub fn run_name(&self, index: usize) -> String {
        let n = self.columns.len().max(1);
        let label = self.columns.get(index % n).map_or("?", String::as_str);
        format!("{label} #{}", index / n)
    }

    /// The latest job that ran task `index`.
    pub fn job_of(&self, index: usize) -> Option<&Job> {
        self.jobs.iter().rev().find(|j| j.tasks.contains(&index))
    }
}

/// `task.toml`: how one task ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub index: usize,
    /// The node it ran on (`SLURMD_NODENAME`, else the host name).
    pub node: String,
    /// The binary's path and build id.
    pub exe: String,
    pub build: String,
    /// The machine: kernel, cores, memory, swap; and the processor's model.
    pub host: Host,
    pub cpu: String,
    /// `JOB_TASK` when Slurm ran it.
    pub slurm_job: Option<String>,
    /// The task's process and its start time (`/proc/PID/stat` field 22): a live local
    /// task is told from one that died, and from a later process of the same pid.
    pub pid: u32,
    pub pid_start: u64,
    /// Seconds since the epoch.
    pub started: u64,
    pub finished: Option<u64>,
    /// Its exit status, once it ended by itself (or by a signal it caught).
    pub exit: Option<i32>,
    /// Why it failed, in its own words.
    pub error: Option<String>,
}

impl TaskRecord {
    /// The record of task `index` starting now in this process.
    pub fn starting(index: usize, exe: &Path, build: String) -> TaskRecord {
        let slurm_job = match (
            std::env::var("SLURM_ARRAY_JOB_ID"),
            std::env::var("SLURM_ARRAY_TASK_ID"),
        ) {
            (Ok(j), Ok(t)) => Some(format!("{j}_{t}")),
            _ => std::env::var("SLURM_JOB_ID").ok(),
        };
        TaskRecord {
            index,
            node: node_name(),
            exe: exe.display().to_string(),
            build,
            host: Host::current(),
            cpu: cpu_model(),
            slurm_job,
            pid: std::process::id(),
            pid_start: Owner::current().map_or(0, |o| o.start_time),
            started: now(),
            ..TaskRecord::default()
        }
    }

    /// The record in `dir`, or `None` where there is none; an unreadable one is an error.
    pub fn read(dir: &Path) -> anyhow::Result<Option<TaskRecord>> {
        let path = dir.join(TASK_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text)
                .map(Some)
                .with_context(|| format!("{}: not a task's record", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        write_atomic(&dir.join(TASK_FILE), &toml::to_string(self)?)
    }
}

/// Task `index`'s folder.
pub fn task_dir(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("task-{index}"))
}

/// The build id of the running binary: the FNV-1a hash of its own bytes (so two builds
/// of one commit with different code or flags differ, and copies of one build agree).
pub fn build_id() -> anyhow::Result<String> {
    let bytes = std::fs::read("/proc/self/exe")
        .or_else(|_| std::fs::read(std::env::current_exe()?))
        .context("reading the running marvin binary for its build id")?;
    Ok(provenance::content_hash(&bytes))
}

/// The node this process runs on: Slurm's name for it, else the host name.
pub fn node_name() -> String {
    std::env::var("SLURMD_NODENAME")
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The processor's model name (`/proc/cpuinfo`), `unknown` where unreadable.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes `text` to `path` whole or not at all (a reader never sees half a record).
fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(tasks: usize) -> SweepRecord {
        SweepRecord {
            mode: "in-process".into(),
            tasks,
            columns: vec!["kill".into(), "marvin".into()],
            reps: 3,
            args: Vec::new(),
            backend: Backend::Local,
            exe: String::new(),
            build: String::new(),
            time_limit: None,
            jobs: vec![
                Job {
                    id: "7".into(),
                    tasks: vec![0, 1, 2, 3],
                },
                Job {
                    id: "9".into(),
                    tasks: vec![2],
                },
            ],
        }
    }

    #[test]
    fn tasks_hold_the_runs_of_their_shard() {
        let r = record(4);
        assert_eq!(r.runs(), 6);
        assert_eq!(r.runs_of(0), [0, 4]);
        assert_eq!(r.runs_of(3), [3]);
        // Together, once each: the shards of marvin pressure --shard I/N.
        let mut all: Vec<usize> = (0..4).flat_map(|i| r.runs_of(i)).collect();
        all.sort_unstable();
        assert_eq!(all, (0..6).collect::<Vec<_>>());
        assert_eq!(r.run_name(3), "marvin #1");
        assert_eq!(r.job_of(2).unwrap().id, "9");
        assert_eq!(r.job_of(1).unwrap().id, "7");
    }

    #[test]
    fn records_read_back_and_bad_ones_are_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let r = record(2);
        r.write(tmp.path()).unwrap();
        assert_eq!(SweepRecord::read(tmp.path()).unwrap(), r);
        let t = TaskRecord::starting(1, Path::new("/bin/marvin"), "abc".into());
        assert!(!t.node.is_empty());
        t.write(tmp.path()).unwrap();
        assert_eq!(TaskRecord::read(tmp.path()).unwrap(), Some(t));
        std::fs::write(tmp.path().join(TASK_FILE), "index = 'x'").unwrap();
        assert!(TaskRecord::read(tmp.path()).is_err());
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(TaskRecord::read(empty.path()).unwrap(), None);
        let e = SweepRecord::read(empty.path()).unwrap_err();
        assert!(format!("{e:#}").contains("not a folder made by marvin sweep"));
    }
}
