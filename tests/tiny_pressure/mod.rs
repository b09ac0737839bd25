//! What the pressure tests' tiny runs share: `marvin pressure --quiet --json` run from the
//! repository root on a scaled-down clock, its success checked and its summaries parsed.

use std::process::Command;

use serde_json::Value;

/// The tiny runs' clock and collector: a twentieth of real time, at most 256 KiB of free
/// heap kept after a collection, a sample every 100 ms; in the process mode no settle
/// between policies (waiting for the disks to rest is for measurements, and a test
/// suite keeps the disks busy; `pressure_processes.rs` turns it back on with a later
/// `--settle wait`).
pub const TINY_CLOCK: [&str; 8] = [
    "--time-scale",
    "0.05",
    "--gc-max-free",
    "256k",
    "--sample-every",
    "100ms",
    "--settle",
    "off",
];

/// Runs `marvin pressure --quiet --json ARGS` in the repository root, asserts that it
/// succeeded (showing its status and stderr if not) and returns the summaries it printed.
// `pressure_processes.rs` runs its own child (it needs the pid) and `experiment.rs` runs
// in other directories: they take the clock only.
#[allow(dead_code)]
pub fn summaries(args: &[&str]) -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_marvin"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["pressure", "--quiet", "--json"])
        .args(args)
        .output()
        .expect("run marvin pressure");
    assert!(
        o.status.success(),
        "marvin pressure failed: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("summary JSON on stdout");
    let runs = v.as_array().expect("an array of summaries").clone();
    for s in runs.iter().filter(|s| s["mode"] == "processes") {
        process_summary_invariants(s);
    }
    runs
}

/// What holds in every process-mode summary: the deaths are the sum of their parts, the
/// collections' major faults are among all major faults, and the control loop turned
/// ([`summaries`] checks every one it reads).
pub fn process_summary_invariants(s: &Value) {
    let field = |k: &str| {
        s[k].as_u64()
            .unwrap_or_else(|| panic!("summary lacks {k}: {s}"))
    };
    assert_eq!(
        field("deaths"),
        field("lmk_kills")
            + field("oom_killed_apps")
            + field("signalled_apps")
            + field("crashed_apps"),
        "every death is counted once: {s}"
    );
    assert!(
        field("gc_major_faults") <= field("major_faults"),
        "the collections' major faults are among all of them: {s}"
    );
    assert!(field("control_gap_max_ns") > 0, "{s}");
}
