//! The per-policy summary of a pressure run: what `summary.json` holds and the
//! side-by-side table prints.

use serde::{Deserialize, Serialize};

use super::launch::{LaunchClass, LaunchRecord, LaunchStats};
use super::published::Published;
use super::series::SeriesPoint;
use marvin_figures::Spread;

/// An app that ended with an error of its own (not a kill, not the end of the run).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
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
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AppRecord {
    pub app: usize,
    pub pid: u32,
    /// `killed` (by the run's low-memory killer), `oom-killed` (by the kernel's OOM
    /// killer), `signalled` (by a signal from elsewhere), `crashed`, `ended` (by
    /// itself) or `alive at the end`.
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
    /// Its memory by kind at its last report (`crate::reach`).
    pub reach: crate::reach::AppReach,
}

/// One policy's results.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// The pressure policy (`kill`, `page-swap`, `kernel-swap`, `marvin`).
    pub policy: String,
    /// The column this run belongs to: the policy's name, or `marvin:NAME` for a
    /// `--variant` or `--sweep` point of Marvin's swap policy.
    pub label: String,
    /// The repetition (0-based) and the seed it ran with.
    pub rep: u32,
    pub seed: u64,
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
    /// Process mode: the apps' memory by kind at the end, and what the policy can reach
    /// (`crate::reach`).
    pub reach: crate::reach::RunReach,
    /// Process mode: the cgroup's hard limit (the budget), and the most it ever
    /// charged (`memory.max_usage_in_bytes` on v1, `memory.peak` on v2).
    pub limit_bytes: u64,
    pub peak_cgroup_bytes: u64,
    /// Process mode: the settle before the policy started (the disks brought to rest,
    /// `machine/src/settle.rs`): how long it waited, what was pending, what moved meanwhile.
    /// Absent in the model and with `--settle off`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settle: Option<marvin_machine::settle::Settled>,
    /// Process mode, the `zram` policy: its compressed pool and how it was charged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zram: Option<ZramFigures>,
    /// Process mode: apps the kernel's OOM killer killed (the goal is zero) and apps
    /// the low-memory killer killed.
    pub kernel_oom_kills: u64,
    pub lmk_kills: u64,
    /// Process mode: every app process that died, whatever killed it: the low-memory
    /// killer's kills, the apps the kernel's OOM killer killed, those a signal from
    /// elsewhere ended, and crashed apps.
    pub deaths: u64,
    pub oom_killed_apps: u64,
    pub signalled_apps: u64,
    /// Process mode: the longest time between two turns of the System's control loop
    /// (the killer, the sampler, launches; a turn waits a tick of 20 ms), and so how
    /// late it could have acted at worst.
    pub control_gap_max_ns: u64,
    /// Process mode: the low-memory killer's kills by why it killed (`headroom`: usage
    /// within the headroom of the limit; `complete-stall`; `swap-low`; for marvin,
    /// `nothing-reclaimable`: the reclaimer had nothing left to take, and
    /// `reclaim-behind`: usage reached the last margin before the limit while it still
    /// took). Empty without kills.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub lmk_kill_reasons: std::collections::BTreeMap<String, u64>,
    /// Process mode, marvin: ticks on which the killer held a kill back while a
    /// background app's saver was still writing, and holds that ran out of time (see
    /// `system/src/processes/kill_hold.rs`). 0 elsewhere.
    #[serde(default)]
    pub lmk_held_ticks: u64,
    #[serde(default)]
    pub lmk_holds_expired: u64,
    /// Process mode, marvin: requests to background apps to age their working set now,
    /// sent while the reclaimer found too little to take (aging on demand, see
    /// `system/src/processes/run.rs`). 0 elsewhere.
    #[serde(default)]
    pub age_requests: u64,
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
    /// In-process model: what happened to each app, in time (written as `apps.csv`,
    /// not into summary.json).
    #[serde(skip)]
    pub app_events: Vec<super::timeline::AppEvent>,
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

/// The `zram` policy's compressed pool: what it held and cost at the run's end, how it
/// was charged to the budget, and the bound that charging kept.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ZramFigures {
    /// The compression algorithm (`--zram-algorithm`).
    pub algorithm: String,
    /// How the pool was charged ([`marvin_machine::zram_charge::Mechanism::describe`]).
    pub charging: String,
    /// The pool at the end (its peak in `pool_peak_bytes`), stored and compressed
    /// bytes, pages written and read, time compressing.
    pub pool: marvin_machine::zram_charge::PoolStats,
    /// Stored over compressed bytes when the pool held the most (`None`: it never held
    /// a page).
    pub compression_ratio: Option<f64>,
    /// The most the group's usage plus the pool passed the budget, read just before a
    /// tick lowered the limit; at most `largest_growth_bytes` plus `floor_over_bytes`.
    pub max_over_budget_bytes: u64,
    /// The largest growth of the pool between two ticks (the bound).
    pub largest_growth_bytes: u64,
    /// The most the floor limit left usage plus pool over the budget (the killer's).
    pub floor_over_bytes: u64,
    /// Ticks whose lowering of the limit the kernel refused (`EBUSY`).
    pub refusals: u64,
    /// The lowest limit a tick set.
    pub min_limit_bytes: u64,
}

impl Summary {
    pub fn new(policy: &str) -> Summary {
        Summary {
            policy: policy.to_string(),
            label: policy.to_string(),
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

/// How a table cell shows a value.
#[derive(Clone, Copy)]
enum Unit {
    Count,
    MiB,
    Ms,
    Ratio,
}

impl Unit {
    fn show(self, v: f64) -> String {
        match self {
            Unit::Count if v.fract() == 0.0 => format!("{v:.0}"),
            Unit::Count => format!("{v:.1}"),
            Unit::MiB => format!("{:.1} MiB", v / (1u64 << 20) as f64),
            Unit::Ms => format!("{:.3} ms", v / 1e6),
            Unit::Ratio => format!("{v:.2}x"),
        }
    }

    /// The value without its unit (for the spread beside a median).
    fn bare(self, v: f64) -> String {
        match self {
            Unit::Count => Unit::Count.show(v),
            Unit::MiB => format!("{:.1}", v / (1u64 << 20) as f64),
            Unit::Ms => format!("{:.3}", v / 1e6),
            Unit::Ratio => format!("{v:.2}"),
        }
    }
}

type Cell = fn(&Summary) -> f64;

/// The table's rows: name, value, unit.
fn rows(processes: bool) -> Vec<(&'static str, Cell, Unit)> {
    use Unit::*;
    let mut rows: Vec<(&'static str, Cell, Unit)> = vec![
        ("apps alive (peak)", |s| f64::from(s.peak_alive), Count),
        ("apps alive (final)", |s| f64::from(s.final_alive), Count),
        ("apps active (peak)", |s| f64::from(s.peak_active), Count),
        ("apps active (final)", |s| f64::from(s.final_active), Count),
        ("kills", |s| s.kills as f64, Count),
        ("deaths", |s| s.deaths as f64, Count),
        ("  lmk kills", |s| s.lmk_kills as f64, Count),
        ("  kernel OOM kills", |s| s.kernel_oom_kills as f64, Count),
        ("  signalled", |s| s.signalled_apps as f64, Count),
        ("crashed apps", |s| s.crashed_apps as f64, Count),
        ("restarts", |s| s.restarts as f64, Count),
        ("arrays verified", |s| s.verified_arrays as f64, Count),
        (
            "failed verifications",
            |s| s.failed_verifications as f64,
            Count,
        ),
        ("swap written", |s| s.swap_bytes_written as f64, MiB),
        ("swap read", |s| s.swap_bytes_read as f64, MiB),
        ("reclaim requests", |s| s.reclaim_requests as f64, Count),
        ("reclaim latency p50", |s| s.reclaim_p50_ns as f64, Ms),
        ("reclaim latency p99", |s| s.reclaim_p99_ns as f64, Ms),
        ("reclaim latency max", |s| s.reclaim_max_ns as f64, Ms),
        ("reclaimed", |s| s.reclaimed_bytes as f64, MiB),
        ("GC faults", |s| s.gc_faults as f64, Count),
        ("object faults", |s| s.object_faults as f64, Count),
        (
            "peak accounted memory",
            |s| s.peak_accounted_bytes as f64,
            MiB,
        ),
        ("runtime held (peak)", |s| s.peak_runtime_bytes as f64, MiB),
        (
            "runtime charged (peak)",
            |s| s.peak_runtime_charged_bytes as f64,
            MiB,
        ),
        ("peak process RSS", |s| s.peak_rss_bytes as f64, MiB),
        ("  anonymous (peak)", |s| s.peak_rss_anon_bytes as f64, MiB),
        (
            "  file-backed (peak)",
            |s| s.peak_rss_file_bytes as f64,
            MiB,
        ),
        (
            "  shared memory (peak)",
            |s| s.peak_rss_shmem_bytes as f64,
            MiB,
        ),
        (
            "peak RSS / peak accounted",
            |s| s.peak_rss_per_accounted,
            Ratio,
        ),
        (
            "over-budget allocations",
            |s| s.over_budget_events as f64,
            Count,
        ),
        (
            "over budget by (max)",
            |s| s.max_over_budget_bytes as f64,
            MiB,
        ),
        ("launches", |s| s.launches as f64, Count),
        ("  hot launches", |s| s.launch_hot.count as f64, Count),
        ("  warm launches", |s| s.launch_warm.count as f64, Count),
        ("  cold launches", |s| s.launch_cold.count as f64, Count),
        (
            "launch latency p50",
            |s| launch_ns(s.launches, s.launch_p50_ns),
            Ms,
        ),
        (
            "launch latency p90",
            |s| launch_ns(s.launches, s.launch_p90_ns),
            Ms,
        ),
        (
            "launch latency p99",
            |s| launch_ns(s.launches, s.launch_p99_ns),
            Ms,
        ),
        (
            "  hot p50",
            |s| class_ns(&s.launch_hot, s.launch_hot.p50_ns),
            Ms,
        ),
        (
            "  hot p99",
            |s| class_ns(&s.launch_hot, s.launch_hot.p99_ns),
            Ms,
        ),
        (
            "  warm p50",
            |s| class_ns(&s.launch_warm, s.launch_warm.p50_ns),
            Ms,
        ),
        (
            "  warm p99",
            |s| class_ns(&s.launch_warm, s.launch_warm.p99_ns),
            Ms,
        ),
        (
            "  cold p50",
            |s| class_ns(&s.launch_cold, s.launch_cold.p50_ns),
            Ms,
        ),
        (
            "  cold p99",
            |s| class_ns(&s.launch_cold, s.launch_cold.p99_ns),
            Ms,
        ),
        (
            "launches unfinished",
            |s| s.launches_unfinished as f64,
            Count,
        ),
    ];
    // Rows that mean something in one mode only: the model's own accounting, or what
    // the kernel and the System's control loop report in the process mode.
    let other_mode_only = if processes { MODEL_ROWS } else { PROCESS_ROWS };
    rows.retain(|(name, _, _)| !other_mode_only.contains(name));
    if processes {
        rows.extend_from_slice(&[
            (
                "control loop gap (max)",
                (|s| s.control_gap_max_ns as f64) as Cell,
                Ms,
            ),
            ("cgroup limit", |s| s.limit_bytes as f64, MiB),
            ("peak cgroup usage", |s| s.peak_cgroup_bytes as f64, MiB),
            ("major faults", |s| s.major_faults as f64, Count),
            ("major faults in GC", |s| s.gc_major_faults as f64, Count),
            ("kernel swap out", |s| s.swap_out_bytes as f64, MiB),
            ("kernel swap in", |s| s.swap_in_bytes as f64, MiB),
            (
                "reclaimed from outside",
                |s| s.external_reclaimed_bytes as f64,
                MiB,
            ),
            (
                "zram pool (peak)",
                |s| {
                    s.zram
                        .as_ref()
                        .and_then(|z| z.pool.pool_peak_bytes)
                        .map_or(f64::NAN, |b| b as f64)
                },
                MiB,
            ),
            (
                "  compression ratio",
                |s| {
                    s.zram
                        .as_ref()
                        .and_then(|z| z.compression_ratio)
                        .unwrap_or(f64::NAN)
                },
                Ratio,
            ),
            (
                "  compressing time",
                |s| {
                    s.zram
                        .as_ref()
                        .and_then(|z| z.pool.compress_time)
                        .map_or(f64::NAN, |t| t.as_nanos() as f64)
                },
                Ms,
            ),
            (
                "settle before (waited)",
                |s| {
                    s.settle
                        .as_ref()
                        .map_or(f64::NAN, |x| x.waited_ms as f64 * 1e6)
                },
                Ms,
            ),
        ]);
        rows.extend(crate::reach::rows().into_iter().map(|(n, c)| (n, c, MiB)));
    }
    rows
}

/// Rows of the common list that only the in-process model fills.
const MODEL_ROWS: &[&str] = &[
    "kills",
    "swap written",
    "swap read",
    "reclaimed",
    "peak accounted memory",
    "runtime held (peak)",
    "runtime charged (peak)",
    "over-budget allocations",
    "over budget by (max)",
];

/// Rows of the common list that only the process mode fills.
const PROCESS_ROWS: &[&str] = &["deaths", "  lmk kills", "  kernel OOM kills", "  signalled"];

/// A launch latency as a table cell: none (shown as `-`) when there were no launches,
/// rather than a latency of zero.
fn launch_ns(launches: u64, ns: u64) -> f64 {
    if launches == 0 {
        f64::NAN
    } else {
        ns as f64
    }
}

/// A launch class's latency as a table cell: none when the class had no launch.
fn class_ns(class: &LaunchStats, ns: u64) -> f64 {
    launch_ns(class.count, ns)
}

/// The process mode's per-process records as events: how each life ended (`end`, its
/// value `killed`, `crashed`, `ended` or `alive at the end`) and its counts, at the time
/// it ended.
pub fn events_of(records: &[AppRecord]) -> Vec<super::timeline::AppEvent> {
    let mut out = Vec::new();
    for r in records {
        let mut push = |event: &str, value: String| {
            out.push(super::timeline::AppEvent {
                app: r.app,
                event: event.to_owned(),
                t_s: r.t_s,
                t_end_s: None,
                value,
            })
        };
        push("end", r.end.clone());
        push("major_faults", r.major_faults.to_string());
        push("gc_major_faults", r.gc_major_faults.to_string());
        push("object_faults", r.object_faults.to_string());
        push("swap_bytes", r.swap_bytes.to_string());
    }
    out
}

/// The runs grouped into columns by label, in order of first appearance.
pub fn columns(summaries: &[Summary]) -> Vec<(String, Vec<&Summary>)> {
    let mut cols: Vec<(String, Vec<&Summary>)> = Vec::new();
    for s in summaries {
        let label = if s.label.is_empty() {
            &s.policy
        } else {
            &s.label
        };
        match cols.iter_mut().find(|(l, _)| l == label) {
            Some((_, runs)) => runs.push(s),
            None => cols.push((label.clone(), vec![s])),
        }
    }
    cols
}

/// The side-by-side table, one column per policy (or variant). A column of one run
/// shows its values; a column of several repetitions shows each figure's median and,
/// in brackets, its interquartile range `[q1-q3]`.
pub fn table(summaries: &[Summary]) -> String {
    table_with(summaries, None)
}

/// As [`table`], with the published results (a `--scale paper` run) as a row group
/// `published` below the run's own: each column's policy's published peak of active
/// apps ("-" for a policy the paper did not run).
pub fn table_with(summaries: &[Summary], published: Option<&Published>) -> String {
    let cols = columns(summaries);
    let repeated = cols.iter().any(|(_, runs)| runs.len() > 1);
    let rows = rows(summaries.iter().any(|s| s.mode == "processes"));
    let cell = |f: Cell, unit: Unit, runs: &[&Summary]| -> String {
        let Some(sp) = Spread::of(runs.iter().map(|s| f(s))) else {
            return "-".into();
        };
        if runs.len() == 1 {
            unit.show(sp.median)
        } else {
            format!(
                "{} [{}-{}]",
                unit.show(sp.median),
                unit.bare(sp.q1),
                unit.bare(sp.q3)
            )
        }
    };
    let grid: Vec<(&str, Vec<String>)> = rows
        .iter()
        .map(|&(name, f, unit)| (name, cols.iter().map(|(_, r)| cell(f, unit, r)).collect()))
        .collect();
    let width = grid
        .iter()
        .flat_map(|(_, cells)| cells.iter().map(String::len))
        .chain(cols.iter().map(|(l, _)| l.len()))
        .max()
        .unwrap_or(0)
        .max(14)
        + 2;
    let mut out = format!("{:<26}", "");
    for (label, _) in &cols {
        out.push_str(&format!("{label:>width$}"));
    }
    out.push('\n');
    if repeated {
        out.push_str(&format!("{:<26}", "repetitions"));
        for (_, runs) in &cols {
            out.push_str(&format!("{:>width$}", runs.len()));
        }
        out.push('\n');
    }
    for (name, cells) in grid {
        out.push_str(&format!("{name:<26}"));
        for c in cells {
            out.push_str(&format!("{c:>width$}"));
        }
        out.push('\n');
    }
    if let Some(p) = published {
        out.push_str("published (Marvin, USENIX ATC 2020, figure 7)\n");
        out.push_str(&format!("{:<26}", "  apps active (peak)"));
        for (label, runs) in &cols {
            let policy = runs.first().map_or(label.as_str(), |s| s.policy.as_str());
            let cell = p
                .peak_active(policy)
                .or_else(|| p.peak_active(label))
                .map_or("-".to_owned(), |n| n.to_string());
            out.push_str(&format!("{cell:>width$}"));
        }
        out.push('\n');
        out.push_str(&format!(
            "published: apps active at the peak on the phone, {}\n",
            p.workload()
        ));
    }
    if repeated {
        out.push_str("each cell: median [interquartile range] over the repetitions\n");
    }
    for s in summaries {
        for c in &s.crashes {
            let rep = if repeated {
                format!(" (repetition {})", s.rep)
            } else {
                String::new()
            };
            out.push_str(&format!(
                "{} app{} crashed at {:.1} s{rep}: {}\n",
                s.label, c.app, c.t_s, c.error
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, rep: u32, active: u32, faults: u64) -> Summary {
        Summary {
            label: label.into(),
            rep,
            peak_active: active,
            object_faults: faults,
            swap_bytes_written: u64::from(active) << 20,
            ..Summary::new("marvin")
        }
    }

    fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
        let line = table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}:\n{table}"));
        line[26..]
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect()
    }

    #[test]
    fn a_paper_scale_table_has_the_published_row_group() {
        let mut kill = run("kill", 0, 8, 0);
        kill.policy = "kill".into();
        let marvin = run("marvin", 0, 20, 0);
        let runs = [kill, marvin];
        assert!(!table(&runs).contains("published"));
        let t = table_with(&runs, Some(&Published { mixed: false }));
        assert!(
            t.contains("published (Marvin, USENIX ATC 2020, figure 7)"),
            "{t}"
        );
        assert_eq!(row(&t, "  apps active (peak)"), ["10", "27"]);
        let t = table_with(&runs, Some(&Published { mixed: true }));
        assert_eq!(row(&t, "  apps active (peak)"), ["10", "30"]);
        assert!(t.contains("4 KB/1 MB mix"), "{t}");
    }

    #[test]
    fn a_launch_class_without_launches_has_no_latency_not_zero() {
        let mut kill = run("kill", 0, 8, 0);
        kill.launches = 2;
        kill.launch_p50_ns = 16_000_000;
        kill.launch_cold.count = 2;
        kill.launch_cold.p50_ns = 16_000_000;
        let none = run("marvin", 0, 20, 5);
        let t = table(&[kill, none]);
        assert_eq!(row(&t, "  cold p50"), ["16.000 ms", "-"]);
        assert_eq!(row(&t, "  warm p50"), ["-", "-"]);
        assert_eq!(row(&t, "launch latency p50"), ["16.000 ms", "-"]);
    }

    #[test]
    fn one_run_per_column_shows_plain_values() {
        let t = table(&[run("kill", 0, 8, 0), run("marvin", 0, 20, 5)]);
        assert!(t.lines().next().unwrap().contains("kill"));
        assert_eq!(row(&t, "apps active (peak)"), ["8", "20"]);
        assert_eq!(row(&t, "swap written"), ["8.0 MiB", "20.0 MiB"]);
        assert!(!t.contains("repetitions"), "{t}");
    }

    #[test]
    fn repetitions_show_median_and_interquartile_range() {
        let runs = [
            run("kill", 0, 8, 0),
            run("marvin", 0, 20, 100),
            run("kill", 1, 10, 0),
            run("marvin", 1, 24, 300),
        ];
        let t = table(&runs);
        assert_eq!(row(&t, "repetitions"), ["2", "2"]);
        assert_eq!(row(&t, "apps active (peak)"), ["9 [8.5-9.5]", "22 [21-23]"]);
        assert_eq!(row(&t, "object faults"), ["0 [0-0]", "200 [150-250]"]);
        assert_eq!(
            row(&t, "swap written"),
            ["9.0 MiB [8.5-9.5]", "22.0 MiB [21.0-23.0]"]
        );
        assert!(t.contains("median [interquartile range]"), "{t}");
    }

    #[test]
    fn summaries_read_back_from_json() {
        let s = run("marvin:fast", 3, 7, 9);
        let back: Summary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(
            (back.label.as_str(), back.rep, back.peak_active),
            ("marvin:fast", 3, 7)
        );
        // Fields a file lacks take their defaults.
        let old: Summary = serde_json::from_str(r#"{"policy":"kill","kills":3}"#).unwrap();
        assert_eq!((old.kills, old.rep), (3, 0));
    }
}
