//! A concurrent stress of the swap mechanisms on one heap: mutator threads write random
//! words of stubbed arrays through the access barrier (and replace arrays, making
//! garbage) while a saver, a reclaimer, a collector, foreground/background flips with
//! eager restore, and a checker run at the same time. Every mutator keeps a shadow copy
//! of its arrays and checks each read against it; the checker, holding an entry the way
//! the reclaimer does, checks that a clean checkpoint is never stale. At the end every
//! array must equal its shadow: no lost update, no stale restore.
//!
//! Runs for about two seconds (`MARVIN_STRESS=1`: thirty), and on past that until every
//! event the test claims to exercise (a save, a fault, a collection, an eager restore, a
//! checked clean entry, a reclaim) has happened at least once: on a loaded machine the
//! threads get few time slices, and an object fault needs a reclaim to land between two
//! eager restores. A run that still misses one after [`EXERCISE_BOUND`] fails naming it.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Fixture, WORDS};
use marvin_runtime::EntryFlags;
use marvin_runtime::Handle;
use marvin_runtime::HeaderBits;
use marvin_runtime::{AccessKind, Barriers};
use marvin_swap::SlotId;
use marvin_swap::{reclaimer, restore, saver};
use parking_lot::{Mutex, RwLock};

const WRITERS: usize = 3;
const OBJECTS_PER_WRITER: usize = 12;

/// A small xorshift generator: reproducible streams without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What every thread shares.
struct Shared {
    f: Fixture,
    /// Mutators hold it shared between their safepoints; the collector and the
    /// foreground switch take it exclusively (stopping the world).
    world: RwLock<()>,
    /// Each mutator's arrays, published as the collector's roots.
    roots: Vec<Mutex<Vec<Handle>>>,
    stop: AtomicBool,
    violations: Mutex<Vec<String>>,
    checked_clean: AtomicU64,
    collections: AtomicU64,
    restores: AtomicU64,
    reclaimed: AtomicU64,
}

impl Shared {
    fn violation(&self, what: String) {
        let mut v = self.violations.lock();
        if v.len() < 20 {
            v.push(what);
        }
    }
}

fn run_for() -> Duration {
    if std::env::var_os("MARVIN_STRESS").is_some_and(|v| v == "1") {
        Duration::from_secs(30)
    } else {
        Duration::from_secs(2)
    }
}

/// How long the run may go on past [`run_for`] waiting for an event it has not seen yet.
const EXERCISE_BOUND: Duration = Duration::from_secs(120);

/// The events of the run that have not happened yet (empty once it exercised everything).
fn not_yet_exercised(s: &Shared) -> Vec<&'static str> {
    let seen = [
        (
            s.f.swap.counters.saved_objects.load(Relaxed) > 0,
            "no object was saved",
        ),
        (s.f.faults() > 0, "no object fault happened"),
        (s.collections.load(Relaxed) > 0, "no collection ran"),
        (s.restores.load(Relaxed) > 0, "no eager restore ran"),
        (
            s.checked_clean.load(Relaxed) > 0,
            "no clean entry was checked",
        ),
        (s.reclaimed.load(Relaxed) > 0, "nothing was reclaimed"),
    ];
    seen.iter()
        .filter(|(happened, _)| !happened)
        .map(|&(_, what)| what)
        .collect()
}

/// A fresh stubbed array filled from `seed`, with its shadow.
fn new_array(f: &Fixture, seed: u64) -> (Handle, Vec<u64>) {
    let h = f.ints(seed);
    // SAFETY: `h` is not yet published to any other thread.
    assert!(unsafe { f.heap.stub_object(h) }.unwrap());
    (h, common::expected(seed))
}

/// Runs one mutator until told to stop; returns its arrays and their shadows.
fn mutator(s: &Shared, id: usize) -> Vec<(Handle, Vec<u64>)> {
    let mut rng = Rng(0x1234_5678 + id as u64 * 0x9e37);
    let mut objs: Vec<(Handle, Vec<u64>)> = {
        let _w = s.world.read();
        (0..OBJECTS_PER_WRITER)
            .map(|i| new_array(&s.f, (id * 1000 + i) as u64))
            .collect()
    };
    *s.roots[id].lock() = objs.iter().map(|o| o.0).collect();
    let mut seed = (id as u64 + 1) << 32;
    while !s.stop.load(Relaxed) {
        let _w = s.world.read();
        for _ in 0..64 {
            let i = rng.below(objs.len() as u64) as usize;
            let (h, shadow) = &mut objs[i];
            match rng.below(100) {
                0..=59 => {
                    // A burst of writes in one access.
                    let a = s.f.heap.access::<Barriers>(*h, AccessKind::Write).unwrap();
                    for _ in 0..=rng.below(8) {
                        let w = rng.below(WORDS as u64) as usize;
                        let v = rng.next();
                        a.obj().words()[w].store(v, Relaxed);
                        shadow[w] = v;
                    }
                }
                60..=97 => {
                    let a = s.f.heap.access::<Barriers>(*h, AccessKind::Read).unwrap();
                    let words = a.obj().words();
                    let bad = (0..shadow.len()).find(|&w| words[w].load(Relaxed) != shadow[w]);
                    if let Some(w) = bad {
                        s.violation(format!(
                            "mutator {id}: object {} word {w} reads {:#x}, last written {:#x}",
                            h.value(),
                            words[w].load(Relaxed),
                            shadow[w]
                        ));
                    }
                }
                _ => {
                    // Replace the array: the old one becomes garbage.
                    seed += 1;
                    objs[i] = new_array(&s.f, seed);
                    *s.roots[id].lock() = objs.iter().map(|o| o.0).collect();
                }
            }
        }
    }
    objs
}

/// Checks, holding an entry exclusively as the reclaimer does, that an entry the
/// reclaimer could take (resident and clean) has a current checkpoint.
fn checker(s: &Shared) {
    let space = s.f.space();
    let mut buf = Vec::new();
    let mut disk = Vec::new();
    while !s.stop.load(Relaxed) {
        for stub in space.all() {
            let entry = space.table.entry(stub.entry);
            let Some(_g) = entry.try_lock_reclaimer() else {
                continue;
            };
            let flags = entry.flags();
            if !flags.contains(EntryFlags::RESIDENT | EntryFlags::CLEAN) {
                continue;
            }
            let Some(st) = stub.state.try_lock() else {
                continue;
            };
            if st.is_dead() {
                continue;
            }
            // SAFETY: resident, and our exclusive hold keeps every app thread, the
            // saver and the collector's freeing out until we let go.
            let obj = unsafe { stub.object() };
            if obj.header().bits().contains(HeaderBits::DIRTY) {
                s.violation(format!(
                    "object {} is CLEAN in the table but DIRTY ({flags:?})",
                    stub.handle.value()
                ));
            }
            let Some(slot) = st.slot() else {
                s.violation(format!(
                    "object {} is CLEAN without a checkpoint",
                    stub.handle.value()
                ));
                continue;
            };
            buf.clear();
            obj.copy_payload(&mut buf);
            disk.resize(buf.len(), 0);
            let read = s.f.swap.file.lock().read(
                SlotId::from_offset(slot),
                stub.handle.value(),
                &mut disk,
            );
            match read {
                Ok(()) if disk == buf => {
                    s.checked_clean.fetch_add(1, Relaxed);
                }
                Ok(()) => s.violation(format!(
                    "object {} is CLEAN but its checkpoint is stale",
                    stub.handle.value()
                )),
                Err(e) => s.violation(format!(
                    "object {}: {e} (flags {flags:?}, compactions {}, dead {}, in map {})",
                    stub.handle.value(),
                    s.f.swap.counters.compactions.load(Relaxed),
                    st.is_dead(),
                    space
                        .get(stub.handle)
                        .is_some_and(|x| std::ptr::eq(&*x, &*stub)),
                )),
            }
        }
        std::thread::yield_now();
    }
}

fn saver_loop(s: &Shared) {
    let mut rng = Rng(77);
    while !s.stop.load(Relaxed) {
        saver::save(&s.f.heap, &s.f.swap, Duration::MAX, rng.below(4) != 0);
        if let Err(e) = saver::compact_if_needed(&s.f.heap, &s.f.swap) {
            s.violation(format!("compaction: {e}"));
        }
    }
}

fn reclaimer_loop(s: &Shared) {
    let mut rng = Rng(99);
    while !s.stop.load(Relaxed) {
        let want = (1 + rng.below(16)) * 3 * 4096;
        let r = reclaimer::reclaim_from(&s.f.heap, want);
        s.reclaimed.fetch_add(r.objects, Relaxed);
    }
}

fn collector_loop(s: &Shared) {
    while !s.stop.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(15));
        let _w = s.world.write();
        let roots: Vec<u64> = s
            .roots
            .iter()
            .flat_map(|r| r.lock().iter().map(|h| h.value()).collect::<Vec<_>>())
            .collect();
        // SAFETY: every mutator is stopped (we hold the world exclusively) and `roots`
        // holds every array any of them uses.
        unsafe { marvin_gc::collect(&s.f.heap, &roots) };
        s.collections.fetch_add(1, Relaxed);
    }
}

/// Foreground with an eager restore (world stopped), then background again.
fn lifecycle_loop(s: &Shared) {
    let space = s.f.space();
    while !s.stop.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
        {
            let _w = s.world.write();
            space.table.set_foreground(true);
            let r = restore::restore_all(&s.f.heap, &s.f.swap);
            if !r.errors.is_empty() {
                s.violation(format!("eager restore: {:?}", r.errors));
            }
            s.restores.fetch_add(1, Relaxed);
            // In the foreground nothing may be reclaimed, even by a reclaimer that
            // started its scan before the switch.
            std::thread::sleep(Duration::from_millis(2));
            let out = space
                .all()
                .iter()
                .filter(|st| !space.table.entry(st.entry).is_resident())
                .count();
            if out > 0 {
                s.violation(format!("{out} objects reclaimed from the foreground app"));
            }
        }
        std::thread::sleep(Duration::from_millis(5));
        space.table.set_foreground(false);
    }
}

#[test]
fn mutators_saver_reclaimer_collector_and_restores_lose_no_update() {
    let s = Arc::new(Shared {
        f: Fixture::new(),
        world: RwLock::new(()),
        roots: (0..WRITERS).map(|_| Mutex::new(Vec::new())).collect(),
        stop: AtomicBool::new(false),
        violations: Mutex::new(Vec::new()),
        checked_clean: AtomicU64::new(0),
        collections: AtomicU64::new(0),
        restores: AtomicU64::new(0),
        reclaimed: AtomicU64::new(0),
    });
    let start = Instant::now();
    let (minimum, bound) = (run_for(), run_for() + EXERCISE_BOUND);
    let mut threads = Vec::new();
    let mut mutators = Vec::new();
    for id in 0..WRITERS {
        let s = s.clone();
        mutators.push(std::thread::spawn(move || mutator(&s, id)));
    }
    let tasks: [fn(&Shared); 5] = [
        checker,
        saver_loop,
        reclaimer_loop,
        collector_loop,
        lifecycle_loop,
    ];
    for task in tasks {
        let s = s.clone();
        threads.push(std::thread::spawn(move || task(&s)));
    }
    while s.violations.lock().is_empty()
        && start.elapsed() < bound
        && (start.elapsed() < minimum || !not_yet_exercised(&s).is_empty())
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    // What the run exercised, read before the threads stop (the final restore and
    // collection below would count too).
    let missing = not_yet_exercised(&s);
    s.stop.store(true, Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let finals: Vec<Vec<(Handle, Vec<u64>)>> =
        mutators.into_iter().map(|t| t.join().unwrap()).collect();
    let violations = s.violations.lock().clone();
    assert!(violations.is_empty(), "{violations:#?}");
    // The run exercised what it claims to.
    assert!(
        missing.is_empty(),
        "after {:?}: {missing:?}",
        start.elapsed()
    );

    // Everything back in, then every array against its shadow.
    let r = restore::restore_all(&s.f.heap, &s.f.swap);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    for (h, shadow) in finals.iter().flatten() {
        assert_eq!(&s.f.words(*h), shadow, "object {}", h.value());
    }
    // One last collection leaves exactly the mutators' arrays, with their entries.
    let roots: Vec<u64> = finals.iter().flatten().map(|(h, _)| h.value()).collect();
    // SAFETY: every thread has stopped.
    unsafe { marvin_gc::collect(&s.f.heap, &roots) };
    let space = s.f.space();
    assert_eq!(space.len(), WRITERS * OBJECTS_PER_WRITER);
    assert_eq!(space.table.len(), space.len());
    assert!(s.f.live_slots() <= space.len() as u64);
    assert_eq!(s.f.gc_faults(), 0);
}
