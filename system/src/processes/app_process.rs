//! One app as an OS process: the child side of the process mode (`marvin app`, a
//! subcommand the System starts, not meant to be typed).
//!
//! The process runs one workload program on its own heap, main looper and (for
//! marvin) swap file, reclaim table and heap task. A command thread reads the System's
//! [`Command`]s from standard input and turns them into the app's own transitions;
//! the main thread reports the app's marks every period and its exit last. The app
//! never checks a memory budget here: the kernel's cgroup does.
//!
//! Traced (`--trace FILE`), the app records its own Perfetto trace, as `marvin run --trace`
//! does, and the main thread appends it to the file as it goes ([`TRACE_FLUSH_EVERY`]), so a
//! killed app leaves all but its last moments; the System merges the files of every app
//! life into its own trace.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use marvin_app::{App, Frames, RunConfig, Running, SwapIo, SwapMode, TraceTarget};
use marvin_interpreter::exec::{Loaded, Trap};
use marvin_runtime::trace::Tracer;
use marvin_runtime::{HeapConfig, LargeBacking};
use marvin_swap::{PolicyConfig, SwapPolicy};
use parking_lot::Mutex;

use super::protocol::{self, Command, Report};
use marvin_runtime::cpuclock::boottime_ns;
use marvin_runtime::process_cpu_time_ns;
use marvin_runtime::procfs::{self, SchedTimes};

/// How often an app process gives its allocator's free memory back to the kernel: the
/// cgroup charges every resident page, and the allocator keeps what stubs, registries
/// and indices free (1.6 of 3.5 MiB of a background app's heap, measured).
const TRIM_EVERY: Duration = Duration::from_millis(500);

/// How often a traced app process appends what it recorded to its trace file: a killed
/// app's trace loses about this much (checked at each report period).
pub const TRACE_FLUSH_EVERY: Duration = Duration::from_millis(100);

/// How an app process handles memory: the kill and kernel-swap baselines run a plain
/// heap (the kernel and the killer act from outside); marvin runs Marvin's runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AppMode {
    /// A plain heap: no stubs, no swap file.
    Plain,
    /// Marvin's runtime: stubs in the background, saver, reclaim table.
    Marvin,
}

/// What an app process needs to start.
pub struct AppProcessConfig {
    pub loaded: Arc<Loaded>,
    pub mode: AppMode,
    /// The app's swap file and reclaim table go here (marvin).
    pub swap_dir: PathBuf,
    /// Marvin's swap policy (already scaled to the run's time scale).
    pub policy: Arc<PolicyConfig>,
    pub gc_max_free: usize,
    /// How often marks are reported.
    pub report_every: Duration,
    /// Where the app's trace goes, if it is traced.
    pub trace: Option<AppTraceConfig>,
}

/// A traced app's trace file and the name of its process track.
#[derive(Clone, Debug)]
pub struct AppTraceConfig {
    pub path: PathBuf,
    pub name: String,
}

/// A traced app's trace, appended to its file as it goes.
struct TraceStream {
    tracer: Tracer,
    file: std::fs::File,
    path: PathBuf,
    next: Instant,
}

impl TraceStream {
    fn create(cfg: &AppTraceConfig, tracer: Tracer) -> anyhow::Result<TraceStream> {
        let file = std::fs::File::create(&cfg.path)
            .with_context(|| format!("cannot write the trace {}", cfg.path.display()))?;
        Ok(TraceStream {
            tracer,
            file,
            path: cfg.path.clone(),
            next: Instant::now() + TRACE_FLUSH_EVERY,
        })
    }

    /// Appends what was recorded since the last flush, when it is time.
    fn tick(&mut self) {
        if Instant::now() >= self.next {
            self.flush();
            self.next = Instant::now() + TRACE_FLUSH_EVERY;
        }
    }

    /// Appends what was recorded since the last flush. A write that fails stops the
    /// tracing (said on standard error, which the System shows if the app crashes): the
    /// app runs on.
    fn flush(&mut self) {
        if !self.tracer.is_enabled() {
            return;
        }
        if let Err(e) = self.tracer.flush_to(&mut self.file) {
            self.tracer.set_enabled(false);
            marvin_console::errln!(
                "marvin app: the trace {} cannot be written ({e}); tracing stopped",
                self.path.display()
            );
        }
    }
}

/// Runs the app until it ends or is stopped, reporting on `out`; commands come from
/// `commands` (the process's standard input). Returns the exit status.
pub fn run(
    cfg: AppProcessConfig,
    commands: impl std::io::BufRead + Send + 'static,
    out: impl Write + Send + 'static,
) -> anyhow::Result<i32> {
    let out = Arc::new(Mutex::new(out));
    let mut trace = match &cfg.trace {
        Some(t) => Some(TraceStream::create(t, Tracer::new())?),
        None => None,
    };
    let run_cfg = RunConfig {
        heap: HeapConfig {
            gc_min_free: cfg.gc_max_free.min(1 << 20),
            gc_max_free: cfg.gc_max_free,
            // marvin: large objects in memory files, so the System's reclaimer can punch
            // their pages out from its own process (`marvin_swap::external`).
            large_backing: match cfg.mode {
                AppMode::Marvin => LargeBacking::Memfd,
                AppMode::Plain => LargeBacking::Anonymous,
            },
            ..HeapConfig::default()
        },
        out: Box::new(std::io::sink()),
        trace: cfg
            .trace
            .as_ref()
            .zip(trace.as_ref())
            .map(|(t, s)| TraceTarget {
                tracer: s.tracer.clone(),
                pid: std::process::id() as i32,
                name: t.name.clone(),
            }),
        ..RunConfig::default()
    };
    let app = Arc::new(App::new(cfg.loaded.clone(), run_cfg)?);
    if cfg.mode == AppMode::Marvin {
        // The app's own folder (one a group or others could write in would be refused).
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(&cfg.swap_dir)?;
        app.enable_swap(
            &cfg.swap_dir,
            "swap",
            cfg.policy.clone() as Arc<dyn SwapPolicy>,
            SwapMode::Objects,
        )?;
    }
    protocol::send(
        &mut *out.lock(),
        &Report::Ready {
            pid: std::process::id(),
            run: marvin_runtime::RunIdentity::current().id_hex(),
        },
    )?;
    // Swap counters and times when the app was last told to come to the foreground: a
    // frame reports what came back since, and where the time went.
    let told: Arc<Mutex<Option<Told>>> = Arc::new(Mutex::new(None));
    {
        let (o, told) = (out.clone(), told.clone());
        app.on_frame(Box::new(move |f| report_frame(f, &told, &o)))?;
    }
    let running = App::launch(&app, marvin_machine::uithread::LOOPER_THREAD.into())?;
    {
        let (a, o, t) = (app.clone(), out.clone(), told.clone());
        std::thread::Builder::new()
            .name(marvin_machine::uithread::CONTROL_THREAD.into())
            .spawn(move || obey(&a, commands, &o, &t))?;
    }
    let mut next_trim = std::time::Instant::now() + TRIM_EVERY;
    let mut native = super::native_out::Publisher::default();
    while !running.looper_finished() {
        report_marks(&app, &out);
        if cfg.mode == AppMode::Marvin {
            // Where its native buffers are, for the System to page them out.
            let _ = native.publish(&app, &cfg.swap_dir);
        }
        park_until_finished(&running, cfg.report_every);
        if std::time::Instant::now() >= next_trim {
            crate::native_heap::release_free_memory();
            next_trim += TRIM_EVERY;
        }
        if let Some(t) = trace.as_mut() {
            t.tick();
        }
    }
    let trap = running.join();
    if let Some(t) = trace.as_mut() {
        t.flush();
    }
    report_marks(&app, &out);
    let (status, error) = match trap {
        None | Some(Trap::Terminated) => (0, None),
        Some(Trap::Halt(code)) => (code as i32, None),
        Some(t) => (70, t.render(&cfg.loaded.vp.program)),
    };
    // The System may be gone already (it killed us, or ended): nothing to report to.
    let _ = protocol::send(&mut *out.lock(), &Report::Exit { status, error });
    Ok(status)
}

/// Sleeps up to `d`, waking early once the looper has finished.
fn park_until_finished(running: &Running, d: Duration) {
    let step = Duration::from_millis(10).min(d);
    let mut slept = Duration::ZERO;
    while slept < d && !running.looper_finished() {
        std::thread::sleep(step);
        slept += step;
    }
}

fn report_marks(app: &App, out: &Mutex<impl Write>) {
    let marks = app.mark_counts();
    let mut counters = std::collections::BTreeMap::new();
    let gc_major_faults = app.gc_totals().major_faults;
    counters.insert("gc_major_faults".into(), gc_major_faults);
    if gc_major_faults > 0 {
        // Read after the collections' count, so the process's count (which holds every
        // collection's faults) is never behind it in one report.
        if let Ok(all) = procfs::process_major_faults() {
            counters.insert("major_faults".into(), all);
        }
    }
    if let Some(space) = app.heap().stub_space() {
        let c = &space.counters;
        counters.insert("object_faults".into(), c.faults.load(Ordering::Relaxed));
        counters.insert("gc_faults".into(), c.gc_faults.load(Ordering::Relaxed));
    }
    for (name, bytes) in marvin_app::KindBytes::of(app).counters() {
        counters.insert(name.into(), bytes);
    }
    counters.extend(marvin_app::reach::counters(&marvin_app::reach::measure(
        app,
    )));
    let _ = protocol::send(&mut *out.lock(), &Report::Marks { marks, counters });
}

/// What the app noted when it was told to come to the foreground.
#[derive(Clone, Copy, Debug)]
struct Told {
    io: SwapIo,
    /// When its control thread read the command (`CLOCK_BOOTTIME` ns).
    received_ns: u64,
    /// When its transition was done and the foreground message posted (0 until then).
    resumed_ns: u64,
    sched: SchedTimes,
    /// The looper thread's id and its run-queue wait so far, then (schedstat).
    looper: Option<(u32, u64)>,
    /// The process's CPU clock then (`CLOCK_PROCESS_CPUTIME_ID`).
    cpu_ns: u64,
}

/// The looper thread's id and its run-queue wait so far (`None` if it cannot be read).
fn looper_runqueue() -> Option<(u32, u64)> {
    let pid = std::process::id();
    let tid = marvin_machine::uithread::find_thread(pid, marvin_machine::uithread::LOOPER_THREAD)
        .ok()
        .flatten()?;
    Some((tid, thread_runqueue_ns(tid)?))
}

/// Thread `tid` of this process's run-queue wait so far (schedstat).
fn thread_runqueue_ns(tid: u32) -> Option<u64> {
    procfs::thread_sched_times(std::process::id(), tid)
        .ok()
        .map(|t| t.runqueue_ns)
}

fn own_sched_times() -> SchedTimes {
    procfs::sched_times(std::process::id()).unwrap_or_default()
}

/// Reports a frame at once, with what came back since the app was told to come to the
/// foreground (nothing for a frame without such a command, its first after starting).
fn report_frame(f: &Frames, told: &Mutex<Option<Told>>, out: &Mutex<impl Write>) {
    let since = told.lock().take();
    let d =
        |now: u64, then: fn(&SwapIo) -> u64| since.map_or(0, |b| now.saturating_sub(then(&b.io)));
    let sched = since.map(|b| (b, own_sched_times()));
    let report = Report::Frame {
        at_ns: f.last_ns,
        major_faults: procfs::major_faults(std::process::id()).unwrap_or(0),
        restored_objects: d(f.io.restored_objects, |b| b.restored_objects),
        object_faults: d(f.io.object_faults, |b| b.object_faults),
        swap_read_bytes: d(f.io.bytes_read, |b| b.bytes_read),
        prefetch_bytes: d(f.io.prefetched_bytes, |b| b.prefetched_bytes),
        received_ns: since.map_or(0, |b| b.received_ns),
        resumed_ns: since.map_or(0, |b| b.resumed_ns),
        // The process's CPU clock, not schedstat: the kernel brings the calling thread's
        // runtime up to date when the clock is read, while a running thread's schedstat
        // lags until its next tick or switch (a hot launch of a fraction of a
        // millisecond read 0 there).
        run_ns: since.map_or(0, |b| process_cpu_time_ns().saturating_sub(b.cpu_ns)),
        runqueue_ns: sched.map_or(0, |(b, now)| {
            now.runqueue_ns.saturating_sub(b.sched.runqueue_ns)
        }),
        // Read on the looper itself (the frame's hook runs there), so it is up to date.
        looper_runqueue_ns: since
            .and_then(|b| b.looper)
            .and_then(|(tid, before)| Some(thread_runqueue_ns(tid)?.saturating_sub(before)))
            .unwrap_or(0),
        // The hook runs on the looper thread, the one the frame was drawn on.
        ui_fifo: marvin_machine::sys::thread_policy(0).is_ok_and(|p| p == libc::SCHED_FIFO),
    };
    let _ = protocol::send(&mut *out.lock(), &report);
}

/// The command thread: applies each command to the app until `stop`, the end of the
/// input, or a line that is not a command (which ends the app with an error). Coming
/// to the foreground, the app is resumed (its foreground message posted) after its
/// transition, whatever its mode.
fn obey(
    app: &Arc<App>,
    mut commands: impl std::io::BufRead,
    out: &Mutex<impl Write>,
    told: &Mutex<Option<Told>>,
) {
    loop {
        let cmd = match protocol::recv::<Command>(&mut commands) {
            Ok(Some(c)) => c,
            Ok(None) => {
                app.end();
                return;
            }
            Err(e) => {
                app.abort(e.to_string());
                return;
            }
        };
        let swapping = app.swap_mode().is_some();
        if let Some(track) = app.trace().current_track() {
            let name = match cmd {
                Command::Background => "command background",
                Command::Foreground => "command foreground",
                Command::Age => "command age",
                Command::Stop => "command stop",
            };
            app.trace().tracer().instant(track, name);
        }
        if cmd == Command::Foreground {
            // Its heap task leaves the launch alone until the frame.
            app.begin_launch_quiet();
            *told.lock() = Some(Told {
                received_ns: boottime_ns(),
                sched: own_sched_times(),
                looper: looper_runqueue(),
                cpu_ns: process_cpu_time_ns(),
                io: app.swap_io(),
                resumed_ns: 0,
            });
        }
        let done = match cmd {
            Command::Stop => {
                app.end();
                return;
            }
            Command::Background if swapping => Some(("background", app.enter_background())),
            Command::Foreground if swapping => Some(("foreground", app.enter_foreground())),
            // Done by the heap task, which the request wakes; no transition to report.
            Command::Age => {
                app.request_age();
                None
            }
            // A plain heap has nothing to do: the kernel and the killer act on it.
            Command::Background | Command::Foreground => None,
        };
        match done {
            Some((action, Ok(t))) => {
                let _ = protocol::send(
                    &mut *out.lock(),
                    &Report::Transition {
                        action: action.into(),
                        duration_ns: t.duration_ns,
                        objects: t.objects,
                        bytes: t.bytes,
                    },
                );
                report_marks(app, out);
            }
            Some((action, Err(e))) => {
                app.abort(format!("{action} failed: {e}"));
                return;
            }
            None => {}
        }
        if cmd == Command::Foreground {
            if let Some(t) = told.lock().as_mut() {
                t.resumed_ns = boottime_ns();
            }
            app.resume();
        }
    }
}
