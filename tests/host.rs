//! The machine side of the real mode on the real kernel: a run's memory cgroup, its
//! removal after a panic, a stop signal or a SIGKILL of its owner (the sweep), the
//! low-memory killer acting before the kernel's OOM killer, and real swap (a swap file,
//! zram) that pages really go to and that is gone afterwards. These tests need root and
//! a memory cgroup; elsewhere they skip with a printed reason.
//!
//! The processes the tests put into groups are this test binary run again with
//! `MARVIN_HOST_TEST_CHILD` set to a role (see [`child_process_role`]).

use std::io::{BufRead, BufReader};
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use marvin_machine::lmk::Killer;
use marvin_machine::lmk_policy::{AppState, Reason, Trigger};
use marvin_machine::swapdev::{self, SwapDevice};
use marvin_machine::{
    signals, sys, Hierarchy, Limits, Machine, MachineConfig, MachineLock, SwapChoice, Version,
};
use marvin_machine::{PsiEvents, PsiLevel as Level};

const CHILD_ENV: &str = "MARVIN_HOST_TEST_CHILD";
const MIB: u64 = 1 << 20;

/// Tests that turn swap on and off run one at a time: `swapoff` pulls pages back into
/// whichever group owns them, which must not be another test's group at its limit, and the
/// kernel puts a group's pages on whichever swap device has the highest priority, which
/// must be the test's own. Tests that sweep dead runs' groups (a machine's set-up sweeps
/// too) hold it as well, so that one test's sweep does not take the group another test
/// left to sweep itself. See [`machine_exclusive`].
static SWAP: Mutex<()> = Mutex::new(());

/// Holds the machine for one test: [`SWAP`] against the other tests of this binary, and
/// the machine-wide [`MachineLock`] against other processes (another `cargo test`, a
/// real-mode run of `marvin pressure`), which a [`Machine`] set up meanwhile shares.
fn machine_exclusive() -> (MutexGuard<'static, ()>, Arc<MachineLock>) {
    let one = SWAP.lock().unwrap_or_else(|e| e.into_inner());
    (one, MachineLock::acquire().unwrap())
}

/// The hierarchy to test in, or `None` after printing why the test is skipped.
fn hierarchy() -> Option<Hierarchy> {
    match Hierarchy::available() {
        Ok(h) => Some(h),
        Err(e) => {
            println!("skipped: {e}");
            None
        }
    }
}

/// A child process in `role`: this binary, running only [`child_process_role`].
fn child_command(role: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "child_process_role",
        "--exact",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ])
    .env(CHILD_ENV, role)
    .stdin(Stdio::null())
    .stdout(Stdio::piped());
    c
}

/// Reads the child's output until its line `tag: VALUE`; returns VALUE.
fn expect_line(out: &mut BufReader<ChildStdout>, tag: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).unwrap();
        assert!(n > 0, "the child ended before saying {tag:?}");
        if let Some(v) = line.trim_end().strip_prefix(&format!("{tag}: ")) {
            return v.to_string();
        }
    }
}

fn wait_with_timeout(child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    let end = Instant::now() + timeout;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(
            Instant::now() < end,
            "child {} did not end in {timeout:?}",
            child.id()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn send(pid: u32, sig: i32) {
    let fd = sys::pidfd_open(pid).unwrap();
    sys::pidfd_send_signal(fd.as_fd(), sig).unwrap();
}

/// Not a test of its own: the body of the children the other tests start. Without
/// `MARVIN_HOST_TEST_CHILD` it does nothing.
#[test]
fn child_process_role() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (name, arg) = role.split_once(':').unwrap_or((role.as_str(), ""));
    match name {
        // Touch ARG MiB of anonymous memory, say so, and wait to be killed.
        "alloc" => {
            let mib: usize = arg.parse().unwrap();
            let mut block = vec![0u8; mib << 20];
            for (i, b) in block.iter_mut().enumerate().step_by(4096) {
                *b = (i / 4096) as u8 | 1;
            }
            println!("ready: {}", block.len());
            std::thread::sleep(Duration::from_secs(120));
            std::hint::black_box(&block);
        }
        // Create a group and wait to be killed (by SIGKILL: the group stays behind).
        "own-group" => {
            let g = Hierarchy::detect()
                .unwrap()
                .create(&Limits::hard(16 * MIB))
                .unwrap();
            println!("group: {}", g.path().display());
            std::thread::sleep(Duration::from_secs(120));
        }
        // Create a group, then run until a stop signal and unwind.
        "group-until-signal" => {
            signals::install().unwrap();
            let g = Hierarchy::detect()
                .unwrap()
                .create(&Limits::hard(16 * MIB))
                .unwrap();
            println!("group: {}", g.path().display());
            let end = Instant::now() + Duration::from_secs(120);
            while signals::stop_requested().is_none() && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(signals::stop_requested(), Some(libc::SIGTERM));
            drop(g);
            println!("stopped: ok");
        }
        // Turn on a swap file in directory ARG and wait to be killed.
        "swap-owner" => {
            let s = SwapDevice::enable_file(Path::new(arg), 4 * MIB, None).unwrap();
            println!("swap: {}", s.path().display());
            std::thread::sleep(Duration::from_secs(120));
        }
        other => panic!("unknown child role {other}"),
    }
}

/// Starts an `alloc` child of `mib` MiB inside `group` and waits until it has touched
/// its memory.
fn start_allocator(group: &marvin_machine::Group, mib: u64) -> Child {
    let mut child = group
        .spawn_inside(&mut child_command(&format!("alloc:{mib}")))
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    expect_line(&mut out, "ready");
    // Keep the pipe open so the child never writes into a closed pipe.
    std::mem::forget(out);
    child
}

#[test]
fn the_killer_kills_the_cached_app_before_the_kernel_would() {
    let Some(h) = hierarchy() else { return };
    let limit = 96 * MIB;
    let group = h.create(&Limits::hard(limit)).unwrap();
    assert_eq!(group.limit().unwrap(), limit, "the kernel holds the limit");
    // Kill above 64 MiB: the foreground app alone stays below it, both apps together
    // are above it, and the kernel's limit is out of reach.
    let mut killer = Killer::new(&group, Trigger::usage(32 * MIB)).unwrap();
    let mut front = start_allocator(&group, 20);
    killer.track(front.id(), AppState::Foreground).unwrap();
    assert!(
        killer.watch(Duration::from_millis(20)).unwrap().is_none(),
        "one small app: no kill"
    );
    let mut cached = group.spawn_inside(&mut child_command("alloc:52")).unwrap();
    killer
        .track(cached.id(), AppState::Cached { lru_rank: 0 })
        .unwrap();
    let adj = std::fs::read_to_string(format!("/proc/{}/oom_score_adj", cached.id())).unwrap();
    assert_eq!(
        adj.trim(),
        "900",
        "the cached app's adj is written for the kernel too"
    );

    let end = Instant::now() + Duration::from_secs(30);
    let kill = loop {
        if let Some(k) = killer.watch(Duration::from_millis(10)).unwrap() {
            break k;
        }
        assert!(
            Instant::now() < end,
            "no kill within 30 s (usage {} MiB)",
            group.usage().unwrap() >> 20
        );
    };
    assert_eq!(
        kill.pid,
        cached.id(),
        "the cached app dies, not the foreground one"
    );
    assert_eq!(kill.adj, 900);
    assert!(
        matches!(kill.reason, Reason::Headroom { .. }),
        "{:?}",
        kill.reason
    );
    let status = wait_with_timeout(&mut cached, Duration::from_secs(10));
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert!(
        front.try_wait().unwrap().is_none(),
        "the foreground app lives on"
    );
    // Below the threshold again: no second kill.
    assert!(killer.watch(Duration::from_millis(20)).unwrap().is_none());
    assert_eq!(killer.kills().len(), 1);
    assert_eq!(
        group.oom_kills().unwrap(),
        0,
        "the kernel's OOM killer did nothing"
    );
    assert!(group.peak().unwrap() <= limit);
    assert!(
        group.peak().unwrap() > 64 * MIB,
        "the group did go above the kill threshold"
    );
    let path = group.path().to_path_buf();
    drop(killer);
    group.remove().unwrap();
    assert!(!path.exists(), "the group is gone");
    assert_eq!(
        wait_with_timeout(&mut front, Duration::from_secs(10)).signal(),
        Some(libc::SIGKILL)
    );
}

#[test]
fn a_panicking_test_body_leaves_no_group_behind() {
    let Some(h) = hierarchy() else { return };
    let mut seen: Option<(PathBuf, Child)> = None;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let group = h.create(&Limits::hard(32 * MIB)).unwrap();
        let child = start_allocator(&group, 4);
        assert_eq!(group.pids().unwrap(), vec![child.id()]);
        assert!(
            group.usage().unwrap() >= 4 * MIB,
            "the child's memory is charged to the group"
        );
        seen = Some((group.path().to_path_buf(), child));
        panic!("the test body fails here");
    }));
    assert!(result.is_err());
    let (path, mut child) = seen.unwrap();
    assert!(
        !path.exists(),
        "the guard removed {} while unwinding",
        path.display()
    );
    assert_eq!(
        wait_with_timeout(&mut child, Duration::from_secs(10)).signal(),
        Some(libc::SIGKILL)
    );
}

#[test]
fn a_group_left_by_a_sigkilled_run_is_swept() {
    let Some(h) = hierarchy() else { return };
    let _one = machine_exclusive();
    let mut owner = child_command("own-group").spawn().unwrap();
    let mut out = BufReader::new(owner.stdout.take().unwrap());
    let path = PathBuf::from(expect_line(&mut out, "group"));
    owner.kill().unwrap();
    assert_eq!(
        wait_with_timeout(&mut owner, Duration::from_secs(10)).signal(),
        Some(libc::SIGKILL)
    );
    assert!(path.exists(), "SIGKILL runs no guard");
    // A live run's group beside it is left alone.
    let mine = h.create(&Limits::hard(16 * MIB)).unwrap();
    let removed = h.sweep().unwrap();
    assert!(removed.contains(&path), "swept {removed:?}");
    assert!(!path.exists());
    assert!(!removed.contains(&mine.path().to_path_buf()) && mine.path().exists());
}

#[test]
fn a_stop_signal_unwinds_the_run_and_removes_its_group() {
    if hierarchy().is_none() {
        return;
    }
    let mut run = child_command("group-until-signal").spawn().unwrap();
    let mut out = BufReader::new(run.stdout.take().unwrap());
    let path = PathBuf::from(expect_line(&mut out, "group"));
    assert!(path.exists());
    send(run.id(), libc::SIGTERM);
    assert_eq!(expect_line(&mut out, "stopped"), "ok");
    let status = wait_with_timeout(&mut run, Duration::from_secs(10));
    assert!(
        status.success(),
        "the run ended normally after the signal: {status:?}"
    );
    assert!(!path.exists(), "the group was removed on the way out");
}

#[test]
fn kernel_swap_really_swaps_and_is_removed() {
    let Some(h) = hierarchy() else { return };
    let _one = machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let (_, out0) = marvin_machine::machine_swap_pages().unwrap();
    // At a run's priority, the highest: the group's pages go to this file even if the
    // machine has other swap on.
    let swap = SwapDevice::enable_file(dir.path(), 128 * MIB, Some(swapdev::RUN_PRIORITY)).unwrap();
    let swap_path = swap.path().to_path_buf();
    assert!(
        swapdev::active_swaps()
            .unwrap()
            .iter()
            .any(|s| s.path == swap_path),
        "the kernel swaps to it"
    );
    let limit = 32 * MIB;
    let group = h
        .create(&Limits {
            max_bytes: limit,
            high_bytes: None,
            swappiness: Some(100),
        })
        .unwrap();
    let mut events = PsiEvents::open(&group, Level::Low).unwrap();
    // Twice the limit: half of it must go to swap.
    let mut child = start_allocator(&group, 64);
    let mem = marvin_runtime::procfs::mem(child.id()).unwrap();
    assert!(
        mem.swap > 16 * MIB,
        "the app has {} MiB in swap",
        mem.swap >> 20
    );
    let stat = group.stat().unwrap();
    let (_, out1) = marvin_machine::machine_swap_pages().unwrap();
    match group.version() {
        Version::V1 => assert!(
            stat.swap.unwrap() > 16 * MIB,
            "memory.stat swap {:?}",
            stat.swap
        ),
        Version::V2 => assert!(stat.pswpout.unwrap_or(out1 - out0) > 0),
    }
    assert!(out1 > out0, "pswpout rose from {out0} to {out1}");
    assert!(swap.used_bytes().unwrap() > 16 * MIB);
    assert!(group.usage().unwrap() <= limit);
    assert_eq!(group.oom_kills().unwrap(), 0);
    assert!(
        events.wait(Duration::ZERO).unwrap(),
        "reclaim at the limit raised pressure events"
    );
    // The group goes first (its processes die), then the swap.
    drop(events);
    drop(group);
    let status = wait_with_timeout(&mut child, Duration::from_secs(10));
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    swap.remove().unwrap();
    assert!(!swapdev::active_swaps()
        .unwrap()
        .iter()
        .any(|s| s.path == swap_path));
    assert!(!swap_path.exists(), "the swap file is gone");
}

#[test]
fn swap_left_by_a_sigkilled_run_is_swept() {
    if hierarchy().is_none() {
        return;
    }
    let _one = machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let mut owner = child_command(&format!("swap-owner:{}", dir.path().display()))
        .spawn()
        .unwrap();
    let mut out = BufReader::new(owner.stdout.take().unwrap());
    let path = PathBuf::from(expect_line(&mut out, "swap"));
    owner.kill().unwrap();
    wait_with_timeout(&mut owner, Duration::from_secs(10));
    let active = |p: &Path| swapdev::active_swaps().unwrap().iter().any(|s| s.path == p);
    assert!(active(&path), "SIGKILL left the swap on");
    let state = dir.path().join("state");
    let removed = swapdev::sweep(&state, &[dir.path()]).unwrap();
    assert!(removed.contains(&path), "swept {removed:?}");
    assert!(!active(&path) && !path.exists());
}

#[test]
fn zram_swap_is_set_up_and_reset() {
    if hierarchy().is_none() {
        return;
    }
    let _one = machine_exclusive();
    let disksize = Path::new("/sys/block/zram0/disksize");
    match std::fs::read_to_string(disksize) {
        Ok(s) if s.trim() == "0" => {}
        Ok(s) => return println!("skipped: zram0 is in use (disksize {})", s.trim()),
        Err(e) => return println!("skipped: no zram0 ({e})"),
    }
    let state = tempfile::tempdir().unwrap();
    let zram = SwapDevice::enable_zram(state.path(), 64 * MIB, None).unwrap();
    let active = || {
        swapdev::active_swaps()
            .unwrap()
            .iter()
            .any(|s| s.path == Path::new("/dev/zram0"))
    };
    assert!(active(), "zram0 is swap now");
    assert_eq!(
        std::fs::read_to_string(disksize).unwrap().trim(),
        (64 * MIB).to_string()
    );
    assert!(zram.zram_memory_bytes().unwrap().is_some());
    // A second run may not take a device that is in use.
    assert!(SwapDevice::enable_zram(state.path(), 64 * MIB, None).is_err());
    assert_eq!(
        std::fs::read_dir(state.path()).unwrap().count(),
        1,
        "one ownership marker"
    );
    zram.remove().unwrap();
    assert!(!active());
    assert_eq!(
        std::fs::read_to_string(disksize).unwrap().trim(),
        "0",
        "zram0 was reset"
    );
    assert_eq!(
        std::fs::read_dir(state.path()).unwrap().count(),
        0,
        "the marker is gone"
    );
}

#[test]
fn psi_triggers_register_on_the_machine_pressure_file() {
    if !sys::is_root() {
        return println!("skipped: not root");
    }
    let p = Path::new("/proc/pressure/memory");
    if !p.exists() {
        return println!("skipped: no PSI");
    }
    for level in [Level::Low, Level::Medium, Level::Critical] {
        let mut ev = PsiEvents::open_psi(p, level).unwrap();
        // Waiting works (whether this shared machine stalls just now is not asserted).
        ev.wait(Duration::from_millis(1)).unwrap();
    }
}

#[test]
fn crossing_a_usage_threshold_wakes_the_watcher() {
    let Some(h) = hierarchy() else { return };
    let group = h.create(&Limits::hard(64 * MIB)).unwrap();
    let Some(mut ev) = PsiEvents::usage_crossing(&group, 8 * MIB).unwrap() else {
        assert_eq!(group.version(), Version::V2);
        return println!("skipped: cgroup v2 has no usage thresholds");
    };
    assert!(
        !ev.wait(Duration::ZERO).unwrap(),
        "an empty group is below 8 MiB"
    );
    let mut child = start_allocator(&group, 16);
    // The crossing happened while the child allocated; the eventfd holds it.
    assert!(
        ev.wait(Duration::ZERO).unwrap(),
        "usage {} MiB",
        group.usage().unwrap() >> 20
    );
    drop(ev);
    drop(group);
    let status = wait_with_timeout(&mut child, Duration::from_secs(10));
    assert_eq!(status.signal(), Some(libc::SIGKILL));
}

#[test]
fn a_machine_is_set_up_and_taken_down_in_order() {
    if hierarchy().is_none() {
        return;
    }
    let (_one, lock) = machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let cfg = MachineConfig {
        limits: Limits::hard(32 * MIB),
        swap: SwapChoice::File {
            dir: dir.path().to_path_buf(),
            bytes: 16 * MIB,
        },
        state_dir: dir.path().join("state"),
    };
    let machine = Machine::set_up(&cfg, lock.clone()).unwrap();
    let group_path = machine.group().path().to_path_buf();
    let swap_path = machine.swap().unwrap().path().to_path_buf();
    assert!(group_path.exists());
    assert!(swapdev::active_swaps()
        .unwrap()
        .iter()
        .any(|s| s.path == swap_path));
    assert_eq!(machine.group().limit().unwrap(), 32 * MIB);
    let mut child = start_allocator(machine.group(), 4);
    assert_eq!(machine.group().pids().unwrap(), vec![child.id()]);
    assert!(machine.swap_traffic().is_ok());
    machine.tear_down().unwrap();
    let status = wait_with_timeout(&mut child, Duration::from_secs(10));
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert!(!group_path.exists(), "the group is gone");
    assert!(!swapdev::active_swaps()
        .unwrap()
        .iter()
        .any(|s| s.path == swap_path));
    assert!(!swap_path.exists(), "the swap file is gone");
}

#[test]
fn with_swap_the_killer_acts_when_swap_runs_low() {
    let Some(h) = hierarchy() else { return };
    let _one = machine_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let swap = SwapDevice::enable_file(dir.path(), 32 * MIB, Some(swapdev::RUN_PRIORITY)).unwrap();
    let limit = 32 * MIB;
    let group = h
        .create(&Limits {
            max_bytes: limit,
            high_bytes: None,
            swappiness: Some(100),
        })
        .unwrap();
    // Kill once more than 8 MiB of the 32 MiB swap are used; the app's 48 MiB fit in
    // memory plus swap, so the kernel never has to act.
    let mut killer = Killer::new(&group, Trigger::pressure().with_swap_free_low(24 * MIB))
        .unwrap()
        .with_swap(&swap);
    let mut app = group.spawn_inside(&mut child_command("alloc:48")).unwrap();
    killer
        .track(app.id(), AppState::Cached { lru_rank: 3 })
        .unwrap();
    let end = Instant::now() + Duration::from_secs(30);
    let kill = loop {
        if let Some(k) = killer.watch(Duration::from_millis(10)).unwrap() {
            break k;
        }
        assert!(Instant::now() < end, "no kill within 30 s");
    };
    assert_eq!(kill.pid, app.id());
    assert!(
        matches!(kill.reason, Reason::SwapLow { .. } | Reason::Critical),
        "{:?}",
        kill.reason
    );
    let status = wait_with_timeout(&mut app, Duration::from_secs(10));
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert_eq!(
        group.oom_kills().unwrap(),
        0,
        "the kernel's OOM killer did nothing"
    );
    drop(killer);
    group.remove().unwrap();
    swap.remove().unwrap();
}
