//! Scheduling of the queue benchmark's threads, as Android schedules an app's: posters
//! at background priority, and the looper either as an ordinary thread or as the UI
//! thread of the app in front on devices that turn on FIFO UI scheduling
//! (`sys.use_fifo_ui`: the activity manager moves that thread to `SCHED_FIFO`,
//! priority 1). The FIFO policy needs `CAP_SYS_NICE`; [`fifo_ui_available`] says
//! whether this process may use it before a scenario relies on it.

use std::fmt;

/// How the looper thread is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LooperPolicy {
    /// The default time-sharing policy, nice 0.
    Normal,
    /// `SCHED_FIFO` at priority 1, as Android's FIFO UI scheduling runs the UI thread.
    FifoUi,
}

impl fmt::Display for LooperPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LooperPolicy::Normal => "normal",
            LooperPolicy::FifoUi => "FIFO UI",
        })
    }
}

/// The calling thread runs under a policy until this is dropped, which puts it back
/// to the default policy.
#[must_use = "the policy lasts until the guard is dropped"]
pub struct Applied(LooperPolicy);

impl LooperPolicy {
    /// Puts the calling thread under this policy (the default one needs no change).
    pub fn apply(self) -> Result<Applied, String> {
        if self == LooperPolicy::FifoUi {
            set_fifo(1)?;
        }
        Ok(Applied(self))
    }
}

impl Drop for Applied {
    fn drop(&mut self) {
        if self.0 == LooperPolicy::FifoUi {
            // Back to time sharing; dropping from FIFO to the default policy needs no
            // privilege, so this does not fail.
            let _ = set_normal();
        }
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
    #[cfg(target_os = "linux")]
    // SAFETY: `setpriority` only changes the scheduling priority of the calling thread
    // (`who` 0 is the caller on Linux, where priority is per thread); raising one's own
    // nice value needs no privilege.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
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
        let applied = LooperPolicy::Normal.apply().expect("no change needed");
        assert_eq!(current_policy(), before);
        drop(applied);
        // Whatever the answer (it depends on privileges), probing leaves this thread
        // alone; when allowed, applying switches to FIFO and dropping switches back.
        if fifo_ui_available().is_ok() {
            let applied = LooperPolicy::FifoUi.apply().expect("probed as available");
            assert_eq!(current_policy(), libc::SCHED_FIFO);
            drop(applied);
        } else {
            assert!(LooperPolicy::FifoUi.apply().is_err());
        }
        assert_eq!(current_policy(), before);
    }

    fn current_policy() -> i32 {
        // SAFETY: pid 0 is the calling thread; the call only reads its policy.
        unsafe { libc::sched_getscheduler(0) }
    }
}
