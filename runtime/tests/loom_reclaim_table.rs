//! Model-checks the reclaim-table entry lock with loom:
//! `RUSTFLAGS="--cfg loom" cargo test -p marvin-runtime --test loom_reclaim_table --release`.
//!
//! The lock's source, `src/reclaim_table/lock.rs`, is compiled into this test a second time,
//! with its atomics taken from `marvin-sync` (loom's under `cfg(loom)`) rather than from
//! `std` as in the library: the library itself does not change under loom (its mapped table
//! needs `std`'s fixed-size atomics), and the model still checks the very code it ships.
//!
//! Mutual exclusion is checked by loom itself: both sides write one `UnsafeCell` (loom's)
//! inside their critical sections, and loom reports any pair of such writes that is not
//! ordered by happens-before. The reclaimer never loops, so a model in which it waited on the
//! app thread could not complete.
#![cfg(loom)]

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use marvin_sync::cell::UnsafeCell;
use marvin_sync::{thread, Arc};

/// What `lock.rs` is built from: `marvin-sync`'s atomics, loom's in this build.
mod atomics {
    pub(super) use marvin_sync::atomic::{fence, AtomicU32, Ordering};
    pub(super) use marvin_sync::spin_hint;
}

/// The entry lock, compiled against [`atomics`]. (Not every flag operation is modelled.)
#[allow(dead_code)]
#[path = "../src/reclaim_table/lock.rs"]
mod lock;

use lock::{EntryFlags, EntryLock};

/// An entry lock and a location both sides write under it.
struct Guarded {
    lock: EntryLock,
    owner: UnsafeCell<&'static str>,
}

impl Guarded {
    fn new() -> Arc<Guarded> {
        Arc::new(Guarded {
            lock: EntryLock::new(),
            owner: UnsafeCell::new("none"),
        })
    }

    fn write(&self, who: &'static str) {
        // SAFETY (of the model): loom panics here if another access is concurrent with this one.
        self.owner.with_mut(|p| unsafe { *p = who });
    }
}

/// One access by the app thread.
fn app_access(g: &Guarded) {
    g.lock.lock_shared();
    // (The reclaimer's bit may be set here: a reclaimer that set it, is about to see our count
    // and back off. What matters is that it is not inside, which the cell checks.)
    g.write("app");
    g.lock.unlock_shared();
}

/// Returns whether the reclaimer got the lock.
fn reclaimer_try(g: &Guarded) -> bool {
    if !g.lock.try_lock_reclaimer() {
        return false;
    }
    // (The counter may be non-zero here: an app thread that incremented it, saw our bit and is
    // about to back off. What matters is that no app thread is inside, which the cell checks.)
    g.write("reclaimer");
    g.lock.unlock_reclaimer();
    true
}

#[test]
fn one_app_thread_against_one_reclaimer() {
    static WON: AtomicUsize = AtomicUsize::new(0);
    static LOST: AtomicUsize = AtomicUsize::new(0);
    loom::model(|| {
        let g = Guarded::new();
        let app = {
            let g = g.clone();
            thread::spawn(move || {
                app_access(&g);
                app_access(&g);
            })
        };
        if reclaimer_try(&g) {
            WON.fetch_add(1, Relaxed)
        } else {
            LOST.fetch_add(1, Relaxed)
        };
        app.join().unwrap();
        // With the app thread gone, the reclaimer always gets in at once.
        assert!(reclaimer_try(&g));
        assert_eq!(g.lock.shared_count(), 0);
        assert!(!g.lock.flags().contains(EntryFlags::RECLAIMER_LOCK));
    });
    // The model explored both outcomes: the reclaimer got in, and it gave up.
    assert!(WON.load(Relaxed) > 0 && LOST.load(Relaxed) > 0);
}

#[test]
fn two_reclaimers_never_share_the_lock() {
    loom::model(|| {
        let g = Guarded::new();
        let other = {
            let g = g.clone();
            thread::spawn(move || reclaimer_try(&g))
        };
        let mine = reclaimer_try(&g);
        let theirs = other.join().unwrap();
        assert!(
            mine || theirs,
            "with no app thread, a reclaimer always gets in"
        );
        assert!(!g.lock.flags().contains(EntryFlags::RECLAIMER_LOCK));
    });
}

/// One read-ahead access by an app thread that must not wait: returns whether it got in.
fn app_try_access(g: &Guarded) -> bool {
    if !g.lock.try_lock_shared() {
        return false;
    }
    g.write("app");
    g.lock.unlock_shared();
    true
}

#[test]
fn a_non_waiting_app_thread_and_a_reclaimer_exclude_each_other() {
    static APP_IN: AtomicUsize = AtomicUsize::new(0);
    static APP_OUT: AtomicUsize = AtomicUsize::new(0);
    loom::model(|| {
        let g = Guarded::new();
        let app = {
            let g = g.clone();
            thread::spawn(move || app_try_access(&g))
        };
        let reclaimer_won = reclaimer_try(&g);
        let app_won = app.join().unwrap();
        if app_won {
            APP_IN.fetch_add(1, Relaxed);
        } else {
            APP_OUT.fetch_add(1, Relaxed);
        }
        // Neither side waits, so both may give up in a race, but with no contention
        // each gets in, and the lock is left free either way.
        assert!(app_won || reclaimer_won || g.lock.shared_count() == 0);
        assert!(app_try_access(&g));
        assert!(reclaimer_try(&g));
        assert_eq!(g.lock.shared_count(), 0);
        assert!(!g.lock.flags().contains(EntryFlags::RECLAIMER_LOCK));
    });
    // Both outcomes for the app thread were explored.
    assert!(APP_IN.load(Relaxed) > 0 && APP_OUT.load(Relaxed) > 0);
}
