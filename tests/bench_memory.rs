//! `marvin bench reclaim|interpose|faults|alloc` at their `--quick` sizes with one
//! repetition: each runs, checks its own results (restored and walked arrays hold the
//! right values, both interpose runs do the same work) and prints the JSON objects the
//! harness promises. Speed is not checked here.

use std::process::Command;

use serde_json::Value;

fn bench_json(name: &str) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_marvin"))
        .args(["bench", name, "--quick", "--json", "--reps", "1"])
        .output()
        .expect("run marvin bench");
    assert!(
        out.status.success(),
        "marvin bench {name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    let samples = v.as_array().expect("an array of results").clone();
    assert!(!samples.is_empty(), "{name}: no results");
    for s in &samples {
        assert!(s["scenario"].is_string(), "{s}");
        assert!(s["impl"].is_string(), "{s}");
        assert!(s["median_ns"].as_f64().is_some_and(|t| t > 0.0), "{s}");
    }
    samples
}

/// Whether a row is one of the compressed checkpoints' restores (`..., compress CODEC`).
fn compressed(s: &Value) -> bool {
    s["scenario"].as_str().unwrap().contains("compress")
}

/// The page cache a restore row's scenario starts from: `warm` or `cold`.
fn cache(s: &Value) -> &'static str {
    let scenario = s["scenario"].as_str().unwrap();
    if scenario.contains(" warm") {
        "warm"
    } else {
        assert!(scenario.contains(" cold"), "{s}");
        "cold"
    }
}

/// The measured rows (published figures are rows too, marked `"measured": false`).
fn measured(samples: &[Value]) -> Vec<&Value> {
    samples
        .iter()
        .filter(|s| s["measured"].as_bool() != Some(false))
        .collect()
}

#[test]
fn reclaim_reports_both_reclaimers_and_every_restore_with_bytes() {
    let samples = bench_json("reclaim");
    let rows = measured(&samples);
    let is = |s: &Value, scenario: &str, imp: &str| {
        s["scenario"].as_str().unwrap().starts_with(scenario) && s["impl"] == imp
    };
    // The kernel's own cost, its drop of the same pages (one madvise per region they
    // span, no more calls than the coalesced reclaim's), measured alongside, with one
    // madvise of as many fresh pages beside it.
    let floors: Vec<_> = rows
        .iter()
        .filter(|s| is(s, "reclaim", "kernel-madvise-floor"))
        .collect();
    assert_eq!(floors.len(), 2, "one floor per size");
    for s in &floors {
        let calls = s["madvise_calls"].as_u64().unwrap();
        let ours = rows
            .iter()
            .find(|r| r["scenario"] == s["scenario"] && r["impl"] == "marvin")
            .and_then(|r| r["madvise_calls"].as_u64())
            .unwrap();
        assert!(calls >= 1 && calls <= ours, "{s}");
        assert!(
            s["fresh_pages_ms"].as_f64().is_some_and(|ms| ms > 0.0),
            "{s}"
        );
    }
    let reclaims: Vec<_> = rows
        .iter()
        .filter(|s| is(s, "reclaim", "marvin") || is(s, "reclaim", "per-object-madvise"))
        .collect();
    assert_eq!(reclaims.len(), 4, "two sizes x two reclaimers");
    for s in &reclaims {
        assert!(s["bytes"].as_u64().is_some_and(|b| b > 0), "{s}");
        let calls = s["madvise_calls"].as_u64().unwrap();
        let objects = s["bytes"].as_u64().unwrap() / 4096;
        if s["impl"] == "per-object-madvise" {
            assert_eq!(calls, objects, "{s}");
        } else {
            assert!(calls < objects, "neighbours coalesce: {s}");
        }
    }
    let restores: Vec<_> = rows
        .iter()
        .filter(|s| is(s, "restore", "marvin") && !compressed(s))
        .collect();
    assert_eq!(restores.len(), 4, "eager/on-fault x warm/cold");
    // The disk's sequential read rate, measured alongside each cold restore.
    let disk: Vec<_> = rows
        .iter()
        .filter(|s| is(s, "restore", "disk-sequential-read"))
        .collect();
    assert_eq!(
        disk.len(),
        2 + 3,
        "one per cold restore, compressed ones too"
    );
    for s in restores.into_iter().chain(disk) {
        assert!(s["bytes"].as_u64().is_some_and(|b| b > 0), "{s}");
        assert!(s["mb_per_s"].as_f64().is_some_and(|r| r > 0.0), "{s}");
    }
    // Cold restores also carry their ratio to the disk floor's reads into fresh memory.
    for s in rows.iter().filter(|s| is(s, "restore", "marvin")) {
        let fresh = s.get("ratio_to_disk_into_fresh_memory");
        assert_eq!(fresh.is_some(), cache(s) == "cold", "{s}");
    }
    // Every reclaim and restore row, floors included, carries each timed round's time
    // (one round here, `--reps 1`), whose median is the row's.
    let timed: Vec<_> = rows
        .iter()
        .filter(|s| {
            let scenario = s["scenario"].as_str().unwrap();
            scenario.starts_with("reclaim") || scenario.starts_with("restore")
        })
        .collect();
    assert!(timed.len() > 20, "{} rows", timed.len());
    for s in timed {
        let rounds = s["rounds_ms"].as_array().unwrap_or_else(|| panic!("{s}"));
        assert_eq!(rounds.len(), 1, "{s}");
        let ms = rounds[0].as_f64().unwrap();
        let median = s["median_ns"].as_f64().unwrap() / 1e6;
        assert!((ms - median).abs() < 1e-6, "{s}");
    }
}

#[test]
fn reclaim_restores_compressed_checkpoints_reading_fewer_bytes_when_they_shrink() {
    let samples = bench_json("reclaim");
    let rows: Vec<_> = measured(&samples)
        .into_iter()
        .filter(|s| s["impl"] == "marvin" && compressed(s))
        .collect();
    assert_eq!(rows.len(), 6, "three kinds of arrays x warm/cold: {rows:?}");
    for s in &rows {
        let (bytes, file) = (
            s["bytes"].as_u64().unwrap(),
            s["file_bytes"].as_u64().unwrap(),
        );
        let scenario = s["scenario"].as_str().unwrap();
        if scenario.contains("workload arrays, compress lz4") {
            assert!(file * 4 < bytes, "the workload's arrays shrink: {s}");
        } else {
            assert!(file >= bytes, "random arrays are stored as they are: {s}");
        }
    }
}

#[test]
fn reclaim_prints_each_row_beside_its_floor() {
    let samples = bench_json("reclaim");
    let rows = measured(&samples);
    let of =
        |imp: &str| -> Vec<&Value> { rows.iter().copied().filter(|s| s["impl"] == imp).collect() };
    // The three floors, under the names the docs and plots use.
    let madvise = of("kernel-madvise-floor");
    let page_cache = of("page-cache-read-floor");
    let disk = of("disk-sequential-read");
    assert_eq!(madvise.len(), 2, "one madvise floor per reclaim size");
    // Two plain restores of each and three of compressed checkpoints.
    assert_eq!(
        page_cache.len(),
        2 + 3,
        "one page-cache floor per warm restore"
    );
    assert_eq!(disk.len(), 2 + 3, "one disk floor per cold restore");
    for s in &page_cache {
        assert_eq!(cache(s), "warm", "{s}");
    }
    for s in &disk {
        assert_eq!(cache(s), "cold", "{s}");
    }
    for s in page_cache.iter().chain(&disk) {
        assert!(s["bytes"].as_u64().is_some_and(|b| b > 0), "{s}");
        assert!(s["mb_per_s"].as_f64().is_some_and(|r| r > 0.0), "{s}");
    }
    // Every measured reclaim and restore row names its floor, which is a row of its
    // scenario, and carries its ratio to it.
    let floors = [
        "kernel-madvise-floor",
        "kernel-punch-hole-floor",
        "page-cache-read-floor",
        "disk-sequential-read",
    ];
    let mut checked = 0;
    for s in &rows {
        let imp = s["impl"].as_str().unwrap();
        if floors.contains(&imp) {
            assert!(
                s.get("ratio_to_floor").is_none(),
                "a floor has no floor: {s}"
            );
            continue;
        }
        let floor = s["floor"]
            .as_str()
            .unwrap_or_else(|| panic!("no floor: {s}"));
        let want = if imp == "memfd-punch-hole" || imp == "external-punch-hole" {
            "kernel-punch-hole-floor"
        } else if s["scenario"].as_str().unwrap().starts_with("reclaim") {
            "kernel-madvise-floor"
        } else if cache(s) == "warm" {
            "page-cache-read-floor"
        } else {
            "disk-sequential-read"
        };
        assert_eq!(floor, want, "{s}");
        assert!(
            rows.iter()
                .any(|f| f["scenario"] == s["scenario"] && f["impl"] == floor),
            "the floor is in the same scenario: {s}"
        );
        assert!(s["ratio_to_floor"].as_f64().is_some_and(|r| r > 0.0), "{s}");
        checked += 1;
    }
    assert_eq!(
        checked,
        8 + 4 + 6,
        "two sizes x four reclaimers, four restores, six of compressed checkpoints"
    );
}

#[test]
fn reclaim_table_has_an_x_floor_column_and_the_plots_draw_the_floors() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_marvin"))
        .args(["bench", "reclaim", "--quick", "--reps", "1", "--plot"])
        .arg(dir.path())
        .output()
        .expect("run marvin bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    let header = table.lines().next().unwrap_or("");
    assert!(header.contains("x floor"), "{table}");
    for imp in [
        "kernel-madvise-floor",
        "page-cache-read-floor",
        "disk-sequential-read",
    ] {
        assert!(table.contains(imp), "{imp} missing: {table}");
    }
    let svg = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert!(svg("reclaim.svg").contains("kernel floor: one madvise"));
    let restore = svg("restore.svg");
    assert!(
        restore.contains("page-cache floor") && restore.contains("disk floor"),
        "{restore}"
    );
}

#[test]
fn interpose_runs_every_share_with_and_without_barriers() {
    let samples = bench_json("interpose");
    assert_eq!(samples.len(), 10, "five shares x two modes");
    for s in &samples {
        let want = s["access_pct"].as_f64().unwrap();
        let got = s["realised_access_pct"].as_f64().unwrap();
        assert!((got - want).abs() < 1.0, "share {got} for {want}: {s}");
    }
}

#[test]
fn faults_walks_with_growing_fault_fractions() {
    let samples = bench_json("faults");
    assert_eq!(samples.len(), 6);
    let objects = samples[0]["objects"].as_u64().unwrap();
    for (s, pct) in samples.iter().zip([0u64, 10, 20, 30, 40, 50]) {
        assert!(s["bytes"].as_u64().is_some_and(|b| b > 0), "{s}");
        assert_eq!(s["faulted_objects"].as_u64().unwrap(), objects * pct / 100);
    }
}

#[test]
fn alloc_reports_free_marvin_and_page_swap_without_kills() {
    let samples = bench_json("alloc");
    let impls: Vec<&str> = samples
        .iter()
        .map(|s| s["impl"].as_str().unwrap())
        .collect();
    assert_eq!(impls, ["free", "marvin", "page-swap"]);
    for s in &samples {
        assert!(s["bytes"].as_u64().is_some_and(|b| b > 0), "{s}");
        assert_eq!(s["kills"], 0, "{s}");
    }
    // Under pressure both swap policies took memory back from the background apps.
    assert!(samples[1]["reclaimed_bytes"].as_u64().unwrap() > 0);
    assert!(samples[2]["reclaimed_bytes"].as_u64().unwrap() > 0);
}
