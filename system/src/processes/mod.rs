//! The process mode of the System: every app its own OS process inside one memory
//! cgroup that the kernel enforces, as on a phone.
//!
//! [`protocol`] is the control protocol on the app's standard streams,
//! [`app_process`] the child side (`marvin app`), [`launcher`] the System's handle on
//! one child, and [`run`] one policy's run: the activity manager, the low-memory
//! killer, Marvin's reclaimer and the sampler; [`trace`] its Perfetto trace with every
//! app process's own; [`native_out`] Marvin's reach into a background app's native
//! buffers (paged out to the kernel's swap). The machine-side pieces (the cgroup,
//! swap, the killer's mechanism, per-process counters) are in [`marvin_machine`].

pub mod app_process;
pub mod death;
pub mod kill_hold;
pub mod launcher;
pub mod native_out;
pub mod protocol;
pub mod reclaimer;
pub mod run;
pub mod spawner;
pub mod trace;

pub use run::{ProcessConfig, SettleMode};

use anyhow::Context;

use super::{PolicySeries, PressurePolicy, Summary};

/// Runs every policy in turn in the process mode; `progress` as for
/// [`super::run`].
pub fn run(
    cfg: &ProcessConfig,
    policies: &[PressurePolicy],
    progress: &(dyn Fn(PressurePolicy, std::time::Duration, u32, u32, u64, u64) + Sync),
) -> anyhow::Result<Vec<(Summary, PolicySeries)>> {
    if let Some(p) = policies.iter().find(|p| **p == PressurePolicy::PageSwap) {
        anyhow::bail!(
            "{} is the in-process model's swap baseline; the process mode runs real \
             Linux swap as kernel-swap",
            p.name()
        );
    }
    // The machine is this run's from before the first settle to the last policy's end
    // (`cfg.machine`, held by the experiment), so no other real-mode run comes in between.
    // The System's pages stay in memory, as lmkd's do: a fault on its code or on an app's
    // reclaim table would wait for the disk the apps keep busy (seconds, measured).
    let _locked = match marvin_machine::sys::lock_memory() {
        Ok(l) => Some(l),
        Err(e) => {
            marvin_console::errln!(
                "marvin: the System's memory is not locked ({e}); it may stall on page faults"
            );
            None
        }
    };
    let mut out = Vec::new();
    for &p in policies {
        let settled = settle_before(cfg.settle, p)?;
        let cb = |t, alive, active, kills, bytes| progress(p, t, alive, active, kills, bytes);
        let (mut summary, series) = run::run_policy(cfg, p, &cb)?;
        summary.settle = settled;
        out.push((summary, series));
    }
    Ok(out)
}

/// Brings the disks to rest before `p` starts, as `mode` asks, and says what it found.
fn settle_before(
    mode: SettleMode,
    p: PressurePolicy,
) -> anyhow::Result<Option<marvin_machine::settle::Settled>> {
    use marvin_machine::settle;
    let drop_caches = match mode {
        SettleMode::Off => return Ok(None),
        SettleMode::Wait => false,
        SettleMode::DropCaches => true,
    };
    let settled = settle::settle_machine(&settle::SettleConfig::default(), drop_caches)
        .context("bringing the disks to rest before the policy")?;
    marvin_machine::announce(&format!("before {}: {}", p.name(), settled.describe()));
    Ok(Some(settled))
}
