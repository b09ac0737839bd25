//! The one entry point that runs every policy of an experiment ([`run`]), in either way
//! of hosting the apps ([`Hosting`]): each policy is checked against the registry
//! ([`crate::policies`]) first, then run in turn through the one run loop
//! ([`crate::run_loop`]) over its host.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use marvin_interpreter::exec::Loaded;
use marvin_swap::PolicyConfig;

use crate::policies::{self, Host};
use crate::processes::{ProcessConfig, SettleMode};
use crate::{engine, native_heap, processes, PolicySeries, PressurePolicy, Summary, SystemConfig};

/// How the apps of a run are hosted, with what that way needs.
pub enum Hosting {
    /// The in-process model: every app a set of threads of this process, running
    /// `loaded` under Marvin's swap `policy`, within the budget the runtime counts.
    InProcess {
        cfg: SystemConfig,
        loaded: Arc<Loaded>,
        policy: Arc<PolicyConfig>,
    },
    /// The process mode: every app a process in one memory cgroup the kernel enforces.
    Processes(ProcessConfig),
}

impl Hosting {
    /// The host of the registry this is.
    pub fn host(&self) -> Host {
        match self {
            Hosting::InProcess { .. } => Host::InProcess,
            Hosting::Processes(_) => Host::Processes,
        }
    }
}

/// Progress of a run of every policy: (policy, elapsed, alive, active, kills, accounted
/// bytes) as each run goes.
pub type AllProgress<'a> = &'a (dyn Fn(PressurePolicy, Duration, u32, u32, u64, u64) + Sync);

/// Runs every policy in turn, hosted as `hosting` says; `progress` hears of each run as
/// it goes. A policy the host does not run is refused before any runs.
pub fn run(
    hosting: &Hosting,
    policies: &[PressurePolicy],
    progress: AllProgress<'_>,
) -> anyhow::Result<Vec<(Summary, PolicySeries)>> {
    let host = hosting.host();
    if let Some(p) = policies.iter().find(|p| !p.runs_in(host)) {
        let names: Vec<&str> = policies::defaults(host).iter().map(|p| p.name()).collect();
        anyhow::bail!(
            "{} does not run in the {} (which runs {})",
            p.name(),
            host.mode_name(),
            names.join(", ")
        );
    }
    // The process mode's System keeps its pages in memory, as lmkd does: a fault on its
    // code or on an app's reclaim table would wait for the disk the apps keep busy
    // (seconds, measured). The model's apps share this process's allocator: its arenas
    // are limited.
    let _locked = match hosting {
        Hosting::InProcess { .. } => {
            native_heap::limit_arenas();
            None
        }
        Hosting::Processes(_) => match marvin_machine::sys::lock_memory() {
            Ok(l) => Some(l),
            Err(e) => {
                marvin_console::errln!(
                    "marvin: the System's memory is not locked ({e}); it may stall on page faults"
                );
                None
            }
        },
    };
    let mut out = Vec::new();
    for &p in policies {
        let cb = |t, alive, active, kills, bytes| progress(p, t, alive, active, kills, bytes);
        let result = match hosting {
            Hosting::InProcess {
                cfg,
                loaded,
                policy,
            } => engine::run_policy(cfg, p, loaded.clone(), policy.clone(), &cb)?,
            // The machine is this run's from before the first settle to the last policy's
            // end (`cfg.machine`, held by the experiment), so no other real-mode run comes
            // in between.
            Hosting::Processes(cfg) => {
                let settled = settle_before(cfg.settle, p)?;
                let (mut summary, series) = processes::run::run_policy(cfg, p, &cb)?;
                summary.settle = settled;
                (summary, series)
            }
        };
        out.push(result);
        if let Some(sig) = marvin_machine::signals::stop_requested() {
            anyhow::bail!("stopped by signal {sig}");
        }
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
