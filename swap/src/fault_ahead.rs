//! Prefaulting ahead of a run of faults, on a second thread: while the faults of a walk
//! through the swap file ([`crate::read_window::FaultRun`]) read and copy their windows
//! one after the other, a helper thread makes the pages of the next windows' objects
//! resident ([`crate::prefault::populate_write`]), so a fault finds its destination
//! already allocated, zeroed and charged instead of paying for it before its read.
//!
//! What it owns: which windows past a run's last fault are handed to the helper (at most
//! [`AHEAD_BYTES`] past it, each window at most [`READ_AHEAD_BYTES`] of objects that are
//! out, as a fault of that window would bring back), the helper thread itself (started
//! at an app's first run, ended with the app's swap side) and its queue.
//!
//! Nothing is read ahead: each fault still reads its own window and nothing more, and
//! objects stay out until faulted. Prefaulting never changes a byte, so a page prefaulted
//! for an object that a fault, a reclaimer or a free reached first is harmless; what it
//! costs is memory: pages of objects not faulted yet, at most [`AHEAD_BYTES`] ahead of the
//! run. When the run ends (a fault elsewhere), what is still queued is dropped, and the
//! pages already prefaulted for objects the run never reached stay resident until those
//! objects are faulted in or freed.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::app_swap::READ_AHEAD_BYTES;

/// How far past a run's last fault the pages of the windows that follow may be
/// prefaulted: eight read-ahead windows.
pub const AHEAD_BYTES: u64 = 8 * READ_AHEAD_BYTES;

/// Windows queued for the helper at most.
const QUEUE: usize = (AHEAD_BYTES / READ_AHEAD_BYTES) as usize;

/// Where a run is, read by the helper to skip windows the faults already reached.
const NO_RUN: u64 = u64::MAX;

/// The pages of one window's objects, for the helper to prefault.
struct Job {
    /// The window's start in the file.
    start: u64,
    /// Page runs `(address, bytes)`, coalesced.
    runs: Vec<(usize, usize)>,
}

/// What the faulting threads and the helper share.
struct Shared {
    /// The start of the window the run's last fault read ([`NO_RUN`] when no run is
    /// under way): the helper skips jobs at or before it, whose fault came first.
    at: AtomicU64,
    /// The start of the window the helper is prefaulting ([`NO_RUN`]: none). A fault
    /// of that window waits for it rather than prefault the same pages at once (both
    /// would allocate and zero a page for each, one of them for nothing).
    helper_on: AtomicU64,
    /// Jobs handed over and not yet taken by the helper.
    queued: AtomicUsize,
    /// The app's swap side is gone: the helper stops.
    stop: AtomicBool,
}

/// The faulting side's record of a run's hand-overs.
#[derive(Default)]
struct State {
    /// The helper's queue (`None` until the first run).
    tx: Option<SyncSender<Job>>,
    /// The helper could not be started: faults prefault their own windows, as without it.
    failed: bool,
    /// Windows of the file below this were handed over for the current run.
    sent_to: u64,
}

/// One app's prefaulting ahead of its runs of faults.
pub struct FaultAhead {
    state: Mutex<State>,
    shared: Arc<Shared>,
}

impl Default for FaultAhead {
    fn default() -> Self {
        FaultAhead::new()
    }
}

impl FaultAhead {
    pub fn new() -> FaultAhead {
        FaultAhead {
            state: Mutex::new(State::default()),
            shared: Arc::new(Shared {
                at: AtomicU64::new(NO_RUN),
                helper_on: AtomicU64::new(NO_RUN),
                queued: AtomicUsize::new(0),
                stop: AtomicBool::new(false),
            }),
        }
    }

    /// A fault that continues a run read `window` of the file: hands the helper the
    /// windows of the same length that follow it, up to [`AHEAD_BYTES`] past its end,
    /// those not handed over yet, while fewer than [`QUEUE`] wait. `runs_of(from, to)`
    /// gives the page runs of the objects that are out with checkpoints in `[from, to)`
    /// (at most [`READ_AHEAD_BYTES`] of them). Returns the bytes of pages handed over.
    pub fn follow(
        &self,
        window: Range<u64>,
        mut runs_of: impl FnMut(u64, u64) -> Vec<(usize, usize)>,
    ) -> u64 {
        let len = window.end.saturating_sub(window.start);
        if len == 0 {
            return 0;
        }
        let mut st = self.state.lock();
        self.shared.at.store(window.start, Ordering::SeqCst);
        let limit = window.end.saturating_add(AHEAD_BYTES);
        // From where the run's hand-overs reached, if that is ahead of this window and
        // within reach; else (a run that jumped) from this window on.
        let mut from = if (window.end..=limit).contains(&st.sent_to) {
            st.sent_to
        } else {
            window.end
        };
        let mut handed = 0;
        while from < limit && self.shared.queued.load(Ordering::Acquire) < QUEUE {
            let runs = runs_of(from, from + len);
            if !runs.is_empty() {
                let bytes: u64 = runs.iter().map(|&(_, l)| l as u64).sum();
                let Some(tx) = self.sender(&mut st) else {
                    break;
                };
                self.shared.queued.fetch_add(1, Ordering::AcqRel);
                if tx.try_send(Job { start: from, runs }).is_err() {
                    self.shared.queued.fetch_sub(1, Ordering::AcqRel);
                    break;
                }
                handed += bytes;
            }
            from += len;
            st.sent_to = from;
        }
        handed
    }

    /// A fault of a run about to prefault its own window, which starts at `start`
    /// (after [`FaultAhead::follow`]): waits while the helper is prefaulting that very
    /// window, so that the fault's own advice finds its pages in (a window takes the
    /// helper tens of microseconds).
    pub fn wait_for_helper(&self, start: u64) {
        while self.shared.helper_on.load(Ordering::SeqCst) == start {
            std::hint::spin_loop();
            std::thread::yield_now();
        }
    }

    /// A fault that does not continue a run read `window`: one within the run's reach
    /// (its last fault's window or those handed over after it, as a second fault in the
    /// same window is when its objects outgrow one fault's read-ahead) leaves the run
    /// as it is; one elsewhere ends it, and the helper drops what is still queued.
    pub fn lone(&self, window: Range<u64>) {
        let mut st = self.state.lock();
        let at = self.shared.at.load(Ordering::Acquire);
        if at != NO_RUN
            && window.start >= at
            && window.end <= st.sent_to.max(at.saturating_add(window.end - window.start))
        {
            return;
        }
        self.end_run(&mut st);
    }

    /// The run ends: nothing more of it is handed over, and what is queued is dropped.
    pub fn end(&self) {
        let mut st = self.state.lock();
        self.end_run(&mut st);
    }

    fn end_run(&self, st: &mut State) {
        st.sent_to = 0;
        self.shared.at.store(NO_RUN, Ordering::Release);
    }

    /// The helper's queue, the helper started at the first call; `None` if it could not
    /// be started (no memory for its stack, a thread limit).
    fn sender<'s>(&self, st: &'s mut State) -> Option<&'s SyncSender<Job>> {
        if st.tx.is_none() && !st.failed {
            let (tx, rx) = mpsc::sync_channel(QUEUE);
            let shared = self.shared.clone();
            match std::thread::Builder::new()
                .name("marvin-fault-ahead".into())
                .spawn(move || helper(&rx, &shared))
            {
                Ok(_) => st.tx = Some(tx),
                Err(_) => st.failed = true,
            }
        }
        st.tx.as_ref()
    }
}

impl Drop for FaultAhead {
    fn drop(&mut self) {
        // The queue's sender goes with `self`, which ends the helper's wait; what it has
        // taken already it leaves alone.
        self.shared.stop.store(true, Ordering::Release);
    }
}

/// The helper: prefaults each window it is handed, unless the run's faults reached it
/// first or the run ended; returns when the app's swap side is gone.
fn helper(rx: &Receiver<Job>, shared: &Shared) {
    while let Ok(job) = rx.recv() {
        shared.queued.fetch_sub(1, Ordering::AcqRel);
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        // Claims the window, then looks where the run is (SeqCst both sides, with the
        // fault's store of `at` and load of `helper_on` in `follow` and
        // `wait_for_helper`): either this sees the fault there and skips the window, or
        // the fault sees the claim and waits until it is released.
        shared.helper_on.store(job.start, Ordering::SeqCst);
        let at = shared.at.load(Ordering::SeqCst);
        if at != NO_RUN && job.start > at {
            for (addr, len) in job.runs {
                // Only a speed-up: pages it did not bring in fault in during the read.
                let _ = crate::prefault::populate_write(addr, len);
            }
        }
        shared.helper_on.store(NO_RUN, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: u64 = READ_AHEAD_BYTES;

    /// One page of a mapping per window asked about, so the helper has real pages.
    fn pages(map: &memmap2::MmapMut, from: u64) -> Vec<(usize, usize)> {
        let k = (from / W) as usize;
        if k * 4096 >= map.len() {
            return Vec::new();
        }
        vec![(map.as_ptr() as usize + k * 4096, 4096)]
    }

    #[test]
    fn a_run_hands_over_at_most_the_windows_ahead_and_each_once() {
        let map = memmap2::MmapMut::map_anon(64 * 4096).unwrap();
        let ahead = FaultAhead::new();
        let mut asked = Vec::new();
        ahead.follow(W..2 * W, |from, to| {
            asked.push(from..to);
            pages(&map, from)
        });
        // Never past AHEAD_BYTES beyond the fault's window, never the window itself.
        assert!(!asked.is_empty() && asked.len() <= QUEUE);
        assert!(asked
            .iter()
            .all(|r| r.start >= 2 * W && r.end <= 2 * W + AHEAD_BYTES));
        let last = asked.last().unwrap().end;
        // The next fault of the run asks only about windows not handed over yet.
        let mut again = Vec::new();
        ahead.follow(2 * W..3 * W, |from, to| {
            again.push(from..to);
            pages(&map, from)
        });
        assert!(again.iter().all(|r| r.start >= last));
        // A second fault within the run's reach leaves it; the next one continues it.
        ahead.lone(2 * W..3 * W);
        let mut within = Vec::new();
        ahead.follow(3 * W..4 * W, |from, to| {
            within.push(from..to);
            pages(&map, from)
        });
        assert!(within.iter().all(|r| r.start >= last));
        // A run that ended starts over from its next fault (once the helper took what
        // was queued: the queue is bounded).
        ahead.end();
        while ahead.shared.queued.load(Ordering::Acquire) > 0 {
            std::thread::yield_now();
        }
        let mut fresh = Vec::new();
        ahead.follow(40 * W..41 * W, |from, to| {
            fresh.push(from..to);
            Vec::new()
        });
        assert_eq!(fresh.first(), Some(&(41 * W..42 * W)));
        assert_eq!(fresh.len(), QUEUE, "empty windows queue nothing");
        // What was prefaulted kept its bytes (none were written).
        assert!(map.iter().all(|&b| b == 0));
    }

    #[test]
    fn an_empty_window_hands_over_nothing() {
        let ahead = FaultAhead::new();
        assert_eq!(ahead.follow(5..5, |_, _| panic!("asked")), 0);
    }
}
