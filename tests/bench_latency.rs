//! `marvin bench atomics` and `marvin bench inversion` at tiny sizes: they run, check their
//! own results (the atomics bench verifies each program's printed total) and print the JSON
//! objects the harness promises. Speed is not checked here.

use std::process::Command;

use serde_json::Value;

fn bench_json(args: &[&str]) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_marvin"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .output()
        .expect("run marvin bench");
    assert!(
        out.status.success(),
        "marvin bench {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    v.as_array().expect("an array of results").clone()
}

#[test]
fn atomics_runs_both_ways_single_and_multi_threaded() {
    let samples = bench_json(&["atomics", "--n", "2000", "--reps", "1", "--threads", "2"]);
    let mut seen: Vec<(String, String)> = samples
        .iter()
        .map(|s| {
            assert!(s["median_ns"].is_number(), "{s}");
            assert!(s["iteration_ns"].as_f64().unwrap() > 0.0, "{s}");
            (
                s["scenario"].as_str().unwrap().to_string(),
                s["impl"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    seen.sort();
    let mut want: Vec<(String, String)> = ["cas x1", "cas x2", "xadd x1", "xadd x2"]
        .iter()
        .flat_map(|sc| ["by-name", "resolved"].map(|i| (sc.to_string(), i.to_string())))
        .collect();
    want.sort();
    assert_eq!(seen, want);
}

#[test]
fn inversion_reports_every_mode_with_percentiles_counts_and_overhead() {
    let samples = bench_json(&[
        "inversion",
        "--duration-ms",
        "150",
        "--reps",
        "1",
        "--medium",
        "1",
        "--low",
        "1",
        "--sections",
        "20",
    ]);
    let impls: Vec<&str> = samples
        .iter()
        .map(|s| s["impl"].as_str().unwrap())
        .collect();
    assert_eq!(impls, ["off", "inherit", "fasttrack"]);
    for s in &samples {
        assert_eq!(s["scenario"], "looper blocking on a monitor");
        for key in ["p99_ns", "p999_ns", "cpu_overhead"] {
            assert!(s[key].is_number() || s[key].is_null(), "{key} in {s}");
        }
        assert!(s["count"].is_u64(), "{s}");
        assert!(s["dispatches"].as_u64().unwrap() > 0, "{s}");
        // The same low-priority workload in every mode: done or reported as not done.
        let sections = s["sections"].as_u64().unwrap() + s["sections_not_done"].as_u64().unwrap();
        assert_eq!(sections, 20, "{s}");
        assert!(s["count_per_1k_dispatches"].as_f64().unwrap() >= 0.0, "{s}");
        assert!(s["round_ms"].as_f64().unwrap() >= 150.0, "{s}");
        let overhead = s["cpu_overhead"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&overhead), "{s}");
    }
    assert_eq!(
        samples[0]["cpu_overhead"].as_f64(),
        Some(0.0),
        "off does nothing"
    );
}
