//! Fast-tracked lock holders on real threads: a low-priority thread holds a monitor, a
//! latency-critical thread blocks on it, and the holder's nice value is raised while the
//! waiter waits and restored when the holder releases.
//!
//! Raising a priority needs `CAP_SYS_NICE` (or `RLIMIT_NICE`). When the test runs without
//! it, the boost is refused: the test then checks the refusal path instead (the holder keeps
//! its priority, the refusal is counted and reported, the waiter still gets the monitor).

use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use marvin_runtime::cpuclock::current_tid;
use marvin_runtime::fasttrack::{self, thread_nice, Event, FastTracker, Mode};
use marvin_runtime::{thread_id, Monitors};
use parking_lot::Mutex;

const OBJ: u64 = 0x1234;
const HOLDER_NICE: i32 = 10;

/// Waits (without a time bound on the outcome) until `cond` holds; fails after 30 s.
fn wait_until(mut cond: impl FnMut() -> bool) {
    for _ in 0..30_000 {
        if cond() {
            return;
        }
        thread::sleep(Duration::from_millis(1));
    }
    panic!("condition not reached in 30 s");
}

#[test]
fn a_holder_is_boosted_while_a_looper_waits_and_restored_after() {
    let tracker = Arc::new(FastTracker::os(Mode::FastTrack));
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    tracker.set_observer(move |e| seen.lock().push(e.clone()));
    let monitors = Arc::new(Monitors::with_fast_track(tracker.clone()));

    // The holder: lowers its own priority (no privilege needed), takes the monitor, reports
    // its tid, and releases when told to; then it stays alive until told to end, so its
    // priority can be read after the release.
    let (tid_tx, tid_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (end_tx, end_rx) = mpsc::channel::<()>();
    let (released_tx, released_rx) = mpsc::channel();
    let m = monitors.clone();
    let holder = thread::spawn(move || {
        let tid = current_tid();
        fasttrack::set_thread_nice(tid, HOLDER_NICE).unwrap();
        m.try_enter(OBJ, thread_id(), tid).unwrap();
        tid_tx.send(tid).unwrap();
        release_rx.recv().unwrap();
        m.exit(OBJ, thread_id()).unwrap();
        released_tx.send(()).unwrap();
        end_rx.recv().unwrap();
    });
    let holder_tid = tid_rx.recv().unwrap();
    assert_eq!(thread_nice(holder_tid).unwrap(), HOLDER_NICE);

    // The looper: latency-critical, blocks on the monitor.
    let m = monitors.clone();
    let looper = thread::spawn(move || {
        fasttrack::set_latency_critical(true);
        let me = thread_id();
        let holder = m.try_enter(OBJ, me, current_tid()).unwrap_err();
        m.enter_blocking(OBJ, me, current_tid());
        m.exit(OBJ, me).unwrap();
        holder.owner_tid
    });

    wait_until(|| {
        let s = tracker.stats();
        s.boosts + s.denied >= 1
    });
    let privileged = tracker.stats().boosts == 1;
    if privileged {
        assert_eq!(
            thread_nice(holder_tid).unwrap(),
            fasttrack::FAST_TRACK_NICE,
            "boosted while the looper waits"
        );
        assert!(tracker.is_boosted(holder_tid));
    } else {
        assert_eq!(tracker.stats().denied, 1);
        assert_eq!(thread_nice(holder_tid).unwrap(), HOLDER_NICE);
    }

    release_tx.send(()).unwrap();
    released_rx.recv().unwrap();
    assert_eq!(
        looper.join().unwrap(),
        holder_tid,
        "the looper saw the holder"
    );
    assert_eq!(
        thread_nice(holder_tid).unwrap(),
        HOLDER_NICE,
        "restored after release"
    );
    assert!(!tracker.is_boosted(holder_tid));
    let events = events.lock().clone();
    if privileged {
        assert_eq!(tracker.stats().restores, 1);
        assert_eq!(
            events,
            vec![
                Event::Boost {
                    lock: events_lock(&events),
                    holder_tid,
                    waiter_tid: waiter_of(&events),
                    from_nice: HOLDER_NICE,
                    to_nice: fasttrack::FAST_TRACK_NICE,
                    sticky: false,
                },
                Event::Restore {
                    holder_tid,
                    nice: HOLDER_NICE
                },
            ]
        );
    } else {
        assert!(matches!(events[..], [Event::Denied { .. }]));
    }
    end_tx.send(()).unwrap();
    holder.join().unwrap();
}

fn events_lock(events: &[Event]) -> fasttrack::LockKey {
    match &events[0] {
        Event::Boost { lock, .. } => *lock,
        e => panic!("expected a boost first, got {e:?}"),
    }
}

fn waiter_of(events: &[Event]) -> i32 {
    match &events[0] {
        Event::Boost { waiter_tid, .. } => *waiter_tid,
        e => panic!("expected a boost first, got {e:?}"),
    }
}

#[test]
fn a_thread_that_is_not_latency_critical_boosts_nobody() {
    let tracker = Arc::new(FastTracker::os(Mode::FastTrack));
    let monitors = Arc::new(Monitors::with_fast_track(tracker.clone()));
    monitors.try_enter(OBJ, 1, current_tid()).unwrap();
    let m = monitors.clone();
    let waiter = thread::spawn(move || {
        m.enter_blocking(OBJ, 2, current_tid());
        m.exit(OBJ, 2).unwrap();
    });
    // The waiter is blocked once the monitor reports it as a waiter.
    wait_until(|| monitors.try_enter(OBJ, 3, 0).is_err_and(|h| h.waiters == 1));
    monitors.exit(OBJ, 1).unwrap();
    waiter.join().unwrap();
    assert_eq!(tracker.stats().blocks, 0);
    assert_eq!(tracker.stats().boosts, 0);
}

/// Sticky fast track on real threads: a holder that blocked the looper once is boosted the
/// next time it takes the monitor, with nobody waiting, and restored when it releases it.
#[test]
fn a_holder_that_blocked_the_looper_is_boosted_on_its_next_acquisition() {
    let tracker = Arc::new(FastTracker::os(Mode::FastTrack));
    let monitors = Arc::new(Monitors::with_fast_track(tracker.clone()));
    // The holder runs each command it gets and answers with its nice value after it.
    let (cmd_tx, cmd_rx) = mpsc::channel::<&'static str>();
    let (nice_tx, nice_rx) = mpsc::channel();
    let m = monitors.clone();
    let holder = thread::spawn(move || {
        let (me, tid) = (thread_id(), current_tid());
        fasttrack::set_thread_nice(tid, HOLDER_NICE).unwrap();
        for cmd in cmd_rx {
            match cmd {
                "enter" => m.try_enter(OBJ, me, tid).unwrap(),
                _ => m.exit(OBJ, me).unwrap(),
            }
            nice_tx.send((tid, thread_nice(tid).unwrap())).unwrap();
        }
    });
    cmd_tx.send("enter").unwrap();
    let (holder_tid, nice) = nice_rx.recv().unwrap();
    assert_eq!(nice, HOLDER_NICE, "not a known blocker yet");

    let m = monitors.clone();
    let looper = thread::spawn(move || {
        fasttrack::set_latency_critical(true);
        let me = thread_id();
        m.enter_blocking(OBJ, me, current_tid());
        m.exit(OBJ, me).unwrap();
    });
    wait_until(|| {
        let s = tracker.stats();
        s.boosts + s.denied >= 1
    });
    let privileged = tracker.stats().boosts == 1;
    cmd_tx.send("exit").unwrap();
    assert_eq!(
        nice_rx.recv().unwrap().1,
        HOLDER_NICE,
        "restored at release"
    );
    looper.join().unwrap();

    cmd_tx.send("enter").unwrap();
    let (_, nice) = nice_rx.recv().unwrap();
    if privileged {
        assert_eq!(nice, fasttrack::FAST_TRACK_NICE, "boosted on acquisition");
        assert!(tracker.is_boosted(holder_tid));
        assert_eq!(tracker.stats().sticky_boosts, 1);
    } else {
        assert_eq!(nice, HOLDER_NICE);
    }
    cmd_tx.send("exit").unwrap();
    assert_eq!(
        nice_rx.recv().unwrap().1,
        HOLDER_NICE,
        "restored at release"
    );
    assert!(!tracker.is_boosted(holder_tid));
    drop(cmd_tx);
    holder.join().unwrap();
}
