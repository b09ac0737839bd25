//! One app's part of a Perfetto trace: its process track, a track per thread (named after
//! the thread, remembered by OS thread id for contention slices), its counters, and the
//! events the executor records (message dispatches, collections, monitor contention,
//! `mark` instants, fast-track boosts).
//!
//! With tracing off the app still has an [`AppTrace`] whose tracer is disabled: no thread
//! tracks are declared and every event site costs one relaxed load.
//!
//! Other parts of the runtime (the swap saver, reclaimer and restore paths) record their
//! events through [`AppTrace::tracer`] on the track [`AppTrace::current_track`] gives the
//! calling thread, and set the swap counters ([`AppTrace::counters`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use marvin_runtime::fasttrack;
use marvin_runtime::trace::names::{self, CodeLocation};
use marvin_runtime::trace::{Tracer, TrackId};
use parking_lot::Mutex;

/// Where an app records its trace: a shared tracer (several apps may share one) and the
/// process id and name its process track gets.
#[derive(Clone, Debug)]
pub struct TraceTarget {
    pub tracer: Tracer,
    pub pid: i32,
    pub name: String,
}

/// The counter tracks of one app.
#[derive(Clone, Copy, Debug)]
pub struct Counters {
    /// Messages pending on the main looper, sampled at each dispatch.
    pub pending_messages: TrackId,
    /// Bytes of objects resident in memory, after each collection.
    pub resident_bytes: TrackId,
    /// Bytes of objects read or written in the last four working-set rounds.
    pub working_set_bytes: TrackId,
    /// Bytes of live checkpoints in the app's swap file (set by the swap layer).
    pub swap_live_bytes: TrackId,
}

struct Enabled {
    process: TrackId,
    counters: Counters,
    /// Thread names by OS thread id.
    names: Mutex<HashMap<i32, String>>,
}

/// One app's trace tracks and thread names.
pub struct AppTrace {
    tracer: Tracer,
    /// Distinguishes apps in each thread's track cache.
    id: u64,
    enabled: Option<Enabled>,
}

thread_local! {
    /// The calling thread's track in each app trace it has recorded into: (app trace id,
    /// track).
    static TRACKS: RefCell<Vec<(u64, TrackId)>> = const { RefCell::new(Vec::new()) };
}

impl AppTrace {
    /// The trace of an app recording into `target`, or a disabled one.
    pub fn new(target: Option<TraceTarget>) -> AppTrace {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let Some(t) = target else {
            return AppTrace {
                tracer: Tracer::disabled(),
                id,
                enabled: None,
            };
        };
        let process = t.tracer.process_track(t.pid, &t.name);
        let counter = |name| t.tracer.counter_track(process, name);
        let counters = Counters {
            pending_messages: counter(names::PENDING_MESSAGES),
            resident_bytes: counter(names::RESIDENT_BYTES),
            working_set_bytes: counter(names::WORKING_SET_BYTES),
            swap_live_bytes: counter(names::SWAP_LIVE_BYTES),
        };
        AppTrace {
            tracer: t.tracer,
            id,
            enabled: Some(Enabled {
                process,
                counters,
                names: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The tracer events go to (disabled when the app is not traced).
    pub fn tracer(&self) -> &Tracer {
        &self.tracer
    }

    /// Whether this app records a trace.
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        self.enabled.is_some() && self.tracer.is_enabled()
    }

    /// The app's process track, when traced.
    pub fn process(&self) -> Option<TrackId> {
        self.enabled.as_ref().map(|e| e.process)
    }

    /// The app's counter tracks, when traced.
    pub fn counters(&self) -> Option<&Counters> {
        self.enabled.as_ref().map(|e| &e.counters)
    }

    /// Declares a track for the calling thread named `name` and makes it the thread's track
    /// in this app. Returns `None` when the app is not traced.
    pub fn register_thread(&self, name: &str) -> Option<TrackId> {
        let e = self.enabled.as_ref()?;
        let tid = marvin_runtime::cpuclock::current_tid();
        let track = self.tracer.thread_track(e.process, tid, name);
        e.names.lock().insert(tid, name.to_string());
        TRACKS.with(|t| {
            let mut t = t.borrow_mut();
            t.retain(|(id, _)| *id != self.id);
            t.push((self.id, track));
        });
        Some(track)
    }

    /// The calling thread's track in this app: the one it registered, or a new one named
    /// after the OS thread. `None` when the app is not traced.
    pub fn current_track(&self) -> Option<TrackId> {
        self.enabled.as_ref()?;
        let found = TRACKS.with(|t| {
            t.borrow()
                .iter()
                .find(|(id, _)| *id == self.id)
                .map(|(_, track)| *track)
        });
        found.or_else(|| {
            let name = std::thread::current()
                .name()
                .unwrap_or("runtime")
                .to_string();
            self.register_thread(&name)
        })
    }

    /// The name of thread `tid` of this app, if it registered one.
    pub fn thread_name(&self, tid: i32) -> Option<String> {
        self.enabled.as_ref()?.names.lock().get(&tid).cloned()
    }

    /// Sets `counter` (one of [`counters`](AppTrace::counters)) to `value` now.
    #[inline]
    pub fn count(&self, counter: impl FnOnce(&Counters) -> TrackId, value: f64) {
        if let Some(e) = &self.enabled {
            self.tracer.counter(counter(&e.counters), value);
        }
    }

    /// Records a monitor contention slice on the calling thread's track, from `start_ns` to
    /// `end_ns`, in the Android runtime's format.
    pub fn monitor_contention(
        &self,
        owner_tid: i32,
        waiters: u32,
        blocking_from: CodeLocation<'_>,
        start_ns: u64,
        end_ns: u64,
    ) {
        let Some(track) = self.current_track() else {
            return;
        };
        let owner = self
            .thread_name(owner_tid)
            .unwrap_or_else(|| "unknown".into());
        let name = names::monitor_contention_name(
            &owner,
            owner_tid,
            None,
            waiters as usize,
            Some(blocking_from),
        );
        self.tracer.complete(track, name, start_ns, end_ns);
    }

    /// Records a collection on the calling thread's track: the whole of it from `start_ns`
    /// (before the world was stopped) to now, suspending the threads until `stopped_ns`,
    /// then the mark and sweep phases as the collector timed them.
    pub fn gc_cycle(
        &self,
        start_ns: u64,
        stopped_ns: u64,
        mark: std::time::Duration,
        sweep: std::time::Duration,
    ) {
        if !self.is_enabled() {
            return;
        }
        let Some(track) = self.current_track() else {
            return;
        };
        let end = Tracer::now_ns();
        let mark_end = (stopped_ns + mark.as_nanos() as u64).min(end);
        let sweep_end = (mark_end + sweep.as_nanos() as u64).min(end);
        self.tracer.complete(track, names::GC, start_ns, end);
        self.tracer
            .complete(track, names::SUSPEND_ALL, start_ns, stopped_ns);
        self.tracer
            .complete(track, names::GC_MARK, stopped_ns, mark_end);
        self.tracer
            .complete(track, names::GC_SWEEP, mark_end, sweep_end);
    }

    /// Records a fast-track event as an instant on the calling thread's track (boosts on the
    /// waiter, restores on the holder).
    pub fn fast_track_event(&self, event: &fasttrack::Event) {
        if !self.is_enabled() {
            return;
        }
        let Some(track) = self.current_track() else {
            return;
        };
        let name = match event {
            fasttrack::Event::Boost {
                holder_tid,
                from_nice,
                to_nice,
                ..
            } => {
                let holder = self
                    .thread_name(*holder_tid)
                    .unwrap_or_else(|| "unknown".into());
                names::fast_track_boost_name(&holder, *holder_tid, *from_nice, *to_nice)
            }
            fasttrack::Event::Restore { nice, .. } => names::fast_track_restore_name(*nice),
            fasttrack::Event::Denied { holder_tid, .. } => {
                names::fast_track_denied_name(*holder_tid)
            }
        };
        self.tracer.instant(track, name);
    }
}
