//! The experiment's one entry point ([`run`]): it resolves the flags (or a record) into
//! a plan, checks it, sets up the guardian, the machine and the workload, runs every
//! run of the plan in turn, and writes and prints the results.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use marvin_console::{errln, out, outln};
use marvin_console::{EXIT_FAILURE, EXIT_REJECTED, EXIT_USAGE};
use marvin_interpreter::exec::Loaded;
use marvin_interpreter::{load, verify};
use marvin_machine::{signals, swapdev};

use crate::plan;
use crate::processes::{self, launcher, ProcessConfig, SettleMode};
use crate::provenance::{self, Host};
use crate::record::{self, ColumnRecord, Record, WorkloadRecord};
use crate::scale::{ScaleArg, DEFAULT_BUDGET};
use crate::workloads::Source;
use crate::{summary, PolicySeries, PressurePolicy, Summary, SystemConfig};

use super::checks::{check_args, check_room};
use super::columns::{from_record, new_columns, recorded_columns};
use super::flags::{
    duration_arg, to_args, ModeArg, PolicyChoice, PressureArgs, Resolved, SettleArg, SwapDeviceArg,
};
use super::guards::guards;
use super::mode::{choose_mode, Mode};
use super::settings::{apply_scale, defines, model_policy, process_model_policy, read_policy};

/// Runs the experiment `given` describes (or, with `--config`, the one its record
/// holds): checks, plans, runs every run of the plan in turn and writes and prints the
/// results; returns the exit status.
pub fn run(given: &PressureArgs) -> anyhow::Result<i32> {
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
            return Ok(EXIT_FAILURE);
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
            Mode::Processes(_) => [
                PressurePolicy::Kill,
                PressurePolicy::KernelSwap,
                PressurePolicy::Marvin,
            ],
            Mode::InProcess(_) => [
                PressurePolicy::Kill,
                PressurePolicy::PageSwap,
                PressurePolicy::Marvin,
            ],
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
    let policies: Vec<PressurePolicy> = choices.iter().map(|c| c.pressure).collect();
    let refused = match mode {
        Mode::Processes(_) => PressurePolicy::PageSwap,
        Mode::InProcess(_) => PressurePolicy::KernelSwap,
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
        launch: crate::launch::LaunchPlan {
            launches: a.launches,
            gap: a.launch_gap,
            seed: a.launch_seed,
            ..crate::launch::LaunchPlan::default()
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
    let machine = match &mode {
        Mode::Processes(_) => Some(crate::guardian::take_machine()?),
        Mode::InProcess(_) => None,
    };
    // What runs that died left: in the process mode their cgroups (killing their apps)
    // and swap, under the machine lock, then in both modes their temporary directories.
    if processes_mode {
        crate::guardian::sweep_machine().context("removing what earlier runs left")?;
    }
    for root in &temp_roots {
        crate::tempdirs::sweep(root, None);
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
            |_: PressurePolicy, t: Duration, alive: u32, active: u32, kills: u64, bytes: u64| {
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
            Mode::InProcess(_) => crate::run(
                &cfg,
                &[column.pressure],
                Arc::new(loaded),
                policy,
                &progress,
            ),
            Mode::Processes(_) => {
                let pcfg = ProcessConfig {
                    machine: machine
                        .clone()
                        .context("the process mode holds the machine")?,
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
            crate::write_data(dir, &summaries, &series)?;
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
            Mode::Processes(_) => crate::plot::Counted::Kernel,
            Mode::InProcess(_) => crate::plot::Counted::Runtime,
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
        let mut files = crate::write_data(dir, &summaries, &series)?;
        let config = dir.join("config.toml");
        record(&runs).write(&config)?;
        files.push(config);
        files.extend(crate::write_figures(
            dir,
            &summaries,
            &series,
            budget as u64,
            counted,
            &caption,
            published.as_ref(),
        )?);
        errln!("wrote {}: {}", dir.display(), crate::file_names(&files));
    }
    if let Some(path) = &a.trace {
        errln!("wrote {}", path.display());
    }
    Ok(0)
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
