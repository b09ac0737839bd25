//! The reclaim table's flags are never trusted, with the reclaimer acting from another
//! process as `marvin reclaim` and the System's reclaimer do ([`ExternalApp`]): for
//! every flag bit of an entry (and two bits no runtime sets), and for an entry in each
//! state (resident and never saved; saved and clean; saved, then written: dirty;
//! reclaimed; held by a reclaimer while dirty), a child app process (this test binary
//! started again) holds one object, this process flips the bit in the app's table file,
//! reclaims from outside, has the app save, reclaims again, and has the app read the
//! object back: its latest bytes or an error naming it, never an older or zeroed value.
//!
//! Before the app kept its own record of each checkpoint, a dirty entry with CLEAN set
//! was punched from outside and faulted back as its older checkpoint: a wrong value.
//!
//! A custom `main` (no libtest harness), as `external_reclaim.rs`: with
//! `MARVIN_FLAGS_APP` set the binary plays the app and talks over stdin and stdout.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use marvin_runtime::{EntryFlags, EntryId};
use marvin_swap::external::{table_path, ExternalApp};

const APP_ENV: &str = "MARVIN_FLAGS_APP";
const STATE_ENV: &str = "MARVIN_FLAGS_STATE";
const NAME: &str = "app";

const STATES: [&str; 5] = ["resident", "clean", "dirty", "reclaimed", "locked"];

fn main() {
    if let Ok(dir) = std::env::var(APP_ENV) {
        let state = std::env::var(STATE_ENV).unwrap();
        std::process::exit(app::main(Path::new(&dir), &state));
    }
    let tests: [(&str, fn()); 2] = [
        (
            "every_flag_flipped_in_every_state_gives_the_latest_bytes_or_an_error_from_outside",
            every_flag_flipped_in_every_state,
        ),
        (
            "two_entries_over_the_same_pages_refuse_the_table",
            two_entries_over_the_same_pages_refuse_the_table,
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
    use marvin_swap::{saver, AppSwap, PolicyConfig};

    /// A 128 KiB int array.
    const WORDS: u32 = 16 << 10;

    fn pattern(seed: u64, i: usize) -> u64 {
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

    fn write(heap: &Heap, h: Handle, seed: u64) {
        let a = heap.access::<Barriers>(h, AccessKind::Write).unwrap();
        for (i, w) in a.obj().words().iter().enumerate() {
            w.store(pattern(seed, i), Relaxed);
        }
        a.check().unwrap();
    }

    /// `right`, `error MESSAGE` or `wrong WORD FOUND`.
    fn read_back(heap: &Heap, h: Handle, seed: u64) -> String {
        let a = match heap.access::<Barriers>(h, AccessKind::Read) {
            Ok(a) => a,
            Err(e) => return format!("error {e}"),
        };
        let words: Vec<u64> = a.obj().words().iter().map(|w| w.load(Relaxed)).collect();
        if let Err(e) = a.check() {
            return format!("error {e}");
        }
        match (0..words.len()).find(|&i| words[i] != pattern(seed, i)) {
            None => "right".to_string(),
            Some(i) => format!("wrong {i} {:#x}", words[i]),
        }
    }

    /// One object in `state`; says `ready ENTRY`, then obeys `save` (says `saved`) and
    /// `verify` (says what reading it back gave, and exits).
    pub fn main(dir: &Path, state: &str) -> i32 {
        let heap = Heap::new(HeapConfig {
            handle_capacity: 1 << 10,
            large_backing: LargeBacking::Memfd,
            ..HeapConfig::default()
        })
        .unwrap();
        let policy = Arc::new(PolicyConfig::default());
        let swap = AppSwap::attach(&heap, dir, super::NAME, policy, 64, true).unwrap();
        let h = heap.alloc(ObjKind::IntArray, 0, WORDS, 0).unwrap();
        write(&heap, h, 1);
        // SAFETY: this thread is the heap's only user.
        assert!(unsafe { heap.stub_object(h) }.unwrap());
        let space = heap.stub_space().unwrap();
        space.table.set_foreground(false);
        let save = || saver::save(&heap, &swap, Duration::MAX, true);
        let mut latest = 1;
        if state != "resident" {
            assert_eq!(save().saved_objects, 1);
        }
        if state == "dirty" || state == "locked" {
            write(&heap, h, 2);
            latest = 2;
        }
        say(&format!("ready {}", space.get(h).unwrap().entry.index()));
        loop {
            match hear().as_str() {
                "save" => {
                    save();
                    say("saved");
                }
                "verify" => {
                    say(&read_back(&heap, h, latest));
                    return 0;
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
    entry: EntryId,
}

impl AppProcess {
    fn start(state: &str) -> AppProcess {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(APP_ENV, dir.path())
            .env(STATE_ENV, state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut app = AppProcess {
            child,
            stdin,
            stdout,
            dir,
            entry: EntryId::from_index(0),
        };
        let ready = app.hear();
        let index = ready
            .strip_prefix("ready ")
            .expect("ready")
            .parse()
            .unwrap();
        app.entry = EntryId::from_index(index);
        app
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
        ExternalApp::open(self.child.id(), self.dir.path(), NAME).unwrap()
    }

    /// XORs `bit` into the entry's flag word through the table file, as another process
    /// with the file could.
    fn flip(&self, bit: u32) {
        let at = 64 + 32 * self.entry.index() as u64;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(table_path(self.dir.path(), NAME))
            .unwrap();
        let mut word = [0u8; 4];
        f.read_exact_at(&mut word, at).unwrap();
        let flipped = u32::from_le_bytes(word) ^ bit;
        f.write_all_at(&flipped.to_le_bytes(), at).unwrap();
    }
}

impl Drop for AppProcess {
    fn drop(&mut self) {
        // Only our own child, by its handle; it may be gone already.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One case; what the app read back.
fn case(state: &str, bit: u32) -> String {
    let mut app = AppProcess::start(state);
    let mut ext = app.open();
    if state == "reclaimed" {
        assert_eq!(ext.reclaim(u64::MAX).objects, 1, "reclaimed from outside");
    }
    if state == "locked" {
        let entry = ext.table().get(app.entry).unwrap();
        let guard = entry.try_lock_reclaimer().expect("the reclaimer's lock");
        app.flip(bit);
        drop(guard);
    } else {
        app.flip(bit);
    }
    ext.reclaim(u64::MAX);
    app.say("save");
    assert_eq!(app.hear(), "saved");
    ext.reclaim(u64::MAX);
    app.say("verify");
    app.hear()
}

fn every_flag_flipped_in_every_state() {
    let mut bits: Vec<u32> = EntryFlags::all().iter().map(|f| f.bits()).collect();
    bits.extend([1 << 6, 1 << 31]);
    let (mut right, mut errors) = (0, 0);
    for state in STATES {
        for &bit in &bits {
            let got = case(state, bit);
            if got == "right" {
                right += 1;
            } else if let Some(e) = got.strip_prefix("error ") {
                assert!(e.contains("object "), "{state} bit {bit:#x}: {e}");
                errors += 1;
            } else {
                panic!("{state} with bit {bit:#x} flipped: the app read {got}");
            }
        }
    }
    print!("[{right} right, {errors} errors] ");
    assert!(right > 0 && errors > 0);
    // The case that handed out an older checkpoint before: now an error.
    let got = case("dirty", EntryFlags::CLEAN.bits());
    assert!(got.contains("written after its last checkpoint"), "{got}");
}

/// Two entries over the same pages (one could say resident and the other reclaimed of
/// them): the reclaimer from outside, which knows nothing of the app but its table,
/// refuses the table and takes nothing, not even the entries that are fine; with the
/// entry put right, it takes both. (This process plays the app.)
fn two_entries_over_the_same_pages_refuse_the_table() {
    use std::sync::Arc;
    use std::time::Duration;

    use marvin_runtime::{Heap, HeapConfig, LargeBacking, ObjKind};
    use marvin_swap::{saver, AppSwap, PolicyConfig};

    let heap = Heap::new(HeapConfig {
        handle_capacity: 1024,
        large_backing: LargeBacking::Memfd,
        ..HeapConfig::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policy = Arc::new(PolicyConfig::default());
    let swap = AppSwap::attach(&heap, dir.path(), NAME, policy, 64, true).unwrap();
    let handles: Vec<_> = (0..2)
        .map(|_| heap.alloc(ObjKind::IntArray, 0, 509, 0).unwrap())
        .collect();
    for &h in &handles {
        // SAFETY: single-threaded: no mutator runs.
        assert!(unsafe { heap.stub_object(h) }.unwrap());
    }
    let space = heap.stub_space().unwrap();
    space.table.set_foreground(false);
    assert_eq!(
        saver::save(&heap, &swap, Duration::MAX, true).saved_objects,
        2
    );
    let entries: Vec<EntryId> = handles
        .iter()
        .map(|&h| space.get(h).unwrap().entry)
        .collect();
    let addr_at = |e: EntryId| 64 + 32 * e.index() as u64 + 8;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(table_path(dir.path(), NAME))
        .unwrap();
    let mut own = [0u8; 8];
    file.read_exact_at(&mut own, addr_at(entries[1])).unwrap();
    let mut first = [0u8; 8];
    file.read_exact_at(&mut first, addr_at(entries[0])).unwrap();
    file.write_all_at(&first, addr_at(entries[1])).unwrap();
    let mut ext = ExternalApp::open(std::process::id(), dir.path(), NAME).unwrap();
    let r = ext.reclaim(u64::MAX);
    assert_eq!((r.objects, r.bytes), (0, 0), "{r:?}");
    let refusal = r.refused.expect("refused");
    assert!(
        refusal
            .to_string()
            .contains("overlaps the pages of another entry"),
        "{refusal}"
    );
    for &e in &entries {
        let entry = space.table.entry(e);
        assert!(
            entry.is_resident() && !entry.is_reclaimer_locked(),
            "nothing marked"
        );
    }
    file.write_all_at(&own, addr_at(entries[1])).unwrap();
    let r = ext.reclaim(u64::MAX);
    assert_eq!((r.objects, r.refused), (2, None), "{r:?}");
}
