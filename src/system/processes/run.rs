//! One policy of the process mode: N app processes in one memory cgroup whose hard
//! limit is the budget, an activity manager that launches a new app every interval and
//! moves the others down the LRU, the low-memory killer, Marvin's reclaimer acting
//! from this process on the apps' memory, and a sampler that reads what the kernel
//! counts.
//!
//! Per policy:
//! - **kill**: plain heaps; the killer acts when the group's usage comes within the
//!   headroom of the limit (lmkd without swap).
//! - **kernel-swap**: plain heaps and real Linux swap for the run (a swap file, or
//!   zram); the killer stays as the backstop and acts on critical memory pressure, as
//!   lmkd does on a phone with swap.
//! - **marvin**: Marvin's runtime in every app; when usage comes within twice the
//!   headroom, the System's reclaimer punches the pages of saved, clean, cold objects
//!   out of background apps' memory files (least recently used first); the killer,
//!   the same as kill's, acts only when that was not enough.
//!
//! What happened to each app in time (launches, restarts, kills, the foreground and
//! active intervals) is recorded from the System's side, as the in-process model records
//! it: the foreground from the commands it sends, activity from the `round` marks the
//! apps report, a kill when the System sees the killed process gone.
//!
//! "Usage" is the group's working set: what it is charged less the clean inactive
//! page cache the kernel drops first ([`crate::host::memstat::MemStat::working_set`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use marvin_swap::external::ExternalApp;
use marvin_swap::policy::PolicyConfig;

use super::kill_hold::{HoldInput, KillHold};
use super::launcher::{AppProcess, Seen};
use super::protocol::Command;
use crate::host::lmk_policy::{AppState, Trigger};
use crate::host::machine::{Machine, MachineConfig, SwapChoice};
use crate::host::{cgroup, lmk, procstat, signals, swapdev, sys, uithread};
use crate::system::activity::{Activity, Thresholds};
use crate::system::launch::{Brought, LaunchParts, LaunchPhase, Pending};
use crate::system::series::{PolicySeries, SeriesPoint};
use crate::system::summary::{AppRecord, Crash, Summary};
use crate::system::timeline::{self, Timeline};
use crate::system::{Pressure, SystemConfig};
use marvin_runtime::cpuclock::boottime_ns;

/// How often apps report their marks; the System reads them into activity states on
/// every tick of its loop.
const REPORT_EVERY: Duration = Duration::from_millis(20);
/// The System's loop tick: launches, the killer, the reclaimer, activity.
const TICK: Duration = Duration::from_millis(20);
/// The control loop's `SCHED_FIFO` priority: lmkd's (1), the lowest real-time one.
const CONTROL_PRIORITY: i32 = 1;

/// Marvin: the room the System makes below its reclaim threshold before it tells an
/// app to come to the foreground (see [`Run::make_room_ahead`]): what a warm launch of
/// the shipped workloads faults back (a bucket of arrays with their read-ahead, 1-4 MiB)
/// with a margin for what it allocates.
const LAUNCH_ROOM: u64 = 8 << 20;

/// The name of an app's swap file and reclaim table in its directory.
const SWAP_NAME: &str = "swap";

/// What the process mode adds to the shared settings.
#[derive(Clone, Debug)]
pub struct ProcessConfig {
    pub system: SystemConfig,
    /// The program apps are started with (`marvin`).
    pub exe: PathBuf,
    /// The workload and its resolved defines.
    pub workload: PathBuf,
    pub defines: Vec<(String, i64)>,
    /// Marvin's swap policy, already scaled.
    pub policy: Arc<PolicyConfig>,
    /// The kernel-swap policy's swap device.
    pub swap_device: swapdev::Kind,
    /// Its size.
    pub swap_bytes: u64,
    /// The killer's headroom below the limit.
    pub headroom: u64,
    /// What is done before each policy starts (`--settle`).
    pub settle: SettleMode,
}

/// What the runner does between policies so that each starts from the same machine
/// state (see [`crate::host::settle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettleMode {
    /// Nothing: a policy starts right after the one before it.
    Off,
    /// `sync`, then wait (bounded) until the disks are at rest.
    Wait,
    /// As `Wait`, then drop the machine's clean page cache.
    DropCaches,
}

impl ProcessConfig {
    /// The default headroom: 1/16 of the limit, at least 4 MiB.
    pub fn default_headroom(limit: u64) -> u64 {
        (limit / 16).max(4 << 20)
    }
}

/// One app slot: the process while it runs, and what is known of it.
struct Slot {
    id: usize,
    proc: Option<AppProcess>,
    pid: u32,
    dir: PathBuf,
    activity: Activity,
    /// When it last left the foreground (LRU order of cached apps).
    left_foreground: Instant,
    /// Marvin: the System's view of its reclaim table and memory, once it is ready.
    external: Option<ExternalApp>,
    /// Major faults seen so far (the last sample before it ended).
    major_faults: u64,
    /// Its memory at the last sample.
    last_mem: procstat::ProcMem,
    /// It ended by itself (finished or crashed): the launch phase leaves it be.
    ended: bool,
    /// Its main looper and control threads, once both are seen (raised while it is in
    /// front).
    ui_tids: Vec<u32>,
    /// They run under `SCHED_FIFO` now.
    ui_raised: bool,
}

/// Totals of apps that ended (every app has ended once the run stops them all).
#[derive(Default)]
struct Ended {
    crashed: Vec<Crash>,
    failed_verifications: u64,
    verified_arrays: u64,
    major_faults: u64,
    gc_major_faults: u64,
    object_faults: u64,
    gc_faults: u64,
    apps: Vec<AppRecord>,
}

/// Runs one policy in the process mode.
pub fn run_policy(
    cfg: &ProcessConfig,
    pressure: Pressure,
    progress: crate::system::engine::Progress<'_>,
) -> anyhow::Result<(Summary, PolicySeries)> {
    let sys = &cfg.system;
    let run_dir =
        crate::system::policy_dir(sys.swap_dir.as_deref(), pressure, "marvin-processes-")?;
    let swap = match (pressure, cfg.swap_device) {
        (Pressure::KernelSwap, swapdev::Kind::File) => SwapChoice::File {
            dir: run_dir.path().to_path_buf(),
            bytes: cfg.swap_bytes,
        },
        (Pressure::KernelSwap, swapdev::Kind::Zram) => SwapChoice::Zram {
            bytes: cfg.swap_bytes,
        },
        _ => SwapChoice::None,
    };
    // Only kernel-swap swaps: the other policies' groups are kept off any swap the
    // machine may have (v1 swappiness 0), as a phone without swap would be.
    let limits = cgroup::Limits {
        swappiness: (pressure != Pressure::KernelSwap).then_some(0),
        ..cgroup::Limits::hard(sys.budget as u64)
    };
    let machine = Machine::set_up(&MachineConfig {
        limits,
        swap,
        state_dir: swapdev::default_state_dir(),
    })
    .context("setting up the run's cgroup and swap")?;
    // The control loop runs real-time, as lmkd does, so that on a busy machine its killer
    // and reclaimer still act before the kernel's OOM killer must; where that is not
    // allowed it runs as before, and says so.
    let realtime = match crate::host::sys::RealtimeThread::enter(CONTROL_PRIORITY) {
        Ok(rt) => Some(rt),
        Err(e) => {
            crate::errln!("marvin: the control loop runs without real-time priority: {e}");
            None
        }
    };
    let group = machine.group();
    // The same killer for kill and marvin (for marvin it is the backstop: its
    // reclaimer starts at twice the headroom); with swap, lmkd waits for pressure.
    let trigger = match pressure {
        // lmkd's PSI strategy: a complete stall, or swap below lmkd's
        // swap_free_low_percentage (10 % of the device) while memory is low too.
        Pressure::KernelSwap => Trigger::pressure()
            .with_swap_free_low(cfg.swap_bytes / 10)
            .with_swap_low_needing_headroom(cfg.headroom),
        _ => Trigger::usage(cfg.headroom),
    };
    let mut killer = lmk::Killer::new(group, trigger)?;
    if let Some(swap) = machine.swap() {
        killer = killer.with_swap(swap);
    }
    if let Some(source) = killer.stall_source() {
        crate::errln!(
            "marvin: the low-memory killer watches complete stalls through {}",
            source.describe()
        );
    }
    let policy_file = run_dir.path().join("policy.toml");
    std::fs::write(&policy_file, cfg.policy.to_toml_string())?;
    let start = Instant::now();
    let mut run = Run {
        cfg,
        pressure,
        group,
        machine: &machine,
        killer,
        slots: Vec::new(),
        ended: Ended::default(),
        start,
        timeline: Timeline::new(start),
        run_dir: run_dir.path().to_path_buf(),
        policy_file,
        restarts: 0,
        reclaim_ns: Vec::new(),
        reclaimed_bytes: 0,
        reclaim_short: false,
        room_ns: 0,
        working_set: 0,
        kill_reasons: Default::default(),
        hold: KillHold::default(),
        fg: None,
        // FIFO UI needs what the real-time control loop needs (CAP_SYS_NICE).
        fifo_ui: realtime.is_some(),
        // The apps inherit the System's nice.
        base_nice: procstat::stat(std::process::id()).map_or(0, |s| s.nice),
    };
    let result = run.drive(progress);
    run.stop_all();
    let ended = std::mem::take(&mut run.ended);
    let mut app_events = run.timeline.finish();
    let oom_kills = group.oom_kills().unwrap_or(0);
    let peak = group.peak().unwrap_or(0);
    drop(run);
    // Normal again before the swap goes off (swapoff reads every page back).
    drop(realtime);
    // Taken down here rather than on drop, so a failure to remove is reported.
    machine.tear_down()?;
    let (mut summary, series) = result?;
    summary.kernel_oom_kills = oom_kills;
    summary.peak_cgroup_bytes = peak;
    summary.failed_verifications = ended.failed_verifications;
    summary.verified_arrays = ended.verified_arrays;
    summary.major_faults = ended.major_faults;
    summary.gc_major_faults = ended.gc_major_faults;
    summary.object_faults = ended.object_faults;
    summary.gc_faults = ended.gc_faults;
    // The per-process records (how each life ended, its counts) after the intervals.
    app_events.extend(timeline::from_records(&ended.apps));
    summary.app_events = app_events;
    summary.apps = ended.apps;
    summary.crashed_apps = ended.crashed.len() as u64;
    summary.crashes = ended.crashed;
    if let Some(sig) = signals::stop_requested() {
        anyhow::bail!("stopped by signal {sig}; the cgroup and swap were removed");
    }
    Ok((summary, series))
}

struct Run<'a> {
    cfg: &'a ProcessConfig,
    pressure: Pressure,
    group: &'a cgroup::Group,
    machine: &'a Machine,
    killer: lmk::Killer<'a>,
    slots: Vec<Slot>,
    ended: Ended,
    start: Instant,
    /// What happened to each app, in time (written as `apps.csv`).
    timeline: Timeline,
    run_dir: PathBuf,
    policy_file: PathBuf,
    restarts: u64,
    reclaim_ns: Vec<u64>,
    reclaimed_bytes: u64,
    /// Marvin: the last reclaim pass took less than it asked for (nothing more was
    /// reclaimable); until then the killer waits.
    reclaim_short: bool,
    /// The group's working set as the last reclaim check read it.
    working_set: u64,
    /// How long the System took making room ahead of the last launch (marvin).
    room_ns: u64,
    /// The killer's kills by reason.
    kill_reasons: std::collections::BTreeMap<String, u64>,
    /// Marvin: the killer's bounded hold while a background app's saver still writes.
    hold: KillHold,
    fg: Option<usize>,
    /// The app in front has its UI thread (main looper) under `SCHED_FIFO`, every
    /// policy alike, as Android's FIFO UI runs it (see [`Run::raise_ui`]).
    fifo_ui: bool,
    /// The apps' nice value in the background (the front app's other threads run
    /// [`uithread::front_nice`] of it).
    base_nice: i32,
}

impl Run<'_> {
    fn drive(
        &mut self,
        progress: crate::system::engine::Progress<'_>,
    ) -> anyhow::Result<(Summary, PolicySeries)> {
        let sys = &self.cfg.system;
        let th = Thresholds::scaled(sys.time_scale);
        let mut series = PolicySeries {
            rep: 0,
            policy: self.pressure.name().to_string(),
            points: Vec::new(),
        };
        let mut summary = Summary::new(self.pressure.name());
        summary.mode = "processes".into();
        summary.limit_bytes = sys.budget as u64;
        let mut next_launch = Duration::ZERO;
        let mut next_switch = sys.switch_every;
        let mut next_sample = Duration::ZERO;
        let tick = TICK.min(sys.sample_every);
        // The launch phase begins once the last app has had its turn in front (off when
        // the foreground is switched round robin instead).
        let mut phase: LaunchPhase<(u64, u64)> =
            LaunchPhase::new(sys.launch, sys.launch_every * sys.apps as u32);
        let phase_on = sys.switch_every.is_none() && sys.launch.launches > 0;
        loop {
            if signals::stop_requested().is_some() {
                break;
            }
            let now = self.start.elapsed();
            // The run lasts its duration, and longer if its launch phase is still going.
            let all_launched = self.slots.len() == sys.apps;
            if now >= sys.duration && (!phase_on || !all_launched || phase.is_done()) {
                break;
            }
            if self.slots.len() < sys.apps && now >= next_launch {
                self.launch_new()?;
                next_launch += sys.launch_every;
            } else if let Some(every) = sys.switch_every {
                if self.slots.len() == sys.apps && now >= next_switch.unwrap_or(Duration::MAX) {
                    self.switch_next()?;
                    next_switch = Some(now + every);
                }
            }
            if phase_on && self.slots.len() == sys.apps {
                self.drive_launches(&mut phase)?;
            }
            // An app started in front has no looper thread at first: raised once seen.
            if let Some(fg) = self.fg {
                self.raise_ui(fg);
            }
            let kill = if self.pressure == Pressure::Marvin {
                // The killer decides on the state the reclaimer's pass just left: the
                // pass runs after the wait, right before the decision, so a kill for
                // "nothing reclaimable" is never made on a pass from before the wait
                // (objects saved or cooled meanwhile are taken first).
                let critical = self.killer.wait(tick)?;
                self.reclaim_if_needed();
                if self.may_kill() && !self.hold_kill(critical) {
                    self.killer.step(critical)?
                } else {
                    None
                }
            } else {
                self.killer.watch(tick)?
            };
            if let Some(kill) = kill {
                let why = match self.pressure {
                    Pressure::Marvin if self.reclaim_short => "nothing-reclaimable",
                    Pressure::Marvin => "reclaim-behind",
                    _ => kill.reason.name(),
                };
                *self.kill_reasons.entry(why.to_string()).or_default() += 1;
                // A memory file stays charged to the group while any descriptor of it
                // is open: let go of the victim's at once, or its pages would still
                // count at the next tick and cost a second app its life.
                if let Some(s) = self.slots.iter_mut().find(|s| s.pid == kill.pid) {
                    s.external = None;
                }
            }
            self.reap();
            self.observe_activity(th);
            if now >= next_sample {
                let p = self.sample(th);
                summary.observe(&p);
                progress(now, p.alive, p.active, p.kills, p.accounted_bytes);
                series.points.push(p);
                next_sample += sys.sample_every;
            }
        }
        let p = self.sample(th);
        summary.observe(&p);
        summary.final_alive = p.alive;
        summary.final_active = p.active;
        series.points.push(p);
        summary.kills = self.killer.kills().len() as u64;
        summary.lmk_kills = summary.kills;
        summary.lmk_kill_reasons = self.kill_reasons.clone();
        summary.lmk_held_ticks = self.hold.held_ticks();
        summary.lmk_holds_expired = self.hold.expired();
        summary.restarts = self.restarts;
        summary.reclaim_requests = self.reclaim_ns.len() as u64;
        summary.set_latencies(&mut self.reclaim_ns.clone());
        summary.external_reclaimed_bytes = self.reclaimed_bytes;
        // A launch still under way when the run ends never finished.
        phase.give_up(self.start.elapsed());
        summary.set_launches(std::mem::take(&mut phase.records), phase.unfinished);
        let (swap_in, swap_out) = self.swap_bytes();
        summary.swap_in_bytes = swap_in;
        summary.swap_out_bytes = swap_out;
        summary.swap_bytes_written = summary.swap_out_bytes;
        summary.swap_bytes_read = summary.swap_in_bytes;
        Ok((summary, series))
    }

    fn app_args(&self, dir: &Path) -> Vec<String> {
        let sys = &self.cfg.system;
        let mut a = vec![self.cfg.workload.display().to_string()];
        for (k, v) in &self.cfg.defines {
            a.push("-D".into());
            a.push(format!("{k}={v}"));
        }
        let mode = if self.pressure == Pressure::Marvin {
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

    /// Starts app `id` in the foreground (a launch or a cold restart).
    fn start_app(&mut self, id: usize) -> anyhow::Result<Slot> {
        let dir = self.run_dir.join(format!("app{id}"));
        std::fs::create_dir_all(&dir)?;
        let group = self.group;
        let proc = AppProcess::spawn_with(&self.cfg.exe, &self.app_args(&dir), |cmd| {
            group.spawn_inside(cmd).map_err(std::io::Error::other)
        })?;
        let pid = proc.pid();
        self.killer.track(pid, AppState::Foreground)?;
        Ok(Slot {
            id,
            proc: Some(proc),
            pid,
            dir,
            activity: Activity::launched(Instant::now()),
            left_foreground: Instant::now(),
            external: None,
            major_faults: 0,
            last_mem: procstat::ProcMem::default(),
            ended: false,
            ui_tids: Vec::new(),
            ui_raised: false,
        })
    }

    fn launch_new(&mut self) -> anyhow::Result<()> {
        let id = self.slots.len();
        if let Some(prev) = self.fg.take() {
            self.send_to_background(prev);
        }
        let slot = self.start_app(id)?;
        self.slots.push(slot);
        self.timeline.point(id, "launch");
        self.timeline.begin(id, "foreground");
        self.fg = Some(id);
        self.update_states();
        Ok(())
    }

    /// Brings the next app (round robin) to the foreground; a killed one starts cold.
    fn switch_next(&mut self) -> anyhow::Result<()> {
        let n = self.slots.len();
        let next = self.fg.map_or(0, |f| (f + 1) % n);
        self.bring_to_foreground(next)?;
        Ok(())
    }

    /// The launch phase's step: finishes the launch under way once its app reported
    /// its frame (or gives it up when the app died or it timed out), and makes the next
    /// launch when it is time.
    fn drive_launches(&mut self, phase: &mut LaunchPhase<(u64, u64)>) -> anyhow::Result<()> {
        let now = self.start.elapsed();
        if let Some(p) = &phase.pending {
            match self.slots[p.app].proc.as_ref() {
                None => phase.give_up(now),
                Some(proc) => match proc.frames() {
                    (n, Some(f)) if n > p.frames_before && f.at_ns >= p.told_ns => {
                        let hits = self.group.limit_hits().ok();
                        let told_ns = p.told_ns;
                        let room_ns = self.room_ns;
                        phase.finish(now, f.at_ns, |&(major_before, hits_before)| {
                            let since =
                                |a: u64, b: u64| if b == 0 { 0 } else { a.saturating_sub(b) };
                            (
                                Brought {
                                    restored_objects: f.restored_objects,
                                    object_faults: f.object_faults,
                                    swap_read_bytes: f.swap_read_bytes,
                                    major_faults: f.major_faults.saturating_sub(major_before),
                                },
                                LaunchParts {
                                    deliver_ns: since(f.received_ns, told_ns),
                                    transition_ns: since(f.resumed_ns, f.received_ns),
                                    frame_ns: since(f.at_ns, f.resumed_ns),
                                    run_ns: f.run_ns,
                                    runqueue_ns: f.runqueue_ns,
                                    ui_fifo: f.ui_fifo,
                                    limit_hits: hits.map_or(0, |h| h.saturating_sub(hits_before)),
                                    room_ns,
                                    prefetch_bytes: f.prefetch_bytes,
                                    looper_runqueue_ns: f.looper_runqueue_ns,
                                },
                            )
                        })
                    }
                    _ if phase.timed_out(boottime_ns()) => phase.give_up(now),
                    _ => {}
                },
            }
        }
        let candidates: Vec<usize> = self
            .slots
            .iter()
            .filter(|s| Some(s.id) != self.fg && !s.ended)
            .map(|s| s.id)
            .collect();
        if let Some(next) = phase.next_app(now, &candidates) {
            phase.pending = Some(self.bring_to_foreground(next)?);
        }
        Ok(())
    }

    /// Brings app `next` to the foreground (the one in front goes to the background): a
    /// running app is told, a killed one starts again. Returns the launch under way,
    /// with the app's major faults and the group's limit hits before it was told.
    fn bring_to_foreground(&mut self, next: usize) -> anyhow::Result<Pending<(u64, u64)>> {
        if let Some(prev) = self.fg.take() {
            self.send_to_background(prev);
        }
        let t_s = self.start.elapsed().as_secs_f64();
        let pid = self.slots[next].pid;
        self.room_ns = 0;
        if self.slots[next].proc.is_some() {
            // Before the app is told, as Android's activity manager does: room for what
            // it will fault back, and its UI thread raised.
            self.make_room_ahead(next);
            self.raise_ui(next);
        }
        let pending = match self.slots[next].proc.as_mut() {
            Some(proc) => {
                let before = (
                    procstat::major_faults(pid).unwrap_or(0),
                    self.group.limit_hits().unwrap_or(0),
                );
                let (frames_before, _) = proc.frames();
                let told_ns = boottime_ns();
                proc.tell(&Command::Foreground);
                Pending {
                    app: next,
                    cold: false,
                    told_ns,
                    t_s,
                    before,
                    frames_before,
                    restored_objects: 0,
                }
            }
            None => {
                let told_ns = boottime_ns();
                self.slots[next] = self.start_app(next)?;
                self.restarts += 1;
                self.timeline.point(next, "restart");
                Pending {
                    app: next,
                    cold: true,
                    told_ns,
                    t_s,
                    before: (0, self.group.limit_hits().unwrap_or(0)),
                    frames_before: 0,
                    restored_objects: 0,
                }
            }
        };
        self.timeline.begin(next, "foreground");
        self.fg = Some(next);
        self.update_states();
        Ok(pending)
    }

    fn send_to_background(&mut self, id: usize) {
        self.lower_ui(id);
        self.timeline.end(id, "foreground");
        let s = &mut self.slots[id];
        s.left_foreground = Instant::now();
        if let Some(p) = s.proc.as_mut() {
            p.tell(&Command::Background);
        }
    }

    /// Live apps other than the foreground one, least recently used first.
    fn background_lru(&self) -> Vec<usize> {
        let mut apps: Vec<(Instant, usize)> = self
            .slots
            .iter()
            .filter(|s| s.proc.is_some() && Some(s.id) != self.fg)
            .map(|s| (s.left_foreground, s.id))
            .collect();
        apps.sort();
        apps.into_iter().map(|(_, id)| id).collect()
    }

    /// Gives every live app its state: the foreground, the previous app, and the cached
    /// ones in LRU order (the most recently used first).
    fn update_states(&mut self) {
        let cached = self.background_lru();
        if let Some(fg) = self.fg {
            let _ = self
                .killer
                .set_state(self.slots[fg].pid, AppState::Foreground);
        }
        for (rank, id) in cached.iter().rev().enumerate() {
            let state = if rank == 0 {
                AppState::Previous
            } else {
                AppState::Cached {
                    lru_rank: rank as u32 - 1,
                }
            };
            // An app that just died is no longer tracked: nothing to update.
            let _ = self.killer.set_state(self.slots[*id].pid, state);
        }
    }

    /// Raises app `id`'s UI thread (its main looper) to `SCHED_FIFO`, as Android's
    /// activity manager does for the app in front with FIFO UI, and its control thread,
    /// which reads the System's commands, as Android's binder runs a call from a
    /// real-time caller at the caller's priority: the command is read and the frame drawn
    /// as soon as the handler under way returns rather than after the run queue of 30
    /// busy apps. Its other threads (saver, collector) run [`uithread::FRONT_NICE_STEPS`]
    /// nice steps up meanwhile, as Android's `top-app` cpu group favours them, so the
    /// frame does not wait behind them either. Nothing when they are raised already, not
    /// both running yet (tried again on the next tick), or FIFO UI is off; a refusal
    /// turns FIFO UI off for the run, said once.
    fn raise_ui(&mut self, id: usize) {
        let s = &mut self.slots[id];
        if !self.fifo_ui || s.ui_raised || s.proc.is_none() {
            return;
        }
        if s.ui_tids.is_empty() {
            let found: Vec<u32> = [uithread::LOOPER_THREAD, uithread::CONTROL_THREAD]
                .iter()
                .filter_map(|name| uithread::find_thread(s.pid, name).ok().flatten())
                .collect();
            if found.len() < 2 {
                return;
            }
            s.ui_tids = found;
        }
        let _ = uithread::set_process_nice(s.pid, uithread::front_nice(self.base_nice));
        for &tid in &s.ui_tids {
            match uithread::raise(tid) {
                Ok(()) => s.ui_raised = true,
                // The app died meanwhile: the reaper sees to it.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => {
                    crate::errln!(
                        "marvin: the app in front keeps a normal UI thread (no FIFO UI: {e})"
                    );
                    self.fifo_ui = false;
                    return;
                }
            }
        }
    }

    /// Puts app `id`'s UI and control threads back under `SCHED_OTHER` when it leaves
    /// the front.
    fn lower_ui(&mut self, id: usize) {
        let s = &mut self.slots[id];
        if s.ui_raised {
            for &tid in &s.ui_tids {
                // A refusal or a dead thread leaves nothing to undo.
                let _ = uithread::lower(tid);
            }
            let _ = uithread::set_process_nice(s.pid, self.base_nice);
        }
        s.ui_raised = false;
    }

    /// Marvin, before an app is told to come to the foreground: reclaims from the other
    /// background apps until usage is [`LAUNCH_ROOM`] below the reclaimer's threshold,
    /// so that the launch's faults find room instead of waiting for the System's next
    /// tick or the kernel's reclaim at the limit. (The killer makes no room ahead: it
    /// acts when the group runs out; kernel swap reclaims at the limit.)
    ///
    /// First it drops the page cache of the other apps' swap files (the pages their
    /// faults read and their savers wrote, clean, charged to the group until the kernel
    /// reclaims them at the limit): the reclaimer's threshold counts usage less inactive
    /// page cache, so without this the group sits at its limit with that cache, and every
    /// page the launch faults in is charged through the kernel's direct reclaim (hundreds
    /// to thousands of limit hits per launch, measured). The app coming back keeps its
    /// own cache: it is what its faults read.
    fn make_room_ahead(&mut self, next: usize) {
        if self.pressure == Pressure::Marvin {
            let t0 = Instant::now();
            self.drop_swap_caches(Some(next));
            self.reclaim_below(LAUNCH_ROOM, Some(next));
            self.room_ns = t0.elapsed().as_nanos() as u64;
        }
    }

    /// Marvin: whether the killer may act now. It waits while the reclaimer still
    /// finds bytes to take (the last pass got all it asked for), unless usage has come
    /// within a quarter of the headroom of the limit, where the kernel's OOM killer
    /// would be next.
    fn may_kill(&self) -> bool {
        let limit = self.cfg.system.budget as u64;
        self.reclaim_short || self.working_set > limit.saturating_sub(self.cfg.headroom / 4)
    }

    /// Marvin, on a tick the killer may act: whether it holds back instead because a
    /// background app's saver is still writing its cold objects (bounded in memory and
    /// time, [`KillHold`]). Never on a critical event; a tick on which the killer's
    /// threshold is not reached ends a hold.
    fn hold_kill(&mut self, critical: bool) -> bool {
        let Ok(working_set) = self.group.working_set() else {
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
        let saving = self.slots.iter().any(|s| {
            s.proc.is_some()
                && Some(s.id) != self.fg
                && s.external.as_ref().is_some_and(|x| x.table().is_saving())
        });
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

    /// Marvin: when usage comes within twice the headroom of the limit, reclaims from
    /// background apps, least recently used first, until it is below again.
    fn reclaim_if_needed(&mut self) {
        self.keep_cache_room();
        if let Some(short) = self.reclaim_below(0, None) {
            self.reclaim_short = short;
        }
    }

    /// Marvin, every tick: when the group's usage, page cache included, comes within the
    /// headroom of its limit, drops the swap-file page cache of every app but the one in
    /// front (whose launch may be reading ahead into it), as the room ahead of a launch
    /// does. The reclaimer's threshold leaves that cache out (working set), so without
    /// this the group sat at its limit between launches and a launch's faults that came
    /// while another app's faults or saves had refilled it ran into the limit.
    fn keep_cache_room(&mut self) {
        let limit = self.cfg.system.budget as u64;
        if self
            .group
            .usage()
            .is_ok_and(|u| u > limit.saturating_sub(self.cfg.headroom))
        {
            self.drop_swap_caches(self.fg);
        }
    }

    /// Drops the clean page cache of every running app's swap file but `except`'s.
    fn drop_swap_caches(&self, except: Option<usize>) {
        for s in &self.slots {
            if s.proc.is_some() && Some(s.id) != except {
                // A file not there yet (an app still starting) has no cache. The whole
                // file: a range past the header page would keep the large folio that
                // holds it, often much of the file's cache (that app's next fault reads
                // its header page back, in the background).
                let _ = sys::drop_file_cache(&s.dir.join(SWAP_NAME), 0);
            }
        }
    }

    /// Reclaims from background apps (never `except`), least recently used first, when
    /// usage is above twice the headroom plus `room` below the limit, until it is below
    /// again. Returns whether a pass got less than it asked for (`None`: no pass).
    fn reclaim_below(&mut self, room: u64, except: Option<usize>) -> Option<bool> {
        // The same measure the killer watches: usage less inactive page cache.
        let usage = self.group.working_set().ok()?;
        self.working_set = usage;
        let limit = self.cfg.system.budget as u64;
        let threshold = limit.saturating_sub(2 * self.cfg.headroom + room);
        if usage <= threshold {
            return Some(false);
        }
        let asked = usage - threshold + self.cfg.headroom;
        let mut want = asked;
        let t0 = Instant::now();
        let mut got = 0;
        for id in self.background_lru() {
            if want == 0 {
                break;
            }
            if Some(id) == except {
                continue;
            }
            let slot = &mut self.slots[id];
            if slot.external.is_none() {
                // Only a table of the run the app named when it was ready.
                let Some(run) = slot.proc.as_ref().and_then(|p| p.seen().run) else {
                    continue;
                };
                match ExternalApp::open_run(slot.pid, &run, &slot.dir, SWAP_NAME) {
                    Ok(x) => slot.external = Some(x),
                    Err(_) => continue,
                }
            }
            if let Some(x) = slot.external.as_mut() {
                let r = x.reclaim(want);
                got += r.bytes;
                want = want.saturating_sub(r.bytes);
            }
        }
        self.reclaim_ns.push(t0.elapsed().as_nanos() as u64);
        self.reclaimed_bytes += got;
        Some(got < asked)
    }

    /// Notices apps that ended (killed, crashed, or done) and books them.
    fn reap(&mut self) {
        let mut changed = false;
        for i in 0..self.slots.len() {
            let Some(p) = self.slots[i].proc.as_mut() else {
                continue;
            };
            if p.is_running() {
                continue;
            }
            p.drain();
            let crash = p.crash();
            let seen = p.seen();
            let pid = self.slots[i].pid;
            let t_s = self.start.elapsed().as_secs_f64();
            let killed = self.killer.kills().iter().any(|k| k.pid == pid);
            let how = match (&crash, killed) {
                (Some(_), _) => "crashed",
                (None, true) => "killed",
                (None, false) => "ended",
            };
            // Its intervals end before the kill (or the error) is booked.
            let id = self.slots[i].id;
            self.timeline.end(id, "foreground");
            self.timeline.end(id, "active");
            match &crash {
                Some(error) => self.timeline.value(id, "error", error),
                None if killed => self.timeline.point(id, "kill"),
                None => {}
            }
            self.ended.book(&self.slots[i], &seen, crash, t_s, how);
            self.killer.forget(pid);
            self.slots[i].proc = None;
            self.slots[i].external = None;
            self.slots[i].ended = !killed;
            if self.fg == Some(i) {
                self.fg = None;
            }
            changed = true;
        }
        if changed {
            self.update_states();
        }
    }

    /// Reads every running app's last reported round count into its activity state;
    /// a change begins or ends its `active` interval.
    fn observe_activity(&mut self, th: Thresholds) {
        let now = Instant::now();
        for s in self.slots.iter_mut() {
            if let Some(p) = s.proc.as_ref() {
                let was = s.activity.is_active();
                s.activity.observe(p.mark("round"), now, th);
                match (was, s.activity.is_active()) {
                    (false, true) => self.timeline.begin(s.id, "active"),
                    (true, false) => self.timeline.end(s.id, "active"),
                    _ => {}
                }
            }
        }
    }

    fn sample(&mut self, th: Thresholds) -> SeriesPoint {
        let (mut alive, mut active) = (0u32, 0u32);
        let mut rss = procstat::ProcMem::default();
        self.observe_activity(th);
        for s in self.slots.iter_mut() {
            if s.proc.is_none() {
                continue;
            }
            alive += 1;
            if s.activity.is_active() {
                active += 1;
            }
            if let Ok(m) = procstat::mem(s.pid) {
                s.last_mem = m;
                rss.anon += m.anon;
                rss.file += m.file;
                rss.shmem += m.shmem;
                rss.swap += m.swap;
            }
            if let Ok(f) = procstat::major_faults(s.pid) {
                s.major_faults = f;
            }
        }
        let usage = self.group.usage().unwrap_or(0);
        let (swap_in, swap_out) = self.swap_bytes();
        SeriesPoint {
            t_s: self.start.elapsed().as_secs_f64(),
            alive,
            active,
            kills: self.killer.kills().len() as u64,
            restarts: self.restarts,
            // What the kernel charges the group: the figure the limit applies to.
            accounted_bytes: usage,
            rss_bytes: rss.rss(),
            rss_anon_bytes: rss.anon,
            rss_file_bytes: rss.file,
            rss_shmem_bytes: rss.shmem,
            swap_written: swap_out,
            swap_read: swap_in,
        }
    }

    /// Bytes swapped in and out since the run began (the group's own counts where the
    /// kernel keeps them, else the machine's: see [`Machine::swap_traffic`]).
    fn swap_bytes(&self) -> (u64, u64) {
        if self.machine.swap().is_none() {
            // No swap of the run's, and its group may not swap (swappiness 0): the
            // machine's counters would only show other processes' traffic.
            return (0, 0);
        }
        self.machine
            .swap_traffic()
            .map_or((0, 0), |t| (t.swap_in_bytes, t.swap_out_bytes))
    }

    /// Stops every app that still runs (told first, so all wind down together).
    fn stop_all(&mut self) {
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

impl Ended {
    /// Books an app that ended: its verifications, faults and any crash.
    fn book(&mut self, slot: &Slot, seen: &Seen, crash: Option<String>, t_s: f64, how: &str) {
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
            major_faults: slot.major_faults,
            gc_major_faults: seen.counter("gc_major_faults"),
            object_faults: seen.counter("object_faults"),
        });
        self.failed_verifications += seen.mark("verify_failed");
        self.verified_arrays += seen.mark("verified");
        self.major_faults += slot.major_faults;
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
