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
//! page cache the kernel drops first ([`marvin_machine::memstat::MemStat::working_set`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use marvin_swap::{PolicyConfig, SwapPolicy};

use super::death::{self, Death};
use super::kill_hold::{HoldInput, KillHold};
use super::launcher::{AppProcess, Seen};
use super::protocol::Command;
use super::reclaimer::{self, LiveApp, Request};
use super::spawner::Spawner;
use super::trace::{self, SystemTrace};
use crate::activity::{Activity, Thresholds};
use crate::activity_manager::{ActivityManager, AppHost};
use crate::launch::{Brought, LaunchParts, LaunchPhase, Pending};
use crate::series::{PolicySeries, SeriesPoint};
use crate::summary::{AppRecord, Crash, Summary};
use crate::timeline::{self, Timeline};
use crate::{PressurePolicy, SystemConfig};
use marvin_machine::lmk_policy::{AppState, Trigger};
use marvin_machine::{cgroup, lmk, procstat, signals, swapdev, uithread};
use marvin_machine::{Machine, MachineConfig, SwapChoice};
use marvin_runtime::cpuclock::boottime_ns;

/// How often apps report their marks; the System reads them into activity states on
/// every tick of its loop.
const REPORT_EVERY: Duration = Duration::from_millis(20);
/// The System's loop tick: launches, the killer, the reclaimer, activity.
const TICK: Duration = Duration::from_millis(20);
/// The control loop's `SCHED_FIFO` priority: one above the UI thread of the app in
/// front ([`uithread::UI_PRIORITY`], Android's FIFO UI), so no app keeps the killer and
/// the sampler waiting (at equal priority a woken FIFO thread waits for the one
/// running, measured: turns of 40-70 ms). Marvin's reclaimer thread runs at the UI
/// thread's.
const CONTROL_PRIORITY: i32 = uithread::UI_PRIORITY + 1;

/// Marvin: the room the System makes below its reclaim threshold before it tells an
/// app to come to the foreground (see [`Run::make_room_ahead`]): what a warm launch of
/// the shipped workloads faults back (a bucket of arrays with their read-ahead, 1-4 MiB)
/// with a margin for what it allocates.
const LAUNCH_ROOM: u64 = 8 << 20;

/// Marvin: the longest the control loop waits for that room before it tells the app
/// anyway (the reclaimer goes on making it).
const ROOM_WAIT: Duration = Duration::from_millis(40);

/// A test hook: with this variable set, the low-memory killer makes no kill (so a test
/// can see what the kernel's OOM killer does); the run says so on its first lines.
pub const NO_LMK_ENV: &str = "MARVIN_TEST_NO_LMK";

/// The name of an app's swap file and reclaim table in its directory.
const SWAP_NAME: &str = "swap";

/// What the process mode adds to the shared settings.
#[derive(Clone, Debug)]
pub struct ProcessConfig {
    /// The machine, held by the experiment from before its sweep to its last policy's
    /// end ([`crate::guardian::take_machine`]).
    pub machine: Arc<marvin_machine::MachineLock>,
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
/// state (see [`marvin_machine::settle`]).
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
    /// The killer chose it: no longer live for the reclaimer, though not reaped yet.
    killed: bool,
    /// Major faults seen so far (the last sample before it ended).
    major_faults: u64,
    /// Its memory at the last sample.
    last_mem: procstat::ProcMem,
    /// It ended by itself (finished or crashed): the launch phase leaves it be.
    ended: bool,
    /// Its process is being started (no process yet).
    starting: bool,
    /// The reclaimer was told its run id (it is ready).
    told_ready: bool,
    /// Its main looper and control threads, once both are seen (raised while it is in
    /// front).
    ui_tids: Vec<u32>,
    /// They run under `SCHED_FIFO` now.
    ui_raised: bool,
    /// When it was last told to age its working set ([`Run::age_on_demand`]).
    aged_at: Option<Instant>,
}

/// Totals of apps that ended (every app has ended once the run stops them all).
#[derive(Default)]
struct Ended {
    crashed: Vec<Crash>,
    /// Apps the kernel's OOM killer killed, and those killed by a signal from elsewhere.
    oom_killed: u64,
    signalled: u64,
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
    pressure: PressurePolicy,
    progress: crate::engine::Progress<'_>,
) -> anyhow::Result<(Summary, PolicySeries)> {
    let sys = &cfg.system;
    let run_dir = crate::policy_dir(sys.swap_dir.as_deref(), pressure, "marvin-processes-")?;
    let swap = match (pressure, cfg.swap_device) {
        (PressurePolicy::KernelSwap, swapdev::Kind::File) => SwapChoice::File {
            dir: run_dir.path().to_path_buf(),
            bytes: cfg.swap_bytes,
        },
        (PressurePolicy::KernelSwap, swapdev::Kind::Zram) => SwapChoice::Zram {
            bytes: cfg.swap_bytes,
        },
        _ => SwapChoice::None,
    };
    // Only kernel-swap swaps: the other policies' groups are kept off any swap the
    // machine may have (v1 swappiness 0), as a phone without swap would be.
    let limits = cgroup::Limits {
        swappiness: (pressure != PressurePolicy::KernelSwap).then_some(0),
        ..cgroup::Limits::hard(sys.budget as u64)
    };
    let machine = Machine::set_up(
        &MachineConfig {
            limits,
            swap,
            state_dir: swapdev::default_state_dir(),
        },
        cfg.machine.clone(),
    )
    .context("setting up the run's cgroup and swap")?;
    // The control loop runs real-time, as lmkd does, so that on a busy machine its killer
    // and reclaimer still act before the kernel's OOM killer must; where that is not
    // allowed it runs as before, and says so.
    let realtime = match marvin_machine::sys::RealtimeThread::enter(CONTROL_PRIORITY) {
        Ok(rt) => Some(rt),
        Err(e) => {
            marvin_console::errln!("marvin: the control loop runs without real-time priority: {e}");
            None
        }
    };
    let group = machine.group();
    // The same killer for kill and marvin (for marvin it is the backstop: its
    // reclaimer starts at twice the headroom); with swap, lmkd waits for pressure.
    let trigger = match pressure {
        // lmkd's PSI strategy: a complete stall, or swap below lmkd's
        // swap_free_low_percentage (10 % of the device) while memory is low too.
        PressurePolicy::KernelSwap => Trigger::pressure()
            .with_swap_free_low(cfg.swap_bytes / 10)
            .with_swap_low_needing_headroom(cfg.headroom),
        _ => Trigger::usage(cfg.headroom),
    };
    let mut killer = lmk::Killer::new(group, trigger)?;
    if let Some(swap) = machine.swap() {
        killer = killer.with_swap(swap);
    }
    if let Some(source) = killer.stall_source() {
        marvin_console::errln!(
            "marvin: the low-memory killer watches complete stalls through {}",
            source.describe()
        );
    }
    let pass_delay = reclaimer::Settings::pass_delay_from_env();
    if !pass_delay.is_zero() && pressure == PressurePolicy::Marvin {
        marvin_console::errln!(
            "marvin: every reclaim pass sleeps {} ms first ({} is set)",
            pass_delay.as_millis(),
            reclaimer::PASS_DELAY_ENV
        );
    }
    let lmk_off = std::env::var_os(NO_LMK_ENV).is_some();
    if lmk_off {
        marvin_console::errln!("marvin: the low-memory killer makes no kill ({NO_LMK_ENV} is set)");
    }
    let policy_file = run_dir.path().join("policy.toml");
    std::fs::write(&policy_file, cfg.policy.to_toml_string())?;
    let trace = sys.tracer.as_ref().map(|t| SystemTrace::new(t, pressure));
    let _policy_span = trace.as_ref().map(SystemTrace::policy_span);
    let start = Instant::now();
    let (result, ended, mut app_events, reclaimed) = std::thread::scope(|scope| {
        // Marvin's reclaimer acts on its own thread, so the killer and the sampler never
        // wait behind a pass.
        let (link, reclaimer) = match pressure {
            PressurePolicy::Marvin => {
                let settings = reclaimer::Settings {
                    limit: sys.budget as u64,
                    headroom: cfg.headroom,
                    tick: TICK,
                    realtime: realtime.is_some().then_some(uithread::UI_PRIORITY),
                    pass_delay,
                };
                let tracks = trace.as_ref().map(SystemTrace::tracks);
                let (link, handle) = reclaimer::spawn(scope, group, SWAP_NAME, settings, tracks);
                (Some(link), Some(handle))
            }
            _ => (None, None),
        };
        let tracks = trace.as_ref().map(SystemTrace::tracks);
        let spawner = Spawner::spawn(scope, group, cfg.exe.clone(), tracks);
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
            reclaimer: link,
            spawner,
            room_ns: 0,
            working_set: 0,
            kill_reasons: Default::default(),
            hold: KillHold::default(),
            fg: None,
            // FIFO UI needs what the real-time control loop needs (CAP_SYS_NICE).
            fifo_ui: realtime.is_some(),
            // The apps inherit the System's nice.
            base_nice: procstat::stat(std::process::id()).map_or(0, |s| s.nice),
            control_gap_max: Duration::ZERO,
            passes_at_kill: 0,
            age_requests: 0,
            lmk_off,
            oom_booked: group.oom_kills().unwrap_or(0),
            trace,
        };
        let result = run.drive(progress);
        run.stop_all();
        let ended = std::mem::take(&mut run.ended);
        let app_events = run.timeline.finish();
        // Its link goes with the run: the reclaimer ends.
        drop(run);
        let reclaimed = reclaimer.map(|h| h.join());
        (result, ended, app_events, reclaimed)
    });
    let oom_kills = group.oom_kills().unwrap_or(0);
    let peak = group.peak().unwrap_or(0);
    // Normal again before the swap goes off (swapoff reads every page back).
    drop(realtime);
    // Every app life's own trace, before the run's directory goes.
    if let Some(t) = &sys.tracer {
        trace::merge_apps(t, run_dir.path());
    }
    // Taken down here rather than on drop, so a failure to remove is reported.
    machine.tear_down()?;
    let (mut summary, series) = result?;
    if let Some(reclaimed) = reclaimed {
        let mut outcome =
            reclaimed.map_err(|_| anyhow::anyhow!("the reclaimer thread panicked"))?;
        summary.reclaim_requests = outcome.pass_ns.len() as u64;
        summary.set_latencies(&mut outcome.pass_ns);
        summary.external_reclaimed_bytes = outcome.reclaimed_bytes;
    }
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
    summary.oom_killed_apps = ended.oom_killed;
    summary.signalled_apps = ended.signalled;
    summary.deaths = summary.lmk_kills + ended.oom_killed + ended.signalled + summary.crashed_apps;
    if let Some(sig) = signals::stop_requested() {
        anyhow::bail!("stopped by signal {sig}; the cgroup and swap were removed");
    }
    Ok((summary, series))
}

struct Run<'a> {
    cfg: &'a ProcessConfig,
    pressure: PressurePolicy,
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
    /// Marvin: the reclaimer's thread.
    reclaimer: Option<reclaimer::Link>,
    /// Starts app processes off the control loop.
    spawner: Spawner,
    /// The group's working set as the control loop last read it (marvin).
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
    /// The low-memory killer makes no kill ([`NO_LMK_ENV`], a test hook).
    lmk_off: bool,
    /// Marvin: the reclaimer's complete passes when the killer last killed.
    passes_at_kill: u64,
    /// Marvin: age requests sent to background apps ([`Run::age_on_demand`]).
    age_requests: u64,
    /// The longest time between two turns of the control loop.
    control_gap_max: Duration,
    /// The group's kernel OOM kills already booked against an app that died.
    oom_booked: u64,
    /// The System's trace tracks, when the run is traced.
    trace: Option<SystemTrace>,
}

impl Run<'_> {
    fn drive(
        &mut self,
        progress: crate::engine::Progress<'_>,
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
        let mut next_sample = Duration::ZERO;
        let tick = TICK.min(sys.sample_every);
        // The activity manager (launches, switches, the launch phase), with the apps as
        // processes in the run's group.
        let mut am: ActivityManager<(u64, u64)> = ActivityManager::new(sys);
        let mut last_turn: Option<Instant> = None;
        loop {
            if signals::stop_requested().is_some() {
                break;
            }
            let turn = Instant::now();
            if let Some(last) = last_turn {
                self.control_gap_max = self.control_gap_max.max(turn - last);
            }
            last_turn = Some(turn);
            let _turn = self.trace.as_ref().map(SystemTrace::turn);
            self.take_started()?;
            let now = self.start.elapsed();
            if am.over(now, self.slots.len()) {
                break;
            }
            am.turn(self, now)?;
            self.tell_ready_apps();
            let kill = if self.lmk_off {
                self.killer.wait(tick.saturating_sub(turn.elapsed()))?;
                None
            } else if self.pressure == PressurePolicy::Marvin {
                // The reclaimer works on its own thread; the killer decides on the
                // working set now and on what the reclaimer's last pass found.
                let wait = self.trace.as_ref().map(SystemTrace::wait);
                let critical = self.killer.wait(tick.saturating_sub(turn.elapsed()))?;
                drop(wait);
                let working_set = self.group.working_set().ok();
                if let Some(ws) = working_set {
                    self.working_set = ws;
                    self.age_on_demand(ws);
                }
                if self.may_kill() && !self.hold_kill(critical, working_set) {
                    self.killer.step(critical)?
                } else {
                    None
                }
            } else {
                let _wait = self.trace.as_ref().map(SystemTrace::wait);
                self.killer.watch(tick.saturating_sub(turn.elapsed()))?
            };
            if let Some(kill) = kill {
                let short = self
                    .reclaimer
                    .as_ref()
                    .is_some_and(|r| r.shared().short() && !r.shared().held_up(boottime_ns()));
                let why = match self.pressure {
                    PressurePolicy::Marvin if short => "nothing-reclaimable",
                    PressurePolicy::Marvin => "reclaim-behind",
                    _ => kill.reason.name(),
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
                self.tell_reclaimer();
                if let Some(r) = &self.reclaimer {
                    self.passes_at_kill = r.shared().complete_passes();
                }
            }
            self.reap();
            self.observe_activity(th);
            if now >= next_sample {
                let p = self.sample(th);
                summary.observe(&p);
                progress(now, p.alive, p.active, p.kills, p.accounted_bytes);
                series.push_sample(p, sys.sample_every);
                next_sample += sys.sample_every;
            }
        }
        let p = self.sample(th);
        summary.observe(&p);
        summary.final_alive = p.alive;
        summary.final_active = p.active;
        series.push_sample(p, sys.sample_every);
        summary.kills = self.killer.kills().len() as u64;
        summary.lmk_kills = summary.kills;
        summary.lmk_kill_reasons = self.kill_reasons.clone();
        summary.lmk_held_ticks = self.hold.held_ticks();
        summary.lmk_holds_expired = self.hold.expired();
        summary.age_requests = self.age_requests;
        summary.restarts = self.restarts;
        summary.control_gap_max_ns = self.control_gap_max.as_nanos() as u64;
        // A launch still under way when the run ends never finished.
        let phase = am.finish(self.start.elapsed());
        summary.set_launches(phase.records, phase.unfinished);
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
        let mode = if self.pressure == PressurePolicy::Marvin {
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
            activity: Activity::launched(Instant::now()),
            left_foreground: Instant::now(),
            killed: false,
            told_ready: false,
            major_faults: 0,
            last_mem: procstat::ProcMem::default(),
            ended: false,
            ui_tids: Vec::new(),
            ui_raised: false,
            aged_at: None,
        })
    }

    /// Gives each app process that has started its slot, and the killer its pid.
    fn take_started(&mut self) -> anyhow::Result<()> {
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
        self.update_states();
        Ok(())
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
        if let Some(t) = &self.trace {
            t.app_event("launch", id);
        }
        self.fg = Some(id);
        self.update_states();
        Ok(())
    }

    /// Finishes the launch under way once its app reported its frame, or gives it up
    /// when the app died or it timed out.
    fn check_launch(&mut self, phase: &mut LaunchPhase<(u64, u64)>, now: Duration) {
        if let Some(p) = &phase.pending {
            let slot = &self.slots[p.app];
            match slot.proc.as_ref() {
                // A cold start's process is still being made.
                None if slot.starting => {
                    if phase.timed_out(boottime_ns()) {
                        phase.give_up(now)
                    }
                }
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
                if !self.slots[next].starting {
                    self.slots[next] = self.start_app(next)?;
                    self.restarts += 1;
                    self.timeline.point(next, "restart");
                    if let Some(t) = &self.trace {
                        t.app_event("restart", next);
                    }
                }
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
        if let Some(t) = &self.trace {
            t.app_event("foreground", next);
        }
        self.fg = Some(next);
        self.update_states();
        Ok(pending)
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
    fn age_on_demand(&mut self, working_set: u64) {
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
            if Some(s.id) == self.fg || s.killed || !s.told_ready {
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

    fn send_to_background(&mut self, id: usize) {
        self.lower_ui(id);
        self.timeline.end(id, "foreground");
        if let Some(t) = &self.trace {
            t.app_event("background", id);
        }
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
        self.tell_reclaimer();
    }

    /// Marvin: tells the reclaimer which apps run, in LRU order, and which is in front.
    fn tell_reclaimer(&self) {
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
            .background_lru()
            .into_iter()
            .filter(|&id| !self.slots[id].killed)
            .collect();
        r.send(Request::Apps {
            live,
            lru,
            front: self.fg,
        });
    }

    /// Marvin: once an app is ready (it gave its run id), the reclaimer is told, so it
    /// may open its table and memory.
    fn tell_ready_apps(&mut self) {
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
            self.tell_reclaimer();
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
                    marvin_console::errln!(
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
    fn make_room_ahead(&mut self, next: usize) {
        let Some(r) = &self.reclaimer else {
            return;
        };
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

    /// Notices apps that ended (killed, crashed, or done) and books them.
    fn reap(&mut self) {
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
            let t_s = self.start.elapsed().as_secs_f64();
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
            // Its intervals end before the death (or the error) is booked.
            let id = self.slots[i].id;
            self.timeline.end(id, "foreground");
            self.timeline.end(id, "active");
            match (&crash, death) {
                (Some(error), _) => self.timeline.value(id, "error", error),
                (None, Death::Ended) => {}
                (None, d) => self.timeline.point(id, kill_event(d)),
            }
            if let Some(t) = &self.trace {
                t.death(id, pid, death.name(), crash.as_deref());
            }
            self.ended
                .book(&self.slots[i], &seen, crash, t_s, death.name());
            self.killer.forget(pid);
            self.slots[i].proc = None;
            // Only an app that finished by itself stays down; any death starts cold
            // when it is launched again.
            self.slots[i].ended = !death.restarts();
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
            restarts: self.restarts,
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

    /// Stops every app that still runs (told first, so all wind down together), those
    /// still starting once they have.
    fn stop_all(&mut self) {
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

/// The process mode's host of the activity manager: the apps as processes in the run's
/// memory cgroup.
impl AppHost for Run<'_> {
    type Before = (u64, u64);

    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn launched(&self) -> usize {
        self.slots.len()
    }

    fn foreground(&self) -> Option<usize> {
        self.fg
    }

    fn launch_new(&mut self) -> anyhow::Result<()> {
        Run::launch_new(self)
    }

    fn bring_to_foreground(&mut self, id: usize) -> anyhow::Result<Pending<(u64, u64)>> {
        Run::bring_to_foreground(self, id)
    }

    fn launch_candidates(&self) -> Vec<usize> {
        self.slots
            .iter()
            .filter(|s| Some(s.id) != self.fg && !s.ended)
            .map(|s| s.id)
            .collect()
    }

    fn check_launch(&mut self, phase: &mut LaunchPhase<(u64, u64)>, now: Duration) {
        Run::check_launch(self, phase, now);
    }

    fn raise_ui(&mut self, id: usize) {
        Run::raise_ui(self, id);
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
