//! Unit tests of DeliQueue, sized for Miri (`cargo +nightly miri test -p marvin-deliqueue
//! --lib`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::*;

/// A payload that counts its drops.
struct Counted {
    id: u32,
    drops: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn queue() -> (DeliQueue<u32, VirtualClock>, VirtualClock) {
    let clock = VirtualClock::new(1_000);
    (DeliQueue::with_clock(clock.clone()), clock)
}

fn msg(what: i64, id: u32) -> Message<u32> {
    Message::new(1, what, id)
}

fn drain(q: &impl MessageQueue<u32>) -> Vec<u32> {
    let mut out = Vec::new();
    while let Next::Message { message, .. } = q.next() {
        out.push(message.payload);
    }
    out
}

#[test]
fn delivers_by_due_time_then_post_order() {
    let (q, clock) = queue();
    q.post_at(3_000, msg(0, 1)).unwrap();
    q.post_at(2_000, msg(0, 2)).unwrap();
    q.post_at(3_000, msg(0, 3)).unwrap();
    q.post_at(2_000, msg(0, 4)).unwrap();
    assert!(matches!(q.next(), Next::Idle));
    clock.set(2_500);
    assert_eq!(drain(&q), vec![2, 4]);
    clock.set(3_000);
    assert_eq!(drain(&q), vec![1, 3]);
    assert!(matches!(q.next(), Next::Idle));
    assert_eq!(q.pending(), 0);
}

#[test]
fn front_of_queue_is_first_and_last_in_first_out() {
    let (q, _clock) = queue();
    q.post(msg(0, 1)).unwrap();
    q.post_at_front(msg(0, 2)).unwrap();
    q.post_at_front(msg(0, 3)).unwrap();
    q.post(msg(0, 4)).unwrap();
    assert_eq!(drain(&q), vec![3, 2, 1, 4]);
}

#[test]
fn remove_and_has_match_what_and_obj() {
    let (q, _clock) = queue();
    q.post(msg(1, 1)).unwrap();
    q.post(msg(2, 2).with_obj(7)).unwrap();
    q.post(msg(2, 3).with_obj(8)).unwrap();
    q.post(msg(3, 4)).unwrap();
    assert!(q.has(&|k| k.what == 2 && k.obj == Some(8)));
    assert_eq!(q.remove(&|k| k.what == 2 && k.obj == Some(8)), 1);
    assert!(!q.has(&|k| k.what == 2 && k.obj == Some(8)));
    assert_eq!(q.pending(), 3);
    // Sweep some, then remove more (exercises removal of swept and unswept nodes).
    assert_eq!(
        q.next().message_payload(),
        Some(1),
        "the first message is untouched"
    );
    q.post(msg(3, 5)).unwrap();
    assert_eq!(q.remove(&|k| k.what == 3), 2);
    assert_eq!(drain(&q), vec![2]);
    assert!(q.is_empty());
}

#[test]
fn every_payload_is_dropped_exactly_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let clock = VirtualClock::new(10);
    let q: DeliQueue<Counted, _> = DeliQueue::with_clock(clock.clone());
    let counted = |id| Counted {
        id,
        drops: drops.clone(),
    };
    for id in 0..12 {
        q.post_at(
            10 + u64::from(id % 4),
            Message::new(0, i64::from(id % 3), counted(id)),
        )
        .unwrap();
    }
    assert_eq!(q.remove(&|k| k.what == 0), 4);
    // Removed payloads are dropped by the looper, when it reclaims them.
    let mut delivered = Vec::new();
    if let Next::Message { message, .. } = q.next() {
        assert_eq!(drops.load(Ordering::SeqCst), 4);
        delivered.push(message.payload.id);
    }
    assert_eq!(drops.load(Ordering::SeqCst), 5);
    // The rest are pending when the queue goes away.
    drop(q);
    assert_eq!(drops.load(Ordering::SeqCst), 12);
    assert_eq!(delivered.len(), 1);
}

#[test]
fn barrier_holds_back_sync_messages_only() {
    let (q, clock) = queue();
    q.post(msg(0, 1)).unwrap();
    let barrier = q.post_sync_barrier(q.now()).unwrap();
    q.post(msg(0, 2)).unwrap();
    q.post(msg(0, 3).asynchronous()).unwrap();
    clock.advance(1);
    assert_eq!(drain(&q), vec![1, 3]);
    assert_eq!(q.pending(), 1);
    assert!(q.remove_sync_barrier(barrier));
    assert!(!q.remove_sync_barrier(barrier));
    assert_eq!(drain(&q), vec![2]);
}

#[test]
fn posts_swept_one_at_a_time_keep_due_order_and_a_lone_barrier_holds_back_sync() {
    // Each `next` here sweeps at most one new node (the looper's one-node sweep), and no
    // asynchronous message is queued until the end (its candidate's short path).
    let (q, clock) = queue();
    let now = q.now();
    q.post(msg(0, 1)).unwrap();
    assert_eq!(drain(&q), vec![1]);
    q.post_at(now + 5_000, msg(0, 2)).unwrap();
    assert!(matches!(q.next(), Next::Idle), "not due yet");
    q.post(msg(0, 3)).unwrap();
    assert_eq!(drain(&q), vec![3], "due before the one swept earlier");
    q.post(msg(0, 4)).unwrap();
    q.post_at_front(msg(0, 5)).unwrap();
    assert_eq!(drain(&q), vec![5, 4]);
    let barrier = q.post_sync_barrier(q.now()).unwrap();
    q.post(msg(0, 6)).unwrap();
    clock.set(now + 5_000);
    assert!(
        matches!(q.next(), Next::Idle),
        "the barrier holds back 6 and 2"
    );
    q.post(msg(0, 7).asynchronous()).unwrap();
    assert_eq!(drain(&q), vec![7]);
    assert!(q.remove_sync_barrier(barrier));
    assert_eq!(drain(&q), vec![6, 2]);
    assert_eq!(q.pending(), 0);
}

#[test]
fn quit_fails_later_posts_and_drops_pending() {
    let drops = Arc::new(AtomicUsize::new(0));
    let q: DeliQueue<Counted> = DeliQueue::new();
    let counted = |id| Counted {
        id,
        drops: drops.clone(),
    };
    q.post(Message::new(0, 0, counted(1))).unwrap();
    q.post_delayed(Duration::from_secs(60), Message::new(0, 0, counted(2)))
        .unwrap();
    q.quit();
    assert!(q.is_quitting());
    let err = q.post(Message::new(0, 5, counted(3))).unwrap_err();
    assert_eq!(err.0.key.what, 5);
    assert_eq!(err.0.payload.id, 3);
    drop(err);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(matches!(q.next(), Next::Quit));
    assert!(matches!(q.next(), Next::Quit));
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    assert_eq!(q.pending(), 0);
    assert_eq!(q.post_sync_barrier(1), Err(QueueClosed));
    assert_eq!(q.remove(&|_| true), 0);
}

#[test]
fn quit_safely_delivers_what_is_due() {
    let (q, clock) = queue();
    q.post(msg(0, 1)).unwrap();
    q.post_at_front(msg(0, 2)).unwrap();
    q.post_at(clock.now() + 500, msg(0, 3)).unwrap();
    q.quit_safely();
    assert!(q.post(msg(0, 4)).is_err());
    clock.advance(1_000);
    assert_eq!(drain(&q), vec![2, 1]);
    assert!(matches!(q.next(), Next::Quit));
    assert_eq!(q.pending(), 0);
}

#[test]
fn wait_returns_on_post_and_on_wake() {
    let q: Arc<DeliQueue<u32>> = Arc::new(DeliQueue::new());
    q.post_delayed(Duration::from_secs(3600), msg(0, 9))
        .unwrap();
    let poster = {
        let q = q.clone();
        std::thread::spawn(move || {
            q.post(msg(0, 1)).unwrap();
        })
    };
    // Loops until the immediate message arrives; a lost wake-up would hang here.
    let got = loop {
        match q.next() {
            Next::Message { message, .. } => break message.payload,
            Next::Idle => q.wait(),
            Next::Quit => unreachable!(),
        }
    };
    assert_eq!(got, 1);
    poster.join().unwrap();
    let waker = {
        let q = q.clone();
        std::thread::spawn(move || q.wake())
    };
    // Either the wake lands while waiting, or before and is kept for this wait.
    waker.join().unwrap();
    q.wait();
    assert!(matches!(q.next(), Next::Idle));
    q.quit();
    assert!(matches!(q.next(), Next::Quit));
}

#[test]
fn concurrent_posters_removers_and_looper() {
    let producers = 2;
    let per = if cfg!(miri) { 20 } else { 500 };
    let drops = Arc::new(AtomicUsize::new(0));
    let q: Arc<DeliQueue<Counted>> = Arc::new(DeliQueue::new());
    let mut handles = Vec::new();
    for p in 0..producers {
        let q = q.clone();
        let drops = drops.clone();
        handles.push(std::thread::spawn(move || {
            for i in 0..per {
                let c = Counted {
                    id: p * 100_000 + i,
                    drops: drops.clone(),
                };
                q.post(Message::new(u64::from(p), i64::from(i % 2), c))
                    .unwrap();
            }
        }));
    }
    let remover = {
        let q = q.clone();
        std::thread::spawn(move || {
            let mut removed = 0;
            for _ in 0..per / 4 {
                removed += q.remove(&|k| k.what == 1);
            }
            removed
        })
    };
    let mut delivered = Vec::new();
    let total = (producers * per) as usize;
    loop {
        match q.next() {
            Next::Message { message, .. } => delivered.push(message.payload.id),
            Next::Idle => {
                let finished = remover.is_finished() && handles.iter().all(|h| h.is_finished());
                if finished && q.is_empty() {
                    break;
                }
                std::thread::yield_now();
            }
            Next::Quit => unreachable!(),
        }
    }
    for h in handles {
        h.join().unwrap();
    }
    let removed_count = remover.join().unwrap();
    assert_eq!(delivered.len() + removed_count, total);
    // Per-producer order is kept.
    for p in 0..producers {
        let mine: Vec<u32> = delivered
            .iter()
            .copied()
            .filter(|id| id / 100_000 == p)
            .collect();
        assert!(mine.windows(2).all(|w| w[0] < w[1]));
    }
    let mut unique = delivered.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), delivered.len(), "no message delivered twice");
    drop(q);
    assert_eq!(drops.load(Ordering::SeqCst), total);
}

impl<T> Next<T> {
    fn message_payload(self) -> Option<T> {
        match self {
            Next::Message { message, .. } => Some(message.payload),
            _ => None,
        }
    }
}

#[test]
fn posts_to_an_overdue_looper_keep_order_and_due_times() {
    // The looper sleeps until A is due (1 ms of virtual time, so its real timeout is
    // 1 ms too); the clock then jumps past A's due time and the slack, so the posts of B
    // and C find the looper overdue (if it is asleep by then) and yield once each.
    let clock = VirtualClock::new(1_000);
    let q = Arc::new(DeliQueue::with_clock(clock.clone()));
    let a_due = 1_000 + 1_000_000;
    q.post_at(a_due, msg(0, 1)).unwrap();
    let looper = {
        let (q, clock) = (q.clone(), clock.clone());
        std::thread::spawn(move || {
            let mut got = Vec::new();
            while got.len() < 3 {
                match q.next() {
                    Next::Message { when, message } => {
                        assert!(when <= clock.now(), "dispatched before its due time");
                        got.push(message.payload);
                    }
                    Next::Idle => q.wait(),
                    Next::Quit => break,
                }
            }
            got
        })
    };
    clock.set(a_due + wake::OVERDUE_NS);
    q.post_at(clock.now(), msg(0, 2)).unwrap();
    // Due long after: delivered only once the clock gets there.
    q.post_at(clock.now() + 10_000_000, msg(0, 3)).unwrap();
    while q.pending() > 1 {
        std::thread::yield_now();
    }
    assert_eq!(q.pending(), 1, "the later message waits for its due time");
    clock.advance(10_000_000);
    // The looper sleeps until message 3's due time in real time too: wake it.
    q.wake();
    assert_eq!(looper.join().unwrap(), vec![1, 2, 3]);
}

#[test]
fn posts_between_deliveries_that_come_first_are_seen() {
    // Two due messages swept by the first `next`, which publishes the delivery bound;
    // what lands after it but belongs before the second must come first.
    let (q, clock) = queue();
    q.post(msg(0, 1)).unwrap();
    q.post(msg(0, 2)).unwrap();
    q.post(msg(0, 3)).unwrap();
    assert_eq!(q.next().message_payload(), Some(1));
    q.post_at_front(msg(0, 4)).unwrap();
    assert_eq!(
        q.next().message_payload(),
        Some(4),
        "a front post goes first"
    );
    q.post_at(999, msg(0, 5)).unwrap();
    assert_eq!(
        q.next().message_payload(),
        Some(5),
        "a post due earlier goes first"
    );
    q.post(msg(0, 6)).unwrap();
    assert_eq!(
        q.next().message_payload(),
        Some(2),
        "a post due at the same time goes after"
    );
    let token = q.post_sync_barrier(990).unwrap();
    assert!(
        matches!(q.next(), Next::Idle),
        "a barrier due earlier holds back the rest"
    );
    assert!(q.remove_sync_barrier(token));
    clock.advance(1);
    assert_eq!(drain(&q), vec![3, 6]);
}

#[test]
fn quit_after_a_delivery_drops_the_swept_messages() {
    let (q, _clock) = queue();
    q.post(msg(0, 1)).unwrap();
    q.post(msg(0, 2)).unwrap();
    assert_eq!(q.next().message_payload(), Some(1));
    q.quit();
    assert!(matches!(q.next(), Next::Quit));
}
