//! The page-swap baseline's kernel features, each against a hand-built heap: swap
//! read-ahead of the aligned 8-page cluster around a fault, reads counting as
//! references for its LRU (cold means neither read nor written; a run referenced since
//! the last round gets a second chance), and a clean run read back going out again
//! without a write (the swap cache).

mod common;

use std::sync::atomic::Ordering::Relaxed;

use common::{expected, Fixture};
use marvin_runtime::EntryFlags;
use marvin_runtime::PAGE;
use marvin_swap::pageout::page_out;
use marvin_swap::PolicyConfig;
use marvin_swap::PAGE_CLUSTER_BYTES;

/// One test array in pages: a header and 8 KiB of payload.
const RUN_BYTES: u64 = 3 * PAGE as u64;

fn page_swap() -> Fixture {
    Fixture::with(PolicyConfig::default(), false)
}

/// One working-set round (as a collection runs it).
fn round(f: &Fixture) {
    // SAFETY: single-threaded test: no mutator runs.
    unsafe { marvin_gc::walk_working_set(&f.heap) };
}

fn age_until_cold(f: &Fixture) {
    for _ in 0..5 {
        round(f);
    }
}

#[test]
fn a_fault_reads_the_aligned_cluster_of_eight_pages_around_it() {
    let f = page_swap();
    let objs: Vec<_> = (0..4).map(|i| (f.stubbed(500 + i), 500 + i)).collect();
    let out = page_out(&f.heap, &f.swap, u64::MAX);
    assert_eq!(out.objects, 4);
    assert_eq!(f.space().out_bytes(), 4 * RUN_BYTES);
    // The four checkpoints lie in the first 32 KiB of the file, one cluster: a fault
    // brings as many neighbours as fit in the cluster's 8 pages with its own run.
    let neighbours = (PAGE_CLUSTER_BYTES - RUN_BYTES) / RUN_BYTES;
    assert_eq!(neighbours, 1, "3-page runs: one neighbour fits");
    let ((h0, _), seed0) = &objs[0];
    assert_eq!(f.words(*h0), expected(*seed0));
    assert_eq!(f.faults(), 1);
    assert_eq!(f.swap.counters.read_ahead_objects.load(Relaxed), neighbours);
    let resident: Vec<bool> = objs
        .iter()
        .map(|((_, s), _)| f.entry(s).is_resident())
        .collect();
    assert_eq!(
        resident,
        [true, true, false, false],
        "the fault and its neighbour"
    );
    assert_eq!(f.space().out_bytes(), 2 * RUN_BYTES);
    // The neighbour read ahead needs no fault; the next run out brings its own.
    for ((h, _), seed) in &objs {
        assert_eq!(f.words(*h), expected(*seed));
    }
    assert_eq!(f.faults(), 2, "two faults for four runs");
    assert_eq!(f.space().out_bytes(), 0);
}

#[test]
fn marvins_read_ahead_window_is_not_the_page_cluster() {
    // The same four runs under Marvin's swap read back with one fault: its window is
    // 128 KiB, not the kernel's cluster.
    let f = Fixture::new();
    let objs: Vec<_> = (0..4).map(|i| (f.stubbed(600 + i), 600 + i)).collect();
    assert_eq!(f.save_all().saved_objects, 4);
    assert_eq!(f.reclaim_all().objects, 4);
    for ((h, _), seed) in &objs {
        assert_eq!(f.words(*h), expected(*seed));
    }
    assert_eq!(f.faults(), 1);
}

#[test]
fn reads_count_as_references_for_the_page_swap_lru_but_not_for_marvins_coldness() {
    for (bookmarking, read_keeps_warm) in [(false, true), (true, false)] {
        let f = Fixture::with(PolicyConfig::default(), bookmarking);
        let (a, sa) = f.stubbed(1);
        let (_, sb) = f.stubbed(2);
        age_until_cold(&f);
        assert!(f.flags(&sa).contains(EntryFlags::COLD));
        assert!(f.flags(&sb).contains(EntryFlags::COLD));
        assert_eq!(f.words(a), expected(1));
        round(&f);
        assert_eq!(
            !f.flags(&sa).contains(EntryFlags::COLD),
            read_keeps_warm,
            "bookmarking {bookmarking}: a run read in the last round"
        );
        assert!(f.flags(&sb).contains(EntryFlags::COLD));
    }
}

#[test]
fn a_run_referenced_since_the_last_round_gets_a_second_chance() {
    let f = page_swap();
    let (a, sa) = f.stubbed(11);
    let (b, sb) = f.stubbed(12);
    age_until_cold(&f);
    // Read since the last round: its accessed bit is set, its history still cold.
    assert_eq!(f.words(a), expected(11));
    assert!(f.flags(&sa).contains(EntryFlags::COLD));
    let first = page_out(&f.heap, &f.swap, RUN_BYTES);
    assert_eq!(first.objects, 1);
    assert!(f.entry(&sa).is_resident(), "the referenced run stays");
    assert!(!f.entry(&sb).is_resident(), "the unreferenced one goes");
    // Nothing unreferenced is left: the second pass takes the referenced run.
    assert_eq!(page_out(&f.heap, &f.swap, RUN_BYTES).objects, 1);
    assert!(!f.entry(&sa).is_resident());
    assert_eq!(f.words(a), expected(11));
    assert_eq!(f.words(b), expected(12));
}

#[test]
fn a_clean_run_read_back_goes_out_again_without_a_write() {
    let f = page_swap();
    let (a, sa) = f.stubbed(21);
    let first = page_out(&f.heap, &f.swap, u64::MAX);
    assert_eq!(first.objects, 1);
    assert!(first.bytes_written > 0);
    assert_eq!(f.words(a), expected(21));
    let again = page_out(&f.heap, &f.swap, u64::MAX);
    assert_eq!(
        (again.objects, again.bytes_written, again.clean_drops),
        (1, 0, 1)
    );
    assert_eq!(f.words(a), expected(21), "its slot still held it");
    // Written since it came back: the next page-out writes it.
    f.fill(a, 22);
    let dirty = page_out(&f.heap, &f.swap, u64::MAX);
    assert_eq!((dirty.objects, dirty.clean_drops), (1, 0));
    assert!(dirty.bytes_written > 0);
    assert!(!f.entry(&sa).is_resident());
    assert_eq!(f.words(a), expected(22));
}
