//! What the runtime holds for an app counts as the app's memory: stubs, their registry,
//! the reclaim table, the handle table and the swap file's index are in
//! `Heap::runtime_bytes`, and `Heap::accounted_bytes` (what a memory budget counts) is the
//! resident objects plus them. Each check fails if one of them is left out or never
//! given back.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::Fixture;
use marvin_runtime::stub_bytes;
use marvin_runtime::{AllocPressure, Heap, RUNTIME_HEADROOM};
use marvin_swap::stubber;

/// A budget hook that records how much the heap reserved at most at once.
#[derive(Default)]
struct Recorder {
    reserved: AtomicUsize,
    peak: AtomicUsize,
}

impl AllocPressure for Recorder {
    fn reserve(&self, _heap: &Heap, bytes: usize) {
        let now = self.reserved.fetch_add(bytes, Ordering::SeqCst) + bytes;
        self.peak.fetch_max(now, Ordering::SeqCst);
    }
    fn release(&self, _heap: &Heap, bytes: usize) {
        self.reserved.fetch_sub(bytes, Ordering::SeqCst);
    }
}

#[test]
fn stubs_tables_and_the_swap_index_count_as_the_apps_memory() {
    let f = Fixture::new();
    let h = &f.heap;
    let empty = h.runtime_bytes();
    assert!(empty > 0, "the reclaim table's header page is held");
    assert_eq!(h.accounted_bytes(), h.resident_bytes() + h.runtime_bytes());

    let objs: Vec<_> = (0..200).map(|i| f.stubbed(i)).collect();
    let stubbed = h.runtime_bytes();
    let stubs = 200 * stub_bytes(0);
    // The stubs themselves, their registry and 200 table entries (6,400 bytes).
    assert!(
        stubbed >= empty + stubs + 200 * 32,
        "{stubbed} < {empty} + {stubs} + table"
    );
    assert_eq!(h.accounted_bytes(), h.resident_bytes() + stubbed);

    // Saving adds the swap file's index (one slot per checkpoint).
    f.save_all();
    let saved = h.runtime_bytes();
    assert!(saved > stubbed, "the swap file's index is counted: {saved}");
    let index = f.swap.file.lock().index_bytes();
    assert!(index >= 200 * 16, "{index}");

    // Reclaiming returns the objects' pages, not what the runtime holds for them; the
    // kernel's view of the object pages matches the books before and after.
    let resident = h.resident_bytes();
    let kernel = || h.large_space().resident_bytes_by_kernel().unwrap() as usize;
    assert_eq!(kernel(), resident);
    let r = f.reclaim_all();
    assert_eq!(r.objects, 200);
    assert_eq!(h.resident_bytes(), resident - r.bytes as usize);
    assert_eq!(kernel(), h.resident_bytes());
    assert_eq!(h.runtime_bytes(), saved);

    // Freeing the stubs gives their bytes (and their checkpoints' slots) back.
    let dead: Vec<_> = objs.iter().map(|(h, _)| *h).collect();
    drop(objs);
    // SAFETY: no mutator runs; the handles are dropped above and reached by nothing.
    unsafe { h.free_stubs(&dead) };
    let freed = h.runtime_bytes();
    assert!(
        freed + stubs <= saved,
        "the stubs' bytes went back: {freed} vs {saved}"
    );
}

#[test]
fn stubbing_at_allocation_charges_the_stub_with_the_budget_first() {
    let f = Fixture::new();
    let recorder = Arc::new(Recorder::default());
    f.heap.set_pressure(recorder.clone()).unwrap();
    f.space()
        .stub_on_alloc
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let before = f.heap.runtime_bytes();
    // More stubs than the charge's headroom holds: the charge must rise on the way.
    let n = 2 * RUNTIME_HEADROOM / stub_bytes(0);
    let _h: Vec<_> = (0..n as u64).map(|i| f.ints(i)).collect();
    let added = f.heap.runtime_bytes() - before;
    assert!(added >= n * stub_bytes(0), "{added}");
    assert!(
        f.heap.runtime_charge() >= f.heap.runtime_bytes(),
        "charged {} for {} held",
        f.heap.runtime_charge(),
        f.heap.runtime_bytes()
    );
    // Each raise of the charge was a reservation of a whole step of its own.
    assert!(
        recorder.peak.load(Ordering::SeqCst) >= RUNTIME_HEADROOM,
        "reserved at most {} at once",
        recorder.peak.load(Ordering::SeqCst)
    );
    assert_eq!(
        recorder.reserved.load(Ordering::SeqCst),
        0,
        "all given back"
    );
}

/// A budget hook that adds up every reservation ever made.
#[derive(Default)]
struct Total {
    reserved: AtomicUsize,
}

impl AllocPressure for Total {
    fn reserve(&self, _heap: &Heap, bytes: usize) {
        self.reserved.fetch_add(bytes, Ordering::SeqCst);
    }
    fn release(&self, _heap: &Heap, _bytes: usize) {}
}

#[test]
fn the_runtimes_holdings_are_charged_before_they_grow_and_only_through_the_budget() {
    let f = Fixture::new();
    let h = &f.heap;
    let total = Arc::new(Total::default());
    h.set_pressure(total.clone()).unwrap();
    // After each step: the charge covers what the runtime holds, what the budget sees
    // is the resident objects plus the charge, and the charge rose by no more than was
    // reserved meanwhile beyond the objects' own pages.
    let mut last = (h.runtime_charge(), total.reserved.load(Ordering::SeqCst), 0);
    let mut check = |step: &str, objects: usize| {
        let (charge, held) = (h.runtime_charge(), h.runtime_bytes());
        assert!(charge >= held, "{step}: charged {charge} < held {held}");
        assert_eq!(h.charged_bytes(), h.resident_bytes() + charge, "{step}");
        let reserved = total.reserved.load(Ordering::SeqCst);
        let rose = charge.saturating_sub(last.0);
        assert!(
            reserved - last.1 >= rose + (objects - last.2),
            "{step}: the charge rose by {rose} with {} reserved for it",
            (reserved - last.1).saturating_sub(objects - last.2)
        );
        last = (charge, reserved, objects);
    };
    check("empty", 0);

    // Enough objects that the handle table, the stubs, their registry, the reclaim
    // table and the swap index all grow by more than the headroom.
    const N: u64 = 600;
    let object = 3 * 4096;
    let mut handles: Vec<_> = (0..N).map(|i| f.ints(i)).collect();
    check("allocated", N as usize * object);
    // SAFETY: no mutator runs.
    let stubbed = unsafe { stubber::stub_candidates(h, &*f.swap.policy) }.unwrap();
    assert_eq!(stubbed.objects, N);
    check("stubbed", N as usize * object);
    let before = h.runtime_bytes();
    f.space().stub_on_alloc.store(true, Ordering::SeqCst);
    handles.extend((N..2 * N).map(|i| f.ints(i)));
    assert!(h.runtime_bytes() > before + N as usize * stub_bytes(0));
    check("stubbed at allocation", 2 * N as usize * object);
    let saved = f.save_all();
    assert_eq!(saved.saved_objects, 2 * N);
    check("saved", 2 * N as usize * object);
    f.reclaim_all();
    check("reclaimed", 2 * N as usize * object);

    // Freeing gives the stubs back, and the charge follows them down.
    let high = h.runtime_charge();
    let dead = handles;
    // SAFETY: no mutator runs; the handles are reached by nothing any more.
    unsafe { h.free_stubs(&dead) };
    let (charge, held) = (h.runtime_charge(), h.runtime_bytes());
    assert!(charge >= held, "charged {charge} < held {held}");
    assert!(
        charge < high && charge <= held + 3 * RUNTIME_HEADROOM,
        "the charge came down with the holdings: {charge} (was {high}), holding {held}"
    );
}
