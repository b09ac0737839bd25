//! The UI thread of the app in front under `SCHED_FIFO`, as Android's activity manager
//! runs it on devices with FIFO UI scheduling (`sys.use_fifo_ui`): the app's main looper
//! thread, found by its name in `/proc/PID/task/*/comm`, is raised to `SCHED_FIFO`
//! priority [`UI_PRIORITY`] when the app comes to the foreground and put back under
//! `SCHED_OTHER` when it leaves. Only that one thread is raised: the app's other threads
//! and every background app keep their share, and `SCHED_RESET_ON_FORK` keeps threads the
//! looper starts normal.

use std::fs;
use std::io;

use super::sys;

/// Android's FIFO UI priority (the activity manager's `scheduleAsFifoPriority`), the
/// lowest real-time one.
pub const UI_PRIORITY: i32 = 1;

/// The name an app process gives its main looper thread.
pub const LOOPER_THREAD: &str = "main";

/// The id of the first thread of process `pid` named `name` (`comm`), if it has one.
pub fn find_thread(pid: u32, name: &str) -> io::Result<Option<u32>> {
    let mut found = Vec::new();
    for entry in fs::read_dir(format!("/proc/{pid}/task"))? {
        let entry = entry?;
        let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        // A thread that ended meanwhile has no comm to read: not the one.
        if let Ok(comm) = fs::read_to_string(entry.path().join("comm")) {
            if comm.trim_end_matches('\n') == name {
                found.push(tid);
            }
        }
    }
    Ok(found.into_iter().min())
}

/// Raises thread `tid` to the UI thread's `SCHED_FIFO` priority.
pub fn raise(tid: u32) -> io::Result<()> {
    sys::set_thread_fifo(tid, Some(UI_PRIORITY))
}

/// Puts thread `tid` back under `SCHED_OTHER`.
pub fn lower(tid: u32) -> io::Result<()> {
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
                lower(tid).unwrap();
                assert!(!is_raised(tid).unwrap(), "and normally again after");
            }
            Err(e) => println!("skipped the raise: cannot run SCHED_FIFO here: {e}"),
        }
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }
}
