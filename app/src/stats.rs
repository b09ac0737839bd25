//! What `--stats` and `--stats-json` report about a run.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use marvin_runtime::Activity;

use serde::Serialize;

use crate::app::App;

/// Statistics of one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunStats {
    pub allocations: u64,
    pub bytes_allocated: u64,
    pub collections: u64,
    pub gc_time_ns: u64,
    /// CPU time of the threads while they collected.
    pub gc_cpu_ns: u64,
    /// CPU time of the whole process during the run.
    pub process_cpu_ns: u64,
    /// The runtime's own work (collections, swap saver, reclaimer, restores) as a share of
    /// the process's CPU time, 0 to 1.
    pub runtime_cpu_share: f64,
    pub peak_heap_bytes: u64,
    pub live_bytes: u64,
    pub objects_freed: u64,
    pub working_set_read_bytes: u64,
    pub working_set_written_bytes: u64,
    /// The heap's bytes by kind: small objects (under 2 KiB), large objects (whole pages)
    /// and native buffers (`nalloc`), each allocated and freed so far.
    pub kinds: KindBytes,
    /// `mark` counts by name.
    pub marks: BTreeMap<String, u64>,
    /// Swap activity, when swapping was on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap: Option<SwapStats>,
}

/// An app's bytes by kind, allocated and freed so far (live = allocated - freed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KindBytes {
    pub small_allocated: u64,
    pub small_freed: u64,
    pub large_allocated: u64,
    pub large_freed: u64,
    pub native_allocated: u64,
    pub native_freed: u64,
    /// Native buffers alive now.
    pub native_buffers: u64,
}

impl KindBytes {
    /// `app`'s figures now.
    pub fn of(app: &App) -> KindBytes {
        let c = &app.heap.counters;
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let (all, freed) = (l(&c.bytes_allocated), l(&c.bytes_freed));
        let (large, large_freed) = (l(&c.large_allocated), l(&c.large_freed));
        let n = app.native.stats();
        KindBytes {
            small_allocated: all.saturating_sub(large),
            small_freed: freed.saturating_sub(large_freed),
            large_allocated: large,
            large_freed,
            native_allocated: n.allocated_bytes,
            native_freed: n.freed_bytes,
            native_buffers: n.buffers,
        }
    }

    /// The named counters an app process reports to the System (`*_bytes`).
    pub fn counters(&self) -> [(&'static str, u64); 6] {
        [
            ("small_allocated_bytes", self.small_allocated),
            ("small_freed_bytes", self.small_freed),
            ("large_allocated_bytes", self.large_allocated),
            ("large_freed_bytes", self.large_freed),
            ("native_allocated_bytes", self.native_allocated),
            ("native_freed_bytes", self.native_freed),
        ]
    }
}

/// What the swap side of an app did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SwapStats {
    pub stubbed_objects: u64,
    pub stubbed_bytes: u64,
    pub saved_objects: u64,
    pub saved_bytes: u64,
    /// Saves abandoned because a write raced the copy.
    pub save_races: u64,
    pub save_errors: u64,
    pub reclaimed_objects: u64,
    pub reclaimed_bytes: u64,
    pub restored_eager_objects: u64,
    pub restored_eager_bytes: u64,
    /// Objects read back on first access (object faults).
    pub object_faults: u64,
    pub fault_bytes: u64,
    /// Objects read back along with a faulting neighbour (one read for both).
    pub read_ahead_objects: u64,
    pub read_ahead_bytes: u64,
    /// Faults during a collection: must stay 0 (the collector bookmarks).
    pub gc_faults: u64,
    pub swap_bytes_written: u64,
    pub swap_bytes_read: u64,
    pub swap_live_bytes: u64,
    pub swap_dead_bytes: u64,
    pub compactions: u64,
    pub last_error: Option<String>,
    /// Cold chunks of small objects, once any was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<crate::chunks::ChunkStats>,
    /// Each transition with the process's resident memory before and after.
    pub transitions: Vec<crate::memory::Transition>,
}

impl App {
    /// The app's statistics so far.
    pub fn stats(&self) -> RunStats {
        RunStats::of(self)
    }
}

impl RunStats {
    /// The statistics of `app` so far.
    pub fn of(app: &App) -> RunStats {
        let c = &app.heap.counters;
        let gc = app.gc.lock().clone();
        let process_cpu_ns = app.process_cpu_ns();
        RunStats {
            allocations: c.allocations.load(Ordering::Relaxed),
            bytes_allocated: c.bytes_allocated.load(Ordering::Relaxed),
            collections: gc.collections,
            gc_time_ns: gc.time.as_nanos() as u64,
            gc_cpu_ns: app.cpu.get(Activity::Gc),
            process_cpu_ns,
            runtime_cpu_share: app.cpu.share_of(process_cpu_ns),
            peak_heap_bytes: c.peak_in_use.load(Ordering::Relaxed) as u64,
            live_bytes: c.in_use.load(Ordering::Relaxed) as u64,
            objects_freed: c.objects_freed.load(Ordering::Relaxed),
            working_set_read_bytes: gc.last_working_set.read_bytes,
            working_set_written_bytes: gc.last_working_set.written_bytes,
            kinds: KindBytes::of(app),
            marks: app.mark_counts(),
            swap: app.swap().map(|sw| {
                let c = &sw.counters;
                let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
                let space = app.heap.stub_space();
                let sc = |f: fn(&marvin_runtime::StubCounters) -> &std::sync::atomic::AtomicU64| {
                    space.map_or(0, |s| f(&s.counters).load(Ordering::Relaxed))
                };
                let file = sw.file.lock();
                SwapStats {
                    stubbed_objects: sc(|c| &c.stubbed_objects),
                    stubbed_bytes: sc(|c| &c.stubbed_bytes),
                    saved_objects: l(&c.saved_objects),
                    saved_bytes: l(&c.saved_bytes),
                    save_races: l(&c.save_races),
                    save_errors: l(&c.save_errors),
                    reclaimed_objects: l(&c.reclaimed_objects),
                    reclaimed_bytes: l(&c.reclaimed_bytes),
                    restored_eager_objects: l(&c.restored_eager_objects),
                    restored_eager_bytes: l(&c.restored_eager_bytes),
                    object_faults: sc(|c| &c.faults),
                    fault_bytes: sc(|c| &c.fault_bytes),
                    read_ahead_objects: l(&c.read_ahead_objects),
                    read_ahead_bytes: l(&c.read_ahead_bytes),
                    gc_faults: sc(|c| &c.gc_faults),
                    swap_bytes_written: l(&c.bytes_written),
                    swap_bytes_read: l(&c.bytes_read),
                    swap_live_bytes: file.live_bytes(),
                    swap_dead_bytes: file.dead_bytes(),
                    compactions: l(&c.compactions),
                    last_error: sw.last_error.lock().clone(),
                    chunks: crate::chunks::ChunkStats::of(&app.heap),
                    transitions: app.transitions.lock().clone(),
                }
            }),
        }
    }

    /// The human-readable form printed by `--stats`.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let mut line = |k: &str, v: String| s.push_str(&format!("{k:<22} {v}\n"));
        line("allocations", self.allocations.to_string());
        line("bytes allocated", self.bytes_allocated.to_string());
        line("collections", self.collections.to_string());
        line("gc time", format!("{:.3} ms", self.gc_time_ns as f64 / 1e6));
        line("gc cpu", format!("{:.3} ms", self.gc_cpu_ns as f64 / 1e6));
        line(
            "process cpu",
            format!("{:.3} ms", self.process_cpu_ns as f64 / 1e6),
        );
        line(
            "runtime cpu share",
            format!("{:.2}%", self.runtime_cpu_share * 100.0),
        );
        line("peak heap", format!("{} bytes", self.peak_heap_bytes));
        line("live at end", format!("{} bytes", self.live_bytes));
        line("objects freed", self.objects_freed.to_string());
        line(
            "working set",
            format!(
                "{} bytes read, {} bytes written (last four rounds)",
                self.working_set_read_bytes, self.working_set_written_bytes
            ),
        );
        let k = &self.kinds;
        let kind = |a: u64, f: u64| format!("{a} bytes allocated, {f} freed");
        line("small objects", kind(k.small_allocated, k.small_freed));
        line("large objects", kind(k.large_allocated, k.large_freed));
        line(
            "native buffers",
            format!(
                "{}; {} alive",
                kind(k.native_allocated, k.native_freed),
                k.native_buffers
            ),
        );
        for (name, n) in &self.marks {
            line(&format!("mark {name}"), n.to_string());
        }
        if let Some(w) = &self.swap {
            let ob = |o: u64, b: u64| format!("{o} objects, {b} bytes");
            line("stubbed", ob(w.stubbed_objects, w.stubbed_bytes));
            line("saved", ob(w.saved_objects, w.saved_bytes));
            line("save races", w.save_races.to_string());
            line("reclaimed", ob(w.reclaimed_objects, w.reclaimed_bytes));
            line(
                "restored (eager)",
                ob(w.restored_eager_objects, w.restored_eager_bytes),
            );
            line("restored (on fault)", ob(w.object_faults, w.fault_bytes));
            line(
                "restored (read ahead)",
                ob(w.read_ahead_objects, w.read_ahead_bytes),
            );
            line("faults during GC", w.gc_faults.to_string());
            line(
                "swap file",
                format!(
                    "{} live bytes, {} dead bytes",
                    w.swap_live_bytes, w.swap_dead_bytes
                ),
            );
            line(
                "swap I/O",
                format!(
                    "{} bytes written, {} bytes read",
                    w.swap_bytes_written, w.swap_bytes_read
                ),
            );
            line("compactions", w.compactions.to_string());
            for (k, v) in w.chunks.iter().flat_map(|c| c.lines()) {
                line(k, v);
            }
            if let Some(e) = &w.last_error {
                line("last swap error", e.clone());
            }
            for t in &w.transitions {
                line(
                    &format!("{}@{}ms", t.action, t.at_ms),
                    format!(
                        "{} objects, {} bytes; RSS {} -> {} bytes ({:.3} ms)",
                        t.objects,
                        t.bytes,
                        t.rss_before,
                        t.rss_after,
                        t.duration_ns as f64 / 1e6
                    ),
                );
            }
        }
        s
    }
}
