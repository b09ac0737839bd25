//! Sharing an eager restore's prefaulting between two threads: the restoring thread
//! and a helper each take the next batch whose pages no one has prefaulted yet, so
//! neither waits while the other works. A batch may be taken only once its memory is
//! reserved ([`Prefaults::reserve_one`]), which the restoring thread does a few batches
//! ahead of the one it reads.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Which batches of a restore are taken, reserved and prefaulted.
#[derive(Debug)]
pub(crate) struct Prefaults {
    /// The first batch no one has taken (batches are taken in order).
    next: AtomicUsize,
    /// How many batches, from the first, have their memory reserved.
    reserved: AtomicUsize,
    /// Per batch: its pages are prefaulted.
    done: Vec<AtomicBool>,
    /// The restore is over: the helper takes nothing more.
    stopped: AtomicBool,
}

impl Prefaults {
    /// `batches` batches, none reserved or taken.
    pub(crate) fn new(batches: usize) -> Prefaults {
        Prefaults {
            next: AtomicUsize::new(0),
            reserved: AtomicUsize::new(0),
            done: (0..batches).map(|_| AtomicBool::new(false)).collect(),
            stopped: AtomicBool::new(false),
        }
    }

    /// How many batches have their memory reserved.
    pub(crate) fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }

    /// The next batch's memory is reserved: it may be taken.
    pub(crate) fn reserve_one(&self) {
        // Release: pairs with the Acquire in `claim`, so a batch is taken only after its
        // reservation.
        self.reserved.fetch_add(1, Ordering::Release);
    }

    /// Takes the next batch if its memory is reserved.
    pub(crate) fn claim(&self) -> Option<usize> {
        let mut j = self.next.load(Ordering::Relaxed);
        loop {
            if j >= self.reserved.load(Ordering::Acquire) {
                return None;
            }
            match self
                .next
                .compare_exchange_weak(j, j + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(j),
                Err(now) => j = now,
            }
        }
    }

    /// For the helper: the next batch, waiting (parked, woken by the restoring thread
    /// or after a millisecond) while none is reserved; `None` once every batch is taken
    /// or the restore is over.
    pub(crate) fn claim_or_wait(&self) -> Option<usize> {
        loop {
            if self.stopped.load(Ordering::Relaxed)
                || self.next.load(Ordering::Relaxed) >= self.done.len()
            {
                return None;
            }
            if let Some(j) = self.claim() {
                return Some(j);
            }
            std::thread::park_timeout(Duration::from_millis(1));
        }
    }

    /// Batch `j`'s pages are prefaulted.
    pub(crate) fn done(&self, j: usize) {
        // Release: pairs with the Acquire in `is_done` (the pages are only a speed-up:
        // no byte depends on it).
        self.done[j].store(true, Ordering::Release);
    }

    /// Whether batch `k`'s pages are prefaulted.
    pub(crate) fn is_done(&self, k: usize) -> bool {
        self.done[k].load(Ordering::Acquire)
    }

    /// The restore is over.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_taken_once_in_order_and_only_when_reserved() {
        let p = Prefaults::new(3);
        assert_eq!(p.claim(), None, "nothing reserved");
        p.reserve_one();
        p.reserve_one();
        assert_eq!(p.claim(), Some(0));
        assert_eq!(p.claim(), Some(1));
        assert_eq!(p.claim(), None);
        p.reserve_one();
        assert_eq!(p.claim_or_wait(), Some(2));
        assert_eq!(p.claim_or_wait(), None, "every batch taken");
        assert!(!p.is_done(1));
        p.done(1);
        assert!(p.is_done(1));
    }

    #[test]
    fn two_threads_take_every_batch_exactly_once() {
        let p = Prefaults::new(1000);
        for _ in 0..1000 {
            p.reserve_one();
        }
        let taken: Vec<Vec<usize>> = std::thread::scope(|s| {
            let a = s.spawn(|| std::iter::from_fn(|| p.claim()).collect());
            let b = s.spawn(|| std::iter::from_fn(|| p.claim()).collect());
            vec![a.join().unwrap(), b.join().unwrap()]
        });
        let mut all: Vec<usize> = taken.concat();
        all.sort_unstable();
        assert_eq!(all, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_stopped_restore_gives_the_helper_nothing() {
        let p = Prefaults::new(4);
        p.reserve_one();
        p.stop();
        assert_eq!(p.claim_or_wait(), None);
    }
}
