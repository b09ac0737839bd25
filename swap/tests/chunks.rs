//! Cold chunks of small objects: random object graphs (fixed seeds) survive packing,
//! saving, reclaiming, collections, restores and compaction with the same bytes and
//! references; a collection with chunks reclaimed faults none of them in; a reference
//! stored into a member after packing keeps its target alive through the bookmarks; a
//! damaged chunk checkpoint is an error naming the chunk, never wrong data; writers
//! racing the saver and the reclaimer never lose a write.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::Fixture;
use marvin_runtime::ChunkFigures;
use marvin_runtime::ObjKind;
use marvin_runtime::{AccessKind, Barriers};
use marvin_runtime::{Handle, LARGE_OBJECT_BYTES};
use marvin_swap::chunk_cold_objects;
use marvin_swap::ChunkConfig;
use marvin_swap::PolicyConfig;

fn chunk_config() -> ChunkConfig {
    ChunkConfig {
        enabled: true,
        chunk_bytes: 8192,
        cold_rounds: 4,
        exclude_launch_set: true,
        compact_dead_share: 0.3,
    }
}

fn fixture() -> Fixture {
    Fixture::with(
        PolicyConfig {
            chunks: chunk_config(),
            ..PolicyConfig::default()
        },
        true,
    )
}

/// What a test expects of one object: its shape and every payload word or byte.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Model {
    kind: ObjKind,
    nrefs: usize,
    /// Payload words (instances, int and ref arrays) or bytes (byte arrays, one per word).
    payload: Vec<u64>,
}

impl Model {
    fn refs(&self) -> &[u64] {
        match self.kind {
            ObjKind::Instance => &self.payload[..self.nrefs],
            ObjKind::RefArray => &self.payload,
            _ => &[],
        }
    }
}

/// A random graph of small objects: instances with reference and integer slots, int,
/// byte and reference arrays, with references to random objects of the graph.
fn make_graph(f: &Fixture, rng: &mut StdRng, n: usize) -> BTreeMap<u64, Model> {
    let mut handles: Vec<Handle> = Vec::new();
    let mut shapes = Vec::new();
    for _ in 0..n {
        let (kind, len, nrefs) = match rng.gen_range(0..4) {
            0 => {
                let len = rng.gen_range(1..12u32);
                (ObjKind::Instance, len, rng.gen_range(0..=len) as u16)
            }
            1 => (ObjKind::IntArray, rng.gen_range(1..40u32), 0),
            2 => (ObjKind::ByteArray, rng.gen_range(1..300u32), 0),
            _ => (ObjKind::RefArray, rng.gen_range(1..10u32), 0),
        };
        let h = f.heap.alloc(kind, 7, len, nrefs).unwrap();
        handles.push(h);
        shapes.push((kind, len, nrefs));
    }
    let mut model = BTreeMap::new();
    for (i, &h) in handles.iter().enumerate() {
        let (kind, len, nrefs) = shapes[i];
        let nrefs = match kind {
            ObjKind::Instance => nrefs as usize,
            ObjKind::RefArray => len as usize,
            _ => 0,
        };
        let payload: Vec<u64> = (0..len as usize)
            .map(|w| {
                if w < nrefs {
                    if rng.gen_bool(0.8) {
                        handles[rng.gen_range(0..handles.len())].value()
                    } else {
                        0
                    }
                } else if kind == ObjKind::ByteArray {
                    rng.gen::<u8>() as u64
                } else {
                    rng.gen()
                }
            })
            .collect();
        write(f, h, kind, &payload);
        model.insert(
            h.value(),
            Model {
                kind,
                nrefs,
                payload,
            },
        );
    }
    model
}

/// Writes `payload` into `h` through the barrier (references with `store_ref`).
fn write(f: &Fixture, h: Handle, kind: ObjKind, payload: &[u64]) {
    let a = f.heap.access::<Barriers>(h, AccessKind::Write).unwrap();
    let obj = a.obj();
    if kind == ObjKind::ByteArray {
        for (b, v) in obj.bytes().iter().zip(payload) {
            b.store(*v as u8, Relaxed);
        }
        return;
    }
    let nrefs = obj.ref_words().len();
    for (w, v) in payload.iter().enumerate() {
        if w < nrefs {
            a.store_ref(w, *v);
        } else {
            obj.words()[w].store(*v, Relaxed);
        }
    }
}

/// Reads `h` through the barrier as a model.
fn read(f: &Fixture, h: u64) -> Model {
    let h = Handle::from_value(h).unwrap();
    let a = f.heap.access::<Barriers>(h, AccessKind::Read).unwrap();
    let obj = a.obj();
    let payload = if obj.kind() == ObjKind::ByteArray {
        obj.bytes().iter().map(|b| b.load(Relaxed) as u64).collect()
    } else {
        obj.words().iter().map(|w| w.load(Relaxed)).collect()
    };
    Model {
        kind: obj.kind(),
        nrefs: obj.ref_words().len(),
        payload,
    }
}

/// The handles reachable from `roots` in the model.
fn reachable(model: &BTreeMap<u64, Model>, roots: &[u64]) -> BTreeSet<u64> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<u64> = roots.to_vec();
    while let Some(v) = stack.pop() {
        if v == 0 || !seen.insert(v) {
            continue;
        }
        stack.extend(model[&v].refs().iter().copied());
    }
    seen
}

fn age(f: &Fixture) {
    for _ in 0..5 {
        // SAFETY: single-threaded test: no mutator runs.
        unsafe { marvin_gc::walk_working_set(&f.heap) };
    }
}

fn pack(f: &Fixture) -> marvin_swap::ChunkPassReport {
    // SAFETY: single-threaded test: no mutator runs.
    unsafe { chunk_cold_objects(&f.heap, &chunk_config()) }.unwrap()
}

fn in_chunk(f: &Fixture, h: u64) -> bool {
    let h = Handle::from_value(h).unwrap();
    marvin_runtime::is_chunk_entry(f.heap.table().entry(h).load(Relaxed))
}

/// Dead member bytes of every chunk.
fn dead(f: &Fixture) -> u64 {
    f.heap.chunks().all().iter().map(|c| c.dead_bytes()).sum()
}

fn figures(f: &Fixture) -> ChunkFigures {
    f.heap.chunks().figures(&f.heap)
}

fn chunk_faults(f: &Fixture) -> u64 {
    f.heap.chunks().counters.faults.load(Relaxed)
}

/// Saves and reclaims every chunk (aging them cold first); returns how many went out.
fn save_and_reclaim(f: &Fixture) -> u64 {
    age(f);
    f.save_all();
    f.reclaim_all().objects
}

fn verify(f: &Fixture, model: &BTreeMap<u64, Model>, live: &BTreeSet<u64>) {
    for h in live {
        assert_eq!(read(f, *h), model[h], "object {h}");
    }
}

/// One seed's whole life of a graph in chunks.
fn graph_life(seed: u64) {
    let f = fixture();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut model = make_graph(&f, &mut rng, 400);
    let all: Vec<u64> = model.keys().copied().collect();
    let mut roots: Vec<u64> = all.iter().copied().filter(|_| rng.gen_bool(0.3)).collect();
    age(&f);

    // Packing moves every small, cold object into chunks.
    let packed = pack(&f);
    assert!(packed.packed.chunks >= 2, "seed {seed}: {packed:?}");
    // All but a remainder too small for a chunk object of its own.
    let chunked: BTreeSet<u64> = all.iter().copied().filter(|&h| in_chunk(&f, h)).collect();
    assert_eq!(chunked.len() as u64, packed.packed.objects);
    let left: usize = all
        .iter()
        .filter(|h| !chunked.contains(h))
        .map(|h| {
            16 + model[h].payload.len()
                * if model[h].kind == ObjKind::ByteArray {
                    1
                } else {
                    8
                }
        })
        .sum();
    assert!(
        left < LARGE_OBJECT_BYTES,
        "seed {seed}: {left} bytes left out"
    );
    verify(&f, &model, &all.iter().copied().collect());

    // Saved and reclaimed as units: every small-object byte goes out.
    let chunks = figures(&f).chunks;
    assert_eq!(save_and_reclaim(&f), chunks, "seed {seed}");
    let fig = figures(&f);
    assert_eq!(
        fig.reclaimed_bytes, fig.member_bytes,
        "seed {seed}: {fig:?}"
    );
    assert!(fig.reclaimed_bytes >= 400 * 16);

    // A collection with every chunk out faults none in and frees the unreachable.
    let live = reachable(&model, &roots);
    // SAFETY: single-threaded test: no mutator runs.
    let r = unsafe { marvin_gc::collect(&f.heap, &roots) };
    assert_eq!(f.gc_faults(), 0, "seed {seed}");
    assert_eq!(f.faults(), 0, "seed {seed}");
    assert_eq!(chunk_faults(&f), 0, "seed {seed}");
    assert_eq!(r.freed_objects, (400 - live.len()) as u64, "seed {seed}");
    let fig = figures(&f);
    assert_eq!(
        fig.members,
        live.intersection(&chunked).count() as u64,
        "seed {seed}"
    );
    assert_eq!(fig.reclaimed_bytes, fig.member_bytes, "seed {seed}");
    model.retain(|h, _| live.contains(h));

    // Restored on access, byte for byte, references included.
    verify(&f, &model, &live);
    assert!(chunk_faults(&f) > 0);

    // Writes after restore (data and references), saved, reclaimed, collected again.
    let keys: Vec<u64> = model.keys().copied().collect();
    let chosen: Vec<u64> = keys.iter().copied().filter(|_| rng.gen_bool(0.3)).collect();
    for h in chosen {
        let m = model.get_mut(&h).unwrap();
        for (w, v) in m.payload.iter_mut().enumerate() {
            *v = if w < m.nrefs {
                keys[rng.gen_range(0..keys.len())]
            } else if m.kind == ObjKind::ByteArray {
                rng.gen::<u8>() as u64
            } else {
                rng.gen()
            };
        }
        let (kind, payload) = (m.kind, m.payload.clone());
        write(&f, Handle::from_value(h).unwrap(), kind, &payload);
    }
    save_and_reclaim(&f);
    let faults = (f.faults(), chunk_faults(&f));
    // SAFETY: single-threaded test: no mutator runs.
    unsafe { marvin_gc::collect(&f.heap, &roots) };
    assert_eq!(f.gc_faults(), 0, "seed {seed}");
    assert_eq!((f.faults(), chunk_faults(&f)), faults, "seed {seed}");
    let live = reachable(&model, &roots);
    model.retain(|h, _| live.contains(h));
    verify(&f, &model, &live);

    // Most roots dropped: chunks with enough dead are rebuilt without it.
    roots.truncate(roots.len() / 4);
    let live = reachable(&model, &roots);
    // SAFETY: single-threaded test: no mutator runs.
    unsafe { marvin_gc::collect(&f.heap, &roots) };
    model.retain(|h, _| live.contains(h));
    age(&f);
    let before = figures(&f);
    let dead_before = dead(&f);
    let pass = pack(&f);
    let after = figures(&f);
    assert_eq!(
        after.members,
        live.intersection(&chunked).count() as u64,
        "seed {seed}"
    );
    if pass.compacted.chunks > 0 {
        assert!(dead(&f) < dead_before, "{before:?} {after:?}");
        assert!(
            after.chunk_bytes <= before.chunk_bytes,
            "{before:?} {after:?}"
        );
    }
    verify(&f, &model, &live);
    // And the rebuilt chunks go out and come back as well.
    save_and_reclaim(&f);
    // SAFETY: single-threaded test: no mutator runs.
    unsafe { marvin_gc::collect(&f.heap, &roots) };
    assert_eq!(f.gc_faults(), 0, "seed {seed}");
    verify(&f, &model, &live);
}

#[test]
fn random_graphs_survive_chunks_saved_reclaimed_collected_restored_and_compacted() {
    for seed in 1..=6 {
        graph_life(seed);
    }
}

#[test]
fn compaction_rebuilds_a_mostly_dead_chunk_and_frees_its_pages() {
    let f = fixture();
    let handles: Vec<Handle> = (0..200)
        .map(|i| {
            let h = f.heap.alloc(ObjKind::IntArray, 0, 6, 0).unwrap();
            write(&f, h, ObjKind::IntArray, &[i; 6]);
            h
        })
        .collect();
    age(&f);
    assert_eq!(pack(&f).packed.objects, 200);
    // 200 neighbouring blocks of 64 bytes: the whole pages they covered went back.
    let released = f.heap.chunks().counters.small_pages_released.load(Relaxed);
    assert!(released >= 2 * marvin_runtime::PAGE as u64, "{released}");
    let before = figures(&f);
    // Every third object stays: two thirds of each chunk die.
    let roots: Vec<u64> = handles.iter().step_by(3).map(|h| h.value()).collect();
    // SAFETY: single-threaded test: no mutator runs.
    unsafe { marvin_gc::collect(&f.heap, &roots) };
    let in_use = f.heap.in_use();
    let pass = pack(&f);
    assert!(pass.compacted.chunks > 0, "{pass:?}");
    let after = figures(&f);
    assert_eq!(after.members, roots.len() as u64);
    assert!(
        after.chunk_bytes < before.chunk_bytes,
        "{before:?} {after:?}"
    );
    assert!(f.heap.in_use() < in_use);
    assert_eq!(
        f.heap.chunks().counters.compactions.load(Relaxed),
        pass.compacted.chunks
    );
    for h in handles.iter().step_by(3) {
        let i = h.value() - handles[0].value();
        assert_eq!(read(&f, h.value()).payload, vec![i; 6]);
    }
}

#[test]
fn hot_objects_and_the_launch_set_stay_out_of_chunks() {
    let f = fixture();
    let cold: Vec<Handle> = (0..100)
        .map(|_| f.heap.alloc(ObjKind::IntArray, 0, 8, 0).unwrap())
        .collect();
    let read_once = f.heap.alloc(ObjKind::IntArray, 0, 8, 0).unwrap();
    let hot = f.heap.alloc(ObjKind::IntArray, 0, 8, 0).unwrap();
    age(&f);
    // Read two rounds ago: cold for a window of 1 but in the launch set.
    drop(
        f.heap
            .access::<Barriers>(read_once, AccessKind::Read)
            .unwrap(),
    );
    for _ in 0..2 {
        // SAFETY: single-threaded test: no mutator runs.
        unsafe { marvin_gc::walk_working_set(&f.heap) };
    }
    drop(f.heap.access::<Barriers>(hot, AccessKind::Read).unwrap());
    let config = ChunkConfig {
        cold_rounds: 1,
        ..chunk_config()
    };
    // SAFETY: single-threaded test: no mutator runs.
    let r = unsafe { chunk_cold_objects(&f.heap, &config) }.unwrap();
    assert_eq!(r.packed.objects, 100);
    let tagged = |h: Handle| marvin_runtime::is_chunk_entry(f.heap.table().entry(h).load(Relaxed));
    assert!(cold.iter().all(|&h| tagged(h)));
    assert!(!tagged(read_once) && !tagged(hot));
    // Without launch-set exclusion, the object read rounds ago goes in too.
    let config = ChunkConfig {
        cold_rounds: 1,
        exclude_launch_set: false,
        ..chunk_config()
    };
    let extra: Vec<Handle> = (0..150)
        .map(|_| f.heap.alloc(ObjKind::IntArray, 0, 8, 0).unwrap())
        .collect();
    // SAFETY: single-threaded test: no mutator runs.
    unsafe { marvin_gc::walk_working_set(&f.heap) };
    // SAFETY: single-threaded test: no mutator runs.
    unsafe { chunk_cold_objects(&f.heap, &config) }.unwrap();
    assert!(tagged(read_once) && extra.iter().all(|&h| tagged(h)));
}

#[test]
fn a_reference_stored_into_a_member_keeps_its_target_alive_while_the_chunk_is_out() {
    let f = fixture();
    let holders: Vec<Handle> = (0..100)
        .map(|_| f.heap.alloc(ObjKind::Instance, 1, 2, 1).unwrap())
        .collect();
    age(&f);
    assert_eq!(pack(&f).packed.objects, 100);
    // A plain object, reachable only through a member, stored after packing.
    let target = f.heap.alloc(ObjKind::IntArray, 0, 4, 0).unwrap();
    write(&f, target, ObjKind::IntArray, &[42, 43, 44, 45]);
    {
        let a = f
            .heap
            .access::<Barriers>(holders[7], AccessKind::Write)
            .unwrap();
        a.store_ref(0, target.value());
    }
    assert!(save_and_reclaim(&f) > 0);
    assert_eq!(figures(&f).reclaimed_bytes, figures(&f).member_bytes);
    // SAFETY: single-threaded test: no mutator runs.
    unsafe { marvin_gc::collect(&f.heap, &[holders[7].value()]) };
    assert_eq!(f.gc_faults(), 0);
    assert_eq!(chunk_faults(&f), 0);
    assert!(
        f.heap.table().is_live(target.value()),
        "the target was freed"
    );
    assert_eq!(read(&f, target.value()).payload, vec![42, 43, 44, 45]);
    assert_eq!(read(&f, holders[7].value()).payload[0], target.value());
}

#[test]
fn a_damaged_chunk_checkpoint_is_an_error_naming_the_chunk_never_wrong_data() {
    let f = fixture();
    let handles: Vec<Handle> = (0..300)
        .map(|i| {
            let h = f.heap.alloc(ObjKind::IntArray, 0, 8, 0).unwrap();
            write(&f, h, ObjKind::IntArray, &[i + 1; 8]);
            h
        })
        .collect();
    age(&f);
    pack(&f);
    assert!(save_and_reclaim(&f) > 0);
    let first = handles[0];
    let e = f.heap.table().entry(first).load(Relaxed);
    // SAFETY: a chunk entry of this heap; no collection runs.
    let chunk = unsafe { f.heap.member_of_entry(e) }.chunk();
    let stub = f.space().get(chunk).unwrap();
    let slot = stub.state.lock().slot().unwrap();
    let path = f.swap.file.lock().path().to_path_buf();
    let at = slot + marvin_swap::SLOT_HEADER_BYTES + 40;
    {
        use std::os::unix::fs::FileExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let mut b = [0u8; 1];
        file.read_exact_at(&mut b, at).unwrap();
        file.write_all_at(&[b[0] ^ 0x5a], at).unwrap();
    }
    let err = match f.heap.access::<Barriers>(first, AccessKind::Read) {
        Ok(_) => panic!("a damaged chunk checkpoint was handed to the app"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains(&format!("cold chunk {}", chunk.value())),
        "{err}"
    );
    assert!(err.contains(&format!("object {}", first.value())), "{err}");
    assert!(err.contains("checksum"), "{err}");
    // Objects of other chunks come back intact.
    let other = handles
        .iter()
        .rev()
        .find(|&&h| {
            let e = f.heap.table().entry(h).load(Relaxed);
            // SAFETY: as above.
            unsafe { f.heap.member_of_entry(e) }.chunk() != chunk
        })
        .copied()
        .expect("more than one chunk");
    let i = other.value() - handles[0].value();
    assert_eq!(read(&f, other.value()).payload, vec![i + 1; 8]);
}

#[test]
fn writers_into_a_chunk_never_lose_a_write_to_the_saver_or_the_reclaimer() {
    // Five chunks of 31 objects of 256 bytes (8 KiB chunks), one writer each.
    const THREADS: usize = 5;
    const PER_THREAD: usize = 31;
    const WORDS: usize = 30;
    /// Saver-and-reclaimer rounds that took at least one chunk while the writers ran.
    const RECLAIM_ROUNDS: u64 = 40;
    let f = Arc::new(fixture());
    let handles: Vec<Handle> = (0..THREADS * PER_THREAD)
        .map(|_| f.heap.alloc(ObjKind::IntArray, 0, WORDS as u32, 0).unwrap())
        .collect();
    age(&f);
    assert_eq!(pack(&f).packed.objects, handles.len() as u64);
    assert!(f.heap.chunks().len() >= 4);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = handles
        .chunks(PER_THREAD)
        .map(|mine| {
            let (f, mine, stop) = (f.clone(), mine.to_vec(), stop.clone());
            std::thread::spawn(move || {
                let mut round = 0u64;
                while !stop.load(Relaxed) {
                    round += 1;
                    for &h in &mine {
                        let a = f.heap.access::<Barriers>(h, AccessKind::Write).unwrap();
                        for w in a.obj().words() {
                            w.store(round, Relaxed);
                        }
                    }
                }
                (mine, round)
            })
        })
        .collect();
    // The saver and the reclaimer run meanwhile, as the heap task and the System would,
    // until they took chunks in enough rounds.
    let (mut rounds, mut reclaimed, mut tries) = (0, 0, 0u64);
    while rounds < RECLAIM_ROUNDS {
        tries += 1;
        assert!(
            tries < 1_000_000,
            "the reclaimer never found a saved, clean chunk"
        );
        f.save_all();
        // Every chunk marked cold (what a working-set round finds of an untouched
        // chunk), so the reclaimer may take any whose checkpoint is current.
        for c in f.heap.chunks().all() {
            f.space()
                .table
                .entry(c.stub().entry)
                .lock()
                .insert_flags(marvin_runtime::EntryFlags::COLD);
        }
        let r = f.reclaim_all().objects;
        reclaimed += r;
        rounds += (r > 0) as u64;
    }
    stop.store(true, Relaxed);
    let last: Vec<(Vec<Handle>, u64)> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    // Once more after the last writes, then every object read back.
    f.save_all();
    f.reclaim_all();
    for (mine, round) in last {
        for h in mine {
            assert_eq!(
                read(&f, h.value()).payload,
                vec![round; WORDS],
                "object {}",
                h.value()
            );
        }
    }
    assert!(chunk_faults(&f) > 0);
    println!("chunks reclaimed while writers ran: {reclaimed}");
}
