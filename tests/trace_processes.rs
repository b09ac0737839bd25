//! `marvin pressure --trace` in the process mode: one Perfetto trace of the whole run, the
//! System's own tracks and every app process's, decoded with Perfetto's published schema.
//!
//! `tests/trace/processes.py` parses the file with the `perfetto` Python package's
//! `perfetto_trace_pb2` (installed with pip if missing), checks it as a merged trace of
//! several writers (a sequence per process, unique track uuids, valid nesting per track in
//! time order) and prints a JSON summary this test checks. A tiny run (three apps, kill and
//! marvin, seconds); it needs root and a memory controller, and elsewhere says why it skips.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod tiny_pressure;
use tiny_pressure::TINY_CLOCK;

#[path = "../runtime/tests/support/perfetto.rs"]
mod perfetto;

use perfetto::{ensure_perfetto, python};

/// The reasons the killer may give in these runs.
const KILL_REASONS: [&str; 3] = ["headroom", "nothing-reclaimable", "reclaim-behind"];

/// Why the process mode cannot run here, if it cannot.
fn skip_reason() -> Option<String> {
    marvin_machine::cgroup::Hierarchy::available()
        .err()
        .map(|e| e.to_string())
}

fn summarize(trace: &Path) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/trace/processes.py");
    let out = python(&[script.to_str().unwrap(), trace.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "the trace does not pass Perfetto's schema checks: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("summary JSON")
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// How many slices named `name` track `track` ("PID/THREAD") holds.
fn slice_count(s: &Value, track: &str, name: &str) -> u64 {
    s["slices"][track][name].as_u64().unwrap_or(0)
}

#[test]
fn a_process_mode_trace_holds_the_system_and_every_app_process() {
    if let Some(why) = skip_reason() {
        println!("skipped: the process mode cannot run here: {why}");
        return;
    }
    ensure_perfetto();
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("run.perfetto-trace");
    let swap = tmp.path().join("swap");
    std::fs::create_dir(&swap).unwrap();
    // Three apps in a budget for about two: kills under kill, reclaim passes under marvin.
    let child = Command::new(env!("CARGO_BIN_EXE_marvin"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "pressure",
            "--mode",
            "processes",
            "--quiet",
            "--json",
            "--policy",
            "kill,marvin",
            "--apps",
            "3",
            "--budget",
            "24m",
            "--swap-size",
            "256m",
            "--launch-every",
            "700ms",
            "--duration",
            "3s",
            "--launches",
            "2",
            "--launch-gap",
            "300ms",
            "-D",
            "ARRAYS=96",
            "--swap-dir",
        ])
        .arg(&swap)
        .arg("--trace")
        .arg(&trace)
        .args(TINY_CLOCK)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run marvin pressure");
    let system_pid = i64::from(child.id());
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "marvin pressure failed: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        std::fs::metadata(&trace).unwrap().len() > 0,
        "the trace is not empty"
    );
    assert_eq!(
        std::fs::read_dir(&swap).unwrap().count(),
        0,
        "the apps' trace files went with the run's directories"
    );
    let s = summarize(&trace);
    let processes = s["processes"].as_array().unwrap();

    // The System: one process track for both policies, its threads and counters.
    let systems: Vec<&Value> = processes
        .iter()
        .filter(|p| p["name"] == "marvin System")
        .collect();
    assert_eq!(systems.len(), 1, "{processes:?}");
    let system = systems[0];
    assert_eq!(system["pid"].as_i64(), Some(system_pid));
    let threads = strs(&system["threads"]);
    for t in ["control loop", "app spawner", "reclaimer"] {
        assert!(threads.contains(&t.to_string()), "{threads:?}");
    }
    let control = format!("{system_pid}/control loop");
    for policy in ["kill", "marvin"] {
        assert_eq!(
            slice_count(&s, &control, &format!("policy {policy}")),
            1,
            "{}",
            s["slices"][&control]
        );
    }
    assert!(slice_count(&s, &control, "turn") > 10);
    assert!(slice_count(&s, &control, "killer wait") > 10);
    for name in [
        "group usage bytes",
        "group working-set bytes",
        "apps alive",
        "app in front",
    ] {
        let values = system["counters"][name].as_array().unwrap();
        assert!(!values.is_empty(), "counter {name} has values");
    }
    let usage: Vec<f64> = system["counters"]["group usage bytes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(
        usage.iter().any(|&u| u > 1e6) && usage.iter().all(|&u| u <= f64::from(25u32 << 20)),
        "the group's usage, within its limit (and the kernel's forced charges): {usage:?}"
    );
    // Launches and foreground switches, and every kill with its victim and reason.
    let instants = strs(&s["instants"][&control]);
    for id in 0..3 {
        assert_eq!(
            instants
                .iter()
                .filter(|i| **i == format!("launch app{id}"))
                .count(),
            2,
            "launched once per policy: {instants:?}"
        );
    }
    assert!(instants.iter().any(|i| i.starts_with("foreground app")));
    for kill in instants.iter().filter(|i| i.starts_with("kill ")) {
        let (victim, why) = kill["kill ".len()..].split_once(' ').unwrap();
        assert!(victim.starts_with("app"), "{kill}");
        let why = why.trim_start_matches('(').trim_end_matches(')');
        assert!(KILL_REASONS.contains(&why), "{kill}");
    }
    // Reclaim passes say what they took, and from whom.
    let reclaimer = format!("{system_pid}/reclaimer");
    assert!(
        slice_count(&s, &reclaimer, "reclaim pass") > 0,
        "{}",
        s["slices"][&reclaimer]
    );
    let args: Vec<String> = s["annotations"]["reclaim pass"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a[0].as_str().unwrap().to_string())
        .collect();
    assert_eq!(args, ["asked", "bytes", "apps", "ended"]);

    // The app processes: each life its own process and sequence, started by the spawner.
    let started: BTreeSet<i64> = s["pids"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e[0].as_str().unwrap().starts_with("start app"))
        .map(|e| e[1].as_i64().unwrap())
        .collect();
    let apps: Vec<&Value> = processes
        .iter()
        .filter(|p| p["pid"] != system_pid)
        .collect();
    let mut sequences = BTreeMap::new();
    for app in &apps {
        let name = app["name"].as_str().unwrap();
        assert!(
            name.starts_with("kill app") || name.starts_with("marvin app"),
            "{name}"
        );
        let pid = app["pid"].as_i64().unwrap();
        assert!(
            started.contains(&pid),
            "{name} ({pid}) was started: {started:?}"
        );
        assert!(strs(&app["threads"]).contains(&"main".to_string()), "{app}");
        assert!(
            sequences
                .insert(app["sequence"].as_u64().unwrap(), pid)
                .is_none(),
            "a sequence of its own: {app}"
        );
        assert!(
            s["slices"][format!("{pid}/main")]
                .as_object()
                .is_some_and(|m| m.keys().any(|k| k.starts_with("Looper dispatch: "))),
            "{name} ({pid}) traced its looper"
        );
    }
    assert_ne!(sequences.len(), 0);
    assert!(!sequences.contains_key(&system["sequence"].as_u64().unwrap()));
    for policy in ["kill", "marvin"] {
        let lives: BTreeSet<&str> = apps
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .filter(|n| n.starts_with(&format!("{policy} app")))
            .collect();
        assert!(lives.len() >= 2, "{policy}: {lives:?}");
    }
    // Only a process that died inside a slice leaves it open: the System's never.
    let died: BTreeSet<i64> = s["pids"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e[0].as_str().unwrap().starts_with("start "))
        .map(|e| e[1].as_i64().unwrap())
        .collect();
    for track in s["open"].as_object().unwrap().keys() {
        let pid: i64 = track.split('/').next().unwrap().parse().unwrap();
        assert!(
            died.contains(&pid),
            "{track} left slices open: {}",
            s["open"]
        );
    }
}
