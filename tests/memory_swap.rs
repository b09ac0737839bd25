//! Whole-system tests of marvin's memory management through `marvin run --lifecycle`:
//! a multi-threaded workload that writes and verifies arrays across many background,
//! save, reclaim, collect and foreground transitions; the process's resident memory
//! falling on a reclaim and coming back on restore; and the failures (a full, deleted or
//! unusable swap file, a corrupted checkpoint) that must end in clear errors, never in
//! silent corruption.
//!
//! Each run is a subprocess: resident memory is process-wide, and a runtime error ends
//! the process. The programs are in `tests/memory/`. `MARVIN_STRESS=1` runs the
//! workload for longer, with more transitions.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use marvin_swap::{SlotHeader, SLOT_HEADER_BYTES};

mod support;
use serde_json::Value;
use support::{live_checkpoints, program, text, QUICK_COLD};

fn marvin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_marvin"))
        .args(args)
        .output()
        .expect("run marvin")
}

/// Runs `program` with `args` and `--stats-json`; returns the output and the stats.
fn run_with_stats(program: &Path, args: &[&str]) -> (Output, Value) {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let mut all = vec!["run", program.to_str().unwrap()];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--stats-json", stats.to_str().unwrap()]);
    let out = marvin(&all);
    let json = std::fs::read_to_string(&stats).unwrap_or_else(|e| {
        panic!(
            "no stats ({e}); status {:?}, stderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, serde_json::from_str(&json).unwrap())
}

fn n(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no number {key} in {v}"))
}

/// The transitions of a run with the given action.
fn transitions<'a>(stats: &'a Value, action: &str) -> Vec<&'a Value> {
    stats["swap"]["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["action"] == action)
        .collect()
}

fn stress() -> bool {
    std::env::var_os("MARVIN_STRESS").is_some_and(|v| v == "1")
}

/// Repeated cycles of background, save, reclaim, collections and foreground, every
/// `period_ms`, for `total_ms`, plus a reclaim and a collection while in the background.
fn lifecycle_cycles(period_ms: u64, total_ms: u64) -> String {
    let mut steps = Vec::new();
    let mut t = 200;
    while t + period_ms <= total_ms {
        let at = |f: u64| t + period_ms * f / 10;
        steps.push(format!("bg@{}ms", at(0)));
        steps.push(format!("save@{}ms", at(2)));
        steps.push(format!("reclaim@{}ms", at(4)));
        steps.push(format!("gc@{}ms", at(5)));
        steps.push(format!("save@{}ms", at(6)));
        steps.push(format!("reclaim@{}ms", at(7)));
        steps.push(format!("fg@{}ms", at(8)));
        steps.push(format!("gc@{}ms", at(9)));
        t += period_ms;
    }
    steps.join(",")
}

#[test]
fn threads_writing_arrays_across_many_transitions_lose_no_update() {
    let duration_ms: u64 = if stress() { 20_000 } else { 3_000 };
    let lifecycle = lifecycle_cycles(600, duration_ms);
    let duration = format!("DURATION_MS={duration_ms}");
    let (out, stats) = run_with_stats(
        &program("stress.masm"),
        &["-D", &duration, "--lifecycle", &lifecycle],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
    assert!(!text(&out.stdout).contains("verification failed"));
    assert!(
        !stderr.contains("lifecycle:"),
        "a transition failed:\n{stderr}"
    );
    let swap = &stats["swap"];
    assert_eq!(n(swap, "gc_faults"), 0, "a collection faulted objects in");
    assert!(n(swap, "saved_objects") > 0, "{swap}");
    assert!(n(swap, "reclaimed_bytes") > 0, "{swap}");
    assert!(
        n(swap, "object_faults") + n(swap, "restored_eager_objects") > 0,
        "nothing was read back: {swap}"
    );
    assert!(n(&stats, "collections") > 0);
    assert_eq!(swap["last_error"], Value::Null);
}

#[test]
fn a_reclaim_returns_resident_memory_and_a_restore_brings_it_back() {
    // 16 MiB in 4 KiB arrays (4,096 of them, one page each).
    let (out, stats) = run_with_stats(
        &program("hold.masm"),
        &[
            "-D",
            "COUNT=4096",
            "-D",
            "SLEEP_MS=2500",
            "--policy",
            QUICK_COLD,
            "--lifecycle",
            "bg@500ms,save@600ms,reclaim@900ms,fg@1200ms",
        ],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
    assert_eq!(text(&out.stdout), "ready\nok\n");
    let held = 4096 * 4096u64;
    let reclaim = transitions(&stats, "reclaim");
    assert_eq!(reclaim.len(), 1, "{stats}");
    let reclaimed = n(reclaim[0], "bytes");
    assert!(
        reclaimed >= held * 9 / 10,
        "only {reclaimed} of {held} bytes reclaimed: {stats}"
    );
    let dropped = n(reclaim[0], "rss_before").saturating_sub(n(reclaim[0], "rss_after"));
    assert!(
        dropped >= reclaimed / 10 * 8,
        "resident memory fell by {dropped} bytes for {reclaimed} reclaimed"
    );
    let fg = transitions(&stats, "fg");
    assert_eq!(fg.len(), 1, "{stats}");
    let restored = n(fg[0], "bytes");
    assert!(restored >= reclaimed / 10 * 9, "{stats}");
    let grew = n(fg[0], "rss_after").saturating_sub(n(fg[0], "rss_before"));
    assert!(
        grew >= restored / 10 * 8,
        "resident memory grew by {grew} bytes for {restored} restored"
    );
    // And not by much more: reading checkpoints back leaves no swap-file pages mapped.
    assert!(
        grew <= restored / 10 * 12 + (2 << 20),
        "resident memory grew by {grew} bytes for {restored} restored"
    );
    assert_eq!(n(&stats["swap"], "gc_faults"), 0);
}

#[test]
fn a_full_swap_disk_leaves_unsaved_objects_resident_and_the_app_running() {
    // 64 arrays of 8 KiB; the swap file may not grow past its first 64 KiB.
    let dir = tempfile::tempdir().unwrap();
    let (out, stats) = run_with_stats(
        &program("hold.masm"),
        &[
            "-D",
            "COUNT=64",
            "-D",
            "ARRAY_BYTES=8176",
            "-D",
            "SLEEP_MS=1000",
            "--swap-dir",
            dir.path().to_str().unwrap(),
            "--swap-limit",
            "64k",
            "--policy",
            QUICK_COLD,
            "--lifecycle",
            "bg@300ms,save@400ms,reclaim@600ms",
        ],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
    assert_eq!(text(&out.stdout), "ready\nok\n");
    let swap = &stats["swap"];
    let saved = n(swap, "saved_objects");
    assert!(n(swap, "save_errors") > 0, "{swap}");
    assert!(saved > 0 && saved < 64, "{swap}");
    let err = swap["last_error"].as_str().unwrap();
    assert!(err.contains("limit"), "{err}");
    // Only saved objects went out, and the app read them all back correctly.
    let reclaimed = n(swap, "reclaimed_objects");
    assert!(reclaimed > 0 && reclaimed <= saved, "{swap}");
    // Each fault reads its neighbours' checkpoints along (read-ahead): at least one
    // fault, at most one per object, and every reclaimed payload read back.
    let faults = n(swap, "object_faults");
    assert!(faults >= 1 && faults <= reclaimed, "{swap}");
    assert_eq!(
        faults + n(swap, "read_ahead_objects"),
        reclaimed,
        "every reclaimed object came back by its own fault or a neighbour's: {swap}"
    );
    assert!(n(swap, "swap_bytes_read") >= reclaimed * 8176, "{swap}");
}

#[test]
fn an_unusable_swap_directory_is_a_clear_error_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-directory");
    std::fs::write(&file, b"x").unwrap();
    let swap_dir = file.join("swap");
    let out = marvin(&[
        "run",
        program("hold.masm").to_str().unwrap(),
        "-D",
        "COUNT=1",
        "--swap-dir",
        swap_dir.to_str().unwrap(),
    ]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(
        out.status.code(),
        Some(2),
        "checked before the run: {stderr}"
    );
    assert!(stderr.contains("--swap-dir"), "{stderr}");
    assert!(stderr.contains("cannot be created"), "{stderr}");
    assert!(stderr.contains(swap_dir.to_str().unwrap()), "{stderr}");
    assert!(text(&out.stdout).is_empty(), "the app ran without its swap");
}

/// Runs `hold.masm` with its arrays saved and reclaimed early, calls `damage` on the
/// swap file once every checkpoint is written, and returns the run's output. The
/// program sleeps long enough for that before it reads its arrays back (and the test
/// checks that it had not ended yet).
fn run_and_damage_swap_file(damage: impl FnOnce(&Path, &[(u64, SlotHeader)])) -> Output {
    const COUNT: usize = 16;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_marvin"))
        .args([
            "run",
            program("hold.masm").to_str().unwrap(),
            "-D",
            &format!("COUNT={COUNT}"),
            "-D",
            "SLEEP_MS=2500",
            "--swap-dir",
            dir.path().to_str().unwrap(),
            "--policy",
            QUICK_COLD,
            "--lifecycle",
            "bg@300ms,save@400ms,reclaim@600ms",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run marvin");
    // (The app's output is buffered until it ends: watch the swap file instead.)
    let swap_file = dir.path().join("app");
    let t0 = Instant::now();
    let live = loop {
        let live = live_checkpoints(&swap_file);
        if live.len() == COUNT {
            break live;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the app ended before its checkpoints were all written"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the checkpoints never appeared"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    damage(&swap_file, &live);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the app ended before the swap file was damaged"
    );
    child.wait_with_output().unwrap()
}

#[test]
fn a_corrupted_checkpoint_is_a_runtime_error_naming_the_object() {
    let mut victim = 0;
    let out = run_and_damage_swap_file(|path, live| {
        use std::os::unix::fs::FileExt;
        let (at, header) = live[live.len() / 2];
        victim = header.key;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap();
        let mut byte = [0u8];
        let payload = at + SLOT_HEADER_BYTES;
        file.read_exact_at(&mut byte, payload).unwrap();
        file.write_all_at(&[byte[0] ^ 0xff], payload).unwrap();
    });
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(70), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot fault in object {victim}")),
        "{stderr}"
    );
    assert!(stderr.contains("checksum"), "{stderr}");
    let stdout = text(&out.stdout);
    assert!(
        !stdout.contains("ok") && !stdout.contains("verification failed"),
        "{stdout}"
    );
}

#[test]
fn a_deleted_swap_file_is_a_runtime_error_not_lost_data() {
    let out = run_and_damage_swap_file(|path, _| std::fs::remove_file(path).unwrap());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(70), "{stderr}");
    assert!(stderr.contains("cannot fault in object"), "{stderr}");
    assert!(stderr.contains("deleted"), "{stderr}");
    assert!(!text(&out.stdout).contains("verification failed"));
}
