//! `marvin pressure`: the multi-app experiment, and `marvin policy show`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use marvin_interpreter::exec::Loaded;
use marvin_interpreter::{link, verify};
use marvin_swap::policy::{PolicyConfig, RestoreMode};

use super::paths;
use super::program::{load_program, read_policy};
use super::size::parse_size;
use super::{EXIT_REJECTED, EXIT_USAGE};
use crate::host::{cgroup, signals, swapdev};
use crate::system::processes::{self, launcher, ProcessConfig};
use crate::system::{self, summary, Pressure, SystemConfig};
use crate::{errln, out, outln};
use marvin_runtime::duration::parse as parse_duration;

/// Workload constants the small model sets unless `-D` says otherwise.
const MODEL_DEFINES: &[(&str, i64)] = &[("ARRAYS", 256), ("STRIDE", 256)];

#[derive(Debug, Args)]
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
    /// The workload program each app runs.
    #[arg(long, default_value = "examples/workloads/buckets.masm")]
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
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
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

    /// Marvin's policy for this choice.
    fn policy(&self, base: &Arc<PolicyConfig>) -> Arc<PolicyConfig> {
        match self.restore {
            None => base.clone(),
            Some(mode) => {
                let mut p = (**base).clone();
                p.restore.mode = mode;
                Arc::new(p)
            }
        }
    }
}

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

/// The default budget (both modes).
pub const DEFAULT_BUDGET: usize = 240 << 20;

#[derive(Debug, Subcommand)]
pub enum PolicyCmd {
    /// Print the default Marvin swap policy as TOML, every knob documented.
    Show,
    /// Check a policy file and print it back with every knob.
    Check { file: PathBuf },
}

pub fn policy(cmd: &PolicyCmd) -> anyhow::Result<i32> {
    match cmd {
        PolicyCmd::Show => out!("{}", PolicyConfig::default().to_toml_string())?,
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
fn defines(a: &PressureArgs, program: &marvin_interpreter::isa::Program) -> Vec<(String, i64)> {
    let mut d: Vec<(String, i64)> = Vec::new();
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

pub fn pressure(a: &PressureArgs) -> anyhow::Result<i32> {
    if let Err(e) = check_args(a) {
        errln!("error: {e}");
        return Ok(EXIT_USAGE);
    }
    let mut program = match load_program(&a.workload) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let defs = defines(a, &program);
    if let Err(d) = program.link(&defs) {
        errln!("{d}");
        return Ok(EXIT_REJECTED);
    }
    let vp = match verify::verify(program) {
        Ok(vp) => vp,
        Err(d) => {
            errln!("{d}");
            return Ok(EXIT_REJECTED);
        }
    };
    let base = match &a.policy_file {
        Some(f) => match read_policy(f) {
            Ok(p) => p,
            Err(code) => return Ok(code),
        },
        None => model_policy(),
    };
    let mode = match choose_mode(a.mode) {
        Ok(m) => m,
        Err(e) => {
            errln!("error: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let base = match (&a.policy_file, &mode) {
        (None, Mode::Processes(_)) => process_model_policy(),
        _ => base,
    };
    let policy = Arc::new(
        base.scaled(a.time_scale)
            .map_err(|e| anyhow::anyhow!("{e}"))?,
    );
    let budget = a.budget.unwrap_or(DEFAULT_BUDGET);
    errln!("{}", mode.describe(budget));
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
    // SIGINT, SIGTERM and SIGHUP stop the run: the policy running ends, its apps,
    // directories (and in the process mode its cgroup and swap) are removed, nothing
    // more is written, and marvin exits 128 + the signal.
    signals::install().context("installing the stop-signal handlers")?;
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
    };
    let multi = MultiProgress::new();
    let bars: Vec<(PolicyChoice, ProgressBar)> = choices
        .iter()
        .map(|&p| {
            let bar = if a.quiet {
                ProgressBar::hidden()
            } else {
                multi.add(ProgressBar::new(a.duration.as_millis() as u64))
            };
            bar.set_style(
                ProgressStyle::with_template("{prefix:>10} [{bar:30}] {elapsed:>4} {msg}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(p.name());
            (p, bar)
        })
        .collect();
    let progress = |i: usize, t: Duration, alive: u32, active: u32, kills: u64, bytes: u64| {
        if let Some((_, bar)) = bars.get(i) {
            bar.set_position(t.as_millis() as u64);
            bar.set_message(format!(
                "alive {alive:>3}  active {active:>3}  kills {kills:>3}  resident {:>6.1} MiB",
                bytes as f64 / (1u64 << 20) as f64
            ));
        }
    };
    // One run per choice (marvin-eager and marvin-on-demand are both marvin), each under
    // its choice's name; a stop signal ends the one under way and the rest.
    let mut results: anyhow::Result<Vec<_>> = Ok(Vec::new());
    match &mode {
        Mode::InProcess(_) => {
            let loaded = Arc::new(Loaded::new(vp));
            for (i, c) in choices.iter().enumerate() {
                if signals::stop_requested().is_some() {
                    break;
                }
                let cb = |_: Pressure, t, alive, active, kills, bytes| {
                    progress(i, t, alive, active, kills, bytes)
                };
                let r = system::run(&cfg, &[c.pressure], loaded.clone(), c.policy(&policy), &cb);
                match (r, &mut results) {
                    (Ok(r), Ok(all)) => all.extend(r.into_iter().map(|r| named(r, c))),
                    (Err(e), _) => {
                        results = Err(e);
                        break;
                    }
                    (Ok(_), Err(_)) => break,
                }
            }
        }
        Mode::Processes(_) => {
            let workload = std::fs::canonicalize(&a.workload)
                .with_context(|| format!("the workload {}", a.workload.display()))?;
            let pcfg = ProcessConfig {
                headroom: ProcessConfig::default_headroom(budget as u64),
                system: cfg.clone(),
                exe: launcher::app_exe()?,
                workload,
                defines: defs.clone(),
                policy,
                swap_device: match a.swap_device {
                    SwapDeviceArg::File => swapdev::Kind::File,
                    SwapDeviceArg::Zram => swapdev::Kind::Zram,
                },
                swap_bytes: a.swap_size as u64,
            };
            for (i, c) in choices.iter().enumerate() {
                if signals::stop_requested().is_some() {
                    break;
                }
                let cb = |_: Pressure, t, alive, active, kills, bytes| {
                    progress(i, t, alive, active, kills, bytes)
                };
                let pc = ProcessConfig {
                    policy: c.policy(&pcfg.policy),
                    ..pcfg.clone()
                };
                let r = processes::run(&pc, &[c.pressure], &cb);
                match (r, &mut results) {
                    (Ok(r), Ok(all)) => all.extend(r.into_iter().map(|r| named(r, c))),
                    (Err(e), _) => {
                        results = Err(e);
                        break;
                    }
                    (Ok(_), Err(_)) => break,
                }
            }
        }
    }
    for (_, bar) in &bars {
        bar.finish();
    }
    if let Some(sig) = signals::stop_requested() {
        errln!("marvin: stopped by signal {sig}; temporary files removed, no results written");
        return Ok(128 + sig);
    }
    let results = results?;
    if let (Some(tracer), Some(path)) = (&cfg.tracer, &a.trace) {
        tracer
            .write_to(path)
            .with_context(|| format!("writing the trace {}", path.display()))?;
    }
    let summaries: Vec<_> = results.iter().map(|(s, _)| s.clone()).collect();
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&summaries)?)?;
    } else {
        outln!("{}", mode.title(budget))?;
        out!("{}", summary::table(&summaries))?;
    }
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(
            dir.join("summary.json"),
            serde_json::to_string_pretty(&summaries)?,
        )?;
        let series: Vec<_> = results.into_iter().map(|(_, s)| s).collect();
        let counted = match mode {
            Mode::Processes(_) => system::plot::Counted::Kernel,
            Mode::InProcess(_) => system::plot::Counted::Runtime,
        };
        system::write_outputs(dir, &series, budget as u64, counted)?;
        system::write_launch_outputs(dir, &summaries)?;
        errln!("wrote {}", dir.display());
    }
    Ok(0)
}

/// A run's results under its choice's name (marvin-eager, marvin-on-demand).
fn named(
    (mut summary, mut series): (summary::Summary, system::PolicySeries),
    c: &PolicyChoice,
) -> (summary::Summary, system::PolicySeries) {
    summary.policy = c.name().to_string();
    series.policy = c.name().to_string();
    (summary, series)
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
