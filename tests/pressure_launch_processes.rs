//! The launch phase in the process mode, on a tiny run per policy: every launch is
//! timed from the System's command to the app process's frame report and classified;
//! kill's killed apps start cold, marvin's eager restore brings objects back in warm
//! launches, and on demand restores nothing eagerly; each launch says where its time
//! went, and a cached app draws its frame on its real-time UI thread. Needs root and a memory controller; elsewhere it prints why it skips.

use serde_json::Value;

mod tiny_pressure;
use tiny_pressure::{summaries, TINY_CLOCK};

const LAUNCHES: u64 = 8;

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn launches_of_app_processes_are_timed_and_classified() {
    if let Err(why) = marvin_machine::cgroup::Hierarchy::available() {
        eprintln!("skipped: the process mode cannot run here: {why}");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let launches = LAUNCHES.to_string();
    let mut args = vec![
        "--mode",
        "processes",
        "--policy",
        "kill,kernel-swap,marvin-eager,marvin-on-demand",
        "--apps",
        "8",
        "--budget",
        "48m",
        "--swap-size",
        "256m",
        "--launch-every",
        "700ms",
        "--duration",
        "6s",
        "-D",
        "ARRAYS=96",
        "--launches",
        &launches,
        "--launch-gap",
        "100ms",
        "--out",
        out.path().to_str().expect("a UTF-8 path"),
    ];
    args.extend(TINY_CLOCK);
    // Where this machine lets the System run real-time, the app in front draws its
    // frames on a SCHED_FIFO UI thread.
    let fifo_ui = marvin_machine::sys::RealtimeThread::enter(1).is_ok();
    let v = &summaries(&args);
    assert_eq!(v.len(), 4);
    let records = |s: &Value, class: &str| -> Vec<Value> {
        s["launch_records"]
            .as_array()
            .map(|a| a.iter().filter(|r| r["class"] == class).cloned().collect())
            .unwrap_or_default()
    };
    for s in v {
        let policy = s["policy"].as_str().unwrap();
        assert_eq!(s["mode"], "processes");
        assert_eq!(u(s, "crashed_apps"), 0, "{policy}: {s}");
        let n = u(s, "launches");
        assert!(n >= 1, "{policy} made no launch: {s}");
        assert_eq!(n + u(s, "launches_unfinished"), LAUNCHES, "{policy}");
        let per_class: u64 = ["hot", "warm", "cold"]
            .iter()
            .map(|c| u(&s[format!("launch_{c}")], "count"))
            .sum();
        assert_eq!(per_class, n, "{policy}");
        for r in s["launch_records"].as_array().unwrap() {
            assert!(u(r, "latency_ns") > 0, "{policy}: {r}");
            // Where the time went: a cached app read the command, made its transition
            // and drew its frame, in that order, within the launch (a cold one has no
            // command to read: its parts are 0).
            let parts = u(r, "deliver_ns") + u(r, "transition_ns") + u(r, "frame_ns");
            assert!(parts <= u(r, "latency_ns"), "{policy}: {r}");
            if r["class"] != "cold" {
                assert!(u(r, "frame_ns") > 0 && u(r, "run_ns") > 0, "{policy}: {r}");
                if fifo_ui {
                    assert_eq!(r["ui_fifo"], true, "{policy}: {r}");
                }
            } else {
                assert_eq!(parts, 0, "{policy}: {r}");
            }
        }
        assert!(u(s, "launch_p50_ns") <= u(s, "launch_p99_ns"));
    }
    let kill = &v[0];
    assert!(
        !records(kill, "cold").is_empty(),
        "kill gave no cold launch: {kill}"
    );
    for r in records(kill, "warm") {
        // A plain heap has no swap file: only the kernel's faults make it warm.
        assert!(u(&r, "major_faults") > 0, "{r}");
        assert_eq!(u(&r, "restored_objects") + u(&r, "swap_read_bytes"), 0);
    }
    let eager = &v[2];
    assert_eq!(eager["policy"], "marvin-eager");
    assert!(
        records(eager, "warm")
            .iter()
            .any(|r| u(r, "restored_objects") > 0 && u(r, "swap_read_bytes") > 0),
        "no launch restored objects: {eager}"
    );
    let lazy = &v[3];
    assert_eq!(lazy["policy"], "marvin-on-demand");
    for r in lazy["launch_records"].as_array().unwrap() {
        assert_eq!(
            u(r, "restored_objects"),
            0,
            "on demand restores nothing eagerly"
        );
    }
    // A launch's prefetch stays within the policy's budget beyond what its faults read,
    // and only marvin's launches read their swap file ahead.
    for s in v.iter() {
        for r in s["launch_records"].as_array().unwrap() {
            let bytes = u(r, "prefetch_bytes");
            assert!(
                bytes <= marvin_swap::DEFAULT_LAUNCH_PREFETCH_BYTES + u(r, "swap_read_bytes"),
                "{bytes} bytes prefetched: {r}"
            );
            if !s["policy"].as_str().unwrap().starts_with("marvin") {
                assert_eq!(bytes, 0, "{r}");
            }
        }
    }
    let csv = std::fs::read_to_string(out.path().join("launches.csv")).unwrap();
    let total: u64 = v.iter().map(|s| u(s, "launches")).sum();
    assert_eq!(csv.lines().count() as u64, total + 1);
}
