//! One run of the System under one pressure policy: N app instances in this process,
//! each with its own heap, main looper, threads, reclaim table and swap file, sharing
//! one budget of resident app memory; an activity manager that launches a new app every
//! interval (the new one comes to the foreground, the previous one goes to the
//! background) and can switch the foreground among apps on a schedule; a sampler that
//! records the time series.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use marvin_app::{App, RunConfig, Running, SwapIo, TraceTarget};
use marvin_interpreter::exec::{Loaded, Trap};
use marvin_runtime::cpuclock::boottime_ns;
use marvin_runtime::HeapConfig;
use marvin_swap::{PolicyConfig, SwapPolicy};
use parking_lot::Mutex;

use super::activity::{Activity, Thresholds};
use super::activity_manager::{ActivityManager, AppHost};
use super::budget::{Budget, BudgetHook, Member};
use super::launch::{Brought, LaunchParts, LaunchPhase, Pending};
use super::series::{PolicySeries, SeriesPoint};
use super::summary::{Crash, Summary};
use super::timeline::Timeline;
use super::{PressurePolicy, SystemConfig};
use marvin_machine::{signals, uithread};

/// An app instance slot: the app while it lives, and what is known of it after.
struct Slot {
    member: Arc<Member>,
    app: Option<Running>,
    activity: Activity,
    /// It ended by itself (finished or crashed): the launch phase leaves it be.
    ended: bool,
    /// Its main looper thread's name, unique in the run (a restarted app's new looper
    /// is not mistaken for its old one still unwinding).
    looper: String,
}

/// The UI thread of the app in front under `SCHED_FIFO` (see [`Run::raise_ui`]).
struct Ui {
    /// Off once the kernel refused it (said once).
    on: bool,
    /// The app whose looper is raised, and that thread.
    raised: Option<(usize, u32)>,
}

/// Totals of apps that are gone (killed or ended), so nothing is lost from the summary.
#[derive(Default)]
struct Retired {
    swap_written: u64,
    swap_read: u64,
    gc_faults: u64,
    object_faults: u64,
    failed_verifications: u64,
    verified_arrays: u64,
    /// Apps that ended with an error of their own (not a kill, not the run's end).
    crashes: Vec<Crash>,
}

/// Everything one policy run shares between the activity manager, the budget's kill
/// callback and the sampler.
struct Run {
    cfg: SystemConfig,
    pressure: PressurePolicy,
    loaded: Arc<Loaded>,
    policy: Arc<PolicyConfig>,
    slots: Mutex<Vec<Slot>>,
    budget: Arc<Budget>,
    kills: AtomicU64,
    restarts: AtomicU64,
    retired: Mutex<Retired>,
    /// The most the runtime held for the alive apps at a sample, and was charged at.
    peak_runtime: Mutex<(u64, u64)>,
    /// Apps killed whose threads are being reaped, by app number.
    dying: Mutex<Vec<(usize, Running)>>,
    /// Apps started so far (restarts included): numbers their looper threads.
    lives: AtomicU64,
    ui: Mutex<Ui>,
    start: Instant,
    /// What happened to each app, in time.
    timeline: Timeline,
    /// The run's swap directory, removed when the run ends.
    dir: super::RunDir,
}

/// How often apps' round counts are read for their activity (the series is sampled less
/// often).
const ACTIVITY_TICK: Duration = Duration::from_millis(10);

/// The room the System makes under the budget before it tells an app to come to the
/// foreground: what a warm launch of the shipped workloads faults back (a bucket of
/// arrays and their read-ahead, 1-4 MiB) with a margin for what it allocates.
const LAUNCH_ROOM: u64 = 8 << 20;

/// Progress callback: (elapsed, alive, active, kills, accounted bytes).
pub type Progress<'a> = &'a (dyn Fn(Duration, u32, u32, u64, u64) + Sync);

/// Runs one policy and returns its summary and time series.
pub fn run_policy(
    cfg: &SystemConfig,
    pressure: PressurePolicy,
    loaded: Arc<Loaded>,
    policy: Arc<PolicyConfig>,
    progress: Progress<'_>,
) -> anyhow::Result<(Summary, PolicySeries)> {
    let dir = super::policy_dir(cfg.swap_dir.as_deref(), pressure, "marvin-pressure-")?;
    let run = Arc::new_cyclic(|weak: &Weak<Run>| {
        let w = weak.clone();
        let kill = Box::new(move |id: usize| {
            if let Some(r) = w.upgrade() {
                r.kill(id);
            }
        });
        Run {
            cfg: cfg.clone(),
            pressure,
            loaded,
            policy: policy.clone(),
            slots: Mutex::new(Vec::new()),
            budget: Arc::new(Budget::new(
                cfg.budget as u64,
                pressure,
                policy.clone() as Arc<dyn SwapPolicy>,
                kill,
            )),
            kills: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            retired: Mutex::new(Retired::default()),
            peak_runtime: Mutex::new((0, 0)),
            dying: Mutex::new(Vec::new()),
            lives: AtomicU64::new(0),
            ui: Mutex::new(Ui {
                on: true,
                raised: None,
            }),
            start: Instant::now(),
            timeline: Timeline::new(Instant::now()),
            dir,
        }
    });
    let th = Thresholds::scaled(cfg.time_scale);
    let mut series = PolicySeries {
        rep: 0,
        policy: pressure.name().to_string(),
        points: Vec::new(),
    };
    let mut summary = Summary::new(pressure.name());
    // The activity manager (launches, switches, the launch phase), with the apps as
    // threads of this process.
    let mut host = InProcess {
        run: &run,
        fg: None,
    };
    let mut am: ActivityManager<(SwapIo, u64)> = ActivityManager::new(cfg);
    loop {
        let now = run.start.elapsed();
        if am.over(now, host.launched()) || signals::stop_requested().is_some() {
            break;
        }
        am.turn(&mut host, now)?;
        run.collect_ended();
        run.reap();
        let p = run.sample(th);
        summary.observe(&p);
        progress(now, p.alive, p.active, p.kills, p.accounted_bytes);
        series.push_sample(p, cfg.sample_every);
        // Rounds are watched more often than the series is sampled, so that the gap
        // between two rounds is known to within a tick, not a sampling period.
        let next_sample = Instant::now() + cfg.sample_every;
        loop {
            let left = next_sample.saturating_duration_since(Instant::now());
            if left.is_zero() || signals::stop_requested().is_some() {
                break;
            }
            std::thread::sleep(left.min(ACTIVITY_TICK));
            run.observe_activity(th);
            if let Some(f) = host.fg {
                run.raise_ui(f);
            }
            am.drive_launches(&mut host)?;
        }
    }
    // A launch still under way when the run ends never finished.
    let phase = am.finish(run.start.elapsed());
    run.collect_ended();
    let final_point = run.sample(th);
    summary.observe(&final_point);
    summary.final_alive = final_point.alive;
    summary.final_active = final_point.active;
    series.push_sample(final_point, cfg.sample_every);
    run.shutdown();
    run.finish(&mut summary);
    summary.set_launches(phase.records, phase.unfinished);
    Ok((summary, series))
}

/// The in-process model's host of the activity manager: the apps as threads of this
/// process.
struct InProcess<'a> {
    run: &'a Run,
    fg: Option<usize>,
}

impl AppHost for InProcess<'_> {
    type Before = (SwapIo, u64);

    fn now(&self) -> Duration {
        self.run.start.elapsed()
    }

    fn launched(&self) -> usize {
        self.run.slots.lock().len()
    }

    fn foreground(&self) -> Option<usize> {
        self.fg
    }

    fn launch_new(&mut self) -> anyhow::Result<()> {
        let id = self.launched();
        self.run.launch_new(id, &mut self.fg)
    }

    fn bring_to_foreground(&mut self, id: usize) -> anyhow::Result<Pending<(SwapIo, u64)>> {
        self.run.bring_to_foreground(id, &mut self.fg)
    }

    fn launch_candidates(&self) -> Vec<usize> {
        self.run
            .slots
            .lock()
            .iter()
            .enumerate()
            .filter(|(i, s)| Some(*i) != self.fg && !s.ended)
            .map(|(i, _)| i)
            .collect()
    }

    fn check_launch(&mut self, phase: &mut LaunchPhase<(SwapIo, u64)>, now: Duration) {
        self.run.check_launch(phase, now);
    }

    fn raise_ui(&mut self, id: usize) {
        self.run.raise_ui(id);
    }
}

impl Run {
    fn app_config(&self, id: usize) -> RunConfig {
        let policy_index = match self.pressure {
            PressurePolicy::Kill => 1,
            PressurePolicy::PageSwap => 2,
            PressurePolicy::Marvin => 3,
            PressurePolicy::KernelSwap => 4,
        };
        RunConfig {
            trace: self.cfg.tracer.as_ref().map(|tracer| TraceTarget {
                tracer: tracer.clone(),
                pid: (policy_index * 1000 + id + 1) as i32,
                name: format!("{} app{id}", self.pressure.name()),
            }),
            heap: HeapConfig {
                gc_min_free: self.cfg.gc_max_free.min(1 << 20),
                gc_max_free: self.cfg.gc_max_free,
                ..HeapConfig::default()
            },
            out: Box::new(std::io::sink()),
            ..RunConfig::default()
        }
    }

    /// Starts app `id` (a launch or a cold restart) in the foreground.
    fn start_app(&self, id: usize) -> anyhow::Result<Slot> {
        let app = Arc::new(App::new(self.loaded.clone(), self.app_config(id))?);
        let dir = self.dir.path().join(format!("app{id}"));
        let member = Arc::new(Member {
            id,
            app: Arc::downgrade(&app),
            foreground: AtomicBool::new(true),
            last_foreground_ns: AtomicU64::new(self.start.elapsed().as_nanos() as u64),
            alive: AtomicBool::new(true),
        });
        if let Some(mode) = self.pressure.swap_mode() {
            app.enable_swap(
                &dir,
                "swap",
                self.policy.clone() as Arc<dyn SwapPolicy>,
                mode,
            )?;
        }
        app.set_memory_budget(Arc::new(BudgetHook(Arc::downgrade(&self.budget))))?;
        // What the runtime holds for the new app (its tables) counts from now: room for
        // it is reserved first.
        let initial = app.charged_bytes();
        self.budget.reserve(app.heap(), initial);
        self.budget.members.lock().push(member.clone());
        self.budget.release(initial);
        let looper = format!("app{id}-{}", self.lives.fetch_add(1, Ordering::SeqCst));
        let running = App::launch(&app, looper.clone())?;
        Ok(Slot {
            member,
            app: Some(running),
            activity: Activity::launched(Instant::now()),
            ended: false,
            looper,
        })
    }

    fn launch_new(&self, id: usize, fg: &mut Option<usize>) -> anyhow::Result<()> {
        if let Some(prev) = fg.take() {
            self.to_background(prev);
        }
        let slot = self.start_app(id)?;
        self.slots.lock().push(slot);
        self.timeline.point(id, "launch");
        self.timeline.begin(id, "foreground");
        *fg = Some(id);
        Ok(())
    }

    /// Finishes the launch under way once its app has drawn its frame, or gives it up
    /// when its app died or it timed out.
    fn check_launch(&self, phase: &mut LaunchPhase<(SwapIo, u64)>, now: Duration) {
        if let Some(p) = &phase.pending {
            let app = {
                let slots = self.slots.lock();
                let s = &slots[p.app];
                s.app
                    .as_ref()
                    .filter(|_| s.member.alive.load(Ordering::SeqCst))
                    .map(|r| r.app().clone())
            };
            match app {
                None => phase.give_up(now),
                Some(app) => {
                    let f = app.frames();
                    if f.count > p.frames_before && f.last_ns >= p.told_ns {
                        let told_ns = p.told_ns;
                        let ui_fifo = self.ui.lock().raised.is_some_and(|(a, _)| a == p.app);
                        phase.finish(now, f.last_ns, |(before, resumed_ns)| {
                            (
                                Brought {
                                    object_faults: f
                                        .io
                                        .object_faults
                                        .saturating_sub(before.object_faults),
                                    swap_read_bytes: f
                                        .io
                                        .bytes_read
                                        .saturating_sub(before.bytes_read),
                                    ..Brought::default()
                                },
                                // Cold: no transition, the whole launch is its frame.
                                LaunchParts {
                                    transition_ns: resumed_ns.saturating_sub(told_ns),
                                    frame_ns: f.last_ns.saturating_sub((*resumed_ns).max(told_ns)),
                                    ui_fifo,
                                    prefetch_bytes: f
                                        .io
                                        .prefetched_bytes
                                        .saturating_sub(before.prefetched_bytes),
                                    ..LaunchParts::default()
                                },
                            )
                        });
                    } else if phase.timed_out(boottime_ns()) {
                        phase.give_up(now);
                    }
                }
            }
        }
    }

    /// Brings app `next` to the foreground (the one in front goes to the background):
    /// a cached app is told (marvin restores it as its policy says) and resumed; a
    /// killed one starts again. Returns the launch under way.
    fn bring_to_foreground(
        &self,
        next: usize,
        fg: &mut Option<usize>,
    ) -> anyhow::Result<Pending<(SwapIo, u64)>> {
        if let Some(prev) = fg.take() {
            self.to_background(prev);
        }
        // Room for the app that is coming back, made before it is told (see
        // `Budget::make_room_ahead`): its launch then does not reclaim on its own thread.
        // And its UI thread raised.
        self.budget.make_room_ahead(next, LAUNCH_ROOM);
        self.raise_ui(next);
        let told_ns = boottime_ns();
        let t_s = self.start.elapsed().as_secs_f64();
        let cached = {
            let slots = self.slots.lock();
            let s = &slots[next];
            s.app
                .as_ref()
                .filter(|_| s.member.alive.load(Ordering::SeqCst))
                .map(|r| (r.app().clone(), s.member.clone()))
        };
        let pending = match cached {
            Some((app, m)) => {
                let before = app.swap_io();
                let frames_before = app.frames().count;
                m.foreground.store(true, Ordering::SeqCst);
                let mut restored_objects = 0;
                // Its heap task leaves the launch alone until the frame.
                app.begin_launch_quiet();
                if self.pressure == PressurePolicy::Marvin {
                    if let Ok(t) = app.enter_foreground() {
                        restored_objects = t.objects;
                    }
                }
                let resumed_ns = boottime_ns();
                app.resume();
                Pending {
                    app: next,
                    cold: false,
                    told_ns,
                    t_s,
                    before: (before, resumed_ns),
                    frames_before,
                    restored_objects,
                }
            }
            None => {
                let slot = self.start_app(next)?;
                self.slots.lock()[next] = slot;
                self.restarts.fetch_add(1, Ordering::SeqCst);
                self.timeline.point(next, "restart");
                Pending {
                    app: next,
                    cold: true,
                    told_ns,
                    t_s,
                    before: (SwapIo::default(), 0),
                    frames_before: 0,
                    restored_objects: 0,
                }
            }
        };
        self.timeline.begin(next, "foreground");
        *fg = Some(next);
        Ok(pending)
    }

    fn to_background(&self, id: usize) {
        let (member, app) = {
            let slots = self.slots.lock();
            (
                slots[id].member.clone(),
                slots[id].app.as_ref().map(|r| r.app().clone()),
            )
        };
        member.foreground.store(false, Ordering::SeqCst);
        self.lower_ui(id);
        self.timeline.end(id, "foreground");
        member
            .last_foreground_ns
            .store(self.start.elapsed().as_nanos() as u64, Ordering::SeqCst);
        if let (Some(app), PressurePolicy::Marvin) = (app, self.pressure) {
            if member.alive.load(Ordering::SeqCst) {
                let _ = app.enter_background();
            }
        }
    }

    /// Raises app `id`'s UI thread (its main looper) to `SCHED_FIFO` while it is in
    /// front, every policy alike, as the process mode does (Android's FIFO UI): its frame
    /// runs as soon as the handler under way returns. Nothing when it is raised already or
    /// its looper is not running yet (tried again on the next tick); a refusal (no
    /// `CAP_SYS_NICE`) turns it off for the run, said once.
    fn raise_ui(&self, id: usize) {
        let mut ui = self.ui.lock();
        if !ui.on || ui.raised.is_some_and(|(a, _)| a == id) {
            return;
        }
        let looper = {
            let slots = self.slots.lock();
            match slots.get(id) {
                Some(s) if s.app.is_some() => s.looper.clone(),
                _ => return,
            }
        };
        let Ok(Some(tid)) = uithread::find_thread(std::process::id(), &looper) else {
            return;
        };
        if let Some((_, old)) = ui.raised.take() {
            let _ = uithread::lower(old);
        }
        match uithread::raise(tid) {
            Ok(()) => ui.raised = Some((id, tid)),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(e) => {
                marvin_console::errln!(
                    "marvin: the app in front keeps a normal UI thread (no FIFO UI: {e})"
                );
                ui.on = false;
            }
        }
    }

    /// Puts app `id`'s UI thread back under `SCHED_OTHER` when it leaves the front.
    fn lower_ui(&self, id: usize) {
        let mut ui = self.ui.lock();
        if let Some((a, tid)) = ui.raised {
            if a == id {
                let _ = uithread::lower(tid);
                ui.raised = None;
            }
        }
    }

    /// Kills app `id` (the budget already marked it dead): its threads unwind and its
    /// memory goes back when the reaper drops it.
    fn kill(&self, id: usize) {
        self.kills.fetch_add(1, Ordering::SeqCst);
        self.timeline.point(id, "kill");
        self.timeline.end(id, "foreground");
        self.timeline.end(id, "active");
        let mut slots = self.slots.lock();
        let Some(slot) = slots.get_mut(id) else {
            return;
        };
        if let Some(running) = slot.app.take() {
            running.app().end();
            self.dying.lock().push((id, running));
        }
    }

    /// Joins killed apps' threads and frees them, booking their totals.
    fn reap(&self) {
        let done: Vec<_> = {
            let mut d = self.dying.lock();
            let (finished, rest): (Vec<_>, Vec<_>) =
                d.drain(..).partition(|(_, r)| r.is_finished());
            *d = rest;
            finished
        };
        for (id, running) in done {
            let app = running.app().clone();
            running.join();
            self.retire(id, &app);
        }
    }

    /// Books a gone app's totals (into the run's, and its own life's on the timeline).
    fn retire(&self, id: usize, app: &App) {
        let io = app.swap_io();
        for (event, value) in [
            ("object_faults", io.object_faults),
            ("gc_faults", io.gc_faults),
            ("swap_bytes_written", io.bytes_written),
            ("swap_bytes_read", io.bytes_read),
        ] {
            self.timeline.value(id, event, value);
        }
        self.timeline.end(id, "foreground");
        self.timeline.end(id, "active");
        let mut r = self.retired.lock();
        r.failed_verifications += app.mark_count("verify_failed");
        r.verified_arrays += app.mark_count("verified");
        r.swap_written += io.bytes_written;
        r.swap_read += io.bytes_read;
        r.gc_faults += io.gc_faults;
        r.object_faults += io.object_faults;
    }

    /// Takes out apps that ended by themselves (their looper returned while they were
    /// alive and not killed): an error, or a halt with a non-zero status, is a crash,
    /// recorded with its message; their memory goes back as a killed app's does.
    fn collect_ended(&self) {
        let ended: Vec<(usize, Running)> = {
            let mut slots = self.slots.lock();
            slots
                .iter_mut()
                .filter(|s| {
                    s.member.alive.load(Ordering::SeqCst)
                        && s.app.as_ref().is_some_and(|r| r.looper_finished())
                })
                .filter_map(|s| {
                    s.member.alive.store(false, Ordering::SeqCst);
                    s.ended = true;
                    Some((s.member.id, s.app.take()?))
                })
                .collect()
        };
        for (id, running) in ended {
            let app = running.app();
            let error = match app.outcome() {
                None | Some(Trap::Halt(0)) | Some(Trap::Terminated) => None,
                Some(Trap::Halt(status)) => Some(format!("halted with status {status}")),
                Some(t) => Some(
                    t.render(&self.loaded.vp.program)
                        .unwrap_or_else(|| format!("{t:?}")),
                ),
            };
            if let Some(error) = error {
                self.timeline.value(id, "error", &error);
                self.retired.lock().crashes.push(Crash {
                    app: id,
                    t_s: self.start.elapsed().as_secs_f64(),
                    error,
                });
            }
            // Its other threads wind down; the reaper books it and frees it.
            app.end();
            self.dying.lock().push((id, running));
        }
    }

    /// Reads every alive app's round count into its activity state.
    fn observe_activity(&self, th: Thresholds) {
        let now = Instant::now();
        for s in self.slots.lock().iter_mut() {
            let Some(running) = &s.app else { continue };
            if s.member.alive.load(Ordering::Relaxed) {
                let was = s.activity.is_active();
                s.activity
                    .observe(running.app().mark_count("round"), now, th);
                match (was, s.activity.is_active()) {
                    (false, true) => self.timeline.begin(s.member.id, "active"),
                    (true, false) => self.timeline.end(s.member.id, "active"),
                    _ => {}
                }
            }
        }
    }

    fn sample(&self, th: Thresholds) -> SeriesPoint {
        self.observe_activity(th);
        let mut slots = self.slots.lock();
        let (mut alive, mut active, mut written, mut read) = (0u32, 0u32, 0u64, 0u64);
        for s in slots.iter_mut() {
            let Some(running) = &s.app else { continue };
            if !s.member.alive.load(Ordering::Relaxed) {
                continue;
            }
            let app = running.app();
            if running.looper_finished() {
                // The app ended by itself: `collect_ended` books it next.
                continue;
            }
            alive += 1;
            if s.activity.is_active() {
                active += 1;
            }
            let io = app.swap_io();
            written += io.bytes_written;
            read += io.bytes_read;
        }
        drop(slots);
        let r = self.retired.lock();
        let rss = marvin_runtime::procfs::resident().unwrap_or_default();
        let (held, charged) = self.budget.runtime();
        {
            let mut peak = self.peak_runtime.lock();
            *peak = (peak.0.max(held), peak.1.max(charged));
        }
        SeriesPoint {
            t_s: self.start.elapsed().as_secs_f64(),
            alive,
            active,
            kills: self.kills.load(Ordering::Relaxed),
            restarts: self.restarts.load(Ordering::Relaxed),
            accounted_bytes: self.budget.resident(),
            rss_bytes: rss.rss,
            rss_anon_bytes: rss.anon,
            rss_file_bytes: rss.file,
            rss_shmem_bytes: rss.shmem,
            swap_written: written + r.swap_written,
            swap_read: read + r.swap_read,
            // Set when it joins the series.
            after_gap: false,
        }
    }

    /// Ends every app and waits for all threads.
    fn shutdown(&self) {
        self.collect_ended();
        let slots: Vec<(usize, Running)> = self
            .slots
            .lock()
            .iter_mut()
            .filter_map(|s| Some((s.member.id, s.app.take()?)))
            .collect();
        // Tell every app first, so they all wind down together, then wait for each.
        for (_, running) in &slots {
            running.app().end();
        }
        for (id, running) in slots {
            let app = running.app().clone();
            running.join();
            self.retire(id, &app);
        }
        loop {
            self.reap();
            if self.dying.lock().is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn finish(&self, summary: &mut Summary) {
        let r = self.retired.lock();
        summary.kills = self.kills.load(Ordering::SeqCst);
        summary.restarts = self.restarts.load(Ordering::SeqCst);
        summary.failed_verifications = r.failed_verifications;
        summary.verified_arrays = r.verified_arrays;
        summary.crashed_apps = r.crashes.len() as u64;
        summary.crashes = r.crashes.clone();
        summary.swap_bytes_written = r.swap_written;
        summary.swap_bytes_read = r.swap_read;
        summary.gc_faults = r.gc_faults;
        summary.object_faults = r.object_faults;
        let st = self.budget.stats.lock();
        let mut lat: Vec<u64> = st.stall_ns.clone();
        summary.set_latencies(&mut lat);
        summary.reclaimed_bytes = st.reclaimed_bytes;
        summary.reclaim_calls = st.reclaim_calls;
        let (events, max_over) = self.budget.over_budget();
        summary.over_budget_events = events;
        summary.max_over_budget_bytes = max_over;
        summary.peak_committed_bytes = self.budget.peak_committed();
        summary.budget_bytes = self.cfg.budget as u64;
        summary.app_events = self.timeline.finish();
        (
            summary.peak_runtime_bytes,
            summary.peak_runtime_charged_bytes,
        ) = *self.peak_runtime.lock();
    }
}
