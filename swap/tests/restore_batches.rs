//! The eager restore in batches ([`restore::restore_all`]) and faults in a row: every
//! object comes back exactly as saved, through the batches, the second thread's
//! prefaults and the descriptor the kernel reads ahead of; a corrupted or rolled-back
//! checkpoint is an error for its object alone, never wrong data; and what the reads
//! brought into the page cache leaves it behind them.

mod common;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;

use common::{expected, Fixture};
use marvin_runtime::Handle;
use marvin_runtime::Stub;
use marvin_runtime::{AccessKind, Barriers};
use marvin_swap::restore::{self, BATCH_BYTES, PARALLEL_BYTES};
use marvin_swap::SLOT_HEADER_BYTES;
use std::sync::Arc;

/// Bytes of heap one test object takes (`common::WORDS` words and a header: 3 pages).
const OBJECT_PAGES_BYTES: usize = 3 * 4096;

/// Enough objects for several batches and the second thread's prefaults.
fn objects() -> u64 {
    (PARALLEL_BYTES.max(3 * BATCH_BYTES) / OBJECT_PAGES_BYTES + 50) as u64
}

/// A fixture with `n` objects stubbed, saved and reclaimed, its swap file synced and out
/// of the page cache.
fn all_out(n: u64) -> (Fixture, Vec<(Handle, Arc<Stub>, u64)>) {
    let f = Fixture::new();
    let objs: Vec<_> = (0..n)
        .map(|i| {
            let (h, s) = f.stubbed(7000 + i);
            (h, s, 7000 + i)
        })
        .collect();
    assert_eq!(f.save_all().saved_objects, n);
    assert_eq!(f.reclaim_all().objects, n);
    f.swap.file.lock().sync_and_release().expect("sync");
    (f, objs)
}

/// Pages of the swap file in the page cache (`mincore`: it reads nothing in).
fn cached(f: &Fixture) -> usize {
    let file = f.swap.file.lock();
    let end = file.file_bytes();
    let path = file.path().to_path_buf();
    drop(file);
    marvin_runtime::memfd::cached_pages(&File::open(path).expect("open"), 0, end).expect("mincore")
}

/// Overwrites bytes of the swap file behind the swap layer's back.
fn damage(f: &Fixture, at: u64, bytes: &[u8]) {
    let path = f.swap.file.lock().path().to_path_buf();
    let file = OpenOptions::new().write(true).open(path).expect("open");
    file.write_all_at(bytes, at).expect("damage");
}

fn slot_of(s: &Stub) -> u64 {
    s.state.lock().slot().expect("saved")
}

#[test]
fn an_eager_restore_in_batches_brings_every_object_back_exactly() {
    let n = objects();
    let (f, objs) = all_out(n);
    let r = restore::restore_all(&f.heap, &f.swap);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.objects, n);
    assert!(objs.iter().all(|(_, s, _)| f.entry(s).is_resident()));
    assert_eq!(f.faults(), 0, "an eager restore is not an object fault");
    for (h, _, seed) in &objs {
        assert_eq!(f.words(*h), expected(*seed), "object {seed}");
    }
    // What the batches read left the page cache behind them.
    if !marvin_runtime::memfd::on_tmpfs(f.dir.path()) {
        let pages = cached(&f);
        assert!(
            pages <= 16,
            "{pages} pages of the swap file still cached after an eager restore"
        );
    }
    // A second round trip through the same file reads the same.
    assert_eq!(f.reclaim_all().objects, n);
    let r = restore::restore_all(&f.heap, &f.swap);
    assert_eq!((r.objects, r.errors.len()), (n, 0));
    for (h, _, seed) in objs.iter().step_by(97) {
        assert_eq!(f.words(*h), expected(*seed), "object {seed}");
    }
}

#[test]
fn a_corrupted_checkpoint_in_a_batch_fails_its_object_alone() {
    let n = objects();
    let (f, objs) = all_out(n);
    // One payload in the middle of the second batch, one byte flipped.
    let victim = (BATCH_BYTES / OBJECT_PAGES_BYTES + 3).min(n as usize - 1);
    let (vh, vs, _) = &objs[victim];
    let at = slot_of(vs) + SLOT_HEADER_BYTES + 100;
    damage(&f, at, &[0xA5]);
    let r = restore::restore_all(&f.heap, &f.swap);
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert!(
        r.errors[0].contains(&vh.value().to_string()) && r.errors[0].contains("checksum"),
        "{}",
        r.errors[0]
    );
    assert_eq!(r.objects, n - 1);
    assert!(!f.entry(vs).is_resident(), "a corrupt checkpoint stays out");
    for (i, (h, _, seed)) in objs.iter().enumerate() {
        if i != victim {
            assert_eq!(f.words(*h), expected(*seed), "object {seed}");
        }
    }
    // Its own fault reports the same, and hands out no bytes.
    assert!(f.heap.access::<Barriers>(*vh, AccessKind::Read).is_err());
}

#[test]
fn a_rolled_back_file_fails_the_restore_of_what_changed_not_returns_old_data() {
    let n = objects();
    let (f, objs) = all_out(n);
    let path = f.swap.file.lock().path().to_path_buf();
    let old = std::fs::read(&path).expect("copy");
    // Every tenth object changes and is saved again, in place (a new generation).
    let r = restore::restore_all(&f.heap, &f.swap);
    assert!(r.errors.is_empty());
    let changed: Vec<usize> = (0..objs.len()).step_by(10).collect();
    for &i in &changed {
        f.fill(objs[i].0, 90_000 + i as u64);
    }
    assert_eq!(f.save_all().saved_objects, changed.len() as u64);
    assert_eq!(f.reclaim_all().objects, n);
    f.swap.file.lock().sync_and_release().expect("sync");
    // The file as it was before: every checksum in it holds.
    std::fs::write(&path, &old).expect("roll back");
    let r = restore::restore_all(&f.heap, &f.swap);
    assert_eq!(r.errors.len(), changed.len(), "{:?}", &r.errors[..3]);
    assert!(
        r.errors.iter().all(|e| e.contains("generation")),
        "{}",
        r.errors[0]
    );
    for (i, (h, s, seed)) in objs.iter().enumerate() {
        if changed.contains(&i) {
            assert!(!f.entry(s).is_resident(), "object {i} came back old");
        } else {
            assert_eq!(f.words(*h), expected(*seed), "object {seed}");
        }
    }
}

#[test]
fn faults_in_a_row_bring_every_object_back_and_leave_the_page_cache_behind_them() {
    let n = objects();
    let (f, objs) = all_out(n);
    // A walk in address order: every fault after the first continues the run.
    for (h, _, seed) in &objs {
        assert_eq!(f.words(*h), expected(*seed), "object {seed}");
    }
    assert!(f.faults() > 0 && f.faults() < n, "faults read ahead");
    // Out again, and one fault elsewhere ends the run: what the run read and what the
    // kernel read ahead of it leave the page cache; the one fault's window stays.
    assert_eq!(f.reclaim_all().objects, n);
    let (h, _, seed) = &objs[0];
    assert_eq!(f.words(*h), expected(*seed));
    if !marvin_runtime::memfd::on_tmpfs(f.dir.path()) {
        let pages = cached(&f);
        let window = (marvin_swap::READ_AHEAD_BYTES / 4096) as usize;
        assert!(
            pages <= 2 * window + 8,
            "{pages} pages of the swap file cached after a run of faults and one more"
        );
    }
    for (h, _, seed) in objs.iter().rev() {
        assert_eq!(f.words(*h), expected(*seed), "object {seed}");
    }
}
