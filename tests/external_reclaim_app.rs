//! Marvin's reclaimer acting from outside on a real app process: `marvin app --mode
//! marvin` runs the buckets workload, goes to the background on the System's command,
//! and this process (standing in for the System) takes its saved, clean, cold objects
//! through its reclaim table and the memory files of its large-object space. The app
//! keeps running, faults what it needs back in, verifies every array it drops, and ends
//! cleanly.

use std::path::Path;
use std::time::{Duration, Instant};

use marvin_runtime::memfd;
use marvin_runtime::RegionDirectory;
use marvin_swap::external::{regions_path, ExternalApp};
use marvin_system::processes::launcher::{AppProcess, Seen};
use marvin_system::processes::protocol::Command;

fn wait_for(p: &AppProcess, what: &str, cond: impl Fn(&Seen) -> bool) {
    for _ in 0..3000 {
        if cond(&p.seen()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the app never reported {what}: {:?}", p.seen());
}

/// Pages of the app's memory files still resident under the objects its reclaim table
/// marks reclaimed, and the bytes of those objects, each entry looked at under its
/// reclaimer lock (so the app cannot be faulting it back in meanwhile: its fault takes
/// the entry's shared lock and sets RESIDENT before letting go). Residency is read in
/// the memory file itself (`mincore` over a mapping of it made here), object by object:
/// the app's `RssShmem` (`/proc/PID/status`) is one figure for the whole process that
/// also moves with the app's own allocations and frees, and a check of its drop around
/// each reclaim has to pick the reclaims large enough to measure (on a loaded machine the
/// saver makes objects reclaimable a little at a time, and every reclaim of a run could
/// be too small).
fn resident_under_reclaimed(ext: &ExternalApp, pid: u32, dir: &Path) -> (u64, u64) {
    let directory = RegionDirectory::read(&regions_path(dir, "swap")).unwrap();
    let files: Vec<_> = directory
        .regions
        .iter()
        .map(|r| memfd::open_remote(pid, r.fd, r.ino).unwrap())
        .collect();
    let (mut resident, mut bytes) = (0u64, 0u64);
    for (_, entry) in ext.table().iter_occupied() {
        if entry.is_resident() {
            continue;
        }
        let Some(guard) = entry.try_lock_reclaimer() else {
            continue;
        };
        let e = guard.entry();
        if !e.is_occupied() || e.is_resident() {
            continue;
        }
        let Some((i, off)) = directory.locate(e.addr(), e.size()) else {
            continue;
        };
        resident += memfd::cached_pages(&files[i], off, off + e.size()).unwrap() as u64;
        bytes += e.size();
    }
    (resident, bytes)
}

#[test]
fn the_system_reclaims_a_background_app_process_from_outside() {
    let dir = tempfile::tempdir().unwrap();
    // The policy's timers pinned out of the test's way, so that what becomes reclaimable
    // does not depend on the machine's load: the saver's run at the background transition
    // is not cut short by its wall-clock budget (1 s by default: on a loaded machine it
    // saved 0.3-4 MiB before stopping, and the next run comes after the 30 s background
    // period), and the working-set walk runs only at the start (the 5 s walk, when a slow
    // setup passes it, marks every array just written warm for four rounds).
    let conf = tempfile::tempdir().unwrap();
    let policy = conf.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[saver]\nbudget = \"1h\"\n\
         [working_set]\nforeground_period = \"1h\"\nbackground_period = \"1h\"\n",
    )
    .unwrap();
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
    .chain([dir.path().display().to_string(), "--policy-file".into()])
    .chain([policy.display().to_string()])
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

    // Reclaim whatever the app's saver has made reclaimable, until a few MiB are gone,
    // and after each reclaim look at the pages under every object marked reclaimed.
    let (mut bytes, mut objects) = (0u64, 0u64);
    let (mut resident, mut checked) = (0u64, 0u64);
    let t0 = Instant::now();
    while bytes < 4 << 20 && t0.elapsed() < Duration::from_secs(30) {
        let r = ext.reclaim(u64::MAX);
        let (res, chk) = resident_under_reclaimed(&ext, pid, dir.path());
        resident += res;
        checked += chk;
        bytes += r.bytes;
        objects += r.objects;
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        bytes >= 4 << 20,
        "only {bytes} bytes became reclaimable in 30 s"
    );
    // Every object marked reclaimed has had its pages taken out of the app's memory
    // file (the app faults an object back in under the entry's lock, and then the entry
    // says RESIDENT again).
    assert!(
        checked >= 1 << 20,
        "only {checked} bytes of reclaimed objects were seen in the table"
    );
    assert_eq!(
        resident, 0,
        "{resident} pages of the memory files are still resident under objects marked reclaimed"
    );
    eprintln!(
        "reclaimed {} MiB ({objects} objects) from process {pid} in {:?}",
        bytes >> 20,
        t0.elapsed(),
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
