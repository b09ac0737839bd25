//! Marvin's killer holding back, bounded, while a background app's saver still writes.
//!
//! An app sent to the background has cold objects that become reclaimable only once its
//! saver has written them; it says so in its reclaim table's header while that first
//! save runs ([`marvin_runtime::ReclaimTableView::is_saving`]). When the
//! reclaimer finds nothing more to take but such a save is under way, a kill would
//! take an app for memory that is about to be reclaimable. [`KillHold`] lets the
//! killer wait for it, within two bounds that keep the kernel's OOM killer out:
//!
//! - **memory**: never while the working set is above the limit less half the killer's
//!   headroom ([`KillHold::margin`]), so the kernel keeps at least that much room while
//!   the killer waits (the `reclaim-behind` kill acts at a quarter of the headroom);
//! - **time**: one hold lasts at most [`MAX_HOLD`] from the first tick the killer would
//!   have killed; after that the killer acts on the next tick whatever the savers do. A
//!   tick on which the killer would not kill ends the hold, and the next one may last as
//!   long again.

use std::time::{Duration, Instant};

/// The longest one hold lasts.
pub const MAX_HOLD: Duration = Duration::from_millis(1000);

/// What the killer would act on at one tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldInput {
    /// Some background app's saver is writing its cold objects.
    pub saving: bool,
    /// The group's working set now.
    pub working_set: u64,
    /// The group's hard limit.
    pub limit: u64,
    /// The killer's headroom below the limit.
    pub headroom: u64,
}

/// The hold's state across ticks.
#[derive(Debug, Default)]
pub struct KillHold {
    since: Option<Instant>,
    /// Ticks on which a kill was held back.
    held_ticks: u64,
    /// Holds that ran out of time (the killer then acted).
    expired: u64,
}

impl KillHold {
    /// The working set above which the killer never holds: the limit less half the
    /// headroom.
    pub fn margin(limit: u64, headroom: u64) -> u64 {
        limit.saturating_sub(headroom / 2)
    }

    /// Called on a tick on which the killer would kill: whether it holds back instead.
    pub fn hold(&mut self, now: Instant, input: HoldInput) -> bool {
        let since = *self.since.get_or_insert(now);
        let within_memory = input.working_set <= Self::margin(input.limit, input.headroom);
        let within_time = now.saturating_duration_since(since) < MAX_HOLD;
        if input.saving && within_memory && within_time {
            self.held_ticks += 1;
            return true;
        }
        if input.saving && within_memory && !within_time {
            self.expired += 1;
        }
        false
    }

    /// Called on a tick on which the killer would not kill: the hold, if any, is over.
    pub fn release(&mut self) {
        self.since = None;
    }

    /// Ticks on which a kill was held back so far.
    pub fn held_ticks(&self) -> u64 {
        self.held_ticks
    }

    /// Holds that ran out of time.
    pub fn expired(&self) -> u64 {
        self.expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn input(saving: bool, working_set: u64) -> HoldInput {
        HoldInput {
            saving,
            working_set,
            limit: 240 * MIB,
            headroom: 15 * MIB,
        }
    }

    #[test]
    fn holds_only_while_an_app_is_saving() {
        let t0 = Instant::now();
        let mut h = KillHold::default();
        assert!(!h.hold(t0, input(false, 226 * MIB)));
        assert!(h.hold(t0, input(true, 226 * MIB)));
        assert_eq!(h.held_ticks(), 1);
    }

    #[test]
    fn never_holds_above_the_limit_less_half_the_headroom() {
        let t0 = Instant::now();
        let mut h = KillHold::default();
        let margin = KillHold::margin(240 * MIB, 15 * MIB);
        assert_eq!(margin, 240 * MIB - 15 * MIB / 2);
        assert!(h.hold(t0, input(true, margin)));
        assert!(!h.hold(t0, input(true, margin + 1)));
        assert!(!h.hold(t0, input(true, 240 * MIB)));
    }

    #[test]
    fn a_hold_ends_after_its_time_even_while_the_saver_still_writes() {
        let t0 = Instant::now();
        let mut h = KillHold::default();
        let mut ticks = 0;
        let mut t = t0;
        while h.hold(t, input(true, 226 * MIB)) {
            ticks += 1;
            assert!(ticks <= 1000, "the hold never ended");
            t += Duration::from_millis(20);
        }
        // Every held tick was within the bound, and the first tick past it kills.
        assert_eq!(t - t0, MAX_HOLD);
        assert_eq!(h.held_ticks(), ticks);
        assert_eq!(h.expired(), 1);
        // Still past the bound on the next tick: no new hold without a release.
        assert!(!h.hold(t + Duration::from_millis(20), input(true, 226 * MIB)));
    }

    #[test]
    fn a_tick_without_a_kill_ends_the_hold_and_the_next_one_starts_afresh() {
        let t0 = Instant::now();
        let mut h = KillHold::default();
        assert!(h.hold(t0, input(true, 226 * MIB)));
        assert!(!h.hold(t0 + MAX_HOLD, input(true, 226 * MIB)));
        h.release();
        assert!(h.hold(t0 + MAX_HOLD * 2, input(true, 226 * MIB)));
    }
}
