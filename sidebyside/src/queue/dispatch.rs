//! The dispatch-delay scenario of `marvin bench queue`: eight busy background posters
//! and a looper under a looper policy, every message's delay after its due time.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use marvin_deliqueue::{Message, MessageQueue, MonotonicClock, Next};
use rand::Rng;

use super::super::sched::{as_background_thread, Grouping, LooperPolicy};
use super::super::stream_rng;
use super::scenarios::Make;

pub(super) const DISPATCH_PER_POSTER: usize = 2_500;

/// Dispatch delays (ns) of 8 busy posters' messages: each posts
/// [`DISPATCH_PER_POSTER`] messages due 0-2 ms ahead, pausing briefly between posts;
/// the looper runs until it has delivered all of them, so both queues do the same work.
/// With `grouping`, the posters run in its background group and the looper (under the
/// grouped policy) in its top-app group.
pub(super) fn dispatch_delays<M: Make<MonotonicClock>>(
    make: M,
    policy: LooperPolicy,
    grouping: Option<&Arc<Grouping>>,
    seed: u64,
) -> Result<Vec<f64>, String> {
    let queue = make.make(MonotonicClock::new());
    // The posters start together once the looper is about to loop: otherwise the first
    // messages wait for the benchmark thread to finish starting threads, which measures
    // thread start-up, not dispatch. They wait by yielding, not sleeping, so that the
    // looper starts running rather than being woken among eight woken posters. And the
    // looper starts them only once every one has placed itself (nice 10, or the
    // background group): a new thread first runs at the priority it inherited (the
    // benchmark's, often raised), and the slice it was picked with there runs to the
    // next tick with the woken looper waiting behind it, one new poster after another,
    // which measures thread start-up again (see docs/benchmarks.md).
    let go = Arc::new(AtomicBool::new(false));
    let placed_count = Arc::new(AtomicUsize::new(0));
    let posters: Vec<_> = (0..8u64)
        .map(|p| {
            let (queue, go, grouping) = (queue.clone(), go.clone(), grouping.cloned());
            let placed_count = placed_count.clone();
            thread::spawn(move || -> Result<(), String> {
                let placed = match &grouping {
                    Some(grouping) => grouping.join_background(),
                    None => {
                        as_background_thread();
                        Ok(())
                    }
                };
                // Release: pairs with the looper's Acquire load (a count, nothing more).
                placed_count.fetch_add(1, Ordering::Release);
                // Acquire: pairs with the looper's Release store.
                while !go.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                // A poster that could not be placed still posts (the looper counts on
                // every message), and the run reports the failure.
                let mut rng = stream_rng(seed, 0, p);
                for _ in 0..DISPATCH_PER_POSTER {
                    let delay = Duration::from_micros(rng.gen_range(0..2_000));
                    let _ = queue.post_delayed(delay, Message::new(p, 0, 0));
                    // Busy, not flooding: a short pause between posts.
                    for _ in 0..200 {
                        std::hint::spin_loop();
                    }
                }
                placed
            })
        })
        .collect();
    let join_posters = |posters: Vec<thread::JoinHandle<Result<(), String>>>| {
        // Every poster is joined before the first failure is reported.
        let results: Vec<Result<(), String>> = posters
            .into_iter()
            .map(|p| p.join().expect("poster"))
            .collect();
        results.into_iter().find(Result::is_err).unwrap_or(Ok(()))
    };
    let total = 8 * DISPATCH_PER_POSTER;
    // Touched before the start, so that recording a delay never faults a page in.
    let mut delays = vec![0.0; total];
    delays.clear();
    let applied = policy.apply(grouping.map(|g| &**g));
    wait_until_placed(&placed_count, &posters);
    // Release: the posters start.
    go.store(true, Ordering::Release);
    let applied = match applied {
        Ok(applied) => applied,
        Err(e) => {
            // Let the posters run to the end, then report.
            drop(queue);
            let _ = join_posters(posters);
            return Err(e);
        }
    };
    while delays.len() < total {
        match queue.next() {
            Next::Message { when, .. } => {
                delays.push(queue.now().saturating_sub(when) as f64);
            }
            Next::Idle => queue.wait(),
            Next::Quit => break,
        }
    }
    drop(applied);
    join_posters(posters)?;
    queue.quit();
    Ok(delays)
}

/// Yields until every one of `posters` has counted itself in `placed` (or one has
/// ended, which leaves it uncounted for good).
pub(super) fn wait_until_placed<R>(placed: &AtomicUsize, posters: &[thread::JoinHandle<R>]) {
    // Acquire: pairs with the posters' Release increments.
    while placed.load(Ordering::Acquire) < posters.len() && !posters.iter().any(|p| p.is_finished())
    {
        thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The looper waits for every poster's placement, and a poster that ends without
    /// counting itself does not keep it waiting.
    #[test]
    fn posters_start_once_all_are_placed_or_one_is_gone() {
        let placed = Arc::new(AtomicUsize::new(0));
        let release = Arc::new(AtomicBool::new(false));
        let posters: Vec<_> = (0..4)
            .map(|_| {
                let (placed, release) = (placed.clone(), release.clone());
                thread::spawn(move || {
                    placed.fetch_add(1, Ordering::Release);
                    while !release.load(Ordering::Acquire) {
                        thread::yield_now();
                    }
                })
            })
            .collect();
        wait_until_placed(&placed, &posters);
        assert_eq!(
            placed.load(Ordering::Acquire),
            4,
            "returned before every placement"
        );
        release.store(true, Ordering::Release);
        posters.into_iter().for_each(|p| p.join().expect("poster"));

        // One poster never counts itself and ends: the wait returns all the same.
        let placed = AtomicUsize::new(0);
        let gone = vec![thread::spawn(|| ())];
        wait_until_placed(&placed, &gone);
        assert!(gone[0].is_finished());
        assert_eq!(placed.load(Ordering::Acquire), 0);
    }
}
