//! `marvin app`: one app of the process mode, started by the System (hidden from
//! `--help`: it speaks the control protocol on its standard streams, see
//! `docs/experiments.md`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use marvin_interpreter::exec::Loaded;
use marvin_swap::PolicyConfig;

use super::program::{load_verified, LoadArgs};
use marvin_console::parse_size;
use marvin_runtime::duration::parse as parse_duration;
use marvin_system::processes::app_process::{self, AppMode, AppProcessConfig, AppTraceConfig};

#[derive(Debug, Args)]
pub struct AppArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// plain (the kill and kernel-swap baselines) or marvin.
    #[arg(long, value_enum)]
    pub mode: AppMode,
    /// Where the app's swap file and reclaim table go (marvin).
    #[arg(long, value_name = "DIR")]
    pub swap_dir: PathBuf,
    /// Marvin's swap policy, already scaled (default: the published one).
    #[arg(long, value_name = "FILE")]
    pub policy_file: Option<PathBuf>,
    /// The heap's largest allocation gap between collections.
    #[arg(long, value_parser = parse_size, default_value = "1m")]
    pub gc_max_free: usize,
    /// How often marks are reported.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "100ms")]
    pub report_every: Duration,
    /// Record a Perfetto trace of the app into this file, appended as it runs (the System
    /// merges it into its own).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The name of the app's process track in its trace.
    #[arg(long, value_name = "NAME", default_value = "app")]
    pub trace_name: String,
}

pub fn app(a: &AppArgs) -> anyhow::Result<i32> {
    let vp = match load_verified(&a.load) {
        Ok(vp) => vp,
        Err(code) => return Ok(code),
    };
    let policy = match &a.policy_file {
        Some(f) => match marvin_system::experiment::read_policy(f) {
            Ok(p) => p,
            Err(code) => return Ok(code),
        },
        None => PolicyConfig::default(),
    };
    let cfg = AppProcessConfig {
        loaded: Arc::new(Loaded::new(vp)),
        mode: a.mode,
        swap_dir: a.swap_dir.clone(),
        policy: Arc::new(policy),
        gc_max_free: a.gc_max_free,
        report_every: a.report_every,
        trace: a.trace.as_ref().map(|path| AppTraceConfig {
            path: path.clone(),
            name: a.trace_name.clone(),
        }),
    };
    let stdin = std::io::BufReader::new(std::io::stdin());
    app_process::run(cfg, stdin, std::io::stdout())
}
