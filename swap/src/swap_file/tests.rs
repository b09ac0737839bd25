//! Tests of the swap file through its public API, plus byte-level damage done with plain
//! file writes (the swap file reads the file itself, so they are visible at once).

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};

use super::compact::{SourceWindow, COMPACT_CHUNK};
use super::layout::{FILE_HEADER_BYTES, SLOT_HEADER_BYTES};
use super::*;

fn object(key: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (key as usize * 31 + i * 7 + (i >> 8)) as u8)
        .collect()
}

fn read_back(f: &SwapFile, slot: SlotId, key: u64) -> Result<Vec<u8>, SwapError> {
    let mut out = vec![0; f.payload_len(slot).expect("live slot")];
    f.read(slot, key, &mut out).map(|()| out)
}

fn damage(f: &SwapFile, at: u64, bytes: &[u8]) {
    let mut file = OpenOptions::new().write(true).open(f.path()).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(bytes).unwrap();
}

fn new_file() -> (tempfile::TempDir, SwapFile) {
    let dir = tempfile::tempdir().unwrap();
    let f = SwapFile::create(dir.path(), "app.swap").unwrap();
    (dir, f)
}

#[test]
fn many_objects_round_trip_and_the_file_grows() {
    let (_dir, mut f) = new_file();
    let initial = f.file_bytes();
    let mut saved = Vec::new();
    let mut total = 0;
    for key in 0..600u64 {
        let len = [0, 1, 15, 16, 17, 2048, 4076, 9000][key as usize % 8];
        let bytes = object(key, len);
        total += len as u64;
        saved.push((key, f.write(key, &bytes, None).unwrap(), bytes));
    }
    assert!(
        f.file_bytes() > initial,
        "600 objects do not fit the initial file"
    );
    assert_eq!(f.live_bytes(), total);
    assert_eq!(f.live_slots(), 600);
    for (key, slot, bytes) in &saved {
        assert_eq!(&read_back(&f, *slot, *key).unwrap(), bytes, "object {key}");
    }
    f.flush().unwrap();
    assert_eq!(std::fs::metadata(f.path()).unwrap().len(), f.file_bytes());
}

#[test]
fn rewrite_in_place_when_it_fits_else_move() {
    let (_dir, mut f) = new_file();
    let slot = f.write(7, &object(7, 4000), None).unwrap();
    let other = f.write(8, &object(8, 100), None).unwrap();
    assert_eq!(f.generation(slot), Some(1));

    let smaller = object(70, 3000);
    assert_eq!(
        f.write(7, &smaller, Some(slot)).unwrap(),
        slot,
        "same slot when it fits"
    );
    assert_eq!(f.generation(slot), Some(2));
    assert_eq!(read_back(&f, slot, 7).unwrap(), smaller);
    assert_eq!(f.live_bytes(), 3100);
    let again = object(71, 4000);
    assert_eq!(
        f.write(7, &again, Some(slot)).unwrap(),
        slot,
        "back up to the slot's capacity"
    );
    assert_eq!(read_back(&f, slot, 7).unwrap(), again);

    let bigger = object(72, 5000);
    let moved = f.write(7, &bigger, Some(slot)).unwrap();
    assert_ne!(moved, slot);
    assert_eq!(
        f.generation(moved),
        Some(4),
        "the generation follows the object"
    );
    assert_eq!(read_back(&f, moved, 7).unwrap(), bigger);
    assert!(matches!(
        f.read(slot, 7, &mut [0; 4000]),
        Err(SwapError::NoSuchSlot { .. })
    ));
    assert_eq!(read_back(&f, other, 8).unwrap(), object(8, 100));
    assert_eq!(f.live_bytes(), 5100);
    assert_eq!(f.live_slots(), 2);
}

#[test]
fn a_slot_belongs_to_one_object() {
    let (_dir, mut f) = new_file();
    let slot = f.write(1, &object(1, 64), None).unwrap();
    let err = f.write(2, &object(2, 64), Some(slot)).unwrap_err();
    assert!(
        matches!(
            err,
            SwapError::WrongObject {
                key: 2,
                owner: 1,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(read_back(&f, slot, 1).unwrap(), object(1, 64), "untouched");
}

#[test]
fn freed_space_is_merged_reused_and_a_free_tail_shrinks_the_used_region() {
    let (_dir, mut f) = new_file();
    let a = f.write(1, &object(1, 1000), None).unwrap();
    let b = f.write(2, &object(2, 1000), None).unwrap();
    let c = f.write(3, &object(3, 1000), None).unwrap();
    let d = f.write(4, &object(4, 1000), None).unwrap();
    let per_slot = SLOT_HEADER_BYTES + 1008;
    assert_eq!(f.used_bytes(), 4 * per_slot);
    f.free(b).unwrap();
    f.free(c).unwrap();
    assert_eq!(
        f.dead_bytes(),
        2 * per_slot + 2 * 8,
        "two slots and the slack of the others"
    );
    // b and c merged into one free slot big enough for 2000 bytes, which reuses it.
    let e = f.write(5, &object(5, 2000), None).unwrap();
    assert_eq!(e, b);
    assert_eq!(f.used_bytes(), 4 * per_slot);
    f.free(d).unwrap();
    assert_eq!(
        f.used_bytes(),
        3 * per_slot,
        "the freed tail leaves the used region"
    );
    f.free(e).unwrap();
    f.free(a).unwrap();
    assert_eq!((f.used_bytes(), f.dead_bytes(), f.live_bytes()), (0, 0, 0));
    assert!(matches!(f.free(a), Err(SwapError::NoSuchSlot { .. })));
}

#[test]
fn compaction_past_the_threshold_keeps_live_data_and_shrinks_the_file() {
    let (_dir, mut f) = new_file();
    let mut live: Vec<(u64, SlotId)> = Vec::new();
    for key in 0..400u64 {
        live.push((key, f.write(key, &object(key, 4076), None).unwrap()));
    }
    assert_eq!(f.compact_if_needed(0.25).unwrap(), None, "nothing dead yet");
    // Free every third object: about a third of the used region goes dead, not at the tail.
    let mut kept = Vec::new();
    for (i, (key, slot)) in live.into_iter().enumerate() {
        if i % 3 == 1 {
            f.free(slot).unwrap();
        } else {
            kept.push((key, slot));
        }
    }
    assert!(f.dead_fraction() > 0.25, "{}", f.dead_fraction());
    let before = f.file_bytes();
    let on_disk_before = std::fs::metadata(f.path()).unwrap().len();
    assert_eq!(on_disk_before, before);
    let report = f
        .compact_if_needed(0.25)
        .unwrap()
        .expect("past the threshold");
    assert_eq!(report.bytes_before, before);
    assert!(
        report.bytes_after < before,
        "{} !< {before}",
        report.bytes_after
    );
    assert_eq!(
        std::fs::metadata(f.path()).unwrap().len(),
        report.bytes_after
    );
    assert_eq!(report.remap.len(), kept.len());
    assert!(report.dead_bytes_dropped > 0);
    assert!(f.dead_fraction() < 0.01, "only alignment slack is left");
    for (key, old) in kept {
        let new = report.new_slot(old).expect("every live slot is remapped");
        assert_eq!(
            read_back(&f, new, key).unwrap(),
            object(key, 4076),
            "object {key}"
        );
    }
    assert_eq!(
        f.compact_if_needed(0.25).unwrap(),
        None,
        "nothing dead any more"
    );
    assert!(!f.path().with_file_name("app.swap.compacting").exists());
    // The compacted file keeps working.
    let slot = f.write(1000, &object(1000, 50), None).unwrap();
    assert_eq!(read_back(&f, slot, 1000).unwrap(), object(1000, 50));
}

#[test]
fn a_damaged_payload_is_reported_naming_the_object() {
    let (_dir, mut f) = new_file();
    let slot = f.write(424_242, &object(1, 256), None).unwrap();
    damage(&f, slot.offset() + SLOT_HEADER_BYTES + 100, &[0x5a]);
    let err = read_back(&f, slot, 424_242).unwrap_err();
    assert!(
        matches!(
            err,
            SwapError::Corrupt {
                kind: CorruptKind::BadPayloadChecksum { .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("object 424242"), "{err}");
    assert!(err.to_string().contains(&slot.to_string()), "{err}");
}

#[test]
fn a_damaged_header_is_reported_clearly() {
    let (_dir, mut f) = new_file();
    let a = f.write(11, &object(11, 64), None).unwrap();
    let b = f.write(12, &object(12, 64), None).unwrap();
    damage(&f, a.offset() + 8, &[0xff]); // the key
    let err = read_back(&f, a, 11).unwrap_err();
    assert!(
        matches!(
            err,
            SwapError::Corrupt {
                key: 11,
                kind: CorruptKind::BadHeaderChecksum { .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("object 11"), "{err}");
    damage(&f, b.offset(), b"XXXX"); // the magic
    let err = read_back(&f, b, 12).unwrap_err();
    assert!(
        matches!(
            err,
            SwapError::Corrupt {
                kind: CorruptKind::BadMagic { .. },
                ..
            }
        ),
        "{err}"
    );
    // Compaction refuses to carry a damaged slot over, and leaves the file as it was.
    let err = f.compact().unwrap_err();
    assert!(matches!(err, SwapError::Corrupt { key: 11, .. }), "{err}");
    f.free(a).unwrap();
    f.free(b).unwrap();
    let c = f.write(13, &object(13, 64), None).unwrap();
    assert_eq!(read_back(&f, c, 13).unwrap(), object(13, 64));
}

#[test]
fn asking_for_the_wrong_object_or_length_is_an_error() {
    let (_dir, mut f) = new_file();
    let slot = f.write(5, &object(5, 100), None).unwrap();
    let err = f.read(slot, 6, &mut [0; 100]).unwrap_err();
    assert!(
        matches!(
            err,
            SwapError::Corrupt {
                key: 6,
                kind: CorruptKind::KeyMismatch { found: 5 },
                ..
            }
        ),
        "{err}"
    );
    let err = f.read(slot, 5, &mut [0; 99]).unwrap_err();
    assert!(matches!(
        err,
        SwapError::Corrupt {
            kind: CorruptKind::LengthMismatch {
                stored: 100,
                expected: 99
            },
            ..
        }
    ));
    let err = f
        .read(SlotId::from_offset(3), 5, &mut [0; 100])
        .unwrap_err();
    assert!(matches!(err, SwapError::NoSuchSlot { .. }), "{err}");
}

#[test]
fn a_rolled_back_file_is_an_error_naming_the_object_not_old_data() {
    let (dir, mut f) = new_file();
    let first = object(5, 6000);
    let slot = f.write(5, &first, None).unwrap();
    let other = f.write(6, &object(6, 3000), None).unwrap();
    f.flush().unwrap();
    // A copy of the whole file while the first checkpoint is current...
    let copy = std::fs::read(f.path()).unwrap();
    let second = object(50, 6000);
    assert_eq!(f.write(5, &second, Some(slot)).unwrap(), slot);
    assert_eq!(read_back(&f, slot, 5).unwrap(), second);
    // ...put back over the file: every checksum in it holds.
    std::fs::write(dir.path().join("app.swap"), &copy).unwrap();
    match read_back(&f, slot, 5) {
        Err(
            e @ SwapError::Corrupt {
                key: 5,
                kind:
                    CorruptKind::StaleGeneration {
                        found: 1,
                        expected: 2,
                    },
                ..
            },
        ) => assert!(e.to_string().contains("object 5"), "{e}"),
        other => panic!("a rolled-back slot was not refused: {other:?}"),
    }
    // The same through the vectored read a fault uses.
    let mut out = vec![0; 6000];
    let mut reads = [SlotRead {
        slot,
        key: 5,
        out: &mut out,
    }];
    assert!(matches!(
        f.read_many(&mut reads)[0],
        Err(SwapError::Corrupt {
            kind: CorruptKind::StaleGeneration { .. },
            ..
        })
    ));
    // An object written once has one generation: its old copy is its current one.
    assert_eq!(read_back(&f, other, 6).unwrap(), object(6, 3000));
    // Compaction refuses to carry a stale slot over.
    f.free(other).unwrap();
    assert!(matches!(
        f.compact(),
        Err(SwapError::Corrupt {
            kind: CorruptKind::StaleGeneration { .. },
            ..
        })
    ));
}

#[test]
fn another_runs_file_is_refused_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let mine = SwapFile::create(dir.path(), "app.swap").unwrap();
    let slot = {
        let mut mine = mine;
        let slot = mine.write(9, &object(9, 5000), None).unwrap();
        assert_eq!(mine.owner(), RunIdentity::current());
        (mine, slot)
    };
    let (mine, slot) = slot;
    // Another run saves the same object in a file of its own, which is then written over
    // ours in place (a creation at our name would replace our file: it is made new).
    let other_run = RunIdentity::fresh();
    let mut theirs = SwapFile::create_owned(dir.path(), "other.swap", None, other_run).unwrap();
    assert_eq!(theirs.write(9, &object(90, 5000), None).unwrap(), slot);
    let their_bytes = std::fs::read(theirs.path()).unwrap();
    std::os::unix::fs::FileExt::write_all_at(
        &OpenOptions::new().write(true).open(mine.path()).unwrap(),
        &their_bytes,
        0,
    )
    .unwrap();
    match read_back(&mine, slot, 9) {
        Err(e @ SwapError::NotOurs { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("another run"), "{msg}");
            assert!(msg.contains(&other_run.id_hex()), "{msg}");
        }
        other => panic!("another run's checkpoint was read: {other:?}"),
    }
    // Their own file reads fine for them.
    assert_eq!(read_back(&theirs, slot, 9).unwrap(), object(90, 5000));
}

#[test]
fn a_truncated_file_is_an_error_not_a_crash() {
    let (_dir, mut f) = new_file();
    let slot = f.write(9, &object(9, 4096), None).unwrap();
    let file = OpenOptions::new().write(true).open(f.path()).unwrap();
    file.set_len(FILE_HEADER_BYTES + 10).unwrap();
    let err = read_back(&f, slot, 9).unwrap_err();
    assert!(matches!(err, SwapError::Truncated { .. }), "{err}");
    assert!(err.to_string().contains("truncated"), "{err}");
    assert!(matches!(
        f.write(10, &object(10, 10), None),
        Err(SwapError::Truncated { .. })
    ));
}

#[test]
fn a_deleted_file_is_reported() {
    let (_dir, mut f) = new_file();
    let slot = f.write(9, &object(9, 100), None).unwrap();
    std::fs::remove_file(f.path()).unwrap();
    let err = read_back(&f, slot, 9).unwrap_err();
    assert!(matches!(err, SwapError::Deleted { .. }), "{err}");
    assert!(err.to_string().contains("deleted"), "{err}");
    assert!(matches!(
        f.write(1, &[1], None),
        Err(SwapError::Deleted { .. })
    ));
    assert!(matches!(f.compact(), Err(SwapError::Deleted { .. })));
}

#[test]
fn an_unwritable_place_fails_to_create() {
    let dir = tempfile::tempdir().unwrap();
    // Under a regular file: fails for everyone, root included.
    let plain = dir.path().join("plain");
    std::fs::write(&plain, b"x").unwrap();
    let err = SwapFile::create(&plain, "app.swap").unwrap_err();
    assert!(matches!(err, SwapError::Folder(_)), "{err}");
    assert!(err.to_string().contains("plain"), "{err}");

    // A read-only directory: root bypasses permissions, so only check as another user.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        use std::os::unix::fs::PermissionsExt;
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o500)).unwrap();
        let err = SwapFile::create(&ro, "app.swap").unwrap_err();
        assert!(matches!(err, SwapError::Io { .. }), "{err}");
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
}

#[test]
fn names_must_be_plain() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["", "a/b", "..", "/abs"] {
        assert!(
            matches!(
                SwapFile::create(dir.path(), bad),
                Err(SwapError::BadName { .. })
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn the_size_limit_is_an_error_and_space_can_be_reused_after() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 100 * 1024;
    let mut f = SwapFile::with_limit(dir.path(), "small.swap", limit).unwrap();
    let mut slots = Vec::new();
    let err = loop {
        let key = slots.len() as u64;
        match f.write(key, &object(key, 4000), None) {
            Ok(slot) => slots.push((key, slot)),
            Err(e) => break e,
        }
        assert!(slots.len() < 1000, "the limit was never reached");
    };
    assert!(
        matches!(err, SwapError::LimitReached { limit: 102_400, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("limit"), "{err}");
    assert!(f.file_bytes() <= limit);
    let per_slot = SLOT_HEADER_BYTES + layout::capacity_for(4000);
    assert_eq!(
        slots.len() as u64,
        (limit - FILE_HEADER_BYTES) / per_slot,
        "as many as fit"
    );
    for &(key, slot) in &slots {
        assert_eq!(read_back(&f, slot, key).unwrap(), object(key, 4000));
    }
    let (key, slot) = slots[3];
    f.free(slot).unwrap();
    let again = f.write(key, &object(key, 4000), None).unwrap();
    assert_eq!(again, slot);
    assert!(SwapFile::with_limit(dir.path(), "tiny.swap", 10).is_err());
}

/// Whether this process maps any file whose path starts with `path`.
fn mapped(path: &Path) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let path = path.to_str().unwrap();
    maps.lines().any(|l| l.contains(path))
}

/// How many pages of `[from, to)` of `path` are in the page cache
/// ([`marvin_runtime::memfd::cached_pages`]: it looks without reading anything in).
fn cached_pages(path: &Path, from: u64, to: u64) -> usize {
    let file = File::open(path).unwrap();
    marvin_runtime::memfd::cached_pages(&file, from, to).expect("mincore")
}

#[test]
fn the_file_is_never_mapped_and_leaves_the_page_cache_once_synced() {
    let (dir, mut f) = new_file();
    let mut slots = Vec::new();
    for key in 0..300u64 {
        slots.push((key, f.write(key, &object(key, 4076), None).unwrap()));
    }
    for &(_, slot) in slots.iter().step_by(2) {
        f.free(slot).unwrap();
    }
    let report = f.compact_if_needed(0.25).unwrap().expect("half is dead");
    // Neither the file nor its compacted copy was ever mapped: nothing of them counts
    // as this process's resident memory.
    assert!(!mapped(dir.path()), "the swap directory is mapped");
    f.write(1000, &object(1000, 4076), None).unwrap();
    let (_, new) = report.remap[0];
    assert_eq!(read_back(&f, new, 1).unwrap(), object(1, 4076));
    assert!(!mapped(dir.path()));

    // The measure sees cached pages: the checkpoint just written is in the page cache.
    let end = FILE_HEADER_BYTES + f.used_bytes();
    assert!(
        cached_pages(f.path(), 0, end) >= 1,
        "a checkpoint just written is not in the page cache"
    );

    f.sync_and_release().unwrap();
    if marvin_runtime::memfd::on_tmpfs(dir.path()) {
        eprintln!("skipping the page-cache check: the swap directory is on tmpfs");
        return;
    }
    // The used region (room reserved past it was never written).
    assert_eq!(
        cached_pages(f.path(), 0, end),
        0,
        "pages of synced checkpoints are still in the page cache"
    );
    // And they are all still there.
    for (key, old) in slots.iter().skip(1).step_by(2) {
        let slot = report.new_slot(*old).unwrap();
        assert_eq!(read_back(&f, slot, *key).unwrap(), object(*key, 4076));
    }
}

#[test]
fn compaction_copies_slots_larger_than_a_chunk() {
    let (_dir, mut f) = new_file();
    let big = COMPACT_CHUNK + 12_345;
    let keys = [(1u64, 100usize), (2, big), (3, 4076), (4, big), (5, 17)];
    let mut slots = Vec::new();
    for &(key, len) in &keys {
        let dead = f.write(key + 100, &object(key + 100, len), None).unwrap();
        slots.push((key, len, f.write(key, &object(key, len), None).unwrap()));
        f.free(dead).unwrap();
    }
    let report = f.compact_if_needed(0.25).unwrap().expect("half is dead");
    for (key, len, old) in slots {
        let new = report.new_slot(old).unwrap();
        assert_eq!(read_back(&f, new, key).unwrap(), object(key, len), "{key}");
    }
}

#[test]
fn an_index_slot_is_packed_and_generations_skip_zero() {
    // Offset key and slot: 28 bytes in the B-tree's arrays (8 + 20), not 40.
    assert_eq!(std::mem::size_of::<SlotInfo>(), 20);
    assert_eq!(std::mem::align_of::<SlotInfo>(), 4);
    assert_eq!(
        SwapFile::index_bytes_per_checkpoint(),
        (8 + 20 + 2 * 16) * 3 / 2
    );
    let g = |n| NonZeroU32::new(n).unwrap();
    assert_eq!(next_generation(g(1)), g(2));
    assert_eq!(next_generation(g(u32::MAX)), g(1), "0 is a free slot's");
}

#[test]
fn the_packed_index_round_trips_rewrites_and_compaction() {
    let (_dir, mut f) = new_file();
    let mut live: Vec<(u64, SlotId, usize)> = Vec::new();
    for key in 0..300u64 {
        let len = 100 + (key as usize * 37) % 5000;
        live.push((key, f.write(key, &object(key, len), None).unwrap(), len));
    }
    // Rewrite some in place three times (generation 4), free every other one.
    for (key, slot, len) in live.iter_mut() {
        if *key % 2 == 0 {
            f.free(*slot).unwrap();
            *len = 0;
            continue;
        }
        for _ in 0..3 {
            *slot = f.write(*key, &object(*key, *len), Some(*slot)).unwrap();
        }
        assert_eq!(f.generation(*slot), Some(4), "object {key}");
    }
    let before = f.index_bytes();
    let report = f.compact().unwrap();
    assert!(f.index_bytes() < before, "the free slots left the index");
    assert_eq!(f.live_slots(), 150);
    for (key, old, len) in live.iter_mut().filter(|l| l.2 > 0) {
        let new = report.new_slot(*old).expect("remapped");
        // Owner, length and generation came through the compaction.
        assert_eq!(f.generation(new), Some(4), "object {key}");
        assert_eq!(f.payload_len(new), Some(*len));
        assert_eq!(read_back(&f, new, *key).unwrap(), object(*key, *len));
        // And the slot is still this object's: another key is refused.
        assert!(f.write(*key + 1, &object(*key, *len), Some(new)).is_err());
        let again = f.write(*key, &object(*key, *len), Some(new)).unwrap();
        assert_eq!(f.generation(again), Some(5));
        *old = again;
    }
}

#[test]
fn a_free_writes_nothing_to_the_file_and_its_slot_reads_as_no_checkpoint() {
    let (_dir, mut f) = new_file();
    let a = f.write(1, &object(1, 1000), None).unwrap();
    let b = f.write(2, &object(2, 1000), None).unwrap();
    let c = f.write(3, &object(3, 1000), None).unwrap();
    let before = std::fs::read(f.path()).unwrap();
    f.free(b).unwrap();
    assert_eq!(
        std::fs::read(f.path()).unwrap(),
        before,
        "a free touches only the index"
    );
    // The old header is still on disk, but the index says the slot is free.
    let mut out = vec![0; 1000];
    assert!(matches!(
        f.read(b, 2, &mut out),
        Err(SwapError::NoSuchSlot { .. })
    ));
    // Reused by another object: its header replaces the old one, and the old object's
    // key no longer reads there.
    let d = f.write(4, &object(4, 1000), None).unwrap();
    assert_eq!(d, b, "the free slot is reused");
    assert_eq!(read_back(&f, d, 4).unwrap(), object(4, 1000));
    assert!(f.read(d, 2, &mut out).is_err(), "the freed object is gone");
    for (slot, key) in [(a, 1), (c, 3)] {
        assert_eq!(read_back(&f, slot, key).unwrap(), object(key, 1000));
    }
}

#[test]
fn a_write_back_leaves_no_page_of_the_file_cached_and_every_checkpoint_readable() {
    let (dir, mut f) = new_file();
    let mut slots = Vec::new();
    for key in 0..64u64 {
        slots.push((key, f.write(key, &object(key, 4076), None).unwrap()));
    }
    let end = FILE_HEADER_BYTES + f.used_bytes();
    let tmpfs = marvin_runtime::memfd::on_tmpfs(dir.path());
    if !tmpfs {
        // Just written: dirty in the page cache, which a drop alone cannot take.
        assert!(cached_pages(f.path(), 0, end) > 0, "the writes are cached");
    }
    f.sync_handle().unwrap().write_back_and_release().unwrap();
    if tmpfs {
        eprintln!("skipping the page-cache check: the swap directory is on tmpfs");
    } else {
        assert_eq!(
            cached_pages(f.path(), 0, end),
            0,
            "written back and dropped: no page of the file is left in the cache"
        );
    }
    for &(key, slot) in &slots {
        assert_eq!(read_back(&f, slot, key).unwrap(), object(key, 4076));
    }
    std::fs::remove_file(f.path()).unwrap();
    assert!(matches!(f.sync_handle(), Err(SwapError::Deleted { .. })));
}

#[test]
fn a_sync_handle_syncs_and_releases_the_file_it_was_taken_from() {
    let (dir, mut f) = new_file();
    let mut slots = Vec::new();
    for key in 0..64u64 {
        slots.push((key, f.write(key, &object(key, 4076), None).unwrap()));
    }
    let handle = f.sync_handle().unwrap();
    // The file is free to change while the handle waits for the disk.
    slots.push((64, f.write(64, &object(64, 4076), None).unwrap()));
    handle.sync_and_release().unwrap();
    for &(key, slot) in &slots {
        assert_eq!(read_back(&f, slot, key).unwrap(), object(key, 4076));
    }
    f.sync_handle().unwrap().sync_and_release().unwrap();
    if marvin_runtime::memfd::on_tmpfs(dir.path()) {
        eprintln!("skipping the page-cache check: the swap directory is on tmpfs");
    } else {
        let end = FILE_HEADER_BYTES + f.used_bytes();
        assert_eq!(
            cached_pages(f.path(), 0, end),
            0,
            "synced checkpoints left the page cache"
        );
    }
    std::fs::remove_file(f.path()).unwrap();
    assert!(matches!(f.sync_handle(), Err(SwapError::Deleted { .. })));
}

/// A file holding the checkpoints of objects `0..count`, `len` bytes each, synced and
/// dropped from the page cache: its slots by key, and the end of its used bytes.
fn synced_file(count: u64, len: usize) -> (tempfile::TempDir, SwapFile, Vec<(u64, SlotId)>, u64) {
    let (dir, mut f) = new_file();
    let slots = (0..count)
        .map(|key| (key, f.write(key, &object(key, len), None).unwrap()))
        .collect();
    f.sync_and_release().unwrap();
    let end = FILE_HEADER_BYTES + f.used_bytes();
    (dir, f, slots, end)
}

#[test]
fn a_compaction_reads_the_old_file_in_chunks_and_nothing_ahead_of_them() {
    // Small checkpoints, a page or so each: a read per slot would be a disk request each.
    let len = 3000;
    let (dir, mut f, slots, end) = synced_file(2000, len);
    let mut source = SourceWindow::default();
    // The copy's pattern: each live slot's header, then its payload, in file order.
    for &(key, slot) in &slots {
        let header = f
            .decode_header(
                key,
                slot,
                source
                    .get(&f, slot.offset(), SLOT_HEADER_BYTES as usize)
                    .unwrap(),
            )
            .unwrap();
        assert_eq!(header.key, key);
        let payload = source
            .get(&f, slot.offset() + SLOT_HEADER_BYTES, len)
            .unwrap();
        assert_eq!(payload, &object(key, len)[..]);
        if source.reads == 1 && !marvin_runtime::memfd::on_tmpfs(dir.path()) {
            // Within the first chunk: what is cached is what was read, no read-ahead.
            let read = (FILE_HEADER_BYTES as usize).max(COMPACT_CHUNK) as u64;
            let cached = cached_pages(f.path(), 0, end);
            assert!(
                cached as u64 <= read.div_ceil(4096) + 1,
                "{cached} pages cached after a read of {read} bytes: the kernel read ahead"
            );
        }
    }
    let chunks = (end - slots[0].1.offset()).div_ceil(COMPACT_CHUNK as u64) as usize;
    assert!(
        source.reads <= chunks + 1,
        "{} reads for {chunks} chunks of the file",
        source.reads
    );
    assert!(
        source.reads >= chunks,
        "{} reads for {chunks} chunks",
        source.reads
    );
    // And a compaction that uses it carries every checkpoint over.
    for &(_, slot) in slots.iter().step_by(2) {
        f.free(slot).unwrap();
    }
    let report = f.compact_if_needed(0.25).unwrap().expect("half is dead");
    for &(key, old) in slots.iter().skip(1).step_by(2) {
        let slot = report.new_slot(old).unwrap();
        assert_eq!(read_back(&f, slot, key).unwrap(), object(key, len));
    }
}

#[test]
fn a_fault_reads_its_checkpoint_and_nothing_ahead_of_it() {
    // About 15 pages each: the kernel's first read-ahead of a read that size is four
    // times the read.
    let len = 60_000;
    let (dir, f, slots, end) = synced_file(200, len);
    if marvin_runtime::memfd::on_tmpfs(dir.path()) {
        eprintln!("skipping the page-cache check: the swap directory is on tmpfs");
        return;
    }
    assert_eq!(cached_pages(f.path(), 0, end), 0, "synced and dropped");
    // A fault's read through the file's own descriptor, as `AppSwap` makes it: the file
    // header (checked before every read) and its checkpoint's pages (slot header and
    // payload), and no more: at most a large folio's few pages of slack either side.
    let (key, slot) = slots[10];
    assert_eq!(read_back(&f, slot, key).unwrap(), object(key, len));
    assert!(FILE_HEADER_BYTES <= slots[0].1.offset());
    let cached = cached_pages(f.path(), slots[0].1.offset(), end);
    let own = (len as u64 + SLOT_HEADER_BYTES).div_ceil(4096) as usize + 1;
    assert!(
        (own - 1..=own + 8).contains(&cached),
        "{cached} pages cached after reading one {len}-byte checkpoint ({own} pages): the \
         kernel read ahead"
    );
    // A prefetch still reads what it names.
    let (from, to) = (slots[100].1.offset(), slots[150].1.offset());
    assert!(f.prefetch(from, to) > 0);
    let wanted = (to - from).div_ceil(4096) as usize;
    let mut prefetched = 0;
    for _ in 0..200 {
        prefetched = cached_pages(f.path(), from, to);
        if prefetched + 1 >= wanted {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        prefetched + 1 >= wanted,
        "a prefetch of {wanted} pages left {prefetched} cached"
    );
}

#[test]
fn the_sequential_reader_reads_what_was_saved_and_refuses_what_any_read_refuses() {
    let (dir, mut f, slots, _) = synced_file(300, 5000);
    let reader = f.sequential_reader().expect("/proc/self/fd");
    let read_all = |f: &SwapFile, reader: &SequentialReader, slots: &[(u64, SlotId)]| {
        let mut outs = vec![vec![0u8; 5000]; slots.len()];
        let mut reads: Vec<SlotRead<'_>> = slots
            .iter()
            .zip(outs.iter_mut())
            .map(|(&(key, slot), out)| SlotRead { slot, key, out })
            .collect();
        let results = f.read_many_sequential(reader, &mut reads);
        drop(reads);
        (results, outs)
    };
    let (results, outs) = read_all(&f, &reader, &slots);
    for ((key, _), (result, out)) in slots.iter().zip(results.into_iter().zip(&outs)) {
        result.unwrap();
        assert_eq!(out, &object(*key, 5000), "object {key}");
    }
    // A flipped payload byte fails its object alone.
    damage(&f, slots[7].1.offset() + SLOT_HEADER_BYTES + 10, &[0xEE]);
    let (results, _) = read_all(&f, &reader, &slots);
    assert!(matches!(
        results[7],
        Err(SwapError::Corrupt {
            key: 7,
            kind: CorruptKind::BadPayloadChecksum { .. },
            ..
        })
    ));
    assert_eq!(results.iter().filter(|r| r.is_err()).count(), 1);
    // A compaction replaces the file: the reader, a descriptor of the old one, is not
    // read; the reads go to the file as it is now.
    f.free(slots[7].1).unwrap();
    for &(_, slot) in slots.iter().skip(100).take(100) {
        f.free(slot).unwrap();
    }
    let report = f.compact().unwrap();
    let moved: Vec<(u64, SlotId)> = slots
        .iter()
        .filter_map(|&(key, slot)| Some((key, report.new_slot(slot)?)))
        .collect();
    assert!(
        slots
            .iter()
            .any(|&(_, s)| report.new_slot(s).is_some_and(|n| n != s)),
        "slots moved"
    );
    let (results, outs) = read_all(&f, &reader, &moved);
    for ((key, _), (result, out)) in moved.iter().zip(results.into_iter().zip(&outs)) {
        result.unwrap();
        assert_eq!(out, &object(*key, 5000), "object {key}");
    }
    drop(dir);
}

#[test]
fn a_dropped_range_leaves_the_page_cache_and_the_rest_stays() {
    let (dir, f, slots, end) = synced_file(100, 20_000);
    if marvin_runtime::memfd::on_tmpfs(dir.path()) {
        eprintln!("skipping the page-cache check: the swap directory is on tmpfs");
        return;
    }
    for &(key, slot) in &slots {
        assert_eq!(read_back(&f, slot, key).unwrap(), object(key, 20_000));
    }
    let all = cached_pages(f.path(), 0, end);
    assert!(
        all as u64 >= (end - 4096) / 4096,
        "{all} pages cached after reading all"
    );
    let (from, to) = (512 << 10, 1536 << 10);
    f.drop_range(from, to);
    assert_eq!(cached_pages(f.path(), from, to), 0);
    assert!(cached_pages(f.path(), to, end) as u64 >= (end - to) / 4096 - 1);
}
