//! loom models of DeliQueue's atomic protocols:
//! - push vs sweep (posters racing the looper's sweep and head unlink),
//! - remove vs deliver (the tombstone/claim CAS: run or removed, never both),
//! - traversal vs unlink (a walker reaches a pending node while the looper unlinks
//!   its neighbours),
//! - post vs quit (a post lands below the sentinel and is dropped, or fails),
//! - sleep vs wake-up (a post or `wake` racing the looper going to sleep is never lost;
//!   a lost wake-up shows as a loom deadlock),
//! - post vs delivery bound (a post due before swept messages, racing the looper
//!   publishing the bound it delivers up to without sweeping, is never overtaken),
//! - an overdue looper (a post that finds the looper asleep past its deadline and the
//!   timer slack yields; nothing is lost or dispatched early).
//!
//! Under loom, retired nodes are kept until the queue drops instead of going through
//! crossbeam-epoch (see `marvin_deliqueue::reclaim`), and a timed futex wait returns at once.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p marvin-deliqueue --test loom_deliqueue --release`
#![cfg(loom)]

use std::sync::atomic::{AtomicUsize, Ordering};

use loom::sync::Arc;
use loom::thread;
use marvin_deliqueue::{Clock, DeliQueue, Message, MessageQueue, Next, VirtualClock};

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    let runs = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        f()
    });
    // A model that ran once explored nothing: the threads never interleaved.
    assert!(
        runs.load(Ordering::Relaxed) > 1,
        "loom explored a single execution"
    );
    eprintln!("loom explored {} executions", runs.load(Ordering::Relaxed));
}

/// A payload that counts its drops.
struct Counted(std::sync::Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn new_queue<T: Send + 'static>() -> (Arc<DeliQueue<T, VirtualClock>>, VirtualClock) {
    let clock = VirtualClock::new(100);
    (Arc::new(DeliQueue::with_clock(clock.clone())), clock)
}

fn payload_of<T>(next: Next<T>) -> Option<T> {
    match next {
        Next::Message { message, .. } => Some(message.payload),
        _ => None,
    }
}

#[test]
fn push_vs_sweep() {
    model(|| {
        let (q, _clock) = new_queue::<u32>();
        // The looper runs on a spawned thread while this one posts.
        let looper = {
            let q = q.clone();
            thread::spawn(move || payload_of(q.next()))
        };
        q.post_at(10, Message::new(0, 0, 1)).unwrap();
        q.post_at(10, Message::new(0, 0, 2)).unwrap();
        let mut got: Vec<u32> = looper.join().unwrap().into_iter().collect();
        while let Some(p) = payload_of(q.next()) {
            got.push(p);
        }
        assert_eq!(got, vec![1, 2]);
        assert_eq!(q.pending(), 0);
    });
}

#[test]
fn remove_vs_deliver() {
    model(|| {
        let drops = std::sync::Arc::new(AtomicUsize::new(0));
        let (q, _clock) = new_queue::<Counted>();
        q.post_at(10, Message::new(0, 7, Counted(drops.clone())))
            .unwrap();
        let remover = {
            let q = q.clone();
            thread::spawn(move || q.remove(&|k| k.what == 7))
        };
        let delivered = payload_of(q.next()).is_some();
        let removed = remover.join().unwrap();
        assert_eq!(
            usize::from(delivered) + removed,
            1,
            "run or removed, never both"
        );
        // Let the looper reclaim a tombstone, then tear down.
        let _ = q.next();
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        drop(q);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn traversal_vs_unlink() {
    model(|| {
        let (q, clock) = new_queue::<u32>();
        q.post_at(1_000, Message::new(0, 2, 1)).unwrap(); // oldest, stays pending
        q.post_at(150, Message::new(0, 0, 2)).unwrap(); // middle
        q.post_at(150, Message::new(0, 0, 3)).unwrap(); // newest (head)
        assert!(matches!(q.next(), Next::Idle)); // sweep: back-links built
        clock.set(200);
        let walker = {
            let q = q.clone();
            thread::spawn(move || q.has(&|k| k.what == 2))
        };
        assert_eq!(payload_of(q.next()), Some(2));
        assert_eq!(payload_of(q.next()), Some(3));
        assert!(walker.join().unwrap(), "a pending node must stay reachable");
    });
}

#[test]
fn post_vs_quit() {
    model(|| {
        let drops = std::sync::Arc::new(AtomicUsize::new(0));
        let (q, _clock) = new_queue::<Counted>();
        let poster = {
            let (q, drops) = (q.clone(), drops.clone());
            thread::spawn(move || q.post_at(10, Message::new(0, 0, Counted(drops))).is_ok())
        };
        q.quit();
        assert!(
            matches!(q.next(), Next::Quit),
            "nothing is delivered after quit"
        );
        let posted = poster.join().unwrap();
        assert!(matches!(q.next(), Next::Quit));
        let _ = posted;
        assert!(q
            .post_at(10, Message::new(0, 0, Counted(drops.clone())))
            .is_err());
        drop(q);
        assert_eq!(drops.load(Ordering::SeqCst), 2, "each payload dropped once");
    });
}

#[test]
fn sleep_vs_post() {
    model(|| {
        let (q, _clock) = new_queue::<u32>();
        let poster = {
            let q = q.clone();
            thread::spawn(move || q.post_at(10, Message::new(0, 0, 1)).unwrap())
        };
        // The queue may be empty: wait sleeps until the post wakes it (or sees it).
        let mut got = payload_of(q.next());
        if got.is_none() {
            q.wait();
            got = payload_of(q.next());
        }
        assert_eq!(got, Some(1));
        poster.join().unwrap();
    });
}

#[test]
fn sleep_vs_wake() {
    model(|| {
        let (q, _clock) = new_queue::<u32>();
        let waker = {
            let q = q.clone();
            thread::spawn(move || q.wake())
        };
        // Returns only because of the wake: a lost one deadlocks the model.
        q.wait();
        waker.join().unwrap();
    });
}

#[test]
fn overdue_post_vs_timed_sleep() {
    model(|| {
        let (q, clock) = new_queue::<u32>();
        // Swept but not due: the looper's next sleep is until 200.
        q.post_at(200, Message::new(0, 0, 1)).unwrap();
        assert!(payload_of(q.next()).is_none());
        let late = 200 + marvin_deliqueue::OVERDUE_NS;
        let poster = {
            let (q, clock) = (q.clone(), clock.clone());
            // Finds the looper asleep past its deadline and the slack (overdue: it
            // yields), or awake, or not yet asleep; the message is never lost.
            thread::spawn(move || {
                clock.set(late);
                q.post_at(late, Message::new(0, 0, 2)).unwrap();
            })
        };
        let mut got = Vec::new();
        let mut take = |q: &DeliQueue<u32, VirtualClock>| {
            while let Next::Message { when, message } = q.next() {
                assert!(when <= clock.now(), "dispatched before its due time");
                got.push(message.payload);
            }
        };
        q.wait();
        take(&q);
        poster.join().unwrap();
        take(&q);
        assert_eq!(got, vec![1, 2]);
    });
}

#[test]
fn post_vs_delivery_bound() {
    model(|| {
        let (q, _clock) = new_queue::<u32>();
        q.post_at(10, Message::new(0, 0, 1)).unwrap();
        q.post_at(10, Message::new(0, 0, 2)).unwrap();
        // The looper's first `next` sweeps both and publishes the delivery bound while
        // a message due before them lands.
        let looper = {
            let q = q.clone();
            thread::spawn(move || payload_of(q.next()))
        };
        q.post_at(5, Message::new(0, 0, 3)).unwrap();
        let mut got: Vec<u32> = looper.join().unwrap().into_iter().collect();
        // The post is done: every later `next` must see it before message 2.
        while let Some(p) = payload_of(q.next()) {
            got.push(p);
        }
        assert!(
            got == [3, 1, 2] || got == [1, 3, 2],
            "message 3 overtaken: {got:?}"
        );
    });
}
