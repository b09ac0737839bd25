//! Tests of compressed checkpoints: every read path (one read, vectored, through the
//! sequential reader, after a compaction) gives back exactly the object's bytes, mixed
//! with checkpoints stored as they are, and a damaged or rolled-back compressed
//! checkpoint is an error, never wrong bytes.

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};

use super::layout::SLOT_HEADER_BYTES;
use super::*;

/// An object that compresses well (mostly zeros, a few words that name it).
fn sparse(key: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    v[..8].copy_from_slice(&key.to_le_bytes());
    let at = len - 8;
    v[at..].copy_from_slice(&(!key).to_le_bytes());
    v
}

/// An object that does not compress (xorshift bytes).
fn random(key: u64, len: usize) -> Vec<u8> {
    let mut x = key.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn object(key: u64) -> Vec<u8> {
    if key.is_multiple_of(3) {
        random(key, 4072)
    } else {
        sparse(key, 4072 + (key as usize % 5) * 16)
    }
}

fn new_file() -> (tempfile::TempDir, SwapFile) {
    let dir = tempfile::tempdir().unwrap();
    let f = SwapFile::create(dir.path(), "app.swap").unwrap();
    (dir, f)
}

fn damage(f: &SwapFile, at: u64, bytes: &[u8]) {
    let mut file = OpenOptions::new().write(true).open(f.path()).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(bytes).unwrap();
}

fn saved(f: &mut SwapFile, count: u64) -> Vec<(u64, SlotId)> {
    (0..count)
        .map(|key| {
            let slot = f
                .write_with(key, &object(key), None, Compression::Lz4)
                .unwrap();
            (key, slot)
        })
        .collect()
}

/// Reads `slots` with one vectored read (through `reader` when given).
fn read_all(
    f: &SwapFile,
    reader: Option<&SequentialReader>,
    slots: &[(u64, SlotId)],
) -> Vec<Result<Vec<u8>, SwapError>> {
    let mut outs: Vec<Vec<u8>> = slots
        .iter()
        .map(|&(k, _)| vec![0xA5; object(k).len()])
        .collect();
    let mut reads: Vec<SlotRead<'_>> = slots
        .iter()
        .zip(outs.iter_mut())
        .map(|(&(key, slot), out)| SlotRead { slot, key, out })
        .collect();
    let results = match reader {
        Some(reader) => f.read_many_sequential(reader, &mut reads),
        None => f.read_many(&mut reads),
    };
    drop(reads);
    results
        .into_iter()
        .zip(outs)
        .map(|(r, out)| r.map(|()| out))
        .collect()
}

#[test]
fn compressed_and_plain_checkpoints_read_back_exactly_on_every_path() {
    let (_dir, mut f) = new_file();
    let slots = saved(&mut f, 90);
    // Sparse objects are stored in far fewer bytes; random ones as they are.
    for &(key, slot) in &slots {
        let stored = f.payload_len(slot).unwrap();
        if key.is_multiple_of(3) {
            assert_eq!(stored, 4072, "object {key} is random: stored as it is");
        } else {
            assert!(stored < 200, "object {key} stored in {stored} bytes");
        }
    }
    let raw: u64 = slots.iter().map(|&(k, _)| object(k).len() as u64).sum();
    assert!(f.live_bytes() < raw / 2, "{} of {raw}", f.live_bytes());
    // One read at a time.
    for &(key, slot) in &slots {
        let mut out = vec![0xA5; object(key).len()];
        f.read(slot, key, &mut out).unwrap();
        assert_eq!(out, object(key), "object {key}");
    }
    // Vectored, through the file's descriptor and through the sequential reader, the
    // reads given in file order and in any other (a fault's object comes first).
    let reader = f.sequential_reader().expect("/proc/self/fd");
    let mut shuffled = slots.clone();
    shuffled.reverse();
    shuffled.swap(3, 40);
    for order in [&slots, &shuffled] {
        for via in [None, Some(&reader)] {
            for (result, &(key, _)) in read_all(&f, via, order).into_iter().zip(order) {
                assert_eq!(result.unwrap(), object(key), "object {key}");
            }
        }
    }
    // A compaction carries compressed slots over as they are.
    for &(_, slot) in slots.iter().filter(|(k, _)| !k.is_multiple_of(2)) {
        f.free(slot).unwrap();
    }
    let report = f.compact().unwrap();
    let kept: Vec<(u64, SlotId)> = slots
        .iter()
        .filter_map(|&(k, s)| Some((k, report.new_slot(s)?)))
        .collect();
    assert_eq!(kept.len(), 45);
    for (result, &(key, _)) in read_all(&f, None, &kept).into_iter().zip(&kept) {
        assert_eq!(result.unwrap(), object(key), "object {key}");
    }
}

#[test]
fn a_rewrite_switches_between_compressed_and_plain() {
    let (_dir, mut f) = new_file();
    let slot = f
        .write_with(1, &sparse(1, 8000), None, Compression::Lz4)
        .unwrap();
    // Random bytes of the same object: stored as they are (a new, larger slot).
    let slot = f
        .write_with(1, &random(1, 8000), Some(slot), Compression::Lz4)
        .unwrap();
    let mut out = vec![0; 8000];
    f.read(slot, 1, &mut out).unwrap();
    assert_eq!(out, random(1, 8000));
    // Compressible again: rewritten in place, compressed.
    let again = f
        .write_with(1, &sparse(1, 8000), Some(slot), Compression::Lz4)
        .unwrap();
    assert_eq!(again, slot);
    f.read(slot, 1, &mut out).unwrap();
    assert_eq!(out, sparse(1, 8000));
    // Asking for the wrong length is an error, not a partial object.
    let err = f.read(slot, 1, &mut [0; 7999]).unwrap_err();
    assert!(
        matches!(
            err,
            SwapError::Corrupt {
                kind: CorruptKind::LengthMismatch { .. },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_damaged_compressed_checkpoint_is_an_error_on_every_path() {
    let (_dir, mut f) = new_file();
    let slots = saved(&mut f, 12);
    let (key, slot) = slots[4];
    let stored = f.payload_len(slot).unwrap() as u64;
    assert!(stored < 200);
    // Every byte of the stored block, flipped in turn: the checksum catches it.
    for at in 0..stored {
        let start = slot.offset() + SLOT_HEADER_BYTES + at;
        let mut byte = [0u8];
        f.file.read_exact_at(&mut byte, start).unwrap();
        damage(&f, start, &[byte[0] ^ 0x40]);
        let mut out = vec![0; object(key).len()];
        assert!(
            matches!(
                f.read(slot, key, &mut out),
                Err(SwapError::Corrupt {
                    kind: CorruptKind::BadPayloadChecksum { .. },
                    ..
                })
            ),
            "flipping stored byte {at} went unnoticed"
        );
        let results = read_all(&f, None, &slots);
        assert!(matches!(
            results[4],
            Err(SwapError::Corrupt {
                kind: CorruptKind::BadPayloadChecksum { .. },
                ..
            })
        ));
        assert_eq!(results.iter().filter(|r| r.is_err()).count(), 1);
        damage(&f, start, &byte);
    }
    // The header's codec and decompressed length are under its checksum.
    for at in [32u64, 36] {
        damage(&f, slot.offset() + at, &[0x7f]);
        let results = read_all(&f, None, &slots);
        assert!(
            matches!(
                results[4],
                Err(SwapError::Corrupt {
                    kind: CorruptKind::BadHeaderChecksum { .. },
                    ..
                })
            ),
            "{:?}",
            results[4]
        );
    }
}

#[test]
fn a_rolled_back_compressed_checkpoint_is_refused() {
    let (dir, mut f) = new_file();
    let slot = f
        .write_with(5, &sparse(5, 6000), None, Compression::Lz4)
        .unwrap();
    f.flush().unwrap();
    let copy = std::fs::read(f.path()).unwrap();
    let mut second = sparse(5, 6000);
    second[3000] = 9;
    assert_eq!(
        f.write_with(5, &second, Some(slot), Compression::Lz4)
            .unwrap(),
        slot
    );
    std::fs::write(dir.path().join("app.swap"), &copy).unwrap();
    let mut out = vec![0; 6000];
    assert!(matches!(
        f.read(slot, 5, &mut out),
        Err(SwapError::Corrupt {
            kind: CorruptKind::StaleGeneration { .. },
            ..
        })
    ));
    let results = read_all_one(&f, slot, 6000);
    assert!(matches!(
        results,
        Err(SwapError::Corrupt {
            kind: CorruptKind::StaleGeneration { .. },
            ..
        })
    ));
}

fn read_all_one(f: &SwapFile, slot: SlotId, len: usize) -> Result<Vec<u8>, SwapError> {
    let mut out = vec![0; len];
    let mut reads = [SlotRead {
        slot,
        key: 5,
        out: &mut out,
    }];
    let r = f.read_many(&mut reads).pop().unwrap();
    r.map(|()| out)
}
