//! `marvin pressure --scale default|paper`: the memory scale of the experiment. `default`
//! is the small model (every setting its flag's default); `paper` chooses the published
//! experiment's scale (Marvin, USENIX ATC 2020, section 5, figure 7): the shipped workload
//! at its full size, 30 apps, a limit that holds about ten of them, a swap device that
//! holds what kernel swap must page out, and launches spaced for apps ten times the
//! model's. Every setting is derived here from the workload's app size, each with its
//! reason. A workload declares its size one of two ways: the bucket workloads by their
//! `BUCKETS`, `ARRAYS` and `ARRAY_BYTES` constants (the paper's size is `ARRAYS=2560`), any
//! other by `APP_BYTES` (its bytes at `SCALE=1`) and `SCALE` (a multiplier its program
//! applies to every count; the paper's size is `SCALE=10`); a flag given beside `--scale` wins over the scale's choice for its setting.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `--scale`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ScaleArg {
    /// The small model: every setting its flag's default.
    #[default]
    Default,
    /// The published experiment's memory scale (figure 7 of the paper).
    Paper,
}

impl ScaleArg {
    pub fn name(self) -> &'static str {
        match self {
            ScaleArg::Default => "default",
            ScaleArg::Paper => "paper",
        }
    }
}

/// The published bucket: 2,560 arrays (the model's is 256).
pub const PAPER_ARRAYS: i64 = 2560;
/// The model's bucket (`-D ARRAYS=256`, set by the default run).
pub const MODEL_ARRAYS: i64 = 256;
/// The paper's `SCALE` for a workload that declares its size with `APP_BYTES` and `SCALE`:
/// ten times its model app (about 24 MB), as the published bucket is ten times the model's.
pub const PAPER_SCALE: i64 = 10;
/// The published experiment's apps.
pub const PAPER_APPS: usize = 30;
/// Apps the published phone held under the killer: the limit holds this many.
pub const APPS_HELD: u64 = 10;
/// The limit is rounded up to a multiple of this.
const BUDGET_STEP: u64 = 16 << 20;
/// The swap device is rounded up to a multiple of this.
const SWAP_STEP: u64 = 1 << 30;
/// ART's largest allocation gap between collections: the published heap's (the model
/// scales it down with its app size to 1 MiB).
pub const PAPER_GC_MAX_FREE: usize = 8 << 20;
/// The default run's time scale, launch interval and duration, which the paper scale
/// stretches by the ratio of the app sizes (the time scale no further than the published
/// periods, 1.0).
pub const MODEL_TIME_SCALE: f64 = 0.1;
pub const MODEL_LAUNCH_EVERY: Duration = Duration::from_millis(1400);
pub const MODEL_DURATION: Duration = Duration::from_secs(50);
/// The model's `--gc-max-free` (what its tests derive the model's budget from).
#[cfg(test)]
pub const MODEL_GC_MAX_FREE: usize = 1 << 20;

/// The bytes one app of the workload holds: for the bucket workloads, BUCKETS buckets of
/// ARRAYS arrays of ARRAY_BYTES bytes, with MIXED=1 the even buckets BIG_COUNT arrays of
/// BIG_BYTES instead; for a workload that declares `APP_BYTES` (its size at `SCALE=1`),
/// `APP_BYTES` x `SCALE`. `None` for a workload with neither.
pub fn app_bytes(value: impl Fn(&str) -> Option<i64>) -> Option<u64> {
    let get = |n: &str| value(n).and_then(|v| u64::try_from(v).ok());
    if value("ARRAYS").is_none() {
        let declared = get("APP_BYTES")?;
        let scale = match value("SCALE") {
            None => 1,
            Some(v) => u64::try_from(v).ok()?,
        };
        return declared.checked_mul(scale);
    }
    let (buckets, arrays, bytes) = (get("BUCKETS")?, get("ARRAYS")?, get("ARRAY_BYTES")?);
    let small = arrays * bytes;
    if value("MIXED").unwrap_or(0) != 0 {
        let big = get("BIG_COUNT")? * get("BIG_BYTES")?;
        let even = buckets.div_ceil(2);
        Some(even * big + (buckets - even) * small)
    } else {
        Some(buckets * small)
    }
}

/// The default budget (both modes).
pub const DEFAULT_BUDGET: usize = 240 << 20;

/// The default model's app: 22 buckets of 256 arrays of 4,076 bytes (about 22 MiB).
pub fn model_app_bytes() -> u64 {
    22 * MODEL_ARRAYS as u64 * 4076
}

/// The limit that holds about ten apps: ten times an app's arrays and its largest gap
/// between collections, rounded up to 16 MiB. On the model's app (about 21.9 MiB and a
/// 1 MiB gap) this gives the default 240 MiB.
pub fn budget_for(app_bytes: u64, gc_max_free: usize) -> u64 {
    (APPS_HELD * (app_bytes + gc_max_free as u64)).next_multiple_of(BUDGET_STEP)
}

/// Kernel swap's device: what does not fit under the limit when every app is alive
/// (apps x (app + gap) less the limit), plus one app as margin, rounded up to a GiB.
pub fn swap_for(apps: usize, app_bytes: u64, gc_max_free: usize, budget: u64) -> u64 {
    let app = app_bytes + gc_max_free as u64;
    let need = (apps as u64 * app).saturating_sub(budget) + app;
    need.next_multiple_of(SWAP_STEP)
}

/// The model's launch interval and duration stretched by the ratio of the app sizes:
/// an app ten times the model's takes about ten times as long to build and to page out.
/// Whole milliseconds for the interval, whole seconds for the duration.
///
/// At the paper's size this gives a launch every 14 s and 500 s per policy: three
/// policies of one heap took 25.9 minutes on a 2-core machine, launch phases and settles
/// included (`docs/notes/2026-12-03-paper-scale.md`).
pub fn stretched(app_bytes: u64) -> (Duration, Duration) {
    let ratio = app_bytes as f64 / model_app_bytes() as f64;
    let every = (MODEL_LAUNCH_EVERY.as_secs_f64() * ratio * 1000.0).round() as u64;
    let duration = (MODEL_DURATION.as_secs_f64() * ratio).ceil() as u64;
    (
        Duration::from_millis(every.max(1)),
        Duration::from_secs(duration.max(1)),
    )
}

/// The time scale for an app of `app_bytes`: the model's 0.1 stretched by the ratio of the
/// app sizes, at most 1.0 (the published periods themselves) and never compressed further
/// than the model's 0.1 (a smaller app keeps the model's periods). An app ten times the model's
/// deletes and re-creates ten times the bytes each round; with its rounds ten times as far
/// apart, the group churns the same bytes per second as the default run, which the
/// mechanisms are measured to keep up with. Compressing the paper's app as far as the
/// model's (0.1) asks ten times that of 2 cores and one disk: measured in
/// `docs/notes/2026-12-03-paper-scale.md`, marvin kept 2 of 30 apps active there and 30 of
/// 30 at this scale.
pub fn time_scale_for(app_bytes: u64) -> f64 {
    let ratio = app_bytes as f64 / model_app_bytes() as f64;
    // Rounded to two places so the value prints as it is used.
    ((MODEL_TIME_SCALE * ratio).clamp(MODEL_TIME_SCALE, 1.0) * 100.0).round() / 100.0
}

/// One setting the scale chose (or a flag beside it gave), with why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// The flag, without dashes (`budget`, `swap-size`, ... ; `-D ARRAYS` for the define).
    pub setting: String,
    /// Its value as the flag takes it.
    pub value: String,
    pub reason: String,
}

impl Choice {
    pub fn line(&self) -> String {
        format!(
            "scale paper: {} {}: {}",
            self.setting, self.value, self.reason
        )
    }
}

/// The settings the paper scale needs before the workload's app size is known.
#[derive(Clone, Debug, PartialEq)]
pub struct Early {
    /// The workload's size define (`-D ARRAYS=2560`, or `-D SCALE=10`) unless one was given.
    pub size: Option<i64>,
    pub apps: Option<usize>,
    pub gc_max_free: Option<usize>,
}

/// The settings derived from the app size (`None`: a flag gave it).
#[derive(Clone, Debug, PartialEq)]
pub struct Late {
    pub time_scale: Option<f64>,
    pub budget: Option<u64>,
    pub swap_size: Option<u64>,
    pub launch_every: Option<Duration>,
    pub duration: Option<Duration>,
}

/// What `given` (the flags on the command line, by id) leaves to the scale, before the
/// app size is known.
pub fn early(given: &dyn Fn(&str) -> bool, size_given: bool, paper_size: i64) -> Early {
    Early {
        size: (!size_given).then_some(paper_size),
        apps: (!given("apps")).then_some(PAPER_APPS),
        gc_max_free: (!given("gc_max_free")).then_some(PAPER_GC_MAX_FREE),
    }
}

/// The rest, from the app size and the settings in force.
pub fn late(
    given: &dyn Fn(&str) -> bool,
    app_bytes: u64,
    apps: usize,
    gc_max_free: usize,
    budget: Option<u64>,
) -> Late {
    let derived_budget = budget_for(app_bytes, gc_max_free);
    let budget_now = budget.unwrap_or(derived_budget);
    let (every, duration) = stretched(app_bytes);
    Late {
        time_scale: (!given("time_scale")).then(|| time_scale_for(app_bytes)),
        budget: (!given("budget")).then_some(derived_budget),
        swap_size: (!given("swap_size"))
            .then(|| swap_for(apps, app_bytes, gc_max_free, budget_now)),
        launch_every: (!given("launch_every")).then_some(every),
        duration: (!given("duration")).then_some(duration),
    }
}

/// MiB, for the reasons.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper_app() -> u64 {
        app_bytes(|n| match n {
            "BUCKETS" => Some(22),
            "ARRAYS" => Some(PAPER_ARRAYS),
            "ARRAY_BYTES" => Some(4076),
            _ => None,
        })
        .unwrap()
    }

    #[test]
    fn the_default_budget_is_derived_the_same_way() {
        assert_eq!(
            budget_for(model_app_bytes(), MODEL_GC_MAX_FREE),
            DEFAULT_BUDGET as u64
        );
    }

    #[test]
    fn paper_scale_derivation() {
        let app = paper_app();
        assert_eq!(app, 22 * 2560 * 4076); // about 230 MB
        assert_eq!(app, 229_560_320);
        let budget = budget_for(app, PAPER_GC_MAX_FREE);
        // 10 x (218.9 + 8) MiB = 2,269 MiB, rounded up to 16 MiB.
        assert_eq!(budget, 2272 << 20);
        // 30 x 226.9 - 2,272 + 226.9 = 4,762 MiB, rounded up to 5 GiB.
        assert_eq!(swap_for(30, app, PAPER_GC_MAX_FREE, budget), 5 << 30);
        let (every, duration) = stretched(app);
        assert_eq!(every, Duration::from_secs(14));
        assert_eq!(duration, Duration::from_secs(500));
        let none = |_: &str| false;
        let e = early(&none, false, PAPER_ARRAYS);
        assert_eq!(e.size, Some(2560));
        assert_eq!(e.apps, Some(30));
        assert_eq!(e.gc_max_free, Some(8 << 20));
        let l = late(&none, app, 30, PAPER_GC_MAX_FREE, None);
        // The published periods: 0.1 stretched 10x.
        assert_eq!(l.time_scale, Some(1.0));
        assert_eq!(l.budget, Some(2272 << 20));
        assert_eq!(l.swap_size, Some(5 << 30));
    }

    #[test]
    fn the_time_scale_stretches_with_the_app_up_to_the_published_periods() {
        assert_eq!(time_scale_for(model_app_bytes()), 0.1);
        assert_eq!(time_scale_for(model_app_bytes() * 5), 0.5);
        assert_eq!(time_scale_for(paper_app()), 1.0);
        // Never slower than the published periods.
        assert_eq!(time_scale_for(paper_app() * 3), 1.0);
        // Nor faster than the model's.
        assert_eq!(time_scale_for(model_app_bytes() / 32), 0.1);
    }

    #[test]
    fn the_mixed_app_counts_its_big_buckets() {
        let mixed = app_bytes(|n| match n {
            "BUCKETS" => Some(22),
            "ARRAYS" => Some(2560),
            "ARRAY_BYTES" => Some(4076),
            "MIXED" => Some(1),
            "BIG_COUNT" => Some(10),
            "BIG_BYTES" => Some(1 << 20),
            _ => None,
        })
        .unwrap();
        assert_eq!(mixed, 11 * (10 << 20) + 11 * 2560 * 4076);
        assert_eq!(app_bytes(|_| None), None);
    }

    #[test]
    fn a_workload_that_declares_its_size_scales_by_its_multiplier() {
        let app = |scale: i64| {
            app_bytes(move |n| match n {
                "APP_BYTES" => Some(23_900_000),
                "SCALE" => Some(scale),
                _ => None,
            })
        };
        assert_eq!(app(1), Some(23_900_000));
        assert_eq!(app(PAPER_SCALE), Some(239_000_000));
        assert_eq!(app(-1), None);
        // The paper's app is about ten times the model's, as the published bucket is.
        let ratio = app(PAPER_SCALE).unwrap() as f64 / model_app_bytes() as f64;
        assert!((9.0..12.0).contains(&ratio), "{ratio}");
    }

    #[test]
    fn given_flags_leave_their_setting_alone() {
        let all = |_: &str| true;
        let e = early(&all, true, PAPER_ARRAYS);
        assert_eq!((e.size, e.apps, e.gc_max_free), (None, None, None));
        let l = late(&all, paper_app(), 30, PAPER_GC_MAX_FREE, Some(1 << 30));
        assert_eq!(
            (
                l.time_scale,
                l.budget,
                l.swap_size,
                l.launch_every,
                l.duration
            ),
            (None, None, None, None, None)
        );
        // A given budget shrinks what kernel swap needs accordingly.
        let only_budget = |n: &str| n == "budget";
        let l = late(
            &only_budget,
            paper_app(),
            30,
            PAPER_GC_MAX_FREE,
            Some(4 << 30),
        );
        assert_eq!(l.budget, None);
        assert_eq!(l.swap_size, Some(3 << 30));
    }
}
