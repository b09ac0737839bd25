//! Object monitors: re-entrant locks on objects, as Java's `synchronized`.
//!
//! Monitors live in a side table keyed by handle, inflated on first use and removed
//! when released with no waiter, so objects carry no lock word. The table's handles are
//! roots for the collector: a locked object is never freed under its owner.
//!
//! Each monitor records its owner's OS thread id. With a [`FastTracker`] attached
//! ([`Monitors::with_fast_track`]), a latency-critical thread that blocks on a monitor
//! boosts the owner, and the owner's priority comes back when it releases the monitor.
//!
//! Each first-level acquisition is reported to the tracker ([`FastTracker::on_acquire`])
//! after the monitor's internal locks are released: a thread that blocked a latency-critical
//! thread on this monitor before (a known blocker) is boosted for the whole hold.
//!
//! Blocking, defined once for every fast-track mode: an entry that finds the monitor taken
//! ([`Monitors::try_enter`] fails) is *contended*; a contended entry that had to park on the
//! monitor's condition variable at least once is *blocked* ([`Entry::parked`]). Before
//! parking, a latency-critical waiter whose owner was just fast-tracked spins while that
//! owner runs ([`FastTracker::spin_on_holder`]); an entry that got the monitor in that spin
//! is contended, not blocked. With the tracker off nobody is boosted, so nobody spins.
//!
//! Wake-ups: a release wakes one waiter, or every waiter when a latency-critical thread is
//! among them, so that it re-checks at once: it takes the monitor if it wins, and if another
//! waiter won it fast-tracks the new owner instead of sleeping behind it unboosted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::fasttrack::{self, FastTracker, LockKey, SpinEnd};

/// A small integer naming the calling thread, unique for the life of the process.
pub fn thread_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! { static ID: u64 = NEXT.fetch_add(1, Ordering::Relaxed); }
    ID.with(|id| *id)
}

#[derive(Default)]
struct MonState {
    owner: u64,
    /// OS thread id of the owner, for contention reports and priority boosts.
    owner_tid: i32,
    count: u32,
    waiters: u32,
    /// Latency-critical threads among the waiters.
    critical_waiters: u32,
    /// Removed from the table: a thread that looked it up before the removal must look
    /// the object's monitor up again (it may be a new one).
    deflated: bool,
}

#[derive(Default)]
struct Monitor {
    state: Mutex<MonState>,
    cv: Condvar,
}

/// Who holds a contended monitor, as seen by a thread about to block on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Holder {
    pub owner: u64,
    pub owner_tid: i32,
    /// Threads already waiting for the monitor.
    pub waiters: u32,
}

/// How a blocking entry went (see the module doc for the definitions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// The thread parked on the monitor at least once: the entry was blocked.
    pub parked: bool,
    /// The thread spun on a fast-tracked owner at least once.
    pub spun: bool,
}

/// The monitors of one app.
pub struct Monitors {
    table: Mutex<HashMap<u64, Arc<Monitor>>>,
    /// This table's lock domain for the fast tracker.
    domain: u64,
    fast_track: Option<Arc<FastTracker>>,
}

impl Default for Monitors {
    fn default() -> Self {
        Monitors {
            table: Mutex::default(),
            domain: fasttrack::new_domain(),
            fast_track: None,
        }
    }
}

/// `monitorexit` of a monitor the thread does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("monitorexit of a monitor not held")]
pub struct NotHeld;

impl Monitors {
    pub fn new() -> Monitors {
        Monitors::default()
    }

    /// Monitors whose holders `tracker` boosts when a latency-critical thread waits.
    pub fn with_fast_track(tracker: Arc<FastTracker>) -> Monitors {
        Monitors {
            fast_track: Some(tracker),
            ..Monitors::default()
        }
    }

    /// The attached fast tracker, if any.
    pub fn fast_track(&self) -> Option<&Arc<FastTracker>> {
        self.fast_track.as_ref()
    }

    fn key(&self, obj: u64) -> LockKey {
        LockKey {
            domain: self.domain,
            id: obj,
        }
    }

    /// The monitor of `obj` in the table (inflated if absent). It may be deflated by the
    /// time its state is locked: callers check `deflated` and look it up again.
    fn live_monitor(&self, obj: u64) -> Arc<Monitor> {
        self.table.lock().entry(obj).or_default().clone()
    }

    /// Takes the monitor of `obj` if it is free or already ours; otherwise reports who
    /// holds it (the caller then blocks with [`Monitors::enter_blocking`]).
    pub fn try_enter(&self, obj: u64, me: u64, my_tid: i32) -> Result<(), Holder> {
        let m = self.live_monitor(obj);
        let mut st = m.state.lock();
        if st.deflated {
            drop(st);
            return self.try_enter(obj, me, my_tid);
        }
        if st.owner == 0 || st.owner == me {
            st.owner = me;
            st.owner_tid = my_tid;
            st.count += 1;
            let first = st.count == 1;
            drop(st);
            if first {
                self.acquired(obj, my_tid);
            }
            Ok(())
        } else {
            Err(Holder {
                owner: st.owner,
                owner_tid: st.owner_tid,
                waiters: st.waiters,
            })
        }
    }

    /// Takes the monitor of `obj`, waiting until it is free: spinning on a fast-tracked
    /// owner first when the caller is latency-critical, then parking.
    pub fn enter_blocking(&self, obj: u64, me: u64, my_tid: i32) -> Entry {
        let m = self.live_monitor(obj);
        let mut st = m.state.lock();
        if st.deflated {
            drop(st);
            return self.enter_blocking(obj, me, my_tid);
        }
        let critical = fasttrack::is_latency_critical();
        st.waiters += 1;
        st.critical_waiters += u32::from(critical);
        let tracker = self.fast_track.as_ref().filter(|_| critical);
        let mut entry = Entry::default();
        // The owner boosted last, so that a new owner (after a wake-up that lost the race)
        // is boosted too.
        let mut boosted = 0;
        while st.owner != 0 && st.owner != me {
            if let Some(ft) = tracker {
                if st.owner_tid != boosted {
                    let owner_tid = st.owner_tid;
                    // Under the state lock: `exit` restores under it (fasttrack's contract).
                    ft.on_block(self.key(obj), my_tid, &[owner_tid]);
                    boosted = owner_tid;
                    // Spin with the state lock released, so the owner can exit; the loop
                    // then re-checks under the lock.
                    let spin = MutexGuard::unlocked(&mut st, || {
                        ft.spin_on_holder(owner_tid, || m.state.lock().owner == 0)
                    });
                    entry.spun |= spin != SpinEnd::Skipped;
                    continue;
                }
            }
            entry.parked = true;
            m.cv.wait(&mut st);
        }
        st.waiters -= 1;
        st.critical_waiters -= u32::from(critical);
        st.owner = me;
        st.owner_tid = my_tid;
        st.count += 1;
        let first = st.count == 1;
        drop(st);
        if first {
            self.acquired(obj, my_tid);
        }
        entry
    }

    /// The calling thread has just taken the monitor of `obj` (first level): a known
    /// blocker is fast-tracked for its hold. Outside the internal locks; the caller's own
    /// `exit` follows it in program order, so the release sees the boost.
    fn acquired(&self, obj: u64, my_tid: i32) {
        if let Some(ft) = &self.fast_track {
            ft.on_acquire(self.key(obj), my_tid);
        }
    }

    /// Releases one level of the monitor of `obj`. A fast-tracked owner gets its own
    /// priority back after the monitor's internal locks are released, so that it is never
    /// preempted inside them (see `fasttrack`'s release path).
    pub fn exit(&self, obj: u64, me: u64) -> Result<(), NotHeld> {
        let released_tid = {
            let mut table = self.table.lock();
            let Some(m) = table.get(&obj).cloned() else {
                return Err(NotHeld);
            };
            let mut st = m.state.lock();
            if st.owner != me || st.count == 0 {
                return Err(NotHeld);
            }
            st.count -= 1;
            if st.count > 0 {
                return Ok(());
            }
            let tid = st.owner_tid;
            st.owner = 0;
            st.owner_tid = 0;
            if st.waiters == 0 {
                st.deflated = true;
                table.remove(&obj);
            } else if st.critical_waiters > 0 {
                m.cv.notify_all();
            } else {
                m.cv.notify_one();
            }
            tid
        };
        // After the state lock: a boost made under it before this release is visible here
        // (the lock orders it), and no boost for this monitor can follow (the owner is
        // cleared).
        if let Some(ft) = &self.fast_track {
            ft.on_release(self.key(obj), released_tid);
        }
        Ok(())
    }

    /// The handles of every monitor in use (held or waited on): roots for the collector.
    pub fn roots(&self, out: &mut Vec<u64>) {
        out.extend(self.table.lock().keys().copied());
    }

    /// Releases every monitor `me` holds (a thread that ends while holding monitors).
    pub fn release_all(&self, me: u64) {
        let mut released_tid = None;
        self.table.lock().retain(|_, m| {
            let mut st = m.state.lock();
            if st.owner == me {
                released_tid = Some(st.owner_tid);
                st.owner = 0;
                st.owner_tid = 0;
                st.count = 0;
                m.cv.notify_all();
            }
            let keep = st.owner != 0 || st.waiters != 0;
            st.deflated = !keep;
            keep
        });
        // Outside the locks, as in `exit`.
        if let (Some(ft), Some(tid)) = (&self.fast_track, released_tid) {
            ft.on_release_all(tid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitors_are_reentrant_and_exit_checks_the_owner() {
        let m = Monitors::new();
        m.try_enter(5, 1, 0).unwrap();
        m.try_enter(5, 1, 0).unwrap();
        assert_eq!(
            m.try_enter(5, 2, 0),
            Err(Holder {
                owner: 1,
                owner_tid: 0,
                waiters: 0,
            })
        );
        assert_eq!(m.exit(5, 2), Err(NotHeld));
        m.exit(5, 1).unwrap();
        assert!(m.try_enter(5, 2, 0).is_err(), "still held once");
        m.exit(5, 1).unwrap();
        assert_eq!(m.exit(5, 1), Err(NotHeld));
        m.try_enter(5, 2, 0).unwrap();
    }

    #[test]
    fn a_blocked_thread_gets_the_monitor_when_released() {
        let m = Arc::new(Monitors::new());
        m.try_enter(9, 1, 0).unwrap();
        let m2 = m.clone();
        let t = std::thread::spawn(move || {
            m2.enter_blocking(9, 2, 0);
            m2.exit(9, 2).unwrap();
        });
        std::thread::sleep(std::time::Duration::from_millis(10));
        m.exit(9, 1).unwrap();
        t.join().unwrap();
        let mut roots = Vec::new();
        m.roots(&mut roots);
        assert!(roots.is_empty(), "released monitors deflate");
    }

    /// A monitor deflated (removed from the table) between another thread's lookup and its
    /// lock must not let two threads in, nor strand a waiter on the removed monitor.
    #[test]
    fn deflation_races_keep_mutual_exclusion_and_wake_waiters() {
        use std::sync::atomic::AtomicU32;
        let m = Arc::new(Monitors::new());
        let inside = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (1..=4u64)
            .map(|me| {
                let (m, inside) = (m.clone(), inside.clone());
                std::thread::spawn(move || {
                    for i in 0..20_000 {
                        // Half the entries go straight to the blocking path.
                        if i % 2 == 0 || m.try_enter(3, me, 0).is_err() {
                            m.enter_blocking(3, me, 0);
                        }
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two owners");
                        inside.fetch_sub(1, Ordering::SeqCst);
                        m.exit(3, me).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut roots = Vec::new();
        m.roots(&mut roots);
        assert!(roots.is_empty());
    }
}
