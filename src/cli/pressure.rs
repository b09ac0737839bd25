//! `marvin pressure`: the multi-app experiment, and `marvin policy show`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use marvin_interpreter::exec::Loaded;
use marvin_interpreter::{link, load, verify};
use marvin_swap::policy::PolicyConfig;

use super::size::parse_size;
use crate::system::{self, summary, Pressure, SystemConfig};
use marvin_runtime::duration::parse as parse_duration;

/// Workload constants the small model sets unless `-D` says otherwise.
const MODEL_DEFINES: &[(&str, i64)] = &[("ARRAYS", 256), ("STRIDE", 256)];

#[derive(Debug, Args)]
pub struct PressureArgs {
    /// Apps launched over the run.
    #[arg(long, default_value_t = 30)]
    pub apps: usize,
    /// Resident app memory all apps share.
    #[arg(long, value_parser = parse_size, default_value = "240m")]
    pub budget: usize,
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
    /// The workload program each app runs.
    #[arg(long, default_value = "examples/workloads/buckets.masm")]
    pub workload: PathBuf,
    /// Override a workload constant (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = link::parse_define)]
    pub defines: Vec<(String, i64)>,
    /// Policies to run, one after the other on identical settings.
    #[arg(long, value_delimiter = ',', default_value = "kill,page-swap,marvin", value_parser = Pressure::parse)]
    pub policy: Vec<Pressure>,
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

#[derive(Debug, Subcommand)]
pub enum PolicyCmd {
    /// Print the default Marvin swap policy as TOML, every knob documented.
    Show,
    /// Check a policy file and print it back with every knob.
    Check { file: PathBuf },
}

pub fn policy(cmd: &PolicyCmd) -> anyhow::Result<i32> {
    match cmd {
        PolicyCmd::Show => print!("{}", PolicyConfig::default().to_toml_string()),
        PolicyCmd::Check { file } => match PolicyConfig::from_file(file) {
            Ok(p) => print!("{}", p.to_toml_string()),
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(super::EXIT_USAGE);
            }
        },
    }
    Ok(0)
}

/// The small model's policy: the published settings, except that the background write
/// task runs at the foreground period. The published experiment launches an app every
/// 10 minutes, so its 30 s background period still gives about twenty saver runs between
/// launches; the model launches every 1.5 s (a 400x compression, against 10x for every
/// other period), and keeps several saver runs between launches this way.
pub fn model_policy() -> PolicyConfig {
    let mut p = PolicyConfig::default();
    p.saver.background_period = p.saver.foreground_period;
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
    if a.apps == 0 || !(a.time_scale > 0.0 && a.time_scale.is_finite()) {
        eprintln!("error: --apps must be at least 1 and --time-scale positive");
        return Ok(super::EXIT_USAGE);
    }
    let mut program = match load::load(&a.workload) {
        Ok(p) => p,
        Err(d) => {
            eprintln!("{d}");
            return Ok(super::EXIT_REJECTED);
        }
    };
    let defs = defines(a, &program);
    if let Err(d) = program.link(&defs) {
        eprintln!("{d}");
        return Ok(super::EXIT_REJECTED);
    }
    let vp = match verify::verify(program) {
        Ok(vp) => vp,
        Err(d) => {
            eprintln!("{d}");
            return Ok(super::EXIT_REJECTED);
        }
    };
    let base = match &a.policy_file {
        Some(f) => match PolicyConfig::from_file(f) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(super::EXIT_USAGE);
            }
        },
        None => model_policy(),
    };
    let policy = Arc::new(
        base.scaled(a.time_scale)
            .map_err(|e| anyhow::anyhow!("{e}"))?,
    );
    let cfg = SystemConfig {
        apps: a.apps,
        budget: a.budget,
        launch_every: a.launch_every,
        duration: a.duration,
        switch_every: a.switch_every,
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
    let bars: Vec<(Pressure, ProgressBar)> = a
        .policy
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
    let progress = |p: Pressure, t: Duration, alive: u32, active: u32, kills: u64, bytes: u64| {
        if let Some((_, bar)) = bars.iter().find(|(q, _)| *q == p) {
            bar.set_position(t.as_millis() as u64);
            bar.set_message(format!(
                "alive {alive:>3}  active {active:>3}  kills {kills:>3}  resident {:>6.1} MiB",
                bytes as f64 / (1u64 << 20) as f64
            ));
        }
    };
    let results = system::run(
        &cfg,
        &a.policy,
        Arc::new(Loaded::new(vp)),
        policy,
        &progress,
    )?;
    for (_, bar) in &bars {
        bar.finish();
    }
    if let (Some(tracer), Some(path)) = (&cfg.tracer, &a.trace) {
        tracer
            .write_to(path)
            .with_context(|| format!("writing the trace {}", path.display()))?;
    }
    let summaries: Vec<_> = results.iter().map(|(s, _)| s.clone()).collect();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&summaries)?);
    } else {
        print!("{}", summary::table(&summaries));
    }
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(
            dir.join("summary.json"),
            serde_json::to_string_pretty(&summaries)?,
        )?;
        let series: Vec<_> = results.into_iter().map(|(_, s)| s).collect();
        system::write_outputs(dir, &series, a.budget as u64)?;
        eprintln!("wrote {}", dir.display());
    }
    Ok(0)
}
