//! Compressed checkpoints through the whole swap layer (a policy with `[saver] compress
//! = "lz4"`): objects that compress and objects that do not come back exactly as saved
//! through the eager restore's batches and through faults, the file holds fewer bytes
//! than the objects, and a corrupted or rolled-back compressed checkpoint is an error
//! for its object alone, never wrong data.

mod common;

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use common::{expected, pattern, Fixture, WORDS};
use marvin_runtime::Handle;
use marvin_runtime::Stub;
use marvin_runtime::{AccessKind, Barriers};
use marvin_swap::restore::{self, BATCH_BYTES, PARALLEL_BYTES};
use marvin_swap::Compression;
use marvin_swap::PolicyConfig;
use marvin_swap::SLOT_HEADER_BYTES;

/// Bytes of heap one test object takes (`common::WORDS` words and a header: 3 pages).
const OBJECT_PAGES_BYTES: usize = 3 * 4096;

fn lz4_fixture() -> Fixture {
    let mut policy = PolicyConfig::default();
    policy.saver.compress = Compression::Lz4;
    Fixture::with(policy, true)
}

/// Object `seed`'s words: every third object holds `common::pattern` (which does not
/// compress), the others are zeros but for every 100th word.
fn words_of(seed: u64) -> Vec<u64> {
    if seed.is_multiple_of(3) {
        expected(seed)
    } else {
        (0..WORDS as usize)
            .map(|i| if i % 100 == 0 { pattern(seed, i) } else { 0 })
            .collect()
    }
}

fn fill(f: &Fixture, h: Handle, words: &[u64]) {
    let a = f.heap.access::<Barriers>(h, AccessKind::Write).unwrap();
    for (w, &v) in a.obj().words().iter().zip(words) {
        w.store(v, Relaxed);
    }
}

/// `n` objects stubbed, saved compressed where they shrink, reclaimed, the file synced
/// and out of the page cache.
fn all_out(n: u64) -> (Fixture, Vec<(Handle, Arc<Stub>, u64)>) {
    let f = lz4_fixture();
    let objs: Vec<_> = (0..n)
        .map(|i| {
            let (h, s) = f.stubbed(i);
            fill(&f, h, &words_of(i));
            (h, s, i)
        })
        .collect();
    assert_eq!(f.save_all().saved_objects, n);
    assert_eq!(f.reclaim_all().objects, n);
    f.swap.file.lock().sync_and_release().expect("sync");
    (f, objs)
}

fn objects() -> u64 {
    (PARALLEL_BYTES.max(3 * BATCH_BYTES) / OBJECT_PAGES_BYTES + 50) as u64
}

fn damage(f: &Fixture, at: u64, bytes: &[u8]) {
    let path = f.swap.file.lock().path().to_path_buf();
    let file = OpenOptions::new().write(true).open(path).expect("open");
    file.write_all_at(bytes, at).expect("damage");
}

#[test]
fn compressed_objects_come_back_exactly_eagerly_and_on_fault() {
    let n = objects();
    let (f, objs) = all_out(n);
    let raw = n * WORDS as u64 * 8;
    let stored = f.swap.file.lock().live_bytes();
    assert!(
        stored < raw / 2,
        "{stored} bytes stored for {raw} bytes of objects"
    );
    let r = restore::restore_all(&f.heap, &f.swap);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.objects, n);
    for (h, _, seed) in &objs {
        assert_eq!(f.words(*h), words_of(*seed), "object {seed}");
    }
    // Out again, and back through faults: a walk, then single faults backwards.
    assert_eq!(f.reclaim_all().objects, n);
    for (h, _, seed) in &objs {
        assert_eq!(f.words(*h), words_of(*seed), "object {seed}");
    }
    assert_eq!(f.reclaim_all().objects, n);
    for (h, _, seed) in objs.iter().rev().step_by(7) {
        assert_eq!(f.words(*h), words_of(*seed), "object {seed}");
    }
}

#[test]
fn a_corrupted_compressed_checkpoint_fails_its_object_alone() {
    let n = objects();
    let (f, objs) = all_out(n);
    let victim = (BATCH_BYTES / OBJECT_PAGES_BYTES + 5).min(n as usize - 1);
    assert!(!(victim as u64).is_multiple_of(3), "a compressed one");
    let (vh, vs, _) = &objs[victim];
    let slot = vs.state.lock().slot().expect("saved");
    let len = f
        .swap
        .file
        .lock()
        .payload_len(marvin_swap::SlotId::from_offset(slot))
        .unwrap();
    assert!(len < 1000, "stored in {len} bytes");
    damage(&f, slot + SLOT_HEADER_BYTES + len as u64 / 2, &[0x5A]);
    let r = restore::restore_all(&f.heap, &f.swap);
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert!(r.errors[0].contains("checksum"), "{}", r.errors[0]);
    assert!(!f.entry(vs).is_resident(), "a corrupt checkpoint stays out");
    for (i, (h, _, seed)) in objs.iter().enumerate() {
        if i != victim {
            assert_eq!(f.words(*h), words_of(*seed), "object {seed}");
        }
    }
    assert!(f.heap.access::<Barriers>(*vh, AccessKind::Read).is_err());
}

#[test]
fn a_rolled_back_compressed_file_is_refused_not_read() {
    let n = objects();
    let (f, objs) = all_out(n);
    let path = f.swap.file.lock().path().to_path_buf();
    let old = std::fs::read(&path).expect("copy");
    let r = restore::restore_all(&f.heap, &f.swap);
    assert!(r.errors.is_empty());
    // Every tenth object changes (still compressible) and is saved again.
    let changed: Vec<usize> = (1..objs.len()).step_by(10).collect();
    for &i in &changed {
        let mut w = words_of(objs[i].2);
        w[500] = 77;
        fill(&f, objs[i].0, &w);
    }
    assert_eq!(f.save_all().saved_objects, changed.len() as u64);
    assert_eq!(f.reclaim_all().objects, n);
    f.swap.file.lock().sync_and_release().expect("sync");
    std::fs::write(&path, &old).expect("roll back");
    let r = restore::restore_all(&f.heap, &f.swap);
    assert_eq!(r.errors.len(), changed.len(), "{:?}", &r.errors[..3]);
    // A changed checkpoint that still fit its slot is refused by its generation; one
    // that moved (its compressed size grew) lies where the old file had no live slot.
    for e in &r.errors {
        assert!(
            ["generation", "magic", "truncated", "outside", "checksum"]
                .iter()
                .any(|what| e.contains(what)),
            "{e}"
        );
    }
    for (i, (h, s, seed)) in objs.iter().enumerate() {
        if changed.contains(&i) {
            assert!(!f.entry(s).is_resident(), "object {i} came back old");
            assert!(f.heap.access::<Barriers>(*h, AccessKind::Read).is_err());
        } else {
            assert_eq!(f.words(*h), words_of(*seed), "object {seed}");
        }
    }
}
