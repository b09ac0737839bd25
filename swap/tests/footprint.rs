//! What the runtime holds for an app counts as the app's memory: stubs, their registry,
//! the reclaim table, the handle table and the swap file's index are in
//! `Heap::runtime_bytes`, and `Heap::accounted_bytes` (what a memory budget counts) is the
//! resident objects plus them. Each check fails if one of them is left out or never
//! given back.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::Fixture;
use marvin_runtime::heap::{AllocPressure, Heap};
use marvin_runtime::stub::stub_bytes;

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
fn stubbing_reserves_the_stubs_bytes_with_the_budget_first() {
    let f = Fixture::new();
    let recorder = Arc::new(Recorder::default());
    f.heap.set_pressure(recorder.clone()).unwrap();
    f.space()
        .stub_on_alloc
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let before = f.heap.runtime_bytes();
    let _h = f.ints(1);
    let added = f.heap.runtime_bytes() - before;
    // The allocation reserved its pages and the stub it got, at least what the stub
    // space then counted.
    let object = 3 * 4096;
    assert!(
        recorder.peak.load(Ordering::SeqCst) >= object + stub_bytes(0),
        "reserved {} for an object of {object} and a stub",
        recorder.peak.load(Ordering::SeqCst)
    );
    assert!(added >= stub_bytes(0), "{added}");
    assert_eq!(
        recorder.reserved.load(Ordering::SeqCst),
        0,
        "all given back"
    );
}
