//! One real-mode run on the machine at a time: [`MachineLock`] is an exclusive `flock` on
//! one machine-wide file ([`lock_path`]), held from a run's set-up (before its sweeps)
//! until its swap is off again.
//!
//! Swap and the kernel's OOM killer are machine-wide: the kernel puts a group's pages on
//! whichever swap device has the highest priority, another run's included, and that run's
//! `swapoff` pulls them back into this run's group at its limit, where the kernel's OOM
//! killer then kills. Two real-mode runs at once would so measure each other; a second run
//! waits for the first (it says so on stderr, naming the holder's pid). Tests that turn
//! swap on or sweep dead runs' leftovers themselves hold the same lock.
//!
//! The hold is shared within a process (a `flock` is per open file, so opening the file a
//! second time in the same process would wait for the process itself).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use super::error::{HostError, Result};

/// The machine-wide lock file: in `/run` (a tmpfs that every root process sees), or in
/// the temporary directory where there is no `/run`.
pub fn lock_path() -> PathBuf {
    let run = std::path::Path::new("/run");
    let dir = if run.is_dir() {
        run.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    dir.join("marvin-machine.lock")
}

/// This process's hold on the machine; the lock goes when the last holder drops it.
#[derive(Debug)]
pub struct MachineLock {
    /// The locked file (the `flock` lives as long as this descriptor).
    _file: File,
}

impl MachineLock {
    /// Takes the machine for this process, waiting while another process holds it, or
    /// shares this process's existing hold.
    pub fn acquire() -> Result<Arc<MachineLock>> {
        static HELD: Mutex<Weak<MachineLock>> = Mutex::new(Weak::new());
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lock) = held.upgrade() {
            return Ok(lock);
        }
        let path = lock_path();
        let io = |what, e| HostError::io(what, &path, e);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io("opening the machine lock", e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                super::announce(&format!(
                    "waiting for the machine: another real-mode run (pid {}) holds {}",
                    if holder.is_empty() { "unknown" } else { holder },
                    path.display()
                ));
                file.lock().map_err(|e| io("locking the machine", e))?;
            }
            Err(TryLockError::Error(e)) => return Err(io("locking the machine", e)),
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .map_err(|e| io("writing the machine lock", e))?;
        let lock = Arc::new(MachineLock { _file: file });
        *held = Arc::downgrade(&lock);
        Ok(lock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_shares_its_hold_and_others_wait_for_it() {
        if !super::super::sys::is_root() && std::fs::metadata(lock_path()).is_err() {
            // Creating the file in /run needs root; the lock itself does not.
            println!("skipped: cannot create {}", lock_path().display());
            return;
        }
        let Ok(first) = MachineLock::acquire() else {
            println!("skipped: cannot open {}", lock_path().display());
            return;
        };
        let second = MachineLock::acquire().unwrap();
        assert!(Arc::ptr_eq(&first, &second), "one hold per process");
        // Another open file of the lock (as another process would have) cannot take it.
        let other = File::open(lock_path()).unwrap();
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        let pid: u32 = std::fs::read_to_string(lock_path())
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(pid, std::process::id(), "the file names the holder");
        drop((first, second));
        other
            .try_lock()
            .expect("free once the last holder dropped it");
    }
}
