//! The experiment's settings as `marvin pressure` flags ([`PressureArgs`]): parsed by
//! the command line, written back as arguments into each results directory's record
//! ([`to_args`]) and read from it again by `--config` ([`PressureArgs::parse_args`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser};
use marvin_console::parse_size;
use marvin_interpreter::link;
use marvin_runtime::duration::parse as parse_duration;
use marvin_swap::RestoreMode;

use crate::plan::{self, Shard, Sweep};
use crate::scale::ScaleArg;
use crate::PressurePolicy;

#[derive(Clone, Debug, Args)]
pub struct PressureArgs {
    /// Apps launched over the run.
    #[arg(long, default_value_t = 30)]
    pub apps: usize,
    /// Memory all apps share: the cgroup's hard limit in the process mode, the
    /// runtime's accounted budget in the in-process model. Default: 240m.
    #[arg(long, value_parser = parse_size)]
    pub budget: Option<usize>,
    /// processes: every app its own process in one memory cgroup that the kernel
    /// enforces (needs root and a memory controller); in-process: the model, all apps
    /// in this process under a budget the runtime counts. Default: processes where it
    /// can run, else in-process (the first line says which and why).
    #[arg(long, value_enum, default_value = "auto")]
    pub mode: ModeArg,
    /// The kernel-swap policy's swap device in the process mode: a swap file in the
    /// run's directory, or zram (whose memory the cgroup is not charged for).
    #[arg(long, value_enum, default_value = "file")]
    pub swap_device: SwapDeviceArg,
    /// Process mode, before each policy starts: off (start right after the policy
    /// before), wait (sync, then wait up to 30 s until the disks are at rest: nothing
    /// in flight, under writeback, read, written or discarded for 1 s), or drop-caches
    /// (wait, then drop the machine's clean page cache). See
    /// docs/experiments.md#every-policy-starts-from-a-disk-at-rest.
    #[arg(long, value_enum, default_value = "wait", overrides_with = "settle")]
    pub settle: SettleArg,
    /// Size of that swap device.
    #[arg(long, value_parser = parse_size, default_value = "1g")]
    pub swap_size: usize,
    /// The zram policy's compression algorithm (one of the kernel's: see
    /// /sys/block/zram0/comp_algorithm). lz4, as Android's, by default.
    #[arg(long, value_name = "NAME", default_value = "lz4")]
    pub zram_algorithm: String,
    /// A new app is launched this often (it comes to the foreground). Durations are a
    /// number with a unit: ns, us, ms, s, m or h (see docs/experiments.md#durations).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "1400ms")]
    pub launch_every: Duration,
    /// How long each policy runs.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "50s")]
    pub duration: Duration,
    /// After every app is launched, switch the foreground round robin this often
    /// (killed apps restart cold). Off by default.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub switch_every: Option<Duration>,
    /// The launch phase: once every app is launched, this many launches, each bringing
    /// a random app other than the one in front back to the foreground (killed apps
    /// start cold) and timing it to its first frame. 0: no launch phase. The run goes on
    /// past --duration until the phase is over.
    #[arg(long, default_value_t = 16)]
    pub launches: usize,
    /// Time an app stays in front after its launch's frame before the next launch.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "500ms")]
    pub launch_gap: Duration,
    /// The seed of the launch phase's random order (the same for every policy).
    #[arg(long, default_value_t = 1)]
    pub launch_seed: u64,
    /// The workload program each app runs: a MASM file, or a shipped workload embedded in
    /// the binary: `builtin:buckets` / `builtin:mixed` (the paper's array heaps) or
    /// `builtin:app` / `builtin:feed` / `builtin:media` (shaped like real apps).
    #[arg(long, default_value = "builtin:buckets")]
    pub workload: PathBuf,
    /// Override a workload constant (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = link::parse_define)]
    pub defines: Vec<(String, i64)>,
    /// Policies to run, one after the other on identical settings. Default:
    /// kill,kernel-swap,marvin in the process mode, kill,page-swap,marvin in the model.
    /// marvin-eager and marvin-on-demand are marvin with the policy file's `[restore]
    /// mode` set to eager or on-demand.
    #[arg(long, value_delimiter = ',', value_parser = PolicyChoice::parse)]
    pub policy: Vec<PolicyChoice>,
    /// Marvin's swap policy knobs (TOML; see `marvin policy show`). Without it, the
    /// published settings with the background write task at the foreground period (see
    /// docs/experiments.md: the model compresses launches more than other periods).
    #[arg(long, value_name = "FILE")]
    pub policy_file: Option<PathBuf>,
    /// Scales every period together: the workload's `*_MS` constants, the saver and
    /// working-set periods and budget, and the activity thresholds.
    #[arg(long, default_value_t = 0.1)]
    pub time_scale: f64,
    /// The heap's largest allocation gap between collections (ART's 8 MiB, scaled with
    /// the model's app size).
    #[arg(long, value_parser = parse_size, default_value = "1m")]
    pub gc_max_free: usize,
    /// How often the time series is sampled.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "250ms")]
    pub sample_every: Duration,
    /// Where swap files go (default: a temporary directory removed at the end).
    #[arg(long)]
    pub swap_dir: Option<PathBuf>,
    /// Write summary.json, series.csv and the plots here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write a Perfetto trace of every app of every policy to this file.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Print the summary as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress bars (and no line per finished run).
    #[arg(long)]
    pub quiet: bool,
    /// Run every column this many times; the table shows medians and interquartile
    /// ranges, summary.json and series.csv keep every repetition.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,
    /// The first repetition's seed (repetition R runs with SEED+R): set as the
    /// workload's SEED constant where it declares one, and recorded.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Run Marvin with this policy file as a column labelled marvin:NAME (repeatable;
    /// the variants replace the plain marvin column).
    #[arg(long, value_name = "NAME=FILE", value_parser = plan::parse_variant)]
    pub variant: Vec<(String, PathBuf)>,
    /// Run Marvin once per value of a policy knob, named by its dotted TOML path
    /// (`coldness.window_rounds=1,2,4`; repeatable: the grid of all combinations).
    #[arg(long, value_name = "KEY=V1,V2,...", value_parser = Sweep::parse)]
    pub sweep: Vec<Sweep>,
    /// Run only shard I of N of the grid of runs (columns x repetitions), for batch
    /// systems; `marvin compare` merges the shards' directories.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// Re-run the experiment recorded in a config.toml (written into every --out
    /// directory); only --out, --trace, --json and --quiet may be given beside it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// default: the small model (every setting its flag's default); paper: the published
    /// experiment's memory scale (the full-size workload, 30 apps, a limit holding about
    /// ten, kernel swap sized to fit, launches spaced for the bigger apps), each setting
    /// derived and printed with its reason. A flag given beside it wins for its setting.
    #[arg(long, value_enum, default_value = "default")]
    pub scale: ScaleArg,
    /// The ids of the flags given on the command line (filled in after parsing).
    #[arg(skip)]
    pub given: Vec<String>,
}

/// The ids of the arguments `m` got from the command line (not from a default).
pub fn given_ids(m: &clap::ArgMatches) -> Vec<String> {
    m.ids()
        .filter(|id| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| id.as_str().to_owned())
        .collect()
}

/// One policy to run: a pressure policy, for marvin with a restore mode of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyChoice {
    pub pressure: PressurePolicy,
    /// Overrides the policy file's `[restore] mode` (marvin-eager, marvin-on-demand).
    pub restore: Option<RestoreMode>,
}

impl PolicyChoice {
    pub fn parse(s: &str) -> Result<PolicyChoice, String> {
        let restore = match s.trim() {
            "marvin-eager" => Some(RestoreMode::Eager),
            "marvin-on-demand" => Some(RestoreMode::OnDemand),
            other => {
                return PressurePolicy::parse(other)
                    .map(|pressure| PolicyChoice {
                        pressure,
                        restore: None,
                    })
                    .map_err(|e| format!("{e}; or marvin-eager, marvin-on-demand"))
            }
        };
        Ok(PolicyChoice {
            pressure: PressurePolicy::Marvin,
            restore,
        })
    }

    /// The name its results carry.
    pub fn name(&self) -> &'static str {
        match self.restore {
            None => self.pressure.name(),
            Some(RestoreMode::Eager) => "marvin-eager",
            Some(RestoreMode::OnDemand) => "marvin-on-demand",
        }
    }
}

/// `marvin pressure`'s flags on their own, to read a recorded command line back.
#[derive(Debug, Parser)]
#[command(name = "marvin pressure")]
pub(super) struct Standalone {
    #[command(flatten)]
    args: PressureArgs,
}

impl PressureArgs {
    /// Parses `marvin pressure`'s arguments (without the program and subcommand names).
    pub fn parse_args(args: &[String]) -> Result<PressureArgs, clap::Error> {
        let argv = std::iter::once("marvin pressure".to_owned()).chain(args.iter().cloned());
        let m = Standalone::command().try_get_matches_from(argv)?;
        let mut a = Standalone::from_arg_matches(&m)?.args;
        a.given = given_ids(&m);
        Ok(a)
    }
}

/// The values an experiment resolved from its flags and the machine.
pub(super) struct Resolved {
    pub(super) mode: &'static str,
    pub(super) policies: Vec<PolicyChoice>,
    pub(super) budget: usize,
}

/// A duration as a flag takes it, exactly.
pub(super) fn duration_arg(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}ns", d.as_nanos())
    }
}

/// A byte size as a flag takes it, exactly: in g, m or k where it is a whole number.
pub(super) fn size_arg(bytes: usize) -> String {
    for (unit, shift) in [("g", 30), ("m", 20), ("k", 10)] {
        if bytes > 0 && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Every setting of the experiment as `marvin pressure` arguments (the output flags
/// and `--config` left out), with the resolved mode, policies and budget when given.
pub(super) fn to_args(a: &PressureArgs, resolved: Option<&Resolved>) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    let mut flag = |name: &str, value: String| {
        v.push(name.to_owned());
        v.push(value);
    };
    let mode = match (resolved, a.mode) {
        (Some(r), _) => r.mode,
        (None, ModeArg::Auto) => "auto",
        (None, ModeArg::Processes) => "processes",
        (None, ModeArg::InProcess) => "in-process",
    };
    flag("--mode", mode.to_owned());
    flag("--apps", a.apps.to_string());
    match (resolved, a.budget) {
        (Some(r), _) => flag("--budget", r.budget.to_string()),
        (None, Some(b)) => flag("--budget", b.to_string()),
        (None, None) => {}
    }
    let device = match a.swap_device {
        SwapDeviceArg::File => "file",
        SwapDeviceArg::Zram => "zram",
    };
    flag("--swap-device", device.to_owned());
    flag("--swap-size", a.swap_size.to_string());
    flag("--zram-algorithm", a.zram_algorithm.clone());
    let settle = match a.settle {
        SettleArg::Off => "off",
        SettleArg::Wait => "wait",
        SettleArg::DropCaches => "drop-caches",
    };
    flag("--settle", settle.to_owned());
    flag("--launch-every", duration_arg(a.launch_every));
    flag("--duration", duration_arg(a.duration));
    if let Some(d) = a.switch_every {
        flag("--switch-every", duration_arg(d));
    }
    flag("--launches", a.launches.to_string());
    flag("--launch-gap", duration_arg(a.launch_gap));
    flag("--launch-seed", a.launch_seed.to_string());
    flag("--workload", a.workload.display().to_string());
    for (k, val) in &a.defines {
        flag("-D", format!("{k}={val}"));
    }
    let policies = resolved.map_or(&a.policy, |r| &r.policies);
    if !policies.is_empty() {
        let names: Vec<&str> = policies.iter().map(|p| p.name()).collect();
        flag("--policy", names.join(","));
    }
    if let Some(f) = &a.policy_file {
        flag("--policy-file", f.display().to_string());
    }
    flag("--time-scale", a.time_scale.to_string());
    flag("--gc-max-free", a.gc_max_free.to_string());
    flag("--sample-every", duration_arg(a.sample_every));
    if let Some(d) = &a.swap_dir {
        flag("--swap-dir", d.display().to_string());
    }
    flag("--reps", a.reps.to_string());
    flag("--seed", a.seed.to_string());
    for (name, file) in &a.variant {
        flag("--variant", format!("{name}={}", file.display()));
    }
    for s in &a.sweep {
        flag("--sweep", s.to_arg());
    }
    if let Some(s) = a.shard {
        flag("--shard", s.to_string());
    }
    if a.scale != ScaleArg::Default {
        flag("--scale", a.scale.name().to_owned());
    }
    v
}

/// Flags that say where results go or how they are shown, not what is measured: the
/// ones `--config` takes beside it, and that a record leaves out.
#[cfg(test)]
pub(super) const OUTPUT_FLAGS: &[&str] = &["out", "trace", "json", "quiet", "config"];

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    Auto,
    Processes,
    InProcess,
}

/// `--swap-device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SwapDeviceArg {
    File,
    Zram,
}

/// `--settle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SettleArg {
    Off,
    Wait,
    DropCaches,
}
