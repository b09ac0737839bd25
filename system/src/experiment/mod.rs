//! The pressure experiment as a library (`marvin pressure`): its settings as flags
//! ([`PressureArgs`], recorded in each results directory and read back by `--config`),
//! their checks, what they resolve to (the mode, the policies, the columns and runs of
//! the plan), the runs themselves and the results they write.
//!
//! [`run`] is the one entry point; the command line parses the flags, calls it and
//! exits with the status it returns.

mod checks;
mod columns;
mod driver;
mod flags;
mod guards;
mod halt;
mod mode;
mod prepare;
mod report;
mod settings;
mod sweep_plan;
#[cfg(test)]
mod tests;

pub use checks::MIN_BUDGET;
pub use driver::run;
pub use flags::{given_ids, ModeArg, PolicyChoice, PressureArgs, SettleArg, SwapDeviceArg};
pub use guards::guards;
pub use settings::{model_policy, process_model_policy, read_policy};
pub use sweep_plan::{plan as plan_sweep, SweepPlan};
