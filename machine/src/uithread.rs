//! The UI thread of the app in front under `SCHED_FIFO`, as Android's activity manager
//! runs it on devices with FIFO UI scheduling (`sys.use_fifo_ui`): the app's main looper
//! thread, found by its name in `/proc/PID/task/*/comm`, is raised to `SCHED_FIFO`
//! priority [`UI_PRIORITY`] when the app comes to the foreground and put back under
//! `SCHED_OTHER` when it leaves; `SCHED_RESET_ON_FORK` keeps threads the looper starts
//! normal. While raised, the looper's block I/O is in the real-time class
//! ([`UI_IO_CLASS`]): what it reads to draw its frame (a launch's restore, a swapped-in
//! page) is dispatched before the background apps' reads and writes, as Android favours
//! the app in front's I/O over the background's. The app's other threads run [`FRONT_NICE_STEPS`] nice steps above the
//! background apps while it is in front, as Android's `top-app` cpu group favours them;
//! the background apps keep their own priority.

use std::fs;
use std::io;

use super::sys;

/// Android's FIFO UI priority (the activity manager's `scheduleAsFifoPriority`), the
/// lowest real-time one.
pub const UI_PRIORITY: i32 = 1;

/// The block I/O class of the UI thread in front: real time at its default level.
pub const UI_IO_CLASS: sys::IoClass = sys::IoClass::RealTime(4);

/// The name an app process gives its main looper thread.
pub const LOOPER_THREAD: &str = "main";

/// The name an app process gives the thread that reads the System's commands.
pub const CONTROL_THREAD: &str = "control";

/// The id of the first thread of process `pid` named `name` (`comm`), if it has one.
pub fn find_thread(pid: u32, name: &str) -> io::Result<Option<u32>> {
    Ok(threads(pid)?
        .into_iter()
        // A thread that ended meanwhile has no comm to read: not the one.
        .filter(|tid| {
            fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                .is_ok_and(|comm| comm.trim_end_matches('\n') == name)
        })
        .min())
}

/// How many nice steps the other threads of the app in front are raised by (each step
/// about 1.25x the scheduler's weight: 5 steps are 3x), as Android's `top-app` cpu group
/// favours every thread of the app in front; never above nice -20.
pub const FRONT_NICE_STEPS: i32 = 5;

/// The nice value of the threads of the app in front, for apps at `base`.
pub fn front_nice(base: i32) -> i32 {
    (base - FRONT_NICE_STEPS).max(-20)
}

/// Every thread of process `pid`.
pub fn threads(pid: u32) -> io::Result<Vec<u32>> {
    let mut tids = Vec::new();
    for entry in fs::read_dir(format!("/proc/{pid}/task"))? {
        if let Some(tid) = entry?.file_name().to_str().and_then(|s| s.parse().ok()) {
            tids.push(tid);
        }
    }
    Ok(tids)
}

/// Sets the nice value of every thread of process `pid` (threads that end meanwhile
/// are skipped); the first other failure is returned.
pub fn set_process_nice(pid: u32, nice: i32) -> io::Result<()> {
    for tid in threads(pid)? {
        match sys::set_thread_nice(tid, nice) {
            Err(e) if e.raw_os_error() != Some(libc::ESRCH) => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Raises thread `tid` to the UI thread's `SCHED_FIFO` priority and its I/O to
/// [`UI_IO_CLASS`]. The I/O class is a bonus: where the kernel refuses it the thread
/// is raised all the same.
pub fn raise(tid: u32) -> io::Result<()> {
    sys::set_thread_fifo(tid, Some(UI_PRIORITY))?;
    let _ = sys::set_thread_io_class(tid, UI_IO_CLASS);
    Ok(())
}

/// Puts thread `tid` back under `SCHED_OTHER`, its I/O back in its default class.
pub fn lower(tid: u32) -> io::Result<()> {
    let _ = sys::set_thread_io_class(tid, sys::IoClass::Default);
    sys::set_thread_fifo(tid, None)
}

/// Whether thread `tid` runs under `SCHED_FIFO`.
pub fn is_raised(tid: u32) -> io::Result<bool> {
    Ok(sys::thread_policy(tid)? == libc::SCHED_FIFO)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's id.
    fn this_tid() -> u32 {
        fs::read_link("/proc/thread-self")
            .ok()
            .and_then(|p| p.file_name()?.to_str()?.parse().ok())
            .expect("/proc/thread-self names this thread")
    }

    #[test]
    fn a_named_thread_is_found_and_raised_and_lowered_from_outside() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::Builder::new()
            .name("ui-test-loop".into())
            .spawn(move || {
                tx.send(this_tid()).unwrap();
                let _ = done_rx.recv();
            })
            .unwrap();
        let tid = rx.recv().unwrap();
        let pid = std::process::id();
        assert_eq!(find_thread(pid, "ui-test-loop").unwrap(), Some(tid));
        assert_eq!(find_thread(pid, "no-such-thread").unwrap(), None);
        assert!(find_thread(u32::MAX, "main").is_err(), "no such process");
        match raise(tid) {
            Ok(()) => {
                assert!(is_raised(tid).unwrap(), "the thread runs SCHED_FIFO");
                // Whoever may raise a thread to FIFO (CAP_SYS_NICE) may give it the
                // real-time I/O class.
                assert_eq!(sys::thread_io_class(tid).unwrap(), UI_IO_CLASS);
                lower(tid).unwrap();
                assert!(!is_raised(tid).unwrap(), "and normally again after");
                assert_eq!(sys::thread_io_class(tid).unwrap(), sys::IoClass::Default);
            }
            Err(e) => println!("skipped the raise: cannot run SCHED_FIFO here: {e}"),
        }
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }

    #[test]
    fn the_app_in_front_is_five_nice_steps_up_but_never_past_minus_20() {
        assert_eq!(front_nice(0), -5);
        assert_eq!(front_nice(-15), -20);
        assert_eq!(front_nice(-18), -20);
        assert_eq!(front_nice(19), 14);
    }

    #[test]
    fn every_thread_of_a_process_gets_its_nice() {
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep runs");
        let pid = child.id();
        let stat = marvin_runtime::procfs::stat(pid).expect("its stat");
        let lower = (stat.nice + 1).min(19);
        let result = set_process_nice(pid, lower);
        let after = marvin_runtime::procfs::stat(pid).expect("its stat").nice;
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        result.expect("lowering a priority needs no privilege");
        assert_eq!(after, lower);
        assert!(set_process_nice(u32::MAX, 0).is_err(), "no such process");
    }
}
