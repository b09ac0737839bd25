//! Stress: many posters and removers against one looper. Every message is delivered
//! exactly once or removed (never both, never lost), per-poster order is kept for equal
//! due times, nothing is delivered after the looper quits, every payload is dropped
//! exactly once, and no node is leaked.
//!
//! Bounded to a few seconds; `MARVIN_STRESS=1` runs more rounds.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use marvin_deliqueue::{live_node_count, DeliQueue, Message, MessageQueue, Next};

const POSTERS: u64 = 4;
const REMOVERS: usize = 2;

/// Per-message ledger: how its payload ended.
struct Ledger {
    delivered_drops: Vec<AtomicU8>,
    undelivered_drops: Vec<AtomicU8>,
}

struct Payload {
    id: usize,
    delivered: bool,
    ledger: Arc<Ledger>,
}

impl Drop for Payload {
    fn drop(&mut self) {
        let slot = if self.delivered {
            &self.ledger.delivered_drops[self.id]
        } else {
            &self.ledger.undelivered_drops[self.id]
        };
        slot.fetch_add(1, Ordering::SeqCst);
    }
}

/// The node census is process-wide: the tests in this file take turns.
static CENSUS: Mutex<()> = Mutex::new(());

fn rounds() -> usize {
    if std::env::var_os("MARVIN_STRESS").is_some() {
        50
    } else {
        4
    }
}

fn round(per_poster: usize, quit_after: Option<usize>) {
    let total = POSTERS as usize * per_poster;
    let ledger = Arc::new(Ledger {
        delivered_drops: (0..total).map(|_| AtomicU8::new(0)).collect(),
        undelivered_drops: (0..total).map(|_| AtomicU8::new(0)).collect(),
    });
    let queue: Arc<DeliQueue<Payload>> = Arc::new(DeliQueue::new());
    let rejected = Arc::new(AtomicUsize::new(0));
    let posting_done = Arc::new(AtomicUsize::new(0));
    let stop_removers = Arc::new(AtomicBool::new(false));

    let posters: Vec<_> = (0..POSTERS)
        .map(|p| {
            let (queue, ledger, rejected, done) = (
                queue.clone(),
                ledger.clone(),
                rejected.clone(),
                posting_done.clone(),
            );
            thread::spawn(move || {
                for i in 0..per_poster {
                    let id = p as usize * per_poster + i;
                    let payload = Payload {
                        id,
                        delivered: false,
                        ledger: ledger.clone(),
                    };
                    // Equal due times: order comes from posting order alone.
                    let message = Message::new(p, (i % 3) as i64, payload).with_obj(i as u64 % 5);
                    if queue.post_at(1, message).is_err() {
                        rejected.fetch_add(1, Ordering::SeqCst);
                    }
                }
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    let removers: Vec<_> = (0..REMOVERS)
        .map(|r| {
            let (queue, stop) = (queue.clone(), stop_removers.clone());
            thread::spawn(move || {
                let mut removed = 0;
                while !stop.load(Ordering::SeqCst) {
                    removed += queue.remove(&|k| k.what == 1 && k.obj == Some(r as u64));
                    let _ = queue.has(&|k| k.what == 2);
                    thread::yield_now();
                }
                removed
            })
        })
        .collect();

    // Once every poster is done, quit (safely without an early quit: what is due is still
    // delivered): the looper, which may be asleep with nothing due (a remover took the
    // last message after the looper's emptiness check; removals wake no looper), is woken
    // to see the quit. With an early quit the looper's own `quit` may come first, and
    // this one then changes nothing.
    let closer = {
        let (queue, done) = (queue.clone(), posting_done.clone());
        thread::spawn(move || {
            while done.load(Ordering::SeqCst) < POSTERS as usize {
                thread::sleep(std::time::Duration::from_millis(1));
            }
            if quit_after.is_none() {
                queue.quit_safely();
            } else {
                queue.quit();
            }
        })
    };
    let mut delivered: Vec<Vec<usize>> = vec![Vec::new(); POSTERS as usize];
    let mut count = 0;
    let mut quit_called = false;
    loop {
        match queue.next() {
            Next::Message { message, .. } => {
                assert!(!quit_called, "a message was delivered after quit");
                let mut payload = message.payload;
                payload.delivered = true;
                delivered[message.key.target as usize].push(payload.id);
                count += 1;
                if quit_after == Some(count) {
                    queue.quit();
                    quit_called = true;
                }
            }
            Next::Idle => {
                if posting_done.load(Ordering::SeqCst) == POSTERS as usize && queue.is_empty() {
                    queue.quit();
                    quit_called = true;
                } else {
                    queue.wait();
                }
            }
            Next::Quit => break,
        }
    }
    stop_removers.store(true, Ordering::SeqCst);
    for p in posters {
        p.join().unwrap();
    }
    closer.join().unwrap();
    let removed: usize = removers.into_iter().map(|r| r.join().unwrap()).sum();
    drop(queue);

    for (p, ids) in delivered.iter().enumerate() {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "poster {p}'s order was broken"
        );
    }
    let mut delivered_total = 0;
    let mut undelivered_total = 0;
    for id in 0..total {
        let d = ledger.delivered_drops[id].load(Ordering::SeqCst);
        let u = ledger.undelivered_drops[id].load(Ordering::SeqCst);
        assert_eq!(d + u, 1, "message {id}: payload dropped {d}+{u} times");
        delivered_total += d as usize;
        undelivered_total += u as usize;
    }
    assert_eq!(
        delivered_total,
        delivered.iter().map(Vec::len).sum::<usize>()
    );
    let rejected = rejected.load(Ordering::SeqCst);
    if quit_after.is_none() {
        assert_eq!(rejected, 0);
        // Without an early quit, every message not removed was delivered.
        assert_eq!(undelivered_total, removed);
    } else {
        assert!(undelivered_total >= removed + rejected);
    }
}

fn assert_no_leak() {
    // Retired nodes are freed once the epoch moves on; push it along.
    for _ in 0..10_000 {
        if live_node_count() == Some(0) {
            break;
        }
        crossbeam_epoch::pin().flush();
    }
    assert_eq!(live_node_count(), Some(0), "DeliQueue nodes leaked");
}

#[test]
fn posters_and_removers_against_one_looper() {
    let _census = CENSUS.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..rounds() {
        round(5_000, None);
    }
    assert_no_leak();
}

#[test]
fn quit_in_the_middle_of_traffic() {
    let _census = CENSUS.lock().unwrap_or_else(|e| e.into_inner());
    for r in 0..rounds() {
        round(5_000, Some(1_000 + r * 500));
    }
    assert_no_leak();
}
