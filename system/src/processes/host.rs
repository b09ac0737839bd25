//! How the process mode hosts an app for the run loop ([`crate::run_loop::Host`]): an
//! app process is started through the spawner, told to come to the front or go to the
//! back with a command on its standard input, observed through the marks and frames it
//! reports and what `/proc` and the group count, and its UI and control threads raised
//! while it is in front.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::protocol::Command;
use super::run::{Run, Slot, REPORT_EVERY};
use super::trace::{Span, SystemTrace};
use crate::launch::{Brought, LaunchParts, Pending};
use crate::run_loop::{Apps, Frame, Host, Told};
use crate::series::SeriesPoint;
use crate::summary::Summary;
use marvin_machine::lmk_policy::AppState;
use marvin_machine::uithread;
use marvin_runtime::cpuclock::boottime_ns;
use marvin_runtime::procfs;

impl Host for Run<'_> {
    /// The app's major faults and the group's limit hits before it was told.
    type Before = (u64, u64);
    type Turn = Option<Span>;

    fn begin_summary(&self, summary: &mut Summary) {
        summary.mode = "processes".into();
        summary.limit_bytes = self.cfg.system.budget as u64;
    }

    /// Books the longest gap between turns, opens the turn's trace slice, and gives the
    /// apps whose process has started their slot.
    fn begin_turn(&mut self, apps: &Apps) -> anyhow::Result<Option<Span>> {
        let turn = Instant::now();
        if let Some(last) = self.turn_began {
            self.control_gap_max = self.control_gap_max.max(turn - last);
        }
        self.turn_began = Some(turn);
        let span = self.trace.as_ref().map(SystemTrace::turn);
        self.take_started(apps)?;
        Ok(span)
    }

    fn pressure_step(&mut self, apps: &Apps) -> anyhow::Result<()> {
        self.tell_ready_apps(apps);
        if let Some(zram) = &mut self.zram {
            zram.tick(self.group)?;
        }
        self.killer_step(apps)
    }

    fn reap(&mut self, apps: &mut Apps) {
        Run::reap(self, apps);
    }

    /// The killer's wait paces the loop.
    fn activity_tick(&self) -> Option<Duration> {
        None
    }

    /// The last round count the app reported.
    fn rounds(&self, id: usize) -> Option<u64> {
        Some(self.slots.get(id)?.proc.as_ref()?.mark("round"))
    }

    fn sample(&mut self, apps: &Apps) -> SeriesPoint {
        Run::sample(self, apps)
    }

    fn finish(&mut self, apps: &mut Apps, summary: &mut Summary) {
        summary.kills = self.killer.kills().len() as u64;
        summary.lmk_kills = summary.kills;
        summary.lmk_kill_reasons = self.kill_reasons.clone();
        summary.lmk_held_ticks = self.hold.held_ticks();
        summary.lmk_holds_expired = self.hold.expired();
        summary.age_requests = self.age_requests;
        summary.restarts = apps.restarts;
        summary.control_gap_max_ns = self.control_gap_max.as_nanos() as u64;
        let (swap_in, swap_out) = self.swap_bytes();
        summary.swap_in_bytes = swap_in;
        summary.swap_out_bytes = swap_out;
        summary.swap_bytes_written = summary.swap_out_bytes;
        summary.swap_bytes_read = summary.swap_in_bytes;
    }

    fn start(&mut self, id: usize) -> anyhow::Result<()> {
        let slot = self.start_app(id)?;
        if id == self.slots.len() {
            self.slots.push(slot);
        } else {
            self.slots[id] = slot;
        }
        Ok(())
    }

    fn starting(&self, id: usize) -> bool {
        self.slots[id].starting
    }

    fn running(&self, id: usize) -> bool {
        self.slots[id].proc.is_some()
    }

    /// Tells the app to come to the foreground, its major faults and the group's limit
    /// hits read first.
    fn resume(&mut self, id: usize) -> Told<(u64, u64)> {
        let pid = self.slots[id].pid;
        let before = (
            procfs::major_faults(pid).unwrap_or(0),
            self.group.limit_hits().unwrap_or(0),
        );
        let proc = self.slots[id].proc.as_mut().expect("a running app");
        let (frames_before, _) = proc.frames();
        let told_ns = boottime_ns();
        proc.tell(&Command::Foreground);
        Told {
            told_ns,
            before,
            frames_before,
            restored_objects: 0,
        }
    }

    fn cold_before(&self) -> (u64, u64) {
        (0, self.group.limit_hits().unwrap_or(0))
    }

    fn send_to_background(&mut self, id: usize) {
        if let Some(p) = self.slots[id].proc.as_mut() {
            p.tell(&Command::Background);
        }
    }

    fn placed(&mut self, apps: &Apps) {
        self.update_states(apps);
    }

    fn event(&self, what: &str, id: usize) {
        if let Some(t) = &self.trace {
            t.app_event(what, id);
        }
    }

    fn make_room_ahead(&mut self, id: usize) {
        Run::make_room_ahead(self, id);
    }

    /// The frame the app reported after it was told, with what its launch brought back
    /// and where its time went.
    fn frame(&mut self, p: &Pending<(u64, u64)>, _raised: bool) -> Frame {
        let slot = &self.slots[p.app];
        let Some(proc) = slot.proc.as_ref() else {
            // A cold start's process is still being made.
            return if slot.starting {
                Frame::NotYet
            } else {
                Frame::Gone
            };
        };
        let f = match proc.frames() {
            (n, Some(f)) if n > p.frames_before && f.at_ns >= p.told_ns => f,
            _ => return Frame::NotYet,
        };
        let hits = self.group.limit_hits().ok();
        let (major_before, hits_before) = p.before;
        let since = |a: u64, b: u64| if b == 0 { 0 } else { a.saturating_sub(b) };
        Frame::Drawn {
            at_ns: f.at_ns,
            brought: Brought {
                restored_objects: f.restored_objects,
                object_faults: f.object_faults,
                swap_read_bytes: f.swap_read_bytes,
                major_faults: f.major_faults.saturating_sub(major_before),
            },
            parts: LaunchParts {
                deliver_ns: since(f.received_ns, p.told_ns),
                transition_ns: since(f.resumed_ns, f.received_ns),
                frame_ns: since(f.at_ns, f.resumed_ns),
                run_ns: f.run_ns,
                runqueue_ns: f.runqueue_ns,
                ui_fifo: f.ui_fifo,
                limit_hits: hits.map_or(0, |h| h.saturating_sub(hits_before)),
                room_ns: self.room_ns,
                prefetch_bytes: f.prefetch_bytes,
                looper_runqueue_ns: f.looper_runqueue_ns,
            },
        }
    }

    /// Its main looper and its control thread, which reads the System's commands (as
    /// Android's binder runs a call from a real-time caller at the caller's priority):
    /// the command is read and the frame drawn as soon as the handler under way returns
    /// rather than after the run queue of 30 busy apps. None until both run, or when FIFO
    /// UI is off (no real-time control loop).
    fn ui_threads(&mut self, id: usize) -> Option<Vec<u32>> {
        let s = &mut self.slots[id];
        if !self.fifo_ui || s.proc.is_none() {
            return None;
        }
        if s.ui_tids.is_empty() {
            let found: Vec<u32> = [uithread::LOOPER_THREAD, uithread::CONTROL_THREAD]
                .iter()
                .filter_map(|name| uithread::find_thread(s.pid, name).ok().flatten())
                .collect();
            if found.len() < 2 {
                return None;
            }
            s.ui_tids = found;
        }
        Some(s.ui_tids.clone())
    }

    /// Its other threads (saver, collector) run [`uithread::FRONT_NICE_STEPS`] nice
    /// steps up while it is in front, as Android's `top-app` cpu group favours them, so
    /// the frame does not wait behind them either.
    fn front_priority(&mut self, id: usize, front: bool) {
        let pid = self.slots[id].pid;
        let nice = if front {
            uithread::front_nice(self.base_nice)
        } else {
            self.base_nice
        };
        let _ = uithread::set_process_nice(pid, nice);
    }
}

impl Run<'_> {
    fn app_args(&self, dir: &Path) -> Vec<String> {
        let sys = &self.cfg.system;
        let mut a = vec![self.cfg.workload.display().to_string()];
        for (k, v) in &self.cfg.defines {
            a.push("-D".into());
            a.push(format!("{k}={v}"));
        }
        let mode = if self.pressure.swaps_objects() {
            "marvin"
        } else {
            "plain"
        };
        a.extend([
            "--mode".into(),
            mode.into(),
            "--swap-dir".into(),
            dir.display().to_string(),
            "--policy-file".into(),
            self.policy_file.display().to_string(),
            "--gc-max-free".into(),
            sys.gc_max_free.to_string(),
            "--report-every".into(),
            // Often enough for the activity thresholds: a round is taken to have happened
            // when its report arrives.
            format!("{}ms", REPORT_EVERY.as_millis()),
        ]);
        a
    }

    /// Starts app `id` in the foreground (a launch or a cold restart): its process is
    /// asked of the spawner and joins the slot once it runs ([`Run::take_started`]).
    fn start_app(&mut self, id: usize) -> anyhow::Result<Slot> {
        let dir = self.run_dir.join(format!("app{id}"));
        std::fs::create_dir_all(&dir)?;
        let mut args = self.app_args(&dir);
        if let Some(t) = self.trace.as_mut() {
            args.extend(t.app_args(id, &dir));
        }
        self.spawner.start(id, args);
        Ok(Slot {
            id,
            proc: None,
            starting: true,
            pid: 0,
            dir,
            killed: false,
            told_ready: false,
            major_faults: 0,
            last_mem: procfs::ProcMem::default(),
            ui_tids: Vec::new(),
            aged_at: None,
        })
    }

    /// Gives each app process that has started its slot, and the killer its pid.
    fn take_started(&mut self, apps: &Apps) -> anyhow::Result<()> {
        let started = self.spawner.started();
        if started.is_empty() {
            return Ok(());
        }
        for s in started {
            let proc = s.result.with_context(|| format!("starting app {}", s.id))?;
            let pid = proc.pid();
            self.killer.track(pid, AppState::Foreground)?;
            let slot = &mut self.slots[s.id];
            slot.proc = Some(proc);
            slot.pid = pid;
            slot.starting = false;
        }
        self.update_states(apps);
        Ok(())
    }

    pub(super) fn sample(&mut self, apps: &Apps) -> SeriesPoint {
        let (mut alive, mut active) = (0u32, 0u32);
        let mut rss = procfs::ProcMem::default();
        for s in self.slots.iter_mut() {
            if s.proc.is_none() {
                continue;
            }
            alive += 1;
            if apps.is_active(s.id) {
                active += 1;
            }
            if let Ok(m) = procfs::mem(s.pid) {
                s.last_mem = m;
                rss.anon += m.anon;
                rss.file += m.file;
                rss.shmem += m.shmem;
                rss.swap += m.swap;
            }
            if let Ok(f) = procfs::major_faults(s.pid) {
                s.major_faults = f;
            }
        }
        let usage = self.group.usage().unwrap_or(0);
        if let Some(t) = &self.trace {
            t.sample(usage, self.group.working_set().ok(), alive);
        }
        let (swap_in, swap_out) = self.swap_bytes();
        SeriesPoint {
            t_s: self.start.elapsed().as_secs_f64(),
            alive,
            active,
            // Every death so far: the killer's kills and the apps that died otherwise.
            kills: self.killer.kills().len() as u64
                + self.ended.oom_killed
                + self.ended.signalled
                + self.ended.crashed.len() as u64,
            restarts: apps.restarts,
            // What the kernel charges the group: the figure the limit applies to.
            accounted_bytes: usage,
            rss_bytes: rss.rss(),
            rss_anon_bytes: rss.anon,
            rss_file_bytes: rss.file,
            rss_shmem_bytes: rss.shmem,
            swap_written: swap_out,
            swap_read: swap_in,
            // Set when it joins the series.
            after_gap: false,
        }
    }

    /// Bytes swapped in and out since the run began (the group's own counts where the
    /// kernel keeps them, else the machine's: see [`Machine::swap_traffic`]).
    pub(super) fn swap_bytes(&self) -> (u64, u64) {
        if self.machine.swap().is_none() {
            // No swap of the run's, and its group may not swap (swappiness 0): the
            // machine's counters would only show other processes' traffic.
            return (0, 0);
        }
        self.machine
            .swap_traffic()
            .map_or((0, 0), |t| (t.swap_in_bytes, t.swap_out_bytes))
    }
}
