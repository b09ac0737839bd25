//! Large objects restored a run of pages at a time ([`marvin_swap::page_restore`]): a
//! fault brings back the object's first pages, every other page comes back on first
//! touch, and every word reads what was saved, on anonymous memory and on memory files;
//! after a reclaim of a partly restored object, a save of a changed one, a compaction,
//! an eager restore and a free, the words are still right (and a new object in freed
//! pages reads zeroes); a piece of the checkpoint corrupted on disk is an error naming
//! the object for an access that asks (and every later one) and ends the process for one
//! that never asks, instead of handing out its bytes; small, compressed and
//! reference-holding objects, and policies that turn it off, come back whole.

use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use marvin_runtime::ObjKind;
use marvin_runtime::{AccessKind, Barriers};
use marvin_runtime::{Handle, Heap, HeapConfig, LargeBacking};
use marvin_swap::page_restore::{self, PAGE, RUN_PAGES};
use marvin_swap::SLOT_HEADER_BYTES;
use marvin_swap::{reclaimer, restore, saver, AppSwap};
use marvin_swap::{Compression, PolicyConfig, RestoreMode};

/// Words of the large arrays: 64 Ki words, 512 KiB (129 pages with the header).
const WORDS: u32 = 64 << 10;

struct App {
    heap: Heap,
    swap: Arc<AppSwap>,
    _dir: tempfile::TempDir,
}

fn policy(page_min_bytes: u64) -> PolicyConfig {
    let mut p = PolicyConfig::default();
    p.restore.mode = RestoreMode::OnDemand;
    p.restore.page_min_bytes = page_min_bytes;
    p
}

fn app(policy: PolicyConfig, backing: LargeBacking) -> App {
    let heap = Heap::new(HeapConfig {
        handle_capacity: 1 << 12,
        large_backing: backing,
        ..HeapConfig::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let swap = AppSwap::attach(&heap, dir.path(), "app", Arc::new(policy), 1024, true).unwrap();
    heap.stub_space().unwrap().table.set_foreground(false);
    App {
        heap,
        swap,
        _dir: dir,
    }
}

fn pattern(seed: u64, i: usize) -> u64 {
    seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d)
}

impl App {
    /// A new, stubbed int array of `words` words holding `pattern(seed, i)`.
    fn array(&self, words: u32, seed: u64) -> Handle {
        let h = self.heap.alloc(ObjKind::IntArray, 0, words, 0).unwrap();
        let a = self.heap.access::<Barriers>(h, AccessKind::Write).unwrap();
        for (i, w) in a.obj().words().iter().enumerate() {
            w.store(pattern(seed, i), Relaxed);
        }
        drop(a);
        // SAFETY: single-threaded test: no mutator runs.
        assert!(unsafe { self.heap.stub_object(h) }.unwrap(), "stubbed");
        h
    }

    fn save_and_reclaim(&self) -> u64 {
        saver::save(&self.heap, &self.swap, Duration::MAX, true);
        reclaimer::reclaim_from(&self.heap, u64::MAX).objects
    }

    fn word(&self, h: Handle, i: usize) -> u64 {
        let a = self.heap.access::<Barriers>(h, AccessKind::Read).unwrap();
        a.obj().words()[i].load(Relaxed)
    }

    fn all_right(&self, h: Handle, seed: u64) {
        let a = self.heap.access::<Barriers>(h, AccessKind::Read).unwrap();
        for (i, w) in a.obj().words().iter().enumerate() {
            assert_eq!(w.load(Relaxed), pattern(seed, i), "word {i}");
        }
    }

    fn addr(&self, h: Handle) -> usize {
        self.heap.stub_space().unwrap().get(h).unwrap().addr
    }

    fn paged(&self) -> u64 {
        self.swap.counters.paged_objects.load(Relaxed)
    }

    fn read(&self) -> u64 {
        self.swap.counters.bytes_read.load(Relaxed)
    }
}

/// Skips (with the reason printed) where the kernel offers no userfaultfd.
fn available() -> bool {
    let ok = page_restore::available();
    if !ok {
        eprintln!("skipping: this kernel or sandbox offers no userfaultfd with SIGBUS");
    }
    ok
}

const BACKINGS: [LargeBacking; 2] = [LargeBacking::Anonymous, LargeBacking::Memfd];

#[test]
fn a_fault_brings_back_the_first_pages_and_a_touch_each_other_run_with_every_word_right() {
    if !available() {
        return;
    }
    for backing in BACKINGS {
        let a = app(policy(64 << 10), backing);
        let h = a.array(WORDS, 7);
        assert_eq!(a.save_and_reclaim(), 1);
        let before = a.read();
        // One word in the middle: the header's run, then the middle one's.
        let mid = WORDS as usize / 2;
        assert_eq!(a.word(h, mid), pattern(7, mid), "{backing:?}");
        assert_eq!(a.paged(), 1, "{backing:?}: restored a page run at a time");
        assert!(page_restore::is_paged(a.addr(h)));
        let first = a.read() - before;
        let run = (RUN_PAGES + 1) * PAGE;
        assert!(
            first <= 2 * run as u64,
            "{backing:?}: a touch of one word read {first} bytes"
        );
        // The last word, then every word.
        let last = WORDS as usize - 1;
        assert_eq!(a.word(h, last), pattern(7, last));
        a.all_right(h, 7);
        let all = a.read() - before;
        let payload = WORDS as u64 * 8;
        assert!(all >= payload, "{backing:?}: every byte came from the file");
        assert!(all < payload + 8 * run as u64, "{backing:?}: read {all}");
    }
}

#[test]
fn a_partly_restored_object_reclaimed_changed_saved_and_compacted_stays_right() {
    if !available() {
        return;
    }
    for backing in BACKINGS {
        let a = app(policy(64 << 10), backing);
        // The others' checkpoints come first in the file: freed, they leave dead space.
        let others: Vec<_> = (0..4).map(|s| a.array(WORDS, 100 + s)).collect();
        let h = a.array(WORDS, 11);
        assert_eq!(a.save_and_reclaim(), 5);
        assert_eq!(a.word(h, 9), pattern(11, 9));
        // Reclaimed again while most of its pages never came back: its next fault
        // starts over and every word is right.
        assert_eq!(a.save_and_reclaim(), 1, "{backing:?}");
        assert_eq!(a.word(h, 20_000), pattern(11, 20_000));
        assert_eq!(a.paged(), 2);
        // Changed while partly back: the save reads every page first.
        {
            let w = a.heap.access::<Barriers>(h, AccessKind::Write).unwrap();
            w.obj().words()[30_000].store(42, Relaxed);
        }
        assert_eq!(a.save_and_reclaim(), 1, "{backing:?}");
        assert_eq!(a.word(h, 1), pattern(11, 1));
        // The others come back (partly) and are freed: dead space, then a compaction
        // moves h's checkpoint while h is partly back.
        for (s, &o) in others.iter().enumerate() {
            assert_eq!(a.word(o, 3), pattern(100 + s as u64, 3));
        }
        // SAFETY: single-threaded test; the handles are dropped here.
        unsafe { a.heap.free_stubs(&others) };
        assert!(
            saver::compact_if_needed(&a.heap, &a.swap).unwrap(),
            "{backing:?}: compacted"
        );
        let r = a.heap.access::<Barriers>(h, AccessKind::Read).unwrap();
        for (i, w) in r.obj().words().iter().enumerate() {
            let want = if i == 30_000 { 42 } else { pattern(11, i) };
            assert_eq!(w.load(Relaxed), want, "{backing:?}: word {i}");
        }
    }
}

#[test]
fn an_eager_restore_after_a_partial_one_and_a_new_object_in_freed_pages_are_right() {
    if !available() {
        return;
    }
    let a = app(policy(64 << 10), LargeBacking::Memfd);
    let h = a.array(WORDS, 5);
    let g = a.array(WORDS, 6);
    assert_eq!(a.save_and_reclaim(), 2);
    assert_eq!(a.word(h, 100), pattern(5, 100));
    assert_eq!(a.word(g, 100), pattern(6, 100));
    assert_eq!(a.save_and_reclaim(), 2);
    let report = restore::restore_all(&a.heap, &a.swap);
    assert_eq!(report.objects, 2);
    assert!(
        !page_restore::is_paged(a.addr(h)),
        "the eager restore ended it"
    );
    a.all_right(h, 5);
    // g comes back partly, then is freed; a new array takes its pages and reads zeroes.
    assert_eq!(a.save_and_reclaim(), 2);
    assert_eq!(a.word(g, 7), pattern(6, 7));
    let addr = a.addr(g);
    assert!(page_restore::is_paged(addr));
    // SAFETY: single-threaded test; g is dropped here.
    unsafe { a.heap.free_stubs(&[g]) };
    assert!(!page_restore::is_paged(addr), "a free ends it");
    let n = a.heap.alloc(ObjKind::IntArray, 0, WORDS, 0).unwrap();
    let r = a.heap.access::<Barriers>(n, AccessKind::Read).unwrap();
    assert!(r.obj().words().iter().all(|w| w.load(Relaxed) == 0));
    drop(r);
    a.all_right(h, 5);
}

#[test]
fn small_compressed_or_unasked_objects_come_back_whole() {
    if !available() {
        return;
    }
    // Under the policy's size, or the policy says 0.
    for (min, words) in [(64 << 10, 4096), (0, WORDS)] {
        let a = app(policy(min), LargeBacking::Memfd);
        let h = a.array(words, 3);
        assert_eq!(a.save_and_reclaim(), 1);
        assert_eq!(a.word(h, 0), pattern(3, 0));
        assert_eq!(a.paged(), 0, "min {min}, {words} words");
        assert!(a.read() >= words as u64 * 8, "read whole");
    }
    // Compressed checkpoints keep no checksum per page.
    let mut p = policy(64 << 10);
    p.saver.compress = Compression::Lz4;
    let a = app(p, LargeBacking::Memfd);
    let h = a.heap.alloc(ObjKind::IntArray, 0, WORDS, 0).unwrap();
    // SAFETY: single-threaded test.
    assert!(unsafe { a.heap.stub_object(h) }.unwrap());
    assert_eq!(a.save_and_reclaim(), 1);
    assert_eq!(a.word(h, 5), 0);
    assert_eq!(a.paged(), 0, "compressed: whole");
}

/// The child of the corruption test (runs only when its parent asks).
#[test]
fn corrupted_piece_child() {
    if std::env::var_os("MARVIN_PAGE_RESTORE_CHILD").is_none() {
        return;
    }
    let a = app(policy(64 << 10), LargeBacking::Memfd);
    let h = a.array(WORDS, 9);
    assert_eq!(a.save_and_reclaim(), 1);
    assert_eq!(a.word(h, 0), pattern(9, 0));
    // One byte of a piece far from the first run, flipped on disk.
    let (path, slot) = {
        let f = a.swap.file.lock();
        let st = a.heap.stub_space().unwrap().get(h).unwrap();
        let slot = st.state.lock().slot().unwrap();
        (f.path().to_path_buf(), slot)
    };
    let at = slot + SLOT_HEADER_BYTES + 300 * 1024;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .open(path)
        .unwrap();
    let mut b = [0u8; 1];
    file.read_exact_at(&mut b, at).unwrap();
    file.write_all_at(&[b[0] ^ 0xff], at).unwrap();
    file.sync_all().unwrap();
    // Drop the cached copy so the read sees the disk.
    let _ = marvin_runtime::memfd::drop_cache(&file, 0);
    let word = 300 * 1024 / 8;
    let v = a.word(h, word);
    panic!("the touch returned {v:#x} from a corrupted piece");
}

#[test]
fn a_corrupted_piece_ends_the_process_with_an_error_naming_the_object() {
    if !available() {
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "corrupted_piece_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MARVIN_PAGE_RESTORE_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(page_restore::RUNTIME_ERROR_STATUS),
        "stderr: {stderr}"
    );
    assert!(
        stderr.contains("fail their checksum") && stderr.contains("cannot fault in object "),
        "stderr: {stderr}"
    );
    assert!(!stderr.contains("the touch returned"), "stderr: {stderr}");
}

/// A caller that asks ([`marvin_runtime::Access::check`], as the executor does
/// after every access) gets the damaged piece as an error naming the object, and the
/// process goes on: every later access fails the same way, and the saver never writes
/// the object's (zeroed) pages over its checkpoint.
#[test]
fn a_corrupted_piece_is_an_error_for_an_access_that_asks_and_for_every_later_one() {
    if !available() {
        return;
    }
    let a = app(policy(64 << 10), LargeBacking::Memfd);
    let h = a.array(WORDS, 13);
    assert_eq!(a.save_and_reclaim(), 1);
    assert_eq!(a.word(h, 0), pattern(13, 0));
    let (path, slot) = {
        let f = a.swap.file.lock();
        let st = a.heap.stub_space().unwrap().get(h).unwrap();
        let slot = st.state.lock().slot().unwrap();
        (f.path().to_path_buf(), slot)
    };
    let at = slot + SLOT_HEADER_BYTES + 300 * 1024;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .open(path)
        .unwrap();
    file.write_all_at(&[0xff; 8], at).unwrap();
    let word = 300 * 1024 / 8;
    let r = a.heap.access::<Barriers>(h, AccessKind::Read).unwrap();
    let v = r.obj().words()[word].load(Relaxed);
    let e = r.check().expect_err(&format!("the touch read {v:#x}"));
    drop(r);
    let e = e.to_string();
    assert!(
        e.contains(&format!("cannot fault in object {}", h.value())) && e.contains("checksum"),
        "{e}"
    );
    // Every later access, a write too, fails with the same error.
    for kind in [AccessKind::Read, AccessKind::Write] {
        let later = a.heap.access::<Barriers>(h, kind).err().expect("an error");
        assert_eq!(later.to_string(), e);
    }
    // Not saved over its checkpoint, not restored.
    let report = saver::save(&a.heap, &a.swap, Duration::MAX, true);
    assert_eq!(report.saved_objects, 0);
    assert!(restore::restore_all(&a.heap, &a.swap).objects == 0);
}
