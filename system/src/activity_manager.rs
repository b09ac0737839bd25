//! The activity manager, written once for both ways of hosting an app: it decides when a
//! new app is launched, when the foreground is switched round robin, and, once every app
//! is launched, which app the launch phase brings back next and when the run is over.
//! What it decides is carried out by an [`AppHost`]: the apps as threads of this process
//! ([`crate::engine`], the in-process model) or as processes in the run's memory cgroup
//! ([`crate::processes`], the process mode). Reaping, sampling, killing and reclaiming
//! stay with each host, which calls [`ActivityManager::turn`] once per turn of its loop.

use std::time::Duration;

use crate::launch::{LaunchPhase, Pending};
use crate::SystemConfig;

/// One way to host the apps of a run: what the activity manager asks of it.
pub trait AppHost {
    /// What a launch keeps of its app from before the app is told (to count what the
    /// launch brought back).
    type Before;

    /// The time since the run began.
    fn now(&self) -> Duration;
    /// The apps launched so far (their ids are `0..launched`).
    fn launched(&self) -> usize;
    /// The app in front.
    fn foreground(&self) -> Option<usize>;
    /// Launches the next new app (id [`launched`](AppHost::launched)) in the foreground;
    /// the app in front goes to the background.
    fn launch_new(&mut self) -> anyhow::Result<()>;
    /// Brings app `id` to the foreground (the app in front goes to the background): a
    /// cached app is told, a killed one starts again. Returns the launch under way.
    fn bring_to_foreground(&mut self, id: usize) -> anyhow::Result<Pending<Self::Before>>;
    /// The apps the launch phase may bring back: every launched app but the one in front
    /// and those that ended by themselves (finished or crashed).
    fn launch_candidates(&self) -> Vec<usize>;
    /// Finishes the launch under way once its app has drawn its frame, or gives it up
    /// when its app died or it timed out.
    fn check_launch(&mut self, phase: &mut LaunchPhase<Self::Before>, now: Duration);
    /// Gives the app in front its UI thread's priority (once it has one).
    fn raise_ui(&mut self, id: usize);
}

/// The activity manager of one policy's run.
pub struct ActivityManager<B> {
    apps: usize,
    launch_every: Duration,
    switch_every: Option<Duration>,
    duration: Duration,
    next_launch: Duration,
    next_switch: Option<Duration>,
    /// The launch phase: it begins once the last app has had its turn in front.
    phase: LaunchPhase<B>,
    /// Whether there is one (off when the foreground is switched round robin instead).
    phase_on: bool,
}

impl<B> ActivityManager<B> {
    /// The activity manager of a run with `cfg`'s apps, launches, switches and duration.
    pub fn new(cfg: &SystemConfig) -> ActivityManager<B> {
        ActivityManager {
            apps: cfg.apps,
            launch_every: cfg.launch_every,
            switch_every: cfg.switch_every,
            duration: cfg.duration,
            next_launch: Duration::ZERO,
            next_switch: cfg.switch_every,
            phase: LaunchPhase::new(cfg.launch, cfg.launch_every * cfg.apps as u32),
            phase_on: cfg.switch_every.is_none() && cfg.launch.launches > 0,
        }
    }

    /// Whether the run is over at `now` with `launched` apps launched: it lasts its
    /// duration, and longer if its launch phase is still going.
    pub fn over(&self, now: Duration, launched: usize) -> bool {
        now >= self.duration && (!self.phase_on || launched < self.apps || self.phase.is_done())
    }

    /// One turn at `now`: a new app launched when one is due, else the foreground
    /// switched when a switch is due; the launch phase's step; the app in front raised.
    pub fn turn<H: AppHost<Before = B>>(
        &mut self,
        host: &mut H,
        now: Duration,
    ) -> anyhow::Result<()> {
        let launched = host.launched();
        if launched < self.apps && now >= self.next_launch {
            host.launch_new()?;
            self.next_launch += self.launch_every;
        } else if let Some(every) = self.switch_every {
            if launched == self.apps && now >= self.next_switch.unwrap_or(Duration::MAX) {
                switch_next(host)?;
                self.next_switch = Some(now + every);
            }
        }
        self.drive_launches(host)?;
        // An app started in front has no UI thread at first: raised once seen.
        if let Some(f) = host.foreground() {
            host.raise_ui(f);
        }
        Ok(())
    }

    /// The launch phase's step, once every app is launched: finishes the launch under way
    /// once its app has drawn its frame (or gives it up), and makes the next launch when
    /// it is time.
    pub fn drive_launches<H: AppHost<Before = B>>(&mut self, host: &mut H) -> anyhow::Result<()> {
        if !self.phase_on || host.launched() != self.apps {
            return Ok(());
        }
        let now = host.now();
        host.check_launch(&mut self.phase, now);
        let candidates = host.launch_candidates();
        if let Some(next) = self.phase.next_app(now, &candidates) {
            self.phase.pending = Some(host.bring_to_foreground(next)?);
        }
        Ok(())
    }

    /// The launch phase at the run's end (`now`), a launch still under way given up: it
    /// never finished.
    pub fn finish(mut self, now: Duration) -> LaunchPhase<B> {
        self.phase.give_up(now);
        self.phase
    }
}

/// Brings the next app (round robin) to the foreground; a killed one starts cold.
fn switch_next<H: AppHost>(host: &mut H) -> anyhow::Result<()> {
    let n = host.launched();
    if n == 0 {
        return Ok(());
    }
    let next = host.foreground().map_or(0, |f| (f + 1) % n);
    host.bring_to_foreground(next)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The manager's decisions on a host that only records what it is asked, on a clock
    //! the test moves: the same decisions both real hosts carry out.

    use super::*;
    use crate::launch::{Brought, LaunchParts, LaunchPlan};

    /// A host whose apps draw their frame as soon as they are told, unless `no_frame`.
    struct ScriptedHost {
        now: Duration,
        apps: Vec<bool>,
        fg: Option<usize>,
        no_frame: bool,
        calls: Vec<String>,
    }

    impl ScriptedHost {
        fn new() -> ScriptedHost {
            ScriptedHost {
                now: Duration::ZERO,
                apps: Vec::new(),
                fg: None,
                no_frame: false,
                calls: Vec::new(),
            }
        }
    }

    impl AppHost for ScriptedHost {
        type Before = ();

        fn now(&self) -> Duration {
            self.now
        }
        fn launched(&self) -> usize {
            self.apps.len()
        }
        fn foreground(&self) -> Option<usize> {
            self.fg
        }
        fn launch_new(&mut self) -> anyhow::Result<()> {
            let id = self.apps.len();
            self.apps.push(true);
            self.fg = Some(id);
            self.calls.push(format!("launch {id}"));
            Ok(())
        }
        fn bring_to_foreground(&mut self, id: usize) -> anyhow::Result<Pending<()>> {
            self.fg = Some(id);
            self.calls.push(format!("front {id}"));
            Ok(Pending {
                app: id,
                cold: false,
                told_ns: 0,
                t_s: self.now.as_secs_f64(),
                before: (),
                frames_before: 0,
                restored_objects: 0,
            })
        }
        fn launch_candidates(&self) -> Vec<usize> {
            (0..self.apps.len())
                .filter(|i| Some(*i) != self.fg)
                .collect()
        }
        fn check_launch(&mut self, phase: &mut LaunchPhase<()>, now: Duration) {
            if phase.pending.is_some() && !self.no_frame {
                phase.finish(now, 1, |_| (Brought::default(), LaunchParts::default()));
            }
        }
        fn raise_ui(&mut self, id: usize) {
            if self.calls.last() != Some(&format!("raise {id}")) {
                self.calls.push(format!("raise {id}"));
            }
        }
    }

    fn config(apps: usize, launches: usize, switch_every: Option<Duration>) -> SystemConfig {
        SystemConfig {
            apps,
            budget: 1 << 30,
            launch_every: Duration::from_secs(1),
            duration: Duration::from_secs(4),
            switch_every,
            launch: LaunchPlan {
                launches,
                gap: Duration::from_secs(1),
                seed: 1,
                ..LaunchPlan::default()
            },
            time_scale: 1.0,
            sample_every: Duration::from_secs(1),
            gc_max_free: 1 << 20,
            swap_dir: None,
            tracer: None,
            seed: 1,
        }
    }

    /// Turns every half second until the manager says the run is over; the host's calls.
    fn run(cfg: &SystemConfig, host: &mut ScriptedHost) -> LaunchPhase<()> {
        let mut am = ActivityManager::new(cfg);
        while !am.over(host.now, host.launched()) {
            let now = host.now;
            am.turn(host, now).unwrap();
            host.now += Duration::from_millis(500);
            assert!(host.now < Duration::from_secs(60), "the run never ended");
        }
        am.finish(host.now)
    }

    #[test]
    fn apps_are_launched_one_per_interval_then_the_launch_phase_brings_them_back() {
        let mut host = ScriptedHost::new();
        let phase = run(&config(3, 2, None), &mut host);
        let launches: Vec<&String> = host
            .calls
            .iter()
            .filter(|c| c.starts_with("launch"))
            .collect();
        assert_eq!(launches, ["launch 0", "launch 1", "launch 2"]);
        // Each launch raised its app; then two launches of the phase, each of an app not
        // in front, each raised.
        assert_eq!(
            &host.calls[..6],
            ["launch 0", "raise 0", "launch 1", "raise 1", "launch 2", "raise 2"]
        );
        let fronts: Vec<&String> = host
            .calls
            .iter()
            .filter(|c| c.starts_with("front"))
            .collect();
        assert_eq!(fronts.len(), 2, "{:?}", host.calls);
        assert_eq!(phase.records.len(), 2);
        assert_eq!(phase.unfinished, 0);
        assert!(phase.is_done());
        // Not one brought back while every app was not yet launched.
        let first_front = host
            .calls
            .iter()
            .position(|c| c.starts_with("front"))
            .unwrap();
        assert!(first_front > 4);
    }

    #[test]
    fn the_run_lasts_until_its_launch_phase_is_over() {
        let mut host = ScriptedHost::new();
        host.no_frame = true;
        let mut am: ActivityManager<()> = ActivityManager::new(&config(2, 1, None));
        while host.now < Duration::from_secs(10) {
            let now = host.now;
            am.turn(&mut host, now).unwrap();
            host.now += Duration::from_millis(500);
        }
        // Past its duration (4 s), the launch that never drew its frame keeps it going.
        assert!(!am.over(host.now, host.launched()));
        let phase = am.finish(host.now);
        assert_eq!((phase.records.len(), phase.unfinished), (0, 1));
    }

    #[test]
    fn switching_round_robin_replaces_the_launch_phase() {
        let mut host = ScriptedHost::new();
        let phase = run(&config(2, 5, Some(Duration::from_secs(1))), &mut host);
        let fronts: Vec<&String> = host
            .calls
            .iter()
            .filter(|c| c.starts_with("front"))
            .collect();
        // Launched at 0 s and 1 s; switched at 1.5 s (the first turn with both) and every
        // second after, alternating, until the run's 4 s.
        assert_eq!(fronts, ["front 0", "front 1", "front 0"]);
        assert!(phase.records.is_empty(), "no launch phase beside switching");
    }
}
