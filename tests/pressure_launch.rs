//! The launch phase on a tiny in-process run per policy: launches happen and are
//! classified (kill's are cold restarts, marvin's warm ones restore objects, eagerly
//! or on demand), every launch has a latency and ran on the real-time UI thread of the
//! app in front, and the figures are where they are documented (summary.json,
//! launches.csv, launch_cdf.svg).

use std::process::Command;

use serde_json::Value;

mod tiny_pressure;
use tiny_pressure::{summaries, TINY_CLOCK};

const LAUNCHES: u64 = 6;

fn run(out: &std::path::Path) -> Vec<Value> {
    let launches = LAUNCHES.to_string();
    let mut args = vec![
        "--mode",
        "in-process",
        "--policy",
        "kill,page-swap,marvin-eager,marvin-on-demand",
        "--apps",
        "6",
        "--budget",
        "12m",
        "--launch-every",
        "1s",
        "--duration",
        "6s",
        "-D",
        "ARRAYS=48",
        "--launches",
        &launches,
        "--launch-gap",
        "100ms",
        "--out",
        out.to_str().expect("a UTF-8 path"),
    ];
    args.extend(TINY_CLOCK);
    summaries(&args)
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

fn records<'a>(s: &'a Value, class: &str) -> Vec<&'a Value> {
    s["launch_records"]
        .as_array()
        .map(|a| a.iter().filter(|r| r["class"] == class).collect())
        .unwrap_or_default()
}

#[test]
fn launches_are_timed_and_classified_per_policy() {
    let out = tempfile::tempdir().unwrap();
    let fifo_ui = marvin_machine::sys::RealtimeThread::enter(1).is_ok();
    let summaries = run(out.path());
    let by = |name: &str| {
        summaries
            .iter()
            .find(|s| s["policy"] == name)
            .unwrap_or_else(|| panic!("no {name} in {summaries:?}"))
    };
    for s in &summaries {
        let policy = s["policy"].as_str().unwrap();
        assert_eq!(u(s, "crashed_apps"), 0, "{policy}: {s}");
        assert_eq!(u(s, "failed_verifications"), 0, "{policy}");
        let n = u(s, "launches");
        assert!(n >= 1, "{policy} made no launch: {s}");
        assert_eq!(
            n + u(s, "launches_unfinished"),
            LAUNCHES,
            "{policy}: every planned launch was made"
        );
        let per_class: u64 = ["hot", "warm", "cold"]
            .iter()
            .map(|c| u(&s[format!("launch_{c}")], "count"))
            .sum();
        assert_eq!(per_class, n, "{policy}: every launch has one class");
        let recs = s["launch_records"].as_array().unwrap();
        assert_eq!(recs.len() as u64, n);
        for r in recs {
            assert!(
                u(r, "latency_ns") > 0,
                "{policy}: a launch without a latency: {r}"
            );
            // The app in front has its looper raised (where the machine allows
            // real-time threads) before a cached app is told.
            if fifo_ui && r["class"] != "cold" {
                assert_eq!(r["ui_fifo"], true, "{policy}: {r}");
            }
        }
        let (p50, p90, p99) = (
            u(s, "launch_p50_ns"),
            u(s, "launch_p90_ns"),
            u(s, "launch_p99_ns"),
        );
        assert!(
            0 < p50 && p50 <= p90 && p90 <= p99,
            "{policy}: {p50} {p90} {p99}"
        );
        let max = recs.iter().map(|r| u(r, "latency_ns")).max().unwrap();
        assert!(p99 <= max);
    }

    // Kill: the apps brought back had been killed, so they start cold; a cached app it
    // had not killed yet is hot, never warm (nothing of it was ever swapped).
    let kill = by("kill");
    assert!(
        !records(kill, "cold").is_empty(),
        "kill gave no cold launch: {kill}"
    );
    assert!(
        records(kill, "warm").is_empty(),
        "kill has nothing to bring back"
    );
    assert!(u(kill, "restarts") >= records(kill, "cold").len() as u64);

    // Page swap: a warm launch read pages back from the swap file.
    let page = by("page-swap");
    for r in records(page, "warm") {
        assert!(u(r, "swap_read_bytes") > 0, "{r}");
    }

    // Marvin, eager: warm launches restored objects before the app ran; on demand:
    // they faulted objects in as the frame touched them.
    let eager = by("marvin-eager");
    assert!(
        records(eager, "warm")
            .iter()
            .any(|r| u(r, "restored_objects") > 0),
        "no eager restore in a launch: {eager}"
    );
    let lazy = by("marvin-on-demand");
    let lazy_warm = records(lazy, "warm");
    assert!(
        lazy_warm.iter().any(|r| u(r, "object_faults") > 0),
        "no object fault in a launch: {lazy}"
    );
    assert!(
        lazy_warm.iter().all(|r| u(r, "restored_objects") == 0),
        "on demand restores nothing eagerly"
    );

    // The per-launch CSV and the figure.
    let csv = std::fs::read_to_string(out.path().join("launches.csv")).unwrap();
    let total: u64 = summaries.iter().map(|s| u(s, "launches")).sum();
    assert_eq!(
        csv.lines().count() as u64,
        total + 1,
        "a header and a row per launch"
    );
    assert!(csv
        .lines()
        .any(|l| l.starts_with("kill,") && l.contains(",cold,")));
    let svg = std::fs::read_to_string(out.path().join("launch_cdf.svg")).unwrap();
    for s in &summaries {
        assert!(svg.contains(s["policy"].as_str().unwrap()));
    }
}

#[test]
fn no_launch_phase_with_zero_launches_or_a_round_robin() {
    for extra in [&["--launches", "0"][..], &["--switch-every", "300ms"][..]] {
        let o = Command::new(env!("CARGO_BIN_EXE_marvin"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args([
                "pressure",
                "--mode",
                "in-process",
                "--quiet",
                "--json",
                "--policy",
                "kill",
                "--apps",
                "2",
                "--budget",
                "64m",
                "--launch-every",
                "300ms",
                "--duration",
                "1s",
                "--time-scale",
                "0.05",
                "-D",
                "ARRAYS=8",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(u(&v[0], "launches"), 0, "{extra:?}");
        assert!(v[0].get("launch_records").is_none());
    }
}

#[test]
fn a_bad_policy_variant_is_a_clear_error() {
    let o = Command::new(env!("CARGO_BIN_EXE_marvin"))
        .args([
            "pressure",
            "--mode",
            "in-process",
            "--policy",
            "marvin-lazy",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("marvin-lazy") && e.contains("marvin-on-demand"),
        "{e}"
    );
}
