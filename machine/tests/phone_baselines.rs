//! What phones do, on the real kernel: zram charged to the budget (usage plus the pool
//! stays within the budget plus one tick's growth of the pool, where without the charge it
//! does not), a cached app paged out from outside (its resident memory falls and its
//! bytes read back intact), an app frozen (its CPU clock stands still) and thawed (it
//! answers), and frozen groups removed however the run ends: by the run's freezer, by the
//! removal of the memory group of a frozen app, and by the sweep after a SIGKILL of their
//! owner. These need root and cgroups (and zram for the first); elsewhere each test
//! prints why it skipped. Everything a test changes is held by a guard, so nothing stays
//! changed when one fails.
//!
//! The processes the tests start are this test binary run again with
//! `MARVIN_PHONE_TEST_CHILD` set to a role (see [`child_process_role`]).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use marvin_machine::compaction;
use marvin_machine::freezer::{self, Freezer, Place};
use marvin_machine::swapdev::{self, SwapDevice};
use marvin_machine::zram_charge::{Mechanism, PoolStats, ZramCharge};
use marvin_machine::zswap_charge::ZswapCharge;
use marvin_machine::Owner;
use marvin_machine::{Hierarchy, Limits, MachineLock};
use marvin_runtime::procfs;

const CHILD_ENV: &str = "MARVIN_PHONE_TEST_CHILD";
const MIB: u64 = 1 << 20;

/// The tests of this binary that touch swap or sweep, one at a time, and the machine
/// against other processes (another test binary, a real-mode run).
static MACHINE: Mutex<()> = Mutex::new(());

fn machine_exclusive() -> (MutexGuard<'static, ()>, Arc<MachineLock>) {
    let one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    (one, MachineLock::acquire().unwrap())
}

fn hierarchy() -> Option<Hierarchy> {
    match Hierarchy::available() {
        Ok(h) => Some(h),
        Err(e) => {
            println!("skipped: {e}");
            None
        }
    }
}

fn freezer_place() -> Option<Place> {
    if !marvin_machine::sys::is_root() {
        println!("skipped: the freezer needs root");
        return None;
    }
    match Place::detect() {
        Ok(p) => Some(p),
        Err(e) => {
            println!("skipped: {e}");
            None
        }
    }
}

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
    .stdin(Stdio::piped())
    .stdout(Stdio::piped());
    c
}

/// A started child with its pipes; dropping it kills it (a frozen child is thawed first
/// by whoever owns its freezer group).
struct Kid {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Kid {
    fn from(mut child: Child) -> Kid {
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        Kid {
            child,
            input,
            output,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reads until the line `tag: VALUE`; returns VALUE.
    fn expect(&mut self, tag: &str) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.output.read_line(&mut line).unwrap();
            assert!(n > 0, "the child ended before saying {tag:?}");
            if let Some(v) = line.trim_end().strip_prefix(&format!("{tag}: ")) {
                return v.to_string();
            }
        }
    }

    fn say(&mut self, line: &str) {
        writeln!(self.input, "{line}").unwrap();
        self.input.flush().unwrap();
    }

    fn wait(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let end = Instant::now() + timeout;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < end, "child {} did not end", self.pid());
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.try_wait();
    }
}

/// One page of compressible content, as real memory is: a quarter pseudo-random, the
/// rest zeros (lz4 makes about a quarter of it; never a same-filled page, which zram
/// stores for nothing).
fn fill_page(page: &mut [u8], seed: u64) {
    let mut x = seed | 1;
    for chunk in page[..1024].chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    page[1024..].fill(0);
}

fn read_line_stdin() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_string()),
    }
}

/// Not a test of its own: the body of the children the other tests start. Without
/// `MARVIN_PHONE_TEST_CHILD` it does nothing.
#[test]
fn child_process_role() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = role.split(':');
    match parts.next().unwrap() {
        // Allocate STEPS steps of MIB MiB of compressible memory; after each, say so and
        // wait for a line.
        "steps" => {
            let mib: usize = parts.next().unwrap().parse().unwrap();
            let steps: usize = parts.next().unwrap().parse().unwrap();
            let mut held = Vec::new();
            for s in 0..steps {
                let mut block = vec![0u8; mib << 20];
                for (i, page) in block.chunks_mut(4096).enumerate() {
                    fill_page(page, (s * 1_000_003 + i) as u64);
                }
                held.push(block);
                println!("step: {s}");
                read_line_stdin();
            }
            println!("done: ok");
            read_line_stdin();
            std::hint::black_box(&held);
        }
        // Hold MIB MiB of known content; on "verify", check it and say so.
        "hold" => {
            let mib: usize = parts.next().unwrap().parse().unwrap();
            let mut block = vec![0u8; mib << 20];
            for (i, page) in block.chunks_mut(4096).enumerate() {
                fill_page(page, i as u64);
            }
            println!("ready: {}", block.len());
            while let Some(cmd) = read_line_stdin() {
                if cmd == "verify" {
                    let mut want = vec![0u8; 4096];
                    let ok = block.chunks(4096).enumerate().all(|(i, page)| {
                        fill_page(&mut want, i as u64);
                        page == want.as_slice()
                    });
                    println!("intact: {}", if ok { "ok" } else { "damaged" });
                }
            }
        }
        // Keep a thread on the CPU; answer "ping N" with "pong: N".
        "spin" => {
            std::thread::spawn(|| {
                let mut x = 0u64;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            });
            println!("ready: spinning");
            while let Some(cmd) = read_line_stdin() {
                if let Some(n) = cmd.strip_prefix("ping ") {
                    println!("pong: {n}");
                }
            }
            // Its parent is gone (the sweep's test): keep running until killed.
            std::thread::sleep(Duration::from_secs(120));
        }
        // Freeze a spinning child of its own, say where, and wait to be killed.
        "freeze-owner" => {
            let mut freezer = Freezer::new(Place::detect().unwrap()).unwrap();
            let mut spinner = Kid::from(child_command("spin").spawn().unwrap());
            spinner.expect("ready");
            freezer.freeze(spinner.pid()).unwrap();
            println!("pid: {}", spinner.pid());
            println!(
                "group: {}",
                freezer.group_of(spinner.pid()).unwrap().display()
            );
            std::thread::sleep(Duration::from_secs(120));
        }
        other => panic!("unknown child role {other}"),
    }
}

/// A process's CPU clock: its threads' run time (`schedstat`, ns) and its user plus
/// system time (`/proc/PID/stat` fields 14 and 15, ticks).
fn cpu_clock(pid: u32) -> (u64, u64) {
    let run = procfs::sched_times(pid).unwrap().run_ns;
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &text[text.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = after
        .split_whitespace()
        .skip(1)
        .map(|w| w.parse().unwrap_or(0))
        .collect();
    (run, f[10] + f[11])
}

/// The zram device for a test, or why not.
fn zram_for_test(state: &Path) -> Option<SwapDevice> {
    if let Err(e) = swapdev::zram_free() {
        println!("skipped: {e}");
        return None;
    }
    Some(
        SwapDevice::enable_zram_with(state, 256 * MIB, Some("lz4"), Some(swapdev::RUN_PRIORITY))
            .unwrap(),
    )
}

/// Runs the stepping workload (16 steps of 4 MiB) in a group of `budget` bytes on zram,
/// ticking `charge` after each step (if any). Returns the largest excess, over all
/// samples, of usage plus pool over the budget plus the pool's growth since the limit
/// last took the pool into account (without a charge: since the step before); the
/// largest growth between steps; and the pool's figures at the end.
fn run_steps(
    h: &Hierarchy,
    budget: u64,
    mut charge: Option<&mut ZramCharge>,
) -> (i64, u64, PoolStats) {
    let sys_dir = Path::new(swapdev::ZRAM_SYS);
    let group = h
        .create(&Limits {
            max_bytes: budget,
            high_bytes: None,
            swappiness: Some(100),
        })
        .unwrap();
    let mut kid = Kid::from(
        group
            .spawn_inside(&mut child_command("steps:4:16"))
            .unwrap(),
    );
    let mut worst = i64::MIN;
    let mut last_pool = 0u64;
    let mut largest_growth = 0u64;
    let check = |charged: u64, worst: &mut i64| {
        let usage = group.usage().unwrap();
        let pool = PoolStats::read_zram(sys_dir).unwrap().pool_bytes;
        let growth = pool.saturating_sub(charged);
        let excess = (usage + pool) as i64 - budget as i64 - growth as i64;
        *worst = (*worst).max(excess);
        pool
    };
    for _ in 0..16 {
        kid.expect("step");
        let charged = charge.as_ref().map_or(last_pool, |c| c.charged_pool());
        let pool = check(charged, &mut worst);
        largest_growth = largest_growth.max(pool.saturating_sub(last_pool));
        last_pool = pool;
        if let Some(c) = charge.as_deref_mut() {
            let t = c.tick(&group).unwrap();
            assert!(!t.refused, "the kernel reclaimed down to {}", t.limit_bytes);
            check(c.charged_pool(), &mut worst);
        }
        kid.say("go");
    }
    assert_eq!(kid.expect("done"), "ok", "the workload ran to its end");
    assert_eq!(group.oom_kills().unwrap(), 0);
    let stats = PoolStats::read_zram(sys_dir).unwrap();
    drop(group);
    assert_eq!(
        kid.wait(Duration::from_secs(10)).signal(),
        Some(libc::SIGKILL)
    );
    (worst, largest_growth, stats)
}

#[test]
fn zram_charged_keeps_usage_plus_pool_within_the_budget_and_one_ticks_growth() {
    let Some(h) = hierarchy() else { return };
    if h.version != marvin_machine::Version::V1 {
        // On v2 the kernel charges zswap itself (ZswapCharge), which this machine's
        // layout decides; the System's charging is the v1 mechanism.
        return println!("skipped: the System's zram charging is for cgroup v1");
    }
    let _one = machine_exclusive();
    let state = tempfile::tempdir().unwrap();
    let default_algorithm =
        marvin_machine::zram_charge::current_algorithm(Path::new(swapdev::ZRAM_SYS)).ok();
    let Some(zram) = zram_for_test(state.path()) else {
        return;
    };
    assert_eq!(
        marvin_machine::zram_charge::current_algorithm(Path::new(swapdev::ZRAM_SYS)).unwrap(),
        "lz4"
    );
    let budget = 32 * MIB;
    // Without the charge the pool comes on top of a group at its limit.
    let (uncharged, growth, _) = run_steps(&h, budget, None);
    assert!(
        uncharged > 0,
        "uncharged, usage plus pool exceeds the budget by more than a step's growth \
         ({} KiB over, the largest growth {} KiB)",
        uncharged / 1024,
        growth / 1024
    );
    let mut charge = ZramCharge::new(budget, 8 * MIB, Path::new(swapdev::ZRAM_SYS));
    let (charged, _, stats) = run_steps(&h, budget, Some(&mut charge));
    assert!(
        charged <= 0,
        "charged, usage plus pool stayed within the budget and one tick's growth \
         ({charged} bytes over)"
    );
    println!(
        "uncharged: {} KiB over; charged: {} KiB within; limit {} MiB; {}; {} pages out; \
         {:?} compressing; largest growth between ticks {} KiB",
        uncharged / 1024,
        -charged / 1024,
        charge.limit() >> 20,
        marvin_machine::zram_charge::pool_line(&stats),
        stats.pages_out,
        stats.compress_time,
        charge.largest_growth() / 1024
    );
    assert!(charge.limit() < budget, "the limit came down");
    assert!(stats.pages_out > 0 && stats.stored_bytes > 0);
    let ratio = stats.compression_ratio().unwrap();
    assert!(
        ratio > 2.0,
        "a quarter-random page compresses (ratio {ratio:.2})"
    );
    assert!(stats.compress_time.is_some());
    drop(zram);
    assert_eq!(
        marvin_machine::zram_charge::current_algorithm(Path::new(swapdev::ZRAM_SYS)).ok(),
        default_algorithm,
        "the reset put the default algorithm back"
    );
    assert_eq!(
        std::fs::read_to_string(Path::new(swapdev::ZRAM_SYS).join("disksize"))
            .unwrap()
            .trim(),
        "0",
        "zram0 was reset"
    );
}

#[test]
fn the_zram_charge_mechanism_follows_the_kernel() {
    let Some(h) = hierarchy() else { return };
    let group = h.create(&Limits::hard(16 * MIB)).unwrap();
    let m = Mechanism::choose(&group);
    match ZswapCharge::support(&group) {
        Ok(()) => assert_eq!(m, Mechanism::KernelZswap),
        Err(why) => assert_eq!(m, Mechanism::LimitLowered { why }),
    }
    if h.version == marvin_machine::Version::V1 {
        assert!(
            matches!(m, Mechanism::LimitLowered { .. }),
            "v1 charges no zswap"
        );
    }
}

#[test]
fn zswap_is_charged_by_the_kernel_where_it_can_be() {
    let Some(h) = hierarchy() else { return };
    let _one = machine_exclusive();
    let budget = 32 * MIB;
    let group = h
        .create(&Limits {
            max_bytes: budget,
            high_bytes: None,
            swappiness: None,
        })
        .unwrap();
    if let Err(why) = ZswapCharge::support(&group) {
        return println!("skipped: {why}");
    }
    let dir = tempfile::Builder::new()
        .prefix("marvin-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let swap = SwapDevice::enable_file(dir.path(), 128 * MIB, Some(swapdev::RUN_PRIORITY)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let zswap = ZswapCharge::enable(&group, "lz4", state.path()).unwrap();
    let mut kid = Kid::from(
        group
            .spawn_inside(&mut child_command("steps:4:12"))
            .unwrap(),
    );
    let mut largest_pool = 0;
    for _ in 0..12 {
        kid.expect("step");
        let usage = group.usage().unwrap();
        let pool = zswap.stats().unwrap();
        assert!(usage <= budget, "the pool is inside the group's limit");
        largest_pool = largest_pool.max(pool.pool_bytes);
        kid.say("go");
    }
    assert_eq!(kid.expect("done"), "ok");
    let stats = zswap.stats().unwrap();
    assert!(largest_pool > 0, "zswap held the group's pages");
    assert!(stats.compression_ratio().unwrap_or(0.0) > 2.0, "{stats:?}");
    assert_eq!(
        group.stat().unwrap().pswpout.unwrap_or(0),
        0,
        "nothing went to the disk"
    );
    drop(kid);
    drop(group);
    drop(zswap);
    swap.remove().unwrap();
}

#[test]
fn an_unknown_zram_algorithm_is_refused_and_leaves_the_device_free() {
    if hierarchy().is_none() {
        return;
    }
    let _one = machine_exclusive();
    if let Err(e) = swapdev::zram_free() {
        return println!("skipped: {e}");
    }
    let state = tempfile::tempdir().unwrap();
    let e = SwapDevice::enable_zram_with(state.path(), 64 * MIB, Some("no-such-algo"), None)
        .unwrap_err();
    assert!(e.to_string().contains("\"no-such-algo\""), "{e}");
    assert!(swapdev::zram_free().is_ok(), "the device is free again");
    assert_eq!(
        std::fs::read_dir(state.path()).unwrap().count(),
        0,
        "no marker left"
    );
}

#[test]
fn a_compacted_app_leaves_memory_and_reads_its_bytes_back() {
    if hierarchy().is_none() {
        return;
    }
    let _one = machine_exclusive();
    let dir = tempfile::Builder::new()
        .prefix("marvin-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let swap = SwapDevice::enable_file(dir.path(), 128 * MIB, Some(swapdev::RUN_PRIORITY)).unwrap();
    let mut kid = Kid::from(child_command("hold:32").spawn().unwrap());
    kid.expect("ready");
    let start = Instant::now();
    let done = compaction::page_out(kid.pid()).unwrap();
    println!(
        "paged out {} MiB of {} MiB in {:?}",
        done.paged_out() >> 20,
        done.rss_anon_before >> 20,
        start.elapsed()
    );
    assert!(done.rss_anon_before >= 32 * MIB, "{done:?}");
    assert!(
        done.rss_anon_after < done.rss_anon_before / 2,
        "resident anonymous memory fell: {done:?}"
    );
    assert!(done.paged_out() >= 16 * MIB && done.advised_bytes >= 32 * MIB);
    assert!(
        procfs::mem(kid.pid()).unwrap().swap >= 16 * MIB,
        "in swap now"
    );
    kid.say("verify");
    assert_eq!(kid.expect("intact"), "ok");
    drop(kid);
    swap.remove().unwrap();
}

#[test]
fn a_cached_app_frozen_and_compacted_comes_back_intact() {
    let Some(place) = freezer_place() else { return };
    if hierarchy().is_none() {
        return;
    }
    let _one = machine_exclusive();
    let dir = tempfile::Builder::new()
        .prefix("marvin-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let swap = SwapDevice::enable_file(dir.path(), 128 * MIB, Some(swapdev::RUN_PRIORITY)).unwrap();
    let mut freezer = Freezer::new(place).unwrap();
    let mut kid = Kid::from(child_command("hold:16").spawn().unwrap());
    kid.expect("ready");
    // Compacting needs nothing of the app: it works on a frozen one too.
    freezer.freeze(kid.pid()).unwrap();
    let done = compaction::page_out(kid.pid()).unwrap();
    assert!(
        done.rss_anon_after < done.rss_anon_before / 2,
        "frozen, its memory still went out: {done:?}"
    );
    assert!(
        freezer.is_frozen(kid.pid()).unwrap(),
        "and it stayed frozen"
    );
    freezer.thaw(kid.pid()).unwrap();
    kid.say("verify");
    assert_eq!(
        kid.expect("intact"),
        "ok",
        "brought back, its bytes are intact"
    );
    drop(kid);
    drop(freezer);
    swap.remove().unwrap();
}

#[test]
fn a_frozen_app_uses_no_cpu_and_answers_after_thawing() {
    let Some(place) = freezer_place() else { return };
    let Some(h) = hierarchy() else { return };
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    // Both freezers where a hybrid layout has both.
    let v2 = Place::v2_from_texts(&mountinfo).filter(|p| *p != place);
    for place in std::iter::once(place).chain(v2) {
        println!("with {:?}", place.version());
        freeze_and_thaw(&h, place);
    }
}

fn freeze_and_thaw(h: &Hierarchy, place: Place) {
    let group = h.create(&Limits::hard(256 * MIB)).unwrap();
    let mut freezer = Freezer::new(place).unwrap();
    let mut kid = Kid::from(group.spawn_inside(&mut child_command("spin")).unwrap());
    kid.expect("ready");
    let pid = kid.pid();
    let a = cpu_clock(pid);
    std::thread::sleep(Duration::from_millis(300));
    assert!(cpu_clock(pid).0 > a.0, "running, its clock advances");

    let freeze = freezer.freeze(pid).unwrap();
    assert!(freezer.is_frozen(pid).unwrap());
    let frozen_at = cpu_clock(pid);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(cpu_clock(pid), frozen_at, "frozen, its clock stands still");

    let thaw = freezer.thaw(pid).unwrap();
    assert!(!freezer.is_frozen(pid).unwrap());
    println!("froze in {freeze:?}, thawed in {thaw:?}");
    kid.say("ping 1");
    assert_eq!(kid.expect("pong"), "1", "thawed, it answers");
    assert!(cpu_clock(pid).0 > frozen_at.0);

    // Frozen again, its memory group's removal still ends it (on v1 a frozen task dies
    // only once thawed), and the freezer then removes its group.
    freezer.freeze(pid).unwrap();
    let frozen_group = freezer.group_of(pid).unwrap().to_path_buf();
    drop(group);
    assert_eq!(
        kid.wait(Duration::from_secs(10)).signal(),
        Some(libc::SIGKILL)
    );
    freezer.release(pid).unwrap();
    assert!(!frozen_group.exists(), "the freezer group is gone");
}

#[test]
fn dropping_the_freezer_thaws_and_removes_every_group() {
    let Some(place) = freezer_place() else { return };
    let mut freezer = Freezer::new(place).unwrap();
    let mut kids: Vec<Kid> = (0..2)
        .map(|_| Kid::from(child_command("spin").spawn().unwrap()))
        .collect();
    let mut groups = Vec::new();
    for k in &mut kids {
        k.expect("ready");
        freezer.freeze(k.pid()).unwrap();
        groups.push(freezer.group_of(k.pid()).unwrap().to_path_buf());
    }
    drop(freezer);
    for (i, k) in kids.iter_mut().enumerate() {
        assert!(!groups[i].exists(), "{} removed", groups[i].display());
        k.say(&format!("ping {i}"));
        assert_eq!(k.expect("pong"), i.to_string(), "thawed");
    }
}

/// Kills a process we did not start (a grandchild) when dropped.
struct KillOnDrop(Owner);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // Thaw whatever is left first: a v1-frozen task does not die.
        let _ = freezer::sweep(None);
        if self.0.is_alive() {
            if let Ok(fd) = marvin_machine::sys::pidfd_open(self.0.pid) {
                let _ = marvin_machine::sys::pidfd_send_signal(
                    std::os::fd::AsFd::as_fd(&fd),
                    libc::SIGKILL,
                );
            }
        }
    }
}

#[test]
fn a_frozen_group_left_by_a_sigkilled_run_is_thawed_and_removed_by_the_sweep() {
    let Some(place) = freezer_place() else { return };
    let Some(h) = hierarchy() else { return };
    let _one = machine_exclusive();
    let mut owner = Kid::from(child_command("freeze-owner").spawn().unwrap());
    let pid: u32 = owner.expect("pid").parse().unwrap();
    let spinner = KillOnDrop(Owner::of(pid).unwrap());
    let group = PathBuf::from(owner.expect("group"));
    owner.child.kill().unwrap();
    assert_eq!(
        owner.wait(Duration::from_secs(10)).signal(),
        Some(libc::SIGKILL)
    );
    assert!(group.exists(), "SIGKILL runs no guard");
    let frozen_at = cpu_clock(pid);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(cpu_clock(pid), frozen_at, "still frozen");

    // A live run's frozen group beside it is left alone.
    let mut mine = Freezer::new(place).unwrap();
    let mut own_kid = Kid::from(child_command("spin").spawn().unwrap());
    own_kid.expect("ready");
    mine.freeze(own_kid.pid()).unwrap();

    let removed = freezer::sweep(Some(&h.parent)).unwrap();
    assert!(removed.contains(&group), "swept {removed:?}");
    assert!(!group.exists());
    assert!(
        mine.is_frozen(own_kid.pid()).unwrap(),
        "the live run's app stays frozen"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(cpu_clock(pid).0 > frozen_at.0, "thawed, it runs again");
    drop(spinner);
    let end = Instant::now() + Duration::from_secs(10);
    while Owner::of(pid).map(|o| o.is_alive()).unwrap_or(false) {
        assert!(Instant::now() < end, "the thawed app dies of SIGKILL");
        std::thread::sleep(Duration::from_millis(10));
    }
}
