//! What `marvin sweep` needs of an experiment before any of its runs: the flags checked
//! as `marvin pressure` checks them, the grid's columns and runs, the flags a task
//! passes on to its shard (those given, files as absolute paths), and about how long
//! one run takes, for a batch system's time limit ([`plan`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use marvin_interpreter::load;
use marvin_swap::PolicyConfig;

use super::checks::check_args;
use super::columns::new_columns;
use super::flags::{to_args, ModeArg, PolicyChoice, PressureArgs};
use super::settings::{apply_scale, model_policy, process_model_policy};
use crate::workloads::Source;

/// A sweep's experiment, resolved on the machine that plans it.
#[derive(Clone, Debug)]
pub struct SweepPlan {
    /// `processes` or `in-process`.
    pub mode: &'static str,
    /// The columns' labels in the experiment's order.
    pub columns: Vec<String>,
    /// Repetitions of every column.
    pub reps: u32,
    /// The `marvin pressure` arguments every task runs its shard with (the flags given,
    /// files as absolute paths; no output flags and no `--shard`).
    pub args: Vec<String>,
    /// About one run's wall time: its duration, its launch phase and the setting up.
    pub run_estimate: Duration,
}

impl SweepPlan {
    /// Runs in the grid (columns times repetitions).
    pub fn runs(&self) -> usize {
        self.columns.len() * self.reps as usize
    }
}

/// The flags `marvin sweep` takes from `marvin pressure` but refuses: they say where
/// one run's results go, which a sweep decides for its tasks.
const NOT_IN_A_SWEEP: &[(&str, &str)] = &[
    ("shard", "--shard (the sweep gives each task its shard)"),
    ("config", "--config (give the experiment's flags)"),
    ("trace", "--trace (a trace per task is not kept)"),
    (
        "json",
        "--json (marvin compare --json prints the merged runs)",
    ),
];

/// Checks a sweep's experiment and resolves what its tasks run; an error names the flag.
pub fn plan(given: &PressureArgs) -> Result<SweepPlan, String> {
    for (id, text) in NOT_IN_A_SWEEP {
        if given.given.iter().any(|g| g == id) {
            return Err(format!("marvin sweep does not take {text}"));
        }
    }
    let mode = match given.mode {
        ModeArg::Processes => "processes",
        ModeArg::InProcess => "in-process",
        ModeArg::Auto => {
            return Err(
                "marvin sweep needs --mode processes or --mode in-process: its tasks \
                        run on other machines (or later), whose mode this one cannot choose"
                    .into(),
            )
        }
    };
    let mut a = absolute_files(given)?;
    check_args(&a)?;
    let source = Source::parse(&a.workload).map_err(|e| format!("--workload: {e}"))?;
    let bytes = source.read()?;
    let args = given_args(&a);
    // The settings --scale paper derives, for the estimate (each task derives them too).
    if a.scale == crate::scale::ScaleArg::Paper {
        let program = load::load_bytes(&source.display(), &bytes).map_err(|d| d.to_string())?;
        apply_scale(&mut a, &program, false).map_err(|e| format!("--scale paper: {e}"))?;
    }
    let processes = mode == "processes";
    let base = match &a.policy_file {
        Some(f) => PolicyConfig::from_file(f).map_err(|e| e.to_string())?,
        None if processes => process_model_policy(),
        None => model_policy(),
    };
    let host = if processes {
        crate::policies::Host::Processes
    } else {
        crate::policies::Host::InProcess
    };
    let choices: Vec<PolicyChoice> = if a.policy.is_empty() {
        crate::policies::defaults(host)
            .into_iter()
            .map(|pressure| PolicyChoice {
                pressure,
                restore: None,
            })
            .collect()
    } else {
        a.policy.clone()
    };
    if let Some(c) = choices.iter().find(|c| !c.pressure.runs_in(host)) {
        return Err(format!(
            "{} does not run in the {mode} mode",
            c.pressure.name()
        ));
    }
    let columns = new_columns(&a, &choices, &base)?;
    for c in &columns {
        c.policy
            .scaled(a.time_scale)
            .map_err(|e| format!("--time-scale {}: column {}: {e}", a.time_scale, c.label))?;
    }
    Ok(SweepPlan {
        mode,
        columns: columns.into_iter().map(|c| c.label).collect(),
        reps: a.reps,
        args,
        run_estimate: run_estimate(&a, processes),
    })
}

/// About one run's wall time: the policy's duration, each launch of the launch phase
/// (its gap and up to two seconds to its frame), and half a minute to set up and
/// tear down (another half in the process mode, which may wait for the disks).
fn run_estimate(a: &PressureArgs, processes: bool) -> Duration {
    let per_launch = a.launch_gap + Duration::from_secs(2);
    let setup = Duration::from_secs(if processes { 60 } else { 30 });
    a.duration + per_launch * a.launches.min(1 << 20) as u32 + setup
}

/// `a` with its input files (workload, policy file, variants, swap folder) as absolute
/// paths, so that a task finds them from any working folder.
fn absolute_files(a: &PressureArgs) -> Result<PressureArgs, String> {
    let abs = |flag: &str, p: &Path| -> Result<PathBuf, String> {
        std::path::absolute(p).map_err(|e| format!("{flag} {}: {e}", p.display()))
    };
    let mut a = a.clone();
    if matches!(Source::parse(&a.workload), Ok(Source::File(_))) {
        a.workload = abs("--workload", &a.workload)?;
    }
    if let Some(f) = &a.policy_file {
        a.policy_file = Some(abs("--policy-file", f)?);
    }
    for (name, file) in &mut a.variant {
        *file = abs(&format!("--variant {name}"), file)?;
    }
    if let Some(d) = &a.swap_dir {
        a.swap_dir = Some(abs("--swap-dir", d)?);
    }
    Ok(a)
}

/// The given flags of `a` as `marvin pressure` arguments (a flag left at its default
/// stays out, so `--scale paper` still derives it), without output flags.
fn given_args(a: &PressureArgs) -> Vec<String> {
    let all = to_args(a, None);
    let id = |flag: &str| match flag {
        "-D" => "defines".to_owned(),
        f => f.trim_start_matches('-').replace('-', "_"),
    };
    all.chunks(2)
        .filter(|pair| a.given.contains(&id(&pair[0])))
        .flatten()
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> PressureArgs {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        PressureArgs::parse_args(&v).unwrap()
    }

    #[test]
    fn a_sweep_plans_its_grid_and_passes_on_only_given_flags() {
        let a = parsed(&[
            "--mode",
            "in-process",
            "--policy",
            "kill,marvin",
            "--sweep",
            "coldness.window_rounds=1,2",
            "--reps",
            "2",
            "--duration",
            "3s",
            "-D",
            "ARRAYS=48",
        ]);
        let p = plan(&a).unwrap();
        assert_eq!(
            p.columns,
            [
                "kill",
                "marvin:coldness.window_rounds=1",
                "marvin:coldness.window_rounds=2"
            ]
        );
        assert_eq!(p.runs(), 6);
        // Given flags only: the defaults stay the task's own.
        assert!(p.args.contains(&"--duration".to_owned()), "{:?}", p.args);
        assert!(p.args.contains(&"ARRAYS=48".to_owned()), "{:?}", p.args);
        assert!(!p.args.contains(&"--apps".to_owned()), "{:?}", p.args);
        // The task's arguments parse back to the same experiment.
        let back = PressureArgs::parse_args(&p.args).unwrap();
        assert_eq!(to_args(&back, None), to_args(&a, None));
        // 3 s, 16 launches of 0.5 s + 2 s, half a minute of setting up.
        assert_eq!(p.run_estimate, Duration::from_secs(3 + 40 + 30));
    }

    #[test]
    fn a_sweep_refuses_what_its_tasks_cannot_run() {
        let err = |args: &[&str]| plan(&parsed(args)).unwrap_err();
        assert!(err(&["--policy", "kill"]).contains("--mode processes or --mode in-process"));
        assert!(err(&["--mode", "in-process", "--shard", "1/2"]).contains("--shard"));
        assert!(err(&["--mode", "in-process", "--json"]).contains("--json"));
        assert!(err(&["--mode", "in-process", "--policy", "kernel-swap"])
            .contains("kernel-swap does not run"));
        assert!(err(&["--mode", "in-process", "--apps", "0"]).contains("--apps"));
        assert!(err(&[
            "--mode",
            "in-process",
            "--policy",
            "kill",
            "--sweep",
            "a.b=1"
        ])
        .contains("marvin is not among"));
        assert!(
            err(&["--mode", "in-process", "--workload", "/nonexistent/w.masm"])
                .contains("cannot read")
        );
    }
}
