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
        // SAFETY: checked by the model: loom panics here if another access is concurrent
        // with this one.
        self.owner.with_mut(|p| unsafe { *p = who });
    }
}

/// One access by the app thread.
fn app_access(g: &Guarded) {
    assert!(g.lock.lock_shared_or_give_up(|_| false));
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

/// An app thread whose wait for the shared lock is bounded (the runtime gives up after a
/// time limit, when the shared table holds a reclaimer bit nobody will clear): it gives up
/// at its first wait here. Whatever the interleaving, a thread that gave up holds nothing,
/// one that got in excludes the reclaimer, and afterwards the entry is free.
#[test]
fn an_app_thread_that_gives_up_holds_nothing() {
    static GAVE_UP: AtomicUsize = AtomicUsize::new(0);
    static GOT_IN: AtomicUsize = AtomicUsize::new(0);
    loom::model(|| {
        let g = Guarded::new();
        let reclaimer = {
            let g = g.clone();
            thread::spawn(move || reclaimer_try(&g))
        };
        if g.lock.lock_shared_or_give_up(|_| true) {
            g.write("app");
            g.lock.unlock_shared();
            GOT_IN.fetch_add(1, Relaxed);
        } else {
            GAVE_UP.fetch_add(1, Relaxed);
        }
        reclaimer.join().unwrap();
        assert_eq!(g.lock.shared_count(), 0);
        assert!(!g.lock.flags().contains(EntryFlags::RECLAIMER_LOCK));
        // Nothing left held: a reclaimer gets in at once.
        assert!(reclaimer_try(&g));
    });
    assert!(GAVE_UP.load(Relaxed) > 0 && GOT_IN.load(Relaxed) > 0);
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

/// An app's entry as a reclaimer in another process sees it: the entry's lock, the app's
/// foreground flag from the table's header, and the object's page (the checkpoint's value
/// while resident, zero once its hole is punched).
struct RemoteApp {
    lock: EntryLock,
    foreground: marvin_sync::atomic::AtomicU32,
    page: UnsafeCell<u64>,
}

const CHECKPOINT: u64 = 0x5eed;

impl RemoteApp {
    /// A saved, clean, cold, resident object of a background app.
    fn new() -> Arc<RemoteApp> {
        let app = RemoteApp {
            lock: EntryLock::new(),
            foreground: marvin_sync::atomic::AtomicU32::new(0),
            page: UnsafeCell::new(CHECKPOINT),
        };
        app.lock.insert_flags(EntryFlags::RECLAIMABLE);
        Arc::new(app)
    }

    fn is_foreground(&self) -> bool {
        // As `ReclaimTableView::is_foreground`: Acquire.
        self.foreground.load(marvin_sync::atomic::Ordering::Acquire) != 0
    }
}

/// The exact sequence `ExternalApp::reclaim` runs on one entry (`reclaimer::take`, then
/// the hole, then `Taken::finish`): skip a foreground app, skip an entry that does not
/// look reclaimable, try-lock (never wait), ask the foreground flag again and the flags
/// under the lock, punch the hole, mark reclaimed, release. Returns whether it took the
/// object.
fn external_reclaim(app: &RemoteApp) -> bool {
    if app.is_foreground() {
        return false;
    }
    let flags = app.lock.flags();
    let looks = flags.contains(EntryFlags::RECLAIMABLE)
        && !flags.contains(EntryFlags::RECLAIMER_LOCK)
        && app.lock.shared_count() == 0;
    if !looks || !app.lock.try_lock_reclaimer() {
        return false;
    }
    let took = !app.is_foreground() && app.lock.flags().contains(EntryFlags::RECLAIMABLE);
    if took {
        // fallocate(PUNCH_HOLE): the page reads zero from now on.
        // SAFETY: checked by the model: loom panics if an app access is concurrent with this.
        app.page.with_mut(|p| unsafe { *p = 0 });
        app.lock.remove_flags(EntryFlags::RESIDENT);
    }
    app.lock.unlock_reclaimer();
    took
}

/// One access by the app (as `StubAccess::enter` with `ensure_resident`): take the
/// shared lock, fault the object in from its checkpoint when it is not resident, read
/// it, release. Returns the value read.
fn app_read(app: &RemoteApp) -> u64 {
    assert!(app.lock.lock_shared_or_give_up(|_| false));
    if !app.lock.flags().contains(EntryFlags::RESIDENT) {
        // SAFETY: checked by the model: loom panics if the reclaimer's write is concurrent.
        app.page.with_mut(|p| unsafe { *p = CHECKPOINT });
        app.lock.insert_flags(EntryFlags::RESIDENT);
    }
    // SAFETY: checked by the model: as above.
    let v = app.page.with(|p| unsafe { *p });
    app.lock.unlock_shared();
    v
}

#[test]
fn an_external_reclaim_never_loses_an_object_the_app_reads() {
    static TOOK: AtomicUsize = AtomicUsize::new(0);
    static LEFT: AtomicUsize = AtomicUsize::new(0);
    loom::model(|| {
        let app = RemoteApp::new();
        let reader = {
            let app = app.clone();
            thread::spawn(move || app_read(&app))
        };
        if external_reclaim(&app) {
            TOOK.fetch_add(1, Relaxed)
        } else {
            LEFT.fetch_add(1, Relaxed)
        };
        // Whatever the order, the app reads exactly its checkpoint, and again after.
        assert_eq!(reader.join().unwrap(), CHECKPOINT);
        assert_eq!(app_read(&app), CHECKPOINT);
        assert_eq!(app.lock.shared_count(), 0);
        assert!(!app.lock.flags().contains(EntryFlags::RECLAIMER_LOCK));
    });
    assert!(TOOK.load(Relaxed) > 0 && LEFT.load(Relaxed) > 0);
}

#[test]
fn an_app_that_comes_to_the_foreground_loses_nothing() {
    static TOOK: AtomicUsize = AtomicUsize::new(0);
    static LEFT: AtomicUsize = AtomicUsize::new(0);
    loom::model(|| {
        let app = RemoteApp::new();
        let restorer = {
            let app = app.clone();
            thread::spawn(move || {
                // `set_foreground(true)` (Release), then the eager restore's access.
                app.foreground
                    .store(1, marvin_sync::atomic::Ordering::Release);
                app_read(&app)
            })
        };
        if external_reclaim(&app) {
            TOOK.fetch_add(1, Relaxed)
        } else {
            LEFT.fetch_add(1, Relaxed)
        };
        assert_eq!(restorer.join().unwrap(), CHECKPOINT);
        // Once the restore is done, the object is resident and stays so: a reclaimer
        // now sees the foreground flag (its lock pairs with the restore's unlock).
        assert!(app.lock.flags().contains(EntryFlags::RESIDENT));
        assert!(!external_reclaim(&app));
        assert!(app.lock.flags().contains(EntryFlags::RESIDENT));
        // SAFETY: both threads are done, so nothing is concurrent (loom would panic).
        assert_eq!(app.page.with(|p| unsafe { *p }), CHECKPOINT);
    });
    // The reclaimer got in before the switch in some interleavings, not in others.
    assert!(TOOK.load(Relaxed) > 0 && LEFT.load(Relaxed) > 0);
}

/// The reclaimer's release that clears RESIDENT with the lock in one step
/// (`unlock_reclaimer_removing`, what a reclaim's `finish` uses) excludes the app thread as
/// `unlock_reclaimer` does, and an app thread that gets in after it sees RESIDENT cleared.
#[test]
fn releasing_with_resident_cleared_excludes_and_publishes() {
    loom::model(|| {
        let g = Guarded::new();
        g.lock.insert_flags(EntryFlags::RESIDENT);
        let app = {
            let g = g.clone();
            thread::spawn(move || {
                assert!(g.lock.lock_shared_or_give_up(|_| false));
                // SAFETY: checked by the model, as in `Guarded::write`.
                let before = g.owner.with(|p| unsafe { *p });
                if before == "reclaimer" {
                    assert!(
                        !g.lock.flags().contains(EntryFlags::RESIDENT),
                        "the reclaimer's object is seen as out"
                    );
                }
                g.write("app");
                g.lock.unlock_shared();
            })
        };
        if g.lock.try_lock_reclaimer() {
            g.write("reclaimer");
            g.lock.unlock_reclaimer_removing(EntryFlags::RESIDENT);
        }
        app.join().unwrap();
        assert!(!g.lock.flags().contains(EntryFlags::RECLAIMER_LOCK));
    });
}
