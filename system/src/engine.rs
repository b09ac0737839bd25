//! The in-process model's host of a policy's run ([`crate::run_loop`]): N app instances
//! as threads of this process, each with its own heap, main looper, threads, reclaim
//! table and swap file, sharing one budget of resident app memory ([`Budget`]), which
//! handles memory pressure on the allocating threads as the policy says. What it tells
//! the driver is how such an app is started, told, observed and stopped.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use marvin_app::{App, RunConfig, Running, SwapIo, TraceTarget};
use marvin_interpreter::exec::{Loaded, Trap};
use marvin_runtime::cpuclock::boottime_ns;
use marvin_runtime::HeapConfig;
use marvin_swap::{PolicyConfig, SwapPolicy};
use parking_lot::Mutex;

use super::budget::{Budget, BudgetHook, Member};
use super::launch::{Brought, LaunchParts, Pending};
use super::run_loop::{self, Apps, Frame, Host, Progress, Told, LAUNCH_ROOM};
use super::series::{PolicySeries, SeriesPoint};
use super::summary::{Crash, Summary};
use super::timeline::Timeline;
use super::{PressurePolicy, SystemConfig};
use marvin_machine::uithread;

/// An app instance: the app while it lives, as the budget sees it, and its looper.
struct Handle {
    member: Arc<Member>,
    app: Option<Running>,
    /// Its main looper thread's name, unique in the run (a restarted app's new looper
    /// is not mistaken for its old one still unwinding).
    looper: String,
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

/// Everything one policy run shares between the driver, the budget's kill callback
/// (on the allocating threads) and the sampler.
struct Run {
    cfg: SystemConfig,
    pressure: PressurePolicy,
    loaded: Arc<Loaded>,
    policy: Arc<PolicyConfig>,
    apps: Mutex<Vec<Handle>>,
    budget: Arc<Budget>,
    kills: AtomicU64,
    retired: Mutex<Retired>,
    /// The most the runtime held for the alive apps at a sample, and was charged at.
    peak_runtime: Mutex<(u64, u64)>,
    /// Apps killed whose threads are being reaped, by app number.
    dying: Mutex<Vec<(usize, Running)>>,
    /// Apps started so far (restarts included): numbers their looper threads.
    lives: AtomicU64,
    start: Instant,
    /// What happened to each app, in time (the driver's).
    timeline: Arc<Timeline>,
    /// The run's swap directory, removed when the run ends.
    dir: super::RunDir,
}

/// How often apps' round counts are read for their activity (the series is sampled less
/// often).
const ACTIVITY_TICK: Duration = Duration::from_millis(10);

/// Runs one policy and returns its summary and time series.
pub fn run_policy(
    cfg: &SystemConfig,
    pressure: PressurePolicy,
    loaded: Arc<Loaded>,
    policy: Arc<PolicyConfig>,
    progress: Progress<'_>,
) -> anyhow::Result<(Summary, PolicySeries)> {
    let dir = super::policy_dir(cfg.swap_dir.as_deref(), pressure, "marvin-pressure-")?;
    let mut apps = Apps::new();
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
            apps: Mutex::new(Vec::new()),
            budget: Arc::new(Budget::new(
                cfg.budget as u64,
                pressure,
                policy.clone() as Arc<dyn SwapPolicy>,
                kill,
            )),
            kills: AtomicU64::new(0),
            retired: Mutex::new(Retired::default()),
            peak_runtime: Mutex::new((0, 0)),
            dying: Mutex::new(Vec::new()),
            lives: AtomicU64::new(0),
            start: apps.start,
            timeline: apps.timeline.clone(),
            dir,
        }
    });
    run_loop::drive(
        &mut InProcess { run: &run },
        &mut apps,
        cfg,
        pressure,
        progress,
    )
}

/// The in-process model's host: the apps as threads of this process.
struct InProcess<'a> {
    run: &'a Run,
}

impl Host for InProcess<'_> {
    type Before = (SwapIo, u64);
    type Turn = ();

    fn begin_turn(&mut self, _apps: &Apps) -> anyhow::Result<()> {
        Ok(())
    }

    fn reap(&mut self, apps: &mut Apps) {
        self.run.collect_ended(apps);
        self.run.reap();
    }

    fn activity_tick(&self) -> Option<Duration> {
        Some(ACTIVITY_TICK)
    }

    fn rounds(&self, id: usize) -> Option<u64> {
        let apps = self.run.apps.lock();
        let h = apps.get(id)?;
        let running = h.app.as_ref()?;
        h.member
            .alive
            .load(Ordering::Relaxed)
            .then(|| running.app().mark_count("round"))
    }

    fn sample(&mut self, apps: &Apps) -> SeriesPoint {
        self.run.sample(apps)
    }

    fn end_run(&mut self, apps: &mut Apps) {
        self.run.collect_ended(apps);
    }

    fn finish(&mut self, apps: &mut Apps, summary: &mut Summary) {
        self.run.shutdown(apps);
        self.run.finish(apps, summary);
    }

    fn start(&mut self, id: usize) -> anyhow::Result<()> {
        let handle = self.run.start_app(id)?;
        let mut apps = self.run.apps.lock();
        if id == apps.len() {
            apps.push(handle);
        } else {
            apps[id] = handle;
        }
        Ok(())
    }

    fn running(&self, id: usize) -> bool {
        self.run.cached(id).is_some()
    }

    fn resume(&mut self, id: usize) -> Told<(SwapIo, u64)> {
        self.run.resume(id)
    }

    fn cold_before(&self) -> (SwapIo, u64) {
        (SwapIo::default(), 0)
    }

    fn send_to_background(&mut self, id: usize) {
        self.run.to_background(id);
    }

    /// Room for the app that is coming back, made before it is told (see
    /// [`Budget::make_room_ahead`]): its launch then does not reclaim on its own thread.
    fn make_room_ahead(&mut self, id: usize) {
        self.run.budget.make_room_ahead(id, LAUNCH_ROOM);
    }

    fn frame(&mut self, p: &Pending<(SwapIo, u64)>, raised: bool) -> Frame {
        self.run.frame(p, raised)
    }

    /// Its main looper, found by its name among this process's threads.
    fn ui_threads(&mut self, id: usize) -> Option<Vec<u32>> {
        let looper = {
            let apps = self.run.apps.lock();
            match apps.get(id) {
                Some(h) if h.app.is_some() => h.looper.clone(),
                _ => return None,
            }
        };
        let tid = uithread::find_thread(std::process::id(), &looper).ok()??;
        Some(vec![tid])
    }
}

impl Run {
    fn app_config(&self, id: usize) -> RunConfig {
        let policy_index = self.pressure.spec().trace_index;
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
    fn start_app(&self, id: usize) -> anyhow::Result<Handle> {
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
        Ok(Handle {
            member,
            app: Some(running),
            looper,
        })
    }

    /// App `id` and its member, while it is alive.
    fn cached(&self, id: usize) -> Option<(Arc<App>, Arc<Member>)> {
        let apps = self.apps.lock();
        let h = apps.get(id)?;
        h.app
            .as_ref()
            .filter(|_| h.member.alive.load(Ordering::SeqCst))
            .map(|r| (r.app().clone(), h.member.clone()))
    }

    /// Whether the launch under way has drawn its frame: its app's frame count went up
    /// after it was told.
    fn frame(&self, p: &Pending<(SwapIo, u64)>, raised: bool) -> Frame {
        let Some((app, _)) = self.cached(p.app) else {
            return Frame::Gone;
        };
        let f = app.frames();
        if f.count <= p.frames_before || f.last_ns < p.told_ns {
            return Frame::NotYet;
        }
        let (before, resumed_ns) = &p.before;
        Frame::Drawn {
            at_ns: f.last_ns,
            brought: Brought {
                object_faults: f.io.object_faults.saturating_sub(before.object_faults),
                swap_read_bytes: f.io.bytes_read.saturating_sub(before.bytes_read),
                ..Brought::default()
            },
            // Cold: no transition, the whole launch is its frame.
            parts: LaunchParts {
                transition_ns: resumed_ns.saturating_sub(p.told_ns),
                frame_ns: f.last_ns.saturating_sub((*resumed_ns).max(p.told_ns)),
                ui_fifo: raised,
                prefetch_bytes: f
                    .io
                    .prefetched_bytes
                    .saturating_sub(before.prefetched_bytes),
                ..LaunchParts::default()
            },
        }
    }

    /// Tells cached app `id` to come to the foreground: marvin restores it as its
    /// policy says, then it is resumed.
    fn resume(&self, id: usize) -> Told<(SwapIo, u64)> {
        let told_ns = boottime_ns();
        let Some((app, m)) = self.cached(id) else {
            return Told {
                told_ns,
                before: (SwapIo::default(), 0),
                frames_before: 0,
                restored_objects: 0,
            };
        };
        let before = app.swap_io();
        let frames_before = app.frames().count;
        m.foreground.store(true, Ordering::SeqCst);
        let mut restored_objects = 0;
        // Its heap task leaves the launch alone until the frame.
        app.begin_launch_quiet();
        if self.pressure.swaps_objects() {
            if let Ok(t) = app.enter_foreground() {
                restored_objects = t.objects;
            }
        }
        let resumed_ns = boottime_ns();
        app.resume();
        Told {
            told_ns,
            before: (before, resumed_ns),
            frames_before,
            restored_objects,
        }
    }

    fn to_background(&self, id: usize) {
        let (member, app) = {
            let apps = self.apps.lock();
            (
                apps[id].member.clone(),
                apps[id].app.as_ref().map(|r| r.app().clone()),
            )
        };
        member.foreground.store(false, Ordering::SeqCst);
        member
            .last_foreground_ns
            .store(self.start.elapsed().as_nanos() as u64, Ordering::SeqCst);
        if let (Some(app), true) = (app, self.pressure.swaps_objects()) {
            if member.alive.load(Ordering::SeqCst) {
                let _ = app.enter_background();
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
        let mut apps = self.apps.lock();
        let Some(h) = apps.get_mut(id) else {
            return;
        };
        if let Some(running) = h.app.take() {
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
    fn collect_ended(&self, slots: &mut Apps) {
        let ended: Vec<(usize, Running)> = {
            let mut apps = self.apps.lock();
            apps.iter_mut()
                .filter(|h| {
                    h.member.alive.load(Ordering::SeqCst)
                        && h.app.as_ref().is_some_and(|r| r.looper_finished())
                })
                .filter_map(|h| {
                    h.member.alive.store(false, Ordering::SeqCst);
                    Some((h.member.id, h.app.take()?))
                })
                .collect()
        };
        for (id, running) in ended {
            slots.slots[id].ended = true;
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

    fn sample(&self, slots: &Apps) -> SeriesPoint {
        let apps = self.apps.lock();
        let (mut alive, mut active, mut written, mut read) = (0u32, 0u32, 0u64, 0u64);
        for (id, h) in apps.iter().enumerate() {
            let Some(running) = &h.app else { continue };
            if !h.member.alive.load(Ordering::Relaxed) {
                continue;
            }
            let app = running.app();
            if running.looper_finished() {
                // The app ended by itself: `collect_ended` books it next.
                continue;
            }
            alive += 1;
            if slots.is_active(id) {
                active += 1;
            }
            let io = app.swap_io();
            written += io.bytes_written;
            read += io.bytes_read;
        }
        drop(apps);
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
            restarts: slots.restarts,
            accounted_bytes: self.budget.resident(),
            rss_bytes: rss.rss(),
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
    fn shutdown(&self, slots: &mut Apps) {
        self.collect_ended(slots);
        let all: Vec<(usize, Running)> = self
            .apps
            .lock()
            .iter_mut()
            .filter_map(|h| Some((h.member.id, h.app.take()?)))
            .collect();
        // Tell every app first, so they all wind down together, then wait for each.
        for (_, running) in &all {
            running.app().end();
        }
        for (id, running) in all {
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

    fn finish(&self, slots: &Apps, summary: &mut Summary) {
        let r = self.retired.lock();
        summary.kills = self.kills.load(Ordering::SeqCst);
        summary.restarts = slots.restarts;
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
