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
//!
//! The lock's mechanism ([`Holds`]) takes its file as a parameter: production code uses
//! the one machine-wide file through [`MachineLock::acquire`]; the unit tests use a file
//! of their own, so that they do not depend on (nor hand the lock to) a real-mode run
//! that another process starts on the machine meanwhile.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::error::{HostError, Result};

/// The machine-wide lock file: in `/run` (a tmpfs that every root process sees), or in
/// the temporary directory where there is no `/run`.
pub fn lock_path() -> PathBuf {
    let run = Path::new("/run");
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

/// The holds of one process on one lock file: every [`Holds::acquire`] while a hold is
/// alive shares it.
#[derive(Debug)]
pub struct Holds {
    path: PathBuf,
    held: Mutex<Weak<MachineLock>>,
}

impl Holds {
    /// The holds on the lock file at `path` (created when first taken). Production code
    /// has one, on [`lock_path`] ([`MachineLock::acquire`]); two `Holds` on one path
    /// exclude each other as two processes would.
    pub fn at(path: PathBuf) -> Holds {
        Holds {
            path,
            held: Mutex::new(Weak::new()),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the lock, waiting while another holder (another process) has it, or shares
    /// the existing hold of these `Holds`. While it waits, it says so on stderr, naming
    /// the holder's pid as the file gives it.
    pub fn acquire(&self) -> Result<Arc<MachineLock>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lock) = held.upgrade() {
            return Ok(lock);
        }
        let path = &self.path;
        let io = |what, e| HostError::io(what, path, e);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io("opening the machine lock", e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                super::announce(&waiting_message(&mut file, path));
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

/// What a run says while it waits: the holder's pid (as the file names it) and the file.
fn waiting_message(file: &mut File, path: &Path) -> String {
    let mut holder = String::new();
    let _ = file.read_to_string(&mut holder);
    let holder = holder.trim();
    format!(
        "waiting for the machine: another real-mode run (pid {}) holds {}",
        if holder.is_empty() { "unknown" } else { holder },
        path.display()
    )
}

impl MachineLock {
    /// Takes the machine ([`lock_path`]) for this process, waiting while another process
    /// holds it, or shares this process's existing hold.
    pub fn acquire() -> Result<Arc<MachineLock>> {
        static MACHINE: OnceLock<Holds> = OnceLock::new();
        MACHINE.get_or_init(|| Holds::at(lock_path())).acquire()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn pid_in(path: &Path) -> u32 {
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Whether another open file of the lock (as another process would have) could take it.
    fn free_for_others(path: &Path) -> bool {
        match File::open(path).unwrap().try_lock() {
            Ok(()) => true,
            Err(TryLockError::WouldBlock) => false,
            Err(TryLockError::Error(e)) => panic!("try_lock: {e}"),
        }
    }

    #[test]
    fn a_process_shares_its_hold_and_others_wait_for_it() {
        // A lock file of the test's own: a real-mode run queued on the machine's lock
        // cannot take it the moment the test lets go.
        let dir = tempfile::tempdir().unwrap();
        let holds = Holds::at(dir.path().join("machine.lock"));
        let first = holds.acquire().unwrap();
        let second = holds.acquire().unwrap();
        assert!(Arc::ptr_eq(&first, &second), "one hold per process");
        assert!(!free_for_others(holds.path()));
        assert_eq!(
            pid_in(holds.path()),
            std::process::id(),
            "the file names the holder"
        );
        drop(first);
        assert!(
            !free_for_others(holds.path()),
            "held while one holder is left"
        );
        drop(second);
        assert!(
            free_for_others(holds.path()),
            "free once the last holder dropped it"
        );
        let again = holds.acquire().unwrap();
        assert!(!free_for_others(holds.path()), "taken again afresh");
        drop(again);
    }

    #[test]
    fn another_holder_waits_until_the_last_hold_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("machine.lock");
        let mine = Holds::at(path.clone());
        let theirs = Arc::new(Holds::at(path.clone()));
        let held = mine.acquire().unwrap();
        let (tx, rx) = mpsc::channel();
        let waiter = {
            let theirs = Arc::clone(&theirs);
            std::thread::spawn(move || {
                let lock = theirs.acquire();
                let ok = lock.is_ok();
                tx.send(ok).unwrap();
                // Keeps the hold until the test has looked at it.
                lock
            })
        };
        assert!(!free_for_others(&path), "still mine while the other waits");
        drop(held);
        // A bound against a hang, not a timing expectation.
        let got = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the waiting holder gets the lock once it is free");
        assert!(got, "the waiting holder's acquire succeeded");
        assert!(!free_for_others(&path), "now the other's");
        assert_eq!(pid_in(&path), std::process::id());
        let theirs_lock = waiter.join().unwrap().unwrap();
        drop(theirs_lock);
        assert!(free_for_others(&path));
    }

    #[test]
    fn the_waiting_message_names_the_holder_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("machine.lock");
        std::fs::write(&path, "4242\n").unwrap();
        let msg = waiting_message(&mut File::open(&path).unwrap(), &path);
        assert_eq!(
            msg,
            format!(
                "waiting for the machine: another real-mode run (pid 4242) holds {}",
                path.display()
            )
        );
        std::fs::write(&path, "").unwrap();
        let msg = waiting_message(&mut File::open(&path).unwrap(), &path);
        assert!(msg.contains("(pid unknown)"), "{msg}");
    }

    #[test]
    fn a_lock_file_that_cannot_be_created_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no-such-dir").join("machine.lock");
        let e = Holds::at(path.clone()).acquire().unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
    }
}
