//! The pressure experiment's mechanics, on tiny runs of a few seconds per policy:
//! kill kills (and restarts with a foreground schedule), page-swap writes and reads
//! pages, marvin reclaims without killing, nobody fails verification, and the budget is
//! never exceeded by more than one allocation.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn marvin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_marvin"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// One 4 KiB array plus its header rounded to pages: the largest single allocation of
/// the workload.
const ONE_ALLOCATION: u64 = 4096;

/// Runs `marvin pressure` on a tiny model and returns the summaries by policy.
fn pressure(
    policies: &str,
    apps: &str,
    budget: &str,
    extra: &[&str],
    out: Option<&PathBuf>,
) -> Vec<Value> {
    let mut cmd = marvin();
    cmd.args([
        "pressure",
        "--quiet",
        "--json",
        "--policy",
        policies,
        "--apps",
        apps,
        "--budget",
        budget,
        "--launch-every",
        "1s",
        "--duration",
        "6s",
        "--time-scale",
        "0.05",
        "--gc-max-free",
        "256k",
        "--sample-every",
        "100ms",
        "-D",
        "ARRAYS=48",
    ]);
    cmd.args(extra);
    if let Some(dir) = out {
        cmd.arg("--out").arg(dir);
    }
    let o = cmd.output().expect("run marvin pressure");
    assert!(
        o.status.success(),
        "marvin pressure failed: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("summary JSON on stdout");
    v.as_array().expect("an array of summaries").clone()
}

fn field(s: &Value, k: &str) -> u64 {
    s[k].as_u64()
        .unwrap_or_else(|| panic!("summary lacks {k}: {s}"))
}

fn common_checks(s: &Value) {
    assert_eq!(field(s, "failed_verifications"), 0, "{s}");
    // The budget is never exceeded by more than one allocation.
    assert!(field(s, "max_over_budget_bytes") <= ONE_ALLOCATION, "{s}");
    assert!(
        field(s, "peak_accounted_bytes") <= field(s, "budget_bytes") + ONE_ALLOCATION,
        "{s}"
    );
}

#[test]
fn kill_kills_and_restarts() {
    let v = pressure("kill", "4", "12m", &["--switch-every", "300ms"], None);
    let s = &v[0];
    assert_eq!(s["policy"], "kill");
    common_checks(s);
    assert!(
        field(s, "kills") > 0,
        "the budget holds fewer apps than launched: {s}"
    );
    assert!(
        field(s, "restarts") > 0,
        "switching to a killed app restarts it: {s}"
    );
    assert_eq!(field(s, "swap_bytes_written"), 0, "{s}");
}

#[test]
fn page_swap_writes_and_reads_pages_and_marvin_reclaims_without_killing() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("run");
    // A policy under which arrays go cold within a round and the saver runs often: a
    // tiny run has no time for four working-set rounds before the budget fills.
    let policy = out.path().join("tiny.toml");
    std::fs::write(
        &policy,
        "[coldness]\nwindow_rounds = 1\n[working_set]\nforeground_period = \"100ms\"\n\
         background_period = \"100ms\"\n[saver]\nbackground_period = \"2s\"\n",
    )
    .unwrap();
    let policy = policy.to_str().unwrap().to_string();
    let trace = out.path().join("run.pftrace");
    let trace_arg = trace.to_str().unwrap().to_string();
    let v = pressure(
        "page-swap,marvin",
        "5",
        "15m",
        &["--policy-file", &policy, "--trace", &trace_arg],
        Some(&dir),
    );
    // The trace has a process track per app of each policy and the saver's slices
    // (track names and slice names are plain strings in the protobuf).
    let bytes = std::fs::read(&trace).unwrap();
    let has = |s: &str| bytes.windows(s.len()).any(|w| w == s.as_bytes());
    for name in [
        "page-swap app0",
        "marvin app4",
        "swap write task",
        "Looper dispatch",
    ] {
        assert!(has(name), "the trace lacks {name:?}");
    }
    let (ps, mv) = (&v[0], &v[1]);
    assert_eq!(ps["policy"], "page-swap");
    assert_eq!(mv["policy"], "marvin");
    for s in [ps, mv] {
        common_checks(s);
        assert_eq!(field(s, "kills"), 0, "{s}");
        assert_eq!(field(s, "peak_alive"), 5, "every app stays alive: {s}");
    }
    assert!(field(ps, "swap_bytes_written") > 0, "{ps}");
    assert!(field(ps, "swap_bytes_read") > 0, "{ps}");
    assert!(
        field(ps, "gc_faults") > 0,
        "a collector over swapped pages faults: {ps}"
    );
    assert!(
        field(mv, "swap_bytes_written") > 0,
        "the saver writes checkpoints: {mv}"
    );
    assert!(field(mv, "reclaim_requests") > 0, "{mv}");
    assert_eq!(
        field(mv, "gc_faults"),
        0,
        "the bookmarking collector faults nothing: {mv}"
    );
    // The outputs: summary, series and the plots.
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary.as_array().unwrap().len(), 2);
    for key in [
        "policy",
        "peak_alive",
        "peak_active",
        "final_active",
        "kills",
        "restarts",
        "failed_verifications",
        "swap_bytes_written",
        "swap_bytes_read",
        "gc_faults",
    ] {
        assert!(summary[0].get(key).is_some(), "summary.json lacks {key}");
    }
    let csv = std::fs::read_to_string(dir.join("series.csv")).unwrap();
    assert!(csv.starts_with("policy,t_s,alive,active"));
    assert!(csv.lines().any(|l| l.starts_with("marvin,")));
    for f in [
        "active_apps.svg",
        "active_apps.png",
        "resident.svg",
        "resident.png",
    ] {
        assert!(std::fs::metadata(dir.join(f)).unwrap().len() > 0, "{f}");
    }
}

#[test]
fn bad_settings_are_clear_errors() {
    let o = marvin()
        .args(["pressure", "--policy", "magic"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown policy 'magic'"));
    let o = marvin()
        .args(["pressure", "--budget", "lots"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("invalid size"));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[saver]\nbudgett = \"1s\"\n").unwrap();
    let o = marvin()
        .args(["pressure", "--policy-file"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("budgett"),
        "the error names the key: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn policy_show_prints_a_policy_that_parses_back() {
    let o = marvin().args(["policy", "show"]).output().unwrap();
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p.toml");
    std::fs::write(&f, &text).unwrap();
    let o = marvin().args(["policy", "check"]).arg(&f).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8(o.stdout).unwrap(), text);
}
