//! What `--stats` and `--stats-json` report about a run.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use marvin_runtime::cpuaccount::Activity;

use serde::Serialize;

use super::app::App;

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
    /// `mark` counts by name.
    pub marks: BTreeMap<String, u64>,
}

impl RunStats {
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
            marks: app.mark_counts(),
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
        for (name, n) in &self.marks {
            line(&format!("mark {name}"), n.to_string());
        }
        s
    }
}
