//! Memory notifications for a run's group, which wake the killer at once instead of at
//! its next poll: cgroup v1's `memory.pressure_level` and usage thresholds on
//! `memory.usage_in_bytes` through `cgroup.event_control` and an eventfd, or a PSI
//! trigger on v2's `memory.pressure` (a stall over a window: the kernel signals
//! `POLLPRI`).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;
use std::time::Duration;

use super::cgroup::{Group, Version};
use super::error::{HostError, Result};
use super::sys;

/// The v1 pressure levels (vmpressure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Low,
    Medium,
    Critical,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Low => "low",
            Level::Medium => "medium",
            Level::Critical => "critical",
        }
    }

    /// The PSI triggers for the level, the preferred first: lmkd's stall thresholds
    /// (`psi_partial_stall_ms` 70 ms of `some` stall per second for low, 100 ms for
    /// medium, and `psi_complete_stall_ms` 700 ms of `full` stall per second for
    /// critical: every task of the group stalled on memory for most of a second),
    /// over a 1-second window, and the same share over 2 seconds: without
    /// `CAP_SYS_RESOURCE` (root in a container often lacks it) the kernel takes only
    /// windows that are whole multiples of 2 s.
    fn psi_triggers(self) -> [&'static str; 2] {
        match self {
            Level::Low => ["some 70000 1000000", "some 140000 2000000"],
            Level::Medium => ["some 100000 1000000", "some 200000 2000000"],
            Level::Critical => ["full 700000 1000000", "full 1400000 2000000"],
        }
    }
}

/// The machine's memory pressure file (PSI).
pub const MACHINE_PSI: &str = "/proc/pressure/memory";

/// Where the complete-stall signal of [`PsiEvents::complete_stall`] comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallSource {
    /// The group's own `memory.pressure` (cgroup v2).
    GroupPsi,
    /// The machine's `/proc/pressure/memory` (cgroup v1 with PSI).
    MachinePsi,
    /// v1's `memory.pressure_level` at `critical` (no PSI).
    Vmpressure,
}

impl StallSource {
    /// What it is, for messages and the summary.
    pub fn describe(self) -> &'static str {
        match self {
            StallSource::GroupPsi => "the group's PSI (memory.pressure)",
            StallSource::MachinePsi => "the machine's PSI (/proc/pressure/memory)",
            StallSource::Vmpressure => "v1 vmpressure at critical",
        }
    }
}

enum Source {
    /// The eventfd registered with `cgroup.event_control`, and the open control file
    /// it listens on (kept open for the registration's life).
    V1 { eventfd: File, _level: File },
    /// An open `memory.pressure` with a trigger written to it.
    Psi { file: File },
}

/// A registration for memory events of one kind; dropping it unregisters.
pub struct PsiEvents {
    source: Source,
}

impl PsiEvents {
    /// Registers for `level` events of `group`.
    pub fn open(group: &Group, level: Level) -> Result<PsiEvents> {
        match group.version() {
            Version::V1 => register_v1(group, "memory.pressure_level", level.name()),
            Version::V2 => PsiEvents::open_psi(&group.path().join("memory.pressure"), level),
        }
    }

    /// v1 only: an event each time the group's usage crosses `bytes` (either way), so
    /// a killer with a usage threshold wakes at once instead of at its next poll.
    /// `None` on v2, which has no such notification (the killer polls there).
    pub fn usage_crossing(group: &Group, bytes: u64) -> Result<Option<PsiEvents>> {
        match group.version() {
            Version::V1 => {
                register_v1(group, "memory.usage_in_bytes", &bytes.to_string()).map(Some)
            }
            Version::V2 => Ok(None),
        }
    }

    /// Registers a PSI trigger on a `memory.pressure` file (a v2 group's, or the
    /// machine's `/proc/pressure/memory`): the level's 1-second trigger, or its
    /// 2-second one where the kernel refuses the first.
    pub fn open_psi(path: &Path, level: Level) -> Result<PsiEvents> {
        let mut last = None;
        for trigger in level.psi_triggers() {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .map_err(|e| HostError::io("opening", path, e))?;
            // The trigger is one write with its terminating NUL, as the PSI docs show.
            let mut bytes = trigger.as_bytes().to_vec();
            bytes.push(0);
            match file.write_all(&bytes) {
                Ok(()) => {
                    return Ok(PsiEvents {
                        source: Source::Psi { file },
                    })
                }
                Err(e) => last = Some(e),
            }
        }
        let e = last.expect("every level has triggers");
        Err(HostError::io("writing a PSI trigger to", path, e))
    }

    /// Registers for the complete stalls lmkd kills on when a device has swap
    /// (`NOT_RESPONDING`: `full` memory stall of 700 ms in a second): on v2 the group's
    /// own `memory.pressure`; on v1, which keeps no pressure figures per group, the
    /// machine's `/proc/pressure/memory` where the kernel has PSI (every stall of the
    /// group's tasks counts there, and so do other processes' stalls, if any), else
    /// v1's `critical` vmpressure level. Says which it chose.
    pub fn complete_stall(group: &Group) -> Result<(PsiEvents, StallSource)> {
        match group.version() {
            Version::V2 => {
                let ev =
                    PsiEvents::open_psi(&group.path().join("memory.pressure"), Level::Critical)?;
                Ok((ev, StallSource::GroupPsi))
            }
            Version::V1 => {
                let machine = Path::new(MACHINE_PSI);
                if machine.exists() {
                    if let Ok(ev) = PsiEvents::open_psi(machine, Level::Critical) {
                        return Ok((ev, StallSource::MachinePsi));
                    }
                }
                let ev = register_v1(group, "memory.pressure_level", Level::Critical.name())?;
                Ok((ev, StallSource::Vmpressure))
            }
        }
    }

    /// Waits up to `timeout` for an event; true if one (or more) arrived.
    pub fn wait(&mut self, timeout: Duration) -> Result<bool> {
        Ok(wait_any(std::slice::from_mut(self), timeout)?[0])
    }
}

/// Registers an eventfd with a v1 group's `cgroup.event_control` for events of the
/// control file `file` with argument `arg`.
fn register_v1(group: &Group, file: &str, arg: &str) -> Result<PsiEvents> {
    let path = group.path().join(file);
    let watched = File::open(&path).map_err(|e| HostError::io("opening", &path, e))?;
    let efd: OwnedFd = sys::eventfd().map_err(|e| HostError::io("eventfd for", &path, e))?;
    let control = group.path().join("cgroup.event_control");
    let line = format!("{} {} {arg}", efd.as_raw_fd(), watched.as_raw_fd());
    std::fs::write(&control, line).map_err(|e| HostError::io("registering with", &control, e))?;
    Ok(PsiEvents {
        source: Source::V1 {
            eventfd: File::from(efd),
            _level: watched,
        },
    })
}

/// Waits up to `timeout` until any of `events` fires; returns which did (and resets
/// their counters).
pub fn wait_any(events: &mut [PsiEvents], timeout: Duration) -> Result<Vec<bool>> {
    let fds: Vec<_> = events
        .iter()
        .map(|e| match &e.source {
            Source::V1 { eventfd, .. } => (eventfd.as_fd(), libc::POLLIN),
            Source::Psi { file } => (file.as_fd(), libc::POLLPRI),
        })
        .collect();
    let fired = sys::poll(&fds, timeout)
        .map_err(|e| HostError::io("waiting for", "memory pressure events", e))?;
    drop(fds);
    for (e, &f) in events.iter_mut().zip(&fired) {
        if let (true, Source::V1 { eventfd, .. }) = (f, &mut e.source) {
            // Reset the counter (non-blocking; the value is the number of events).
            let mut buf = [0u8; 8];
            let _ = eventfd.read(&mut buf);
        }
    }
    Ok(fired)
}
