//! Whether an app is active: it completes rounds (`mark "round"`) less than
//! `active_gap` apart; it becomes inactive after `inactive_after` without a round, and
//! active again when two rounds come less than `active_gap` apart.

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

/// The activity state of one app.
#[derive(Clone, Debug, Default)]
pub struct Activity {
    rounds: u64,
    last_round: Option<Instant>,
    active: bool,
}

impl Activity {
    /// Updates the state from the app's round count at `now`.
    pub fn observe(&mut self, rounds: u64, now: Instant, th: Thresholds) {
        if rounds > self.rounds {
            match self.last_round {
                // The first round after launch makes the app active.
                None => self.active = true,
                Some(prev)
                    if now.duration_since(prev) < th.active_gap || rounds - self.rounds > 1 =>
                {
                    self.active = true
                }
                Some(_) => {}
            }
            self.rounds = rounds;
            self.last_round = Some(now);
        }
        if let Some(prev) = self.last_round {
            if now.duration_since(prev) >= th.inactive_after {
                self.active = false;
            }
        }
    }

    pub fn is_active(&self) -> bool {
        self.active
    }

    pub fn rounds(&self) -> u64 {
        self.rounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_while_rounds_come_quickly_inactive_after_a_long_gap() {
        let th = Thresholds {
            active_gap: Duration::from_secs(7),
            inactive_after: Duration::from_secs(20),
        };
        let t0 = Instant::now();
        let s = |x: u64| t0 + Duration::from_secs(x);
        let mut a = Activity::default();
        a.observe(0, s(0), th);
        assert!(!a.is_active(), "not active before its first round");
        a.observe(1, s(5), th);
        assert!(a.is_active());
        a.observe(2, s(11), th);
        assert!(a.is_active());
        a.observe(2, s(32), th);
        assert!(!a.is_active(), "20 s without a round");
        a.observe(3, s(45), th);
        assert!(!a.is_active(), "one late round is not enough");
        a.observe(4, s(50), th);
        assert!(a.is_active(), "rounds less than 7 s apart again");
    }
}
