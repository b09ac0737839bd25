//! The process mode of the System: every app its own OS process inside one memory
//! cgroup that the kernel enforces, as on a phone.
//!
//! [`protocol`] is the control protocol on the app's standard streams,
//! [`app_process`] the child side (`marvin app`), [`launcher`] the System's handle on
//! one child, and [`run`] one policy's run: the activity manager, the low-memory
//! killer, Marvin's reclaimer and the sampler. The machine-side pieces (the cgroup,
//! swap, the killer's mechanism, per-process counters) are in [`crate::host`].

pub mod app_process;
pub mod kill_hold;
pub mod launcher;
pub mod protocol;
pub mod run;

pub use run::ProcessConfig;

use super::{PolicySeries, Pressure, Summary};

/// Runs every policy in turn in the process mode; `progress` as for
/// [`super::run`].
pub fn run(
    cfg: &ProcessConfig,
    policies: &[Pressure],
    progress: &(dyn Fn(Pressure, std::time::Duration, u32, u32, u64, u64) + Sync),
) -> anyhow::Result<Vec<(Summary, PolicySeries)>> {
    if let Some(p) = policies.iter().find(|p| **p == Pressure::PageSwap) {
        anyhow::bail!(
            "{} is the in-process model's swap baseline; the process mode runs real \
             Linux swap as kernel-swap",
            p.name()
        );
    }
    let mut out = Vec::new();
    for &p in policies {
        let cb = |t, alive, active, kills, bytes| progress(p, t, alive, active, kills, bytes);
        out.push(run::run_policy(cfg, p, &cb)?);
    }
    Ok(out)
}
