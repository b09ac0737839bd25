//! The reclaimer acting on another process: a child process (this test binary started
//! again in the app role) fills large objects in memory-file-backed regions, saves them
//! and goes to the background; this process opens its reclaim table and regions and
//! reclaims from outside; the child's shared resident memory must drop by about what was
//! taken, and the child must get every byte of every object back.
//!
//! A custom `main` (no libtest harness) so the same binary can play the app: with
//! `MARVIN_XPROC_APP` set it runs [`app::main`] and talks to its parent over stdin and
//! stdout, one line per step.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use marvin_runtime::ReclaimTableView;
use marvin_runtime::RegionDirectory;
use marvin_runtime::{Heap, HeapConfig, LargeBacking};
use marvin_swap::external::{regions_path, table_path, AppMemory, ExternalApp, ExternalError};
use marvin_swap::{AppSwap, PolicyConfig};

const APP_ENV: &str = "MARVIN_XPROC_APP";
const NAME: &str = "app";
const MIB: u64 = 1 << 20;

fn main() {
    if let Ok(dir) = std::env::var(APP_ENV) {
        std::process::exit(app::main(Path::new(&dir)));
    }
    let tests: [(&str, fn()); 6] = [
        (
            "reclaim_from_outside_returns_the_pages_and_the_app_gets_every_byte_back",
            reclaim_from_outside_returns_the_pages_and_the_app_gets_every_byte_back,
        ),
        (
            "an_app_in_the_foreground_loses_nothing",
            an_app_in_the_foreground_loses_nothing,
        ),
        (
            "a_damaged_or_foreign_region_directory_is_refused",
            a_damaged_or_foreign_region_directory_is_refused,
        ),
        (
            "a_table_of_another_run_is_refused_by_run_id",
            a_table_of_another_run_is_refused_by_run_id,
        ),
        (
            "an_entry_the_app_holds_is_skipped_not_waited_for",
            an_entry_the_app_holds_is_skipped_not_waited_for,
        ),
        (
            "a_region_added_after_opening_is_found_by_reading_the_directory_again",
            a_region_added_after_opening_is_found_by_reading_the_directory_again,
        ),
    ];
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        print!("test {name} ... ");
        std::io::stdout().flush().unwrap();
        test();
        println!("ok");
    }
}

/// The app process's side.
mod app {
    use std::io::{BufRead, Write};
    use std::path::Path;
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::Arc;
    use std::time::Duration;

    use marvin_runtime::ObjKind;
    use marvin_runtime::{AccessKind, Barriers};
    use marvin_runtime::{Handle, Heap, HeapConfig, LargeBacking};
    use marvin_swap::{restore, saver, stubber, AppSwap, PolicyConfig};

    /// One-page int arrays (509 words and the 16-byte header).
    pub const WORDS: u32 = 509;

    pub fn pattern(seed: u64, i: usize) -> u64 {
        seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn say(line: &str) {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}").unwrap();
        out.flush().unwrap();
    }

    fn hear() -> String {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).unwrap();
        line.trim().to_string()
    }

    /// Every word of every array, read through the barrier (faulting in what is out):
    /// the arrays that differ from their pattern.
    fn wrong(heap: &Heap, handles: &[Handle]) -> usize {
        handles
            .iter()
            .enumerate()
            .filter(|&(k, &h)| {
                let a = heap.access::<Barriers>(h, AccessKind::Read).unwrap();
                let words = a.obj().words();
                words.len() != WORDS as usize
                    || words
                        .iter()
                        .enumerate()
                        .any(|(i, w)| w.load(Relaxed) != pattern(k as u64, i))
            })
            .count()
    }

    /// Fills `MARVIN_XPROC_MIB` MiB of arrays, stubs and saves them, goes to the
    /// background (or stays in the foreground with `MARVIN_XPROC_FG`), says `ready N`,
    /// then obeys: `verify` (check every byte, report, exit), `fg` (come to the foreground
    /// and restore eagerly, say `restored`).
    pub fn main(dir: &Path) -> i32 {
        let mib: u64 = std::env::var("MARVIN_XPROC_MIB").unwrap().parse().unwrap();
        let n = (mib << 20) / 4096;
        let heap = Heap::new(HeapConfig {
            handle_capacity: (n as u32 + 1024).next_power_of_two(),
            large_backing: LargeBacking::Memfd,
            ..HeapConfig::default()
        })
        .unwrap();
        let handles: Vec<Handle> = (0..n)
            .map(|k| {
                let h = heap.alloc(ObjKind::IntArray, u32::MAX, WORDS, 0).unwrap();
                let a = heap.access::<Barriers>(h, AccessKind::Write).unwrap();
                for (i, w) in a.obj().words().iter().enumerate() {
                    w.store(pattern(k, i), Relaxed);
                }
                h
            })
            .collect();
        let policy = Arc::new(PolicyConfig::default());
        let swap = AppSwap::attach(&heap, dir, super::NAME, policy, n as u32 + 1024, true).unwrap();
        // SAFETY: this thread is the heap's only user.
        let stubbed = unsafe { stubber::stub_candidates(&heap, &*swap.policy) }.unwrap();
        assert_eq!(stubbed.objects, n);
        let space = heap.stub_space().unwrap();
        space
            .table
            .set_foreground(std::env::var_os("MARVIN_XPROC_FG").is_some());
        let saved = saver::save(&heap, &swap, Duration::MAX, true);
        assert_eq!(saved.saved_objects, n);
        say(&format!("ready {n}"));
        loop {
            match hear().as_str() {
                "fg" => {
                    space.table.set_foreground(true);
                    let r = restore::restore_all(&heap, &swap);
                    assert!(r.errors.is_empty(), "{:?}", r.errors);
                    say(&format!("restored {}", r.objects));
                }
                "verify" => {
                    let faults_before = space.counters.faults.load(Relaxed);
                    let bad = wrong(&heap, &handles);
                    let c = &space.counters;
                    let back = c.faults.load(Relaxed) - faults_before
                        + swap.counters.read_ahead_objects.load(Relaxed);
                    let (outside, _) = space.table.reclaimed_out();
                    say(&format!(
                        "verified wrong={bad} back={back} out_now={} reclaimed_outside={outside}",
                        space.out_bytes()
                    ));
                    return if bad == 0 { 0 } else { 1 };
                }
                other => panic!("unknown command {other:?}"),
            }
        }
    }
}

/// A child app process, killed if the test fails before it exits.
struct AppProcess {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    dir: tempfile::TempDir,
}

impl AppProcess {
    fn start(mib: u64, foreground: bool) -> AppProcess {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.env(APP_ENV, dir.path())
            .env("MARVIN_XPROC_MIB", mib.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if foreground {
            cmd.env("MARVIN_XPROC_FG", "1");
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut app = AppProcess {
            child,
            stdin,
            stdout,
            dir,
        };
        let ready = app.hear();
        assert_eq!(ready, format!("ready {}", mib * MIB / 4096));
        app
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn hear(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "the app process ended early");
        line.trim().to_string()
    }

    fn open(&self) -> ExternalApp {
        ExternalApp::open(self.pid(), self.dir.path(), NAME).unwrap()
    }

    /// `verify`, then the app's report and its exit status.
    fn verify(mut self) -> (String, i32) {
        self.say("verify");
        let report = self.hear();
        let status = self.child.wait().unwrap();
        (report, status.code().unwrap_or(-1))
    }

    /// The child's resident shared memory (`RssShmem` of `/proc/PID/status`), bytes.
    fn rss_shmem(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let line = status
            .lines()
            .find(|l| l.starts_with("RssShmem:"))
            .expect("RssShmem in /proc/PID/status");
        let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kb * 1024
    }
}

impl Drop for AppProcess {
    fn drop(&mut self) {
        // Only our own child, by its handle; it may be gone already.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn field(report: &str, key: &str) -> u64 {
    report
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key} in {report:?}"))
        .parse()
        .unwrap()
}

fn reclaim_from_outside_returns_the_pages_and_the_app_gets_every_byte_back() {
    let mib = 64;
    let app = AppProcess::start(mib, false);
    let mut ext = app.open();
    assert_eq!(ext.memory().regions(), 1);
    let before = app.rss_shmem();
    assert!(before >= mib * MIB, "the objects are resident: {before}");
    let r = ext.reclaim(u64::MAX);
    let after = app.rss_shmem();
    assert_eq!(r.objects, mib * MIB / 4096);
    assert_eq!(r.bytes, mib * MIB);
    assert_eq!(r.contended + r.unreachable + r.failed_calls, 0);
    // Neighbours coalesced: one hole for the whole run.
    assert_eq!(r.madvise_calls, 1);
    let dropped = before.saturating_sub(after);
    // On the test's own line of stdout (`test NAME ... [...] ok`), not loose on stderr.
    print!(
        "[RssShmem of the app {} -> {} MiB after reclaiming {} MiB from outside in {:?}] ",
        before / MIB,
        after / MIB,
        r.bytes / MIB,
        r.latency
    );
    assert!(
        dropped >= r.bytes * 95 / 100,
        "the app's shared resident memory dropped by {dropped} bytes of {} reclaimed",
        r.bytes
    );
    // Booked where the app sees it.
    assert_eq!(ext.table().reclaimed_out(), (r.bytes, r.objects));
    // Nothing is left to take.
    assert_eq!(ext.reclaim(u64::MAX).bytes, 0);
    let (report, code) = app.verify();
    assert_eq!(code, 0, "{report}");
    assert_eq!(field(&report, "wrong"), 0, "{report}");
    assert_eq!(field(&report, "back"), r.objects, "{report}");
    assert_eq!(field(&report, "out_now"), 0, "{report}");
    assert_eq!(field(&report, "reclaimed_outside"), r.bytes, "{report}");
}

fn an_app_in_the_foreground_loses_nothing() {
    // In the foreground from the start: nothing is taken.
    let app = AppProcess::start(8, true);
    let mut ext = app.open();
    let before = app.rss_shmem();
    let r = ext.reclaim(u64::MAX);
    assert_eq!((r.objects, r.bytes), (0, 0));
    assert!(app.rss_shmem() + MIB >= before);
    let (report, code) = app.verify();
    assert_eq!((code, field(&report, "back")), (0, 0), "{report}");

    // In the background, reclaimed, then back to the foreground: after its eager
    // restore, a reclaimer takes nothing more and the app faults nothing in.
    let mut app = AppProcess::start(8, false);
    let mut ext = app.open();
    let taken = ext.reclaim(u64::MAX);
    assert_eq!(taken.bytes, 8 * MIB);
    app.say("fg");
    let restored = app.hear();
    assert_eq!(restored, format!("restored {}", taken.objects));
    assert!(ext.table().is_foreground());
    let again = ext.reclaim(u64::MAX);
    assert_eq!((again.objects, again.bytes), (0, 0));
    assert!(app.rss_shmem() >= 8 * MIB);
    let (report, code) = app.verify();
    assert_eq!(code, 0, "{report}");
    assert_eq!(field(&report, "wrong"), 0, "{report}");
    assert_eq!(
        field(&report, "back"),
        0,
        "nothing faulted after the restore: {report}"
    );
}

/// A memory-file heap of this process with one saved, background object, its swap
/// directory published.
fn own_app() -> (Heap, std::sync::Arc<AppSwap>, tempfile::TempDir) {
    let heap = Heap::new(HeapConfig {
        handle_capacity: 1024,
        large_backing: LargeBacking::Memfd,
        ..HeapConfig::default()
    })
    .unwrap();
    let h = heap
        .alloc(marvin_runtime::ObjKind::IntArray, u32::MAX, 509, 0)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let swap = AppSwap::attach(
        &heap,
        dir.path(),
        NAME,
        std::sync::Arc::new(PolicyConfig::default()),
        64,
        true,
    )
    .unwrap();
    // SAFETY: single-threaded: no mutator runs.
    assert!(unsafe { heap.stub_object(h) }.unwrap());
    heap.stub_space().unwrap().table.set_foreground(false);
    let saved = marvin_swap::saver::save(&heap, &swap, std::time::Duration::MAX, true);
    assert_eq!(saved.saved_objects, 1);
    (heap, swap, dir)
}

/// The System opens an app by the run id the app gave it: the table of that run is
/// taken, a table whose header names another run (left in or written into the directory,
/// by this very pid too) is refused naming both runs, before any entry is read.
fn a_table_of_another_run_is_refused_by_run_id() {
    use marvin_runtime::RunIdentity;
    use marvin_swap::external::parse_run_id;
    let (_heap, _swap, dir) = own_app();
    let me = std::process::id();
    let mine = *RunIdentity::current();
    assert_eq!(
        parse_run_id(&mine.id_hex()),
        Some(mine.id),
        "the wire form reads back"
    );
    for bad in [
        "",
        "xyz",
        &mine.id_hex()[1..],
        &format!("{}0", mine.id_hex()),
    ] {
        assert_eq!(parse_run_id(bad), None, "{bad:?}");
    }
    let ext = ExternalApp::open_run(me, &mine.id, dir.path(), NAME).unwrap();
    assert_eq!(ext.table().owner().run, mine.id);
    drop(ext);

    // The app said another run id than the table's.
    let other = RunIdentity::fresh();
    let err = ExternalApp::open_run(me, &other.id, dir.path(), NAME).unwrap_err();
    assert!(matches!(err, ExternalError::WrongRun { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "belongs to run {}, not to the app's run {}",
            mine.id_hex(),
            other.id_hex()
        )),
        "{text}"
    );

    // Another run's table over ours, with our pid in it: the pid check alone takes it,
    // the run check does not.
    use std::os::unix::fs::FileExt;
    let path = table_path(dir.path(), NAME);
    let table = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    table.write_all_at(&other.id, 48).unwrap();
    assert!(ExternalApp::open(me, dir.path(), NAME).is_ok());
    let err = ExternalApp::open_run(me, &mine.id, dir.path(), NAME).unwrap_err();
    assert!(matches!(err, ExternalError::WrongRun { .. }), "{err}");
    table.write_all_at(&mine.id, 48).unwrap();
    ExternalApp::open_run(me, &mine.id, dir.path(), NAME).unwrap();
}

fn a_damaged_or_foreign_region_directory_is_refused() {
    let (_heap, _swap, dir) = own_app();
    let me = std::process::id();
    let path = regions_path(dir.path(), NAME);
    let good = std::fs::read(&path).unwrap();
    assert!(AppMemory::open(me, &path).is_ok());

    // Another process's directory.
    let err = AppMemory::open(me + 1, &path).unwrap_err();
    assert!(matches!(err, ExternalError::WrongProcess { .. }), "{err}");

    // Garbage, a truncated file, a flipped byte: refused, saying why.
    for bad in [vec![0x5a; 4096], good[..good.len() - 3].to_vec(), {
        let mut b = good.clone();
        b[33] ^= 0x40;
        b
    }] {
        std::fs::write(&path, &bad).unwrap();
        let err = AppMemory::open(me, &path).unwrap_err().to_string();
        assert!(err.contains("is not a valid region directory"), "{err}");
    }

    // Well-formed, but naming a descriptor that is not the region's memory file.
    let mut d = RegionDirectory::decode(&good).unwrap();
    let stranger = std::fs::File::open(table_path(dir.path(), NAME)).unwrap();
    use std::os::fd::AsRawFd;
    d.regions[0].fd = stranger.as_raw_fd();
    d.write(&path).unwrap();
    let err = AppMemory::open(me, &path).unwrap_err().to_string();
    assert!(err.contains("not the published memory file"), "{err}");

    // A table whose header names another process (another run's table in the directory).
    std::fs::write(&path, &good).unwrap();
    {
        use std::os::unix::fs::FileExt;
        let table = std::fs::OpenOptions::new()
            .write(true)
            .open(table_path(dir.path(), NAME))
            .unwrap();
        let mine = std::fs::read(table_path(dir.path(), NAME)).unwrap();
        table.write_all_at(&(me + 1).to_le_bytes(), 20).unwrap();
        let err = ExternalApp::open(me, dir.path(), NAME)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("belongs to process {}, not {me}", me + 1)),
            "{err}"
        );
        table.write_all_at(&mine[20..24], 20).unwrap();
        ExternalApp::open(me, dir.path(), NAME).unwrap();
    }

    // A region directory without a table beside it.
    std::fs::write(&path, &good).unwrap();
    std::fs::remove_file(table_path(dir.path(), NAME)).unwrap();
    let err = ExternalApp::open(me, dir.path(), NAME)
        .unwrap_err()
        .to_string();
    assert!(err.contains("reclaim table"), "{err}");
}

fn an_entry_the_app_holds_is_skipped_not_waited_for() {
    let (heap, _swap, dir) = own_app();
    let me = std::process::id();
    let table = ReclaimTableView::open(&table_path(dir.path(), NAME)).unwrap();
    let memory = AppMemory::open(me, &regions_path(dir.path(), NAME)).unwrap();
    let mut ext = ExternalApp::new(table, memory).unwrap();
    let space = heap.stub_space().unwrap();
    let (id, entry) = space.table.iter_occupied().next().unwrap();
    {
        let _held = entry.lock_shared().unwrap();
        // Held by an app thread: passed over at once (a reclaimer never waits).
        let r = ext.reclaim(u64::MAX);
        assert_eq!((r.objects, r.bytes), (0, 0));
        assert!(space.table.entry(id).is_resident());
    }
    let r = ext.reclaim(u64::MAX);
    assert_eq!((r.objects, r.bytes), (1, 4096));
    assert!(!space.table.entry(id).is_resident());
    assert_eq!(space.out_bytes(), 4096);
}

fn a_region_added_after_opening_is_found_by_reading_the_directory_again() {
    use marvin_runtime::ObjKind;
    use marvin_runtime::PAGE;
    use marvin_runtime::REGION_BYTES;
    use marvin_runtime::{AccessKind, Barriers};
    use std::sync::atomic::Ordering::Relaxed;

    let heap = Heap::new(HeapConfig {
        handle_capacity: 1024,
        large_backing: LargeBacking::Memfd,
        ..HeapConfig::default()
    })
    .unwrap();
    // One page in the first region, the swap side attached (it publishes the
    // directory), and the System's view opened now: one region.
    let first = heap.alloc(ObjKind::IntArray, u32::MAX, 509, 0).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let swap = AppSwap::attach(
        &heap,
        dir.path(),
        NAME,
        std::sync::Arc::new(PolicyConfig::default()),
        64,
        true,
    )
    .unwrap();
    let me = std::process::id();
    let mut ext = ExternalApp::open(me, dir.path(), NAME).unwrap();
    assert_eq!(ext.memory().regions(), 1);

    // Fill the first region to one page short (the filler is never touched beyond its
    // header, so its memory-file pages stay holes), then a two-page array needs a second
    // region, which the app publishes by rewriting the directory.
    let filler_words = ((REGION_BYTES - 2 * PAGE - 16) / 8) as u32;
    let _filler = heap
        .alloc(ObjKind::IntArray, u32::MAX, filler_words, 0)
        .unwrap();
    let second = heap.alloc(ObjKind::IntArray, u32::MAX, 1022, 0).unwrap();
    assert_eq!(
        RegionDirectory::read(&regions_path(dir.path(), NAME))
            .unwrap()
            .regions
            .len(),
        2,
        "the app published its second region"
    );
    assert_eq!(ext.memory().regions(), 1, "the System has not looked yet");
    {
        let a = heap.access::<Barriers>(second, AccessKind::Write).unwrap();
        for (i, w) in a.obj().words().iter().enumerate() {
            w.store(i as u64 ^ 0x5eed, Relaxed);
        }
    }
    for h in [first, second] {
        // SAFETY: single-threaded: no mutator runs.
        assert!(unsafe { heap.stub_object(h) }.unwrap());
    }
    let space = heap.stub_space().unwrap();
    space.table.set_foreground(false);
    let saved = marvin_swap::saver::save(&heap, &swap, std::time::Duration::MAX, true);
    assert_eq!(saved.saved_objects, 2);

    // One reclaim reaches both: the object in the new region makes the reclaimer read
    // the directory again and open the new region's memory file.
    let r = ext.reclaim(u64::MAX);
    assert_eq!(ext.memory().regions(), 2, "the directory was read again");
    assert_eq!((r.objects, r.bytes), (2, (PAGE + 2 * PAGE) as u64));
    assert_eq!(r.unreachable, 0);
    assert_eq!(space.out_bytes(), (3 * PAGE) as u64);

    // The app gets the second region's object back, every word.
    let a = heap.access::<Barriers>(second, AccessKind::Read).unwrap();
    let words = a.obj().words();
    assert_eq!(words.len(), 1022);
    assert!(words
        .iter()
        .enumerate()
        .all(|(i, w)| w.load(Relaxed) == i as u64 ^ 0x5eed));
}
