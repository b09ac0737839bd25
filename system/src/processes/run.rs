//! One policy of the process mode: N app processes in one memory cgroup whose hard
//! limit is the budget, hosted for the one run loop (`run_loop`), which
//! launches a new app every interval and moves the others down the LRU; the low-memory
//! killer and Marvin's reclaimer acting from this process on the apps' memory
//! (`pressure`), and a sampler that reads what the kernel counts. This file
//! sets the run up and takes it down ([`run_policy`]); how an app process is started,
//! told and observed is in `host`, how its end is booked in `ended`.
//!
//! Per policy:
//! - **kill**: plain heaps; the killer acts when the group's usage comes within the
//!   headroom of the limit (lmkd without swap).
//! - **kernel-swap**: plain heaps and real Linux swap for the run (a swap file, or
//!   zram); the killer stays as the backstop and acts on critical memory pressure, as
//!   lmkd does on a phone with swap.
//! - **zram**: kernel-swap's on zram (`--zram-algorithm`, lz4 by default), its
//!   compressed pool charged to the budget: the group's limit lowered by the pool
//!   every tick before the killer looks (`zram`).
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
//! page cache the kernel drops first ([`marvin_machine::MemStat::working_set`]).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::config::ProcessConfig;
use super::ended::Ended;
use super::kill_hold::KillHold;
use super::launcher::AppProcess;
use super::reclaimer;
use super::spawner::Spawner;
use super::trace::{self, SystemTrace};
use super::zram::ZramRun;
use crate::run_loop::{self, Apps, Progress};
use crate::series::PolicySeries;
use crate::summary::Summary;
use crate::PressurePolicy;
use marvin_machine::lmk_policy::Trigger;
use marvin_machine::{cgroup, lmk, signals, swapdev, uithread};
use marvin_machine::{Machine, MachineConfig, SwapChoice};
use marvin_runtime::procfs;

/// How often apps report their marks; the System reads them into activity states on
/// every tick of its loop.
pub(super) const REPORT_EVERY: Duration = Duration::from_millis(20);
/// The System's loop tick: launches, the killer, the reclaimer, activity.
pub(super) const TICK: Duration = Duration::from_millis(20);
/// The control loop's `SCHED_FIFO` priority: one above the UI thread of the app in
/// front ([`uithread::UI_PRIORITY`], Android's FIFO UI), so no app keeps the killer and
/// the sampler waiting (at equal priority a woken FIFO thread waits for the one
/// running, measured: turns of 40-70 ms). Marvin's reclaimer thread runs at the UI
/// thread's.
const CONTROL_PRIORITY: i32 = uithread::UI_PRIORITY + 1;

/// Marvin: the longest the control loop waits for that room before it tells the app
/// anyway (the reclaimer goes on making it).
pub(super) const ROOM_WAIT: Duration = Duration::from_millis(40);

/// A test hook: with this variable set, the low-memory killer makes no kill (so a test
/// can see what the kernel's OOM killer does); the run says so on its first lines.
pub const NO_LMK_ENV: &str = "MARVIN_TEST_NO_LMK";

/// The name of an app's swap file and reclaim table in its directory.
pub(super) const SWAP_NAME: &str = "swap";

/// One app slot: the process while it runs, and what is known of it.
pub(super) struct Slot {
    pub(super) id: usize,
    pub(super) proc: Option<AppProcess>,
    pub(super) pid: u32,
    pub(super) dir: PathBuf,
    /// The killer chose it: no longer live for the reclaimer, though not reaped yet.
    pub(super) killed: bool,
    /// Major faults seen so far (the last sample before it ended).
    pub(super) major_faults: u64,
    /// Its memory at the last sample.
    pub(super) last_mem: procfs::ProcMem,
    /// Its process is being started (no process yet).
    pub(super) starting: bool,
    /// The reclaimer was told its run id (it is ready).
    pub(super) told_ready: bool,
    /// Its main looper and control threads, once both are seen (raised while it is in
    /// front).
    pub(super) ui_tids: Vec<u32>,
    /// When it was last told to age its working set ([`Run::age_on_demand`]).
    pub(super) aged_at: Option<Instant>,
}

/// Runs one policy in the process mode.
pub fn run_policy(
    cfg: &ProcessConfig,
    pressure: PressurePolicy,
    progress: Progress<'_>,
) -> anyhow::Result<(Summary, PolicySeries)> {
    let sys = &cfg.system;
    let run_dir = crate::policy_dir(sys.swap_dir.as_deref(), pressure, "marvin-processes-")?;
    let machine = set_up_machine(cfg, pressure, run_dir.path())?;
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
    // zram's pool charged to the budget; its floor leaves the killer room to act.
    let zram = pressure.charged_zram().then(|| {
        let budget = sys.budget as u64;
        ZramRun::start(group, budget, 2 * cfg.headroom, &cfg.zram_algorithm)
    });
    let killer = killer(cfg, pressure, &machine)?;
    let (pass_delay, lmk_off) = test_hooks(pressure);
    let policy_file = run_dir.path().join("policy.toml");
    std::fs::write(&policy_file, cfg.policy.to_toml_string())?;
    let trace = sys.tracer.as_ref().map(|t| SystemTrace::new(t, pressure));
    let _policy_span = trace.as_ref().map(SystemTrace::policy_span);
    let mut apps = Apps::new();
    let start = apps.start;
    let (result, ended, app_events, reclaimed, zram) = std::thread::scope(|scope| {
        // Marvin's reclaimer acts on its own thread, so the killer and the sampler never
        // wait behind a pass.
        let (link, reclaimer) = match pressure.swaps_objects() {
            true => {
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
            false => (None, None),
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
            turn_began: None,
            run_dir: run_dir.path().to_path_buf(),
            policy_file,
            reclaimer: link,
            spawner,
            room_ns: 0,
            working_set: 0,
            kill_reasons: Default::default(),
            hold: KillHold::default(),
            // FIFO UI needs what the real-time control loop needs (CAP_SYS_NICE).
            fifo_ui: realtime.is_some(),
            // The apps inherit the System's nice.
            base_nice: procfs::stat(std::process::id()).map_or(0, |s| s.nice),
            control_gap_max: Duration::ZERO,
            passes_at_kill: 0,
            age_requests: 0,
            lmk_off,
            oom_booked: group.oom_kills().unwrap_or(0),
            trace,
            zram,
        };
        let result = run_loop::drive(&mut run, &mut apps, sys, pressure, progress);
        run.stop_all();
        let ended = std::mem::take(&mut run.ended);
        let zram = run.zram.as_ref().map(ZramRun::figures);
        let app_events = apps.timeline.finish();
        // Its link goes with the run: the reclaimer ends.
        drop(run);
        let reclaimed = reclaimer.map(|h| h.join());
        (result, ended, app_events, reclaimed, zram)
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
    summary.zram = zram.transpose().context("reading zram's pool")?;
    if let Some(reclaimed) = reclaimed {
        let mut outcome =
            reclaimed.map_err(|_| anyhow::anyhow!("the reclaimer thread panicked"))?;
        summary.reclaim_requests = outcome.pass_ns.len() as u64;
        summary.set_latencies(&mut outcome.pass_ns);
        summary.external_reclaimed_bytes = outcome.reclaimed_bytes;
    }
    summary.kernel_oom_kills = oom_kills;
    summary.peak_cgroup_bytes = peak;
    ended.book_into(&mut summary, app_events);
    if let Some(sig) = signals::stop_requested() {
        anyhow::bail!("stopped by signal {sig}; the cgroup and swap were removed");
    }
    Ok((summary, series))
}

/// The run's cgroup (hard limit the budget) and, for kernel swap and Marvin, its swap
/// device ([`PressurePolicy::wants_swap_device`]).
fn set_up_machine(
    cfg: &ProcessConfig,
    pressure: PressurePolicy,
    run_dir: &std::path::Path,
) -> anyhow::Result<Machine> {
    let swap = match (pressure.wants_swap_device(), cfg.swap_device) {
        (true, _) if pressure.charged_zram() => SwapChoice::Zram {
            bytes: cfg.swap_bytes,
            algorithm: Some(cfg.zram_algorithm.clone()),
        },
        (true, swapdev::Kind::File) => SwapChoice::File {
            dir: run_dir.to_path_buf(),
            bytes: cfg.swap_bytes,
        },
        (true, swapdev::Kind::Zram) => SwapChoice::Zram {
            bytes: cfg.swap_bytes,
            algorithm: None,
        },
        _ => SwapChoice::None,
    };
    // Only kernel-swap swaps: the other policies' groups are kept off any swap the
    // machine may have (v1 swappiness 0), as a phone without swap would be.
    let limits = cgroup::Limits {
        swappiness: (!pressure.kernel_swap()).then_some(0),
        ..cgroup::Limits::hard(cfg.system.budget as u64)
    };
    Machine::set_up(
        &MachineConfig {
            limits,
            swap,
            state_dir: swapdev::default_state_dir(),
        },
        cfg.machine.clone(),
    )
    .context("setting up the run's cgroup and swap")
}

/// The low-memory killer of the run's group: the same for kill and marvin (for marvin
/// it is the backstop: its reclaimer starts at twice the headroom); with swap, lmkd's
/// wait for pressure.
fn killer<'a>(
    cfg: &ProcessConfig,
    pressure: PressurePolicy,
    machine: &'a Machine,
) -> anyhow::Result<lmk::Killer<'a>> {
    let trigger = if pressure.kernel_swap() {
        // lmkd's PSI strategy: a complete stall, or swap below lmkd's
        // swap_free_low_percentage (10 % of the device) while memory is low too.
        Trigger::pressure()
            .with_swap_free_low(cfg.swap_bytes / 10)
            .with_swap_low_needing_headroom(cfg.headroom)
    } else {
        Trigger::usage(cfg.headroom)
    };
    let mut killer = lmk::Killer::new(machine.group(), trigger)?;
    if let Some(swap) = machine.swap() {
        killer = killer.with_swap(swap);
    }
    if let Some(source) = killer.stall_source() {
        marvin_console::errln!(
            "marvin: the low-memory killer watches complete stalls through {}",
            source.describe()
        );
    }
    Ok(killer)
}

/// The test hooks, said on stderr when set: every reclaim pass's delay, and whether
/// the low-memory killer makes no kill ([`NO_LMK_ENV`]).
fn test_hooks(pressure: PressurePolicy) -> (Duration, bool) {
    let pass_delay = reclaimer::Settings::pass_delay_from_env();
    if !pass_delay.is_zero() && pressure.swaps_objects() {
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
    (pass_delay, lmk_off)
}

pub(super) struct Run<'a> {
    pub(super) cfg: &'a ProcessConfig,
    pub(super) pressure: PressurePolicy,
    pub(super) group: &'a cgroup::Group,
    pub(super) machine: &'a Machine,
    pub(super) killer: lmk::Killer<'a>,
    pub(super) slots: Vec<Slot>,
    pub(super) ended: Ended,
    pub(super) start: Instant,
    /// When the turn under way began (none before the first).
    pub(super) turn_began: Option<Instant>,
    pub(super) run_dir: PathBuf,
    pub(super) policy_file: PathBuf,
    /// Marvin: the reclaimer's thread.
    pub(super) reclaimer: Option<reclaimer::Link>,
    /// Starts app processes off the control loop.
    pub(super) spawner: Spawner,
    /// The group's working set as the control loop last read it (marvin).
    pub(super) working_set: u64,
    /// How long the System took making room ahead of the last launch (marvin).
    pub(super) room_ns: u64,
    /// The killer's kills by reason.
    pub(super) kill_reasons: std::collections::BTreeMap<String, u64>,
    /// Marvin: the killer's bounded hold while a background app's saver still writes.
    pub(super) hold: KillHold,
    /// The app in front has its UI thread (main looper) under `SCHED_FIFO`, every
    /// policy alike, as Android's FIFO UI runs it (see [`crate::run_loop`]).
    pub(super) fifo_ui: bool,
    /// The apps' nice value in the background (the front app's other threads run
    /// [`uithread::front_nice`] of it).
    pub(super) base_nice: i32,
    /// The low-memory killer makes no kill ([`NO_LMK_ENV`], a test hook).
    pub(super) lmk_off: bool,
    /// Marvin: the reclaimer's complete passes when the killer last killed.
    pub(super) passes_at_kill: u64,
    /// Marvin: age requests sent to background apps ([`Run::age_on_demand`]).
    pub(super) age_requests: u64,
    /// The longest time between two turns of the control loop.
    pub(super) control_gap_max: Duration,
    /// The group's kernel OOM kills already booked against an app that died.
    pub(super) oom_booked: u64,
    /// The System's trace tracks, when the run is traced.
    pub(super) trace: Option<SystemTrace>,
    /// The `zram` policy: its pool charged to the budget every tick.
    pub(super) zram: Option<ZramRun>,
}
