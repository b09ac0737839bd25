//! Unit tests of the tracker on mock priorities and a manual clock.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::*;
use crate::cpuclock;

/// Nice values in a table; refuses raises when `privileged` is false.
#[derive(Default)]
struct MockPriorities {
    nice: Mutex<HashMap<i32, i32>>,
    unprivileged: AtomicBool,
}

impl Priorities for MockPriorities {
    fn nice_of(&self, tid: i32) -> io::Result<i32> {
        Ok(*self.nice.lock().get(&tid).unwrap_or(&0))
    }
    fn set_nice(&self, tid: i32, nice: i32) -> io::Result<()> {
        let mut t = self.nice.lock();
        let cur = *t.get(&tid).unwrap_or(&0);
        if nice < cur && self.unprivileged.load(Ordering::Relaxed) {
            return Err(io::Error::from_raw_os_error(libc::EACCES));
        }
        t.insert(tid, nice);
        Ok(())
    }
}

const LOCK: LockKey = LockKey { domain: 1, id: 7 };
const OTHER: LockKey = LockKey { domain: 1, id: 8 };

fn setup(mode: Mode) -> (Arc<MockPriorities>, FastTracker) {
    let p = Arc::new(MockPriorities::default());
    p.nice.lock().insert(10, 19);
    p.nice.lock().insert(20, -4);
    (p.clone(), FastTracker::new(mode, p))
}

fn critical<R>(f: impl FnOnce() -> R) -> R {
    set_latency_critical(true);
    let r = f();
    set_latency_critical(false);
    r
}

#[test]
fn fast_track_boosts_until_every_boosted_lock_is_released() {
    let (p, ft) = setup(Mode::FastTrack);
    critical(|| ft.on_block(LOCK, 20, &[10]));
    assert_eq!(p.nice_of(10).unwrap(), FAST_TRACK_NICE);
    critical(|| ft.on_block(OTHER, 20, &[10]));
    ft.on_release(LOCK, 10);
    assert_eq!(p.nice_of(10).unwrap(), FAST_TRACK_NICE, "still holds OTHER");
    ft.on_release(OTHER, 10);
    assert_eq!(p.nice_of(10).unwrap(), 19);
    let s = ft.stats();
    assert_eq!((s.blocks, s.boosts, s.restores), (2, 1, 1));
    assert!(!ft.is_boosted(10));
}

#[test]
fn inherit_gives_the_waiters_nice_only() {
    let (p, ft) = setup(Mode::Inherit);
    critical(|| ft.on_block(LOCK, 20, &[10]));
    assert_eq!(p.nice_of(10).unwrap(), -4);
    ft.on_release(LOCK, 10);
    assert_eq!(p.nice_of(10).unwrap(), 19);
}

#[test]
fn only_latency_critical_threads_boost_and_off_does_nothing() {
    let (p, ft) = setup(Mode::FastTrack);
    ft.on_block(LOCK, 20, &[10]);
    assert_eq!(p.nice_of(10).unwrap(), 19);
    let (p, ft) = setup(Mode::Off);
    critical(|| ft.on_block(LOCK, 20, &[10]));
    assert_eq!(p.nice_of(10).unwrap(), 19);
    assert_eq!(ft.stats(), Stats::default());
}

#[test]
fn a_refused_boost_is_reported_and_nothing_is_restored() {
    let (p, ft) = setup(Mode::FastTrack);
    p.unprivileged.store(true, Ordering::Relaxed);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    ft.set_observer(move |e| s2.lock().push(e.clone()));
    critical(|| ft.on_block(LOCK, 20, &[10]));
    critical(|| ft.on_block(LOCK, 20, &[10]));
    ft.on_release(LOCK, 10);
    assert_eq!(p.nice_of(10).unwrap(), 19);
    assert_eq!(ft.stats().denied, 2);
    assert!(ft.warned.load(Ordering::Relaxed));
    assert!(matches!(
        seen.lock()[0],
        Event::Denied { holder_tid: 10, .. }
    ));
    assert_eq!(seen.lock().len(), 2, "no restore after a refused boost");
}

#[test]
fn a_holder_already_stronger_is_left_alone() {
    let (p, ft) = setup(Mode::Inherit);
    p.nice.lock().insert(10, -10);
    critical(|| ft.on_block(LOCK, 20, &[10]));
    assert_eq!(p.nice_of(10).unwrap(), -10);
    assert!(!ft.is_boosted(10));
}

#[test]
fn spinning_needs_a_boosted_holder_and_stops_when_free_or_stalled() {
    let (_, off) = setup(Mode::Off);
    assert_eq!(
        critical(|| off.spin_on_holder(10, || true)),
        SpinEnd::Skipped
    );
    let (_, ft) = setup(Mode::FastTrack);
    assert_eq!(
        critical(|| ft.spin_on_holder(10, || true)),
        SpinEnd::Skipped,
        "not boosted"
    );
    critical(|| ft.on_block(LOCK, 20, &[10]));
    assert_eq!(
        ft.spin_on_holder(10, || true),
        SpinEnd::Skipped,
        "not critical"
    );
    assert_eq!(critical(|| ft.spin_on_holder(10, || true)), SpinEnd::Free);
    // Tid 10 is no thread of this process: its clock cannot be read, so it never runs.
    assert_eq!(
        critical(|| ft.spin_on_holder(10, || false)),
        SpinEnd::Stalled
    );
    let s = ft.stats();
    assert_eq!((s.spins, s.spins_acquired), (2, 1));
    assert!(
        s.spin_cpu_ns > 0,
        "a spin of at least SPIN_STALL_NS takes CPU time"
    );
    assert!(
        s.cpu_ns >= s.spin_cpu_ns,
        "the spin is part of the overhead"
    );
    let (_, never) = setup(Mode::FastTrack);
    let never = never.with_spin_limit_ns(0);
    critical(|| never.on_block(LOCK, 20, &[10]));
    assert_eq!(
        critical(|| never.spin_on_holder(10, || true)),
        SpinEnd::Skipped
    );
}

/// Lowers go through a hook that boosts the same holder for another lock, as a looper
/// blocking on a second lock of that holder would while its restore is under way.
struct ReboostDuringRestore {
    inner: MockPriorities,
    tracker: std::sync::OnceLock<std::sync::Weak<FastTracker>>,
    fired: AtomicBool,
}

impl Priorities for ReboostDuringRestore {
    fn nice_of(&self, tid: i32) -> io::Result<i32> {
        self.inner.nice_of(tid)
    }
    fn set_nice(&self, tid: i32, nice: i32) -> io::Result<()> {
        self.inner.set_nice(tid, nice)?;
        if nice == 19 && !self.fired.swap(true, Ordering::Relaxed) {
            let ft = self.tracker.get().unwrap().upgrade().unwrap();
            critical(|| ft.on_block(OTHER, 20, &[tid]));
        }
        Ok(())
    }
}

#[test]
fn a_boost_made_while_a_restore_is_under_way_is_kept() {
    let p = Arc::new(ReboostDuringRestore {
        inner: MockPriorities::default(),
        tracker: std::sync::OnceLock::new(),
        fired: AtomicBool::new(false),
    });
    p.inner.nice.lock().insert(10, 19);
    let ft = Arc::new(FastTracker::new(Mode::FastTrack, p.clone()));
    p.tracker.set(Arc::downgrade(&ft)).unwrap();
    critical(|| ft.on_block(LOCK, 20, &[10]));
    ft.on_release(LOCK, 10);
    assert!(p.fired.load(Ordering::Relaxed));
    assert_eq!(p.nice_of(10).unwrap(), FAST_TRACK_NICE, "boosted for OTHER");
    assert!(ft.is_boosted(10));
    ft.on_release(OTHER, 10);
    assert_eq!(
        p.nice_of(10).unwrap(),
        19,
        "its own priority, not the boost"
    );
    assert!(!ft.is_boosted(10));
}

/// A tracker on a manual clock (nanoseconds in the returned cell).
fn setup_clocked(mode: Mode) -> (Arc<MockPriorities>, FastTracker, Arc<AtomicU64>) {
    let (p, ft) = setup(mode);
    let now = Arc::new(AtomicU64::new(0));
    let n2 = now.clone();
    let ft = ft.with_clock(Arc::new(move || n2.load(Ordering::Relaxed)));
    (p, ft, now)
}

#[test]
fn a_known_blocker_is_boosted_on_acquisition_and_restored_at_release() {
    let (p, ft, _) = setup_clocked(Mode::FastTrack);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    ft.set_observer(move |e| s2.lock().push(e.clone()));
    // Tid 30 (nice 0 in the mock) never blocked anyone: not boosted.
    ft.on_acquire(LOCK, 30);
    assert!(!ft.is_boosted(30));
    assert_eq!(p.nice_of(30).unwrap(), 0);
    // Tid 10 blocks the looper (20) once: boosted, restored at release.
    critical(|| ft.on_block(LOCK, 20, &[10]));
    ft.on_release(LOCK, 10);
    assert_eq!(p.nice_of(10).unwrap(), 19);
    seen.lock().clear();
    // Its next acquisition of that lock boosts it at once, nobody waiting.
    ft.on_acquire(LOCK, 10);
    assert!(ft.is_boosted(10));
    assert_eq!(p.nice_of(10).unwrap(), FAST_TRACK_NICE);
    assert_eq!(
        seen.lock()[0],
        Event::Boost {
            lock: LOCK,
            holder_tid: 10,
            waiter_tid: 20,
            from_nice: 19,
            to_nice: FAST_TRACK_NICE,
            sticky: true,
        }
    );
    ft.on_release(LOCK, 10);
    assert_eq!(p.nice_of(10).unwrap(), 19);
    assert!(!ft.is_boosted(10));
    // Known for LOCK only: another lock is not fast-tracked.
    ft.on_acquire(OTHER, 10);
    assert!(!ft.is_boosted(10));
    let s = ft.stats();
    assert_eq!((s.boosts, s.sticky_boosts, s.restores), (2, 1, 2));
}

#[test]
fn only_fast_track_remembers_blockers() {
    for mode in [Mode::Off, Mode::Inherit] {
        let (p, ft, _) = setup_clocked(mode);
        critical(|| ft.on_block(LOCK, 20, &[10]));
        ft.on_release(LOCK, 10);
        ft.on_acquire(LOCK, 10);
        assert!(!ft.is_boosted(10), "{mode}");
        assert_eq!(p.nice_of(10).unwrap(), 19, "{mode}");
        assert_eq!(ft.known_blockers(), 0, "{mode}");
    }
}

#[test]
fn known_blockers_expire_without_new_blocks() {
    let (p, ft, now) = setup_clocked(Mode::FastTrack);
    critical(|| ft.on_block(LOCK, 20, &[10]));
    ft.on_release(LOCK, 10);
    // Blocking again refreshes the entry.
    now.store(KNOWN_BLOCKER_TTL_NS / 2, Ordering::Relaxed);
    critical(|| ft.on_block(LOCK, 20, &[10]));
    ft.on_release(LOCK, 10);
    now.store(KNOWN_BLOCKER_TTL_NS, Ordering::Relaxed);
    ft.on_acquire(LOCK, 10);
    assert!(ft.is_boosted(10), "refreshed at half the lifetime");
    ft.on_release(LOCK, 10);
    now.store(2 * KNOWN_BLOCKER_TTL_NS, Ordering::Relaxed);
    ft.on_acquire(LOCK, 10);
    assert!(!ft.is_boosted(10), "expired");
    assert_eq!(p.nice_of(10).unwrap(), 19);
    assert_eq!(ft.known_blockers(), 0, "expired entries are dropped");
}

#[test]
fn known_blockers_are_bounded_and_the_oldest_is_evicted() {
    let (_, ft, now) = setup_clocked(Mode::FastTrack);
    let first = 100;
    for (i, tid) in (first..=first + MAX_KNOWN_BLOCKERS as i32).enumerate() {
        now.store(i as u64, Ordering::Relaxed);
        critical(|| ft.on_block(LOCK, 20, &[tid]));
        ft.on_release(LOCK, tid);
    }
    assert_eq!(ft.known_blockers(), MAX_KNOWN_BLOCKERS);
    ft.on_acquire(LOCK, first);
    assert!(!ft.is_boosted(first), "the oldest was evicted");
    ft.on_acquire(LOCK, first + 1);
    assert!(ft.is_boosted(first + 1), "the others are kept");
}

#[test]
fn reader_sets_are_bounded() {
    let r = ReaderSet::new();
    for t in 1..=MAX_READERS as i32 {
        assert!(r.add(t));
    }
    assert!(!r.add(99));
    r.remove(2);
    assert_eq!(r.snapshot().len(), MAX_READERS - 1);
    assert!(!r.snapshot().contains(&2));
}

#[test]
fn the_os_nice_of_this_thread_reads_back() {
    let me = cpuclock::current_tid();
    let before = thread_nice(me).unwrap();
    // Lowering one's own priority needs no privilege.
    let lower = (before + 1).min(19);
    set_thread_nice(me, lower).unwrap();
    assert_eq!(thread_nice(me).unwrap(), lower);
    let _ = set_thread_nice(me, before);
}
