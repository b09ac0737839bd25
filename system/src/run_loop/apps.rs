//! What the driver knows of every app of a run, whichever host runs it: its activity,
//! whether it ended by itself, when it last left the foreground; the app in front, the
//! cold restarts and the run's timeline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use marvin_machine::lmk_policy;

use super::host::Host;
use crate::activity::{Activity, Thresholds};
use crate::timeline::Timeline;

/// One app of the run as the driver sees it (its host keeps the app itself).
pub(crate) struct Slot {
    pub activity: Activity,
    /// It ended by itself (finished or crashed): the launch phase leaves it be.
    pub ended: bool,
    /// When it last left the foreground (LRU order of the background apps).
    pub left_foreground: Instant,
}

impl Slot {
    /// An app started now (a launch or a cold restart).
    fn started() -> Slot {
        let now = Instant::now();
        Slot {
            activity: Activity::launched(now),
            ended: false,
            left_foreground: now,
        }
    }
}

/// Every app of the run, the one in front, and what happened to each in time.
pub(crate) struct Apps {
    pub slots: Vec<Slot>,
    pub fg: Option<usize>,
    pub start: Instant,
    /// Cold restarts so far.
    pub restarts: u64,
    /// What happened to each app, in time (shared with a host's other threads).
    pub timeline: Arc<Timeline>,
}

impl Apps {
    /// A run beginning now.
    pub fn new() -> Apps {
        let start = Instant::now();
        Apps {
            slots: Vec::new(),
            fg: None,
            start,
            restarts: 0,
            timeline: Arc::new(Timeline::new(start)),
        }
    }

    /// The time since the run began.
    pub fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// The apps launched so far (ids `0..launched`).
    pub fn launched(&self) -> usize {
        self.slots.len()
    }

    /// App `id` (re)started now.
    pub(super) fn started(&mut self, id: usize) {
        if id == self.slots.len() {
            self.slots.push(Slot::started());
        } else {
            self.slots[id] = Slot::started();
        }
    }

    /// Whether app `id` is active now.
    pub fn is_active(&self, id: usize) -> bool {
        self.slots.get(id).is_some_and(|s| s.activity.is_active())
    }

    /// App `id` is gone: its foreground and active intervals end; `ended` when it ended
    /// by itself for good (the launch phase leaves it be); `leaves_front` when the
    /// foreground is no longer its.
    pub fn gone(&mut self, id: usize, ended: bool, leaves_front: bool) {
        self.timeline.end(id, "foreground");
        self.timeline.end(id, "active");
        self.slots[id].ended = ended;
        if leaves_front && self.fg == Some(id) {
            self.fg = None;
        }
    }

    /// Live apps other than the one in front, least recently used first
    /// ([`lmk_policy::lru_background`]); `live` says which apps run.
    pub fn background_lru(&self, live: impl Fn(usize) -> bool) -> Vec<usize> {
        let standings: Vec<lmk_policy::Standing<Instant>> = (0..self.slots.len())
            .filter(|&id| live(id))
            .map(|id| lmk_policy::Standing {
                id,
                foreground: Some(id) == self.fg,
                left_foreground: self.slots[id].left_foreground,
            })
            .collect();
        lmk_policy::lru_background(&standings)
    }

    /// Reads every observable app's round count into its activity state; a change
    /// begins or ends its `active` interval.
    pub fn observe_activity<H: Host>(&mut self, host: &H, th: Thresholds) {
        let now = Instant::now();
        for (id, s) in self.slots.iter_mut().enumerate() {
            let Some(rounds) = host.rounds(id) else {
                continue;
            };
            let was = s.activity.is_active();
            s.activity.observe(rounds, now, th);
            match (was, s.activity.is_active()) {
                (false, true) => self.timeline.begin(id, "active"),
                (true, false) => self.timeline.end(id, "active"),
                _ => {}
            }
        }
    }
}
