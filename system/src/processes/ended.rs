//! How the process mode books an app that is gone: the reaper tells the killer's kills
//! from the kernel's OOM kills, signals, crashes and apps that finished ([`Death`]),
//! ends its intervals on the timeline and keeps its counts ([`Ended`]); at the run's
//! end every app still running is stopped and booked the same way.

use std::time::Duration;

use super::death::{self, Death};
use super::launcher::Seen;
use super::protocol::Command;
use super::run::{Run, Slot};
use crate::run_loop::Apps;
use crate::summary::{AppRecord, Crash, Summary};
use crate::timeline::AppEvent;

/// Totals of apps that ended (every app has ended once the run stops them all).
#[derive(Default)]
pub(super) struct Ended {
    pub(super) crashed: Vec<Crash>,
    /// Apps the kernel's OOM killer killed, and those killed by a signal from elsewhere.
    pub(super) oom_killed: u64,
    pub(super) signalled: u64,
    pub(super) failed_verifications: u64,
    pub(super) verified_arrays: u64,
    pub(super) major_faults: u64,
    pub(super) gc_major_faults: u64,
    pub(super) object_faults: u64,
    pub(super) gc_faults: u64,
    pub(super) apps: Vec<AppRecord>,
}

impl Run<'_> {
    /// Notices apps that ended (killed, crashed, or done) and books them.
    pub(super) fn reap(&mut self, apps: &mut Apps) {
        let mut changed = false;
        for i in 0..self.slots.len() {
            let Some(p) = self.slots[i].proc.as_mut() else {
                continue;
            };
            // Booked once its reports are all read (on a later turn if need be: the
            // control loop never waits for the reader threads).
            if p.is_running() || !p.reports_done() {
                continue;
            }
            p.drain();
            let mut crash = p.crash();
            let signal = p.signal();
            let seen = p.seen();
            let pid = self.slots[i].pid;
            let t_s = apps.now().as_secs_f64();
            let by_killer = self.killer.kills().iter().any(|k| k.pid == pid);
            // A SIGKILL the killer did not send is the kernel's OOM killer's when the
            // group counts an OOM kill not yet booked against another app.
            let oom_now = self.group.oom_kills().unwrap_or(self.oom_booked);
            let death = Death::classify(
                by_killer,
                crash.is_some(),
                signal,
                oom_now > self.oom_booked,
            );
            match death {
                Death::OomKilled => {
                    self.oom_booked += 1;
                    self.ended.oom_killed += 1;
                }
                Death::Signalled => self.ended.signalled += 1,
                Death::Crashed if crash.is_none() => {
                    crash = signal.map(|s| format!("killed by {}", death::signal_name(s)));
                }
                _ => {}
            }
            // Its intervals end before the death (or the error) is booked; only an app
            // that finished by itself stays down, any death starts cold when it is
            // launched again.
            let id = self.slots[i].id;
            apps.gone(id, !death.restarts(), true);
            match (&crash, death) {
                (Some(error), _) => apps.timeline.value(id, "error", error),
                (None, Death::Ended) => {}
                (None, d) => apps.timeline.point(id, kill_event(d)),
            }
            if let Some(t) = &self.trace {
                t.death(id, pid, death.name(), crash.as_deref());
            }
            self.ended
                .book(&self.slots[i], &seen, crash, t_s, death.name());
            self.killer.forget(pid);
            self.slots[i].proc = None;
            changed = true;
        }
        if changed {
            self.update_states(apps);
        }
    }

    /// Stops every app that still runs (told first, so all wind down together), those
    /// still starting once they have.
    pub(super) fn stop_all(&mut self) {
        for s in self.spawner.finish() {
            if let Ok(proc) = s.result {
                let slot = &mut self.slots[s.id];
                slot.pid = proc.pid();
                slot.proc = Some(proc);
                slot.starting = false;
            }
        }
        for s in self.slots.iter_mut() {
            if let Some(p) = s.proc.as_mut() {
                p.tell(&Command::Stop);
            }
        }
        for s in self.slots.iter_mut() {
            if let Some(mut p) = s.proc.take() {
                let _ = p.stop(Duration::from_secs(10));
                p.drain();
                let crash = p.crash();
                let t_s = self.start.elapsed().as_secs_f64();
                let how = if crash.is_some() {
                    "crashed"
                } else {
                    "alive at the end"
                };
                self.ended.book(s, &p.seen(), crash, t_s, how);
            }
        }
    }
}

/// The timeline's point for a death (`kill` for the killer's, as before).
fn kill_event(d: Death) -> &'static str {
    match d {
        Death::Killed => "kill",
        Death::OomKilled => "oom-kill",
        Death::Signalled => "signal",
        Death::Crashed => "crash",
        Death::Ended => "end",
    }
}

impl Ended {
    /// Adds what the apps that ended counted to `summary`, and their records to the
    /// run's timeline `app_events`, after its intervals.
    pub(super) fn book_into(self, summary: &mut Summary, mut app_events: Vec<AppEvent>) {
        summary.failed_verifications = self.failed_verifications;
        summary.verified_arrays = self.verified_arrays;
        summary.major_faults = self.major_faults;
        summary.gc_major_faults = self.gc_major_faults;
        summary.object_faults = self.object_faults;
        summary.gc_faults = self.gc_faults;
        // The per-process records (how each life ended, its counts) after the intervals.
        app_events.extend(crate::summary::events_of(&self.apps));
        summary.app_events = app_events;
        summary.apps = self.apps;
        summary.reach = crate::reach::RunReach::of(&summary.policy, &summary.apps);
        summary.crashed_apps = self.crashed.len() as u64;
        summary.crashes = self.crashed;
        summary.oom_killed_apps = self.oom_killed;
        summary.signalled_apps = self.signalled;
        summary.deaths =
            summary.lmk_kills + self.oom_killed + self.signalled + summary.crashed_apps;
    }

    /// Books an app that ended: its verifications, faults and any crash.
    fn book(&mut self, slot: &Slot, seen: &Seen, crash: Option<String>, t_s: f64, how: &str) {
        // The System's last sample may be older than the app's last report, whose count
        // of all its major faults is read after its collections' (so never below it).
        let major_faults = slot.major_faults.max(seen.counter("major_faults"));
        self.apps.push(AppRecord {
            app: slot.id,
            pid: slot.pid,
            end: how.to_string(),
            t_s,
            rounds: seen.mark("round"),
            verified_arrays: seen.mark("verified"),
            rss_anon_bytes: slot.last_mem.anon,
            rss_file_bytes: slot.last_mem.file,
            rss_shmem_bytes: slot.last_mem.shmem,
            swap_bytes: slot.last_mem.swap,
            major_faults,
            gc_major_faults: seen.counter("gc_major_faults"),
            object_faults: seen.counter("object_faults"),
            reach: crate::reach::AppReach::from_counters(|n| seen.counter(n)),
        });
        self.failed_verifications += seen.mark("verify_failed");
        self.verified_arrays += seen.mark("verified");
        self.major_faults += major_faults;
        self.gc_major_faults += seen.counter("gc_major_faults");
        self.object_faults += seen.counter("object_faults");
        self.gc_faults += seen.counter("gc_faults");
        if let Some(error) = crash {
            self.crashed.push(Crash {
                app: slot.id,
                t_s,
                error,
            });
        }
    }
}
