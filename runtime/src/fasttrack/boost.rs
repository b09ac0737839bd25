//! Boost bookkeeping: which holders are boosted, for which locks, from which priority of
//! their own; the paths that boost them (a latency-critical thread blocking, a known
//! blocker acquiring) and the path that gives their priority back (a release).

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::Ordering;

use super::{is_latency_critical, Event, FastTracker, LockKey, Mode};

/// A boosted holder: its own nice value, the boost it has, and the locks it was boosted for.
struct Boost {
    saved_nice: i32,
    nice: i32,
    locks: Vec<LockKey>,
}

/// The tracker's record of boosted holders.
#[derive(Default)]
pub(super) struct Boosts {
    holders: HashMap<i32, Boost>,
    /// Holders whose boost is being undone outside this mutex, with their own nice value:
    /// a boost made meanwhile starts from that value and is re-applied after the restore.
    restoring: HashMap<i32, i32>,
}

impl FastTracker {
    /// Whether `holder_tid` is boosted now.
    pub fn is_boosted(&self, holder_tid: i32) -> bool {
        self.boosted.lock().holders.contains_key(&holder_tid)
    }

    /// The calling thread, latency-critical, with OS thread id `waiter_tid`, is about to
    /// wait for `lock`, held by `holders` (tids; non-positive ones are ignored). Does nothing
    /// unless the calling thread is latency-critical and the mode is not `Off`.
    pub fn on_block(&self, lock: LockKey, waiter_tid: i32, holders: &[i32]) {
        if self.mode == Mode::Off || !is_latency_critical() {
            return;
        }
        let (events, _) = self.overhead(|| {
            self.counters.blocks.fetch_add(1, Ordering::Relaxed);
            let target = match self.mode {
                Mode::Inherit => self.priorities.nice_of(waiter_tid).unwrap_or(0),
                _ => self.fast_nice,
            };
            let mut events = Vec::new();
            let blockers = || {
                holders
                    .iter()
                    .copied()
                    .filter(|&t| t > 0 && t != waiter_tid)
            };
            {
                let mut boosted = self.boosted.lock();
                for holder in blockers() {
                    self.boost_one(
                        &mut boosted,
                        lock,
                        (holder, waiter_tid),
                        target,
                        false,
                        &mut events,
                    );
                }
            }
            if self.mode == Mode::FastTrack {
                let now = (self.clock)();
                for holder in blockers() {
                    self.known.remember(lock, holder, waiter_tid, now);
                }
            }
            events
        });
        self.report(&events);
    }

    /// Boosts `holder` to `target` for `lock` on behalf of `waiter_tid` (`sticky`: on its
    /// acquisition, as a known blocker).
    fn boost_one(
        &self,
        boosts: &mut Boosts,
        lock: LockKey,
        (holder, waiter_tid): (i32, i32),
        target: i32,
        sticky: bool,
        events: &mut Vec<Event>,
    ) {
        let boosted = &mut boosts.holders;
        let current = match (boosted.get(&holder), boosts.restoring.get(&holder)) {
            (Some(b), _) => b.nice,
            // Its restore is under way: its own priority is what it is going back to.
            (None, Some(&own)) => own,
            (None, None) => match self.priorities.nice_of(holder) {
                Ok(n) => n,
                // The holder is gone (it exited): nothing to boost.
                Err(_) => return,
            },
        };
        if current > target {
            if let Err(e) = self.priorities.set_nice(holder, target) {
                self.counters.denied.fetch_add(1, Ordering::Relaxed);
                if !self.warned.swap(true, Ordering::Relaxed) {
                    // Not eprintln!, which panics when stderr cannot be written.
                    let _ = writeln!(
                        std::io::stderr(),
                        "warning: cannot raise a lock holder's priority ({e}); fast-tracking \
                         needs CAP_SYS_NICE or RLIMIT_NICE, continuing without it"
                    );
                }
                events.push(Event::Denied {
                    holder_tid: holder,
                    error: e.to_string(),
                });
                return;
            }
            self.counters.boosts.fetch_add(1, Ordering::Relaxed);
            if sticky {
                self.counters.sticky_boosts.fetch_add(1, Ordering::Relaxed);
            }
            events.push(Event::Boost {
                lock,
                holder_tid: holder,
                waiter_tid,
                from_nice: current,
                to_nice: target,
                sticky,
            });
        } else if !boosted.contains_key(&holder) {
            // Already at least as strong as the boost: nothing to undo later.
            return;
        }
        let entry = boosted.entry(holder).or_insert_with(|| {
            // Relaxed: read under the same lock-state mutex by `on_release` (module doc).
            self.active.fetch_add(1, Ordering::Relaxed);
            Boost {
                saved_nice: current,
                nice: current,
                locks: Vec::new(),
            }
        });
        entry.nice = entry.nice.min(target);
        if !entry.locks.contains(&lock) {
            entry.locks.push(lock);
        }
    }

    /// The calling thread, OS thread id `tid`, has just acquired `lock` (the first level of
    /// a re-entrant lock). In [`Mode::FastTrack`], if it is a known blocker of `lock` (module
    /// doc), it is boosted at once until it releases `lock`. Call it from the acquiring
    /// thread itself, after the lock's internal mutex is released, so that its own
    /// [`FastTracker::on_release`] follows it.
    #[inline]
    pub fn on_acquire(&self, lock: LockKey, tid: i32) {
        if self.mode != Mode::FastTrack || tid <= 0 || !self.known.may_know(tid) {
            return;
        }
        self.acquire_slow(lock, tid);
    }

    #[cold]
    fn acquire_slow(&self, lock: LockKey, tid: i32) {
        let (events, _) = self.overhead(|| {
            let mut events = Vec::new();
            if let Some(waiter_tid) = self.known.lookup(lock, tid, (self.clock)()) {
                let mut boosted = self.boosted.lock();
                self.boost_one(
                    &mut boosted,
                    lock,
                    (tid, waiter_tid),
                    self.fast_nice,
                    true,
                    &mut events,
                );
            }
            events
        });
        self.report(&events);
    }

    /// `holder_tid` released `lock`: if it was boosted for it and holds no other lock it was
    /// boosted for, its own priority comes back.
    #[inline]
    pub fn on_release(&self, lock: LockKey, holder_tid: i32) {
        // Relaxed: see the ordering contract in the module doc.
        if self.active.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.release_slow(Some(lock), holder_tid);
    }

    /// `holder_tid` released every lock (it is ending): undo any boost it has.
    pub fn on_release_all(&self, holder_tid: i32) {
        if self.active.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.release_slow(None, holder_tid);
    }

    /// Undoes a boost. The priority is lowered outside every lock: lowering the calling
    /// thread's own priority lets the scheduler preempt it at once, and a low-priority thread
    /// preempted inside a lock is the inversion this module exists to avoid. A boost of the
    /// same thread made while the restore is under way (for another lock it holds) starts
    /// from its own priority and is re-applied after the restore.
    #[cold]
    fn release_slow(&self, lock: Option<LockKey>, holder_tid: i32) {
        let (events, _) = self.overhead(|| {
            let mut events = Vec::new();
            let restore = {
                let mut boosts = self.boosted.lock();
                let boosted = &mut boosts.holders;
                let done = match boosted.get_mut(&holder_tid) {
                    None => false,
                    Some(b) => {
                        match lock {
                            Some(l) => b.locks.retain(|k| *k != l),
                            None => b.locks.clear(),
                        }
                        b.locks.is_empty()
                    }
                };
                if done {
                    let b = boosted.remove(&holder_tid).expect("present");
                    self.active.fetch_sub(1, Ordering::Relaxed);
                    boosts.restoring.insert(holder_tid, b.saved_nice);
                    Some(b.saved_nice)
                } else {
                    None
                }
            };
            if let Some(own) = restore {
                // Lowering a priority back needs no privilege; a failure means the thread is
                // gone.
                let restored = self.priorities.set_nice(holder_tid, own).is_ok();
                let mut boosts = self.boosted.lock();
                boosts.restoring.remove(&holder_tid);
                if let Some(again) = boosts.holders.get(&holder_tid) {
                    // Boosted again meanwhile: raising needs no preemption, so under the lock.
                    let _ = self.priorities.set_nice(holder_tid, again.nice);
                } else if restored {
                    self.counters.restores.fetch_add(1, Ordering::Relaxed);
                    events.push(Event::Restore {
                        holder_tid,
                        nice: own,
                    });
                }
            }
            events
        });
        self.report(&events);
    }
}
