//! The timed scenarios of `marvin bench queue`, each over DeliQueue or the legacy queue
//! (made by [`Make`]): posters into a polling looper, enqueue and remove, insertion into
//! a busy queue, and FIFO through the queues and the channels they are compared with.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use marvin_deliqueue::{
    Clock, DeliQueue, LegacyQueue, Message, MessageQueue, MonotonicClock, Next, VirtualClock,
};
use rand::Rng;

use super::super::{median, rounds, stream_rng, Sample, ROUND_RATIO};

/// One sample per implementation of `scenario` from its per-round figures
/// (`figures[i][r]`, ns, as [`rounds::interleaved`] returns them): the median over the
/// rounds, [`ROUND_RATIO`] (the median of the per-round ratios to the implementation
/// at `base`) and the rounds' figures and ratios (`round_ns`, `round_ratios`).
pub(super) fn round_samples(
    scenario: &str,
    names: &[&str],
    figures: &[Vec<f64>],
    base: usize,
) -> Vec<Sample> {
    names
        .iter()
        .zip(figures)
        .map(|(name, own)| {
            let ratios = rounds::ratios(own, &figures[base]);
            Sample::new(scenario, *name, median(&mut own.clone()))
                .with(ROUND_RATIO, median(&mut ratios.clone()))
                .with("round_ratios", ratios)
                .with("round_ns", own.clone())
                .with("reps", own.len())
        })
        .collect()
}

pub(super) const SECOND: u64 = 1_000_000_000;

/// Makes a fresh queue of one implementation on a given clock.
pub trait Make<C: Clock + Clone>: Copy + Send + 'static {
    type Queue: MessageQueue<u64> + 'static;
    fn make(self, clock: C) -> Arc<Self::Queue>;
}

/// DeliQueue.
#[derive(Clone, Copy)]
pub struct Deli;
/// The legacy queue.
#[derive(Clone, Copy)]
pub struct Legacy;

impl<C: Clock + Clone> Make<C> for Deli {
    type Queue = DeliQueue<u64, C>;
    fn make(self, clock: C) -> Arc<Self::Queue> {
        Arc::new(DeliQueue::with_clock(clock))
    }
}

impl<C: Clock + Clone> Make<C> for Legacy {
    type Queue = LegacyQueue<u64, C>;
    fn make(self, clock: C) -> Arc<Self::Queue> {
        Arc::new(LegacyQueue::with_clock(clock))
    }
}

/// Starts a looper that polls `next` (delivering what is due), releases the `workers`
/// waiting at `start_line`, and returns the time from their release until every worker
/// is done and the looper, told to stop, has drained the queue.
pub(super) fn time_with_looper<Q: MessageQueue<u64> + 'static>(
    queue: &Arc<Q>,
    start_line: &Barrier,
    workers: Vec<thread::JoinHandle<()>>,
) -> Duration {
    let stop = Arc::new(AtomicBool::new(false));
    let looper = {
        let (queue, stop) = (queue.clone(), stop.clone());
        thread::spawn(move || loop {
            let stopping = stop.load(Ordering::Acquire);
            match queue.next() {
                Next::Message { .. } => {}
                _ if stopping => return,
                _ => thread::yield_now(),
            }
        })
    };
    start_line.wait();
    let t = Instant::now();
    for worker in workers {
        worker.join().expect("worker");
    }
    stop.store(true, Ordering::Release);
    looper.join().expect("looper");
    t.elapsed()
}

/// `posters` threads post `per` messages each with due times from `due`; a polling
/// looper runs alongside. Returns the time until every post is done and taken in.
pub(super) fn post_with_looper<M: Make<VirtualClock>>(
    make: M,
    posters: usize,
    per: usize,
    due: fn(&mut rand::rngs::StdRng, u64) -> u64,
    seed: u64,
) -> Duration {
    let clock = VirtualClock::new(1);
    let queue = make.make(clock);
    let start_line = Arc::new(Barrier::new(posters + 1));
    let threads: Vec<_> = (0..posters)
        .map(|p| {
            let (queue, start_line) = (queue.clone(), start_line.clone());
            thread::spawn(move || {
                let mut rng = stream_rng(seed, 0, p as u64);
                start_line.wait();
                for i in 0..per {
                    let when = due(&mut rng, queue.now());
                    let _ = queue.post_at(when, Message::new(p as u64, (i % 100) as i64, 0));
                }
            })
        })
        .collect();
    time_with_looper(&queue, &start_line, threads)
}

pub(super) fn immediate(_: &mut rand::rngs::StdRng, now: u64) -> u64 {
    now
}

pub(super) fn up_to_5s(rng: &mut rand::rngs::StdRng, now: u64) -> u64 {
    now + rng.gen_range(0..5 * SECOND)
}

/// The due-time offsets (0-5 s, in ns) that poster `poster` draws, `count` of them, in
/// the delayed scenarios of a run with `--seed seed`: the same in every repetition, so
/// each repetition does the same work.
pub fn delay_plan(seed: u64, poster: u64, count: usize) -> Vec<u64> {
    let mut rng = stream_rng(seed, 0, poster);
    (0..count).map(|_| up_to_5s(&mut rng, 0)).collect()
}

pub(super) fn concurrent_enqueue_remove<M: Make<VirtualClock>>(make: M, seed: u64) -> Duration {
    let queue = make.make(VirtualClock::new(1));
    let start_line = Arc::new(Barrier::new(9));
    let mut threads = Vec::new();
    for p in 0..4u64 {
        let (queue, start_line) = (queue.clone(), start_line.clone());
        threads.push(thread::spawn(move || {
            let mut rng = stream_rng(seed, 0, p);
            start_line.wait();
            for i in 0..1_000 {
                let when = up_to_5s(&mut rng, queue.now()) + 1;
                let _ = queue.post_at(when, Message::new(p, i % 8, 0));
            }
        }));
    }
    for r in 0..4i64 {
        let (queue, start_line) = (queue.clone(), start_line.clone());
        threads.push(thread::spawn(move || {
            start_line.wait();
            for i in 0..250 {
                queue.remove(&|k| k.what == (r + i) % 8);
            }
        }));
    }
    time_with_looper(&queue, &start_line, threads)
}

pub(super) fn single_thread_enqueue_remove<M: Make<VirtualClock>>(make: M, seed: u64) -> Duration {
    let queue = make.make(VirtualClock::new(1));
    let mut rng = stream_rng(seed, 0, 0);
    let t = Instant::now();
    for i in 0..10_000 {
        let when = up_to_5s(&mut rng, queue.now()) + 1;
        let _ = queue.post_at(when, Message::new(0, i % 100, 0));
    }
    for what in 0..100 {
        queue.remove(&|k| k.what == what);
    }
    // DeliQueue's looper reclaims the tombstones: part of the cost.
    let _ = queue.next();
    t.elapsed()
}

/// A queue holding `pending` delayed messages, already taken in by the looper.
pub(super) fn busy_queue<M: Make<VirtualClock>>(make: M, pending: u64) -> Arc<M::Queue> {
    let queue = make.make(VirtualClock::new(1));
    // Descending due times: each legacy insertion lands at the head (setup stays cheap).
    for i in (0..pending).rev() {
        let when = SECOND + i * (5 * SECOND / pending);
        let _ = queue.post_at(when, Message::new(0, 0, i));
    }
    let _ = queue.next();
    queue
}

/// What `busy_insert` measured: the posters' time and the looper's take-in after.
pub(super) struct BusyTimes {
    pub(super) posting: Duration,
    pub(super) take_in: Duration,
}

/// 8 threads post 250 messages each into a busy queue. Each poster times its own
/// posting loop (from its first post to its last returning, after the start line), so
/// thread start-up, wake-up and join are not counted; `posting` is the sum over the
/// posters (the time posting threads spent inserting, waiting for the lock included).
/// The looper's take-in of the new messages (DeliQueue's sweep into its heap; a no-op
/// pop for the legacy queue, whose posters did the ordering) is timed separately.
pub(super) fn busy_insert<M: Make<VirtualClock>>(queue: Arc<M::Queue>, seed: u64) -> BusyTimes {
    let start_line = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8u64)
        .map(|p| {
            let (queue, start_line) = (queue.clone(), start_line.clone());
            thread::spawn(move || {
                let whens: Vec<u64> = delay_plan(seed, p, 250)
                    .into_iter()
                    .map(|offset| SECOND + offset)
                    .collect();
                start_line.wait();
                let t = Instant::now();
                for when in whens {
                    let _ = queue.post_at(when, Message::new(p, 1, 0));
                }
                t.elapsed()
            })
        })
        .collect();
    let posting = threads
        .into_iter()
        .map(|th| th.join().expect("poster"))
        .sum();
    let t = Instant::now();
    let _ = queue.next(); // the looper takes the new messages in
    let take_in = t.elapsed();
    // Dropping 10^5 messages is not part of the measurement.
    thread::spawn(move || drop(queue));
    BusyTimes { posting, take_in }
}

/// Busy-queue insertion into DeliQueue and the legacy queue, in interleaved rounds: the
/// median posting time, with the median take-in as an extra field.
pub(super) fn busy_samples(reps: usize, seed: u64) -> Vec<Sample> {
    let times = rounds::interleaved(2, reps, |i| -> Result<BusyTimes, ()> {
        Ok(match i {
            0 => busy_insert::<Deli>(busy_queue(Deli, BUSY_PENDING), seed),
            _ => busy_insert::<Legacy>(busy_queue(Legacy, BUSY_PENDING), seed),
        })
    })
    .unwrap_or_else(|()| unreachable!("busy-queue runs do not fail"));
    let posting: Vec<Vec<f64>> = times
        .iter()
        .map(|own| own.iter().map(|t| t.posting.as_nanos() as f64).collect())
        .collect();
    round_samples(BUSY, &["deliqueue", "legacy"], &posting, 1)
        .into_iter()
        .zip(&times)
        .map(|(sample, own)| {
            let mut take_in: Vec<f64> = own.iter().map(|t| t.take_in.as_nanos() as f64).collect();
            sample.with("take_in_ns", median(&mut take_in))
        })
        .collect()
}

/// Pending messages in the busy queue before the timed insertion.
pub(super) const BUSY_PENDING: u64 = 100_000;
pub(super) const BUSY: &str = "busy queue insert (1e5 pending)";

pub(super) const FIFO_COUNT: u64 = 100_000;
pub(super) const FIFO: &str = "fifo 1x100000";
/// The FIFO sample's extra figure: the median over the rounds of DeliQueue's time over
/// crossbeam-channel's in the same round.
pub(super) const ROUND_RATIO_CROSSBEAM: &str = "round_ratio_crossbeam";

/// One timed FIFO run of one implementation.
pub(super) type FifoRun = fn() -> Duration;

/// One timed run of a scenario on DeliQueue (`true`) or the legacy queue, with `--seed`.
pub(super) type BothRun = fn(bool, u64) -> Duration;

pub(super) fn fifo_queue<M: Make<MonotonicClock>>(make: M) -> Duration {
    let queue = make.make(MonotonicClock::new());
    let t = Instant::now();
    let poster = {
        let queue = queue.clone();
        thread::spawn(move || {
            for i in 0..FIFO_COUNT {
                let _ = queue.post(Message::new(0, 0, i));
            }
        })
    };
    let mut expected = 0;
    while expected < FIFO_COUNT {
        match queue.next() {
            Next::Message { message, .. } => {
                assert_eq!(message.payload, expected, "FIFO order");
                expected += 1;
            }
            Next::Idle => queue.wait(),
            Next::Quit => unreachable!("nobody quits"),
        }
    }
    let elapsed = t.elapsed();
    poster.join().expect("poster");
    elapsed
}

/// `FIFO_COUNT` messages from one poster thread through a channel: `send` on the poster's
/// end, `recv` (one message) on this thread's.
pub(super) fn fifo_channel<Tx: Send + 'static>(
    tx: Tx,
    send: fn(&Tx, u64),
    mut recv: impl FnMut(),
) -> Duration {
    let t = Instant::now();
    let poster = thread::spawn(move || {
        for i in 0..FIFO_COUNT {
            send(&tx, i);
        }
    });
    for _ in 0..FIFO_COUNT {
        recv();
    }
    let elapsed = t.elapsed();
    poster.join().expect("poster");
    elapsed
}

pub(super) fn fifo_crossbeam() -> Duration {
    let (tx, rx) = crossbeam_channel::unbounded::<u64>();
    fifo_channel(
        tx,
        |tx, i| {
            let _ = tx.send(i);
        },
        || {
            rx.recv().expect("message");
        },
    )
}

pub(super) fn fifo_mpsc() -> Duration {
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    fifo_channel(
        tx,
        |tx, i| {
            let _ = tx.send(i);
        },
        || {
            rx.recv().expect("message");
        },
    )
}
