//! The `zram` policy in the process mode, on a tiny run: kernel swap on zram whose
//! compressed pool is charged to the budget (the group's limit lowered by the pool every
//! tick), its pool's figures in the summary, `config.toml` and the table, and nothing
//! left on the machine (zram reset, no groups). The in-process model refuses it. Needs
//! root, a memory controller and a free `/dev/zram0`; elsewhere each test prints why it
//! skips.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod tiny_pressure;
use tiny_pressure::TINY_CLOCK;

const LIMIT: u64 = 48 << 20;

/// The tests that set zram up run one at a time: each checks that the device is free
/// after its run, which another test's run would not leave it.
static ZRAM: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Why the zram policy cannot run here, if it cannot.
fn skip_reason() -> Option<String> {
    if let Err(e) = marvin_machine::cgroup::Hierarchy::available() {
        return Some(format!("the process mode cannot run here: {e}"));
    }
    marvin_machine::swapdev::zram_free()
        .err()
        .map(|e| format!("zram is not free to use: {e}"))
}

/// `marvin pressure --mode processes --policy zram` on the tiny model, writing into `out`.
/// Returns its output and its pid (whose groups must be gone).
fn zram_run(out: &Path, extra: &[&str]) -> (Output, u32) {
    let swap_dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_marvin"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "pressure",
            "--mode",
            "processes",
            "--quiet",
            "--policy",
            "zram",
            "--apps",
            "8",
            "--budget",
            "48m",
            "--swap-size",
            "256m",
            "--launch-every",
            "700ms",
            "--duration",
            "10s",
            "-D",
            "ARRAYS=96",
            "--swap-dir",
        ])
        .arg(swap_dir.path())
        .arg("--out")
        .arg(out)
        .args(TINY_CLOCK)
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run marvin pressure");
    let pid = child.id();
    (child.wait_with_output().unwrap(), pid)
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("lacks {k}: {v}"))
}

/// zram is reset (no size, not swap) and no group of the run is left.
fn nothing_left_behind(pid: u32) {
    let disksize = std::fs::read_to_string("/sys/block/zram0/disksize").unwrap();
    assert_eq!(disksize.trim(), "0", "zram0 left set up");
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap();
    assert!(!swaps.contains("/dev/zram0"), "zram left on: {swaps}");
    let h = marvin_machine::cgroup::Hierarchy::available().unwrap();
    let prefix = format!("marvin-run-{pid}-");
    let left: Vec<_> = std::fs::read_dir(&h.parent)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "groups left behind: {left:?}");
}

#[test]
fn zram_charges_its_pool_to_the_budget() {
    let _one = ZRAM.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let (o, pid) = zram_run(out.path(), &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    nothing_left_behind(pid);
    assert!(o.status.success(), "marvin pressure failed: {stderr}");
    // The run said how the pool is charged, among its first lines.
    let first: Vec<&str> = stderr.lines().take(12).collect();
    assert!(
        first
            .iter()
            .any(|l| l.contains("compressed swap charged by the System: zram (lz4)")),
        "{stderr}"
    );
    // The table shows the pool.
    for row in ["zram pool (peak)", "compression ratio", "compressing time"] {
        assert!(stdout.contains(row), "the table lacks {row}: {stdout}");
    }
    let config = std::fs::read_to_string(out.path().join("config.toml")).unwrap();
    assert!(config.contains("--zram-algorithm"), "{config}");
    assert!(config.contains("zram_charging"), "{config}");
    let text = std::fs::read_to_string(out.path().join("summary.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let s = &v.as_array().unwrap()[0];
    assert_eq!(s["policy"], "zram");
    tiny_pressure::process_summary_invariants(s);
    assert_eq!(u(s, "failed_verifications"), 0, "{s}");
    assert_eq!(u(s, "kernel_oom_kills"), 0, "{s}");
    assert!(u(s, "swap_out_bytes") > 0, "the kernel swapped: {s}");
    let z = &s["zram"];
    assert_eq!(z["algorithm"], "lz4", "{s}");
    let pool = &z["pool"];
    assert!(u(pool, "pool_peak_bytes") > 0, "the pool held pages: {s}");
    assert!(u(pool, "pages_out") > 0, "{s}");
    assert!(
        z["compression_ratio"].as_f64().is_some_and(|r| r > 1.0),
        "the pages compressed: {s}"
    );
    assert!(pool["compress_time"].is_object(), "compress time: {s}");
    // The charge lowered the limit below the budget as the pool grew ...
    assert!(u(z, "min_limit_bytes") < LIMIT, "{s}");
    // ... and usage plus pool stayed within the budget plus one tick's growth.
    let over = u(z, "max_over_budget_bytes");
    let bound = u(z, "largest_growth_bytes") + u(z, "floor_over_bytes");
    assert!(over <= bound, "over the budget by {over} > {bound}: {s}");
}

#[test]
fn an_algorithm_the_kernel_lacks_is_refused_and_leaves_zram_free() {
    let _one = ZRAM.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let (o, pid) = zram_run(out.path(), &["--zram-algorithm", "no-such-algorithm"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    nothing_left_behind(pid);
    assert!(!o.status.success(), "{stderr}");
    assert!(
        stderr.contains("zram has no compression algorithm \"no-such-algorithm\""),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn the_in_process_model_refuses_zram() {
    let o = Command::new(env!("CARGO_BIN_EXE_marvin"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["pressure", "--mode", "in-process", "--policy", "kill,zram"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("zram does not run in the in-process model")
            && stderr.contains("needs the kernel"),
        "{stderr}"
    );
}
