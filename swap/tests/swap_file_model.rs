//! Property tests of the swap file against a model: random sequences of writes, rewrites,
//! frees and compactions, after which every live object reads back exactly as last written;
//! and random damage to the file, after which reads return the right data or an error,
//! never wrong data and never a panic.

use std::collections::HashMap;
use std::io::{Seek, SeekFrom, Write};

use marvin_swap::{SlotId, SwapFile};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    /// Save object `key` (new, or again) with `len` bytes filled from `seed`.
    Write { key: u8, len: usize, seed: u8 },
    /// Drop object `key`'s checkpoint.
    Free { key: u8 },
    /// Compact when the dead fraction passes `threshold`.
    Compact { threshold: f64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..24, 0usize..6000, any::<u8>()).prop_map(|(key, len, seed)| Op::Write { key, len, seed }),
        2 => (0u8..24).prop_map(|key| Op::Free { key }),
        1 => prop_oneof![Just(0.0001), Just(0.25), Just(0.5)].prop_map(|threshold| Op::Compact { threshold }),
    ]
}

fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_add((i as u8).wrapping_mul(13)) ^ (i >> 7) as u8)
        .collect()
}

fn check_all(f: &SwapFile, model: &HashMap<u64, (SlotId, Vec<u8>)>) {
    let mut live = 0;
    for (&key, (slot, want)) in model {
        let mut got = vec![0; want.len()];
        f.read(*slot, key, &mut got)
            .unwrap_or_else(|e| panic!("object {key}: {e}"));
        assert_eq!(&got, want, "object {key}");
        live += want.len() as u64;
    }
    assert_eq!(f.live_bytes(), live);
    assert_eq!(f.live_slots(), model.len() as u64);
    assert!(f.used_bytes() + 64 <= f.file_bytes());
}

/// The least a slot last written with `previous` bytes holds (its capacity is that rounded
/// up to 16; a slot reused from the free list may hold more).
fn least_capacity(previous: &[u8]) -> usize {
    previous.len().div_ceil(16) * 16
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_file_agrees_with_a_map(ops in proptest::collection::vec(op(), 1..80)) {
        let dir = tempfile::tempdir().unwrap();
        let mut f = SwapFile::create(dir.path(), "model.swap").unwrap();
        let mut model: HashMap<u64, (SlotId, Vec<u8>)> = HashMap::new();
        for op in ops {
            match op {
                Op::Write { key, len, seed } => {
                    let key = key as u64;
                    let data = bytes(len, seed);
                    let existing = model.get(&key).map(|(slot, _)| *slot);
                    let slot = f.write(key, &data, existing).unwrap();
                    if let Some(old) = existing {
                        if data.len() <= least_capacity(&model[&key].1) {
                            prop_assert_eq!(slot, old, "a checkpoint that fits is rewritten in place");
                        }
                    }
                    model.insert(key, (slot, data));
                }
                Op::Free { key } => {
                    if let Some((slot, _)) = model.remove(&(key as u64)) {
                        f.free(slot).unwrap();
                    }
                }
                Op::Compact { threshold } => {
                    let was_over = f.dead_fraction() > threshold;
                    match f.compact_if_needed(threshold).unwrap() {
                        Some(report) => {
                            prop_assert!(was_over);
                            prop_assert_eq!(report.remap.len(), model.len());
                            for (slot, _) in model.values_mut() {
                                *slot = report.new_slot(*slot).expect("live slots are remapped");
                            }
                        }
                        None => prop_assert!(!was_over),
                    }
                }
            }
            check_all(&f, &model);
        }
    }

    #[test]
    fn damage_never_yields_wrong_data_or_a_panic(
        damage in proptest::collection::vec((0u64..200_000, any::<u8>()), 1..40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut f = SwapFile::create(dir.path(), "damaged.swap").unwrap();
        let objects: Vec<(u64, SlotId, Vec<u8>)> = (0..30u64)
            .map(|key| {
                let data = bytes(100 + key as usize * 150, key as u8);
                (key, f.write(key, &data, None).unwrap(), data)
            })
            .collect();
        let mut file = std::fs::OpenOptions::new().write(true).open(f.path()).unwrap();
        let len = f.file_bytes();
        for (at, byte) in damage {
            file.seek(SeekFrom::Start(at % len)).unwrap();
            file.write_all(&[byte]).unwrap();
        }
        for (key, slot, want) in &objects {
            let mut got = vec![0; want.len()];
            if f.read(*slot, *key, &mut got).is_ok() {
                prop_assert_eq!(&got, want);
            }
        }
        // Compaction either refuses (naming a damaged object) or carries the checks over.
        if let Ok(report) = f.compact() {
            for (key, slot, want) in &objects {
                let mut got = vec![0; want.len()];
                let new = report.new_slot(*slot).expect("remapped");
                if f.read(new, *key, &mut got).is_ok() {
                    prop_assert_eq!(&got, want);
                }
            }
        }
    }
}
