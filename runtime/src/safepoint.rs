//! Safepoints: stopping an app's mutator threads so the collector (or the runtime's own
//! threads: stubbing, the saver) can work on a quiet heap.
//!
//! A mutator thread is either running or safe. A running thread polls
//! [`Mutator::poll`] at calls, backward branches and allocations; when a stop is
//! requested it publishes its roots and blocks until the world restarts. A thread that
//! is about to block (waiting for a message, a monitor, a sleep) enters the safe state
//! with [`Mutator::enter_native`], publishing its roots first, and cannot leave it while
//! the world is stopped. The world is stopped when no thread is running.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};

#[derive(Default)]
struct State {
    /// Registered threads in the running state.
    running: usize,
    /// The world is stopped or stopping.
    stopped: bool,
    slots: Vec<Arc<Slot>>,
}

/// The roots a mutator published when it last stopped or blocked.
#[derive(Default)]
struct Slot {
    roots: Mutex<Vec<u64>>,
}

/// Attention bit: the world is stopping.
const STOP: u8 = 1;
/// Attention bit: the app is ending; running threads should unwind.
const TERMINATE: u8 = 2;

/// The safepoint coordinator of one app.
#[derive(Default)]
pub struct Safepoints {
    /// Why running threads should look up ([`STOP`], [`TERMINATE`]).
    requested: CachePadded<AtomicU8>,
    state: Mutex<State>,
    cv: Condvar,
}

/// A registered mutator thread. Dropping it unregisters the thread.
pub struct Mutator {
    sp: Arc<Safepoints>,
    slot: Arc<Slot>,
    native: bool,
}

impl Safepoints {
    pub fn new() -> Arc<Safepoints> {
        Arc::new(Safepoints::default())
    }

    /// Registers the calling thread as a running mutator (waiting while the world is
    /// stopped).
    pub fn register(self: &Arc<Self>) -> Mutator {
        let slot = Arc::new(Slot::default());
        let mut st = self.state.lock();
        while st.stopped {
            self.cv.wait(&mut st);
        }
        st.running += 1;
        st.slots.push(slot.clone());
        Mutator {
            sp: self.clone(),
            slot,
            native: false,
        }
    }

    /// Whether running threads should look up: a stop is requested or the app is
    /// ending. One relaxed load: this is what the interpreter polls.
    #[inline(always)]
    pub fn requested(&self) -> bool {
        self.requested.load(Ordering::Relaxed) != 0
    }

    /// Asks every running thread to unwind at its next poll (the app is ending).
    pub fn terminate(&self) {
        self.requested.fetch_or(TERMINATE, Ordering::SeqCst);
    }

    /// Whether [`Safepoints::terminate`] was called.
    pub fn is_terminating(&self) -> bool {
        self.requested.load(Ordering::Relaxed) & TERMINATE != 0
    }

    /// Stops the world: waits for any other stop to end, then for every registered
    /// thread to be safe. A mutator calling this must be in the safe state
    /// ([`Mutator::enter_native`]) or it would wait for itself.
    pub fn stop_the_world(&self) -> WorldStopped<'_> {
        let mut st = self.state.lock();
        while st.stopped {
            self.cv.wait(&mut st);
        }
        st.stopped = true;
        self.requested.fetch_or(STOP, Ordering::SeqCst);
        while st.running > 0 {
            self.cv.wait(&mut st);
        }
        let roots = st
            .slots
            .iter()
            .flat_map(|s| s.roots.lock().clone())
            .collect();
        WorldStopped { sp: self, roots }
    }
}

/// Proof that the world is stopped; restarts it on drop.
pub struct WorldStopped<'a> {
    sp: &'a Safepoints,
    /// Every root the stopped mutators published.
    pub roots: Vec<u64>,
}

impl Drop for WorldStopped<'_> {
    fn drop(&mut self) {
        let mut st = self.sp.state.lock();
        st.stopped = false;
        self.sp.requested.fetch_and(!STOP, Ordering::SeqCst);
        self.sp.cv.notify_all();
    }
}

impl Mutator {
    /// Parks here if a stop is requested, publishing roots with `publish` first.
    #[inline(always)]
    pub fn poll(&mut self, publish: impl FnOnce(&mut Vec<u64>)) {
        if self.sp.requested.load(Ordering::Relaxed) & STOP != 0 {
            self.park(publish);
        }
    }

    #[cold]
    #[inline(never)]
    fn park(&mut self, publish: impl FnOnce(&mut Vec<u64>)) {
        self.enter_native(publish);
        self.leave_native();
    }

    /// Enters the safe state before blocking; `publish` writes the thread's roots,
    /// which must stay valid (unchanged) until [`Mutator::leave_native`].
    pub fn enter_native(&mut self, publish: impl FnOnce(&mut Vec<u64>)) {
        debug_assert!(!self.native);
        {
            let mut roots = self.slot.roots.lock();
            roots.clear();
            publish(&mut roots);
        }
        let mut st = self.sp.state.lock();
        st.running -= 1;
        self.native = true;
        self.sp.cv.notify_all();
    }

    /// Leaves the safe state, waiting while the world is stopped.
    pub fn leave_native(&mut self) {
        debug_assert!(self.native);
        let mut st = self.sp.state.lock();
        while st.stopped {
            self.sp.cv.wait(&mut st);
        }
        st.running += 1;
        self.native = false;
    }

    /// Runs `f` in the safe state (for a blocking call), publishing roots first.
    pub fn blocking<R>(&mut self, publish: impl FnOnce(&mut Vec<u64>), f: impl FnOnce() -> R) -> R {
        self.enter_native(publish);
        let r = f();
        self.leave_native();
        r
    }

    /// The coordinator this thread is registered with.
    pub fn safepoints(&self) -> &Arc<Safepoints> {
        &self.sp
    }
}

impl Drop for Mutator {
    fn drop(&mut self) {
        let mut st = self.sp.state.lock();
        if !self.native {
            st.running -= 1;
        }
        st.slots.retain(|s| !Arc::ptr_eq(s, &self.slot));
        self.sp.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64};

    #[test]
    fn the_world_stops_only_when_every_mutator_is_safe() {
        let sp = Safepoints::new();
        let progress = Arc::new(AtomicU64::new(0));
        let registered = Arc::new(std::sync::Barrier::new(4));
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..3)
            .map(|i| {
                let (sp, progress, stop) = (sp.clone(), progress.clone(), stop.clone());
                let registered = registered.clone();
                std::thread::spawn(move || {
                    let mut m = sp.register();
                    registered.wait();
                    while !stop.load(Ordering::Relaxed) {
                        progress.fetch_add(1, Ordering::Relaxed);
                        m.poll(|roots| roots.push(100 + i));
                    }
                })
            })
            .collect();
        registered.wait();
        while progress.load(Ordering::Relaxed) < 1000 {
            std::thread::yield_now();
        }
        for _ in 0..20 {
            let w = sp.stop_the_world();
            let before = progress.load(Ordering::Relaxed);
            std::thread::sleep(std::time::Duration::from_millis(1));
            // Nobody ran while the world was stopped...
            assert_eq!(progress.load(Ordering::Relaxed), before);
            // ...and every registered thread published its roots.
            let mut r = w.roots.clone();
            r.sort();
            assert_eq!(r, vec![100, 101, 102]);
        }
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            w.join().unwrap();
        }
    }

    #[test]
    fn a_blocked_thread_counts_as_safe_and_waits_for_the_restart() {
        let sp = Safepoints::new();
        let mut m = sp.register();
        m.enter_native(|r| r.push(7));
        let w = sp.stop_the_world();
        assert_eq!(w.roots, vec![7]);
        let sp2 = sp.clone();
        let left = Arc::new(AtomicBool::new(false));
        let left2 = left.clone();
        let t = std::thread::spawn(move || {
            m.leave_native();
            left2.store(true, Ordering::SeqCst);
            drop(m);
            drop(sp2);
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(
            !left.load(Ordering::SeqCst),
            "left the safe state while stopped"
        );
        drop(w);
        t.join().unwrap();
        assert!(left.load(Ordering::SeqCst));
    }
}
