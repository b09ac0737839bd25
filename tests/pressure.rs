//! The pressure experiment's mechanics, on tiny runs of a few seconds per policy:
//! kill kills (and restarts with a foreground schedule), page-swap writes and reads
//! pages, marvin reclaims without killing, nobody fails verification or crashes, and
//! accounted memory never passes the budget. Every figure is counted the same way for
//! every policy: reclaim latency is one sample per allocation that waited for room,
//! under the same keys, present wherever a policy acted and absent where none had to;
//! a crashed app is counted and its error named; the policy file's reclaimer settings
//! change what the reclaimer takes.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

mod tiny_pressure;
use tiny_pressure::{summaries, TINY_CLOCK};

fn marvin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_marvin"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// A page: each array of the tiny workload is one page run.
const PAGE: u64 = 4096;

/// Runs `marvin pressure` on a tiny model and returns the summaries by policy.
fn pressure(
    policies: &str,
    apps: &str,
    budget: &str,
    extra: &[&str],
    out: Option<&PathBuf>,
) -> Vec<Value> {
    let mut args = vec![
        "--mode",
        "in-process",
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
        "-D",
        "ARRAYS=48",
    ];
    args.extend(TINY_CLOCK);
    args.extend(extra);
    if let Some(dir) = out {
        args.extend(["--out", dir.to_str().expect("a UTF-8 path")]);
    }
    summaries(&args)
}

fn field(s: &Value, k: &str) -> u64 {
    s[k].as_u64()
        .unwrap_or_else(|| panic!("summary lacks {k}: {s}"))
}

fn common_checks(s: &Value) {
    assert_eq!(field(s, "failed_verifications"), 0, "{s}");
    assert!(
        field(s, "verified_arrays") > 0,
        "apps check the arrays they drop: {s}"
    );
    assert_eq!(field(s, "crashed_apps"), 0, "{s}");
    assert_eq!(s["crashes"].as_array().map(Vec::len), Some(0), "{s}");
    // Accounted memory never passes the budget: not at any reservation, not at any
    // sample, and the over-budget figures say so.
    let budget = field(s, "budget_bytes");
    assert_eq!(field(s, "over_budget_events"), 0, "{s}");
    assert_eq!(field(s, "max_over_budget_bytes"), 0, "{s}");
    assert!(field(s, "peak_committed_bytes") <= budget, "{s}");
    assert!(field(s, "peak_accounted_bytes") <= budget, "{s}");
    latency_checks(s);
}

/// Reclaim latency, the same keys and meaning for every policy: one sample per
/// allocation that waited for room, so wherever the policy acted (a kill, a page-out,
/// a reclaim) there are samples, and the percentiles are ordered.
fn latency_checks(s: &Value) {
    let n = field(s, "reclaim_requests");
    let (p50, p99, max) = (
        field(s, "reclaim_p50_ns"),
        field(s, "reclaim_p99_ns"),
        field(s, "reclaim_max_ns"),
    );
    let acted = field(s, "kills") > 0 || field(s, "reclaimed_bytes") > 0;
    if acted {
        assert!(n > 0, "the policy acted, so allocations waited: {s}");
    }
    if n == 0 {
        assert_eq!((p50, p99, max), (0, 0, 0), "{s}");
    } else {
        assert!(p50 <= p99 && p99 <= max && max > 0, "{s}");
    }
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
    assert!(field(ps, "reclaimed_bytes") > 0, "{ps}");
    assert!(field(mv, "reclaimed_bytes") > 0, "{mv}");
    // The default policy takes as much as asked from a victim: far more than a page
    // per call (compare the one-page batch below).
    assert!(
        field(mv, "reclaimed_bytes") > PAGE * field(mv, "reclaim_calls"),
        "{mv}"
    );
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
fn reclaim_latency_is_sampled_only_where_an_allocation_waited() {
    // A budget no app comes near: no policy has anything to do, so no allocation
    // waits, and no policy reports a latency sample (marvin's reclaimer included).
    let v = pressure("kill,page-swap,marvin", "2", "1g", &[], None);
    assert_eq!(v.len(), 3);
    for s in &v {
        common_checks(s);
        for k in [
            "kills",
            "reclaimed_bytes",
            "reclaim_calls",
            "reclaim_requests",
            "reclaim_max_ns",
        ] {
            assert_eq!(field(s, k), 0, "{k}: {s}");
        }
    }
}

#[test]
fn the_policy_files_reclaimer_batch_limits_what_each_victim_gives() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("batch.toml");
    std::fs::write(
        &policy,
        "[coldness]\nwindow_rounds = 1\n[working_set]\nforeground_period = \"100ms\"\n\
         background_period = \"100ms\"\n[saver]\nbackground_period = \"2s\"\n\
         [reclaimer]\nbatch_bytes = 4096\nvictim_order = \"largest-first\"\n",
    )
    .unwrap();
    let v = pressure(
        "marvin",
        "5",
        "15m",
        &["--policy-file", policy.to_str().unwrap()],
        None,
    );
    let s = &v[0];
    common_checks(s);
    assert!(field(s, "reclaimed_bytes") > 0, "{s}");
    // One page per victim per call, as the file says (each array is one page).
    assert!(
        field(s, "reclaimed_bytes") <= PAGE * field(s, "reclaim_calls"),
        "{s}"
    );
}

#[test]
fn an_app_that_fails_is_counted_as_crashed_and_its_error_named() {
    let mut modes = vec!["in-process"];
    // The process mode counts crashes from the apps' exit reports, where it can run.
    match marvin_machine::cgroup::Hierarchy::available() {
        Ok(_) => modes.push("processes"),
        Err(e) => eprintln!("the process mode is skipped: {e}"),
    }
    for mode in modes {
        crash_is_counted_and_named(mode);
    }
}

fn crash_is_counted_and_named(mode: &str) {
    let out = tempfile::tempdir().unwrap();
    let o = marvin()
        .args([
            "pressure",
            "--mode",
            mode,
            "--quiet",
            "--settle",
            "off",
            "--workload",
            "tests/pressure/crash.masm",
            "--policy",
            "marvin",
            "--apps",
            "2",
            "--budget",
            "64m",
            "--launch-every",
            "500ms",
            "--duration",
            "2s",
            "--time-scale",
            "0.05",
            "--sample-every",
            "100ms",
            "--out",
        ])
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap())
            .unwrap();
    let s = &v[0];
    assert_eq!(s["mode"], mode);
    let crashes = s["crashes"].as_array().unwrap();
    if mode == "processes" {
        tiny_pressure::process_summary_invariants(s);
        // A crashed app process starts cold when the launch phase brings it back, as a
        // killed one does, and crashes again: every life is counted, as a death too.
        assert!(
            field(s, "crashed_apps") >= 2,
            "both apps divide by zero: {s}"
        );
        assert!(field(s, "crashed_apps") <= field(s, "restarts") + 2, "{s}");
        assert_eq!(field(s, "deaths"), field(s, "crashed_apps"), "{s}");
    } else {
        assert_eq!(field(s, "crashed_apps"), 2, "both apps divide by zero: {s}");
    }
    assert_eq!(crashes.len() as u64, field(s, "crashed_apps"));
    assert_eq!(field(s, "final_alive"), 0, "{s}");
    assert_eq!(field(s, "kills"), 0, "a crash is not a kill: {s}");
    for c in crashes {
        let e = c["error"].as_str().unwrap();
        assert!(e.contains("division by zero"), "the error is named: {e}");
    }
    // The table counts them and names the error too.
    let crashed = field(s, "crashed_apps").to_string();
    assert!(
        stdout.lines().any(|l| l.starts_with("crashed apps")
            && l.split_whitespace().last() == Some(crashed.as_str())),
        "{stdout}"
    );
    assert!(
        stdout.contains("marvin app0 crashed") && stdout.contains("division by zero"),
        "{stdout}"
    );
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
