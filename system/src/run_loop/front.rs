//! The launch phase and the foreground, written once for both hosts: a new app
//! launched, an app brought back to the foreground (room made ahead, its UI thread
//! raised, told, or started cold when it is gone), the one in front sent to the
//! background, a launch finished at its frame or given up, and the UI thread of the app
//! in front under `SCHED_FIFO`. [`Front`] is the activity manager's [`AppHost`] over any
//! [`Host`].

use std::time::Duration;

use marvin_machine::uithread;
use marvin_runtime::cpuclock::boottime_ns;

use super::apps::Apps;
use super::host::{Frame, Host};
use crate::activity_manager::AppHost;
use crate::launch::{LaunchPhase, Pending};

/// The UI thread of the app in front under `SCHED_FIFO`, every policy and host alike
/// (Android's FIFO UI).
pub(crate) struct Ui {
    /// Off once the kernel refused it (said once).
    on: bool,
    /// The app whose threads are raised, and those threads.
    raised: Option<(usize, Vec<u32>)>,
}

impl Default for Ui {
    fn default() -> Ui {
        Ui {
            on: true,
            raised: None,
        }
    }
}

/// The activity manager's host: the driver's apps over a [`Host`].
pub(crate) struct Front<'a, H> {
    pub host: &'a mut H,
    pub apps: &'a mut Apps,
    ui: &'a mut Ui,
}

impl<'a, H: Host> Front<'a, H> {
    pub fn new(host: &'a mut H, apps: &'a mut Apps, ui: &'a mut Ui) -> Front<'a, H> {
        Front { host, apps, ui }
    }

    /// Sends app `id` to the background.
    fn send_to_background(&mut self, id: usize) {
        self.lower_ui(id);
        self.apps.timeline.end(id, "foreground");
        self.host.event("background", id);
        self.apps.slots[id].left_foreground = std::time::Instant::now();
        self.host.send_to_background(id);
    }

    /// Starts app `id` (`what`: a launch or a restart); its foreground interval begins.
    fn start(&mut self, id: usize, what: &'static str) -> anyhow::Result<()> {
        self.host.start(id)?;
        self.apps.started(id);
        self.apps.timeline.point(id, what);
        self.host.event(what, id);
        Ok(())
    }

    /// App `id` is in front now.
    fn in_front(&mut self, id: usize) {
        self.apps.timeline.begin(id, "foreground");
        self.host.event("foreground", id);
        self.apps.fg = Some(id);
        self.host.placed(self.apps);
    }

    /// Raises app `id`'s UI threads (its main looper, and in the process mode the
    /// thread that reads the System's commands) to `SCHED_FIFO` while it is in front, as
    /// Android's activity manager does for the app in front with FIFO UI: its frame runs
    /// as soon as the handler under way returns. Nothing when they are raised already or
    /// do not run yet (tried again on the next tick); a refusal (no `CAP_SYS_NICE`)
    /// turns it off for the run, said once.
    pub fn raise_ui(&mut self, id: usize) {
        if !self.ui.on || self.ui.raised.as_ref().is_some_and(|(a, _)| *a == id) {
            return;
        }
        let Some(tids) = self.host.ui_threads(id) else {
            return;
        };
        if let Some((old, _)) = &self.ui.raised {
            let old = *old;
            self.lower_ui(old);
        }
        self.host.front_priority(id, true);
        let mut any = false;
        for &tid in &tids {
            match uithread::raise(tid) {
                Ok(()) => any = true,
                // The app died meanwhile: the reaper sees to it.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => {
                    marvin_console::errln!(
                        "marvin: the app in front keeps a normal UI thread (no FIFO UI: {e})"
                    );
                    self.ui.on = false;
                    break;
                }
            }
        }
        if any {
            self.ui.raised = Some((id, tids));
        }
    }

    /// Puts app `id`'s UI threads back under `SCHED_OTHER` when it leaves the front.
    fn lower_ui(&mut self, id: usize) {
        if self.ui.raised.as_ref().is_some_and(|(a, _)| *a == id) {
            if let Some((_, tids)) = self.ui.raised.take() {
                for tid in tids {
                    // A refusal or a dead thread leaves nothing to undo.
                    let _ = uithread::lower(tid);
                }
            }
            self.host.front_priority(id, false);
        }
    }
}

impl<H: Host> AppHost for Front<'_, H> {
    type Before = H::Before;

    fn now(&self) -> Duration {
        self.apps.now()
    }

    fn launched(&self) -> usize {
        self.apps.launched()
    }

    fn foreground(&self) -> Option<usize> {
        self.apps.fg
    }

    fn launch_new(&mut self) -> anyhow::Result<()> {
        let id = self.apps.launched();
        if let Some(prev) = self.apps.fg.take() {
            self.send_to_background(prev);
        }
        self.start(id, "launch")?;
        self.in_front(id);
        Ok(())
    }

    /// A running app is told (marvin restores it as its policy says); one that is gone
    /// starts again. Before it is told, as Android's activity manager does: room for
    /// what it will fault back, and its UI thread raised.
    fn bring_to_foreground(&mut self, next: usize) -> anyhow::Result<Pending<H::Before>> {
        if let Some(prev) = self.apps.fg.take() {
            self.send_to_background(prev);
        }
        let t_s = self.apps.now().as_secs_f64();
        self.host.make_room_ahead(next);
        self.raise_ui(next);
        let pending = if self.host.running(next) {
            let told = self.host.resume(next);
            Pending {
                app: next,
                cold: false,
                told_ns: told.told_ns,
                t_s,
                before: told.before,
                frames_before: told.frames_before,
                restored_objects: told.restored_objects,
            }
        } else {
            let told_ns = boottime_ns();
            if !self.host.starting(next) {
                self.start(next, "restart")?;
                self.apps.restarts += 1;
            }
            Pending {
                app: next,
                cold: true,
                told_ns,
                t_s,
                before: self.host.cold_before(),
                frames_before: 0,
                restored_objects: 0,
            }
        };
        self.in_front(next);
        Ok(pending)
    }

    fn launch_candidates(&self) -> Vec<usize> {
        (0..self.apps.launched())
            .filter(|&i| Some(i) != self.apps.fg && !self.apps.slots[i].ended)
            .collect()
    }

    fn check_launch(&mut self, phase: &mut LaunchPhase<H::Before>, now: Duration) {
        let Some(p) = &phase.pending else {
            return;
        };
        let raised = self.ui.raised.as_ref().is_some_and(|(a, _)| *a == p.app);
        match self.host.frame(p, raised) {
            Frame::Gone => phase.give_up(now),
            Frame::Drawn {
                at_ns,
                brought,
                parts,
            } => phase.finish(now, at_ns, |_| (brought, parts)),
            Frame::NotYet => {
                if phase.timed_out(boottime_ns()) {
                    phase.give_up(now);
                }
            }
        }
    }

    fn raise_ui(&mut self, id: usize) {
        Front::raise_ui(self, id);
    }
}
