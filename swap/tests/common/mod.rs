//! A hand-built swapping heap for the swap layer's tests: one heap with an [`AppSwap`]
//! in a temporary directory, and small helpers to make, stub, save, reclaim and read
//! objects.

#![allow(dead_code)]

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use marvin_runtime::{AccessKind, Barriers};
use marvin_runtime::{Entry, EntryFlags};
use marvin_runtime::{Handle, Heap, HeapConfig};
use marvin_runtime::{HeaderBits, ObjKind};
use marvin_runtime::{Stub, StubSpace};
use marvin_swap::reclaimer::{self, ReclaimReport};
use marvin_swap::saver::{self, SaveReport};
use marvin_swap::AppSwap;
use marvin_swap::{PolicyConfig, SwapPolicy};

/// Words of the int arrays the tests use: 1,024 words, 8 KiB and a header (3 pages).
pub const WORDS: u32 = 1024;

/// One app's heap with swapping on. Fields drop in order: the heap (and its stub space)
/// before the swap side, the directory last.
pub struct Fixture {
    pub heap: Heap,
    pub swap: Arc<AppSwap>,
    pub dir: tempfile::TempDir,
}

impl Fixture {
    /// A background app with the default (Marvin) policy and a bookmarking collector.
    pub fn new() -> Fixture {
        Fixture::with(PolicyConfig::default(), true)
    }

    pub fn with(policy: PolicyConfig, bookmarking: bool) -> Fixture {
        Fixture::with_policy(Arc::new(policy), bookmarking)
    }

    pub fn with_policy(policy: Arc<dyn SwapPolicy>, bookmarking: bool) -> Fixture {
        let heap = Heap::new(HeapConfig {
            handle_capacity: 1 << 16,
            ..HeapConfig::default()
        })
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let swap = AppSwap::attach(&heap, dir.path(), "app", policy, 4096, bookmarking).unwrap();
        let f = Fixture { heap, swap, dir };
        f.space().table.set_foreground(false);
        f
    }

    pub fn space(&self) -> &StubSpace {
        self.heap.stub_space().expect("swapping is on")
    }

    /// A new int array of `WORDS` words holding `pattern(seed, i)`.
    pub fn ints(&self, seed: u64) -> Handle {
        let h = self.heap.alloc(ObjKind::IntArray, 0, WORDS, 0).unwrap();
        self.fill(h, seed);
        h
    }

    /// Writes `pattern(seed, i)` to every word of `h` through the barrier.
    pub fn fill(&self, h: Handle, seed: u64) {
        let a = self.heap.access::<Barriers>(h, AccessKind::Write).unwrap();
        for (i, w) in a.obj().words().iter().enumerate() {
            w.store(pattern(seed, i), Relaxed);
        }
    }

    /// Every payload word of `h`, read through the barrier.
    pub fn words(&self, h: Handle) -> Vec<u64> {
        let a = self.heap.access::<Barriers>(h, AccessKind::Read).unwrap();
        a.obj().words().iter().map(|w| w.load(Relaxed)).collect()
    }

    /// Stubs `h` (which must be a candidate) and returns its stub.
    pub fn stub(&self, h: Handle) -> Arc<Stub> {
        // SAFETY: single-threaded test: no mutator runs.
        assert!(unsafe { self.heap.stub_object(h) }.unwrap(), "stubbed");
        self.space().get(h).unwrap()
    }

    /// A new, stubbed int array.
    pub fn stubbed(&self, seed: u64) -> (Handle, Arc<Stub>) {
        let h = self.ints(seed);
        let s = self.stub(h);
        (h, s)
    }

    pub fn entry(&self, s: &Stub) -> &Entry {
        self.space().table.entry(s.entry)
    }

    pub fn flags(&self, s: &Stub) -> EntryFlags {
        self.entry(s).flags()
    }

    /// The header bits of a stubbed object that is resident.
    pub fn header_bits(&self, s: &Stub) -> HeaderBits {
        let _g = self.entry(s).lock_shared().unwrap();
        assert!(self.entry(s).is_resident());
        // SAFETY: resident, and the shared lock keeps the reclaimer away.
        unsafe { s.object() }.header().bits()
    }

    /// Saves every stubbed object that needs it, cold or not.
    pub fn save_all(&self) -> SaveReport {
        saver::save(&self.heap, &self.swap, Duration::MAX, true)
    }

    /// Reclaims everything reclaimable.
    pub fn reclaim_all(&self) -> ReclaimReport {
        reclaimer::reclaim_from(&self.heap, u64::MAX)
    }

    pub fn faults(&self) -> u64 {
        self.space().counters.faults.load(Relaxed)
    }

    pub fn gc_faults(&self) -> u64 {
        self.space().counters.gc_faults.load(Relaxed)
    }

    pub fn live_slots(&self) -> u64 {
        self.swap.file.lock().live_slots()
    }
}

/// The value of word `i` of an array filled with `seed`.
pub fn pattern(seed: u64, i: usize) -> u64 {
    seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// The whole expected payload of an array filled with `seed`.
pub fn expected(seed: u64) -> Vec<u64> {
    (0..WORDS as usize).map(|i| pattern(seed, i)).collect()
}
