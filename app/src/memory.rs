//! An app's swapping and memory transitions: enabling swapping in a mode ([`SwapMode`]:
//! Marvin's object swap or the page-swap baseline), going to the background (stubs),
//! saving, reclaiming, paging out, coming back to the foreground (eager restore),
//! working-set rounds, and the heap task that runs the saver and the working-set timer.
//! Each transition records the process's resident memory before and after.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use marvin_runtime::procfs::resident_bytes;
use marvin_runtime::trace::{names, Tracer};
use marvin_runtime::AllocPressure;
use marvin_swap::pageout::{self, PageOutReport};
use marvin_swap::reclaimer::ReclaimReport;
use marvin_swap::{reclaimer, restore, saver, stubber, AppSwap};
use marvin_swap::{RestoreMode, SwapPolicy};

use crate::app::App;
use crate::command::Command;
use crate::error::AppError;
pub use crate::swapping::{SwapIo, SwapMode, Transition};

impl App {
    /// Carries out `cmd`; returns the memory transition it made, if it made one.
    pub fn apply(&self, cmd: Command) -> Result<Option<Transition>, AppError> {
        Ok(match cmd {
            Command::Background => Some(self.enter_background()?),
            Command::Foreground => Some(self.enter_foreground()?),
            Command::Save => Some(self.save_now(true)?),
            Command::Reclaim(want) => Some(self.reclaim_now(want)?.0),
            Command::Gc => {
                self.collect();
                None
            }
            Command::Stop => {
                self.end();
                None
            }
        })
    }
}

impl App {
    /// Turns swapping on in `mode`: a swap file and reclaim table named `name` in `dir`,
    /// stubs on the heap. Under [`SwapMode::PageSwap`] every object made from now on gets
    /// a stub as it is allocated, and every page run may go, the foreground's too.
    pub fn enable_swap(
        &self,
        dir: &Path,
        name: &str,
        policy: Arc<dyn SwapPolicy>,
        mode: SwapMode,
    ) -> Result<(), AppError> {
        if self.swap.get().is_some() {
            return Err(AppError::SwapAlreadyOn);
        }
        // The published runtime's table held 60,000 entries; 2^17 holds a full-size
        // buckets app (56,320 arrays) with room to spare.
        let capacity = self.heap.config().handle_capacity.min(1 << 17);
        let bookmarking = mode == SwapMode::Objects;
        let swap = AppSwap::attach(&self.heap, dir, name, policy, capacity, bookmarking)?;
        if let Some(space) = self.heap.stub_space() {
            match mode {
                SwapMode::Objects => space.table.set_foreground(true),
                SwapMode::PageSwap => {
                    space.stub_on_alloc.store(true, Ordering::SeqCst);
                    space.table.set_foreground(false);
                }
            }
            if self.trace.is_enabled() {
                let trace = self.trace.clone();
                let _ = space
                    .fault_observer
                    .set(Box::new(move |h, start, end, _bytes| {
                        if let Some(track) = trace.current_track() {
                            trace.tracer().complete(
                                track,
                                format!("{} {h}", names::OBJECT_FAULT),
                                start,
                                end,
                            );
                        }
                    }));
            }
        }
        self.swap
            .set((swap, mode))
            .map_err(|_| AppError::SwapAlreadyOn)
    }

    /// Caps the swap file at `bytes` (a full disk, for testing how the app copes).
    pub fn limit_swap_file(&self, bytes: u64) -> Result<(), AppError> {
        let swap = self.swap().ok_or(AppError::SwapOff)?;
        swap.file.lock().set_limit(Some(bytes));
        Ok(())
    }

    /// How the app swaps, if it does.
    pub fn swap_mode(&self) -> Option<SwapMode> {
        self.swap.get().map(|(_, m)| *m)
    }

    /// Makes every allocation of this app ask `budget` first (the System's shared memory
    /// budget).
    pub fn set_memory_budget(&self, budget: Arc<dyn AllocPressure>) -> Result<(), AppError> {
        self.heap
            .set_pressure(budget)
            .map_err(|_| AppError::BudgetAlreadySet)
    }

    /// Bytes of this app's objects that are in memory (live bytes less what is swapped
    /// out).
    pub fn resident_bytes(&self) -> u64 {
        self.heap.resident_bytes() as u64
    }

    /// Bytes the memory budget charges this app, as a kernel would count them: its
    /// objects in memory and what the runtime holds for it (handle table, stubs and
    /// their registry, reclaim table, swap file index), the latter charged ahead of its
    /// growth ([`marvin_runtime::Heap::charged_bytes`]).
    pub fn charged_bytes(&self) -> u64 {
        self.heap.charged_bytes() as u64
    }

    /// The swap counters (all 0 without swapping).
    pub fn swap_io(&self) -> SwapIo {
        let mut io = SwapIo::default();
        if let Some(sw) = self.swap() {
            io.bytes_written = sw.counters.bytes_written.load(Ordering::Relaxed);
            io.bytes_read = sw.counters.bytes_read.load(Ordering::Relaxed);
            io.restored_objects = sw.counters.restored_eager_objects.load(Ordering::Relaxed);
            io.prefetched_bytes = sw.counters.prefetched_bytes.load(Ordering::Relaxed);
        }
        if let Some(space) = self.heap.stub_space() {
            io.object_faults = space.counters.faults.load(Ordering::Relaxed);
            io.gc_faults = space.counters.gc_faults.load(Ordering::Relaxed);
        }
        io
    }

    /// The app's swap side, when swapping is on.
    pub(crate) fn swap(&self) -> Option<&Arc<AppSwap>> {
        self.swap.get().map(|(s, _)| s)
    }

    /// Runs `f` inside a trace slice named `name` on the calling thread's track, and
    /// samples the memory counters after it.
    fn traced<R>(&self, name: &str, f: impl FnOnce() -> R) -> R {
        if !self.trace.is_enabled() {
            return f();
        }
        let start = Tracer::now_ns();
        let r = f();
        if let Some(track) = self.trace.current_track() {
            self.trace
                .tracer()
                .complete(track, name, start, Tracer::now_ns());
        }
        self.count_memory();
        r
    }

    /// Samples the resident, working-set and swap-file counters into the trace.
    pub(crate) fn count_memory(&self) {
        if !self.trace.is_enabled() {
            return;
        }
        self.trace
            .count(|c| c.resident_bytes, self.heap.resident_bytes() as f64);
        let ws = self.gc.lock().last_working_set;
        self.trace.count(
            |c| c.working_set_bytes,
            ws.read_bytes.max(ws.written_bytes) as f64,
        );
        if let Some(sw) = self.swap() {
            let live = sw.file.lock().live_bytes();
            self.trace.count(|c| c.swap_live_bytes, live as f64);
        }
    }

    fn record(
        &self,
        action: &str,
        t0: Instant,
        rss_before: u64,
        objects: u64,
        bytes: u64,
    ) -> Transition {
        let t = Transition {
            action: action.to_string(),
            at_ms: self.now_ns() / 1_000_000,
            rss_before,
            rss_after: resident_bytes().unwrap_or(0),
            objects,
            bytes,
            duration_ns: t0.elapsed().as_nanos() as u64,
        };
        self.transitions.lock().push(t.clone());
        t
    }

    /// The swap side of an app swapping objects: the transitions below have nothing to do
    /// without swapping or under the page-swap baseline.
    fn object_swap(&self) -> Result<&Arc<AppSwap>, AppError> {
        match self.swap.get() {
            None => Err(AppError::SwapOff),
            Some((_, SwapMode::PageSwap)) => Err(AppError::PageSwap),
            Some((s, SwapMode::Objects)) => Ok(s),
        }
    }

    /// Goes to the background: at a safepoint with every thread stopped, every
    /// candidate object gets a stub; the reclaimer may now take from this app.
    pub fn enter_background(&self) -> Result<Transition, AppError> {
        let swap = self.object_swap()?;
        let (rss, t0) = (resident_bytes().unwrap_or(0), Instant::now());
        let report = self
            .traced(names::CREATE_STUBS, || {
                let _w = self.safepoints.stop_the_world();
                // SAFETY: the world is stopped.
                let r = unsafe { stubber::stub_candidates(&self.heap, &*swap.policy) }?;
                // SAFETY: the world is stopped (still).
                self.pack_cold_chunks(unsafe {
                    marvin_swap::chunk_cold_objects(&self.heap, &swap.policy.chunks())
                });
                Ok(r)
            })
            .map_err(AppError::Stub)?;
        if let Some(space) = self.heap.stub_space() {
            space.table.set_foreground(false);
            // Objects made in the background are candidates too: stub them as they come.
            space.stub_on_alloc.store(true, Ordering::SeqCst);
        }
        // Its cold objects become reclaimable only once saved: the heap task starts
        // saving them at once instead of at its next period. The table
        // says so meanwhile (a hint for the System's killer, which may wait, bounded).
        if let Some(space) = self.heap.stub_space() {
            space.table.set_saving(true);
        }
        self.request_save();
        Ok(self.record("bg", t0, rss, report.objects, report.bytes))
    }

    /// Runs the saver: to completion when `complete`, else within the policy's budget
    /// and on cold objects only. Compacts the swap file when it passes the threshold.
    pub fn save_now(&self, complete: bool) -> Result<Transition, AppError> {
        let swap = self.object_swap()?;
        let (rss, t0) = (resident_bytes().unwrap_or(0), Instant::now());
        let budget = if complete {
            Duration::MAX
        } else {
            swap.policy.saver_budget()
        };
        // To completion (a lifecycle `save`): every stubbed object, cold or not; the
        // reclaimer still takes only the cold ones.
        let r = self.traced(names::SWAP_WRITE_TASK, || {
            self.cpu.measure(marvin_runtime::Activity::Saver, || {
                saver::save(&self.heap, swap, budget, complete)
            })
        });
        if r.left == 0 {
            // A whole pass: every cold object is saved, nothing more is on its way.
            if let Some(space) = self.heap.stub_space() {
                space.table.set_saving(false);
            }
        }
        self.traced(names::SWAP_COMPACT, || {
            saver::compact_if_needed(&self.heap, swap)
        })?;
        if complete {
            return Ok(self.record("save", t0, rss, r.saved_objects, r.saved_bytes));
        }
        Ok(Transition {
            action: "save".into(),
            at_ms: self.now_ns() / 1_000_000,
            rss_before: rss,
            rss_after: rss,
            objects: r.saved_objects,
            bytes: r.saved_bytes,
            duration_ns: t0.elapsed().as_nanos() as u64,
        })
    }

    /// The heap task's saver run right after a background transition (instead of at its
    /// next period), within the policy's budget, so that the System's reclaimer finds
    /// the app's cold objects saved as soon as it can. The reclaim table says the app
    /// is saving ([`marvin_runtime::ReclaimTable::set_saving`]) until a
    /// saver run gets through a whole pass (this one or a later one).
    pub fn save_cold_now(&self) -> Result<Transition, AppError> {
        if let Some(space) = self.heap.stub_space() {
            space.table.set_saving(true);
        }
        self.save_now(false)
    }

    /// Reclaims up to `want` bytes of this app's saved, clean, cold objects.
    pub fn reclaim_now(&self, want: u64) -> Result<(Transition, ReclaimReport), AppError> {
        let (rss, t0) = (resident_bytes().unwrap_or(0), Instant::now());
        let r = self.reclaim(want)?;
        Ok((self.record("reclaim", t0, rss, r.objects, r.bytes), r))
    }

    /// Reclaims up to `want` bytes without recording a transition (the pressure path).
    pub fn reclaim(&self, want: u64) -> Result<ReclaimReport, AppError> {
        let swap = self.object_swap()?;
        let r = self.traced(names::RECLAIM, || {
            self.cpu.measure(marvin_runtime::Activity::Reclaimer, || {
                reclaimer::reclaim_from(&self.heap, want)
            })
        });
        swap.counters.book_reclaim(r.objects, r.bytes);
        self.reclaim_latencies
            .lock()
            .push(r.latency.as_nanos() as u64);
        Ok(r)
    }

    /// Comes back to the foreground: with eager restore, every reclaimed object is read
    /// back (with the app's threads stopped) before its looper runs again. On demand
    /// there is nothing to read back and the app's threads are not stopped: the flags
    /// flip at once (the reclaimer re-checks the foreground flag under each entry's
    /// lock, and an allocation under way may still stub its object, as one made just
    /// before would have), so the launch does not wait for its looper's message or a
    /// collection under way to reach a safepoint. A launch calls
    /// [`App::begin_launch_quiet`] first, so that the heap task leaves it alone until its
    /// frame. Either way, until the frame each fault starts reading the swap file ahead
    /// of itself ([`AppSwap::begin_launch_prefetch`]), within the policy's budget.
    pub fn enter_foreground(&self) -> Result<Transition, AppError> {
        let swap = self.object_swap()?;
        let (rss, t0) = (resident_bytes().unwrap_or(0), Instant::now());
        let eager = swap.policy.restore_mode() == RestoreMode::Eager;
        // The launch's faults (or the eager restore's) read the file ahead of themselves
        // until its frame.
        swap.begin_launch_prefetch();
        let r = self.traced(names::EAGER_RESTORE, || {
            let _w = eager.then(|| self.safepoints.stop_the_world());
            if let Some(space) = self.heap.stub_space() {
                space.table.set_foreground(true);
                space.stub_on_alloc.store(false, Ordering::SeqCst);
            }
            self.cpu.measure(marvin_runtime::Activity::Restore, || {
                match swap.policy.restore_mode() {
                    RestoreMode::Eager => restore::restore_all(&self.heap, swap),
                    RestoreMode::OnDemand => restore::RestoreReport::default(),
                }
            })
        });
        if let Some(e) = r.errors.first() {
            return Err(AppError::Restore(e.clone()));
        }
        Ok(self.record("fg", t0, rss, r.objects, r.bytes))
    }

    /// Writes out and drops up to `want` bytes of this app's resident page runs (the
    /// page-swap baseline's pressure path; nothing without swapping).
    pub fn page_out(&self, want: u64) -> PageOutReport {
        self.swap().map_or_else(PageOutReport::default, |s| {
            pageout::page_out(&self.heap, s, want)
        })
    }

    /// One working-set round without a collection.
    pub fn working_set_round(&self) -> marvin_gc::WorkingSet {
        let ws = self.traced(names::WORKING_SET_WALK, || {
            let _w = self.safepoints.stop_the_world();
            // SAFETY: the world is stopped.
            unsafe { marvin_gc::walk_working_set(&self.heap) }
        });
        let mut g = self.gc.lock();
        g.last_working_set = ws;
        g.working_set_rounds += 1;
        ws
    }

    /// Whether the app is in the foreground (always, without swapping).
    pub fn is_foreground(&self) -> bool {
        self.heap
            .stub_space()
            .is_none_or(|s| s.table.is_foreground())
    }
}

/// Starts the heap task of an app swapping objects: working-set rounds and saver runs on
/// the policy's periods (foreground or background), until the app ends. Without swapping
/// or under page swap there is none.
pub(crate) fn start_heap_task(app: &Arc<App>) -> Option<std::thread::JoinHandle<()>> {
    if app.swap_mode() != Some(SwapMode::Objects) {
        return None;
    }
    let swap = app.swap()?.clone();
    let app = app.clone();
    std::thread::Builder::new()
        .name("heap-task".into())
        .spawn(move || {
            let mut next_ws = Instant::now();
            let mut next_save = Instant::now();
            loop {
                if let Some(left) = app.in_launch_quiet() {
                    // A launch under way: no save, no working-set walk before its frame.
                    app.heap_task_sleep_quiet(Instant::now() + left);
                    if app.is_ending() {
                        break;
                    }
                    continue;
                }
                // A launch's prefetch that has ended leaves nothing in the page cache.
                swap.drop_launch_prefetch();
                let fg = app.is_foreground();
                let now = Instant::now();
                // Taken in the foreground too (where it does nothing), or the sleep below
                // would not sleep.
                let aged = app.age_soon.swap(false, Ordering::AcqRel) && !fg;
                if now >= next_ws || aged {
                    app.working_set_round();
                    next_ws = now + swap.policy.working_set_period(fg);
                }
                let sent_back = app.save_soon.swap(false, Ordering::AcqRel);
                if aged || sent_back {
                    // Just sent to the background, or aged on demand: save its cold
                    // objects now.
                    let _ = app.save_cold_now();
                    next_save = Instant::now() + swap.policy.saver_period(false);
                } else if now >= next_save {
                    let _ = app.save_now(false);
                    next_save = now + swap.policy.saver_period(fg);
                }
                let until = next_ws.min(next_save);
                app.heap_task_sleep_until(until);
                if app.is_ending() {
                    break;
                }
            }
        })
        .ok()
}
