//! The experiment's bookkeeping, on tiny in-process runs: repetitions are all recorded
//! with their spread, `config.toml` re-runs the same experiment, variants give labelled
//! columns, shards merged by `marvin compare` make the unsharded grid, the default
//! workload is embedded (runs from any directory), piped runs print a line per run,
//! and `policy show --experiment` prints the policy the experiment runs.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod tiny_pressure;
use tiny_pressure::TINY_CLOCK;

/// A command of the built binary, run in a directory that holds no workload files.
fn marvin(cwd: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_marvin"));
    c.current_dir(cwd);
    c
}

/// The tiny model's settings besides the pressure tests' shared clock (two apps, two
/// seconds per run; the budget apart).
const TINY_MODEL: [&str; 10] = [
    "--mode",
    "in-process",
    "--apps",
    "2",
    "--launch-every",
    "500ms",
    "--duration",
    "2s",
    "-D",
    "ARRAYS=48",
];

/// `pressure` with the tiny model on the tiny clock ([`TINY_CLOCK`]).
fn tiny() -> Vec<&'static str> {
    ["pressure"]
        .into_iter()
        .chain(TINY_MODEL)
        .chain(TINY_CLOCK)
        .collect()
}

fn ok(o: Output, what: &str) -> Output {
    assert!(
        o.status.success(),
        "{what} failed: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// [`tiny`] with a 12 MiB budget, less the flags (and their values) `extra` sets itself.
fn tiny_but(extra: &[&str]) -> Vec<&'static str> {
    let tiny = tiny();
    let mut out = vec![tiny[0]];
    for pair in tiny[1..].chunks(2).chain([["--budget", "12m"].as_slice()]) {
        if !extra.contains(&pair[0]) || pair[0] == "-D" {
            out.extend_from_slice(pair);
        }
    }
    out
}

fn run_tiny(cwd: &Path, extra: &[&str], out: &Path) -> Output {
    let o = marvin(cwd)
        .args(tiny_but(extra))
        .args(extra)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    ok(o, "marvin pressure")
}

fn summaries(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// The (label, repetition) of every run a directory holds.
fn runs(dir: &Path) -> BTreeSet<(String, u64)> {
    summaries(dir)
        .iter()
        .map(|s| {
            (
                s["label"].as_str().unwrap().to_owned(),
                s["rep"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn set(items: &[(&str, u64)]) -> BTreeSet<(String, u64)> {
    items.iter().map(|(l, r)| (l.to_string(), *r)).collect()
}

#[test]
fn repetitions_are_all_recorded_with_their_spread() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = run_tiny(
        tmp.path(),
        &["--policy", "kill,marvin", "--reps", "2", "--seed", "5"],
        &out,
    );
    assert_eq!(
        runs(&out),
        set(&[("kill", 0), ("kill", 1), ("marvin", 0), ("marvin", 1)])
    );
    let seeds: BTreeSet<u64> = summaries(&out)
        .iter()
        .map(|s| s["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds, BTreeSet::from([5, 6]));
    // The table: a median with its interquartile range in every cell.
    let table = String::from_utf8(o.stdout).unwrap();
    let row = table
        .lines()
        .find(|l| l.starts_with("apps alive (peak)"))
        .unwrap();
    assert_eq!(row.matches('[').count(), 2, "{table}");
    assert!(table.contains("repetitions"), "{table}");
    // series.csv: both repetitions of both columns, told apart by the rep column.
    let csv = std::fs::read_to_string(out.join("series.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let rep = header
        .iter()
        .position(|h| *h == "rep")
        .expect("a rep column");
    let seen: BTreeSet<(String, String)> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_owned(), f[rep].to_owned())
        })
        .collect();
    assert_eq!(seen.len(), 4, "{seen:?}");
    // The figures decode, and say which settings made them.
    for name in ["active_apps", "resident"] {
        let bytes = std::fs::read(out.join(format!("{name}.png"))).unwrap();
        let mut reader = png::Decoder::new(bytes.as_slice()).read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let frame = reader.next_frame(&mut buf).unwrap();
        assert!(frame.width > 0 && frame.height > 0);
        let caption = std::fs::read_to_string(out.join(format!("{name}.txt"))).unwrap();
        assert!(
            caption.contains("2 apps") && caption.contains("2 repetition"),
            "{caption}"
        );
    }
}

#[test]
fn apps_csv_holds_each_apps_events_in_long_format() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // Three apps, a budget for about two, and foreground switches: the killer kills
    // and apps come back cold.
    run_tiny(
        tmp.path(),
        &[
            "--policy",
            "kill",
            "--apps",
            "3",
            "--budget",
            "8m",
            "--switch-every",
            "300ms",
            "--reps",
            "2",
        ],
        &out,
    );
    let csv = std::fs::read_to_string(out.join("apps.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("policy,rep,app,event,t_s,t_end_s,value"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 7), "{csv}");
    let count = |rep: &str, event: &str| {
        rows.iter().filter(|r| r[1] == rep && r[3] == event).count() as u64
    };
    let s = summaries(&out);
    for rep in ["0", "1"] {
        let run = s
            .iter()
            .find(|x| x["rep"].as_u64().unwrap().to_string() == rep)
            .unwrap();
        assert_eq!(count(rep, "launch"), 3, "every app launched once: {csv}");
        assert_eq!(count(rep, "kill"), run["kills"].as_u64().unwrap(), "{csv}");
        assert_eq!(
            count(rep, "restart"),
            run["restarts"].as_u64().unwrap(),
            "{csv}"
        );
        assert!(count(rep, "foreground") >= 3, "{csv}");
    }
    // Every interval ends after it begins, and within the run.
    for r in rows
        .iter()
        .filter(|r| r[3] == "foreground" || r[3] == "active")
    {
        let (a, b): (f64, f64) = (r[4].parse().unwrap(), r[5].parse().unwrap());
        assert!(a <= b && b < 10.0, "{r:?}");
    }
    assert!(
        s.iter().any(|x| x["kills"].as_u64().unwrap() > 0),
        "the killer acted"
    );
}

#[test]
fn the_config_record_re_runs_the_same_experiment() {
    let tmp = tempfile::tempdir().unwrap();
    let policy = tmp.path().join("p.toml");
    std::fs::write(&policy, "[coldness]\nwindow_rounds = 2\n").unwrap();
    let first = tmp.path().join("first");
    run_tiny(
        tmp.path(),
        &[
            "--policy",
            "kill,marvin",
            "--policy-file",
            policy.to_str().unwrap(),
        ],
        &first,
    );
    let config = std::fs::read_to_string(first.join("config.toml")).unwrap();
    for needle in [
        "command = \"marvin pressure",
        "commit = ",
        "fnv1a64 = ",
        "source = \"builtin:buckets\"",
        "overrides = [\"ARRAYS=48\"]",
        "window_rounds = 2",
        "kernel = \"Linux",
        "cores = ",
    ] {
        assert!(
            config.contains(needle),
            "config.toml lacks {needle}:\n{config}"
        );
    }
    // The policy file may go: the record holds the policy itself.
    std::fs::remove_file(&policy).unwrap();
    let second = tmp.path().join("second");
    let o = marvin(tmp.path())
        .arg("pressure")
        .arg("--config")
        .arg(first.join("config.toml"))
        .arg("--out")
        .arg(&second)
        .output()
        .unwrap();
    ok(o, "marvin pressure --config");
    let a: toml::Table = toml::from_str(&config).unwrap();
    let b: toml::Table =
        toml::from_str(&std::fs::read_to_string(second.join("config.toml")).unwrap()).unwrap();
    for key in ["args", "columns", "workload", "runs", "mode"] {
        assert_eq!(
            a[key], b[key],
            "{key} differs between the run and its re-run"
        );
    }
    assert_eq!(runs(&first), runs(&second));
    let budgets: Vec<u64> = summaries(&second)
        .iter()
        .map(|s| s["budget_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(budgets, [12 << 20, 12 << 20]);

    // Any setting beside --config is refused before anything runs.
    let o = marvin(tmp.path())
        .args(["pressure", "--apps", "3", "--config"])
        .arg(first.join("config.toml"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--config takes every setting"));
}

#[test]
fn variants_are_labelled_columns_side_by_side() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.toml"), tmp.path().join("b.toml"));
    std::fs::write(&a, "[coldness]\nwindow_rounds = 1\n").unwrap();
    std::fs::write(&b, "[coldness]\nwindow_rounds = 4\n").unwrap();
    let out = tmp.path().join("out");
    let o = run_tiny(
        tmp.path(),
        &[
            "--policy",
            "marvin",
            "--variant",
            &format!("eager={}", a.display()),
            "--variant",
            &format!("lazy={}", b.display()),
        ],
        &out,
    );
    assert_eq!(runs(&out), set(&[("marvin:eager", 0), ("marvin:lazy", 0)]));
    let header = String::from_utf8(o.stdout).unwrap();
    let header = header.lines().nth(1).unwrap();
    let labels: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(labels, ["marvin:eager", "marvin:lazy"]);
    let rec: toml::Table =
        toml::from_str(&std::fs::read_to_string(out.join("config.toml")).unwrap()).unwrap();
    let rounds: Vec<i64> = rec["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["policy"]["coldness"]["window_rounds"]
                .as_integer()
                .unwrap()
        })
        .collect();
    assert_eq!(rounds, [1, 4]);
}

#[test]
fn shards_merged_by_compare_make_the_whole_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = [
        "--policy",
        "kill,marvin",
        "--sweep",
        "coldness.window_rounds=1,2",
    ];
    let whole = tmp.path().join("whole");
    run_tiny(tmp.path(), &sweep, &whole);
    let mut shards = Vec::new();
    for i in 1..=2 {
        let dir = tmp.path().join(format!("shard{i}"));
        let shard = format!("{i}/2");
        let args: Vec<&str> = sweep.iter().copied().chain(["--shard", &shard]).collect();
        run_tiny(tmp.path(), &args, &dir);
        shards.push(dir);
    }
    assert!(runs(&shards[0]).is_disjoint(&runs(&shards[1])));
    let merged = tmp.path().join("merged");
    let o = marvin(tmp.path())
        .arg("compare")
        .args(&shards)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    let o = ok(o, "marvin compare");
    let want = set(&[
        ("kill", 0),
        ("marvin:coldness.window_rounds=1", 0),
        ("marvin:coldness.window_rounds=2", 0),
    ]);
    assert_eq!(runs(&whole), want);
    assert_eq!(runs(&merged), want);
    // The merged table has the experiment's columns in its order.
    let table = String::from_utf8(o.stdout).unwrap();
    let labels: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        labels,
        [
            "kill",
            "marvin:coldness.window_rounds=1",
            "marvin:coldness.window_rounds=2"
        ]
    );
    // Every file a single run writes, the shards' records merged into the whole's.
    for f in std::fs::read_dir(&whole).unwrap().flatten() {
        let name = f.file_name();
        assert!(
            merged.join(&name).exists(),
            "compare --out lacks {}",
            name.to_string_lossy()
        );
    }
    let record = std::fs::read_to_string(merged.join("config.toml")).unwrap();
    assert!(!record.contains("--shard"), "{record}");
    let whole_record = std::fs::read_to_string(whole.join("config.toml")).unwrap();
    let runs_of = |r: &str| r.matches("[[runs]]").count();
    assert_eq!(runs_of(&record), runs_of(&whole_record), "{record}");

    // A directory without results is a clear error.
    let o = marvin(tmp.path())
        .arg("compare")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("summary.json"));
}

#[test]
fn compare_refuses_to_merge_an_in_process_and_a_process_mode_run() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("model");
    run_tiny(tmp.path(), &["--policy", "kill"], &model);
    // The same directory as a process-mode run would have written it (its summaries and
    // record say so; the test needs no root for it).
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    for f in std::fs::read_dir(&model).unwrap().flatten() {
        let text = std::fs::read(f.path()).unwrap();
        let text = String::from_utf8_lossy(&text)
            .replace("\"mode\": \"in-process\"", "\"mode\": \"processes\"")
            .replace("mode = \"in-process\"", "mode = \"processes\"");
        std::fs::write(real.join(f.file_name()), text).unwrap();
    }
    assert!(std::fs::read_to_string(real.join("summary.json"))
        .unwrap()
        .contains("\"mode\": \"processes\""));
    let merged = tmp.path().join("merged");
    let o = marvin(tmp.path())
        .args(["compare", "model", "real", "--out"])
        .arg(&merged)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("in-process") && err.contains("processes") && err.contains("--allow-mixed"),
        "the message names both modes and the way out: {err}"
    );
    assert!(
        err.contains("model (in-process)") && err.contains("real (processes)"),
        "{err}"
    );
    assert!(o.stdout.is_empty() && !merged.exists(), "nothing merged");
    // Told to, it merges them.
    let o = marvin(tmp.path())
        .args(["compare", "model", "real", "--allow-mixed", "--out"])
        .arg(&merged)
        .output()
        .unwrap();
    ok(o, "marvin compare --allow-mixed");
    assert!(merged.join("config-model.toml").exists() && merged.join("config-real.toml").exists());
}

#[test]
fn a_shard_that_would_fall_back_to_the_model_is_refused() {
    // As root the shard runs as nobody (setpriv), where the process mode cannot run.
    let as_root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    let mut cmd = if as_root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_marvin"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_marvin"))
    };
    let o = match cmd
        .current_dir("/")
        .args([
            "pressure",
            "--shard",
            "1/2",
            "--apps",
            "2",
            "--duration",
            "1s",
        ])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: cannot run marvin as another user: {e}");
            return;
        }
    };
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: --shard 1/2: this shard would run the in-process model")
            && err.contains("--mode in-process"),
        "{err}"
    );
}

#[test]
fn piped_runs_print_a_line_per_finished_run() {
    let tmp = tempfile::tempdir().unwrap();
    // stderr is a pipe here: no progress bars, one line per run instead.
    let o = marvin(tmp.path())
        .args(tiny())
        .args(["--budget", "12m", "--policy", "kill,marvin"])
        .output()
        .unwrap();
    let err = String::from_utf8(ok(o, "marvin pressure").stderr).unwrap();
    assert!(err.contains("finished 1/2: kill"), "{err}");
    assert!(err.contains("finished 2/2: marvin"), "{err}");
}

#[test]
fn a_budget_never_reached_is_warned_about() {
    let tmp = tempfile::tempdir().unwrap();
    let o = marvin(tmp.path())
        .args(tiny())
        .args(["--policy", "kill", "--budget", "1g", "--quiet"])
        .output()
        .unwrap();
    let o = ok(o, "marvin pressure");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: the budget (1024.0 MiB) was never reached"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("warning:"));
}

#[test]
fn policy_show_experiment_prints_the_policy_the_experiment_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let o = ok(
        marvin(tmp.path())
            .args(["policy", "show", "--experiment", "--mode", "in-process"])
            .output()
            .unwrap(),
        "policy show --experiment",
    );
    let text = String::from_utf8(o.stdout).unwrap();
    let shown: toml::Table = toml::from_str(&text).unwrap();
    // The background saver runs at the foreground period in the model's experiment,
    // every second in both states in the process mode's.
    assert_eq!(shown["saver"]["background_period"].as_str(), Some("5s"));
    let o = ok(
        marvin(tmp.path())
            .args(["policy", "show", "--experiment", "--mode", "processes"])
            .output()
            .unwrap(),
        "policy show --experiment --mode processes",
    );
    let processes: toml::Table = toml::from_str(&String::from_utf8(o.stdout).unwrap()).unwrap();
    assert_eq!(processes["saver"]["background_period"].as_str(), Some("1s"));
    assert_eq!(processes["saver"]["foreground_period"].as_str(), Some("1s"));
    let published = ok(
        marvin(tmp.path())
            .args(["policy", "show"])
            .output()
            .unwrap(),
        "policy show",
    );
    let published: toml::Table =
        toml::from_str(&String::from_utf8(published.stdout).unwrap()).unwrap();
    assert_eq!(
        published["saver"]["background_period"].as_str(),
        Some("30s")
    );
    // Given back as a policy file, it is the experiment's default exactly: the record
    // of a run with it holds the same policy as one without.
    let file = tmp.path().join("exp.toml");
    std::fs::write(&file, &text).unwrap();
    let (with, without) = (tmp.path().join("with"), tmp.path().join("without"));
    run_tiny(
        tmp.path(),
        &[
            "--policy",
            "marvin",
            "--policy-file",
            file.to_str().unwrap(),
        ],
        &with,
    );
    run_tiny(tmp.path(), &["--policy", "marvin"], &without);
    let policy = |d: &Path| {
        let t: toml::Table =
            toml::from_str(&std::fs::read_to_string(d.join("config.toml")).unwrap()).unwrap();
        t["columns"][0]["policy"].clone()
    };
    assert_eq!(policy(&with), policy(&without));
}

#[test]
fn run_time_scale_scales_the_programs_periods() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = tmp.path().join("p.masm");
    std::fs::write(
        &prog,
        ".const WAIT_MS 1000\n.const N 7\n.method main args=0 locals=0\n  push WAIT_MS\n  print\n  push N\n  print\n  push 0\n  ret\n.end\n",
    )
    .unwrap();
    let out = |args: &[&str]| {
        let o = ok(
            marvin(tmp.path())
                .arg("run")
                .arg(&prog)
                .args(args)
                .output()
                .unwrap(),
            "marvin run",
        );
        String::from_utf8(o.stdout).unwrap()
    };
    assert_eq!(out(&[]), "1000\n7\n");
    assert_eq!(out(&["--time-scale", "0.1"]), "100\n7\n");
    assert_eq!(out(&["--time-scale", "0.1", "-D", "WAIT_MS=3"]), "3\n7\n");
    let o = marvin(tmp.path())
        .arg("run")
        .arg(&prog)
        .args(["--time-scale", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--time-scale"));
}
