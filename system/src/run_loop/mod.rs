//! One policy's run, written once for both ways of hosting an app: the driver's loop
//! ([`drive`]) turns the activity manager, lets the host act on memory pressure, reaps,
//! observes activity, samples the series and the summary, and takes the final sample;
//! its launch phase (launches, bringing an app to the foreground, finishing a launch at
//! its frame, the UI thread of the app in front) is in [`front`], the per-app state both
//! hosts share ([`Apps`]) in [`apps`].
//!
//! A [`Host`] says only what differs between the two: how an app is started, told to
//! come to the front or go to the back, observed (its rounds, its frame, its threads)
//! and stopped, and what it does under pressure between turns. The in-process model
//! ([`crate::engine`]) hosts the apps as threads of this process, its pressure handled
//! on the allocating threads by the budget ([`crate::budget`]); the process mode
//! ([`crate::processes`]) hosts them as processes in a memory cgroup, with the
//! low-memory killer and Marvin's reclaimer in its pressure step.
//!
//! A new pressure policy is its own file plus one line in the registry of policies,
//! [`crate::policies::REGISTRY`]: the hosts ask the registry what a policy does (whether
//! its apps swap objects, which host runs it), never its name.

mod apps;
mod front;
mod host;

use std::time::{Duration, Instant};

use marvin_machine::signals;

use crate::activity::Thresholds;
use crate::activity_manager::ActivityManager;
use crate::series::PolicySeries;
use crate::summary::Summary;
use crate::{PressurePolicy, SystemConfig};

pub(crate) use apps::Apps;
pub(crate) use host::{Frame, Host, Told, LAUNCH_ROOM};

/// Progress callback: (elapsed, alive, active, kills, accounted bytes).
pub type Progress<'a> = &'a (dyn Fn(Duration, u32, u32, u64, u64) + Sync);

/// Runs one policy's run over `host` and returns its summary and time series.
pub(crate) fn drive<H: Host>(
    host: &mut H,
    apps: &mut Apps,
    cfg: &SystemConfig,
    pressure: PressurePolicy,
    progress: Progress<'_>,
) -> anyhow::Result<(Summary, PolicySeries)> {
    let th = Thresholds::scaled(cfg.time_scale);
    let mut series = PolicySeries {
        rep: 0,
        policy: pressure.name().to_string(),
        points: Vec::new(),
    };
    let mut summary = Summary::new(pressure.name());
    host.begin_summary(&mut summary);
    let mut am: ActivityManager<H::Before> = ActivityManager::new(cfg);
    let mut next_sample = Duration::ZERO;
    let mut ui = front::Ui::default();
    loop {
        if signals::stop_requested().is_some() {
            break;
        }
        let _turn = host.begin_turn(apps)?;
        let now = apps.now();
        if am.over(now, apps.launched()) {
            break;
        }
        am.turn(&mut front::Front::new(host, apps, &mut ui), now)?;
        host.pressure_step(apps)?;
        host.reap(apps);
        apps.observe_activity(host, th);
        if now >= next_sample {
            let p = host.sample(apps);
            summary.observe(&p);
            progress(now, p.alive, p.active, p.kills, p.accounted_bytes);
            series.push_sample(p, cfg.sample_every);
            next_sample += cfg.sample_every;
        }
        if let Some(tick) = host.activity_tick() {
            between_turns(host, apps, &mut ui, &mut am, cfg.sample_every, tick, th)?;
        }
    }
    // A launch still under way when the run ends never finished.
    let phase = am.finish(apps.now());
    host.end_run(apps);
    apps.observe_activity(host, th);
    let p = host.sample(apps);
    summary.observe(&p);
    summary.final_alive = p.alive;
    summary.final_active = p.active;
    series.push_sample(p, cfg.sample_every);
    summary.set_launches(phase.records, phase.unfinished);
    host.finish(apps, &mut summary);
    Ok((summary, series))
}

/// Until the next turn (`every` from now): rounds are watched more often than the
/// series is sampled, so that the gap between two rounds is known to within a tick, not
/// a sampling period; the app in front is raised once its UI thread runs, and the
/// launch phase goes on.
fn between_turns<H: Host>(
    host: &mut H,
    apps: &mut Apps,
    ui: &mut front::Ui,
    am: &mut ActivityManager<H::Before>,
    every: Duration,
    tick: Duration,
    th: Thresholds,
) -> anyhow::Result<()> {
    let next_turn = Instant::now() + every;
    loop {
        let left = next_turn.saturating_duration_since(Instant::now());
        if left.is_zero() || signals::stop_requested().is_some() {
            return Ok(());
        }
        std::thread::sleep(left.min(tick));
        apps.observe_activity(host, th);
        let mut front = front::Front::new(host, apps, ui);
        if let Some(f) = front.apps.fg {
            front.raise_ui(f);
        }
        am.drive_launches(&mut front)?;
    }
}
