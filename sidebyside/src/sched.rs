//! Scheduling of the queue benchmark's threads, as Android schedules an app's: posters
//! at background priority, and the looper either as an ordinary thread, or as the UI
//! thread of the app in front on devices that turn on FIFO UI scheduling
//! (`sys.use_fifo_ui`: the activity manager moves that thread to `SCHED_FIFO`,
//! priority 1), or grouped as Android groups threads without FIFO UI: the posters, at
//! `THREAD_PRIORITY_BACKGROUND`, in a background cpu group with low shares, the looper
//! at `THREAD_PRIORITY_DISPLAY` (nice -4) in the app-in-front group ([`Grouping`]),
//! asking the scheduler for a short time slice as a latency-critical thread
//! ([`LooperSlice`]; the same for every queue).
//! The FIFO policy needs `CAP_SYS_NICE`; [`fifo_ui_available`] says whether this
//! process may use it before a scenario relies on it. The grouping needs root.

use std::fmt;
use std::time::Duration;

use marvin_machine::{CpuController, CpuGroups};

/// How the looper thread is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LooperPolicy {
    /// The default time-sharing policy, nice 0.
    Normal,
    /// `SCHED_FIFO` at priority 1, as Android's FIFO UI scheduling runs the UI thread.
    FifoUi,
    /// Nice -4 (`THREAD_PRIORITY_DISPLAY`) in the foreground cpu group, with the
    /// posters in the background group ([`Grouping`]).
    Grouped,
}

impl fmt::Display for LooperPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LooperPolicy::Normal => "normal",
            LooperPolicy::FifoUi => "FIFO UI",
            LooperPolicy::Grouped => "top-app group",
        })
    }
}

/// The calling thread runs under a policy until this is dropped, which puts it back
/// to the default policy (and, grouped, back to its own cpu group).
#[must_use = "the policy lasts until the guard is dropped"]
pub struct Applied<'a> {
    policy: LooperPolicy,
    grouping: Option<&'a Grouping>,
    /// The nice value to go back to (grouped only).
    nice_before: i32,
}

impl LooperPolicy {
    /// Puts the calling thread under this policy (the default one needs no change).
    /// The grouped policy needs the grouping the posters are in.
    pub fn apply(self, grouping: Option<&Grouping>) -> Result<Applied<'_>, String> {
        match self {
            LooperPolicy::Normal => {}
            LooperPolicy::FifoUi => set_fifo(1)?,
            LooperPolicy::Grouped => {
                let grouping = grouping.ok_or("the grouped looper needs its cpu groups")?;
                let nice_before = current_nice()?;
                grouping.join_foreground()?;
                let placed = match grouping.looper_slice.0 {
                    Some(slice) => set_fair(THREAD_PRIORITY_DISPLAY, Some(slice)),
                    None => set_nice(THREAD_PRIORITY_DISPLAY),
                };
                if let Err(e) = placed {
                    let _ = set_fair(nice_before, None);
                    let _ = grouping.groups.leave();
                    return Err(e);
                }
                return Ok(Applied {
                    policy: self,
                    grouping: Some(grouping),
                    nice_before,
                });
            }
        }
        Ok(Applied {
            policy: self,
            grouping: None,
            nice_before: 0,
        })
    }
}

impl Drop for Applied<'_> {
    fn drop(&mut self) {
        match self.policy {
            LooperPolicy::Normal => {}
            // Back to time sharing; dropping from FIFO to the default policy needs no
            // privilege, so this does not fail.
            LooperPolicy::FifoUi => {
                let _ = set_normal();
            }
            LooperPolicy::Grouped => {
                // Going back needs the privilege that lowering the nice value took;
                // leaving the group may fail only if it is gone, and the groups' drop
                // moves threads back too. The slice goes back to the default with it.
                let sliced = self.grouping.is_some_and(|g| g.looper_slice.0.is_some());
                let _ = if sliced {
                    set_fair(self.nice_before, None)
                } else {
                    set_nice(self.nice_before)
                };
                if let Some(grouping) = self.grouping {
                    let _ = grouping.groups.leave();
                }
            }
        }
    }
}

/// Android's `THREAD_PRIORITY_DISPLAY`: the nice value of the UI thread of the app in
/// front.
pub const THREAD_PRIORITY_DISPLAY: i32 = -4;
/// Android's `THREAD_PRIORITY_BACKGROUND`.
pub const THREAD_PRIORITY_BACKGROUND: i32 = 10;
/// `cpu.shares` of Android's top-app group (the default 1024).
pub const TOP_APP_SHARES: u64 = 1024;
/// `cpu.shares` of Android's background group (`bg_non_interactive`: 52, about 5% of a
/// default group).
pub const BACKGROUND_SHARES: u64 = 52;

/// The time slice the grouped looper asks the scheduler for (`sched_setattr` with
/// `sched_runtime` on a fair thread, Linux 6.12 and later), or `None` for the kernel's
/// default (`base_slice_ns`, 1.4 ms on the test machine).
///
/// Under EEVDF a woken thread preempts the running one only if it has the earlier
/// deadline, and a thread that has just been picked keeps the CPU for its slice unless
/// the woken one asks for a shorter slice than its own; otherwise the woken looper
/// waits for the running poster's slice to end, noticed at the next tick. A looper
/// with a short slice, as a latency-critical thread such as the UI thread asks for,
/// preempts on waking instead. It is a property of the looper thread, applied alike
/// whichever queue it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LooperSlice(pub Option<Duration>);

impl LooperSlice {
    /// The shortest slice the kernel grants (it clamps requests to 0.1-100 ms).
    pub const MIN: Duration = Duration::from_micros(100);
    /// The longest.
    pub const MAX: Duration = Duration::from_millis(100);
    /// The default: the shortest slice.
    pub const DEFAULT: LooperSlice = LooperSlice(Some(LooperSlice::MIN));

    /// From a number of microseconds: 0 is the kernel's default slice, else 100-100,000.
    pub fn from_micros(us: u64) -> Result<LooperSlice, String> {
        if us == 0 {
            return Ok(LooperSlice(None));
        }
        let slice = Duration::from_micros(us);
        if slice < LooperSlice::MIN || slice > LooperSlice::MAX {
            return Err(format!(
                "a looper slice of {us} us is outside the kernel's range: give 0 (the \
                 kernel's default) or 100 to 100000 us"
            ));
        }
        Ok(LooperSlice(Some(slice)))
    }
}

impl fmt::Display for LooperSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(slice) => write!(f, "{} us", slice.as_micros()),
            None => f.write_str("the kernel's default"),
        }
    }
}

/// Android's grouping of an app's threads without FIFO UI, set up for one scenario:
/// two cpu groups (`top-app` with [`TOP_APP_SHARES`], `background` with
/// [`BACKGROUND_SHARES`]) under one group of this run, announced on stderr and removed
/// when dropped (also while a panic unwinds), and the slice the looper asks for
/// ([`LooperSlice`]). Needs root and a cpu controller.
pub struct Grouping {
    groups: CpuGroups,
    looper_slice: LooperSlice,
}

impl Grouping {
    /// Creates the groups (removing first what runs killed outright left).
    pub fn create(looper_slice: LooperSlice) -> Result<Grouping, String> {
        let controller = CpuController::available().map_err(|e| e.to_string())?;
        controller.sweep().map_err(|e| e.to_string())?;
        let groups = controller
            .create(&[
                ("top-app", TOP_APP_SHARES),
                ("background", BACKGROUND_SHARES),
            ])
            .map_err(|e| e.to_string())?;
        Ok(Grouping {
            groups,
            looper_slice,
        })
    }

    /// Makes the calling thread a background poster: nice 10 in the background group.
    pub fn join_background(&self) -> Result<(), String> {
        self.groups.join("background").map_err(|e| e.to_string())?;
        set_nice(THREAD_PRIORITY_BACKGROUND)
    }

    /// Moves the calling thread into the top-app group.
    fn join_foreground(&self) -> Result<(), String> {
        self.groups.join("top-app").map_err(|e| e.to_string())
    }

    /// The thread ids in the group `name` (`top-app` or `background`).
    #[cfg(test)]
    pub fn threads(&self, name: &str) -> Result<Vec<u32>, String> {
        self.groups.threads(name).map_err(|e| e.to_string())
    }
}

/// Whether this process may run a thread as a FIFO UI looper; if not, why (tried on a
/// short-lived thread, so no thread of the caller changes policy).
pub fn fifo_ui_available() -> Result<(), String> {
    std::thread::spawn(|| set_fifo(1))
        .join()
        .unwrap_or_else(|_| Err("the probe thread panicked".to_string()))
        .map_err(|e| {
            format!(
                "{e} (needs CAP_SYS_NICE, and under a cgroup-v1 cpu controller a group \
                 with cpu.rt_runtime_us above 0)"
            )
        })
}

/// Lowers the calling thread to Android's background priority (nice 10,
/// `THREAD_PRIORITY_BACKGROUND`), as app worker threads posting to the UI looper run.
/// Failure leaves the priority as it was, which only makes a scenario harsher for the
/// looper, so it is not reported.
pub fn as_background_thread() {
    let _ = set_nice(THREAD_PRIORITY_BACKGROUND);
}

/// Sets the calling thread's nice value (lowering it below the current one needs
/// `CAP_SYS_NICE`).
#[cfg(target_os = "linux")]
fn set_nice(nice: i32) -> Result<(), String> {
    // SAFETY: `setpriority` only changes the scheduling priority of the calling thread
    // (`who` 0 is the caller on Linux, where priority is per thread).
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "setpriority(nice {nice}) failed: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// Puts the calling thread under the default fair policy at `nice` with a time slice of
/// `slice` (`None`: the kernel's default slice). Kernels before 6.12 accept the call but
/// ignore the slice.
#[cfg(target_os = "linux")]
fn set_fair(nice: i32, slice: Option<Duration>) -> Result<(), String> {
    let attr = libc::sched_attr {
        size: std::mem::size_of::<libc::sched_attr>() as u32,
        sched_policy: libc::SCHED_OTHER as u32,
        sched_flags: 0,
        sched_nice: nice,
        sched_priority: 0,
        // 0 asks for the default slice.
        sched_runtime: slice.map_or(0, |s| s.as_nanos() as u64),
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: `attr` is a valid, fully initialised `sched_attr` whose `size` field is
    // its own size, and it outlives the call; pid 0 is the calling thread, whose
    // scheduling alone changes; flags 0.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const _, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "sched_setattr(nice {nice}, slice {}) failed: {}",
            LooperSlice(slice),
            std::io::Error::last_os_error()
        ))
    }
}

#[cfg(not(target_os = "linux"))]
fn set_fair(nice: i32, _slice: Option<Duration>) -> Result<(), String> {
    set_nice(nice)
}

/// The calling thread's nice value.
#[cfg(target_os = "linux")]
fn current_nice() -> Result<i32, String> {
    // The raw system call returns 20 - nice (1 to 40), so no value is mistaken for an
    // error, unlike the C library's wrapper.
    // SAFETY: `getpriority` only reads the calling thread's priority (`who` 0).
    let rc = unsafe { libc::syscall(libc::SYS_getpriority, libc::PRIO_PROCESS, 0) };
    if rc < 0 {
        return Err(format!(
            "getpriority failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(20 - rc as i32)
}

#[cfg(not(target_os = "linux"))]
fn current_nice() -> Result<i32, String> {
    Ok(0)
}

#[cfg(not(target_os = "linux"))]
fn set_nice(_nice: i32) -> Result<(), String> {
    Err("thread priorities are implemented for Linux only".to_string())
}

#[cfg(target_os = "linux")]
fn set_fifo(priority: i32) -> Result<(), String> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid `sched_param` that outlives the call; pid 0 is the
    // calling thread, whose policy alone changes.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "sched_setscheduler(SCHED_FIFO, {priority}) failed: {}",
            std::io::Error::last_os_error()
        ))
    }
}

#[cfg(target_os = "linux")]
fn set_normal() -> Result<(), String> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: as in `set_fifo`.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

#[cfg(not(target_os = "linux"))]
fn set_fifo(_priority: i32) -> Result<(), String> {
    Err("FIFO UI scheduling is implemented for Linux only".to_string())
}

#[cfg(not(target_os = "linux"))]
fn set_normal() -> Result<(), String> {
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_normal_policy_changes_nothing_and_fifo_ui_is_probed_without_side_effects() {
        let before = current_policy();
        let applied = LooperPolicy::Normal.apply(None).expect("no change needed");
        assert_eq!(current_policy(), before);
        drop(applied);
        // Whatever the answer (it depends on privileges), probing leaves this thread
        // alone; when allowed, applying switches to FIFO and dropping switches back.
        if fifo_ui_available().is_ok() {
            let applied = LooperPolicy::FifoUi
                .apply(None)
                .expect("probed as available");
            assert_eq!(current_policy(), libc::SCHED_FIFO);
            drop(applied);
        } else {
            assert!(LooperPolicy::FifoUi.apply(None).is_err());
        }
        assert_eq!(current_policy(), before);
    }

    /// The grouped policy puts the looper in the top-app group at nice -4 and takes it
    /// back out; posters land in the background group at nice 10 (root only).
    #[test]
    fn grouping_places_looper_and_posters_and_undoes_it() {
        let grouping = match Grouping::create(LooperSlice::DEFAULT) {
            Ok(g) => g,
            Err(why) => {
                eprintln!("skipped: {why}");
                return;
            }
        };
        std::thread::scope(|s| {
            s.spawn(|| {
                let me = current_tid();
                let before = stat_nice();
                let slice_before = sched_slice();
                assert_eq!(current_nice(), Ok(before));
                let applied = LooperPolicy::Grouped.apply(Some(&grouping)).unwrap();
                assert_eq!(stat_nice(), THREAD_PRIORITY_DISPLAY);
                assert_eq!(current_nice(), Ok(THREAD_PRIORITY_DISPLAY));
                assert_eq!(grouping.threads("top-app").unwrap(), vec![me]);
                match (slice_before, sched_slice()) {
                    (Some(_), Some(slice)) => {
                        assert_eq!(slice, LooperSlice::MIN.as_nanos() as u64)
                    }
                    _ => eprintln!("no se.slice in /proc/thread-self/sched: slice not checked"),
                }
                drop(applied);
                assert_eq!(stat_nice(), before);
                assert_eq!(sched_slice(), slice_before, "back to the default slice");
                assert!(grouping.threads("top-app").unwrap().is_empty());
            })
            .join()
            .unwrap();
            s.spawn(|| {
                grouping.join_background().unwrap();
                assert_eq!(stat_nice(), THREAD_PRIORITY_BACKGROUND);
                assert_eq!(grouping.threads("background").unwrap(), vec![current_tid()]);
            })
            .join()
            .unwrap();
        });
        assert!(
            grouping.threads("background").unwrap().is_empty(),
            "an exited poster leaves the group"
        );
        assert!(LooperPolicy::Grouped.apply(None).is_err());
    }

    #[test]
    fn a_looper_slice_is_the_default_or_in_the_kernels_range() {
        assert_eq!(LooperSlice::from_micros(0), Ok(LooperSlice(None)));
        assert_eq!(
            LooperSlice::from_micros(100),
            Ok(LooperSlice(Some(Duration::from_micros(100))))
        );
        assert_eq!(
            LooperSlice::from_micros(100_000).unwrap().0,
            Some(LooperSlice::MAX)
        );
        for bad in [1, 99, 100_001, u64::MAX] {
            let err = LooperSlice::from_micros(bad).unwrap_err();
            assert!(err.contains("100 to 100000 us"), "{err}");
        }
        assert_eq!(LooperSlice::DEFAULT.to_string(), "100 us");
        assert_eq!(LooperSlice(None).to_string(), "the kernel's default");
    }

    /// The calling thread's slice (`se.slice` in ns), where the kernel shows it.
    fn sched_slice() -> Option<u64> {
        let sched = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
        let line = sched.lines().find(|l| l.starts_with("se.slice"))?;
        line.split(':').nth(1)?.trim().parse().ok()
    }

    fn current_tid() -> u32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        stat.split(' ').next().unwrap().parse().unwrap()
    }

    fn stat_nice() -> i32 {
        // Field 19 of the thread's stat (after the parenthesised name) is its nice value.
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        after_name.split(' ').nth(16).unwrap().parse().unwrap()
    }

    fn current_policy() -> i32 {
        // SAFETY: pid 0 is the calling thread; the call only reads its policy.
        unsafe { libc::sched_getscheduler(0) }
    }
}
