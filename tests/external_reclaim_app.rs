//! Marvin's reclaimer acting from outside on a real app process: `marvin app --mode
//! marvin` runs the buckets workload, goes to the background on the System's command,
//! and this process (standing in for the System) takes its saved, clean, cold objects
//! through its reclaim table and the memory files of its large-object space. The app
//! keeps running, faults what it needs back in, verifies every array it drops, and ends
//! cleanly.

use std::path::Path;
use std::time::{Duration, Instant};

use marvin::system::processes::launcher::{AppProcess, Seen};
use marvin::system::processes::protocol::Command;
use marvin_swap::external::ExternalApp;

fn wait_for(p: &AppProcess, what: &str, cond: impl Fn(&Seen) -> bool) {
    for _ in 0..3000 {
        if cond(&p.seen()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the app never reported {what}: {:?}", p.seen());
}

/// `RssShmem` of process `pid` in bytes (its resident pages of shared memory files).
fn rss_shmem(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssShmem:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .expect("RssShmem in /proc/PID/status")
        * 1024
}

#[test]
fn the_system_reclaims_a_background_app_process_from_outside() {
    let dir = tempfile::tempdir().unwrap();
    let workload = format!(
        "{}/examples/workloads/buckets.masm",
        env!("CARGO_MANIFEST_DIR")
    );
    let args: Vec<String> = [
        workload.as_str(),
        "-D",
        "ARRAYS=256",
        "-D",
        "DELETE_GAP_MS=50",
        "-D",
        "ROUND_GAP_MS=200",
        "--mode",
        "marvin",
        "--report-every",
        "20ms",
        "--swap-dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([dir.path().display().to_string()])
    .collect();
    let mut p = AppProcess::spawn(Path::new(env!("CARGO_BIN_EXE_marvin")), &args).unwrap();
    wait_for(&p, "ready", |s| s.ready);
    wait_for(&p, "a round", |s| s.mark("round") >= 1);
    p.tell(&Command::Background);
    wait_for(&p, "the background transition", |s| {
        s.transitions.iter().any(|(a, _)| a == "background")
    });
    let pid = p.pid();
    let mut ext = ExternalApp::open(pid, dir.path(), "swap").unwrap();
    assert!(ext.memory().regions() >= 1);

    // Reclaim whatever the app's saver has made reclaimable, until a few MiB are gone.
    let (mut bytes, mut objects, mut best_drop) = (0u64, 0u64, 0f64);
    let t0 = Instant::now();
    while bytes < 4 << 20 && t0.elapsed() < Duration::from_secs(30) {
        let before = rss_shmem(pid);
        let r = ext.reclaim(u64::MAX);
        let after = rss_shmem(pid);
        if r.bytes >= 1 << 20 {
            // The app runs meanwhile (and may fault some back): most must be gone.
            best_drop = best_drop.max(before.saturating_sub(after) as f64 / r.bytes as f64);
        }
        bytes += r.bytes;
        objects += r.objects;
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        bytes >= 4 << 20,
        "only {bytes} bytes became reclaimable in 30 s"
    );
    assert!(
        best_drop >= 0.5,
        "the app's shared resident memory dropped by {best_drop:.2} of what was reclaimed"
    );
    eprintln!(
        "reclaimed {} MiB ({objects} objects) from process {pid} in {:?}; RssShmem dropped by up to {:.0}% of a reclaim",
        bytes >> 20,
        t0.elapsed(),
        best_drop * 100.0
    );
    // Booked in the table's header, where the app reads it.
    assert_eq!(ext.table().reclaimed_out(), (bytes, objects));

    // The app carries on (faulting what it touches back in), comes back, and ends well.
    let rounds = p.mark("round");
    wait_for(&p, "two more rounds", |s| s.mark("round") >= rounds + 2);
    p.tell(&Command::Foreground);
    wait_for(&p, "the foreground transition", |s| {
        s.transitions.iter().any(|(a, _)| a == "foreground")
    });
    drop(ext);
    let status = p.stop(Duration::from_secs(30)).unwrap();
    p.drain();
    assert!(status.success(), "{status}: {}", p.stderr_tail());
    assert_eq!(p.seen().exit, Some((0, None)));
    assert_eq!(p.seen().mark("verify_failed"), 0);
    assert_eq!(p.crash(), None);
}
