//! `marvin sweep` without Slurm: `--local` runs a tiny grid's tasks here, `sweep status`
//! tells finished from missing tasks, `marvin compare` refuses an incomplete grid (and
//! tasks of different binaries) until `--rerun-missing` has run the rest; `--slurm`
//! writes a job-array script whose time limit follows the runs' duration; and bad input
//! is a clear error with a non-zero status. (Through a real Slurm: sweep_slurm.rs.)

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn marvin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_marvin"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(o: Output, what: &str) -> Output {
    assert!(
        o.status.success(),
        "{what} failed: {}\n{}\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
    o
}

/// A tiny in-process experiment of two runs (kill and marvin, about two seconds each).
const TINY: [&str; 22] = [
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
    "kill,marvin",
];

fn compare(dir: &Path, extra: &[&str]) -> Output {
    marvin()
        .args(["compare", "--json"])
        .args(extra)
        .arg(dir)
        .output()
        .unwrap()
}

fn status(dir: &Path) -> (Option<i32>, String) {
    let o = marvin()
        .args(["sweep", "status"])
        .arg(dir)
        .output()
        .unwrap();
    (o.status.code(), text(&o.stdout))
}

#[test]
fn a_local_sweep_runs_its_tasks_and_compare_takes_only_the_whole_grid() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let o = ok(
        marvin()
            .args(["sweep", "--local", "--out"])
            .arg(&dir)
            .args(TINY)
            .output()
            .unwrap(),
        "marvin sweep --local",
    );
    assert!(
        text(&o.stdout).contains("2 tasks: 2 finished"),
        "{}",
        text(&o.stdout)
    );
    let task = std::fs::read_to_string(dir.join("task-1/task.toml")).unwrap();
    for field in ["node = ", "build = ", "exit = 0", "[host]", "cores = "] {
        assert!(task.contains(field), "{field}: {task}");
    }
    let runs: Vec<Value> =
        serde_json::from_slice(&ok(compare(&dir, &[]), "compare").stdout).unwrap();
    let labels: Vec<&str> = runs.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["kill", "marvin"]);

    // Task 1's results lost: missing, named with its run; compare refuses the grid.
    std::fs::remove_dir_all(dir.join("task-1")).unwrap();
    let (code, s) = status(&dir);
    assert_eq!(code, Some(1), "{s}");
    assert!(
        s.contains("task 1: missing: never started (runs: marvin #0)"),
        "{s}"
    );
    let o = compare(&dir, &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("1 of 2 tasks unfinished: task 1"), "{err}");
    assert!(err.contains("--partial"), "{err}");
    // --partial merges what finished, and says what it left out.
    let o = ok(compare(&dir, &["--partial"]), "compare --partial");
    let runs: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(runs.len(), 1);
    assert!(text(&o.stderr).contains("warning: "), "{}", text(&o.stderr));

    // --rerun-missing runs task 1 again (locally: a local sweep).
    let o = ok(
        marvin()
            .args(["sweep", "--rerun-missing"])
            .arg(&dir)
            .output()
            .unwrap(),
        "--rerun-missing",
    );
    assert!(
        text(&o.stdout).contains("task 1 (1/1): finished"),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(status(&dir).0, Some(0));
    let o = ok(
        marvin()
            .args(["sweep", "--rerun-missing"])
            .arg(&dir)
            .output()
            .unwrap(),
        "--rerun-missing of a whole sweep",
    );
    assert!(text(&o.stdout).contains("nothing to rerun"));

    // A task of another binary: compare refuses to merge it.
    let path = dir.join("task-0/task.toml");
    let record = std::fs::read_to_string(&path).unwrap();
    let build = record.lines().find(|l| l.starts_with("build = ")).unwrap();
    std::fs::write(&path, record.replace(build, "build = \"0000000000000000\"")).unwrap();
    let o = compare(&dir, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("different marvin binaries"),
        "{}",
        text(&o.stderr)
    );
    let (_, s) = status(&dir);
    assert!(s.contains("differs from the sweep's"), "{s}");
}

#[test]
fn a_slurm_script_runs_each_shard_on_a_node_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let args = |d: &Path, duration: &str| {
        let mut c = marvin();
        c.args(["sweep", "--slurm", "--sbatch=--partition=long", "--out"])
            .arg(d)
            .args(TINY.map(|a| if a == "2s" { duration } else { a }))
            .args(["--reps", "3", "--tasks", "2"]);
        c
    };
    ok(args(&dir, "2s").output().unwrap(), "marvin sweep --slurm");
    let script = std::fs::read_to_string(dir.join("sweep.sh")).unwrap();
    for line in [
        "#SBATCH --array=0-1\n",
        "#SBATCH --nodes=1 --ntasks=1 --exclusive\n",
        "#SBATCH --partition=long\n",
        // Three runs of at most 2 s + 30 s, twice over: the five-minute floor.
        "#SBATCH --time=0-00:05:00\n",
        "/task-%a/slurm-%A_%a.out\n",
        "sweep task ",
        "\"$SLURM_ARRAY_TASK_ID\"\n",
    ] {
        assert!(script.contains(line), "{line}: {script}");
    }
    assert!(
        dir.join("task-1").is_dir(),
        "the log folders exist before the tasks"
    );
    // Ten minutes a run: three runs of 10 m 30 s, twice over.
    let long = tmp.path().join("long");
    ok(args(&long, "10m").output().unwrap(), "marvin sweep --slurm");
    let script = std::fs::read_to_string(long.join("sweep.sh")).unwrap();
    assert!(script.contains("#SBATCH --time=0-01:03:00\n"), "{script}");
    // Nothing submitted: the status says every task is missing.
    let (code, s) = status(&dir);
    assert_eq!(code, Some(1));
    assert!(
        s.contains("2 tasks: 0 finished, 0 failed, 0 queued or running, 2 missing"),
        "{s}"
    );
}

/// `marvin sweep EXTRA TINY...`.
fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["sweep"];
    v.extend_from_slice(extra);
    v.extend(TINY);
    v
}

#[test]
fn bad_sweeps_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let fresh = tmp.path().join("new");
    let run = |args: &[&str], path: Option<&str>| {
        let mut c = marvin();
        c.args(args).current_dir(tmp.path());
        if let Some(p) = path {
            c.env("PATH", p);
        }
        let o = c.output().unwrap();
        (o.status.code(), text(&o.stderr))
    };
    let out = fresh.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (with(&["--out", out]), "needs --slurm"),
        (
            with(&["--local", "--slurm", "--out", out]),
            "cannot be used with",
        ),
        (
            with(&["--local", "--submit", "--out", out]),
            "--submit submits the --slurm script",
        ),
        (with(&["--local"]), "needs --out DIR"),
        (
            with(&["--local", "--out", out, "--tasks", "3"]),
            "at most 2 tasks",
        ),
        (
            with(&["--local", "--out", out, "--shard", "1/2"]),
            "does not take --shard",
        ),
        (
            vec!["sweep", "--local", "--out", out, "--policy", "kill"],
            "needs --mode processes or --mode in-process",
        ),
        (
            with(&["--local", "--out", tmp.path().to_str().unwrap()]),
            "holds files already",
        ),
        (
            vec!["sweep", "status", out],
            "not a folder made by marvin sweep",
        ),
        (
            vec!["sweep", "--rerun-missing", out],
            "not a folder made by marvin sweep",
        ),
    ];
    std::fs::write(tmp.path().join("x"), "").unwrap();
    for (args, want) in &cases {
        let (code, err) = run(args, None);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {want}: {err}");
    }
    // sbatch missing: the script is written, the submission fails with why.
    let empty = tmp.path().join("nobin");
    std::fs::create_dir(&empty).unwrap();
    let (code, err) = run(
        &with(&["--slurm", "--submit", "--out", out]),
        Some(empty.to_str().unwrap()),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("sbatch is not installed"), "{err}");
    assert!(fresh.join("sweep.sh").exists());
    // The rerun of a sweep takes no experiment flags; a task index out of range.
    let (code, err) = run(&["sweep", "--rerun-missing", out, "--apps", "3"], None);
    assert_eq!(code, Some(2));
    assert!(err.contains("give only --local or --submit"), "{err}");
    let (code, err) = run(&["sweep", "task", out, "7"], None);
    assert_eq!(code, Some(2));
    assert!(err.contains("has tasks 0 to 1, not 7"), "{err}");
}
