//! Whether an app is active, as the published experiment defines it: an app becomes
//! active when it completes a round (`mark "round"`) less than `active_gap` after its
//! previous round (its launch counting as the first), stays active until
//! `inactive_after` passes without a round, and is then inactive until two rounds come
//! less than `active_gap` apart again.

use std::time::{Duration, Instant};

/// The two thresholds (7 s and 20 s in the published experiment, scaled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    pub active_gap: Duration,
    pub inactive_after: Duration,
}

impl Thresholds {
    pub fn scaled(time_scale: f64) -> Thresholds {
        Thresholds {
            active_gap: Duration::from_secs_f64(7.0 * time_scale),
            inactive_after: Duration::from_secs_f64(20.0 * time_scale),
        }
    }
}

/// The activity state of one app. Rounds are seen when the caller reads the app's
/// round count: each new round is taken to have happened at that reading, so readings
/// must come often (the engine reads every 10 ms) for the gaps to be right.
#[derive(Clone, Debug)]
pub struct Activity {
    rounds: u64,
    /// When the last round was seen (the launch, before the first).
    last_round: Instant,
    active: bool,
}

impl Activity {
    /// An app launched (or restarted) at `at`: not active until its first round.
    pub fn launched(at: Instant) -> Activity {
        Activity {
            rounds: 0,
            last_round: at,
            active: false,
        }
    }

    /// Updates the state from the app's round count at `now`.
    pub fn observe(&mut self, rounds: u64, now: Instant, th: Thresholds) {
        if rounds > self.rounds {
            // Two rounds or more since the last reading came less than a reading apart.
            if rounds - self.rounds > 1 || now.duration_since(self.last_round) < th.active_gap {
                self.active = true;
            }
            self.rounds = rounds;
            self.last_round = now;
        }
        if now.duration_since(self.last_round) >= th.inactive_after {
            self.active = false;
        }
    }

    pub fn is_active(&self) -> bool {
        self.active
    }

    /// The rounds seen so far.
    #[cfg(test)]
    pub fn rounds(&self) -> u64 {
        self.rounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TH: Thresholds = Thresholds {
        active_gap: Duration::from_secs(7),
        inactive_after: Duration::from_secs(20),
    };

    #[test]
    fn active_while_rounds_come_quickly_inactive_after_a_long_gap() {
        let t0 = Instant::now();
        let s = |x: u64| t0 + Duration::from_secs(x);
        let mut a = Activity::launched(t0);
        a.observe(0, s(0), TH);
        assert!(!a.is_active(), "not active before its first round");
        a.observe(1, s(5), TH);
        assert!(a.is_active(), "first round 5 s after launch");
        a.observe(2, s(11), TH);
        assert!(a.is_active());
        a.observe(3, s(21), TH);
        assert!(
            a.is_active(),
            "10 s apart: still active, not 20 s without one"
        );
        a.observe(3, s(41), TH);
        assert!(!a.is_active(), "20 s without a round");
        a.observe(4, s(45), TH);
        assert!(!a.is_active(), "one late round is not enough");
        a.observe(5, s(50), TH);
        assert!(a.is_active(), "rounds less than 7 s apart again");
    }

    #[test]
    fn a_slow_first_round_does_not_make_an_app_active() {
        let t0 = Instant::now();
        let s = |x: u64| t0 + Duration::from_secs(x);
        let mut a = Activity::launched(t0);
        a.observe(1, s(8), TH);
        assert!(!a.is_active(), "its first round came 8 s after launch");
        a.observe(2, s(12), TH);
        assert!(a.is_active(), "then two rounds 4 s apart");
    }

    #[test]
    fn two_rounds_between_readings_are_less_than_a_gap_apart() {
        let t0 = Instant::now();
        let s = |x: u64| t0 + Duration::from_secs(x);
        let mut a = Activity::launched(t0);
        a.observe(2, s(30), TH);
        assert!(a.is_active(), "two rounds seen at once");
        assert_eq!(a.rounds(), 2);
    }
}
