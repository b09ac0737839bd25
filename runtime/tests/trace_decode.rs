//! The trace writer's output, decoded by Perfetto's own published schema.
//!
//! The test records a trace (a process, two thread tracks with nested, instant and
//! after-the-fact slices, two counter tracks), writes it, and runs `decode_trace.py`, which
//! parses it with the `perfetto` Python package's `perfetto_trace_pb2` and checks structure
//! and content. The package is installed with pip if it is missing.

use std::path::{Path, PathBuf};
use std::process::Output;

use marvin_runtime::cpuclock::current_tid;
use marvin_runtime::trace::names::{self, CodeLocation};
use marvin_runtime::trace::Tracer;

#[path = "support/perfetto.rs"]
mod perfetto;

use perfetto::{ensure_perfetto, python};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/decode_trace.py")
}

/// Runs the decoder on `trace` (with an expectation file if given); returns its output.
fn decode(trace: &Path, expect: Option<&Path>) -> Output {
    ensure_perfetto();
    let mut args = vec![
        script().to_str().unwrap().to_string(),
        trace.to_str().unwrap().to_string(),
    ];
    if let Some(expect) = expect {
        args.push("--expect".into());
        args.push(expect.to_str().unwrap().into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    python(&args)
}

fn describe(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn perfetto_decodes_the_trace_as_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let tracer = Tracer::new();
    let pid = std::process::id() as i32;
    let process = tracer.process_track(pid, "marvin-test");
    let main_tid = current_tid();
    let main = tracer.thread_track(process, main_tid, "main");
    let backlog = tracer.counter_track(process, names::QUEUE_BACKLOG);
    let heap = tracer.counter_track(main, names::HEAP_BYTES);

    // A worker thread records on its own track.
    let worker_tracer = tracer.clone();
    let worker = std::thread::spawn(move || {
        let tid = current_tid();
        let track = worker_tracer.thread_track(process, tid, "worker");
        let _task = worker_tracer.slice(track, names::SWAP_WRITE_TASK);
        let wait_start = Tracer::now_ns();
        let wait_end = Tracer::now_ns();
        worker_tracer.complete(
            track,
            names::monitor_lock_contention_name(main_tid),
            wait_start,
            wait_end,
        );
        worker_tracer.instant(track, "checkpoint written");
        tid
    });
    let worker_tid = worker.join().unwrap();

    let contention = names::monitor_contention_name(
        "worker",
        worker_tid,
        Some(CodeLocation {
            method: "void Store.update(Item)",
            file: Some("store.masm"),
            line: 30,
        }),
        1,
        Some(CodeLocation {
            method: "Item Store.find(int)",
            file: Some("store.masm"),
            line: 66,
        }),
    );
    tracer.counter(backlog, 0.0);
    {
        let _dispatch = tracer.slice(main, names::LOOPER_DISPATCH);
        tracer.counter(backlog, 3.0);
        {
            let _gc = tracer.slice(main, names::GC);
            tracer.begin(main, names::GC_MARK);
            tracer.instant(main, "vsync");
            tracer.end(main);
            tracer.counter(heap, 1024.5);
        }
        let wait_start = Tracer::now_ns();
        let wait_end = Tracer::now_ns();
        tracer.complete(main, contention.clone(), wait_start, wait_end);
        tracer.counter(backlog, 1.0);
    }

    let trace_path = dir.path().join("run.perfetto-trace");
    tracer.write_to(&trace_path).unwrap();
    let expect = [
        format!("process\t{pid}\tmarvin-test"),
        format!("thread\t{pid}\t{main_tid}\tmain"),
        format!("thread\t{pid}\t{worker_tid}\tworker"),
        format!("counter\tmarvin-test\t{}", names::QUEUE_BACKLOG),
        format!("counter\tmain\t{}", names::HEAP_BYTES),
        format!("slice\tmain\t0\t{}", names::LOOPER_DISPATCH),
        format!("slice\tmain\t1\t{}", names::GC),
        format!("slice\tmain\t2\t{}", names::GC_MARK),
        format!("slice\tmain\t1\t{contention}"),
        "instant\tmain\tvsync".to_string(),
        format!("slice\tworker\t0\t{}", names::SWAP_WRITE_TASK),
        format!(
            "slice\tworker\t1\t{}",
            names::monitor_lock_contention_name(main_tid)
        ),
        "instant\tworker\tcheckpoint written".to_string(),
        format!("value\t{}\t0", names::QUEUE_BACKLOG),
        format!("value\t{}\t3", names::QUEUE_BACKLOG),
        format!("value\t{}\t1", names::QUEUE_BACKLOG),
        format!("value\t{}\t1024.5", names::HEAP_BYTES),
    ]
    .join("\n");
    let expect_path = dir.path().join("expect.tsv");
    std::fs::write(&expect_path, expect).unwrap();

    let out = decode(&trace_path, Some(&expect_path));
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("5 tracks, 6 slices, 2 instants, 4 counter values"),
        "{stdout}"
    );
}

#[test]
fn the_decoder_rejects_broken_traces() {
    let dir = tempfile::tempdir().unwrap();
    let tracer = Tracer::new();
    let main = tracer.thread_track(tracer.process_track(1, "p"), 1, "main");
    tracer.begin(main, "never ended");
    let unended = dir.path().join("unended.perfetto-trace");
    tracer.write_to(&unended).unwrap();
    let out = decode(&unended, None);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("never ended"));

    // A well-formed trace that does not match what it should contain.
    tracer.end(main);
    let ok = dir.path().join("ok.perfetto-trace");
    tracer.write_to(&ok).unwrap();
    assert!(decode(&ok, None).status.success());
    let expect = dir.path().join("expect.tsv");
    std::fs::write(&expect, "slice\tmain\t0\tsomething else\n").unwrap();
    let out = decode(&ok, Some(&expect));
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));

    // Not a trace at all.
    let garbage = dir.path().join("garbage");
    std::fs::write(&garbage, [0xff_u8; 16]).unwrap();
    assert_eq!(decode(&garbage, None).status.code(), Some(1));
}
