//! The memory-management invariants of the design page, one test (or more) each, on a
//! hand-built swapping heap: barrier bits, stub reference copies, object faults, the
//! reclaimer's rules, the ahead-of-time checkpoint protocol, restore, no disk I/O on a
//! reclaim, compaction, and the bookmarking collector. Each test would fail if its
//! invariant broke.

mod common;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use common::{expected, pattern, Fixture, WORDS};
use marvin_runtime::EntryFlags;
use marvin_runtime::{AccessKind, Barriers, NoBarriers};
use marvin_runtime::{Handle, PAGE};
use marvin_runtime::{HeaderBits, ObjKind};
use marvin_swap::{reclaimer, restore, saver};
use marvin_swap::{PolicyConfig, RestoreMode, SwapPolicy, VictimOrder};

/// Bytes a reclaim of one test array returns: header and 8 KiB of payload, in pages.
const ARRAY_PAGES_BYTES: u64 = 3 * PAGE as u64;

const ACCESS_BITS: HeaderBits = HeaderBits::READ
    .union(HeaderBits::WRITE)
    .union(HeaderBits::DIRTY);

/// Ages every object enough rounds that nothing counts as recently accessed.
fn age_until_cold(f: &Fixture) {
    for _ in 0..5 {
        // SAFETY: single-threaded test: no mutator runs.
        unsafe { marvin_gc::walk_working_set(&f.heap) };
    }
}

// ---------------------------------------------------------------------------------------
// Heap and barrier
// ---------------------------------------------------------------------------------------

#[test]
fn every_barrier_read_sets_read_and_every_write_sets_write_and_dirty() {
    let f = Fixture::new();
    // The fast path: an object reached straight from its handle.
    let h = f.heap.alloc(ObjKind::IntArray, 0, WORDS, 0).unwrap();
    // SAFETY: single-threaded test; `h` is live and resident.
    let hdr = unsafe { f.heap.raw_object(h) }.unwrap().header();
    assert_eq!(hdr.bits() & ACCESS_BITS, HeaderBits::empty());
    f.heap.access::<Barriers>(h, AccessKind::Read).unwrap();
    assert_eq!(hdr.bits() & ACCESS_BITS, HeaderBits::READ);
    hdr.clear(HeaderBits::READ);
    f.heap.access::<Barriers>(h, AccessKind::Write).unwrap();
    assert_eq!(
        hdr.bits() & ACCESS_BITS,
        HeaderBits::WRITE | HeaderBits::DIRTY
    );

    // The stub path: the same bits, and a write makes the checkpoint unclean.
    let (h, s) = f.stubbed(1);
    assert_eq!(f.save_all().saved_objects, 1);
    {
        let _g = f.entry(&s).lock_shared().unwrap();
        // SAFETY: resident under the shared lock.
        unsafe { s.object() }
            .header()
            .clear(HeaderBits::READ | HeaderBits::WRITE);
    }
    assert!(f.flags(&s).contains(EntryFlags::CLEAN));
    f.heap.access::<Barriers>(h, AccessKind::Read).unwrap();
    assert_eq!(f.header_bits(&s) & ACCESS_BITS, HeaderBits::READ);
    assert!(
        f.flags(&s).contains(EntryFlags::CLEAN),
        "a read keeps the checkpoint"
    );
    f.heap.access::<Barriers>(h, AccessKind::Write).unwrap();
    assert_eq!(f.header_bits(&s) & ACCESS_BITS, ACCESS_BITS);
    assert!(!f.flags(&s).contains(EntryFlags::CLEAN));

    // Even a run without barriers marks a written stubbed object dirty: the checkpoint
    // protocol depends on it.
    assert_eq!(f.save_all().saved_objects, 1);
    f.heap.access::<NoBarriers>(h, AccessKind::Write).unwrap();
    assert!(f.header_bits(&s).contains(HeaderBits::DIRTY));
    assert!(!f.flags(&s).contains(EntryFlags::CLEAN));
}

#[test]
fn the_saver_restore_and_collector_read_objects_without_setting_access_bits() {
    let f = Fixture::new();
    let (h, s) = f.stubbed(1);
    let plain = f.ints(2);
    age_until_cold(&f);
    // SAFETY: single-threaded test; `plain` is live and resident.
    let plain_hdr = unsafe { f.heap.raw_object(plain) }.unwrap().header();
    assert_eq!(f.header_bits(&s) & ACCESS_BITS, HeaderBits::DIRTY);

    // The saver reads every payload byte.
    assert_eq!(f.save_all().saved_objects, 1);
    assert_eq!(
        f.header_bits(&s) & (HeaderBits::READ | HeaderBits::WRITE),
        HeaderBits::empty()
    );
    // The collector reads every object it marks, then ages the bits: a read it made
    // would show in the newest bit of the read history.
    // SAFETY: single-threaded test; both handles are the roots.
    unsafe { marvin_gc::collect(&f.heap, &[h.value(), plain.value()]) };
    {
        let _g = f.entry(&s).lock_shared().unwrap();
        // SAFETY: resident under the shared lock.
        let hdr = unsafe { s.object() }.header();
        assert_eq!((hdr.read_history(), hdr.write_history()), (0, 0));
    }
    assert_eq!(
        (plain_hdr.read_history(), plain_hdr.write_history()),
        (0, 0)
    );

    // An eager restore writes the object back; it is not an access of the app's.
    assert_eq!(f.reclaim_all().objects, 1);
    let r = restore::restore_all(&f.heap, &f.swap);
    assert_eq!((r.objects, r.errors.len()), (1, 0));
    assert_eq!(
        f.header_bits(&s) & ACCESS_BITS,
        HeaderBits::empty(),
        "restored as its clean checkpoint, not read or written"
    );
    assert_eq!(f.faults(), 0, "an eager restore is not an object fault");
}

#[test]
fn every_reference_store_into_a_stubbed_object_updates_the_stub_copy() {
    let f = Fixture::new();
    // An instance big enough to be a candidate: 300 slots, the first 3 references.
    let inst = f.heap.alloc(ObjKind::Instance, 7, 300, 3).unwrap();
    let targets: Vec<Handle> = (0..3)
        .map(|_| f.heap.alloc(ObjKind::IntArray, 0, 4, 0).unwrap())
        .collect();
    let s = f.stub(inst);
    assert!(s.refs().iter().all(|r| r.load(Relaxed) == 0));
    {
        let a = f.heap.access::<Barriers>(inst, AccessKind::Write).unwrap();
        a.store_ref(0, targets[0].value());
        a.store_ref(2, targets[2].value());
        // A store past the reference slots is plain data: no copy to keep.
        a.store_ref(5, 12345);
    }
    let copies: Vec<u64> = s.refs().iter().map(|r| r.load(Relaxed)).collect();
    assert_eq!(copies, vec![targets[0].value(), 0, targets[2].value()]);

    // What the copies are for: the object goes out, and the collector keeps exactly
    // what it references from the stub's copies without touching the object.
    assert_eq!(f.save_all().saved_objects, 1);
    assert_eq!(f.reclaim_all().objects, 1);
    // SAFETY: single-threaded test; `inst` is the only root.
    let r = unsafe { marvin_gc::collect(&f.heap, &[inst.value()]) };
    assert_eq!(r.freed_objects, 1, "only the unreferenced target dies");
    assert!(f.heap.table().is_live(targets[0].value()));
    assert!(!f.heap.table().is_live(targets[1].value()));
    assert!(f.heap.table().is_live(targets[2].value()));
    assert_eq!(f.faults(), 0);
}

#[test]
fn an_access_to_a_reclaimed_object_faults_it_in_with_its_bytes() {
    let f = Fixture::new();
    let objs: Vec<_> = (0..8).map(|i| (f.stubbed(100 + i), 100 + i)).collect();
    assert_eq!(f.save_all().saved_objects, 8);
    let r = f.reclaim_all();
    assert_eq!((r.objects, r.bytes), (8, 8 * ARRAY_PAGES_BYTES));
    for ((_, s), _) in &objs {
        assert!(!f.entry(s).is_resident());
    }
    assert_eq!(f.faults(), 0);
    // The first access faults its object in, and the read brings back the neighbours
    // whose checkpoints lie next to its own (read-ahead): one fault in all.
    let ((h0, _), seed0) = &objs[0];
    assert_eq!(f.words(*h0), expected(*seed0));
    assert_eq!(f.faults(), 1);
    assert_eq!(f.swap.counters.read_ahead_objects.load(Relaxed), 7);
    for ((h, s), seed) in &objs {
        assert!(f.entry(s).is_resident());
        assert_eq!(f.words(*h), expected(*seed));
    }
    assert_eq!(f.faults(), 1);
    assert_eq!(f.space().out_bytes(), 0);

    // A faulted-in object comes back as its checkpoint, still clean: it can go out
    // again without being written to the swap file again.
    let written = f.swap.counters.bytes_written.load(Relaxed);
    assert_eq!(f.reclaim_all().objects, 8);
    let ((h, _), seed) = &objs[3];
    assert_eq!(f.words(*h), expected(*seed));
    assert_eq!(f.swap.counters.bytes_written.load(Relaxed), written);
}

#[test]
fn read_ahead_skips_a_neighbour_the_reclaimer_holds_and_never_waits_for_it() {
    let f = Fixture::new();
    let objs: Vec<_> = (0..6).map(|i| (f.stubbed(200 + i), 200 + i)).collect();
    assert_eq!(f.save_all().saved_objects, 6);
    assert_eq!(f.reclaim_all().objects, 6);
    // A neighbour whose entry a reclaimer holds: the read-ahead must neither wait for
    // it (this very thread holds the lock: waiting would hang) nor bring it in.
    let ((_, held), _) = &objs[2];
    let guard = f.entry(held).try_lock_reclaimer().expect("uncontended");
    let ((h0, _), seed0) = &objs[0];
    assert_eq!(f.words(*h0), expected(*seed0));
    assert_eq!(f.faults(), 1);
    assert_eq!(f.swap.counters.read_ahead_objects.load(Relaxed), 4);
    assert!(!f.entry(held).is_resident());
    for (i, ((_, s), _)) in objs.iter().enumerate() {
        assert_eq!(f.entry(s).is_resident(), i != 2, "object {i}");
    }
    drop(guard);
    // It faults in on its own access, with its bytes and its references' copies.
    for ((h, _), seed) in &objs {
        assert_eq!(f.words(*h), expected(*seed));
    }
    assert_eq!(f.faults(), 2);
    assert_eq!(f.space().out_bytes(), 0);
    // Read ahead, an object comes back clean as its checkpoint: it can go again.
    assert_eq!(f.reclaim_all().objects, 6);
}

// ---------------------------------------------------------------------------------------
// Reclaim table and reclaimer
// ---------------------------------------------------------------------------------------

#[test]
fn the_reclaimer_takes_only_saved_clean_cold_uncontended_entries() {
    let f = Fixture::new();
    let (_, ok) = f.stubbed(1);
    let (_, warm) = f.stubbed(2);
    let (dirty_h, dirty) = f.stubbed(3);
    let (_, held) = f.stubbed(4);
    age_until_cold(&f);
    // `warm` was written in the last round: not cold.
    f.fill(warm.handle, 20);
    // SAFETY: single-threaded test.
    unsafe { marvin_gc::walk_working_set(&f.heap) };
    assert_eq!(f.save_all().saved_objects, 4);
    // `dirty` is written after its checkpoint.
    f.fill(dirty_h, 30);
    // `unsaved` never had a checkpoint.
    let (_, unsaved) = f.stubbed(5);
    for s in [&ok, &held] {
        assert!(f.flags(s).contains(EntryFlags::RECLAIMABLE));
    }
    assert!(!f.flags(&warm).contains(EntryFlags::COLD));
    assert!(!f.flags(&dirty).contains(EntryFlags::CLEAN));
    assert!(!f.flags(&unsaved).contains(EntryFlags::SAVED));

    // An app thread is in the middle of an access to `held`: the reclaimer passes it
    // by rather than wait (a wait would hang this single-threaded test).
    let guard = f.entry(&held).lock_shared().unwrap();
    let r = f.reclaim_all();
    assert_eq!((r.objects, r.bytes), (1, ARRAY_PAGES_BYTES));
    assert!(!f.entry(&ok).is_resident());
    for s in [&warm, &dirty, &held, &unsaved] {
        assert!(f.entry(s).is_resident(), "{:?} was taken", f.flags(s));
    }
    drop(guard);
    // Uncontended now; and an entry already reclaimed is not taken twice.
    let r = f.reclaim_all();
    assert_eq!(r.objects, 1);
    assert!(!f.entry(&held).is_resident());
    assert_eq!(f.reclaim_all().objects, 0);

    // A reclaimer that tried an exclusive lock an app thread holds gives up at once.
    let guard = f.entry(&warm).lock_shared().unwrap();
    assert!(f.entry(&warm).try_lock_reclaimer().is_none());
    drop(guard);
}

#[test]
fn the_reclaimer_never_takes_from_the_foreground_app() {
    let f = Fixture::new();
    let objs: Vec<_> = (0..4).map(|i| f.stubbed(i)).collect();
    assert_eq!(f.save_all().saved_objects, 4);
    f.space().table.set_foreground(true);
    assert_eq!(f.reclaim_all().objects, 0);
    assert_eq!(reclaimer::reclaim(&[&f.heap], u64::MAX).objects, 0);
    for (_, s) in &objs {
        assert!(f.entry(s).is_resident());
    }
    f.space().table.set_foreground(false);
    assert_eq!(f.reclaim_all().objects, 4);
}

#[test]
fn a_reclaim_returns_the_object_pages() {
    let f = Fixture::new();
    let objs: Vec<_> = (0..4).map(|i| (f.stubbed(i), i)).collect();
    assert_eq!(f.save_all().saved_objects, 4);
    let before = f.heap.resident_bytes();
    let r = f.reclaim_all();
    assert_eq!(r.bytes, 4 * ARRAY_PAGES_BYTES);
    assert_eq!(f.heap.resident_bytes(), before - r.bytes as usize);
    assert!(r.madvise_calls >= 1);
    // Neighbours go back together: the four arrays are adjacent, so one call.
    assert_eq!(r.madvise_calls, 1);
    for ((_, s), _) in &objs {
        // The memory stays mapped but its contents were dropped: it reads as zero
        // pages, which only a real MADV_DONTNEED gives for a private anonymous map.
        let words = (s.bytes() / 8) as isize;
        let base = s.addr as *const u64;
        // SAFETY: the object's pages stay mapped (reclaim drops their contents, not
        // the mapping) and nothing else runs in this single-threaded test.
        let all_zero = (0..words).all(|i| unsafe { std::ptr::read_volatile(base.offset(i)) } == 0);
        assert!(all_zero, "the pages were not dropped");
    }
    for ((h, _), seed) in &objs {
        assert_eq!(f.words(*h), expected(*seed));
    }
    assert_eq!(f.heap.resident_bytes(), before);
}

// ---------------------------------------------------------------------------------------
// Ahead-of-time swap
// ---------------------------------------------------------------------------------------

#[test]
fn an_object_written_after_its_checkpoint_is_never_reclaimed() {
    let f = Fixture::new();
    let (h, s) = f.stubbed(1);
    assert_eq!(f.save_all().saved_objects, 1);
    assert!(f.flags(&s).contains(EntryFlags::CLEAN));
    f.fill(h, 2);
    assert!(f.header_bits(&s).contains(HeaderBits::DIRTY));
    assert!(!f.flags(&s).contains(EntryFlags::CLEAN));
    assert_eq!(
        f.reclaim_all().objects,
        0,
        "a stale checkpoint was reclaimed"
    );
    // Saved again, it can go, and comes back as last written.
    assert_eq!(f.save_all().saved_objects, 1);
    assert_eq!(f.reclaim_all().objects, 1);
    assert_eq!(f.words(h), expected(2));
}

#[test]
fn a_write_spanning_the_saver_copy_leaves_the_object_unsaved() {
    let f = Fixture::new();
    let (h, s) = f.stubbed(1);
    {
        // A write is in progress (the access is open) while the saver copies the
        // object; its stores land after the copy.
        let a = f.heap.access::<Barriers>(h, AccessKind::Write).unwrap();
        f.save_all();
        for (i, w) in a.obj().words().iter().enumerate() {
            w.store(pattern(2, i), Relaxed);
        }
    }
    assert!(
        !f.flags(&s).contains(EntryFlags::CLEAN),
        "the checkpoint misses the write"
    );
    assert!(f.header_bits(&s).contains(HeaderBits::DIRTY));
    assert_eq!(f.reclaim_all().objects, 0);
    assert_eq!(f.save_all().saved_objects, 1);
    assert_eq!(f.reclaim_all().objects, 1);
    assert_eq!(f.words(h), expected(2), "the write was lost");
}

/// The default policy, plus a one-shot hook run when the saver asks whether an object
/// is cold, which it does after its copy and its dirty check and before it publishes
/// the checkpoint as clean: a way to land an app thread's whole write at exactly that
/// point of the saver's protocol, deterministically.
struct HookedPolicy {
    inner: PolicyConfig,
    #[allow(clippy::type_complexity)]
    hook: Mutex<Option<Box<dyn FnOnce() + Send + Sync>>>,
}

impl std::fmt::Debug for HookedPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookedPolicy")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl SwapPolicy for HookedPolicy {
    fn is_candidate(&self, kind: ObjKind, size_bytes: usize) -> bool {
        self.inner.is_candidate(kind, size_bytes)
    }
    fn is_cold(&self, read_history: u8, write_history: u8) -> bool {
        let hook = self.hook.lock().take();
        if let Some(hook) = hook {
            hook();
        }
        self.inner.is_cold(read_history, write_history)
    }
    fn saver_period(&self, foreground: bool) -> Duration {
        self.inner.saver_period(foreground)
    }
    fn saver_budget(&self) -> Duration {
        self.inner.saver_budget()
    }
    fn working_set_period(&self, foreground: bool) -> Duration {
        self.inner.working_set_period(foreground)
    }
    fn victim_order(&self) -> VictimOrder {
        self.inner.victim_order()
    }
    fn reclaim_batch_bytes(&self, requested: u64) -> u64 {
        self.inner.reclaim_batch_bytes(requested)
    }
    fn restore_mode(&self) -> RestoreMode {
        self.inner.restore_mode()
    }
    fn compaction_threshold(&self) -> f64 {
        self.inner.compaction_threshold()
    }
}

#[test]
fn a_write_finishing_just_before_the_checkpoint_is_published_keeps_it_unclean() {
    let policy = Arc::new(HookedPolicy {
        inner: PolicyConfig::default(),
        hook: Mutex::new(None),
    });
    let f = Arc::new(Fixture::with_policy(policy.clone(), true));
    let (h, s) = f.stubbed(1);
    // A whole write (enter, stores, exit) lands after the saver's copy and its dirty
    // check, before it marks the entry clean.
    let app = f.clone();
    *policy.hook.lock() = Some(Box::new(move || app.fill(h, 2)));
    f.save_all();
    assert!(policy.hook.lock().is_none(), "the hook ran");
    assert!(f.header_bits(&s).contains(HeaderBits::DIRTY));
    assert!(
        !f.flags(&s).contains(EntryFlags::CLEAN),
        "a stale checkpoint is marked clean"
    );
    assert_eq!(f.reclaim_all().objects, 0);
    assert_eq!(f.save_all().saved_objects, 1);
    assert_eq!(f.reclaim_all().objects, 1);
    assert_eq!(f.words(h), expected(2), "the write was lost");
}

#[test]
fn the_saver_only_saves_cold_objects_unless_asked_for_all() {
    let f = Fixture::new();
    let (_, cold) = f.stubbed(1);
    age_until_cold(&f);
    let (_, hot) = f.stubbed(2);
    // SAFETY: single-threaded test.
    unsafe { marvin_gc::walk_working_set(&f.heap) };
    let r = saver::save(&f.heap, &f.swap, Duration::MAX, false);
    assert_eq!(r.saved_objects, 1);
    assert!(f.flags(&cold).contains(EntryFlags::RECLAIMABLE));
    assert!(!f.flags(&hot).contains(EntryFlags::SAVED));
    // Asked for all, it saves the warm one too, but does not call it cold.
    assert_eq!(f.save_all().saved_objects, 1);
    assert!(f
        .flags(&hot)
        .contains(EntryFlags::SAVED | EntryFlags::CLEAN));
    assert!(!f.flags(&hot).contains(EntryFlags::COLD));
    assert_eq!(f.reclaim_all().objects, 1);
}

#[test]
fn a_saver_run_writes_its_checkpoints_back_every_batch_and_leaves_none_cached() {
    let f = Fixture::new();
    // Enough 8 KiB arrays for several write-back batches.
    let n = 3 * marvin_swap::WRITE_BACK_EVERY / (WORDS as usize * 8) + 8;
    let objs: Vec<_> = (0..n as u64).map(|i| f.stubbed(i)).collect();
    let r = f.save_all();
    assert_eq!(r.saved_objects, n as u64);
    let written = f.swap.counters.bytes_written.load(Relaxed) as usize;
    let batches = f.swap.counters.write_backs.load(Relaxed) as usize;
    // One write-back each time a batch's worth was written, before the next object.
    assert!(
        batches >= written / marvin_swap::WRITE_BACK_EVERY - 1 && batches >= 3,
        "{batches} write-backs for {written} bytes"
    );
    let file = f.swap.file.lock();
    if marvin_runtime::memfd::on_tmpfs(f.dir.path()) {
        eprintln!("skipping the page-cache check: the swap directory is on tmpfs");
    } else {
        let fd = std::fs::File::open(file.path()).unwrap();
        let end = file.file_bytes();
        assert_eq!(
            marvin_runtime::memfd::cached_pages(&fd, 0, end).unwrap(),
            0,
            "the saver left checkpoints in the page cache"
        );
    }
    drop(file);
    // Every checkpoint reads back.
    assert_eq!(f.reclaim_all().objects, n as u64);
    for (i, &(h, _)) in objs.iter().enumerate() {
        assert_eq!(f.words(h), expected(i as u64));
    }
}

#[test]
fn a_restored_object_is_as_last_written_with_references_from_its_stub() {
    let f = Fixture::new();
    let inst = f.heap.alloc(ObjKind::Instance, 9, 400, 2).unwrap();
    let t: Vec<Handle> = (0..3)
        .map(|_| f.heap.alloc(ObjKind::IntArray, 0, 4, 0).unwrap())
        .collect();
    let data = |i: usize| pattern(77, i);
    {
        let a = f.heap.access::<Barriers>(inst, AccessKind::Write).unwrap();
        a.store_ref(0, t[0].value());
        a.store_ref(1, t[1].value());
        for i in 2..400 {
            a.obj().words()[i].store(data(i), Relaxed);
        }
    }
    let s = f.stub(inst);
    assert_eq!(f.save_all().saved_objects, 1);
    assert_eq!(f.reclaim_all().objects, 1);
    // While the object is out, its reference is changed in the stub's copy only (as a
    // collector that moves or renames objects would): the restore must take it from
    // there, not from the checkpoint.
    s.refs()[1].store(t[2].value(), Relaxed);
    let words = f.words(inst);
    assert_eq!(words[0], t[0].value());
    assert_eq!(
        words[1],
        t[2].value(),
        "reference taken from the checkpoint"
    );
    for (i, w) in words.iter().enumerate().skip(2) {
        assert_eq!(*w, data(i), "word {i}");
    }
    // The header comes back with the object's shape.
    {
        let a = f.heap.access::<Barriers>(inst, AccessKind::Read).unwrap();
        let hdr = a.obj().header();
        assert_eq!(
            (hdr.kind(), hdr.class, hdr.len, hdr.nrefs),
            (ObjKind::Instance, 9, 400, 2)
        );
    }

    // A store through the barrier while the object is out faults it in first, then
    // lands in both the object and the copy; the next restore keeps it.
    assert_eq!(f.reclaim_all().objects, 1);
    let faults = f.faults();
    f.heap
        .access::<Barriers>(inst, AccessKind::Write)
        .unwrap()
        .store_ref(0, t[1].value());
    assert_eq!(f.faults(), faults + 1);
    assert_eq!(s.refs()[0].load(Relaxed), t[1].value());
    assert_eq!(f.save_all().saved_objects, 1);
    assert_eq!(f.reclaim_all().objects, 1);
    let r = restore::restore_all(&f.heap, &f.swap);
    assert_eq!((r.objects, r.errors.len()), (1, 0));
    let words = f.words(inst);
    assert_eq!((words[0], words[1]), (t[1].value(), t[2].value()));
    assert!(words
        .iter()
        .skip(2)
        .enumerate()
        .all(|(i, w)| *w == data(i + 2)));
}

#[test]
fn a_byte_array_restores_byte_for_byte() {
    let f = Fixture::new();
    let len = 5000u32;
    let h = f.heap.alloc(ObjKind::ByteArray, 0, len, 0).unwrap();
    {
        let a = f.heap.access::<Barriers>(h, AccessKind::Write).unwrap();
        for (i, b) in a.obj().bytes().iter().enumerate() {
            b.store((i * 7 + 3) as u8, Relaxed);
        }
    }
    f.stub(h);
    assert_eq!(f.save_all().saved_objects, 1);
    assert_eq!(f.reclaim_all().objects, 1);
    let a = f.heap.access::<Barriers>(h, AccessKind::Read).unwrap();
    assert_eq!(a.obj().len(), len);
    assert!(a
        .obj()
        .bytes()
        .iter()
        .enumerate()
        .all(|(i, b)| b.load(Relaxed) == (i * 7 + 3) as u8));
}

#[test]
fn reclaim_and_allocation_do_no_disk_io() {
    let f = Fixture::new();
    let objs: Vec<_> = (0..6).map(|i| f.stubbed(i)).collect();
    assert_eq!(f.save_all().saved_objects, 6);
    // Truncate the swap file to nothing: any read or write of its mapping would now
    // kill the process with SIGBUS, and any open or write of the file would find it
    // empty. Reclaiming must not notice.
    let path = f.swap.file.lock().path().to_path_buf();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    let r = f.reclaim_all();
    assert_eq!(r.objects, 6);
    // Allocating (and stubbing on allocation, as the page-swap baseline does) neither.
    f.space().stub_on_alloc.store(true, Relaxed);
    let fresh = f.ints(99);
    assert!(f.space().get(fresh).is_some());
    assert_eq!(f.words(fresh), expected(99));
    // The checkpoints are gone with the file: the fault is a clear error naming the
    // object, never zeroes handed to the app.
    let (h, _) = objs[2];
    let err = match f.heap.access::<Barriers>(h, AccessKind::Read) {
        Ok(_) => panic!("an object faulted in from a truncated swap file"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains(&format!("object {}", h.value())), "{err}");
    assert!(err.contains("truncated"), "{err}");
    assert!(f.swap.last_error.lock().is_some());
}

#[test]
fn dead_swap_space_is_compacted_past_the_threshold() {
    let f = Fixture::new();
    let objs: Vec<_> = (0..40).map(|i| (f.stubbed(i), i)).collect();
    assert_eq!(f.save_all().saved_objects, 40);
    let file_before = f.swap.file.lock().file_bytes();
    let keep: Vec<_> = objs.iter().filter(|(_, seed)| seed % 4 == 0).collect();
    // The survivors go out before the compaction, so their restores read slots that
    // the compaction moved.
    assert_eq!(f.reclaim_all().objects, 40);
    // Below the threshold: nothing happens.
    assert!(!saver::compact_if_needed(&f.heap, &f.swap).unwrap());
    // Three objects in four die; the collection frees their slots.
    let roots: Vec<u64> = keep.iter().map(|((h, _), _)| h.value()).collect();
    // SAFETY: single-threaded test; `roots` are the only live objects.
    let r = unsafe { marvin_gc::collect(&f.heap, &roots) };
    assert_eq!(r.freed_objects, 30);
    assert_eq!(f.live_slots(), 10);
    assert!(f.swap.file.lock().dead_fraction() > 0.25);
    assert!(saver::compact_if_needed(&f.heap, &f.swap).unwrap());
    assert_eq!(f.swap.counters.compactions.load(Relaxed), 1);
    let file = f.swap.file.lock();
    assert!(file.file_bytes() < file_before, "the file did not shrink");
    assert!(file.dead_fraction() <= 0.25);
    let on_disk = std::fs::metadata(file.path()).unwrap().len();
    assert_eq!(on_disk, file.file_bytes());
    drop(file);
    for ((h, _), seed) in keep {
        assert_eq!(f.words(*h), expected(*seed));
    }
    assert_eq!(f.gc_faults(), 0);
}

// ---------------------------------------------------------------------------------------
// Bookmarking GC
// ---------------------------------------------------------------------------------------

#[test]
fn a_collection_over_a_reclaimed_heap_faults_nothing_and_frees_the_unreachable() {
    let f = Fixture::new();
    // A chain: root instance -> instance -> int array, all stubbed; and garbage:
    // stubbed arrays nobody references and one instance pointing at another.
    let inst = |next: Option<Handle>| {
        let h = f.heap.alloc(ObjKind::Instance, 1, 300, 1).unwrap();
        let a = f.heap.access::<Barriers>(h, AccessKind::Write).unwrap();
        a.store_ref(0, next.map_or(0, Handle::value));
        for i in 1..300 {
            a.obj().words()[i].store(pattern(h.value(), i), Relaxed);
        }
        h
    };
    let leaf = f.ints(5);
    let mid = inst(Some(leaf));
    let root = inst(Some(mid));
    let garbage: Vec<Handle> = (0..6).map(|i| f.ints(50 + i)).collect();
    let garbage_mid = inst(Some(garbage[0]));
    let garbage_top = inst(Some(garbage_mid));
    let small_garbage = f.heap.alloc(ObjKind::IntArray, 0, 2, 0).unwrap();
    // SAFETY: single-threaded test.
    let report = unsafe {
        marvin_swap::stubber::stub_candidates(&f.heap, &PolicyConfig::default()).unwrap()
    };
    assert_eq!(report.objects, 11);
    assert_eq!(f.save_all().saved_objects, 11);
    assert_eq!(f.reclaim_all().objects, 11);
    let entries = f.space().table.len();
    assert_eq!((entries, f.live_slots()), (11, 11));

    // SAFETY: single-threaded test; `root` is the only root.
    let r = unsafe { marvin_gc::collect(&f.heap, &[root.value()]) };
    assert_eq!(f.faults(), 0, "the collector faulted objects in");
    assert_eq!(f.gc_faults(), 0);
    assert_eq!(r.marked, 3);
    assert_eq!(r.freed_objects, 9);
    for h in [root, mid, leaf] {
        let s = f.space().get(h).unwrap();
        assert!(!f.entry(&s).is_resident(), "a live object was faulted in");
    }
    // Freed stubs took their table entries and swap slots with them.
    assert_eq!(f.space().len(), 3);
    assert_eq!(f.space().table.len(), 3);
    assert_eq!(f.live_slots(), 3);
    assert_eq!(f.space().out_bytes(), f.heap.in_use() as u64);
    for h in garbage
        .iter()
        .chain([&garbage_mid, &garbage_top, &small_garbage])
    {
        assert!(!f.heap.table().is_live(h.value()));
    }
    // The survivors come back intact, and the app can still use them.
    assert_eq!(f.words(leaf), expected(5));
    let w = f.words(mid);
    assert_eq!(w[0], leaf.value());
    assert!((1..300).all(|i| w[i] == pattern(mid.value(), i)));
    assert_eq!(f.words(root)[0], mid.value());
    assert_eq!(f.gc_faults(), 0);
}

#[test]
fn a_collector_that_does_not_bookmark_faults_and_is_counted() {
    // The counter the tests above rely on does catch a collector that reads objects:
    // the page-swap baseline's collector, which faults reclaimed objects in.
    let f = Fixture::with(PolicyConfig::default(), false);
    let (h, s) = f.stubbed(1);
    assert_eq!(f.save_all().saved_objects, 1);
    assert_eq!(f.reclaim_all().objects, 1);
    // SAFETY: single-threaded test.
    unsafe { marvin_gc::collect(&f.heap, &[h.value()]) };
    assert_eq!(f.gc_faults(), 1);
    assert!(f.entry(&s).is_resident());
}

#[test]
fn freeing_a_stub_removes_its_entry_and_slot_resident_or_not() {
    let f = Fixture::new();
    let (_, out) = f.stubbed(1);
    let (_, saved) = f.stubbed(2);
    assert_eq!(f.save_all().saved_objects, 2);
    assert_eq!(
        reclaimer::reclaim_from(&f.heap, ARRAY_PAGES_BYTES).objects,
        1
    );
    let (_, unsaved) = f.stubbed(3);
    assert_eq!(
        (f.space().table.len(), f.live_slots(), f.space().len()),
        (3, 2, 3)
    );
    let in_use = f.heap.in_use();
    // SAFETY: single-threaded test; nothing is reachable.
    let r = unsafe { marvin_gc::collect(&f.heap, &[]) };
    assert_eq!(r.freed_objects, 3);
    assert_eq!(
        (f.space().table.len(), f.live_slots(), f.space().len()),
        (0, 0, 0)
    );
    assert_eq!(f.space().out_bytes(), 0);
    assert_eq!(f.heap.in_use(), in_use - 3 * ARRAY_PAGES_BYTES as usize);
    for s in [out, saved, unsaved] {
        assert!(s.state.lock().is_dead());
        assert!(s.state.lock().slot().is_none());
    }
    assert_eq!(f.faults(), 0);
}

// ---------------------------------------------------------------------------------------
// Failures: a full or vanished swap file, a corrupted checkpoint
// ---------------------------------------------------------------------------------------

#[test]
fn an_object_that_cannot_be_saved_stays_resident_and_usable() {
    let f = Fixture::new();
    let objs: Vec<_> = (0..8).map(|i| (f.stubbed(i), i)).collect();
    // The file may not grow past its first 64 KiB (and its header): eight arrays of
    // 8 KiB and more do not all fit.
    let limit = f.swap.file.lock().file_bytes();
    *f.swap.file.lock() =
        marvin_swap::SwapFile::with_limit(f.dir.path(), "limited", limit).unwrap();
    let r = f.save_all();
    assert!(r.saved_objects >= 1 && r.errors >= 1, "{r:?}");
    assert_eq!(r.saved_objects + r.errors, 8);
    assert_eq!(f.swap.counters.save_errors.load(Relaxed), r.errors);
    let err = f.swap.last_error.lock().clone().unwrap();
    assert!(err.contains("limit"), "{err}");
    let reclaimed = f.reclaim_all();
    assert_eq!(reclaimed.objects, r.saved_objects);
    for ((h, s), seed) in &objs {
        if !f.flags(s).contains(EntryFlags::SAVED) {
            assert!(f.entry(s).is_resident());
            assert!(f.header_bits(s).contains(HeaderBits::DIRTY));
        }
        assert_eq!(f.words(*h), expected(*seed));
    }

    // A deleted swap file: saving fails cleanly, the app carries on.
    let (h, s) = f.stubbed(100);
    std::fs::remove_file(f.swap.file.lock().path()).unwrap();
    let r = f.save_all();
    assert!(r.errors >= 1 && r.saved_objects == 0, "{r:?}");
    assert!(f
        .swap
        .last_error
        .lock()
        .clone()
        .unwrap()
        .contains("deleted"));
    assert!(!f.flags(&s).contains(EntryFlags::SAVED));
    // The reclaimer may still drop objects whose checkpoints were written before (it
    // never looks at the file), but never this one.
    f.reclaim_all();
    assert!(f.entry(&s).is_resident());
    assert_eq!(f.words(h), expected(100));
}

#[test]
fn a_corrupted_checkpoint_is_an_error_naming_the_object_never_bad_data() {
    let f = Fixture::new();
    let (h, s) = f.stubbed(1);
    let (h2, _) = f.stubbed(2);
    assert_eq!(f.save_all().saved_objects, 2);
    assert_eq!(f.reclaim_all().objects, 2);
    // Flip one payload byte of `h`'s checkpoint on disk.
    let slot = s.state.lock().slot().unwrap();
    let path = f.swap.file.lock().path().to_path_buf();
    let at = slot + marvin_swap::SLOT_HEADER_BYTES + 100;
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[at as usize] ^= 0x5a;
    {
        use std::os::unix::fs::FileExt;
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all_at(&bytes[at as usize..at as usize + 1], at)
            .unwrap();
    }
    let err = match f.heap.access::<Barriers>(h, AccessKind::Read) {
        Ok(_) => panic!("a corrupted checkpoint was handed to the app"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains(&format!("object {}", h.value())), "{err}");
    assert!(err.contains("checksum"), "{err}");
    assert!(!f.entry(&s).is_resident());
    // The app's other objects are unaffected.
    assert_eq!(f.words(h2), expected(2));
    // An eager restore reports it too, and restores the rest.
    let r = restore::restore_all(&f.heap, &f.swap);
    assert_eq!(r.objects, 0);
    assert_eq!(r.errors.len(), 1);
    assert!(r.errors[0].contains("checksum"), "{:?}", r.errors);
}

#[test]
fn heaps_share_nothing_between_apps() {
    // Two apps: reclaiming one leaves the other alone, and a reclaim over both in LRU
    // order takes from the first until it has enough.
    let a = Fixture::new();
    let b = Fixture::new();
    let ha: Vec<_> = (0..3).map(|i| a.stubbed(i)).collect();
    let hb: Vec<_> = (0..3).map(|i| b.stubbed(10 + i)).collect();
    a.save_all();
    b.save_all();
    let r = reclaimer::reclaim(&[&a.heap, &b.heap], 4 * ARRAY_PAGES_BYTES);
    assert_eq!(r.objects, 4);
    assert!(ha.iter().all(|(_, s)| !a.entry(s).is_resident()));
    assert_eq!(
        hb.iter().filter(|(_, s)| !b.entry(s).is_resident()).count(),
        1
    );
    for (i, (h, _)) in hb.iter().enumerate() {
        assert_eq!(b.words(*h), expected(10 + i as u64));
    }
}
