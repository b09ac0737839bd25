//! A low-memory killer in the manner of Android's lmkd, acting on the run's cgroup from
//! outside it: every tracked app gets an `oom_score_adj` from its state (written to
//! `/proc/PID/oom_score_adj`, so the kernel's OOM killer, should it ever act, agrees
//! on the order); [`Killer::watch`] waits for a pressure event or its poll interval,
//! samples the group, and when [`lmk_policy::kill_reason`] says so kills the victim of
//! [`lmk_policy::choose_victim`] through a pidfd (`pidfd_send_signal(SIGKILL)`, then
//! `process_mrelease` where the kernel has it). Like lmkd it kills one app at a time
//! and waits for that one to be gone before it kills another. Its kills are counted
//! here; the kernel's OOM kills come from the group ([`Group::oom_kills`]).

use std::collections::BTreeMap;
use std::fs;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::time::Duration;

use super::cgroup::Group;
use super::error::{HostError, Result};
use super::lmk_policy::{self, AppState, Candidate, Reason, Sample, Trigger};
use super::psi::{self, PsiEvents, StallSource};
use super::swapdev::{self, SwapDevice};
use super::sys;
use marvin_runtime::procfs;

/// A kill the killer made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kill {
    pub pid: u32,
    pub adj: i32,
    pub rss_bytes: u64,
    pub reason: Reason,
    /// Whether `process_mrelease` freed the memory right away.
    pub released: bool,
}

struct Tracked {
    pidfd: OwnedFd,
    adj: i32,
}

/// The killer of one run's group.
pub struct Killer<'g> {
    group: &'g Group,
    trigger: Trigger,
    /// What wakes the killer before its poll interval: critical pressure (when the
    /// trigger kills on it) and, on v1, the usage threshold crossing.
    events: Vec<PsiEvents>,
    /// Which of `events` is the complete-stall registration, and where it comes from.
    critical_at: Option<usize>,
    stall_source: Option<StallSource>,
    /// The run's swap device, whose free space the trigger may watch.
    swap: Option<PathBuf>,
    apps: BTreeMap<u32, Tracked>,
    /// The last victim, until it has exited.
    dying: Option<OwnedFd>,
    kills: Vec<Kill>,
}

impl<'g> Killer<'g> {
    /// A killer for `group`; with `trigger.on_critical` it registers for complete
    /// stalls ([`PsiEvents::complete_stall`]), with a usage threshold for its
    /// crossing where the kernel offers that (v1); an error if the kernel refuses a
    /// registration.
    pub fn new(group: &'g Group, trigger: Trigger) -> Result<Killer<'g>> {
        let mut events = Vec::new();
        let mut critical_at = None;
        let mut stall_source = None;
        if trigger.on_critical {
            critical_at = Some(events.len());
            let (ev, source) = PsiEvents::complete_stall(group)?;
            events.push(ev);
            stall_source = Some(source);
        }
        if let Some(h) = trigger.headroom_bytes {
            let threshold = group.limit()?.saturating_sub(h);
            events.extend(PsiEvents::usage_crossing(group, threshold)?);
        }
        Ok(Killer {
            group,
            trigger,
            events,
            critical_at,
            stall_source,
            swap: None,
            apps: BTreeMap::new(),
            dying: None,
            kills: Vec::new(),
        })
    }

    /// Watches the free space of the run's swap device (for
    /// [`Trigger::swap_free_low_bytes`]).
    pub fn with_swap(mut self, swap: &SwapDevice) -> Killer<'g> {
        self.swap = Some(swap.path().to_path_buf());
        self
    }

    /// Starts tracking the app process `pid` in `state`.
    pub fn track(&mut self, pid: u32, state: AppState) -> Result<()> {
        let pidfd = sys::pidfd_open(pid)
            .map_err(|e| HostError::io("pidfd_open for", format!("pid {pid}"), e))?;
        self.apps.insert(
            pid,
            Tracked {
                pidfd,
                adj: i32::MIN,
            },
        );
        self.set_state(pid, state)
    }

    /// The app `pid` changed state: writes its new `oom_score_adj`.
    pub fn set_state(&mut self, pid: u32, state: AppState) -> Result<()> {
        let adj = lmk_policy::oom_score_adj(state);
        let Some(app) = self.apps.get_mut(&pid) else {
            return Err(HostError::Refused(format!(
                "pid {pid} is not tracked by the killer"
            )));
        };
        if app.adj != adj {
            let path = format!("/proc/{pid}/oom_score_adj");
            fs::write(&path, adj.to_string()).map_err(|e| HostError::io("writing", path, e))?;
            app.adj = adj;
        }
        Ok(())
    }

    /// Stops tracking `pid` (it exited or was stopped by the activity manager).
    pub fn forget(&mut self, pid: u32) {
        self.apps.remove(&pid);
    }

    /// Where the complete-stall signal comes from, when the trigger kills on it.
    pub fn stall_source(&self) -> Option<StallSource> {
        self.stall_source
    }

    /// The kills so far, in order.
    pub fn kills(&self) -> &[Kill] {
        &self.kills
    }

    /// Waits up to `interval` for a pressure event or a crossing of the usage
    /// threshold, then samples the group and kills one app if the trigger says so.
    /// Returns the kill made, if any.
    pub fn watch(&mut self, interval: Duration) -> Result<Option<Kill>> {
        let critical = self.wait(interval)?;
        self.step(critical)
    }

    /// Only the waiting half of [`Killer::watch`]: waits up to `interval` for a pressure
    /// event or a crossing of the usage threshold and returns whether a complete stall
    /// arrived, for a [`Killer::step`] the caller makes once it has done what it must
    /// first (Marvin's reclaimer takes what it can, so the killer decides on the state
    /// that pass left, not on one from before the wait).
    pub fn wait(&mut self, interval: Duration) -> Result<bool> {
        if self.events.is_empty() {
            std::thread::sleep(interval);
            return Ok(false);
        }
        let fired = psi::wait_any(&mut self.events, interval)?;
        Ok(self.critical_at.is_some_and(|i| fired[i]))
    }

    /// One decision on the group's state now; `critical` says whether a critical
    /// pressure event arrived.
    pub fn step(&mut self, critical: bool) -> Result<Option<Kill>> {
        if let Some(fd) = &self.dying {
            // A pidfd polls readable once its process has exited.
            let gone = sys::poll(&[(fd.as_fd(), libc::POLLIN)], Duration::ZERO)
                .map_err(|e| HostError::io("polling", "the last victim's pidfd", e))?[0];
            if !gone {
                return Ok(None);
            }
            self.dying = None;
        }
        let swap_free = match &self.swap {
            Some(path) => swapdev::active_swaps()?
                .into_iter()
                .find(|s| &s.path == path)
                .map(|s| s.size_bytes.saturating_sub(s.used_bytes)),
            None => None,
        };
        let sample = Sample {
            // What the kernel cannot simply drop: inactive page cache is not pressure.
            usage: self.group.working_set()?,
            limit: self.group.limit()?,
            critical,
            swap_free,
        };
        let Some(reason) = lmk_policy::kill_reason(&sample, &self.trigger) else {
            return Ok(None);
        };
        let candidates: Vec<Candidate> = self
            .apps
            .iter()
            .filter_map(|(&pid, app)| {
                // An app that has exited meanwhile has no status memory lines.
                let rss_bytes = procfs::mem(pid).ok()?.rss();
                Some(Candidate {
                    pid,
                    adj: app.adj,
                    rss_bytes,
                })
            })
            .collect();
        let Some(victim) = lmk_policy::choose_victim(&candidates, self.trigger.min_adj) else {
            return Ok(None);
        };
        let app = self
            .apps
            .remove(&victim.pid)
            .expect("the victim was a candidate");
        match sys::pidfd_send_signal(app.pidfd.as_fd(), libc::SIGKILL) {
            Ok(()) => {}
            // It exited between the sample and the kill: nothing to count.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(None),
            Err(e) => {
                return Err(HostError::io(
                    "pidfd_send_signal(SIGKILL) to",
                    format!("pid {}", victim.pid),
                    e,
                ))
            }
        }
        let released = sys::process_mrelease(app.pidfd.as_fd()).unwrap_or(false);
        self.dying = Some(app.pidfd);
        let kill = Kill {
            pid: victim.pid,
            adj: victim.adj,
            rss_bytes: victim.rss_bytes,
            reason,
            released,
        };
        self.kills.push(kill);
        Ok(Some(kill))
    }
}
