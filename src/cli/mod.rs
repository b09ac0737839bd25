//! The `marvin` command line: argument types and one module per subcommand family.

pub mod app;
pub mod compare;
pub mod pressure;
pub mod program;
pub mod reclaim;
pub mod report;
pub mod sweep;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use marvin_console::{errln, out};

pub use marvin_console::{EXIT_FAILURE, EXIT_REJECTED, EXIT_USAGE};

#[derive(Debug, Parser)]
#[command(
    name = "marvin",
    version,
    about = "A managed-heap runtime that swaps objects ahead of time instead of killing apps"
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Run a MASM program (text or binary form).
    Run(program::RunArgs),
    /// Assemble a MASM program into the binary form.
    Asm(program::AsmArgs),
    /// Verify a program without running it.
    Check(program::CheckArgs),
    /// Print a program (text or binary) as MASM text.
    Disasm(program::DisasmArgs),
    /// The multi-app experiment: the low-memory killer, Linux swap (kernel-swap in the
    /// process mode, the default where it runs; page-swap in the in-process model) and
    /// marvin, side by side under one memory budget.
    Pressure(Box<pressure::PressureArgs>),
    /// Merge the output directories of several pressure runs (shards, variants,
    /// separate experiments) into one table and overlaid figures.
    Compare(compare::CompareArgs),
    /// A pressure experiment's grid of runs split into tasks: a Slurm job array
    /// (--slurm, --submit) or one task after another here (--local); `marvin sweep
    /// status DIR` shows how its tasks went. Takes `marvin pressure`'s flags, with
    /// --mode processes or in-process and --out DIR (the sweep's folder) required.
    Sweep(Box<sweep::SweepArgs>),
    /// Swap policies: print the default, check a file.
    #[command(subcommand)]
    Policy(pressure::PolicyCmd),
    /// One app of the process mode, started by `marvin pressure` (speaks the control
    /// protocol on its standard streams).
    #[command(hide = true)]
    App(app::AppArgs),
    /// A run's guardian, started by `marvin pressure` and `marvin run`: removes what
    /// the run leaves if it dies without cleaning up (system/src/guardian.rs).
    #[command(hide = true)]
    Guardian(GuardianArgs),
    /// Reclaim a running app's saved, clean, cold objects from outside its process.
    Reclaim(reclaim::ReclaimArgs),
    /// Side-by-side benchmarks.
    #[command(subcommand)]
    Bench(marvin_sidebyside::BenchCmd),
}

/// The guardian's arguments: the run it guards and what it may have left.
#[derive(Debug, clap::Args)]
pub struct GuardianArgs {
    /// The run's pid.
    #[arg(long)]
    pub pid: u32,
    /// The run's start time (`/proc/PID/stat` field 22).
    #[arg(long)]
    pub start: u64,
    /// The run set up cgroups and swap (the process mode).
    #[arg(long)]
    pub machine: bool,
    /// Where the run makes its temporary directories (repeatable).
    #[arg(long)]
    pub dir: Vec<std::path::PathBuf>,
}

/// Runs the command line; returns the process exit status.
pub fn main() -> i32 {
    let matches = match Cli::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => return clap_exit(&e),
    };
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    // `marvin pressure --scale` needs to know which flags were given.
    if let (Cmd::Pressure(a), Some(("pressure", sub))) = (&mut cli.cmd, matches.subcommand()) {
        a.given = pressure::given_ids(sub);
    }
    if let (Cmd::Sweep(a), Some(("sweep", sub))) = (&mut cli.cmd, matches.subcommand()) {
        a.experiment.given = pressure::given_ids(sub);
    }
    let res = match &cli.cmd {
        Cmd::Run(a) => program::run(a),
        Cmd::Asm(a) => program::asm(a),
        Cmd::Check(a) => program::check(a),
        Cmd::Disasm(a) => program::disasm(a),
        Cmd::Pressure(a) => pressure::pressure(a),
        Cmd::Compare(a) => compare::compare(a),
        Cmd::Sweep(a) => sweep::sweep(a),
        Cmd::Policy(c) => pressure::policy(c),
        Cmd::App(a) => app::app(a),
        Cmd::Guardian(a) => Ok(marvin_system::guardian::serve(
            marvin_machine::Owner {
                pid: a.pid,
                start_time: a.start,
            },
            a.machine,
            &a.dir,
        )),
        Cmd::Reclaim(a) => reclaim::reclaim(a),
        Cmd::Bench(b) => marvin_sidebyside::run(b),
    };
    match res {
        Ok(code) => code,
        Err(e) => report::report(&e),
    }
}

/// Prints clap's help, version or usage error through the checked streams (help piped
/// into `head` ends quietly; a bad value is quoted shortened) and returns its status.
fn clap_exit(e: &clap::Error) -> i32 {
    use std::io::IsTerminal;
    if e.use_stderr() {
        let text = if std::io::stderr().is_terminal() {
            e.render().ansi().to_string()
        } else {
            e.render().to_string()
        };
        errln!("{}", text.trim_end());
        return e.exit_code();
    }
    let text = if std::io::stdout().is_terminal() {
        e.render().ansi().to_string()
    } else {
        e.render().to_string()
    };
    match out!("{text}") {
        Ok(()) => e.exit_code(),
        Err(o) => report::report(&o.into()),
    }
}
