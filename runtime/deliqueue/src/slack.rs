//! The looper's timed sleep ends close to when it is due: the calling thread's timer
//! slack, lowered to [`LOOPER_SLACK_NS`] (20 us) for the sleep and restored after.
//!
//! Linux lets a normal thread's timed sleep end up to its timer slack late (50 us by
//! default; Android gives background apps 40 ms) so that timers can be batched. A
//! looper sleeps until its next message is due, so every message it wakes for would
//! wait that long: with posters keeping messages due every few microseconds, the slack,
//! not the queue, made most of the dispatch delay's median. 20 us, not 1 ns: a little
//! slack still lets one wake-up deliver the messages due within it, where exact timers
//! woke the looper for nearly every message (measured in `docs/benchmarks.md`, **The
//! looper's timer slack**). Real-time threads have no
//! slack already (the kernel ignores the setting for them). The slack is a per-thread
//! setting, so it is put back after each sleep: the thread that runs the loop keeps its
//! own setting everywhere else. Under loom and Miri (which model neither timers nor
//! `prctl`) and off Linux this does nothing.

/// The timer slack of the looper's timed sleep, in nanoseconds.
pub const LOOPER_SLACK_NS: libc::c_ulong = 20_000;

/// While alive, the calling thread's timer slack is at most [`LOOPER_SLACK_NS`];
/// dropping it restores the slack the thread had.
pub(crate) struct Precise {
    #[cfg(all(target_os = "linux", not(loom), not(miri)))]
    previous: Option<libc::c_ulong>,
}

impl Precise {
    /// Lowers the calling thread's timer slack to [`LOOPER_SLACK_NS`] (if it was higher).
    pub(crate) fn begin() -> Precise {
        #[cfg(all(target_os = "linux", not(loom), not(miri)))]
        {
            let previous =
                linux::get().filter(|&s| s > LOOPER_SLACK_NS && linux::set(LOOPER_SLACK_NS));
            Precise { previous }
        }
        #[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
        Precise {}
    }
}

impl Drop for Precise {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", not(loom), not(miri)))]
        if let Some(previous) = self.previous {
            linux::set(previous);
        }
    }
}

/// The calling thread's timer slack in nanoseconds, where the platform has one (for
/// tests and diagnostics).
pub fn current_timer_slack_ns() -> Option<libc::c_ulong> {
    #[cfg(all(target_os = "linux", not(loom), not(miri)))]
    return linux::get();
    #[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
    None
}

#[cfg(all(target_os = "linux", not(loom), not(miri)))]
mod linux {
    /// An unused prctl(2) argument, passed at the width the kernel reads.
    const NONE: libc::c_ulong = 0;

    /// The calling thread's timer slack (`PR_GET_TIMERSLACK`), or `None` if the call
    /// failed.
    pub(super) fn get() -> Option<libc::c_ulong> {
        // SAFETY: PR_GET_TIMERSLACK takes no pointer and only reads the calling thread's
        // setting; the unused arguments are zero as prctl(2) asks.
        let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, NONE, NONE, NONE, NONE) };
        libc::c_ulong::try_from(slack).ok()
    }

    /// Sets the calling thread's timer slack (`PR_SET_TIMERSLACK`, `ns` > 0); true if the
    /// kernel accepted it.
    pub(super) fn set(ns: libc::c_ulong) -> bool {
        // SAFETY: PR_SET_TIMERSLACK takes a value, not a pointer, and changes only the
        // calling thread's timer slack; the unused arguments are zero as prctl(2) asks.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, NONE, NONE, NONE) == 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precise_lowers_the_slack_and_puts_it_back() {
        let Some(before) = current_timer_slack_ns() else {
            println!("skipped: no per-thread timer slack here (Miri, loom or not Linux)");
            return;
        };
        {
            let _precise = Precise::begin();
            // Never raised; a real-time thread has none to lower (0, sets are ignored).
            assert_eq!(current_timer_slack_ns(), Some(before.min(LOOPER_SLACK_NS)));
        }
        assert_eq!(current_timer_slack_ns(), Some(before));
    }

    #[test]
    fn precise_nests() {
        let Some(before) = current_timer_slack_ns() else {
            println!("skipped: no per-thread timer slack here (Miri, loom or not Linux)");
            return;
        };
        {
            let _outer = Precise::begin();
            {
                let _inner = Precise::begin();
            }
            assert_eq!(current_timer_slack_ns(), Some(before.min(LOOPER_SLACK_NS)));
        }
        assert_eq!(current_timer_slack_ns(), Some(before));
    }
}
