//! The experiment's one entry point ([`run`]): it resolves the flags (or a record) into
//! a plan ([`super::prepare`]), sets up the guardian, the machine and the workload
//! ([`Setup`]), runs every run of the plan in turn through the System's one entry point
//! ([`crate::run`]), and writes and prints the results ([`super::report`]).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use marvin_console::{errln, out};
use marvin_machine::{signals, swapdev, MachineLock};

use super::flags::{to_args, PressureArgs, SettleArg, SwapDeviceArg};
use super::halt::{Halt, Step};
use super::mode::Mode;
use super::prepare::{Given, Planned};
use super::report;
use crate::plan;
use crate::processes::{launcher, ProcessConfig, SettleMode};
use crate::provenance::{self, Host};
use crate::record::{self, ColumnRecord, Record, WorkloadRecord};
use crate::workloads::Source;
use crate::{summary, Hosting, PolicySeries, PressurePolicy, Summary, SystemConfig};

/// Runs the experiment `given` describes (or, with `--config`, the one its record
/// holds): checks, plans, runs every run of the plan in turn and writes and prints the
/// results; returns the exit status.
pub fn run(given: &PressureArgs) -> anyhow::Result<i32> {
    match run_steps(given) {
        Ok(code) => Ok(code),
        Err(Halt::Exit(code)) => Ok(code),
        Err(Halt::Error(e)) => Err(e),
    }
}

fn run_steps(given: &PressureArgs) -> Step<i32> {
    let given = Given::resolve(given)?;
    let planned = given.plan()?;
    for c in &given.choices_of_scale {
        errln!("{}", c.line());
    }
    errln!("{}", planned.mode.describe(planned.budget));
    let setup = Setup::new(&given, &planned)?;
    let mut results = Results::default();
    for (done, run) in planned.runs.iter().enumerate() {
        if let Some(code) = run_one(&given, &planned, &setup, &mut results, done, run)? {
            return Ok(code);
        }
    }
    report::finish(&given, &planned, &setup.record, &results)?;
    Ok(0)
}

/// What every run needs that the plan does not say: the guardian, the workload's file,
/// the machine, the record of the experiment.
struct Setup {
    /// The directory of a built-in workload written out.
    _workload_dir: tempfile::TempDir,
    workload_path: PathBuf,
    /// The process mode holds the machine from the first policy to the last, so no
    /// other real-mode run comes in between two of them.
    machine: Option<Arc<MachineLock>>,
    record: RecordBase,
    bars: bool,
    lines: bool,
    /// Told last that the run cleaned up (dropped last, after what it guards): if the
    /// run is killed, it removes what the run left.
    _guardian: Option<crate::guardian::Guardian>,
}

impl Setup {
    fn new(given: &Given, planned: &Planned) -> Step<Setup> {
        let a = &given.a;
        let processes_mode = matches!(planned.mode, Mode::Processes(_));
        // Where the run makes its temporary directories: what its guardian and the
        // start-up sweep look through for what dead runs left.
        let mut temp_roots = vec![std::env::temp_dir()];
        temp_roots.extend(a.swap_dir.iter().cloned());
        let guardian = match launcher::app_exe()
            .and_then(|exe| crate::guardian::Guardian::spawn(&exe, processes_mode, &temp_roots))
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
        let workload_dir = crate::tempdirs::create("marvin-workload-", None, None)?;
        let workload_path = match &given.source {
            Source::File(p) => {
                std::fs::canonicalize(p).with_context(|| format!("the workload {}", p.display()))?
            }
            Source::Builtin(name) => {
                let p = workload_dir.path().join(format!("{name}.masm"));
                std::fs::write(&p, &given.bytes)?;
                p
            }
        };
        // SIGINT, SIGTERM and SIGHUP stop the run: the policy running ends, its apps,
        // directories (and in the process mode its cgroup and swap) are removed, nothing
        // more is written, and marvin exits 128 + the signal.
        signals::install().context("installing the stop-signal handlers")?;
        let machine = match &planned.mode {
            Mode::Processes(_) => Some(crate::guardian::take_machine()?),
            Mode::InProcess(_) => None,
        };
        // What runs that died left: in the process mode their cgroups (killing their
        // apps) and swap, under the machine lock, then in both modes their temporary
        // directories.
        if processes_mode {
            crate::guardian::sweep_machine().context("removing what earlier runs left")?;
        }
        for root in &temp_roots {
            crate::tempdirs::sweep(root, None);
        }
        let stderr_tty = std::io::stderr().is_terminal();
        Ok(Setup {
            _workload_dir: workload_dir,
            workload_path,
            machine,
            record: RecordBase::new(given, planned),
            bars: stderr_tty && !a.quiet,
            lines: !stderr_tty && !a.quiet,
            _guardian: guardian,
        })
    }

    /// How run `seed`'s apps are hosted in `mode`.
    fn hosting(
        &self,
        a: &PressureArgs,
        planned: &Planned,
        cfg: SystemConfig,
        built: (marvin_interpreter::exec::Loaded, Vec<(String, i64)>),
        policy: Arc<marvin_swap::PolicyConfig>,
    ) -> anyhow::Result<Hosting> {
        let (loaded, defines) = built;
        Ok(match planned.mode {
            Mode::InProcess(_) => Hosting::InProcess {
                cfg,
                loaded: Arc::new(loaded),
                policy,
            },
            Mode::Processes(_) => Hosting::Processes(ProcessConfig {
                machine: self
                    .machine
                    .clone()
                    .context("the process mode holds the machine")?,
                headroom: ProcessConfig::default_headroom(planned.budget as u64),
                system: cfg,
                exe: launcher::app_exe()?,
                workload: self.workload_path.clone(),
                defines,
                policy,
                swap_device: match a.swap_device {
                    SwapDeviceArg::File => swapdev::Kind::File,
                    SwapDeviceArg::Zram => swapdev::Kind::Zram,
                },
                swap_bytes: a.swap_size as u64,
                zram_algorithm: a.zram_algorithm.clone(),
                settle: match a.settle {
                    SettleArg::Off => SettleMode::Off,
                    SettleArg::Wait => SettleMode::Wait,
                    SettleArg::DropCaches => SettleMode::DropCaches,
                },
            }),
        })
    }
}

/// The record of the experiment, but for the runs a directory holds.
pub(super) struct RecordBase(Record);

impl RecordBase {
    fn new(given: &Given, planned: &Planned) -> RecordBase {
        let a = &given.a;
        let args = to_args(a, Some(&planned.resolved));
        let command = std::iter::once("marvin pressure".to_owned())
            .chain(args.iter().map(|x| record::shell_quote(x)))
            .collect::<Vec<_>>()
            .join(" ");
        RecordBase(Record {
            command,
            args,
            mode: planned.resolved.mode.to_owned(),
            marvin_version: env!("CARGO_PKG_VERSION").to_owned(),
            commit: provenance::commit().to_owned(),
            shard: a.shard.map(|s| s.to_string()),
            workload: WorkloadRecord {
                source: given.source.display(),
                fnv1a64: given.hash.clone(),
                overrides: a.defines.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                defines: planned
                    .first_defs
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect(),
            },
            host: Host::current(),
            columns: planned
                .columns
                .iter()
                .map(|c| ColumnRecord {
                    label: c.label.clone(),
                    pressure: c.pressure.name().to_owned(),
                    policy: c.policy.clone(),
                })
                .collect(),
            runs: Vec::new(),
            scale: a.scale.name().to_owned(),
            scale_settings: given.choices_of_scale.clone(),
            zram_charging: None,
        })
    }

    /// The record with `held`, the runs a directory holds.
    /// The record of the runs `held`, whose summaries are `done`.
    pub(super) fn with_runs(&self, held: &[plan::Run], done: &[Summary]) -> Record {
        Record {
            runs: held.to_vec(),
            zram_charging: done
                .iter()
                .find_map(|s| s.zram.as_ref().map(|z| z.charging.clone())),
            ..self.0.clone()
        }
    }
}

/// The finished runs' summaries and series, in order.
#[derive(Default)]
pub(super) struct Results {
    pub summaries: Vec<Summary>,
    pub series: Vec<PolicySeries>,
}

/// Runs run `done` of the plan (`run`), writes what is finished, and says so; `Some`
/// exit status when a stop signal ended it.
fn run_one(
    given: &Given,
    planned: &Planned,
    setup: &Setup,
    results: &mut Results,
    done: usize,
    run: &plan::Run,
) -> Step<Option<i32>> {
    let a = &given.a;
    let column = &planned.columns[run.column];
    let label = if a.reps > 1 {
        format!("{} #{}", column.label, run.rep)
    } else {
        column.label.clone()
    };
    let bar = progress_bar(setup.bars, a.duration, &label);
    // The process mode counts every death (the killer's, the kernel's OOM killer's, a
    // signal's, a crash); the model's apps die only by its killer.
    let deaths = match planned.mode {
        Mode::Processes(_) => "deaths",
        Mode::InProcess(_) => "kills",
    };
    let progress =
        |_: PressurePolicy, t: Duration, alive: u32, active: u32, kills: u64, bytes: u64| {
            bar.set_position(t.as_millis() as u64);
            bar.set_message(format!(
                "alive {alive:>3}  active {active:>3}  {deaths} {kills:>3}  resident {:>6.1} MiB",
                bytes as f64 / (1u64 << 20) as f64
            ));
        };
    let started = Instant::now();
    let built = given.build(run.seed)?;
    let policy = Arc::new(
        column
            .policy
            .scaled(a.time_scale)
            .map_err(|e| anyhow::anyhow!("{}: {e}", column.label))?,
    );
    let cfg = SystemConfig {
        seed: run.seed,
        ..planned.cfg.clone()
    };
    let hosting = setup.hosting(a, planned, cfg, built, policy)?;
    let out = crate::run(&hosting, &[column.pressure], &progress);
    bar.finish();
    if let Some(sig) = signals::stop_requested() {
        match (&a.out, results.summaries.len()) {
            (Some(dir), n) if n > 0 => errln!(
                "marvin: stopped by signal {sig}; temporary files removed; the {n} finished \
                 run(s) are in {} (no figures)",
                dir.display()
            ),
            _ => errln!(
                "marvin: stopped by signal {sig}; temporary files removed, no results written"
            ),
        }
        return Ok(Some(128 + sig));
    }
    let mut out = match out {
        Ok(o) => o,
        Err(e) => {
            say_what_finished(a, &results.summaries)?;
            return Err(Halt::Error(e.context(format!("running {label}"))));
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
        planned.runs.len(),
        s.peak_active,
        s.final_active,
        s.final_alive,
        deaths_text(&s),
        started.elapsed().as_secs_f64()
    );
    results.summaries.push(s);
    results.series.push(ser);
    // What is finished is written at once (before the run's line says it finished): a
    // later run's failure loses none of it.
    if let Some(dir) = &a.out {
        crate::write_data(dir, &results.summaries, &results.series)?;
        setup
            .record
            .with_runs(&planned.runs[..=done], &results.summaries)
            .write(&dir.join("config.toml"))?;
    }
    if setup.lines {
        errln!("{line}");
    }
    Ok(None)
}

/// A run's progress bar (hidden unless `shown`).
fn progress_bar(shown: bool, duration: Duration, label: &str) -> ProgressBar {
    let bar = if shown {
        ProgressBar::new(duration.as_millis() as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{prefix:>14} [{bar:30}] {elapsed:>4} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_owned());
    bar
}

/// After a run failed: where the runs finished before it are (or their table).
fn say_what_finished(a: &PressureArgs, summaries: &[Summary]) -> anyhow::Result<()> {
    if summaries.is_empty() {
        return Ok(());
    }
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
            out!("{}", summary::table(summaries))?;
        }
    }
    Ok(())
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
