//! `marvin bench queue --only` runs just the named scenarios, for both queues, and
//! refuses a name that matches none; `--plot` draws the dispatch delays. Speed is not
//! checked here.

use std::process::Command;

use serde_json::Value;

fn marvin(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_marvin"))
        .args(args)
        .output()
        .expect("run marvin")
}

/// `marvin bench queue --only ONLY --reps 1` and `extra`; fails unless it succeeds.
/// Returns stdout, and stdout and stderr together (where the notes are).
fn bench_queue_once(only: &str, extra: &[&str]) -> (Vec<u8>, String) {
    let mut args = vec!["bench", "queue", "--only", only, "--reps", "1"];
    args.extend_from_slice(extra);
    let out = marvin(&args);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "marvin {args:?}: {said}");
    (out.stdout, said)
}

#[test]
fn only_runs_the_matching_scenario_for_both_queues() {
    let (stdout, _) = bench_queue_once("single-thread", &["--json"]);
    let samples: Value = serde_json::from_slice(&stdout).expect("JSON output");
    let samples = samples.as_array().expect("an array of results");
    let mut seen: Vec<(&str, &str)> = samples
        .iter()
        .map(|s| {
            assert!(s["median_ns"].as_f64().unwrap() > 0.0, "{s}");
            (s["scenario"].as_str().unwrap(), s["impl"].as_str().unwrap())
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("single-thread enqueue+remove", "deliqueue"),
            ("single-thread enqueue+remove", "legacy")
        ]
    );
    let legacy = samples.iter().find(|s| s["impl"] == "legacy").unwrap();
    assert_eq!(legacy["ratio_to_baseline"].as_f64(), Some(1.0), "{legacy}");
}

#[test]
fn only_with_an_unknown_name_fails_and_lists_the_scenarios() {
    let out = marvin(&["bench", "queue", "--only", "no such scenario"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("matches no scenario"), "{err}");
    assert!(err.contains("fifo 1x100000"), "{err}");
    assert!(out.stdout.is_empty(), "nothing measured");
}

#[test]
fn plot_draws_the_dispatch_delays_and_says_so_when_there_are_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plots = dir.path().join("plots");
    let plots_arg = plots.to_str().expect("utf-8 path");
    bench_queue_once("dispatch delay (8", &["--plot", plots_arg]);
    let svg = std::fs::read_to_string(plots.join("dispatch_delay.svg")).expect("the SVG");
    assert!(
        svg.contains("deliqueue, normal looper"),
        "both queues drawn"
    );
    assert!(svg.contains("legacy, normal looper"));
    assert!(plots.join("dispatch_delay.png").is_file());

    let none = dir.path().join("none");
    let (_, said) = bench_queue_once(
        "single-thread",
        &["--plot", none.to_str().expect("utf-8 path")],
    );
    assert!(
        said.contains("no figure"),
        "notes (on stdout with the table): {said}"
    );
    assert!(!none.exists(), "nothing drawn, nothing created");
}

#[test]
fn a_looper_slice_outside_the_kernels_range_is_refused() {
    for bad in ["50", "100001", "-1", "fast"] {
        let arg = format!("--looper-slice-us={bad}");
        let out = marvin(&["bench", "queue", &arg]);
        assert!(!out.status.success(), "--looper-slice-us {bad} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--looper-slice-us"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty(), "nothing measured");
    }
}

#[test]
fn the_grouped_scenario_records_the_looper_slice_of_both_queues() {
    let (stdout, said) = bench_queue_once("Android", &["--json", "--looper-slice-us", "200"]);
    let samples: Value = serde_json::from_slice(&stdout).expect("JSON output");
    let samples = samples.as_array().expect("an array of results");
    if samples.is_empty() {
        assert!(said.contains("not run"), "no result and no reason: {said}");
        eprintln!("skipped: the grouped scenario did not run here: {said}");
        return;
    }
    let mut seen: Vec<&str> = samples
        .iter()
        .map(|s| {
            assert_eq!(s["looper_slice_us"].as_u64(), Some(200), "{s}");
            s["impl"].as_str().unwrap()
        })
        .collect();
    seen.sort();
    assert_eq!(seen, ["deliqueue", "legacy"]);
}
