//! `marvin pressure`: the multi-app experiment (its columns, repetitions, shards and
//! the record of its settings), and `marvin policy show`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use marvin_interpreter::exec::Loaded;
use marvin_interpreter::{link, load, verify};
use marvin_swap::policy::{PolicyConfig, RestoreMode};

use super::program::read_policy;
use super::{EXIT_REJECTED, EXIT_USAGE};
use marvin_console::size::parse_size;
use marvin_console::{errln, out, outln};
use marvin_machine::{cgroup, signals, swapdev};
use marvin_runtime::duration::parse as parse_duration;
use marvin_system::paths;
use marvin_system::plan::{self, Column, Shard, Sweep};
use marvin_system::processes::{self, launcher, ProcessConfig, SettleMode};
use marvin_system::provenance::{self, Host};
use marvin_system::published::Published;
use marvin_system::record::{self, ColumnRecord, Record, WorkloadRecord};
use marvin_system::scale::{self, ScaleArg, DEFAULT_BUDGET};
use marvin_system::workloads::Source;
use marvin_system::{self as system, summary, PolicySeries, Pressure, Summary, SystemConfig};

/// Workload constants the small model sets unless `-D` says otherwise.
const MODEL_DEFINES: &[(&str, i64)] = &[("ARRAYS", 256), ("STRIDE", 256)];

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
    /// The workload program each app runs: a MASM file, or `builtin:buckets` /
    /// `builtin:mixed`, the shipped workloads embedded in the binary.
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
    pub pressure: Pressure,
    /// Overrides the policy file's `[restore] mode` (marvin-eager, marvin-on-demand).
    pub restore: Option<RestoreMode>,
}

impl PolicyChoice {
    pub fn parse(s: &str) -> Result<PolicyChoice, String> {
        let restore = match s.trim() {
            "marvin-eager" => Some(RestoreMode::Eager),
            "marvin-on-demand" => Some(RestoreMode::OnDemand),
            other => {
                return Pressure::parse(other)
                    .map(|pressure| PolicyChoice {
                        pressure,
                        restore: None,
                    })
                    .map_err(|e| format!("{e}; or marvin-eager, marvin-on-demand"))
            }
        };
        Ok(PolicyChoice {
            pressure: Pressure::Marvin,
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
struct Standalone {
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
struct Resolved {
    mode: &'static str,
    policies: Vec<PolicyChoice>,
    budget: usize,
}

/// A duration as a flag takes it, exactly.
fn duration_arg(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}ns", d.as_nanos())
    }
}

/// A byte size as a flag takes it, exactly: in g, m or k where it is a whole number.
fn size_arg(bytes: usize) -> String {
    for (unit, shift) in [("g", 30), ("m", 20), ("k", 10)] {
        if bytes > 0 && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Every setting of the experiment as `marvin pressure` arguments (the output flags
/// and `--config` left out), with the resolved mode, policies and budget when given.
fn to_args(a: &PressureArgs, resolved: Option<&Resolved>) -> Vec<String> {
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
const OUTPUT_FLAGS: &[&str] = &["out", "trace", "json", "quiet", "config"];

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

#[derive(Debug, Subcommand)]
pub enum PolicyCmd {
    /// Print the default Marvin swap policy as TOML, every knob documented.
    Show {
        /// Print the policy `marvin pressure` runs Marvin with when no --policy-file is
        /// given (before --time-scale, which scales every period).
        #[arg(long)]
        experiment: bool,
        /// With --experiment: the policy of this mode's experiment (default: the mode
        /// `marvin pressure` would choose here).
        #[arg(long, value_enum, default_value = "auto", requires = "experiment")]
        mode: ModeArg,
    },
    /// Check a policy file and print it back with every knob.
    Check { file: PathBuf },
}

pub fn policy(cmd: &PolicyCmd) -> anyhow::Result<i32> {
    match cmd {
        PolicyCmd::Show {
            experiment: false, ..
        } => out!("{}", PolicyConfig::default().to_toml_string())?,
        PolicyCmd::Show {
            experiment: true,
            mode,
        } => {
            let processes = match mode {
                ModeArg::Processes => true,
                ModeArg::InProcess => false,
                ModeArg::Auto => cgroup::Hierarchy::available().is_ok(),
            };
            let (name, policy) = if processes {
                ("the process mode", process_model_policy())
            } else {
                ("the in-process model", model_policy())
            };
            outln!(
                "# The policy marvin pressure runs Marvin with in {name} when no --policy-file\n\
                 # is given: the published settings, except the saver's periods (see\n\
                 # docs/experiments.md). The experiment scales every period by --time-scale;\n\
                 # give this file, edited, to --policy-file to change one knob.\n"
            )?;
            out!("{}", policy.to_toml_string())?
        }
        PolicyCmd::Check { file } => match read_policy(file) {
            Ok(p) => out!("{}", p.to_toml_string())?,
            Err(code) => return Ok(code),
        },
    }
    Ok(0)
}

/// The smallest `--budget`: below it not even one app's heap fits.
pub const MIN_BUDGET: usize = 1 << 20;

/// Checks every flag's range and every output path before anything runs; the message
/// names the flag.
fn check_args(a: &PressureArgs) -> Result<(), String> {
    if a.apps == 0 {
        return Err("--apps must be at least 1 (found 0)".into());
    }
    if !(a.time_scale > 0.0 && a.time_scale.is_finite()) {
        return Err(format!(
            "--time-scale must be a positive, finite number (found {})",
            a.time_scale
        ));
    }
    if let Some(b) = a.budget {
        if b < MIN_BUDGET {
            return Err(format!(
                "--budget must be at least 1m (found {b} bytes): no app fits in less"
            ));
        }
    }
    for (flag, d) in [
        ("--duration", Some(a.duration)),
        ("--sample-every", Some(a.sample_every)),
        ("--switch-every", a.switch_every),
    ] {
        if d == Some(Duration::ZERO) {
            return Err(format!("{flag} must be longer than zero"));
        }
    }
    if a.gc_max_free == 0 {
        return Err("--gc-max-free must be more than zero bytes".into());
    }
    if a.swap_size < MIN_BUDGET {
        return Err(format!(
            "--swap-size must be at least 1m (found {} bytes)",
            a.swap_size
        ));
    }
    if let Some(d) = &a.out {
        paths::check_output_dir("--out", d).map_err(|e| e.to_string())?;
    }
    if let Some(f) = &a.trace {
        paths::check_output_file("--trace", f).map_err(|e| e.to_string())?;
    }
    if let Some(d) = &a.swap_dir {
        paths::check_swap_dir("--swap-dir", d).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Room a run needs in the temporary root (or `--swap-dir`) beside its swap: the
/// workload written out, the apps' directories, reclaim tables and logs.
const RUN_DIR_ROOM: u64 = 16 << 20;

/// About what the results of `runs` runs take in `--out`: the figures, and per run its
/// summary, samples and app records (several times what the shipped workloads write:
/// a default experiment's directory holds about 0.7 MiB).
fn out_room(a: &PressureArgs, runs: usize) -> u64 {
    let phase = a.launches as f64 * (a.launch_gap.as_secs_f64() + 1.0);
    // The System samples at most once per loop tick (20 ms).
    let every = a.sample_every.as_secs_f64().max(0.02);
    let samples = ((a.duration.as_secs_f64() + phase) / every).ceil() as u64;
    let per_run = (256 << 10) + samples * 1024 + a.apps as u64 * (2 << 10);
    (4 << 20) + runs as u64 * per_run
}

/// Checks that the file systems the run writes to have room for it before anything is
/// set up: the temporary root (or `--swap-dir`) for the policies' directories and their
/// swap (each swapping policy's files at most `--swap-size`, the policies one after the
/// other; kernel-swap's swap file exactly that, never on a tmpfs, where the kernel does
/// not swap to a file), and `--out` for the results. The message names the flag (or
/// TMPDIR) and the path.
fn check_room(
    a: &PressureArgs,
    processes: bool,
    columns: &[Column],
    runs: &[plan::Run],
) -> Result<(), paths::PathError> {
    let temp = std::env::temp_dir();
    paths::check_output_dir("TMPDIR", &temp)?;
    let (name, root) = match &a.swap_dir {
        Some(d) => ("--swap-dir", d.clone()),
        None => ("TMPDIR", temp),
    };
    let mut swapping: Vec<&str> = Vec::new();
    let mut swap_file = false;
    for r in runs {
        let p = columns[r.column].pressure;
        let files = match p {
            Pressure::Kill => false,
            Pressure::KernelSwap => a.swap_device == SwapDeviceArg::File,
            Pressure::PageSwap | Pressure::Marvin => true,
        };
        swap_file |= processes && p == Pressure::KernelSwap && files;
        if files && !swapping.contains(&p.name()) {
            swapping.push(p.name());
        }
    }
    let zram = processes
        && a.swap_device == SwapDeviceArg::Zram
        && runs
            .iter()
            .any(|r| columns[r.column].pressure == Pressure::KernelSwap);
    if zram {
        if let Err(e) = swapdev::zram_free() {
            return Err(paths::PathError {
                flag: "--swap-device".to_owned(),
                path: "zram".to_owned(),
                reason: e.to_string(),
            });
        }
    }
    if swap_file && paths::on_tmpfs(&root) {
        return Err(paths::PathError {
            flag: name.to_owned(),
            path: root.display().to_string(),
            reason: "is on a tmpfs, where the kernel cannot swap to kernel-swap's swap file; \
                     give --swap-dir on a disk (or --swap-device zram)"
                .to_owned(),
        });
    }
    let mut need = RUN_DIR_ROOM;
    let mut what = "the run's directories".to_owned();
    if !swapping.is_empty() {
        need += a.swap_size as u64;
        what = format!(
            "{}'s swap (--swap-size {} MiB) and the run's directories",
            swapping.join(", "),
            a.swap_size >> 20
        );
    }
    paths::check_room(name, &root, need, &what)?;
    if let Some(out) = &a.out {
        paths::check_room(
            "--out",
            out,
            out_room(a, runs.len()),
            "the results and figures",
        )?;
    }
    Ok(())
}

/// The small model's policy: the published settings, except that the background write
/// task runs at the foreground period. The published experiment launches an app every
/// 10 minutes, so its 30 s background period still gives about twenty saver runs between
/// launches; the model launches every 1.5 s (a 400x compression, against 10x for every
/// other period), and keeps several saver runs between launches this way. Restore is on
/// demand: it gave the better median launch in both modes (docs/experiments.md,
/// "Launches: hot, warm and cold"); `--policy marvin-eager` runs the published eager one.
pub fn model_policy() -> PolicyConfig {
    let mut p = PolicyConfig::default();
    p.saver.background_period = p.saver.foreground_period;
    p.restore.mode = RestoreMode::OnDemand;
    p
}

/// The process mode's policy: the model's, with the background write task every second
/// (100 ms at the default time scale) in both states. In the process mode the kernel
/// charges every byte an app holds, and a background app's new objects can be reclaimed
/// only once they are saved: the published experiment's 30 s period gave about twenty
/// saver runs between two launches (one every 10 minutes), 1 s gives fourteen between the
/// model's launches (every 1.4 s), where 5 s gave three.
pub fn process_model_policy() -> PolicyConfig {
    let mut p = model_policy();
    p.saver.foreground_period = Duration::from_secs(1);
    p.saver.background_period = Duration::from_secs(1);
    p
}

/// The workload's defines: the model's defaults, the user's, and every `*_MS` constant
/// scaled by the time scale.
fn defines(
    a: &PressureArgs,
    program: &marvin_interpreter::isa::Program,
    seed: u64,
) -> Vec<(String, i64)> {
    let mut d: Vec<(String, i64)> = Vec::new();
    if program.consts.iter().any(|c| c.name == "SEED") {
        d.push(("SEED".to_owned(), seed as i64));
    }
    for (k, v) in MODEL_DEFINES {
        if program.consts.iter().any(|c| c.name == *k) {
            d.push((k.to_string(), *v));
        }
    }
    for c in &program.consts {
        if c.name.ends_with("_MS") {
            d.push((
                c.name.clone(),
                ((c.value as f64) * a.time_scale).round() as i64,
            ));
        }
    }
    for (k, v) in &a.defines {
        d.retain(|(n, _)| n != k);
        d.push((k.clone(), *v));
    }
    d
}

/// Applies `--scale paper` to `a`: every setting no flag gave is set to the scale's
/// choice, derived from the app size of the workload `program` (with `-D ARRAYS=2560`
/// unless given). Returns one choice per setting, with its reason (a given or recorded
/// setting says so), and the published results to show beside the run's. An error when
/// the workload is not of the shipped shape (its app size unknown).
fn apply_scale(
    a: &mut PressureArgs,
    program: &marvin_interpreter::isa::Program,
    recorded: bool,
) -> Result<(Vec<scale::Choice>, Option<Published>), String> {
    let given_ids = a.given.clone();
    let given = |id: &str| given_ids.iter().any(|g| g == id);
    let arrays_given = a.defines.iter().any(|(k, _)| k == "ARRAYS");
    let kept = |flag: &str| {
        if recorded {
            "as recorded in the --config file".to_owned()
        } else {
            format!("given ({flag}), not the scale's choice")
        }
    };
    let choice = |setting: &str, value: String, reason: String| scale::Choice {
        setting: setting.to_owned(),
        value,
        reason,
    };
    let mut out = Vec::new();
    let early = scale::early(&given, arrays_given);
    if let Some(n) = early.arrays {
        a.defines.push(("ARRAYS".to_owned(), n));
    }
    if let Some(n) = early.apps {
        a.apps = n;
    }
    if let Some(n) = early.gc_max_free {
        a.gc_max_free = n;
    }
    if let Some(x) = early.time_scale {
        a.time_scale = x;
    }
    let defs = defines(a, program, a.seed);
    let value = |name: &str| {
        defs.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
            .or_else(|| {
                program
                    .consts
                    .iter()
                    .find(|c| c.name == name)
                    .map(|c| c.value)
            })
    };
    let Some(app) = scale::app_bytes(value) else {
        return Err(format!(
            "the workload {} has no BUCKETS, ARRAYS and ARRAY_BYTES constants, so its app size \
             is unknown; use builtin:buckets or builtin:mixed, or --scale default with every \
             setting given",
            a.workload.display()
        ));
    };
    let mixed = value("MIXED").unwrap_or(0) != 0;
    let arrays = value("ARRAYS").unwrap_or(0);
    out.push(choice(
        "-D ARRAYS",
        arrays.to_string(),
        match early.arrays {
            Some(_) => format!(
                "the published bucket (the model's is {}): {} per app{}",
                scale::MODEL_ARRAYS,
                scale::mib(app),
                if mixed {
                    " with the 4 KB/1 MB mix"
                } else {
                    ", about 230 MB"
                }
            ),
            None => format!("{}: {} per app", kept("-D ARRAYS"), scale::mib(app)),
        },
    ));
    out.push(choice(
        "apps",
        a.apps.to_string(),
        match early.apps {
            Some(_) => "the published experiment's 30 apps".to_owned(),
            None => kept("--apps"),
        },
    ));
    out.push(choice(
        "gc-max-free",
        size_arg(a.gc_max_free),
        match early.gc_max_free {
            Some(_) => "ART's 8 MiB largest gap between collections, the published heap's \
                        (the model scales it down with its app to 1 MiB)"
                .to_owned(),
            None => kept("--gc-max-free"),
        },
    ));
    out.push(choice(
        "time-scale",
        a.time_scale.to_string(),
        match early.time_scale {
            Some(_) => "every period compressed 10x, as in the default run (the launch \
                        interval and duration below are stretched instead)"
                .to_owned(),
            None => kept("--time-scale"),
        },
    ));
    let late = scale::late(
        &given,
        app,
        a.apps,
        a.gc_max_free,
        a.budget.map(|b| b as u64),
    );
    let app_gap = format!(
        "{} of arrays and a {} gap",
        scale::mib(app),
        scale::mib(a.gc_max_free as u64)
    );
    if let Some(b) = late.budget {
        a.budget = Some(b as usize);
    }
    let budget = a.budget.unwrap_or(DEFAULT_BUDGET) as u64;
    out.push(choice(
        "budget",
        size_arg(budget as usize),
        match late.budget {
            Some(_) => format!(
                "about {} apps of {app_gap}, rounded up to 16 MiB (as the default 240 MiB \
                 holds ten of the model's apps), as the published phone held about ten under \
                 the killer",
                scale::APPS_HELD
            ),
            None => kept("--budget"),
        },
    ));
    if let Some(s) = late.swap_size {
        a.swap_size = s as usize;
    }
    out.push(choice(
        "swap-size",
        size_arg(a.swap_size),
        match late.swap_size {
            Some(_) => format!(
                "what kernel swap must hold with every app alive ({} x {app_gap} less the \
                 limit), plus one app, rounded up to a GiB",
                a.apps
            ),
            None => kept("--swap-size"),
        },
    ));
    let ratio = app as f64 / scale::model_app_bytes() as f64;
    if let Some(d) = late.launch_every {
        a.launch_every = d;
    }
    out.push(choice(
        "launch-every",
        duration_arg(a.launch_every),
        match late.launch_every {
            Some(_) => format!(
                "the default 1400ms stretched {ratio:.1}x with the app size, so each app is \
                 built and older ones paged out before the next (an estimate: three policies \
                 in about 25-30 minutes; not yet measured)"
            ),
            None => kept("--launch-every"),
        },
    ));
    if let Some(d) = late.duration {
        a.duration = d;
    }
    out.push(choice(
        "duration",
        duration_arg(a.duration),
        match late.duration {
            Some(_) => format!(
                "the default 50s stretched {ratio:.1}x as the launches are, so all {} apps are \
                 launched within it",
                a.apps
            ),
            None => kept("--duration"),
        },
    ));
    Ok((out, Some(Published { mixed })))
}

pub fn pressure(given: &PressureArgs) -> anyhow::Result<i32> {
    // --config: the recorded experiment, with this invocation's output flags.
    let (mut a, recorded) = match &given.config {
        None => (given.clone(), None),
        Some(path) => match from_record(given, path) {
            Ok(both) => both,
            Err(e) => {
                errln!("error: {e}");
                return Ok(EXIT_USAGE);
            }
        },
    };
    if let Err(e) = check_args(&a) {
        errln!("error: {e}");
        return Ok(EXIT_USAGE);
    }
    let source = match Source::parse(&a.workload) {
        Ok(s) => s,
        Err(e) => {
            errln!("error: --workload: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let bytes = match source.read() {
        Ok(b) => b,
        Err(e) => {
            errln!("error: {e}");
            return Ok(super::EXIT_FAILURE);
        }
    };
    let hash = provenance::content_hash(&bytes);
    if let Some(rec) = &recorded {
        if rec.workload.fnv1a64 != hash {
            errln!(
                "error: the workload {} is not the one recorded (fnv1a64 {} recorded, {hash} now)",
                source.display(),
                rec.workload.fnv1a64
            );
            return Ok(EXIT_USAGE);
        }
    }
    // --scale paper: the settings it derives from the workload's app size, with why.
    let (choices_of_scale, published) = if a.scale == ScaleArg::Paper {
        let program = match load::load_bytes(&source.display(), &bytes) {
            Ok(p) => p,
            Err(d) => {
                errln!("{d}");
                return Ok(EXIT_REJECTED);
            }
        };
        match apply_scale(&mut a, &program, recorded.is_some()) {
            Ok(both) => both,
            Err(e) => {
                errln!("error: --scale paper: {e}");
                return Ok(EXIT_USAGE);
            }
        }
    } else {
        (Vec::new(), None)
    };
    let a = &a;
    // Loads, links with the run's defines and verifies the workload.
    let build = |seed: u64| -> Result<(Loaded, Vec<(String, i64)>), String> {
        let mut program = load::load_bytes(&source.display(), &bytes).map_err(|d| d.to_string())?;
        let defs = defines(a, &program, seed);
        program.link(&defs).map_err(|d| d.to_string())?;
        let vp = verify::verify(program).map_err(|d| d.to_string())?;
        Ok((Loaded::new(vp), defs))
    };
    let first_defs = match build(a.seed) {
        Ok((_, defs)) => defs,
        Err(d) => {
            errln!("{d}");
            return Ok(EXIT_REJECTED);
        }
    };
    let base = match (&a.policy_file, &recorded) {
        (Some(f), None) => match read_policy(f) {
            Ok(p) => p,
            Err(code) => return Ok(code),
        },
        _ => model_policy(),
    };
    let budget = a.budget.unwrap_or(DEFAULT_BUDGET);
    let mode = match choose_mode(a.mode) {
        Ok(m) => m,
        Err(e) => {
            errln!("error: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    // A shard that falls back to the model would sit beside shards of the process mode
    // that other machines run as root: it must say which mode it wants.
    if let (Some(shard), ModeArg::Auto, Mode::InProcess(why)) = (a.shard, a.mode, &mode) {
        errln!(
            "error: --shard {shard}: this shard would run the in-process model ({why}), \
             while shards on machines where it can run (as root, with a memory cgroup) run \
             the process mode, and marvin compare does not merge the two; give --mode \
             in-process to run the model on every shard, or run the shard as root"
        );
        return Ok(EXIT_USAGE);
    }
    // The process mode's own default policy (see process_model_policy).
    let base = match (&a.policy_file, &recorded, &mode) {
        (None, None, Mode::Processes(_)) => process_model_policy(),
        _ => base,
    };
    let choices: Vec<PolicyChoice> = if a.policy.is_empty() {
        let three = match mode {
            Mode::Processes(_) => [Pressure::Kill, Pressure::KernelSwap, Pressure::Marvin],
            Mode::InProcess(_) => [Pressure::Kill, Pressure::PageSwap, Pressure::Marvin],
        };
        three
            .into_iter()
            .map(|pressure| PolicyChoice {
                pressure,
                restore: None,
            })
            .collect()
    } else {
        a.policy.clone()
    };
    let policies: Vec<Pressure> = choices.iter().map(|c| c.pressure).collect();
    let refused = match mode {
        Mode::Processes(_) => Pressure::PageSwap,
        Mode::InProcess(_) => Pressure::KernelSwap,
    };
    if policies.contains(&refused) {
        errln!(
            "error: {} does not run in the {} (the swap baseline there is {})",
            refused.name(),
            mode.name(),
            match mode {
                Mode::Processes(_) => "kernel-swap",
                Mode::InProcess(_) => "page-swap",
            }
        );
        return Ok(EXIT_USAGE);
    }
    let columns = match &recorded {
        Some(rec) => recorded_columns(rec),
        None => new_columns(a, &choices, &base),
    };
    let columns = match columns {
        Ok(c) => c,
        Err(e) => {
            errln!("error: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    // Every column's policy at the run's time scale, before the first run starts.
    for c in &columns {
        if let Err(e) = c.policy.scaled(a.time_scale) {
            errln!(
                "error: --time-scale {}: column {}: {e}",
                a.time_scale,
                c.label
            );
            return Ok(EXIT_USAGE);
        }
    }
    let runs: Vec<plan::Run> = plan::grid(columns.len(), a.reps, a.seed)
        .into_iter()
        .filter(|r| a.shard.is_none_or(|s| s.contains(r.index)))
        .collect();
    if runs.is_empty() {
        errln!(
            "error: shard {} of a grid of {} runs is empty (use at most {} shards)",
            a.shard.map(|s| s.to_string()).unwrap_or_default(),
            columns.len() * a.reps as usize,
            columns.len() * a.reps as usize
        );
        return Ok(EXIT_USAGE);
    }
    let resolved = Resolved {
        mode: match mode {
            Mode::Processes(_) => "processes",
            Mode::InProcess(_) => "in-process",
        },
        policies: choices.clone(),
        budget,
    };
    let cfg = SystemConfig {
        apps: a.apps,
        budget,
        launch_every: a.launch_every,
        duration: a.duration,
        switch_every: a.switch_every,
        launch: system::launch::LaunchPlan {
            launches: a.launches,
            gap: a.launch_gap,
            seed: a.launch_seed,
            ..system::launch::LaunchPlan::default()
        },
        time_scale: a.time_scale,
        sample_every: a.sample_every,
        gc_max_free: a.gc_max_free,
        swap_dir: a.swap_dir.clone(),
        tracer: a
            .trace
            .as_ref()
            .map(|_| marvin_runtime::trace::Tracer::new()),
        seed: a.seed,
    };
    let processes_mode = matches!(mode, Mode::Processes(_));
    // Room for everything the run writes, before anything is set up.
    if let Err(e) = check_room(a, processes_mode, &columns, &runs) {
        errln!("error: {e}");
        return Ok(EXIT_USAGE);
    }
    for c in &choices_of_scale {
        errln!("{}", c.line());
    }
    errln!("{}", mode.describe(budget));
    // Where the run makes its temporary directories: what its guardian and the start-up
    // sweep look through for what dead runs left.
    let mut temp_roots = vec![std::env::temp_dir()];
    temp_roots.extend(a.swap_dir.iter().cloned());
    // Started before anything is set up and told last that the run cleaned up (it is
    // dropped last): if the run is killed, it removes what the run left.
    let _guardian = match launcher::app_exe()
        .and_then(|exe| system::guardian::Guardian::spawn(&exe, processes_mode, &temp_roots))
    {
        Ok(g) => Some(g),
        Err(e) => {
            errln!(
                "marvin: no guardian for this run ({e}); if it is killed, the next run removes what it leaves"
            );
            None
        }
    };
    // The process mode's children read the workload from a file: a built-in one is
    // written out for the run.
    let workload_dir = system::tempdirs::create("marvin-workload-", None, None)?;
    let workload_path = match &source {
        Source::File(p) => {
            std::fs::canonicalize(p).with_context(|| format!("the workload {}", p.display()))?
        }
        Source::Builtin(name) => {
            let p = workload_dir.path().join(format!("{name}.masm"));
            std::fs::write(&p, &bytes)?;
            p
        }
    };
    // SIGINT, SIGTERM and SIGHUP stop the run: the policy running ends, its apps,
    // directories (and in the process mode its cgroup and swap) are removed, nothing
    // more is written, and marvin exits 128 + the signal.
    signals::install().context("installing the stop-signal handlers")?;
    let bars = std::io::stderr().is_terminal() && !a.quiet;
    let lines = !std::io::stderr().is_terminal() && !a.quiet;
    // The process mode holds the machine from the first policy to the last, so no other
    // real-mode run comes in between two of them.
    let _machine = match &mode {
        Mode::Processes(_) => Some(marvin_machine::MachineLock::acquire()?),
        Mode::InProcess(_) => None,
    };
    // What runs that died left: in the process mode their cgroups (killing their apps)
    // and swap, under the machine lock, then in both modes their temporary directories.
    if processes_mode {
        system::guardian::sweep_machine().context("removing what earlier runs left")?;
    }
    for root in &temp_roots {
        system::tempdirs::sweep(root, None);
    }
    // The record of the experiment with the runs a directory holds.
    let args = to_args(a, Some(&resolved));
    let command = std::iter::once("marvin pressure".to_owned())
        .chain(args.iter().map(|x| record::shell_quote(x)))
        .collect::<Vec<_>>()
        .join(" ");
    let user_defs: Vec<String> = a.defines.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let record = |held: &[plan::Run]| Record {
        command: command.clone(),
        args: args.clone(),
        mode: resolved.mode.to_owned(),
        marvin_version: env!("CARGO_PKG_VERSION").to_owned(),
        commit: provenance::commit().to_owned(),
        shard: a.shard.map(|s| s.to_string()),
        workload: WorkloadRecord {
            source: source.display(),
            fnv1a64: hash.clone(),
            overrides: user_defs.clone(),
            defines: first_defs.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        },
        host: Host::current(),
        columns: columns
            .iter()
            .map(|c| ColumnRecord {
                label: c.label.clone(),
                pressure: c.pressure.name().to_owned(),
                policy: c.policy.clone(),
            })
            .collect(),
        runs: held.to_vec(),
        scale: a.scale.name().to_owned(),
        scale_settings: choices_of_scale.clone(),
    };
    let mut summaries: Vec<Summary> = Vec::new();
    let mut series: Vec<PolicySeries> = Vec::new();
    for (done, run) in runs.iter().enumerate() {
        let column = &columns[run.column];
        let label = if a.reps > 1 {
            format!("{} #{}", column.label, run.rep)
        } else {
            column.label.clone()
        };
        let bar = if bars {
            ProgressBar::new(a.duration.as_millis() as u64)
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template("{prefix:>14} [{bar:30}] {elapsed:>4} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.clone());
        // The process mode counts every death (the killer's, the kernel's OOM killer's,
        // a signal's, a crash); the model's apps die only by its killer.
        let deaths = if matches!(mode, Mode::Processes(_)) {
            "deaths"
        } else {
            "kills"
        };
        let progress =
            |_: Pressure, t: Duration, alive: u32, active: u32, kills: u64, bytes: u64| {
                bar.set_position(t.as_millis() as u64);
                bar.set_message(format!(
                "alive {alive:>3}  active {active:>3}  {deaths} {kills:>3}  resident {:>6.1} MiB",
                bytes as f64 / (1u64 << 20) as f64
            ));
            };
        let started = Instant::now();
        let (loaded, defs) = match build(run.seed) {
            Ok(b) => b,
            Err(d) => {
                errln!("{d}");
                return Ok(EXIT_REJECTED);
            }
        };
        let policy = Arc::new(
            column
                .policy
                .scaled(a.time_scale)
                .map_err(|e| anyhow::anyhow!("{}: {e}", column.label))?,
        );
        let cfg = SystemConfig {
            seed: run.seed,
            ..cfg.clone()
        };
        let out = match &mode {
            Mode::InProcess(_) => system::run(
                &cfg,
                &[column.pressure],
                Arc::new(loaded),
                policy,
                &progress,
            ),
            Mode::Processes(_) => {
                let pcfg = ProcessConfig {
                    headroom: ProcessConfig::default_headroom(budget as u64),
                    system: cfg.clone(),
                    exe: launcher::app_exe()?,
                    workload: workload_path.clone(),
                    defines: defs,
                    policy,
                    swap_device: match a.swap_device {
                        SwapDeviceArg::File => swapdev::Kind::File,
                        SwapDeviceArg::Zram => swapdev::Kind::Zram,
                    },
                    swap_bytes: a.swap_size as u64,
                    settle: match a.settle {
                        SettleArg::Off => SettleMode::Off,
                        SettleArg::Wait => SettleMode::Wait,
                        SettleArg::DropCaches => SettleMode::DropCaches,
                    },
                };
                processes::run(&pcfg, &[column.pressure], &progress)
            }
        };
        bar.finish();
        if let Some(sig) = signals::stop_requested() {
            match (&a.out, summaries.len()) {
                (Some(dir), n) if n > 0 => errln!(
                    "marvin: stopped by signal {sig}; temporary files removed; the {n} finished \
                     run(s) are in {} (no figures)",
                    dir.display()
                ),
                _ => errln!(
                    "marvin: stopped by signal {sig}; temporary files removed, no results written"
                ),
            }
            return Ok(128 + sig);
        }
        let mut out = match out {
            Ok(o) => o,
            Err(e) => {
                if !summaries.is_empty() {
                    match &a.out {
                        Some(dir) => errln!(
                            "marvin: the {} finished run(s) before this one are written in {}",
                            summaries.len(),
                            dir.display()
                        ),
                        None => {
                            errln!(
                                "marvin: the {} run(s) finished before this one:",
                                summaries.len()
                            );
                            out!("{}", summary::table(&summaries))?;
                        }
                    }
                }
                return Err(e.context(format!("running {label}")));
            }
        };
        let (mut s, mut ser) = out.pop().context("a run gave no result")?;
        s.label = column.label.clone();
        // marvin-eager and marvin-on-demand name their policy too (variants keep marvin).
        if !column.label.contains(':') {
            s.policy = column.label.clone();
        }
        s.rep = run.rep;
        s.seed = run.seed;
        ser.policy = column.label.clone();
        ser.rep = run.rep;
        let line = format!(
            "finished {}/{}: {label}: active {} peak / {} final, alive {} final, {}, {:.1} s",
            done + 1,
            runs.len(),
            s.peak_active,
            s.final_active,
            s.final_alive,
            deaths_text(&s),
            started.elapsed().as_secs_f64()
        );
        summaries.push(s);
        series.push(ser);
        // What is finished is written at once (before the run's line says it finished): a
        // later run's failure loses none of it.
        if let Some(dir) = &a.out {
            system::write_data(dir, &summaries, &series)?;
            record(&runs[..=done]).write(&dir.join("config.toml"))?;
        }
        if lines {
            errln!("{line}");
        }
    }
    if let (Some(tracer), Some(path)) = (&cfg.tracer, &a.trace) {
        tracer
            .write_to(path)
            .with_context(|| format!("writing the trace {}", path.display()))?;
    }
    let warnings = guards(&summaries, budget as u64);
    for w in &warnings {
        errln!("warning: {w}");
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&summaries)?)?;
    } else {
        outln!("{}", mode.title(budget))?;
        out!("{}", summary::table_with(&summaries, published.as_ref()))?;
        for w in &warnings {
            outln!("warning: {w}")?;
        }
    }
    if let Some(dir) = &a.out {
        let counted = match mode {
            Mode::Processes(_) => system::plot::Counted::Kernel,
            Mode::InProcess(_) => system::plot::Counted::Runtime,
        };
        let caption = format!(
            "{}, {} apps, budget {} MiB, a launch every {}, {} per run, time scale {}, \
             workload {}, {} repetition(s), seed {}, commit {}",
            resolved.mode,
            a.apps,
            budget >> 20,
            duration_arg(a.launch_every),
            duration_arg(a.duration),
            a.time_scale,
            source.display(),
            a.reps,
            a.seed,
            provenance::commit()
        );
        let mut files = system::write_data(dir, &summaries, &series)?;
        let config = dir.join("config.toml");
        record(&runs).write(&config)?;
        files.push(config);
        files.extend(system::write_figures(
            dir,
            &summaries,
            &series,
            budget as u64,
            counted,
            &caption,
            published.as_ref(),
        )?);
        errln!("wrote {}: {}", dir.display(), system::file_names(&files));
    }
    if let Some(path) = &a.trace {
        errln!("wrote {}", path.display());
    }
    Ok(0)
}

/// The experiment a config record holds, with `given`'s output flags; an error when
/// `given` sets anything else (the record decides every setting).
fn from_record(
    given: &PressureArgs,
    path: &std::path::Path,
) -> Result<(PressureArgs, Option<Record>), String> {
    let defaults = PressureArgs::parse_args(&[]).map_err(|e| e.to_string())?;
    let mut bare = given.clone();
    (bare.out, bare.trace, bare.json, bare.quiet, bare.config) = (None, None, false, false, None);
    if to_args(&bare, None) != to_args(&defaults, None) {
        return Err(format!(
            "--config takes every setting from {}; beside it give only --out, --trace, --json or --quiet",
            path.display()
        ));
    }
    let rec = Record::read(path)?;
    let mut a = PressureArgs::parse_args(&rec.args).map_err(|e| {
        format!(
            "{}: the recorded arguments do not parse: {e}",
            path.display()
        )
    })?;
    a.out.clone_from(&given.out);
    a.trace.clone_from(&given.trace);
    a.json = given.json;
    a.quiet = given.quiet;
    Ok((a, Some(rec)))
}

/// The columns of a new experiment: its policies in order, Marvin's variants (their
/// files read now) and sweeps applied to the plain `marvin`; `marvin-eager` and
/// `marvin-on-demand` are marvin columns with the restore mode set.
fn new_columns(
    a: &PressureArgs,
    choices: &[PolicyChoice],
    base: &PolicyConfig,
) -> Result<Vec<Column>, String> {
    let mut variants = Vec::new();
    for (name, file) in &a.variant {
        let p = PolicyConfig::from_file(file).map_err(|e| format!("--variant {name}: {e}"))?;
        variants.push((name.clone(), p));
    }
    let plain_marvin = choices
        .iter()
        .any(|c| c.pressure == Pressure::Marvin && c.restore.is_none());
    if (!variants.is_empty() || !a.sweep.is_empty()) && !plain_marvin {
        return Err(
            "--variant and --sweep vary Marvin's policy, but marvin is not among the policies run"
                .into(),
        );
    }
    let mut out = Vec::new();
    for c in choices {
        let marvin = c.pressure == Pressure::Marvin;
        match c.restore {
            None => out.extend(plan::columns(
                &[c.pressure],
                base,
                if marvin { &variants } else { &[] },
                if marvin { &a.sweep } else { &[] },
            )?),
            Some(mode) => {
                let mut policy = base.clone();
                policy.restore.mode = mode;
                out.push(Column {
                    label: c.name().to_owned(),
                    pressure: Pressure::Marvin,
                    policy,
                });
            }
        }
    }
    Ok(out)
}

/// The columns a record holds, policies as recorded.
fn recorded_columns(rec: &Record) -> Result<Vec<Column>, String> {
    rec.columns
        .iter()
        .map(|c| {
            Ok(Column {
                label: c.label.clone(),
                pressure: Pressure::parse(&c.pressure)?,
                policy: c.policy.clone(),
            })
        })
        .collect()
}

/// Warnings about an experiment that measured nothing: the budget never reached, or
/// no policy that acted (no kill, reclaim, page-out or kernel swap-out), so every
/// column ran unpressed and they differ by noise only.
pub fn guards(runs: &[Summary], budget: u64) -> Vec<String> {
    if runs.is_empty() {
        return Vec::new();
    }
    let usage = |s: &Summary| {
        if s.mode == "processes" {
            s.peak_cgroup_bytes
        } else {
            s.peak_committed_bytes.max(s.peak_accounted_bytes)
        }
    };
    let acted = |s: &Summary| {
        s.kills + s.lmk_kills + s.kernel_oom_kills > 0
            || s.reclaimed_bytes + s.swap_out_bytes + s.external_reclaimed_bytes > 0
    };
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let peak = runs.iter().map(usage).max().unwrap_or(0);
    let reached = runs
        .iter()
        .any(|s| acted(s) || s.reclaim_requests > 0 || usage(s) >= budget - budget / 20);
    let mut out = Vec::new();
    if !reached {
        out.push(format!(
            "the budget ({:.1} MiB) was never reached: the most any run used was {:.1} MiB, \
             so no policy had anything to do and the columns differ by noise only; \
             raise --apps or lower --budget",
            mib(budget),
            mib(peak)
        ));
    } else if !runs.iter().any(acted) {
        out.push(
            "no policy acted (no kill, no reclaim, no page-out, no kernel swap-out): the \
             columns differ by noise only; raise --apps or lower --budget"
                .to_owned(),
        );
    }
    for s in runs.iter().filter(|s| s.kernel_oom_kills > 0) {
        let label = if s.label.is_empty() {
            &s.policy
        } else {
            &s.label
        };
        let rep = if runs.iter().any(|r| r.rep > 0) {
            format!(" #{}", s.rep)
        } else {
            String::new()
        };
        out.push(format!(
            "{label}{rep}: {} kernel OOM kill{}: the System did not keep the group off the \
             kernel's OOM killer",
            s.kernel_oom_kills,
            if s.kernel_oom_kills == 1 { "" } else { "s" }
        ));
    }
    out
}

/// A run's deaths for its progress line: the model's kills, or the process mode's
/// deaths with their parts.
fn deaths_text(s: &Summary) -> String {
    if s.mode != "processes" {
        return format!("{} kills", s.kills);
    }
    format!(
        "{} death{} ({} by the killer, {} kernel OOM, {} signalled, {} crashed)",
        s.deaths,
        if s.deaths == 1 { "" } else { "s" },
        s.lmk_kills,
        s.oom_killed_apps,
        s.signalled_apps,
        s.crashed_apps
    )
}

/// The mode a run takes, with why.
enum Mode {
    /// The kernel enforces the budget on a cgroup of this version.
    Processes(cgroup::Version),
    /// The model; the text says why (asked for, or why the process mode cannot run).
    InProcess(String),
}

impl Mode {
    fn name(&self) -> &'static str {
        match self {
            Mode::Processes(_) => "process mode",
            Mode::InProcess(_) => "in-process model",
        }
    }

    /// The first line of a run.
    fn describe(&self, budget: usize) -> String {
        match self {
            Mode::Processes(v) => format!(
                "mode: processes: every app its own process in one memory cgroup ({}), \
                 hard limit {} MiB enforced by the kernel",
                v.name(),
                budget >> 20
            ),
            Mode::InProcess(why) => format!(
                "mode: in-process model ({why}): all apps in this process under a {} MiB \
                 budget the runtime counts itself; the kernel does not enforce it",
                budget >> 20
            ),
        }
    }

    /// The table's title.
    fn title(&self, budget: usize) -> String {
        match self {
            Mode::Processes(v) => format!(
                "processes, kernel-enforced limit {} MiB ({})",
                budget >> 20,
                v.name()
            ),
            Mode::InProcess(_) => format!(
                "in-process model, runtime-counted budget {} MiB (not kernel-enforced)",
                budget >> 20
            ),
        }
    }
}

/// The process mode where it can run (root and a memory controller), else the model.
fn choose_mode(asked: ModeArg) -> anyhow::Result<Mode> {
    match asked {
        ModeArg::InProcess => Ok(Mode::InProcess("--mode in-process".into())),
        ModeArg::Processes => match cgroup::Hierarchy::available() {
            Ok(h) => Ok(Mode::Processes(h.version)),
            Err(e) => anyhow::bail!("the process mode cannot run here: {e}"),
        },
        ModeArg::Auto => Ok(match cgroup::Hierarchy::available() {
            Ok(h) => Mode::Processes(h.version),
            Err(e) => Mode::InProcess(format!("the process mode cannot run here: {e}")),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn args(list: &[&str]) -> PressureArgs {
        let owned: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        PressureArgs::parse_args(&owned).unwrap()
    }

    /// A command line that sets every flag that is not an output flag.
    const EVERY_FLAG: &[&str] = &[
        "--mode",
        "in-process",
        "--apps",
        "3",
        "--budget",
        "20m",
        "--swap-device",
        "zram",
        "--swap-size",
        "64m",
        "--launch-every",
        "1500us",
        "--duration",
        "2s",
        "--switch-every",
        "300ms",
        "--launches",
        "3",
        "--launch-gap",
        "200ms",
        "--launch-seed",
        "4",
        "--workload",
        "builtin:mixed",
        "-D",
        "ARRAYS=4",
        "-D",
        "STRIDE=8",
        "--policy",
        "kill,marvin",
        "--policy-file",
        "p.toml",
        "--time-scale",
        "0.05",
        "--gc-max-free",
        "256k",
        "--sample-every",
        "100ms",
        "--swap-dir",
        "/tmp/x",
        "--reps",
        "2",
        "--seed",
        "9",
        "--variant",
        "a=a.toml",
        "--variant",
        "b=b.toml",
        "--sweep",
        "coldness.window_rounds=1,2",
        "--shard",
        "1/2",
        "--scale",
        "paper",
    ];

    #[test]
    fn every_setting_flag_is_recorded_and_reads_back() {
        let full = args(EVERY_FLAG);
        let recorded = to_args(&full, None);
        for arg in Standalone::command().get_arguments() {
            let name = match (arg.get_long(), arg.get_short()) {
                (Some(long), _) => format!("--{long}"),
                (None, Some(short)) => format!("-{short}"),
                (None, None) => continue,
            };
            if arg.get_long().is_some_and(|l| OUTPUT_FLAGS.contains(&l)) || name == "--help" {
                continue;
            }
            assert!(
                recorded.contains(&name),
                "{name} is not recorded by to_args (add it there and to EVERY_FLAG)"
            );
        }
        // What is recorded parses back to the same settings.
        let again = PressureArgs::parse_args(&recorded).unwrap();
        assert_eq!(to_args(&again, None), recorded);
        assert_eq!(again.launch_every, Duration::from_micros(1500));
        assert_eq!(again.defines, full.defines);
    }

    fn buckets() -> marvin_interpreter::isa::Program {
        let source = Source::parse(std::path::Path::new("builtin:buckets")).unwrap();
        load::load_bytes("builtin:buckets", &source.read().unwrap()).unwrap()
    }

    #[test]
    fn scale_paper_derives_every_setting_it_is_not_given() {
        let mut a = args(&["--scale", "paper"]);
        let (choices, published) = apply_scale(&mut a, &buckets(), false).unwrap();
        assert_eq!(published, Some(Published { mixed: false }));
        assert_eq!(a.apps, 30);
        assert_eq!(a.budget, Some(2272 << 20));
        assert_eq!(a.swap_size, 5 << 30);
        assert_eq!(a.launch_every, Duration::from_secs(14));
        assert_eq!(a.duration, Duration::from_secs(500));
        assert_eq!(a.time_scale, 0.1);
        assert_eq!(a.gc_max_free, 8 << 20);
        assert_eq!(a.defines, [("ARRAYS".to_owned(), 2560)]);
        let settings: Vec<&str> = choices.iter().map(|c| c.setting.as_str()).collect();
        assert_eq!(
            settings,
            [
                "-D ARRAYS",
                "apps",
                "gc-max-free",
                "time-scale",
                "budget",
                "swap-size",
                "launch-every",
                "duration"
            ]
        );
        assert!(choices.iter().all(|c| !c.reason.contains("given")));
        // The record of the run re-parses to the same settings, every one kept.
        let mut again = PressureArgs::parse_args(&to_args(&a, None)).unwrap();
        let (kept, _) = apply_scale(&mut again, &buckets(), true).unwrap();
        assert_eq!(to_args(&again, None), to_args(&a, None));
        assert!(
            kept.iter().all(|c| c.reason.contains("recorded")),
            "{kept:?}"
        );
        // The mix.
        let mut m = args(&["--scale", "paper", "--workload", "builtin:mixed"]);
        let source = Source::parse(std::path::Path::new("builtin:mixed")).unwrap();
        let program = load::load_bytes("builtin:mixed", &source.read().unwrap()).unwrap();
        let (_, published) = apply_scale(&mut m, &program, false).unwrap();
        assert_eq!(published, Some(Published { mixed: true }));
    }

    #[test]
    fn every_flag_given_beside_scale_paper_wins() {
        let mut a = args(&[
            "--scale",
            "paper",
            "--apps",
            "2",
            "--budget",
            "64m",
            "--swap-size",
            "2g",
            "--launch-every",
            "50ms",
            "--duration",
            "2s",
            "--time-scale",
            "0.05",
            "--gc-max-free",
            "256k",
            "-D",
            "ARRAYS=8",
        ]);
        let (choices, _) = apply_scale(&mut a, &buckets(), false).unwrap();
        assert_eq!(a.apps, 2);
        assert_eq!(a.budget, Some(64 << 20));
        assert_eq!(a.swap_size, 2 << 30);
        assert_eq!(a.launch_every, Duration::from_millis(50));
        assert_eq!(a.duration, Duration::from_secs(2));
        assert_eq!(a.time_scale, 0.05);
        assert_eq!(a.gc_max_free, 256 << 10);
        assert_eq!(a.defines, [("ARRAYS".to_owned(), 8)]);
        assert_eq!(choices.len(), 8);
        assert!(
            choices.iter().all(|c| c.reason.starts_with("given")),
            "{choices:?}"
        );
        // One flag given: only that setting is kept, the rest derived from the app it
        // implies (-D ARRAYS=8: 22 x 8 x 4,076 bytes).
        let mut b = args(&["--scale", "paper", "-D", "ARRAYS=8"]);
        apply_scale(&mut b, &buckets(), false).unwrap();
        let app = 22 * 8 * 4076;
        assert_eq!(
            b.budget,
            Some(scale::budget_for(app, scale::PAPER_GC_MAX_FREE) as usize)
        );
        assert_eq!(b.apps, 30);
        // --scale default changes nothing; a bad scale is a usage error.
        let d = args(&[]);
        assert_eq!(d.scale, ScaleArg::Default);
        assert!(!to_args(&d, None).contains(&"--scale".to_owned()));
        let e = PressureArgs::parse_args(&["--scale".into(), "huge".into()]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn resolved_values_replace_auto_ones() {
        let a = args(&[]);
        let r = Resolved {
            mode: "in-process",
            policies: vec![
                PolicyChoice::parse("kill").unwrap(),
                PolicyChoice::parse("marvin").unwrap(),
            ],
            budget: 5 << 20,
        };
        let v = to_args(&a, Some(&r));
        let value = |flag: &str| v[v.iter().position(|x| x == flag).unwrap() + 1].clone();
        assert_eq!(value("--mode"), "in-process");
        assert_eq!(value("--policy"), "kill,marvin");
        assert_eq!(value("--budget"), (5 << 20).to_string());
        assert_eq!(value("--workload"), "builtin:buckets");
    }

    #[test]
    fn sizes_are_written_exactly() {
        for b in [1usize, 4096, 1000, 256 << 10, 2272 << 20, 5 << 30] {
            assert_eq!(marvin_console::size::parse_size(&size_arg(b)), Ok(b), "{b}");
        }
        assert_eq!(size_arg(2272 << 20), "2272m");
    }

    #[test]
    fn durations_are_written_exactly() {
        for d in [
            Duration::from_secs(50),
            Duration::from_millis(1400),
            Duration::from_nanos(1_000_001),
            Duration::ZERO,
        ] {
            assert_eq!(parse_duration(&duration_arg(d)), Ok(d), "{d:?}");
        }
    }

    #[test]
    fn guards_warn_when_nothing_was_measured() {
        let idle = Summary {
            peak_committed_bytes: 10 << 20,
            ..Summary::new("kill")
        };
        let w = guards(std::slice::from_ref(&idle), 100 << 20);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("never reached") && w[0].contains("10.0 MiB"),
            "{w:?}"
        );
        // Reached, but nobody acted.
        let full = Summary {
            peak_committed_bytes: 99 << 20,
            ..idle.clone()
        };
        let w = guards(std::slice::from_ref(&full), 100 << 20);
        assert!(w[0].contains("no policy acted"), "{w:?}");
        // One policy acted: no warning.
        let killed = Summary {
            kills: 2,
            ..full.clone()
        };
        assert!(guards(&[full, killed], 100 << 20).is_empty());
    }
}
