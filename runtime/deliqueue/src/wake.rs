//! Sleeping and waking the looper without ever losing a wake-up.
//!
//! The looper publishes the due time it will sleep until (`deadline`), re-checks the
//! stack head with a read-modify-write (`Stack::head_unchanged`), then sleeps on a futex
//! word it read before checking anything. A poster pushes (an RMW on the head), then
//! reads the deadline, and wakes the looper only when its message is due earlier. The
//! two RMWs on the head are ordered: if the looper's comes first, the push acquires it
//! and the poster sees the deadline; if the push comes first, the looper's check fails
//! and it does not sleep. The wake changes the futex word first, so a sleep that starts
//! after it returns at once. (A plain SeqCst load would do on hardware, but loom models
//! SeqCst accesses as acquire/release, and the RMW costs posters nothing.)
//!
//! [`Waker::wake`] (any thread) also sets a flag, so a wake that lands while the looper
//! is busy is kept for its next `wait`.
//!
//! **Delivering without a sweep.** The looper also publishes a delivery bound, on the
//! deadline's cache line: it delivers swept messages due at or before the bound without
//! reading the stack head (see `DeliQueue::deliver_swept`). A post, after its push, reads
//! the bound and, when its message is due at or before it, sets the `news` flag
//! ([`Waker::flag_if_bounded`]); the looper checks the flag before each such delivery and
//! sweeps when it is set. The same pairing as for the deadline makes the bound safe: the
//! looper stores the bound, then re-checks the head with a read-modify-write until it
//! finds nothing new (sweeping what landed). A push that comes after that RMW acquires
//! it and reads the new bound; a push that comes before it is swept. The loom model
//! `post_vs_delivery_bound` checks it.
//!
//! **An overdue looper.** The published deadline also tells a poster when the looper's
//! timer has fired but the looper has not run since: a normal thread's timed sleep ends
//! up to its timer slack (50 us by default) after the deadline, so a deadline more than
//! [`OVERDUE_NS`] in the past with the looper still not back (it clears the deadline
//! first thing) means it is waiting for a CPU, typically behind posters, which never
//! block on this queue. [`Waker::notify_if_earlier`] says so, and the post then yields
//! the CPU once (see `DeliQueue::publish_message`). The deadline is only a hint here:
//! a wrong guess costs one `sched_yield`, never a wake-up or an order.

use std::time::Duration;

use crossbeam_utils::CachePadded;
use marvin_sync::atomic::{AtomicBool, AtomicU64, Ordering};
use marvin_sync::futex::Futex;

/// The looper is not sleeping (no message is due before time 0, so no post wakes it).
const AWAKE: u64 = 0;

/// How long after its deadline a sleeping looper may still be asleep by right: the
/// kernel's default timer slack for a normal thread. Later than that, its timer has
/// fired and it is waiting for a CPU. (A looper with a larger slack of its own only
/// makes a few posts near the end of its window yield in vain.)
pub const OVERDUE_NS: u64 = 50_000;

/// The looper's sleep state, and its delivery bound (see "Delivering without a sweep").
pub struct Waker {
    futex: CachePadded<Futex>,
    /// What the looper writes and every post reads, on one cache line.
    published: CachePadded<Published>,
    requested: AtomicBool,
    /// Set by a post due at or before the published bound (rare: a post for now lands
    /// after it); the looper then sweeps before it delivers again.
    news: CachePadded<AtomicBool>,
}

/// The looper's announcements to posters.
#[repr(C)]
struct Published {
    /// The due time the looper sleeps until, or [`AWAKE`].
    deadline: AtomicU64,
    /// The delivery bound: the looper delivers a swept message due at or before it
    /// without looking for newer posts first; a post due at or before it sets `news`.
    bound: AtomicU64,
}

impl Default for Waker {
    fn default() -> Self {
        Waker {
            futex: CachePadded::new(Futex::new(0)),
            published: CachePadded::new(Published {
                deadline: AtomicU64::new(AWAKE),
                bound: AtomicU64::new(0),
            }),
            requested: AtomicBool::new(false),
            news: CachePadded::new(AtomicBool::new(false)),
        }
    }
}

impl Waker {
    /// Poster side, after its push: wakes the looper if it sleeps past `when`. Returns
    /// whether the looper is overdue: it went to sleep until a deadline more than
    /// [`OVERDUE_NS`] before `now()` and has not run since (`now` is read only when
    /// the looper sleeps until a deadline).
    ///
    /// Also sets the news flag when `when` is at or before the delivery bound, so that
    /// the looper sweeps before it delivers again (see "Delivering without a sweep").
    #[inline]
    pub fn notify_if_earlier(&self, when: u64, now: impl FnOnce() -> u64) -> bool {
        let deadline = self.published.deadline.load(Ordering::SeqCst);
        self.flag_if_bounded(when);
        if when < deadline {
            self.kick();
        }
        // Awake (`AWAKE`), or asleep with nothing to wait for (`u64::MAX`): not overdue,
        // and the clock is not read (the busy looper of FIFO traffic).
        deadline != AWAKE && deadline != u64::MAX && Self::overdue(deadline, now())
    }

    /// Whether a looper asleep until `deadline` is overdue at `now`. Out of line, so
    /// that the post path stays as short as it was.
    #[inline(never)]
    fn overdue(deadline: u64, now: u64) -> bool {
        now.saturating_sub(deadline) >= OVERDUE_NS
    }

    /// Poster side, after its push of a node due at `when`: flags news when `when` is at
    /// or before the delivery bound.
    #[inline]
    pub fn flag_if_bounded(&self, when: u64) {
        // Relaxed: the push just before acquired the looper's head read-modify-write
        // that followed the bound's store, or the looper's sweep meets the push (see
        // `Waker::publish_bound`).
        if when <= self.published.bound.load(Ordering::Relaxed) {
            self.flag_news();
        }
    }

    /// Makes the looper sweep before it delivers again (a post due at or before the
    /// delivery bound, or the quit sentinel). Out of line: off the usual post path.
    #[cold]
    #[inline(never)]
    pub fn flag_news(&self) {
        // Release: pairs with the looper's Acquire in `news`/`take_news`, so the push
        // before this store is visible to the sweep that follows them.
        self.news.store(true, Ordering::Release);
    }

    /// Looper: whether a post flagged news since the last [`Waker::take_news`].
    #[inline]
    pub fn news(&self) -> bool {
        // Acquire: pairs with `flag_news`.
        self.news.load(Ordering::Acquire)
    }

    /// Looper, before a sweep: consumes the news flag.
    #[inline]
    pub fn take_news(&self) {
        if self.news() {
            // Acquire: pairs with `flag_news` (a flag set again after this is kept for
            // the next `next`).
            self.news.swap(false, Ordering::Acquire);
        }
    }

    /// Looper: stores a new delivery bound. The caller then re-checks the stack head with
    /// a read-modify-write ([`super::stack::Stack::head_unchanged`]) and sweeps again
    /// until it succeeds; only then may it deliver up to `bound` without a sweep. A post
    /// pushes (an RMW on the head), then reads the bound: if its push comes after the
    /// looper's RMW, it acquires it and reads this bound (or a later one); if before, the
    /// looper's RMW fails or its sweep met the push.
    #[inline]
    pub fn publish_bound(&self, bound: u64) {
        // Relaxed: released by the head read-modify-write that follows.
        self.published.bound.store(bound, Ordering::Relaxed);
    }

    /// Wakes the looper so it re-checks, now or at its next `wait`.
    pub fn wake(&self) {
        self.requested.store(true, Ordering::SeqCst);
        self.kick();
    }

    fn kick(&self) {
        self.futex.word().fetch_add(1, Ordering::SeqCst);
        self.futex.wake_all();
    }

    /// Looper: the futex word, read before anything the sleep decision depends on.
    pub fn snapshot(&self) -> u32 {
        self.futex.load()
    }

    /// Looper: whether a `wake` request is pending (a hint; not consumed).
    pub fn has_request(&self) -> bool {
        self.requested.load(Ordering::Relaxed)
    }

    /// Looper: consumes a pending `wake` request.
    pub fn take_request(&self) -> bool {
        self.requested.swap(false, Ordering::SeqCst)
    }

    /// Looper: announces it will sleep until `deadline` (then re-check the stack).
    pub fn publish_deadline(&self, deadline: u64) {
        self.published
            .deadline
            .store(deadline.max(AWAKE + 1), Ordering::SeqCst);
    }

    /// Looper: sleeps unless the futex word moved since `snapshot`.
    pub fn sleep(&self, snapshot: u32, timeout: Option<Duration>) {
        self.futex.wait(snapshot, timeout);
    }

    /// Looper: back to work.
    pub fn clear_deadline(&self) {
        self.published.deadline.store(AWAKE, Ordering::SeqCst);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn overdue_only_when_asleep_past_deadline_and_slack() {
        let waker = Waker::default();
        // Awake: never overdue, and the clock is not even read.
        assert!(!waker.notify_if_earlier(5, || unreachable!("the clock is read")));
        waker.publish_deadline(1_000);
        assert!(!waker.notify_if_earlier(2_000, || 1_000));
        assert!(!waker.notify_if_earlier(2_000, || 1_000 + OVERDUE_NS - 1));
        assert!(waker.notify_if_earlier(2_000, || 1_000 + OVERDUE_NS));
        // An earlier message both wakes and finds the looper overdue.
        let before = waker.snapshot();
        assert!(waker.notify_if_earlier(500, || 1_000 + 2 * OVERDUE_NS));
        assert_ne!(
            waker.snapshot(),
            before,
            "an earlier message wakes the looper"
        );
        // Back at work: not overdue, whatever the time.
        waker.clear_deadline();
        assert!(!waker.notify_if_earlier(2_000, || u64::MAX));
        // Asleep with nothing to wait for: not overdue either.
        waker.publish_deadline(u64::MAX);
        assert!(!waker.notify_if_earlier(2_000, || u64::MAX));
    }

    #[test]
    fn later_messages_do_not_wake() {
        let waker = Waker::default();
        waker.publish_deadline(1_000);
        let before = waker.snapshot();
        assert!(!waker.notify_if_earlier(1_000, || 10));
        assert!(!waker.notify_if_earlier(3_000, || 10));
        assert_eq!(
            waker.snapshot(),
            before,
            "no wake for a message due at or after the deadline"
        );
        assert!(!waker.notify_if_earlier(999, || 10));
        assert_ne!(waker.snapshot(), before);
    }
}
