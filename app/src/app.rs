//! One running program ([`App`]): its loaded code, heap, monitors, output, marks and
//! collector totals, shared by all of its threads. Its fields are private; what the
//! System, the benchmarks and the command line may do with an app are the operations here
//! and in [`memory`](crate::memory) (swapping and transitions),
//! [`command`](crate::command) (the commands that drive an app from outside) and
//! [`launch`](crate::launch) (starting its threads).

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use marvin_deliqueue::{DeliQueue, InstantClock, MessageQueue};
use marvin_runtime::fasttrack::FastTracker;
use marvin_runtime::trace::{names, Tracer};
use marvin_runtime::Heap;
use marvin_runtime::Monitors;
use marvin_runtime::NativeBuffers;
use marvin_runtime::Safepoints;
use marvin_runtime::{process_cpu_time_ns, Activity, CpuAccount};
use parking_lot::{Condvar, Mutex};

use marvin_interpreter::exec::{Loaded, Trap};

use crate::config::RunConfig;
use crate::error::AppError;
use crate::launch_state::LaunchState;
use crate::pin::{MasmMessage, PinnedRoots};
use crate::swapping::{SwapMode, Transition};
use crate::tracing::AppTrace;

/// Collector totals of one app.
#[derive(Clone, Debug, Default)]
pub struct GcTotals {
    pub collections: u64,
    /// Major page faults the collecting thread took during collections: pages read
    /// back from disk or swap just to be scanned (zero with Marvin's bookmarks, which
    /// never touch a reclaimed object).
    pub major_faults: u64,
    pub time: Duration,
    pub freed_objects: u64,
    pub freed_bytes: u64,
    pub last_working_set: marvin_gc::WorkingSet,
    /// Working-set walks without a collection (the heap task's rounds).
    pub working_set_rounds: u64,
}

/// The state one program's threads share.
pub struct App {
    pub(crate) loaded: Arc<Loaded>,
    pub(crate) heap: Heap,
    pub(crate) safepoints: Arc<Safepoints>,
    pub(crate) monitors: Monitors,
    /// Buffers the program holds outside the heap (`nalloc`); unmapped with the app.
    pub(crate) native: NativeBuffers,
    pub(crate) barriers: bool,
    pub(crate) stack_slots: usize,
    pub(crate) max_frames: usize,
    out: Mutex<std::io::BufWriter<Box<dyn Write + Send>>>,
    /// The first error writing program output; once set, output is dropped and the
    /// app is ended (see [`App::write_out`]).
    out_error: Mutex<Option<std::io::Error>>,
    /// `mark` counts, one per string of the program.
    marks: Vec<AtomicU64>,
    pub(crate) gc: Mutex<GcTotals>,
    start: Instant,
    /// The main looper's queue, on a clock with no calibration: `MonotonicClock`'s
    /// calibration at the first post (`main` is the first message) cost every run 0.6 ms
    /// to tens of milliseconds on a busy host, and an app posts too few messages for its
    /// cheaper readings to pay that back.
    pub(crate) queue: Arc<DeliQueue<MasmMessage, InstantClock>>,
    /// References pinned as roots by pending messages and starting threads (count per value).
    pub(crate) pinned: Arc<PinnedRoots>,
    /// Spawned threads still running.
    pub(crate) threads_alive: AtomicUsize,
    pub(crate) handles: Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// The first halt or runtime error, which ends the app.
    outcome: Mutex<Option<Trap>>,
    sleepers: (Mutex<()>, Condvar),
    /// The app just went to the background: its heap task saves at once
    /// ([`App::heap_task_sleep_until`] returns early), cold objects to completion.
    pub(crate) save_soon: std::sync::atomic::AtomicBool,
    /// Asked to age its working set now ([`App::request_age`]).
    pub(crate) age_soon: std::sync::atomic::AtomicBool,
    /// The swap side and its mode, once swapping is enabled.
    pub(crate) swap: std::sync::OnceLock<(Arc<marvin_swap::AppSwap>, SwapMode)>,
    /// Memory transitions so far (background, save, reclaim, foreground).
    pub(crate) transitions: Mutex<Vec<Transition>>,
    /// Latency of every reclaim request served by this app, in ns.
    pub(crate) reclaim_latencies: Mutex<Vec<u64>>,
    /// The app's trace tracks (a disabled tracer when not traced).
    pub(crate) trace: Arc<AppTrace>,
    /// CPU time of the runtime's own work for this app.
    pub(crate) cpu: CpuAccount,
    /// Process CPU time when the app started.
    cpu_start_ns: u64,
    /// Its foreground message and frames ([`foreground`](crate::foreground)).
    pub(crate) launch: LaunchState,
}

impl App {
    /// A new app of `loaded` with its own heap, monitors and main-looper queue; nothing
    /// runs until it is [launched](crate::launch). `cfg.swap` and `cfg.resolve` are read
    /// by [`run`](crate::run()), not here.
    pub fn new(loaded: Arc<Loaded>, cfg: RunConfig) -> Result<App, AppError> {
        let marks = (0..loaded.vp.program.strings.len())
            .map(|_| AtomicU64::new(0))
            .collect();
        let loaded_strings = loaded.vp.program.strings.clone();
        let trace = Arc::new(AppTrace::new(cfg.trace));
        let tracker = Arc::new(FastTracker::os(cfg.fast_track));
        if trace.is_enabled() {
            let t = trace.clone();
            tracker.set_observer(move |e| t.fast_track_event(e));
        }
        Ok(App {
            heap: Heap::new(cfg.heap)?,
            loaded,
            safepoints: Safepoints::new(),
            monitors: Monitors::with_fast_track(tracker),
            native: NativeBuffers::new(),
            barriers: cfg.barriers,
            stack_slots: cfg.stack_slots,
            max_frames: cfg.max_frames,
            out: Mutex::new(std::io::BufWriter::new(cfg.out)),
            out_error: Mutex::new(None),
            marks,
            gc: Mutex::new(GcTotals::default()),
            start: Instant::now(),
            queue: Arc::new(DeliQueue::with_clock(InstantClock::new())),
            pinned: Arc::new(Mutex::new(HashMap::new())),
            threads_alive: AtomicUsize::new(0),
            handles: Mutex::new(Vec::new()),
            outcome: Mutex::new(None),
            sleepers: (Mutex::new(()), Condvar::new()),
            save_soon: std::sync::atomic::AtomicBool::new(false),
            age_soon: std::sync::atomic::AtomicBool::new(false),
            swap: std::sync::OnceLock::new(),
            transitions: Mutex::new(Vec::new()),
            reclaim_latencies: Mutex::new(Vec::new()),
            trace,
            cpu: CpuAccount::new(),
            cpu_start_ns: process_cpu_time_ns(),
            launch: LaunchState::new(&loaded_strings),
        })
    }

    /// Writes program output. The first write error (a closed pipe, a full disk) ends
    /// the app, as SIGPIPE or a failed `write` ends a native program: the output is lost
    /// and the run must not report success. The error is kept for
    /// [`take_output_error`](App::take_output_error); later output is dropped.
    pub fn write_out(&self, bytes: &[u8]) {
        let res = {
            let mut out = self.out.lock();
            if self.out_error.lock().is_some() {
                return;
            }
            out.write_all(bytes)
        };
        if let Err(e) = res {
            self.output_failed(e);
        }
    }

    /// Flushes program output (an error is kept as by [`write_out`](App::write_out)).
    pub fn flush(&self) {
        let res = {
            let mut out = self.out.lock();
            if self.out_error.lock().is_some() {
                return;
            }
            out.flush()
        };
        if let Err(e) = res {
            self.output_failed(e);
        }
    }

    /// The first error writing program output, if any (taken: later calls see `None`).
    pub fn take_output_error(&self) -> Option<std::io::Error> {
        self.out_error.lock().take()
    }

    fn output_failed(&self, e: std::io::Error) {
        {
            let mut slot = self.out_error.lock();
            if slot.is_some() {
                return;
            }
            *slot = Some(e);
        }
        self.end();
    }

    /// When the app started.
    pub fn started_at(&self) -> Instant {
        self.start
    }

    /// Monotonic nanoseconds since the app started.
    pub fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Counts one `mark` of string `s` (and records an instant when traced).
    pub fn mark(&self, s: u32) {
        if let Some(c) = self.marks.get(s as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        if self.launch.is_frame(s) {
            self.note_frame();
        }
        if self.trace.is_enabled() {
            if let Some(track) = self.trace.current_track() {
                let name = names::mark_name(&self.loaded.vp.program.strings[s as usize]);
                self.trace.tracer().instant(track, name);
            }
        }
    }

    /// How many times `mark NAME` ran (0 if the program never marks that name).
    pub fn mark_count(&self, name: &str) -> u64 {
        self.loaded
            .vp
            .program
            .strings
            .iter()
            .zip(&self.marks)
            .filter(|(s, _)| s.as_str() == name)
            .map(|(_, c)| c.load(Ordering::Relaxed))
            .sum()
    }

    /// `mark` counts by name.
    pub fn mark_counts(&self) -> std::collections::BTreeMap<String, u64> {
        let mut out = std::collections::BTreeMap::new();
        for (i, c) in self.marks.iter().enumerate() {
            let n = c.load(Ordering::Relaxed);
            if n > 0 {
                *out.entry(self.loaded.vp.program.strings[i].clone())
                    .or_insert(0) += n;
            }
        }
        out
    }

    /// The translated program.
    pub fn loaded(&self) -> &Arc<Loaded> {
        &self.loaded
    }

    /// The app's heap, for allocating and reading from outside the executor (benchmarks,
    /// the memory budget). Swapping state is changed only through the app's operations.
    pub fn heap(&self) -> &Heap {
        &self.heap
    }

    /// The app's trace tracks, for recording events into its part of the trace.
    pub fn trace(&self) -> &Arc<AppTrace> {
        &self.trace
    }

    /// Collector totals so far.
    pub fn gc_totals(&self) -> GcTotals {
        self.gc.lock().clone()
    }

    /// A full collection from a thread that is not one of the app's running mutators
    /// (a lifecycle script, a command from outside).
    pub fn collect(&self) {
        self.collect_stopped()
    }

    /// A full collection. The calling mutator must already be in the safe state with
    /// its roots published.
    pub(crate) fn collect_stopped(&self) {
        let start_ns = Tracer::now_ns();
        // The other threads are stopped while it runs: the faults of this thread are
        // the collection's.
        let majflt0 = marvin_runtime::procfs::thread_major_faults().unwrap_or(0);
        let (stopped_ns, r) = self.cpu.measure(Activity::Gc, || {
            let w = self.safepoints.stop_the_world();
            let stopped_ns = Tracer::now_ns();
            let mut roots = w.roots.clone();
            self.monitors.roots(&mut roots);
            roots.extend(self.pinned.lock().keys().copied());
            // SAFETY: the world is stopped (`w`), and the roots are every published frame
            // root plus every monitor in use.
            let r = unsafe { marvin_gc::collect(&self.heap, &roots) };
            drop(w);
            (stopped_ns, r)
        });
        self.trace
            .gc_cycle(start_ns, stopped_ns, r.mark_time, r.sweep_time);
        self.trace_memory(&r.working_set);
        let majflt = marvin_runtime::procfs::thread_major_faults()
            .unwrap_or(majflt0)
            .saturating_sub(majflt0);
        let mut g = self.gc.lock();
        g.collections += 1;
        g.major_faults += majflt;
        g.time += r.mark_time + r.sweep_time;
        g.freed_objects += r.freed_objects;
        g.freed_bytes += r.freed_bytes;
        g.last_working_set = r.working_set;
    }

    /// Sets the resident and working-set counters of the trace.
    fn trace_memory(&self, ws: &marvin_gc::WorkingSet) {
        let resident = self.heap.counters.in_use.load(Ordering::Relaxed);
        self.trace.count(|c| c.resident_bytes, resident as f64);
        let ws = ws.read_bytes.max(ws.written_bytes);
        self.trace.count(|c| c.working_set_bytes, ws as f64);
    }

    /// Process CPU time (all threads) since the app started.
    pub fn process_cpu_ns(&self) -> u64 {
        process_cpu_time_ns().saturating_sub(self.cpu_start_ns)
    }

    /// Ends the app from outside (a kill, a stop command, the end of a run): every thread
    /// unwinds and the main looper stops. The app's [`outcome`](App::outcome) is
    /// unchanged.
    pub fn end(&self) {
        self.end_with(Trap::Terminated)
    }

    /// Ends the app with a runtime error at its entry method (a controller that can no
    /// longer drive it: a broken command stream, a failed transition).
    pub fn abort(&self, message: impl Into<String>) {
        self.end_with(Trap::Error {
            message: message.into(),
            method: self.loaded.vp.entry,
            pc: 0,
        })
    }

    /// Whether the app is ending (it halted, failed, quit, or was ended).
    pub fn is_ending(&self) -> bool {
        self.safepoints.is_terminating()
    }

    /// The first halt or runtime error of the app, if any.
    pub fn outcome(&self) -> Option<Trap> {
        self.outcome.lock().clone()
    }

    /// Latency of every reclaim request this app served so far, in ns.
    pub fn reclaim_latencies(&self) -> Vec<u64> {
        self.reclaim_latencies.lock().clone()
    }

    /// Ends the app with `trap` (the first one wins): every thread unwinds and the
    /// main looper stops.
    pub(crate) fn end_with(&self, trap: Trap) {
        if trap != Trap::Terminated {
            let mut o = self.outcome.lock();
            if o.is_none() {
                *o = Some(trap);
            }
        }
        self.safepoints.terminate();
        self.wake_sleepers();
        if !self.queue.is_quitting() {
            self.queue.quit();
        }
        self.queue.wake();
    }

    /// Sleeps until `until` or until the app ends.
    pub(crate) fn sleep_until(&self, until: Instant) {
        let mut g = self.sleepers.0.lock();
        while !self.safepoints.is_terminating() {
            if self.sleepers.1.wait_until(&mut g, until).timed_out() {
                break;
            }
        }
    }

    /// The heap task's sleep: until `until`, until the app ends, or until a background
    /// transition asks for a save ([`App::save_soon`]) or the System for a working-set
    /// round ([`App::request_age`]).
    pub(crate) fn heap_task_sleep_until(&self, until: Instant) {
        let mut g = self.sleepers.0.lock();
        while !self.safepoints.is_terminating()
            && !self.save_soon.load(Ordering::Acquire)
            && !self.age_soon.load(Ordering::Acquire)
        {
            if self.sleepers.1.wait_until(&mut g, until).timed_out() {
                break;
            }
        }
    }

    /// The heap task's sleep while a launch keeps it quiet: until `until`, until the
    /// app ends, or until the launch's frame ends the quiet.
    pub(crate) fn heap_task_sleep_quiet(&self, until: Instant) {
        let mut g = self.sleepers.0.lock();
        while !self.safepoints.is_terminating() && self.in_launch_quiet().is_some() {
            if self.sleepers.1.wait_until(&mut g, until).timed_out() {
                break;
            }
        }
    }

    /// Asks the heap task to save at once (after a background transition) and wakes it.
    pub(crate) fn request_save(&self) {
        self.ask_heap_task(&self.save_soon);
    }

    /// Asks the heap task for a working-set round now, then a save of what it found
    /// cold, and wakes it: memory is short and nothing of this app was cold enough to
    /// take (aging on demand, as a kernel's reclaim ages its LRU lists faster under
    /// pressure). A launch under way keeps it waiting until its frame; a request made
    /// while one is pending is the same request.
    pub fn request_age(&self) {
        self.ask_heap_task(&self.age_soon);
    }

    /// Raises one of the heap task's requests and wakes it, under the sleepers' lock so
    /// that a heap task about to sleep cannot miss it.
    fn ask_heap_task(&self, request: &std::sync::atomic::AtomicBool) {
        let _g = self.sleepers.0.lock();
        request.store(true, Ordering::Release);
        self.sleepers.1.notify_all();
    }

    /// Wakes every `sleep` so it notices the app is ending.
    pub(crate) fn wake_sleepers(&self) {
        let _g = self.sleepers.0.lock();
        self.sleepers.1.notify_all();
    }
}
