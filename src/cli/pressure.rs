//! `marvin pressure`: the multi-app experiment, run by [`marvin_system::experiment`];
//! and `marvin policy show` and `check`.

use std::path::PathBuf;

use clap::Subcommand;
use marvin_console::{out, outln};
use marvin_machine::cgroup;
use marvin_swap::PolicyConfig;
use marvin_system::experiment::{model_policy, process_model_policy, read_policy, ModeArg};
use marvin_system::{PolicyHost, REGISTRY};

pub use marvin_system::experiment::{given_ids, PressureArgs};

/// Runs `marvin pressure`; returns the exit status.
pub fn pressure(a: &PressureArgs) -> anyhow::Result<i32> {
    marvin_system::experiment::run(a)
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
            let (name, policy, host) = if processes {
                (
                    "the process mode",
                    process_model_policy(),
                    PolicyHost::Processes,
                )
            } else {
                (
                    "the in-process model",
                    model_policy(),
                    PolicyHost::InProcess,
                )
            };
            let pressure: Vec<&str> = REGISTRY
                .iter()
                .filter(|p| p.hosts.contains(&host))
                .map(|p| p.name)
                .collect();
            outln!(
                "# The policy marvin pressure runs Marvin with in {name} when no --policy-file\n\
                 # is given: the published settings, except the saver's periods (see\n\
                 # docs/experiments.md). The experiment scales every period by --time-scale;\n\
                 # give this file, edited, to --policy-file to change one knob.\n\
                 # The pressure policies {name} runs (--policy): {}.\n",
                pressure.join(", ")
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
