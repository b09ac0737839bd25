//! Slurm for `marvin sweep`: the job-array script ([`script`]), its submission with
//! `sbatch` ([`submit`]), and what Slurm knows of each array task ([`task_states`]):
//! from `sacct` where the cluster keeps accounting, else from `scontrol show job`
//! (which remembers a finished job for the cluster's `MinJobAge`).

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::folder::SweepRecord;

/// The job-array script: task `$SLURM_ARRAY_TASK_ID` runs its shard with `exe`, on a
/// node of its own, its log in its own folder.
pub fn script(rec: &SweepRecord, dir: &Path, exe: &Path, extra: &[String]) -> String {
    let q = |p: &Path| marvin_system::record::shell_quote(&p.display().to_string());
    let last = rec.tasks.saturating_sub(1);
    let mut s = String::new();
    s.push_str("#!/bin/sh\n");
    s.push_str(&format!(
        "# marvin sweep: {} runs ({} columns x {} repetitions) in {} tasks; task I runs\n\
         # shard I+1/{} of the experiment in sweep.toml into task-I/. Submit with sbatch;\n\
         # marvin sweep status shows how they went.\n",
        rec.runs(),
        rec.columns.len(),
        rec.reps,
        rec.tasks,
        rec.tasks
    ));
    s.push_str("#SBATCH --job-name=marvin-sweep\n");
    s.push_str(&format!("#SBATCH --array=0-{last}\n"));
    s.push_str("#SBATCH --nodes=1 --ntasks=1 --exclusive\n");
    if let Some(t) = &rec.time_limit {
        s.push_str(&format!("#SBATCH --time={t}\n"));
    }
    s.push_str(&format!("#SBATCH --chdir={}\n", dir.display()));
    s.push_str(&format!(
        "#SBATCH --output={}/slurm-%A_%a.out\n",
        dir.join("task-%a").display()
    ));
    for e in extra {
        s.push_str(&format!("#SBATCH {e}\n"));
    }
    // The process mode needs root: a task not run as root asks sudo (without a password).
    let sudo = if rec.mode == "processes" && !is_root() {
        "sudo -n "
    } else {
        ""
    };
    s.push_str(&format!(
        "exec {sudo}{} sweep task {} \"$SLURM_ARRAY_TASK_ID\"\n",
        q(exe),
        q(dir)
    ));
    s
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// A Slurm time limit (`D-HH:MM:SS`) of at least `d`, in whole minutes.
pub fn time_limit(d: Duration) -> String {
    let minutes = d.as_secs().div_ceil(60).max(1);
    let (days, rest) = (minutes / (24 * 60), minutes % (24 * 60));
    format!("{days}-{:02}:{:02}:00", rest / 60, rest % 60)
}

/// Submits `script` for the array indices `tasks` (all of the script's when `None`);
/// returns the job id.
pub fn submit(script: &Path, tasks: Option<&[usize]>) -> Result<String, String> {
    let mut c = Command::new("sbatch");
    c.arg("--parsable");
    if let Some(t) = tasks {
        let list: Vec<String> = t.iter().map(usize::to_string).collect();
        c.arg(format!("--array={}", list.join(",")));
    }
    c.arg(script);
    let o = c.output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            "sbatch is not installed here (not a Slurm submit host?): submit the script \
             from one, or run the sweep with --local"
                .to_owned()
        } else {
            format!("cannot run sbatch: {e}")
        }
    })?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    if !o.status.success() {
        return Err(format!(
            "sbatch failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    // --parsable: `JOBID` or `JOBID;CLUSTER`.
    let id = stdout.trim().split(';').next().unwrap_or("").to_owned();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("sbatch printed no job id: {}", stdout.trim()));
    }
    Ok(id)
}

/// What Slurm says of one array task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmTask {
    /// `PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`, ...
    pub state: String,
    /// Slurm's reason (`NonZeroExitCode`, `TimeLimit`, ...), where it gives one.
    pub reason: Option<String>,
    /// `EXIT:SIGNAL`.
    pub exit_code: Option<String>,
    pub node: Option<String>,
}

impl SlurmTask {
    /// Still queued or running: not over.
    pub fn is_active(&self) -> bool {
        matches!(
            self.state.as_str(),
            "PENDING"
                | "RUNNING"
                | "CONFIGURING"
                | "COMPLETING"
                | "REQUEUED"
                | "RESIZING"
                | "SUSPENDED"
        )
    }

    /// As a status line says it: `CANCELLED (reason ..., exit code 0:15)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = self.reason.as_deref().filter(|r| *r != "None") {
            parts.push(format!("reason {r}"));
        }
        if let Some(c) = self.exit_code.as_deref().filter(|c| *c != "0:0") {
            parts.push(format!("exit code {c}"));
        }
        if parts.is_empty() {
            self.state.clone()
        } else {
            format!("{} ({})", self.state, parts.join(", "))
        }
    }
}

/// What Slurm knows of job `job`'s array tasks, by index: from `sacct`, else from
/// `scontrol show job`; `None` where neither answers (no Slurm here, or the job is
/// forgotten).
pub fn task_states(job: &str) -> Option<HashMap<usize, SlurmTask>> {
    let sacct = Command::new("sacct")
        .args([
            "-n",
            "-P",
            "-X",
            "-j",
            job,
            "-o",
            "JobID,State,ExitCode,NodeList",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success());
    if let Some(o) = sacct {
        let found = parse_sacct(job, &String::from_utf8_lossy(&o.stdout));
        if !found.is_empty() {
            return Some(found);
        }
    }
    let o = Command::new("scontrol")
        .args(["-o", "show", "job", job])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(parse_scontrol(&String::from_utf8_lossy(&o.stdout)))
}

/// `sacct -n -P -X -o JobID,State,ExitCode,NodeList`: `JOB_I|STATE|X:S|NODE`, a pending
/// rest of the array as `JOB_[2-5]`.
fn parse_sacct(job: &str, text: &str) -> HashMap<usize, SlurmTask> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('|').collect();
        let [id, state, exit, node, ..] = f[..] else {
            continue;
        };
        let Some(indices) = id
            .strip_prefix(job)
            .and_then(|r| r.strip_prefix('_'))
            .map(|r| indices(r.trim_start_matches('[').trim_end_matches(']')))
        else {
            continue;
        };
        // `CANCELLED by 0`: the state alone.
        let state = state.split_whitespace().next().unwrap_or("").to_owned();
        let node = (!node.is_empty() && node != "None assigned").then(|| node.to_owned());
        for i in indices {
            out.insert(
                i,
                SlurmTask {
                    state: state.clone(),
                    reason: None,
                    exit_code: Some(exit.to_owned()),
                    node: node.clone(),
                },
            );
        }
    }
    out
}

/// `scontrol -o show job JOB`: one line per array task (`ArrayTaskId=3 JobState=...
/// Reason=... ExitCode=... NodeList=...`), the pending rest as `ArrayTaskId=2-5`.
fn parse_scontrol(text: &str) -> HashMap<usize, SlurmTask> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let fields: HashMap<&str, &str> = line
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .collect();
        let (Some(ids), Some(state)) = (fields.get("ArrayTaskId"), fields.get("JobState")) else {
            continue;
        };
        let node = fields
            .get("NodeList")
            .filter(|n| **n != "(null)")
            .map(|n| (*n).to_owned());
        for i in indices(ids) {
            out.insert(
                i,
                SlurmTask {
                    state: (*state).to_owned(),
                    reason: fields.get("Reason").map(|r| (*r).to_owned()),
                    exit_code: fields.get("ExitCode").map(|c| (*c).to_owned()),
                    node: node.clone(),
                },
            );
        }
    }
    out
}

/// Array indices as Slurm writes them: `3`, `2-5`, `1,4-6`, with a `%LIMIT` dropped.
fn indices(text: &str) -> Vec<usize> {
    let text = text.split('%').next().unwrap_or("");
    let mut out = Vec::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    out.extend(a..=b.min(a.saturating_add(1 << 20)));
                }
            }
            None => out.extend(part.parse::<usize>().ok()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_indices_are_read_as_slurm_writes_them() {
        assert_eq!(indices("3"), [3]);
        assert_eq!(indices("2-4"), [2, 3, 4]);
        assert_eq!(indices("0,5-6%2"), [0, 5, 6]);
        assert!(indices("x").is_empty());
    }

    #[test]
    fn scontrol_lines_give_each_tasks_state() {
        let text = "JobId=5 ArrayJobId=1 ArrayTaskId=2-3 JobName=m JobState=PENDING \
                    Reason=Resources ExitCode=0:0 NodeList=(null)\n\
                    JobId=4 ArrayJobId=1 ArrayTaskId=1 JobName=m JobState=FAILED \
                    Reason=NonZeroExitCode ExitCode=3:0 NodeList=vm\n";
        let s = parse_scontrol(text);
        assert_eq!(s[&2].state, "PENDING");
        assert!(s[&3].is_active());
        assert_eq!(s[&3].node, None);
        assert_eq!(s[&1].node.as_deref(), Some("vm"));
        assert_eq!(
            s[&1].describe(),
            "FAILED (reason NonZeroExitCode, exit code 3:0)"
        );
        assert!(!s[&1].is_active());
    }

    #[test]
    fn sacct_lines_give_each_tasks_state() {
        let text = "12_0|COMPLETED|0:0|n1\n12_1|CANCELLED by 0|0:15|n2\n12_[2-3]|PENDING|0:0|None assigned\n";
        let s = parse_sacct("12", text);
        assert_eq!(s.len(), 4);
        assert_eq!(s[&1].describe(), "CANCELLED (exit code 0:15)");
        assert_eq!(s[&0].describe(), "COMPLETED");
        assert_eq!(s[&3].state, "PENDING");
        assert_eq!(s[&3].node, None);
        // Another job's lines are not this one's.
        assert!(parse_sacct("1", text).is_empty());
    }

    #[test]
    fn time_limits_round_up_to_minutes() {
        assert_eq!(time_limit(Duration::from_secs(1)), "0-00:01:00");
        assert_eq!(time_limit(Duration::from_secs(61)), "0-00:02:00");
        assert_eq!(time_limit(Duration::from_secs(26 * 3600)), "1-02:00:00");
    }
}
