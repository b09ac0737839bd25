//! `marvin sweep` through a real Slurm: the one-node test cluster `.ci/slurm-up` starts
//! (`MARVIN_SLURM_TEST_CONF` names its configuration; `.ci/run` sets it). A 2 x 2 x 2
//! grid (two Marvin policies, two values of a knob, two repetitions: eight tasks of one
//! run each) submitted as a job array merges into the same experiment as the same eight
//! shards run by hand; and an array task cancelled with `scancel` is reported failed by
//! `marvin sweep status`, its grid refused by `marvin compare` until `marvin sweep
//! --rerun-missing` has run it again. Where no test cluster runs, each test says so and
//! passes without checking anything.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The test cluster's configuration, or why there is none (printed, the test skipped).
fn cluster() -> Option<String> {
    let Ok(conf) = std::env::var("MARVIN_SLURM_TEST_CONF") else {
        eprintln!(
            "skipped: MARVIN_SLURM_TEST_CONF is not set (no test cluster: `.ci/slurm-up` \
             starts one as root and prints the path to set it to)"
        );
        return None;
    };
    let up = Command::new("sinfo")
        .args(["-h", "-o", "%T"])
        .env("SLURM_CONF", &conf)
        .output();
    match up {
        Ok(o) if o.status.success() => Some(conf),
        Ok(o) => {
            eprintln!(
                "skipped: the test cluster of {conf} does not answer: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            None
        }
        Err(e) => {
            eprintln!("skipped: sinfo cannot run ({e}): Slurm's client is not installed");
            None
        }
    }
}

/// A command of the built binary (or of Slurm) with the test cluster's configuration.
fn cmd(conf: &str, program: &str) -> Command {
    let mut c = Command::new(program);
    c.env("SLURM_CONF", conf);
    c
}

fn marvin(conf: &str) -> Command {
    cmd(conf, env!("CARGO_BIN_EXE_marvin"))
}

fn ok(o: Output, what: &str) -> Output {
    assert!(
        o.status.success(),
        "{what} failed: {}\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The grid: two Marvin policies (restore on demand, eager) as variants, two values of
/// `coldness.window_rounds`, two repetitions, each run a tiny in-process one of about
/// two seconds.
fn grid(dir: &Path, conf: &str) -> Vec<String> {
    let base = ok(
        marvin(conf)
            .args(["policy", "show", "--experiment", "--mode", "in-process"])
            .output()
            .unwrap(),
        "marvin policy show",
    );
    let base = text(&base.stdout);
    assert!(base.contains("mode = \"on-demand\""), "{base}");
    let (lazy, eager) = (dir.join("lazy.toml"), dir.join("eager.toml"));
    std::fs::write(&lazy, &base).unwrap();
    std::fs::write(
        &eager,
        base.replace("mode = \"on-demand\"", "mode = \"eager\""),
    )
    .unwrap();
    let mut v: Vec<String> = [
        "--mode",
        "in-process",
        "--apps",
        "2",
        "--budget",
        "12m",
        "--launch-every",
        "500ms",
        "--duration",
        "2s",
        "--launches",
        "0",
        "-D",
        "ARRAYS=48",
        "--time-scale",
        "0.05",
        "--gc-max-free",
        "256k",
        "--sample-every",
        "100ms",
        "--policy",
        "marvin",
        "--sweep",
        "coldness.window_rounds=1,2",
        "--reps",
        "2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (name, f) in [("lazy", &lazy), ("eager", &eager)] {
        v.push("--variant".into());
        v.push(format!("{name}={}", f.display()));
    }
    v
}

/// Cancels its jobs when dropped (a failed test leaves nothing queued or running).
struct Jobs {
    conf: String,
    ids: Vec<String>,
}

impl Drop for Jobs {
    fn drop(&mut self) {
        for id in &self.ids {
            let _ = cmd(&self.conf, "scancel").arg(id).status();
        }
    }
}

/// Submits with `marvin sweep ...`; returns the job id it printed.
fn submit(conf: &str, args: &[String], jobs: &mut Jobs) -> String {
    let o = ok(marvin(conf).args(args).output().unwrap(), "marvin sweep");
    let out = text(&o.stdout);
    let id = out
        .split_whitespace()
        .skip_while(|w| *w != "job")
        .nth(1)
        .unwrap_or_else(|| panic!("no job id printed: {out}"))
        .to_owned();
    assert!(id.chars().all(|c| c.is_ascii_digit()), "{out}");
    jobs.ids.push(id.clone());
    id
}

/// Waits until Slurm holds no task of `job` queued or running (at most two minutes,
/// then fails with the sweep's status).
fn wait(conf: &str, job: &str, dir: &Path) {
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let o = cmd(conf, "squeue")
            .args(["-h", "-r", "-j", job, "-o", "%i"])
            .output()
            .unwrap();
        if o.status.success() && o.stdout.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        if Instant::now() > until {
            let s = marvin(conf).args(["sweep", "status"]).arg(dir).output();
            panic!(
                "job {job} did not end within two minutes: {}\n{:?}",
                text(&o.stdout),
                s.map(|s| text(&s.stdout))
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// `marvin compare DIR... --out OUT --json`: the merged runs and record.
fn compare(conf: &str, dirs: &[PathBuf], out: &Path) -> (Vec<Value>, String) {
    let o = ok(
        marvin(conf)
            .arg("compare")
            .args(dirs)
            .arg("--json")
            .arg("--out")
            .arg(out)
            .output()
            .unwrap(),
        "marvin compare",
    );
    let runs: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    (
        runs,
        std::fs::read_to_string(out.join("config.toml")).unwrap(),
    )
}

/// The runs as rows: column label, repetition, seed, policy and mode.
fn rows(runs: &[Value]) -> Vec<String> {
    runs.iter()
        .map(|r| {
            format!(
                "{} #{} seed {} {} {}",
                r["label"], r["rep"], r["seed"], r["policy"], r["mode"]
            )
        })
        .collect()
}

#[test]
fn a_slurm_job_array_merges_into_the_same_grid_as_its_shards_run_by_hand() {
    let Some(conf) = cluster() else { return };
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let exp = grid(tmp.path(), &conf);
    let sweep = tmp.path().join("sweep");
    let mut jobs = Jobs {
        conf: conf.clone(),
        ids: Vec::new(),
    };
    let args: Vec<String> = ["sweep", "--slurm", "--submit", "--quiet", "--out"]
        .iter()
        .map(|s| s.to_string())
        .chain([sweep.display().to_string()])
        .chain(exp.iter().cloned())
        .collect();
    let job = submit(&conf, &args, &mut jobs);
    let script = std::fs::read_to_string(sweep.join("sweep.sh")).unwrap();
    for line in ["#SBATCH --array=0-7", "--exclusive", "#SBATCH --time=0-00:"] {
        assert!(script.contains(line), "{line}: {script}");
    }
    // The same eight shards by hand, while Slurm runs them.
    let mut hand = Vec::new();
    for i in 1..=8 {
        let d = tmp.path().join(format!("hand{i}"));
        ok(
            marvin(&conf)
                .arg("pressure")
                .args(&exp)
                .args(["--quiet", "--shard", &format!("{i}/8"), "--out"])
                .arg(&d)
                .output()
                .unwrap(),
            "marvin pressure --shard",
        );
        hand.push(d);
    }
    wait(&conf, &job, &sweep);
    let status = ok(
        marvin(&conf)
            .args(["sweep", "status"])
            .arg(&sweep)
            .output()
            .unwrap(),
        "marvin sweep status",
    );
    let status = text(&status.stdout);
    assert!(status.contains("8 tasks: 8 finished, 0 failed"), "{status}");
    // Each task ran its own shard on the node, and recorded it with the binary's build.
    let task = std::fs::read_to_string(sweep.join("task-5/task.toml")).unwrap();
    assert!(task.contains(&format!("slurm_job = \"{job}_5\"")), "{task}");
    assert!(
        task.contains("exit = 0") && task.contains("build = "),
        "{task}"
    );
    let (slurm_runs, slurm_record) =
        compare(&conf, std::slice::from_ref(&sweep), &tmp.path().join("m1"));
    let (hand_runs, hand_record) = compare(&conf, &hand, &tmp.path().join("m2"));
    assert_eq!(slurm_runs.len(), 8);
    assert_eq!(rows(&slurm_runs), rows(&hand_runs));
    // The merged experiment's record (every argument, column, policy, run, the workload,
    // the commit and the host) is the same.
    assert_eq!(slurm_record, hand_record);
    assert!(slurm_record.contains("marvin:eager:coldness.window_rounds=2"));
    eprintln!(
        "the 2 x 2 x 2 grid through Slurm and by hand took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_cancelled_array_task_fails_the_grid_until_it_is_rerun() {
    let Some(conf) = cluster() else { return };
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let exp = grid(tmp.path(), &conf);
    let sweep = tmp.path().join("sweep");
    let mut jobs = Jobs {
        conf: conf.clone(),
        ids: Vec::new(),
    };
    // Four tasks of two runs each: task 1 runs long enough to be cancelled midway.
    let args: Vec<String> = ["sweep", "--slurm", "--submit", "--tasks", "4", "--out"]
        .iter()
        .map(|s| s.to_string())
        .chain([sweep.display().to_string()])
        .chain(exp.iter().cloned())
        .collect();
    let job = submit(&conf, &args, &mut jobs);
    // Once task 1 has started (its record written), cancel it.
    let record = sweep.join("task-1/task.toml");
    let until = Instant::now() + Duration::from_secs(120);
    while !record.exists() {
        assert!(Instant::now() < until, "task 1 never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    ok(
        cmd(&conf, "scancel")
            .arg(format!("{job}_1"))
            .output()
            .unwrap(),
        "scancel",
    );
    wait(&conf, &job, &sweep);
    let o = marvin(&conf)
        .args(["sweep", "status"])
        .arg(&sweep)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let status = text(&o.stdout);
    let line = status.lines().find(|l| l.starts_with("task 1:")).unwrap();
    assert!(line.starts_with("task 1: failed: "), "{status}");
    assert!(line.contains("CANCELLED"), "{status}");
    assert!(status.contains("4 tasks: 3 finished, 1 failed"), "{status}");
    // compare refuses the grid, naming the task and its runs.
    let o = marvin(&conf).arg("compare").arg(&sweep).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("task 1 (failed"), "{err}");
    assert!(err.contains("--rerun-missing"), "{err}");
    // --partial merges the finished six runs.
    let o = ok(
        marvin(&conf)
            .args(["compare", "--partial", "--json"])
            .arg(&sweep)
            .output()
            .unwrap(),
        "marvin compare --partial",
    );
    let runs: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(runs.len(), 6);
    // --rerun-missing resubmits task 1 alone; then the grid is whole.
    let rerun: Vec<String> = vec![
        "sweep".into(),
        "--rerun-missing".into(),
        sweep.display().to_string(),
    ];
    let again = submit(&conf, &rerun, &mut jobs);
    assert_ne!(again, job);
    wait(&conf, &again, &sweep);
    let o = ok(
        marvin(&conf)
            .args(["sweep", "status"])
            .arg(&sweep)
            .output()
            .unwrap(),
        "marvin sweep status after the rerun",
    );
    assert!(
        text(&o.stdout).contains("4 tasks: 4 finished"),
        "{}",
        text(&o.stdout)
    );
    let (runs, _) = compare(
        &conf,
        std::slice::from_ref(&sweep),
        &tmp.path().join("merged"),
    );
    assert_eq!(runs.len(), 8);
    eprintln!(
        "submit, cancel, rerun and merge took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
