//! A launch's prefetch ([`AppSwap::begin_launch_prefetch`]): from the foreground
//! transition until the frame, a fault starts reading the swap file ahead of itself, so
//! the faults that follow find their checkpoints in the page cache instead of each
//! waiting for the disk; faults that follow it keep it going to the end of what they
//! read, faults that do not leave it at no more than its policy's budget; nothing is
//! asked for outside a launch, under a budget of 0 or for the page-swap baseline, and
//! what it brought leaves the page cache once the launch is over.

mod common;

use std::fs::File;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use common::{expected, Fixture};
use marvin_runtime::Handle;
use marvin_swap::{PolicyConfig, RestoreMode};
use marvin_swap::{PREFETCH_AHEAD_BYTES, PREFETCH_AHEAD_MAX_BYTES, READ_AHEAD_BYTES};

/// Objects of the tests: about 8 KiB each, so the file holds several read-ahead windows
/// and then some past the budget.
const OBJECTS: u64 = 300;

fn policy(prefetch_bytes: u64) -> PolicyConfig {
    let mut p = PolicyConfig::default();
    p.restore.mode = RestoreMode::OnDemand;
    p.restore.prefetch_bytes = prefetch_bytes;
    p
}

/// A fixture whose `OBJECTS` objects are all saved and reclaimed, and whose swap file
/// has left the page cache.
fn all_out(policy: PolicyConfig, bookmarking: bool) -> (Fixture, Vec<(Handle, u64)>) {
    let f = Fixture::with(policy, bookmarking);
    let objs: Vec<_> = (0..OBJECTS)
        .map(|i| (f.stubbed(1000 + i).0, 1000 + i))
        .collect();
    if bookmarking {
        assert_eq!(f.save_all().saved_objects, OBJECTS);
        assert_eq!(f.reclaim_all().objects, OBJECTS);
    } else {
        // The page-swap baseline writes and drops page runs in one go.
        let out = marvin_swap::pageout::page_out(&f.heap, &f.swap, u64::MAX);
        assert_eq!(out.objects, OBJECTS);
    }
    f.swap.file.lock().sync_and_release().expect("sync");
    (f, objs)
}

fn prefetched(f: &Fixture) -> u64 {
    f.swap.counters.prefetched_bytes.load(Relaxed)
}

fn used_end(f: &Fixture) -> u64 {
    let file = f.swap.file.lock();
    marvin_swap::FILE_HEADER_BYTES + file.used_bytes()
}

/// Pages of `[from, to)` of the swap file in the page cache (`mincore`: it reads
/// nothing in).
fn cached(f: &Fixture, from: u64, to: u64) -> usize {
    let path = f.swap.file.lock().path().to_path_buf();
    let file = File::open(path).expect("open");
    marvin_runtime::memfd::cached_pages(&file, from, to).expect("mincore")
}

const PAGE: u64 = 4096;

#[test]
fn a_launch_reads_the_file_ahead_of_its_faults_within_its_budget() {
    let budget = 3 * READ_AHEAD_BYTES;
    let (f, objs) = all_out(policy(budget), true);
    let end = used_end(&f);
    assert!(
        end > 2 * READ_AHEAD_BYTES + budget,
        "the file must reach past the budget"
    );
    let tmpfs = marvin_runtime::memfd::on_tmpfs(f.dir.path());
    if tmpfs {
        eprintln!("skipping the page-cache checks: the swap directory is on tmpfs");
    } else {
        assert_eq!(cached(&f, 0, end), 0, "released before the launch");
    }

    // Outside a launch a fault reads its window and no further.
    let (h, seed) = objs[0];
    assert_eq!(f.words(h), expected(seed));
    assert_eq!(f.faults(), 1);
    assert_eq!(prefetched(&f), 0, "a fault outside a launch prefetched");

    // In a launch, the next fault starts reading the budget's worth of the file after
    // its own window, and no more.
    f.swap.begin_launch_prefetch();
    let next = objs
        .iter()
        .position(|&(h, _)| !f.entry(&f.space().get(h).unwrap()).is_resident())
        .expect("objects still out");
    let (h, seed) = objs[next];
    let (slot, _) = f
        .swap
        .file
        .lock()
        .live_slots_in(0, end)
        .find(|&(_, key)| key == h.value())
        .expect("its checkpoint");
    let ahead_from = (slot.offset() / READ_AHEAD_BYTES + 1) * READ_AHEAD_BYTES;
    assert_eq!(f.words(h), expected(seed));
    assert_eq!(f.faults(), 2);
    assert_eq!(
        prefetched(&f),
        budget,
        "the whole budget at the first fault"
    );
    assert!(budget <= PREFETCH_AHEAD_BYTES);
    if !tmpfs {
        // The advice only starts the reads: wait (bounded) for them to land.
        let want = (budget / PAGE) as usize;
        let deadline = Instant::now() + Duration::from_secs(30);
        while cached(&f, ahead_from, ahead_from + budget) < want {
            assert!(
                Instant::now() < deadline,
                "the prefetched range never reached the page cache: {} of {want} pages",
                cached(&f, ahead_from, ahead_from + budget)
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    // The faults that follow, in the prefetched range, read from the page cache and
    // give what they used back to the budget: the prefetch keeps ahead of them past
    // the budget, never past the file.
    let faults = f.faults();
    for &(h, seed) in &objs[next..] {
        assert_eq!(f.words(h), expected(seed));
    }
    assert!(
        f.faults() > faults + 2,
        "faults past the first prefetched range"
    );
    let all = prefetched(&f);
    assert!(
        all > budget,
        "faults that followed the prefetch did not keep it going: {all} bytes"
    );
    assert!(all <= end - ahead_from, "asked past the file: {all} bytes");

    // The frame: the prefetch ends, and what it left in the page cache leaves it.
    f.swap.end_launch_prefetch();
    assert!(f.swap.drop_launch_prefetch(), "the launch asked for pages");
    assert!(!f.swap.drop_launch_prefetch(), "dropped once per launch");
    if !tmpfs {
        assert_eq!(cached(&f, 0, end), 0, "the prefetch left pages cached");
    }
    // After the launch, faults no longer prefetch.
    assert_eq!(f.reclaim_all().objects, OBJECTS);
    for &(h, seed) in objs.iter().step_by(40) {
        assert_eq!(f.words(h), expected(seed));
    }
    assert_eq!(prefetched(&f), all, "a fault after the frame prefetched");
}

#[test]
fn a_launch_keeps_its_prefetch_ahead_of_faults_that_follow_it_to_the_end_of_the_file() {
    // A budget of a few windows, a file many times larger: each fault in the stream
    // asks only for what is not yet asked for, ahead of its own window, and what it
    // reads goes back to the budget, so faults walking the file in order have every
    // byte past the first window asked for once, and never twice.
    let budget = PREFETCH_AHEAD_BYTES + 2 * READ_AHEAD_BYTES;
    let (f, objs) = all_out(policy(budget), true);
    let end = used_end(&f);
    assert!(end > 2 * budget, "the file must be longer than two budgets");
    f.swap.begin_launch_prefetch();
    let (h, seed) = objs[0];
    assert_eq!(f.words(h), expected(seed));
    let first = prefetched(&f);
    assert_eq!(
        first,
        PREFETCH_AHEAD_BYTES.min(end - READ_AHEAD_BYTES),
        "the first fault asks for the first ahead distance"
    );
    for &(h, seed) in &objs {
        assert_eq!(f.words(h), expected(seed));
    }
    let all = prefetched(&f);
    let file_end = f.swap.file.lock().used_end();
    assert_eq!(
        all,
        file_end - READ_AHEAD_BYTES,
        "every byte past the first fault's window, once"
    );
    f.swap.end_launch_prefetch();
    assert!(f.swap.drop_launch_prefetch());
}

#[test]
fn the_prefetch_reads_farther_ahead_as_faults_land_in_it() {
    // A budget larger than the file: what one fault asks for is bounded by the ahead
    // distance alone, which starts at PREFETCH_AHEAD_BYTES and doubles with each fault
    // that lands in the range, up to PREFETCH_AHEAD_MAX_BYTES.
    let (f, objs) = all_out(policy(PREFETCH_AHEAD_MAX_BYTES), true);
    f.swap.begin_launch_prefetch();
    let mut largest = 0;
    for &(h, seed) in &objs {
        let before = prefetched(&f);
        assert_eq!(f.words(h), expected(seed));
        largest = largest.max(prefetched(&f) - before);
    }
    assert!(
        largest > PREFETCH_AHEAD_BYTES && largest <= PREFETCH_AHEAD_MAX_BYTES,
        "one fault asked for {largest} bytes: the ahead distance did not grow within its bound"
    );
    f.swap.end_launch_prefetch();
    assert!(f.swap.drop_launch_prefetch());
}

#[test]
fn a_launch_whose_faults_do_not_follow_its_prefetch_asks_for_at_most_its_budget() {
    // Faults striding through the file, each several windows past the last (objects of
    // about 8 KiB, 16 to a window), never land in what was asked ahead of them: nothing
    // goes back to the budget, and the launch asks for at most the budget.
    let budget = 2 * READ_AHEAD_BYTES;
    let (f, objs) = all_out(policy(budget), true);
    f.swap.begin_launch_prefetch();
    for &(h, seed) in objs.iter().step_by(96) {
        assert_eq!(f.words(h), expected(seed));
    }
    assert!(f.faults() >= 4, "the walk faulted window by window");
    let all = prefetched(&f);
    assert!(all > 0, "the launch asked for nothing");
    assert!(
        all <= budget,
        "asked for {all} bytes, more than the budget {budget}"
    );
    f.swap.end_launch_prefetch();
    assert!(f.swap.drop_launch_prefetch());
}

#[test]
fn no_prefetch_under_a_budget_of_zero_or_for_the_page_swap_baseline() {
    for (budget, bookmarking) in [(0, true), (4 << 20, false)] {
        let (f, objs) = all_out(policy(budget), bookmarking);
        f.swap.begin_launch_prefetch();
        for &(h, seed) in &objs {
            assert_eq!(f.words(h), expected(seed));
        }
        assert!(f.faults() > 1);
        assert_eq!(
            prefetched(&f),
            0,
            "budget {budget}, bookmarking {bookmarking}"
        );
        f.swap.end_launch_prefetch();
        assert!(!f.swap.drop_launch_prefetch(), "nothing was asked for");
    }
}
