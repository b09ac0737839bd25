//! How each task of a sweep went ([`states`]): finished (its record says it exited 0
//! and its results hold every run of its shard), failed (with the reason: its own exit
//! and error, or Slurm's state where the task could not say), queued or running, or
//! missing (never started); `marvin sweep status DIR` prints them, and `marvin compare`
//! of a sweep's folder takes only a finished grid ([`finished_dirs`]).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use marvin_system::record::Record;

use super::folder::{node_name, task_dir, Backend, SweepRecord, TaskRecord};
use super::slurm::{self, SlurmTask};

/// Where one task stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Exited 0 with every run of its shard written.
    Finished,
    /// Ended without its results, with why.
    Failed(String),
    /// Waiting in Slurm's queue.
    Queued,
    /// Running on this node.
    Running(String),
    /// Never started, with what is known.
    Missing(String),
}

impl State {
    /// Failed or missing: what `--rerun-missing` runs again.
    pub fn needs_rerun(&self) -> bool {
        matches!(self, State::Failed(_) | State::Missing(_))
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            State::Finished => write!(f, "finished"),
            State::Failed(why) => write!(f, "failed: {why}"),
            State::Queued => write!(f, "queued"),
            State::Running(node) => write!(f, "running on {node}"),
            State::Missing(why) => write!(f, "missing: {why}"),
        }
    }
}

/// One task: its state and its record.
pub struct Task {
    pub index: usize,
    pub state: State,
    pub record: Option<TaskRecord>,
}

/// Every task's state, asking Slurm about the jobs that ran them.
pub fn states(dir: &Path, rec: &SweepRecord) -> anyhow::Result<Vec<Task>> {
    let mut slurm: HashMap<String, Option<HashMap<usize, SlurmTask>>> = HashMap::new();
    let mut out = Vec::new();
    for index in 0..rec.tasks {
        let tdir = task_dir(dir, index);
        let record = TaskRecord::read(&tdir)?;
        // The job that ran it: the latest submission, else the one the task recorded
        // (a script submitted with sbatch by hand).
        let job = rec.job_of(index).map(|j| j.id.clone()).or_else(|| {
            let r = record.as_ref()?.slurm_job.as_deref()?;
            Some(r.split('_').next().unwrap_or(r).to_owned())
        });
        let told = job.as_deref().and_then(|id| {
            slurm
                .entry(id.to_owned())
                .or_insert_with(|| slurm::task_states(id))
                .as_ref()
                .map(|m| (id, m.get(&index).cloned()))
        });
        let held = held_runs(&tdir);
        let state = state_of(rec, index, record.as_ref(), told, held);
        out.push(Task {
            index,
            state,
            record,
        });
    }
    Ok(out)
}

/// The runs a task's results hold (by their number in the grid), from its config.toml.
fn held_runs(tdir: &Path) -> Vec<usize> {
    Record::read(&tdir.join("config.toml"))
        .map(|r| r.runs.iter().map(|r| r.index).collect())
        .unwrap_or_default()
}

/// One task's state from its record, what Slurm says of it (`Some((job, None))`: Slurm
/// answered but does not know the task) and the runs its results hold.
fn state_of(
    rec: &SweepRecord,
    index: usize,
    task: Option<&TaskRecord>,
    slurm: Option<(&str, Option<SlurmTask>)>,
    held: Vec<usize>,
) -> State {
    let said = |s: &SlurmTask| format!("Slurm says {}", s.describe());
    let slurm_task = slurm.as_ref().and_then(|(_, t)| t.as_ref());
    let Some(t) = task else {
        return match slurm_task {
            Some(s) if s.state == "PENDING" => State::Queued,
            Some(s) if s.is_active() => State::Running(s.node.clone().unwrap_or_default()),
            Some(s) => State::Failed(format!("{} before the task started", said(s))),
            None => match slurm {
                Some((job, None)) => State::Missing(format!(
                    "never started, and job {job} holds no task {index} (cancelled while queued?)"
                )),
                _ if rec.job_of(index).is_some() => {
                    State::Missing("never started, and Slurm no longer knows its job".into())
                }
                _ => State::Missing("never started".into()),
            },
        };
    };
    let on = format!("on {}", t.node);
    match t.exit {
        Some(0) => {
            let want = rec.runs_of(index);
            let mut got = held;
            got.sort_unstable();
            if got == want {
                State::Finished
            } else {
                State::Failed(format!(
                    "exited 0 {on} but its results hold {} of its {} runs",
                    got.len(),
                    want.len()
                ))
            }
        }
        Some(code) => {
            let how = if code > 128 {
                format!("stopped by signal {} {on}", code - 128)
            } else {
                format!("exit status {code} {on}")
            };
            // The error, unless it only says what the status does.
            let error = t
                .error
                .as_deref()
                .filter(|e| !e.starts_with("stopped by signal"))
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            let slurm = slurm_task
                .filter(|s| !s.is_active())
                .map(|s| format!(" ({})", said(s)))
                .unwrap_or_default();
            State::Failed(format!("{how}{error}{slurm}"))
        }
        // Started, no exit recorded: still running, or killed before it could say.
        None => match slurm_task {
            Some(s) if s.is_active() => State::Running(t.node.clone()),
            Some(s) => State::Failed(format!("{} {on}; the task recorded no exit", said(s))),
            None if rec.backend == Backend::Local
                && t.node == node_name()
                && (marvin_machine::Owner {
                    pid: t.pid,
                    start_time: t.pid_start,
                })
                .is_alive() =>
            {
                State::Running(t.node.clone())
            }
            None if rec.backend == Backend::Local => {
                State::Failed(format!("started {on} but recorded no exit (killed?)"))
            }
            None => State::Failed(format!(
                "started {on} but recorded no exit (killed?), and Slurm has no record of it"
            )),
        },
    }
}

/// `marvin sweep status DIR`'s lines: one per task, then the counts; a failed or missing
/// task names its runs.
pub fn report(rec: &SweepRecord, tasks: &[Task]) -> String {
    let mut s = String::new();
    for t in tasks {
        let runs: Vec<String> = rec
            .runs_of(t.index)
            .iter()
            .map(|&r| rec.run_name(r))
            .collect();
        let build = t
            .record
            .as_ref()
            .filter(|r| r.build != rec.build)
            .map(|r| {
                format!(
                    " [build {} differs from the sweep's {}]",
                    r.build, rec.build
                )
            })
            .unwrap_or_default();
        s.push_str(&format!("task {}: {}{build}", t.index, t.state));
        if t.state.needs_rerun() {
            s.push_str(&format!(" (runs: {})", runs.join(", ")));
        }
        s.push('\n');
    }
    let count = |f: &dyn Fn(&State) -> bool| tasks.iter().filter(|t| f(&t.state)).count();
    s.push_str(&format!(
        "{} tasks: {} finished, {} failed, {} queued or running, {} missing\n",
        tasks.len(),
        count(&|s| *s == State::Finished),
        count(&|s| matches!(s, State::Failed(_))),
        count(&|s| matches!(s, State::Queued | State::Running(_))),
        count(&|s| matches!(s, State::Missing(_))),
    ));
    s
}

/// The folders of a sweep's finished tasks, for `marvin compare`: all of them, or an
/// error naming every unfinished task and its runs (with `partial`, the finished ones
/// and that text as a warning).
pub fn finished_dirs(dir: &Path, partial: bool) -> anyhow::Result<(Vec<PathBuf>, Option<String>)> {
    let rec = SweepRecord::read(dir)?;
    let tasks = states(dir, &rec)?;
    let unfinished: Vec<String> = tasks
        .iter()
        .filter(|t| t.state != State::Finished)
        .map(|t| {
            let runs: Vec<String> = rec
                .runs_of(t.index)
                .iter()
                .map(|&r| rec.run_name(r))
                .collect();
            format!("task {} ({}; runs {})", t.index, t.state, runs.join(", "))
        })
        .collect();
    let finished: Vec<&Task> = tasks
        .iter()
        .filter(|t| t.state == State::Finished)
        .collect();
    let warning = (!unfinished.is_empty()).then(|| {
        format!(
            "{}: {} of {} tasks unfinished: {}",
            dir.display(),
            unfinished.len(),
            rec.tasks,
            unfinished.join("; ")
        )
    });
    if let (Some(w), false) = (&warning, partial) {
        anyhow::bail!(
            "{w}. Finish them with marvin sweep --rerun-missing {}, or give --partial to \
             merge the finished tasks only",
            dir.display()
        );
    }
    if finished.is_empty() {
        anyhow::bail!("{}: no task of the sweep has finished", dir.display());
    }
    let dirs = finished.iter().map(|t| task_dir(dir, t.index)).collect();
    Ok((dirs, warning))
}

/// Refuses folders of sweep tasks that ran different marvin binaries (by their
/// `task.toml`; folders without one are not checked), naming each task's build.
pub fn one_binary(dirs: &[PathBuf]) -> anyhow::Result<()> {
    let mut builds: Vec<(String, String)> = Vec::new();
    for d in dirs {
        if let Some(r) = TaskRecord::read(d)? {
            builds.push((r.build, format!("{} (on {})", d.display(), r.node)));
        }
    }
    builds.sort();
    if builds.first().map(|b| &b.0) == builds.last().map(|b| &b.0) {
        return Ok(());
    }
    let each: Vec<String> = builds
        .iter()
        .map(|(b, t)| format!("{t}: build {b}"))
        .collect();
    anyhow::bail!(
        "the tasks ran different marvin binaries: {}; their runs do not compare (rerun \
         them with one binary)",
        each.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep() -> SweepRecord {
        SweepRecord {
            mode: "in-process".into(),
            tasks: 2,
            columns: vec!["kill".into(), "marvin".into()],
            reps: 2,
            args: Vec::new(),
            backend: Backend::Slurm,
            exe: String::new(),
            build: "b1".into(),
            time_limit: None,
            jobs: vec![super::super::folder::Job {
                id: "3".into(),
                tasks: vec![0, 1],
            }],
        }
    }

    fn task(exit: Option<i32>) -> TaskRecord {
        TaskRecord {
            index: 0,
            node: "n1".into(),
            build: "b1".into(),
            exit,
            ..TaskRecord::default()
        }
    }

    fn slurm(state: &str) -> SlurmTask {
        SlurmTask {
            state: state.into(),
            reason: None,
            exit_code: Some("0:15".into()),
            node: Some("n1".into()),
        }
    }

    #[test]
    fn a_task_is_finished_only_with_every_run_of_its_shard() {
        let r = sweep();
        assert_eq!(
            state_of(&r, 0, Some(&task(Some(0))), None, vec![2, 0]),
            State::Finished
        );
        let s = state_of(&r, 0, Some(&task(Some(0))), None, vec![0]);
        assert!(
            matches!(&s, State::Failed(w) if w.contains("1 of its 2 runs")),
            "{s}"
        );
    }

    #[test]
    fn failures_say_why() {
        let r = sweep();
        let mut t = task(Some(143));
        t.error = Some("stopped by signal 15".into());
        let s = state_of(
            &r,
            0,
            Some(&t),
            Some(("3", Some(slurm("CANCELLED")))),
            vec![],
        );
        assert_eq!(
            s.to_string(),
            "failed: stopped by signal 15 on n1 (Slurm says CANCELLED (exit code 0:15))"
        );
        // Killed before it could record an exit: Slurm's word.
        let s = state_of(
            &r,
            0,
            Some(&task(None)),
            Some(("3", Some(slurm("TIMEOUT")))),
            vec![],
        );
        assert!(s.to_string().contains("TIMEOUT"), "{s}");
        assert!(s.needs_rerun());
        // Cancelled while queued.
        let s = state_of(&r, 1, None, Some(("3", Some(slurm("CANCELLED")))), vec![]);
        assert!(s.to_string().contains("before the task started"), "{s}");
        // Still running or queued: not to be rerun.
        let s = state_of(
            &r,
            0,
            Some(&task(None)),
            Some(("3", Some(slurm("RUNNING")))),
            vec![],
        );
        assert_eq!(s, State::Running("n1".into()));
        assert_eq!(
            state_of(&r, 1, None, Some(("3", Some(slurm("PENDING")))), vec![]),
            State::Queued
        );
        assert!(!State::Queued.needs_rerun());
        // A local task whose process is gone without an exit recorded.
        let mut local = sweep();
        local.backend = Backend::Local;
        let gone = TaskRecord {
            pid: u32::MAX,
            ..task(None)
        };
        let s = state_of(&local, 0, Some(&gone), None, vec![]);
        assert_eq!(
            s.to_string(),
            "failed: started on n1 but recorded no exit (killed?)"
        );
        // No job, no record: missing.
        let mut never = sweep();
        never.jobs.clear();
        assert_eq!(
            state_of(&never, 1, None, None, vec![]),
            State::Missing("never started".into())
        );
    }
}
