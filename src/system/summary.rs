//! The per-policy summary of a pressure run: what `summary.json` holds and the
//! side-by-side table prints.

use serde::Serialize;

use super::launch::{LaunchClass, LaunchRecord, LaunchStats};
use super::series::SeriesPoint;

/// An app that ended with an error of its own (not a kill, not the end of the run).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Crash {
    /// The app's number in the run.
    pub app: usize,
    /// When its end was seen, in seconds since the run began.
    pub t_s: f64,
    /// The error it ended with.
    pub error: String,
}

/// Process mode: one app process as the kernel saw it last (one record per process;
/// an app restarted cold has a record per life).
#[derive(Clone, Debug, Default, Serialize)]
pub struct AppRecord {
    pub app: usize,
    pub pid: u32,
    /// `killed`, `crashed`, `ended` (by itself) or `alive at the end`.
    pub end: String,
    /// When it ended (or the run stopped it), in seconds since the run began.
    pub t_s: f64,
    pub rounds: u64,
    pub verified_arrays: u64,
    /// Resident memory by kind and bytes in swap, at the last sample before it ended.
    pub rss_anon_bytes: u64,
    pub rss_file_bytes: u64,
    pub rss_shmem_bytes: u64,
    pub swap_bytes: u64,
    /// Major faults of the process, and those its collections took.
    pub major_faults: u64,
    pub gc_major_faults: u64,
    /// Objects it faulted back in from its swap file (marvin).
    pub object_faults: u64,
}

/// One policy's results.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub policy: String,
    pub peak_alive: u32,
    pub peak_active: u32,
    pub final_alive: u32,
    pub final_active: u32,
    pub kills: u64,
    pub restarts: u64,
    /// Arrays whose pattern was wrong when their app checked them (must be 0).
    pub failed_verifications: u64,
    /// Arrays whose pattern was checked and right.
    pub verified_arrays: u64,
    /// Apps that ended with an error of their own (must be 0); `crashes` names each.
    pub crashed_apps: u64,
    pub crashes: Vec<Crash>,
    pub swap_bytes_written: u64,
    pub swap_bytes_read: u64,
    /// Reclaim latency, the same for every policy: one sample per allocation (or
    /// swap-in) that found no room under the budget, the time from its request until it
    /// could go on, whatever the policy did meanwhile (a kill, page-outs, a reclaim).
    pub reclaim_requests: u64,
    pub reclaim_p50_ns: u64,
    pub reclaim_p99_ns: u64,
    pub reclaim_max_ns: u64,
    /// Bytes reclaimed (marvin) or paged out (page-swap) to make room.
    pub reclaimed_bytes: u64,
    /// Calls to the reclaimer or the page-out, one per victim app asked.
    pub reclaim_calls: u64,
    pub gc_faults: u64,
    pub object_faults: u64,
    pub budget_bytes: u64,
    pub peak_accounted_bytes: u64,
    pub peak_rss_bytes: u64,
    /// The peak of each kind of resident memory (`RssAnon`, `RssFile`, `RssShmem`), each
    /// over the run (they need not peak at the same sample).
    pub peak_rss_anon_bytes: u64,
    pub peak_rss_file_bytes: u64,
    pub peak_rss_shmem_bytes: u64,
    /// Peak process RSS over peak accounted memory: what the runtime, the process and
    /// the kernel's rounding add to the apps' own bytes (1.0 would be none).
    pub peak_rss_per_accounted: f64,
    /// In-process model: the most the runtime held for the alive apps at a sample
    /// (handle tables, stubs and their registries, reclaim tables, swap file indexes),
    /// and the most it was charged at in the accounted memory (it covers the holdings
    /// with a headroom, raised before they grow).
    pub peak_runtime_bytes: u64,
    pub peak_runtime_charged_bytes: u64,
    /// The most accounted memory any allocation committed to (resident plus what
    /// allocations under way held reserved): the exact peak, where the sampled
    /// `peak_accounted_bytes` may miss one between samples.
    pub peak_committed_bytes: u64,
    /// Allocations that could not be fitted under the budget (nothing left to take),
    /// and by how much the worst passed it (`peak_committed_bytes` less the budget).
    pub over_budget_events: u64,
    pub max_over_budget_bytes: u64,
    /// `processes` (the kernel enforced the limit) or `in-process` (the model).
    pub mode: String,
    /// Process mode: the cgroup's hard limit (the budget), and the most it ever
    /// charged (`memory.max_usage_in_bytes` on v1, `memory.peak` on v2).
    pub limit_bytes: u64,
    pub peak_cgroup_bytes: u64,
    /// Process mode: apps the kernel's OOM killer killed (the goal is zero) and apps
    /// the low-memory killer killed.
    pub kernel_oom_kills: u64,
    pub lmk_kills: u64,
    /// Process mode: the low-memory killer's kills by why it killed (`headroom`: usage
    /// within the headroom of the limit; `complete-stall`; `swap-low`; for marvin,
    /// `nothing-reclaimable`: the reclaimer had nothing left to take, and
    /// `reclaim-behind`: usage reached the last margin before the limit while it still
    /// took). Empty without kills.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub lmk_kill_reasons: std::collections::BTreeMap<String, u64>,
    /// Process mode: major faults of the apps' processes, and those that happened
    /// during their collections (the GC pathology of page swap).
    pub major_faults: u64,
    pub gc_major_faults: u64,
    /// Process mode: bytes the kernel swapped in and out during the run.
    pub swap_in_bytes: u64,
    pub swap_out_bytes: u64,
    /// Process mode (marvin): bytes the System's reclaimer took from outside the apps.
    pub external_reclaimed_bytes: u64,
    /// Process mode: every app process, as the kernel saw it last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub apps: Vec<AppRecord>,
    /// The launch phase: launches finished, and their latency (from the moment the app
    /// was told it is in the foreground to its first frame), over all of them and per
    /// class (hot, warm, cold).
    pub launches: u64,
    pub launch_p50_ns: u64,
    pub launch_p90_ns: u64,
    pub launch_p99_ns: u64,
    pub launch_hot: LaunchStats,
    pub launch_warm: LaunchStats,
    pub launch_cold: LaunchStats,
    /// Launches given up: no frame within the timeout, or the app died first.
    pub launches_unfinished: u64,
    /// Every finished launch, in order (the app, when, its class, its latency and what
    /// it brought back).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub launch_records: Vec<LaunchRecord>,
}

impl Summary {
    pub fn new(policy: &str) -> Summary {
        Summary {
            policy: policy.to_string(),
            mode: "in-process".into(),
            ..Summary::default()
        }
    }

    /// Folds one sample into the peaks.
    pub fn observe(&mut self, p: &SeriesPoint) {
        self.peak_alive = self.peak_alive.max(p.alive);
        self.peak_active = self.peak_active.max(p.active);
        self.peak_accounted_bytes = self.peak_accounted_bytes.max(p.accounted_bytes);
        self.peak_rss_bytes = self.peak_rss_bytes.max(p.rss_bytes);
        self.peak_rss_anon_bytes = self.peak_rss_anon_bytes.max(p.rss_anon_bytes);
        self.peak_rss_file_bytes = self.peak_rss_file_bytes.max(p.rss_file_bytes);
        self.peak_rss_shmem_bytes = self.peak_rss_shmem_bytes.max(p.rss_shmem_bytes);
        if self.peak_accounted_bytes > 0 {
            self.peak_rss_per_accounted =
                self.peak_rss_bytes as f64 / self.peak_accounted_bytes as f64;
        }
    }

    /// Sets the launch figures from the launch phase's records.
    pub fn set_launches(&mut self, records: Vec<LaunchRecord>, unfinished: u64) {
        let all = LaunchStats::of_class(&records, None);
        self.launches = all.count;
        self.launch_p50_ns = all.p50_ns;
        self.launch_p90_ns = all.p90_ns;
        self.launch_p99_ns = all.p99_ns;
        self.launch_hot = LaunchStats::of_class(&records, Some(LaunchClass::Hot));
        self.launch_warm = LaunchStats::of_class(&records, Some(LaunchClass::Warm));
        self.launch_cold = LaunchStats::of_class(&records, Some(LaunchClass::Cold));
        self.launches_unfinished = unfinished;
        self.launch_records = records;
    }

    /// Sets the reclaim latency percentiles from the samples (ns).
    pub fn set_latencies(&mut self, lat: &mut [u64]) {
        lat.sort_unstable();
        self.reclaim_requests = lat.len() as u64;
        let pct = |p: f64| -> u64 {
            if lat.is_empty() {
                return 0;
            }
            let rank = ((p / 100.0) * lat.len() as f64).ceil() as usize;
            lat[rank.clamp(1, lat.len()) - 1]
        };
        self.reclaim_p50_ns = pct(50.0);
        self.reclaim_p99_ns = pct(99.0);
        self.reclaim_max_ns = lat.last().copied().unwrap_or(0);
    }
}

/// Milliseconds with as many decimals as a short cell affords.
fn short_ms(ns: u64) -> String {
    let ms = ns as f64 / 1e6;
    if ms < 10.0 {
        format!("{ms:.2}")
    } else if ms < 100.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.0}")
    }
}

/// The side-by-side table, one column per policy.
pub fn table(summaries: &[Summary]) -> String {
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64);
    let ms = |ns: u64| format!("{:.3} ms", ns as f64 / 1e6);
    type Cell = Box<dyn Fn(&Summary) -> String>;
    let mut rows: Vec<(&str, Cell)> = vec![
        ("apps alive (peak)", Box::new(|s| s.peak_alive.to_string())),
        (
            "apps alive (final)",
            Box::new(|s| s.final_alive.to_string()),
        ),
        (
            "apps active (peak)",
            Box::new(|s| s.peak_active.to_string()),
        ),
        (
            "apps active (final)",
            Box::new(|s| s.final_active.to_string()),
        ),
        ("kills", Box::new(|s| s.kills.to_string())),
        ("restarts", Box::new(|s| s.restarts.to_string())),
        ("crashed apps", Box::new(|s| s.crashed_apps.to_string())),
        (
            "arrays verified",
            Box::new(|s| s.verified_arrays.to_string()),
        ),
        (
            "failed verifications",
            Box::new(|s| s.failed_verifications.to_string()),
        ),
        ("swap written", Box::new(move |s| mib(s.swap_bytes_written))),
        ("swap read", Box::new(move |s| mib(s.swap_bytes_read))),
        (
            "reclaim requests",
            Box::new(|s| s.reclaim_requests.to_string()),
        ),
        (
            "reclaim latency p50",
            Box::new(move |s| ms(s.reclaim_p50_ns)),
        ),
        (
            "reclaim latency p99",
            Box::new(move |s| ms(s.reclaim_p99_ns)),
        ),
        (
            "reclaim latency max",
            Box::new(move |s| ms(s.reclaim_max_ns)),
        ),
        ("reclaimed", Box::new(move |s| mib(s.reclaimed_bytes))),
        ("GC faults", Box::new(|s| s.gc_faults.to_string())),
        ("object faults", Box::new(|s| s.object_faults.to_string())),
        (
            "peak accounted memory",
            Box::new(move |s| mib(s.peak_accounted_bytes)),
        ),
        ("peak process RSS", Box::new(move |s| mib(s.peak_rss_bytes))),
        (
            "  anonymous (peak)",
            Box::new(move |s| mib(s.peak_rss_anon_bytes)),
        ),
        (
            "  file-backed (peak)",
            Box::new(move |s| mib(s.peak_rss_file_bytes)),
        ),
        (
            "  shared memory (peak)",
            Box::new(move |s| mib(s.peak_rss_shmem_bytes)),
        ),
        (
            "peak RSS / peak accounted",
            Box::new(|s| format!("{:.2}x", s.peak_rss_per_accounted)),
        ),
        (
            "over-budget allocations",
            Box::new(|s| s.over_budget_events.to_string()),
        ),
        (
            "over budget by (max)",
            Box::new(move |s| mib(s.max_over_budget_bytes)),
        ),
    ];
    // Launch latencies, compactly: p50/p90/p99 in ms.
    let three = |st: LaunchStats| {
        if st.count == 0 {
            return "-".to_string();
        }
        [st.p50_ns, st.p90_ns, st.p99_ns]
            .iter()
            .map(|&ns| short_ms(ns))
            .collect::<Vec<_>>()
            .join("/")
    };
    let launch: Vec<(&str, Cell)> = vec![
        (
            "launches (hot/warm/cold)",
            Box::new(|s| {
                format!(
                    "{} ({}/{}/{})",
                    s.launches, s.launch_hot.count, s.launch_warm.count, s.launch_cold.count
                )
            }),
        ),
        (
            "launch p50/p90/p99 ms",
            Box::new(move |s| {
                three(LaunchStats {
                    count: s.launches,
                    p50_ns: s.launch_p50_ns,
                    p90_ns: s.launch_p90_ns,
                    p99_ns: s.launch_p99_ns,
                })
            }),
        ),
        ("  hot", Box::new(move |s| three(s.launch_hot))),
        ("  warm", Box::new(move |s| three(s.launch_warm))),
        ("  cold", Box::new(move |s| three(s.launch_cold))),
        (
            "launches unfinished",
            Box::new(|s| s.launches_unfinished.to_string()),
        ),
    ];
    rows.extend(launch);
    if summaries.iter().any(|s| s.mode == "processes") {
        let kernel: Vec<(&str, Cell)> = vec![
            ("cgroup limit", Box::new(move |s| mib(s.limit_bytes))),
            (
                "peak cgroup usage",
                Box::new(move |s| mib(s.peak_cgroup_bytes)),
            ),
            ("lmk kills", Box::new(|s| s.lmk_kills.to_string())),
            (
                "kernel OOM kills",
                Box::new(|s| s.kernel_oom_kills.to_string()),
            ),
            ("major faults", Box::new(|s| s.major_faults.to_string())),
            (
                "major faults in GC",
                Box::new(|s| s.gc_major_faults.to_string()),
            ),
            ("kernel swap out", Box::new(move |s| mib(s.swap_out_bytes))),
            ("kernel swap in", Box::new(move |s| mib(s.swap_in_bytes))),
            (
                "reclaimed from outside",
                Box::new(move |s| mib(s.external_reclaimed_bytes)),
            ),
        ];
        rows.extend(kernel);
    }
    if summaries.iter().any(|s| s.mode == "in-process") {
        let runtime: Vec<(&str, Cell)> = vec![(
            "runtime held / charged",
            Box::new(move |s| {
                format!(
                    "{:.1}/{:.1} MiB",
                    s.peak_runtime_bytes as f64 / (1u64 << 20) as f64,
                    s.peak_runtime_charged_bytes as f64 / (1u64 << 20) as f64
                )
            }),
        )];
        // After the accounted memory, which includes the charge.
        let at = rows
            .iter()
            .position(|(n, _)| *n == "peak accounted memory")
            .map_or(rows.len(), |i| i + 1);
        rows.splice(at..at, runtime);
    }
    // Columns of 16, wider where a policy's name needs it (marvin-on-demand).
    let w = summaries
        .iter()
        .map(|s| s.policy.len() + 2)
        .fold(16, usize::max);
    let mut out = format!("{:<26}", "");
    for s in summaries {
        out.push_str(&format!("{:>w$}", s.policy));
    }
    out.push('\n');
    for (name, f) in rows {
        out.push_str(&format!("{name:<26}"));
        for s in summaries {
            out.push_str(&format!("{:>w$}", f(s)));
        }
        out.push('\n');
    }
    for s in summaries {
        for c in &s.crashes {
            out.push_str(&format!(
                "{} app{} crashed at {:.1} s: {}\n",
                s.policy, c.app, c.t_s, c.error
            ));
        }
    }
    out
}
