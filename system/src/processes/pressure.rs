//! The process mode's pressure step, after each turn of the run loop: the low-memory
//! killer's wait and decision (for marvin, held back while the reclaimer still finds
//! memory or a saver still writes), Marvin's reclaimer told which apps run, in LRU order,
//! and asked for room ahead of a launch, and background apps told to age on demand.

use std::time::{Duration, Instant};

use super::kill_hold::HoldInput;
use super::protocol::Command;
use super::reclaimer::{LiveApp, Request};
use super::run::{Run, ROOM_WAIT, TICK};
use super::trace::SystemTrace;
use crate::run_loop::{Apps, LAUNCH_ROOM};
use marvin_machine::lmk_policy::{self, AppState};
use marvin_runtime::cpuclock::boottime_ns;
use marvin_swap::SwapPolicy;

impl Run<'_> {
    /// The killer waits for the rest of the tick (or a pressure event) and acts when
    /// its trigger and, for marvin, the reclaimer say so; a kill is booked by its reason,
    /// and the reclaimer lets go of the victim at once.
    pub(super) fn killer_step(&mut self, apps: &Apps) -> anyhow::Result<()> {
        let tick = TICK.min(self.cfg.system.sample_every);
        let left = tick.saturating_sub(self.turn_began.map_or(Duration::ZERO, |t| t.elapsed()));
        let kill = if self.lmk_off {
            self.killer.wait(left)?;
            None
        } else if self.pressure.swaps_objects() {
            // The reclaimer works on its own thread; the killer decides on the
            // working set now and on what the reclaimer's last pass found.
            let wait = self.trace.as_ref().map(SystemTrace::wait);
            let critical = self.killer.wait(left)?;
            drop(wait);
            let working_set = self.group.working_set().ok();
            if let Some(ws) = working_set {
                self.working_set = ws;
                self.age_on_demand(apps, ws);
            }
            if self.may_kill() && !self.hold_kill(critical, working_set) {
                self.killer.step(critical)?
            } else {
                None
            }
        } else {
            let _wait = self.trace.as_ref().map(SystemTrace::wait);
            self.killer.watch(left)?
        };
        if let Some(kill) = kill {
            let short = self
                .reclaimer
                .as_ref()
                .is_some_and(|r| r.shared().short() && !r.shared().held_up(boottime_ns()));
            let why = match (self.pressure.swaps_objects(), short) {
                (true, true) => "nothing-reclaimable",
                (true, false) => "reclaim-behind",
                (false, _) => kill.reason.name(),
            };
            *self.kill_reasons.entry(why.to_string()).or_default() += 1;
            if let Some(t) = &self.trace {
                let id = self.slots.iter().position(|s| s.pid == kill.pid);
                t.kill(id, kill.pid, why);
            }
            // A memory file stays charged to the group while any descriptor of it
            // is open: the reclaimer lets go of the victim's at once, or its pages
            // would still count at the next tick and cost a second app its life.
            if let Some(s) = self.slots.iter_mut().find(|s| s.pid == kill.pid) {
                s.killed = true;
            }
            if let Some(r) = &self.reclaimer {
                r.forget(kill.pid);
            }
            self.tell_reclaimer(apps);
            if let Some(r) = &self.reclaimer {
                self.passes_at_kill = r.shared().complete_passes();
            }
        }
        Ok(())
    }

    /// Live apps other than the foreground one, least recently used first.
    pub(super) fn background_lru(&self, apps: &Apps) -> Vec<usize> {
        apps.background_lru(|id| self.slots[id].proc.is_some())
    }

    /// Aging on demand (marvin): while the reclaimer's last pass came up short and the
    /// group's working set is where the reclaimer works (within twice the killer's
    /// headroom of the limit), every background app not told so within the policy's
    /// foreground working-set period is told to age its working set now
    /// ([`Command::Age`]): a run of its heap task's working-set rounds and saves at the
    /// foreground period instead of the background one, so that what it no longer
    /// touches turns cold and saved, and so reclaimable, as a kernel's reclaim ages its
    /// LRU lists faster when it finds too little to take. Without it, an app sent to the
    /// background holds all its objects for four background rounds (12 s at the
    /// defaults), and apps larger than the defaults' launched every 1.4 s held more than
    /// the limit between them ([the note](../../../docs/notes/2026-12-04-aging-on-demand.md)).
    fn age_on_demand(&mut self, apps: &Apps, working_set: u64) {
        let Some(r) = &self.reclaimer else {
            return;
        };
        let limit = self.cfg.system.budget as u64;
        if !r.shared().short() || working_set <= limit.saturating_sub(2 * self.cfg.headroom) {
            return;
        }
        let every = self.cfg.policy.working_set_period(true);
        let now = Instant::now();
        for s in &mut self.slots {
            if Some(s.id) == apps.fg || s.killed || !s.told_ready {
                continue;
            }
            if s.aged_at
                .is_some_and(|t| now.saturating_duration_since(t) < every)
            {
                continue;
            }
            if let Some(p) = s.proc.as_mut() {
                p.tell(&Command::Age);
                s.aged_at = Some(now);
                self.age_requests += 1;
            }
        }
    }

    /// Gives every live app its state: the foreground, the previous app, and the cached
    /// ones in LRU order (the most recently used first).
    pub(super) fn update_states(&mut self, apps: &Apps) {
        let cached = self.background_lru(apps);
        if let Some(fg) = apps.fg {
            let _ = self
                .killer
                .set_state(self.slots[fg].pid, AppState::Foreground);
        }
        for (id, state) in lmk_policy::background_states(&cached).into_iter().rev() {
            // An app that just died is no longer tracked: nothing to update.
            let _ = self.killer.set_state(self.slots[id].pid, state);
        }
        self.tell_reclaimer(apps);
    }

    /// Marvin: tells the reclaimer which apps run, in LRU order, and which is in front.
    pub(super) fn tell_reclaimer(&self, apps: &Apps) {
        let Some(r) = &self.reclaimer else {
            return;
        };
        let live = self
            .slots
            .iter()
            .filter(|s| !s.killed)
            .filter_map(|s| {
                let p = s.proc.as_ref()?;
                Some(LiveApp {
                    id: s.id,
                    pid: s.pid,
                    dir: s.dir.clone(),
                    run: p.run_id(),
                })
            })
            .collect();
        let lru = self
            .background_lru(apps)
            .into_iter()
            .filter(|&id| !self.slots[id].killed)
            .collect();
        r.send(Request::Apps {
            live,
            lru,
            front: apps.fg,
        });
    }

    /// Marvin: once an app is ready (it gave its run id), the reclaimer is told, so it
    /// may open its table and memory.
    pub(super) fn tell_ready_apps(&mut self, apps: &Apps) {
        if self.reclaimer.is_none() {
            return;
        }
        let mut any = false;
        for s in self.slots.iter_mut() {
            if !s.told_ready && s.proc.as_ref().is_some_and(|p| p.run_id().is_some()) {
                s.told_ready = true;
                any = true;
            }
        }
        if any {
            self.tell_reclaimer(apps);
        }
    }

    /// Marvin, before an app is told to come to the foreground: has the reclaimer take
    /// from the other background apps until usage is [`LAUNCH_ROOM`] below its
    /// threshold, so that the launch's faults find room instead of waiting for its next
    /// pass or the kernel's reclaim at the limit, and waits for that up to
    /// [`ROOM_WAIT`] (the control loop's turn stays short). (The killer makes no room
    /// ahead: it acts when the group runs out; kernel swap reclaims at the limit.)
    ///
    /// The reclaimer first has the page cache of the other apps' swap files dropped
    /// (the pages their faults read and their savers wrote, clean, charged to the group
    /// until the kernel reclaims them at the limit): the reclaim threshold counts usage
    /// less inactive page cache, so without this the group sits at its limit with that
    /// cache, and every page the launch faults in is charged through the kernel's direct
    /// reclaim (hundreds to thousands of limit hits per launch, measured). The app coming
    /// back keeps its own cache: it is what its faults read.
    pub(super) fn make_room_ahead(&mut self, next: usize) {
        self.room_ns = 0;
        let Some(r) = &self.reclaimer else {
            return;
        };
        if self.slots[next].proc.is_none() {
            return;
        }
        let _room = self.trace.as_ref().map(|t| t.room(next));
        let t0 = Instant::now();
        let (done, wait) = crossbeam_channel::bounded(1);
        r.send(Request::Room {
            room: LAUNCH_ROOM,
            except: next,
            done,
        });
        let _ = wait.recv_timeout(ROOM_WAIT);
        self.room_ns = t0.elapsed().as_nanos() as u64;
    }

    /// Marvin: whether the killer may act now. It waits while the reclaimer still
    /// finds bytes to take (its last complete pass got all it asked for, or it is still
    /// taking), and after a kill until a pass made since has found nothing either,
    /// unless usage has come within a quarter of the headroom of the limit, where the
    /// kernel's OOM killer would be next.
    fn may_kill(&self) -> bool {
        let limit = self.cfg.system.budget as u64;
        if self.working_set > limit.saturating_sub(self.cfg.headroom / 4) {
            return true;
        }
        self.reclaimer.as_ref().is_some_and(|r| {
            let s = r.shared();
            // A pass held up far past its budget takes nothing meanwhile: the killer
            // acts as kill's does rather than wait for it.
            s.held_up(boottime_ns())
                || (s.short() && s.complete_passes() >= self.passes_at_kill + 2)
        })
    }

    /// Marvin, on a tick the killer may act: whether it holds back instead because a
    /// background app's saver is still writing its cold objects (bounded in memory and
    /// time, [`KillHold`]). Never on a critical event; a tick on which the killer's
    /// threshold is not reached ends a hold.
    /// `working_set` is the group's, as this turn read it (`None`: it could not).
    fn hold_kill(&mut self, critical: bool, working_set: Option<u64>) -> bool {
        let Some(working_set) = working_set else {
            return false;
        };
        let limit = self.cfg.system.budget as u64;
        if working_set <= limit.saturating_sub(self.cfg.headroom) {
            // The killer would not act on usage: no kill to hold back.
            self.hold.release();
            return false;
        }
        if critical {
            return false;
        }
        // What a saver writes is worth waiting for only while the reclaimer can take it.
        let saving = self
            .reclaimer
            .as_ref()
            .is_some_and(|r| r.shared().saving() && !r.shared().held_up(boottime_ns()));
        self.hold.hold(
            Instant::now(),
            HoldInput {
                saving,
                working_set,
                limit,
                headroom: self.cfg.headroom,
            },
        )
    }
}
