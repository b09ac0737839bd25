//! The pressure experiment's footprint figures on a tiny run of each policy: the
//! process's resident memory broken down by kind (anonymous, file-backed, shared) in
//! `series.csv` and `summary.json`, each kind consistent with the total, and what the
//! runtime holds for the apps charged in the accounted memory.

use std::collections::HashMap;

use serde_json::Value;

mod tiny_pressure;
use tiny_pressure::{summaries, TINY_CLOCK};

/// Kernel counters are kept in pages and reported in kB: the kinds of one sample add
/// up to its total within a page per kind.
const PAGE: u64 = 4096;

/// Runs a tiny `marvin pressure` of every policy, writing its outputs into `out`.
fn tiny_run(out: &std::path::Path) -> Vec<Value> {
    let mut args = vec![
        "--mode",
        "in-process",
        "--policy",
        "kill,page-swap,marvin",
        "--apps",
        "3",
        "--budget",
        "12m",
        "--launch-every",
        "500ms",
        "--duration",
        "3s",
        "-D",
        "ARRAYS=48",
        "--out",
        out.to_str().expect("a UTF-8 path"),
    ];
    args.extend(TINY_CLOCK);
    summaries(&args)
}

fn field(s: &Value, k: &str) -> u64 {
    s[k].as_u64()
        .unwrap_or_else(|| panic!("summary lacks {k}: {s}"))
}

#[test]
fn resident_memory_is_broken_down_by_kind_in_series_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let summaries = tiny_run(dir.path());
    assert_eq!(summaries.len(), 3);

    // series.csv: the three kind columns, and in every sample they add up to the total.
    let csv = std::fs::read_to_string(dir.path().join("series.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("series.csv lacks {name}: {header:?}"))
    };
    let (rss, anon, file, shmem) = (
        col("rss_bytes"),
        col("rss_anon_bytes"),
        col("rss_file_bytes"),
        col("rss_shmem_bytes"),
    );
    let mut peaks: HashMap<String, [u64; 4]> = HashMap::new();
    let mut rows = 0;
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let n = |i: usize| -> u64 { f[i].parse().unwrap() };
        let (r, a, fi, s) = (n(rss), n(anon), n(file), n(shmem));
        assert!(
            r > 0 && a > 0 && fi > 0,
            "a live process has anonymous and file pages: {line}"
        );
        assert!(
            (a + fi + s).abs_diff(r) <= 3 * PAGE,
            "anon + file + shmem = rss within a page each: {line}"
        );
        let p = peaks.entry(f[0].to_string()).or_default();
        for (k, v) in [r, a, fi, s].into_iter().enumerate() {
            p[k] = p[k].max(v);
        }
        rows += 1;
    }
    assert!(rows > 0, "series.csv has samples");

    // summary.json (and stdout): the peak of each kind, matching the series' peaks.
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    for (s, w) in summaries.iter().zip(written.as_array().unwrap()) {
        let policy = s["policy"].as_str().unwrap();
        assert_eq!(s, w, "stdout and summary.json agree");
        let p = peaks[policy];
        assert_eq!(field(s, "peak_rss_bytes"), p[0], "{policy}");
        assert_eq!(field(s, "peak_rss_anon_bytes"), p[1], "{policy}");
        assert_eq!(field(s, "peak_rss_file_bytes"), p[2], "{policy}");
        assert_eq!(field(s, "peak_rss_shmem_bytes"), p[3], "{policy}");
        // Each kind peaks at most at the total's peak... of its own sample; together
        // they are at least the total's peak.
        assert!(
            p[1] <= p[0] && p[2] <= p[0] && p[3] <= p[0],
            "{policy}: {p:?}"
        );
        assert!(p[1] + p[2] + p[3] + 3 * PAGE >= p[0], "{policy}: {p:?}");
        // What the runtime holds for the apps is in the accounted memory: charged, at
        // least as much as it held (give or take the transient of a page-out, charged
        // when it ends), and never more than the accounted memory itself.
        let (held, charged) = (
            field(s, "peak_runtime_bytes"),
            field(s, "peak_runtime_charged_bytes"),
        );
        assert!(held > 0 && charged > 0, "{policy}: {held} / {charged}");
        assert!(
            charged + 3 * 64 * 1024 >= held,
            "{policy}: charged {charged} for {held} held"
        );
        assert!(
            charged <= field(s, "peak_accounted_bytes"),
            "{policy}: {charged}"
        );
        let ratio = s["peak_rss_per_accounted"].as_f64().unwrap();
        let expected = p[0] as f64 / field(s, "peak_accounted_bytes") as f64;
        assert!(
            (ratio - expected).abs() < 1e-9,
            "{policy}: {ratio} vs {expected}"
        );
    }
}
