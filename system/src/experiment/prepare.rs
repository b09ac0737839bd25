//! What the experiment resolves before anything runs: its settings (from the flags or a
//! record), the workload and its scale ([`Given`]); then its mode, policies, columns,
//! runs and shared settings ([`Planned`]), each checked.

use marvin_console::errln;
use marvin_console::{EXIT_FAILURE, EXIT_REJECTED, EXIT_USAGE};
use marvin_interpreter::exec::Loaded;
use marvin_interpreter::{load, verify};

use super::checks::{check_args, check_room};
use super::columns::{from_record, new_columns, recorded_columns};
use super::flags::{PolicyChoice, PressureArgs, Resolved};
use super::halt::{fail, Halt, Step};
use super::mode::{choose_mode, Mode};
use super::settings::{apply_scale, defines, model_policy, process_model_policy, read_policy};
use super::ModeArg;
use crate::plan::{self, Column};
use crate::policies::{self, Host};
use crate::published::Published;
use crate::record::Record;
use crate::scale::{self, ScaleArg, DEFAULT_BUDGET};
use crate::workloads::Source;
use crate::{provenance, PressurePolicy, SystemConfig};

/// The experiment's settings and its workload, as given (or recorded).
pub(super) struct Given {
    pub a: PressureArgs,
    pub recorded: Option<Record>,
    pub source: Source,
    pub bytes: Vec<u8>,
    /// The workload's content hash.
    pub hash: String,
    /// `--scale paper`: the settings it derived, with why.
    pub choices_of_scale: Vec<scale::Choice>,
    pub published: Option<Published>,
}

/// The experiment's plan: its mode, policies, columns and runs, and what they share.
pub(super) struct Planned {
    pub mode: Mode,
    pub columns: Vec<Column>,
    pub runs: Vec<plan::Run>,
    pub resolved: Resolved,
    pub budget: usize,
    pub cfg: SystemConfig,
    /// The defines the first run's workload was linked with.
    pub first_defs: Vec<(String, i64)>,
}

impl Given {
    /// Resolves `given` (or, with `--config`, the experiment its record holds, with
    /// this invocation's output flags), reads the workload and applies `--scale`.
    pub fn resolve(given: &PressureArgs) -> Step<Given> {
        let (mut a, recorded) = match &given.config {
            None => (given.clone(), None),
            Some(path) => from_record(given, path).map_err(|e| fail(EXIT_USAGE, e))?,
        };
        check_args(&a).map_err(|e| fail(EXIT_USAGE, e))?;
        let source =
            Source::parse(&a.workload).map_err(|e| fail(EXIT_USAGE, format!("--workload: {e}")))?;
        let bytes = source.read().map_err(|e| fail(EXIT_FAILURE, e))?;
        let hash = provenance::content_hash(&bytes);
        if let Some(rec) = &recorded {
            if rec.workload.fnv1a64 != hash {
                return Err(fail(
                    EXIT_USAGE,
                    format!(
                        "the workload {} is not the one recorded (fnv1a64 {} recorded, {hash} now)",
                        source.display(),
                        rec.workload.fnv1a64
                    ),
                ));
            }
        }
        // --scale paper: the settings it derives from the workload's app size, with why.
        let (choices_of_scale, published) = if a.scale == ScaleArg::Paper {
            let program = load::load_bytes(&source.display(), &bytes).map_err(|d| {
                errln!("{d}");
                Halt::Exit(EXIT_REJECTED)
            })?;
            apply_scale(&mut a, &program, recorded.is_some())
                .map_err(|e| fail(EXIT_USAGE, format!("--scale paper: {e}")))?
        } else {
            (Vec::new(), None)
        };
        Ok(Given {
            a,
            recorded,
            source,
            bytes,
            hash,
            choices_of_scale,
            published,
        })
    }

    /// Loads, links with the run's defines (drawn with `seed`) and verifies the
    /// workload; a rejection is said on stderr.
    pub fn build(&self, seed: u64) -> Step<(Loaded, Vec<(String, i64)>)> {
        let built = || -> Result<(Loaded, Vec<(String, i64)>), String> {
            let mut program =
                load::load_bytes(&self.source.display(), &self.bytes).map_err(|d| d.to_string())?;
            let defs = defines(&self.a, &program, seed);
            program.link(&defs).map_err(|d| d.to_string())?;
            let vp = verify::verify(program).map_err(|d| d.to_string())?;
            Ok((Loaded::new(vp), defs))
        };
        built().map_err(|d| {
            errln!("{d}");
            Halt::Exit(EXIT_REJECTED)
        })
    }

    /// The plan: the mode, the policies (the registry's defaults for the mode unless
    /// given), the columns, the runs of this shard, and the settings every run shares.
    pub fn plan(&self) -> Step<Planned> {
        let a = &self.a;
        let first_defs = self.build(a.seed)?.1;
        let base = match (&a.policy_file, &self.recorded) {
            (Some(f), None) => read_policy(f).map_err(Halt::Exit)?,
            _ => model_policy(),
        };
        let budget = a.budget.unwrap_or(DEFAULT_BUDGET);
        let mode = choose_mode(a.mode).map_err(|e| fail(EXIT_USAGE, e))?;
        // A shard that falls back to the model would sit beside shards of the process
        // mode that other machines run as root: it must say which mode it wants.
        if let (Some(shard), ModeArg::Auto, Mode::InProcess(why)) = (a.shard, a.mode, &mode) {
            return Err(fail(
                EXIT_USAGE,
                format!(
                    "--shard {shard}: this shard would run the in-process model ({why}), \
                     while shards on machines where it can run (as root, with a memory cgroup) \
                     run the process mode, and marvin compare does not merge the two; give \
                     --mode in-process to run the model on every shard, or run the shard as root"
                ),
            ));
        }
        // The process mode's own default policy (see process_model_policy).
        let base = match (&a.policy_file, &self.recorded, &mode) {
            (None, None, Mode::Processes(_)) => process_model_policy(),
            _ => base,
        };
        let choices = self.choices(&mode)?;
        let columns = match &self.recorded {
            Some(rec) => recorded_columns(rec),
            None => new_columns(a, &choices, &base),
        }
        .map_err(|e| fail(EXIT_USAGE, e))?;
        // Every column's policy at the run's time scale, before the first run starts.
        for c in &columns {
            if let Err(e) = c.policy.scaled(a.time_scale) {
                return Err(fail(
                    EXIT_USAGE,
                    format!("--time-scale {}: column {}: {e}", a.time_scale, c.label),
                ));
            }
        }
        let runs = self.runs(&columns)?;
        let resolved = Resolved {
            mode: match mode {
                Mode::Processes(_) => "processes",
                Mode::InProcess(_) => "in-process",
            },
            policies: choices,
            budget,
        };
        let cfg = shared_settings(a, budget);
        // Room for everything the run writes, before anything is set up.
        let processes = matches!(mode, Mode::Processes(_));
        check_room(a, processes, &columns, &runs).map_err(|e| fail(EXIT_USAGE, e))?;
        Ok(Planned {
            mode,
            columns,
            runs,
            resolved,
            budget,
            cfg,
            first_defs,
        })
    }

    /// The policies given, or the registry's defaults for `mode`; one the mode does not
    /// run is a usage error.
    fn choices(&self, mode: &Mode) -> Step<Vec<PolicyChoice>> {
        let host = mode.host();
        let choices: Vec<PolicyChoice> = if self.a.policy.is_empty() {
            policies::defaults(host)
                .into_iter()
                .map(|pressure| PolicyChoice {
                    pressure,
                    restore: None,
                })
                .collect()
        } else {
            self.a.policy.clone()
        };
        if let Some(c) = choices.iter().find(|c| !c.pressure.runs_in(host)) {
            let there: Vec<&str> = policies::defaults(host)
                .iter()
                .map(|p: &PressurePolicy| p.name())
                .collect();
            return Err(fail(
                EXIT_USAGE,
                format!(
                    "{} does not run in the {} (it runs {}){}",
                    c.pressure.name(),
                    mode.name(),
                    there.join(", "),
                    if c.pressure.runs_in(policies::Host::Processes) {
                        "; it needs the kernel (a memory cgroup and swap, as root): \
                         give --mode processes"
                    } else {
                        ""
                    }
                ),
            ));
        }
        Ok(choices)
    }

    /// The runs of the grid this shard runs; none is a usage error.
    fn runs(&self, columns: &[Column]) -> Step<Vec<plan::Run>> {
        let a = &self.a;
        let runs: Vec<plan::Run> = plan::grid(columns.len(), a.reps, a.seed)
            .into_iter()
            .filter(|r| a.shard.is_none_or(|s| s.contains(r.index)))
            .collect();
        if runs.is_empty() {
            let all = columns.len() * a.reps as usize;
            return Err(fail(
                EXIT_USAGE,
                format!(
                    "shard {} of a grid of {all} runs is empty (use at most {all} shards)",
                    a.shard.map(|s| s.to_string()).unwrap_or_default(),
                ),
            ));
        }
        Ok(runs)
    }
}

/// The settings every run of the experiment shares.
fn shared_settings(a: &PressureArgs, budget: usize) -> SystemConfig {
    SystemConfig {
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
    }
}

impl Mode {
    /// The registry's host of this mode.
    pub(super) fn host(&self) -> Host {
        match self {
            Mode::Processes(_) => Host::Processes,
            Mode::InProcess(_) => Host::InProcess,
        }
    }
}
