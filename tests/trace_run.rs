//! `marvin run --trace`: the trace of a MASM app with messages, a spawned thread, monitor
//! contention, marks and a collection, decoded with Perfetto's own published schema.
//!
//! `tests/trace/summary.py` parses the file with the `perfetto` Python package's
//! `perfetto_trace_pb2` (installed with pip if missing), runs the structural checks of
//! `runtime/tests/decode_trace.py` (every slice closed, valid nesting per track, sorted
//! timestamps, known tracks) and prints a JSON summary this test checks.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

#[path = "../runtime/tests/support/perfetto.rs"]
mod perfetto;

use perfetto::{ensure_perfetto, python};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn marvin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_marvin"))
        .args(args)
        .output()
        .expect("run marvin")
}

/// Runs the app with `--trace` and returns the decoded summary and marvin's stdout.
fn traced_run(extra: &[&str]) -> (Value, String) {
    ensure_perfetto();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("app.perfetto-trace");
    let program = root().join("tests/trace/app.masm");
    let mut args = vec![
        "run",
        program.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let run = marvin(&args);
    assert!(
        run.status.success(),
        "marvin run failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary = summarize(&trace);
    (summary, String::from_utf8_lossy(&run.stdout).into_owned())
}

fn summarize(trace: &Path) -> Value {
    let script = root().join("tests/trace/summary.py");
    let out = python(&[script.to_str().unwrap(), trace.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "the trace does not pass Perfetto's schema checks: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("summary JSON")
}

fn track<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no track {name:?} in {}", s["tracks"]))
}

/// The (depth, name) of every slice on a thread track, in begin order.
fn slices(s: &Value, thread: &str) -> Vec<(u64, String)> {
    s["slices"][thread]
        .as_array()
        .map(|v| {
            v.iter()
                .map(|x| (x[0].as_u64().unwrap(), x[1].as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn a_traced_run_has_tracks_slices_instants_and_counters() {
    let (s, stdout) = traced_run(&[]);
    assert_eq!(stdout, "1\n2\n", "the program ran as without tracing");

    // One process track named after the program; thread tracks under it.
    let process = track(&s, "app");
    assert_eq!(process["kind"], "process");
    let pid = process["pid"].as_i64().unwrap();
    let main = track(&s, "main");
    let worker = track(&s, "worker");
    for t in [main, worker] {
        assert_eq!(t["kind"], "thread");
        assert_eq!(t["pid"].as_i64(), Some(pid));
        assert_eq!(t["parent"], process["uuid"]);
    }
    assert_eq!(
        main["tid"].as_i64(),
        Some(pid),
        "the looper runs on the main thread"
    );
    let worker_tid = worker["tid"].as_i64().unwrap();
    assert_ne!(worker_tid, pid);

    // The main thread: three dispatches; in the first, the monitor contention (named as the
    // Android runtime names it, with the worker as owner) and the collection with its phases.
    let contention = format!(
        "monitor contention with owner worker ({worker_tid}) waiters=0 blocking from main("
    );
    let main_slices = slices(&s, "main");
    let shape: Vec<(u64, String)> = main_slices
        .iter()
        .map(|(d, n)| {
            let n = if n.starts_with(&contention) {
                "CONTENTION".to_string()
            } else {
                n.clone()
            };
            (*d, n)
        })
        .collect();
    let expected: Vec<(u64, String)> = [
        (0, "Looper dispatch: main what=0"),
        (1, "CONTENTION"),
        (1, "GC"),
        (2, "suspend all threads"),
        (2, "GC mark"),
        (2, "GC sweep"),
        (0, "Looper dispatch: tick what=1"),
        (0, "Looper dispatch: tick what=2"),
    ]
    .iter()
    .map(|(d, n)| (*d, n.to_string()))
    .collect();
    assert_eq!(shape, expected, "main slices: {main_slices:?}");
    assert!(
        main_slices[1].1.ends_with("app.masm:30)"),
        "{}",
        main_slices[1].1
    );

    // The contention slice covers the blocked time: the worker holds the monitor for 300 ms
    // after main starts waiting for it, so the slice is a real interval inside its dispatch.
    let raw = s["slices"]["main"].as_array().unwrap();
    let (begin, end) = (raw[1][2].as_u64().unwrap(), raw[1][3].as_u64().unwrap());
    assert!(end > begin);
    assert!(raw[0][2].as_u64().unwrap() <= begin && end <= raw[0][3].as_u64().unwrap());

    // Marks are instants; the boost of the worker (or its refusal without privilege) too.
    let main_instants = strings(&s["instants"]["main"]);
    let marks: Vec<_> = main_instants
        .iter()
        .filter(|n| n.starts_with("mark "))
        .collect();
    assert_eq!(marks, ["mark start", "mark tick", "mark tick"]);
    let boosted = format!("fast track worker ({worker_tid}) nice ");
    let denied = format!("fast track denied for {worker_tid}");
    if main_instants.iter().any(|n| n.starts_with(&boosted)) {
        assert_eq!(
            strings(&s["instants"]["worker"]).len(),
            1,
            "the worker's priority came back when it released the monitor"
        );
        assert!(strings(&s["instants"]["worker"])[0].starts_with("fast track end, nice "));
    } else {
        assert!(
            main_instants.contains(&denied),
            "neither a boost nor a refusal: {main_instants:?}"
        );
    }

    // Counters: pending messages at each dispatch; resident and working-set bytes after the
    // collection (the one Lock object is live and was read and written).
    for name in [
        "pending messages",
        "resident bytes",
        "working-set bytes",
        "swap file live bytes",
    ] {
        let t = track(&s, name);
        assert_eq!(t["kind"], "counter");
        assert_eq!(t["parent"], process["uuid"]);
    }
    let values = |name: &str| -> Vec<f64> {
        s["values"][name]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_f64().unwrap()).collect())
            .unwrap_or_default()
    };
    assert_eq!(
        values("pending messages").len(),
        3,
        "one sample per dispatch"
    );
    assert_eq!(values("pending messages")[0], 0.0);
    let resident = values("resident bytes");
    assert_eq!(resident.len(), 1);
    assert!(resident[0] > 0.0);
    assert_eq!(values("working-set bytes"), resident);
}

#[test]
fn an_untraced_run_writes_no_trace_and_a_bad_path_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let program = root().join("tests/trace/app.masm");
    let run = marvin(&["run", program.to_str().unwrap(), "-D", "HOLD_MS=1"]);
    assert!(run.status.success());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let bad = dir.path().join("no/such/dir/trace");
    let run = marvin(&[
        "run",
        program.to_str().unwrap(),
        "-D",
        "HOLD_MS=1",
        "--trace",
        bad.to_str().unwrap(),
    ]);
    // Checked before the program runs: a usage error naming the flag and the path.
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.starts_with(&format!(
            "error: --trace {}: cannot be written",
            bad.display()
        )),
        "{stderr}"
    );
}
