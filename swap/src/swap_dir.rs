//! A swap directory belongs to one run: [`SwapDirLock`] holds an exclusive `flock` on the
//! directory's lock file (`marvin.lock`, which names the holder's pid and run) for as long
//! as any app of the run uses the directory, and a second run is refused with an error
//! naming the holder. [`sweep_stale`] removes the directories that runs which ended
//! without cleaning up (killed, crashed) left in a temporary root: those whose lock is free.
//!
//! One process may attach several apps to one directory: the locks are kept in a
//! process-wide registry and shared (a `flock` is per open file, so opening the lock file
//! a second time in the same process would refuse the process itself).

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use marvin_runtime::RunIdentity;
use marvin_runtime::{FolderError, SwapFolder};

/// The lock file in a swap directory.
pub const LOCK_FILE: &str = "marvin.lock";

/// Why a swap directory could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum SwapDirError {
    /// Another run holds the directory.
    #[error("swap directory {} is in use by another run (pid {}); give each run its own directory", dir.display(), holder.map_or_else(|| "unknown".to_string(), |p| p.to_string()))]
    InUse {
        /// The directory.
        dir: PathBuf,
        /// The holder's pid, as its lock file says (unknown if unreadable).
        holder: Option<u32>,
    },
    /// The directory or its lock file could not be created or locked.
    #[error("swap directory {}: cannot {op}: {source}", dir.display())]
    Io {
        /// The directory.
        dir: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The directory is not safe to write in, or a name of the lock is taken by
    /// something this run did not make ([`SwapFolder`]).
    #[error(transparent)]
    Refused(#[from] FolderError),
}

/// This process's holds, by the directory's device and inode.
type Holds = HashMap<(u64, u64), Weak<SwapDirLock>>;

/// This run's hold on a swap directory; the lock is released when the last holder drops.
#[derive(Debug)]
pub struct SwapDirLock {
    folder: Arc<SwapFolder>,
    /// The locked file (the `flock` lives as long as this descriptor).
    _file: File,
}

impl SwapDirLock {
    /// Takes `dir` (which must exist) for this run, or shares this run's existing hold.
    /// The directory is checked first ([`SwapFolder::open`]: only the run's user or root
    /// may change its entries) and the lock file is never opened through a link.
    pub fn acquire(dir: &Path) -> Result<Arc<SwapDirLock>, SwapDirError> {
        static HELD: Mutex<Option<Holds>> = Mutex::new(None);
        let folder = SwapFolder::open(dir)?;
        let key = folder.identity()?;
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        let held = held.get_or_insert_with(HashMap::new);
        held.retain(|_, w| w.strong_count() > 0);
        if let Some(lock) = held.get(&key).and_then(Weak::upgrade) {
            return Ok(lock);
        }
        let file = lock_dir(&folder).map_err(|e| match e {
            Locking::Held(holder) => SwapDirError::InUse {
                dir: dir.to_owned(),
                holder,
            },
            Locking::Refused(e) => SwapDirError::Refused(e),
            Locking::Io(op, source) => SwapDirError::Io {
                dir: dir.to_owned(),
                op,
                source,
            },
        })?;
        let lock = Arc::new(SwapDirLock {
            folder: Arc::new(folder),
            _file: file,
        });
        held.insert(key, Arc::downgrade(&lock));
        Ok(lock)
    }

    /// The directory (as given).
    pub fn dir(&self) -> &Path {
        self.folder.path()
    }

    /// The directory, opened: the run's files are made in it relative to it.
    pub fn folder(&self) -> &Arc<SwapFolder> {
        &self.folder
    }
}

enum Locking {
    Held(Option<u32>),
    Refused(FolderError),
    Io(&'static str, std::io::Error),
}

impl From<FolderError> for Locking {
    fn from(e: FolderError) -> Locking {
        Locking::Refused(e)
    }
}

/// Locks `marvin.lock` in `folder`. A new lock file is written and locked under a
/// temporary name first and then linked into place, so a sweeper never finds the lock
/// file free in the moment between its creation and its lock. Neither name is ever
/// opened through a link or taken from another user ([`SwapFolder`]).
fn lock_dir(folder: &SwapFolder) -> Result<File, Locking> {
    loop {
        match folder.open_own(LOCK_FILE)? {
            Some(mut file) => match file.try_lock() {
                Ok(()) => {
                    // Our lock now; the file may have been replaced (a sweeper removed
                    // the directory's files): only a lock on the linked file counts.
                    if !folder.names(LOCK_FILE, &file)? {
                        continue;
                    }
                    write_owner(&mut file).map_err(|e| Locking::Io("write the lock file", e))?;
                    return Ok(file);
                }
                Err(TryLockError::WouldBlock) => return Err(Locking::Held(holder_of(&file))),
                Err(TryLockError::Error(e)) => return Err(Locking::Io("lock the directory", e)),
            },
            None => {
                let tmp = format!(".{LOCK_FILE}.{}", std::process::id());
                let mut file = folder.create_new(&tmp)?;
                let made = file
                    .try_lock()
                    .map_err(|e| Locking::Io("lock the directory", e.into()))
                    .and_then(|()| {
                        write_owner(&mut file).map_err(|e| Locking::Io("write the lock file", e))
                    });
                // No replace: if another run got its lock file in first, contend for that one.
                let linked = made.and_then(|()| match folder.link(&tmp, LOCK_FILE) {
                    Ok(()) => Ok(true),
                    Err(FolderError::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::AlreadyExists =>
                    {
                        Ok(false)
                    }
                    Err(e) => Err(Locking::Refused(e)),
                });
                let _ = folder.remove(&tmp);
                if linked? {
                    return Ok(file);
                }
            }
        }
    }
}

fn write_owner(file: &mut File) -> std::io::Result<()> {
    let me = RunIdentity::current();
    file.set_len(0)?;
    let text = format!(
        "pid {}\nrun {}\nstarted_unix_ns {}\n",
        me.pid,
        me.id_hex(),
        me.started_unix_ns
    );
    file.write_all_at(text.as_bytes(), 0)
}

/// The pid a lock file names, if it can be read.
fn holder_of(file: &File) -> Option<u32> {
    let mut bytes = [0u8; 4096];
    let n = file.read_at(&mut bytes, 0).ok()?;
    let text = std::str::from_utf8(&bytes[..n]).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("pid "))
        .and_then(|p| p.trim().parse().ok())
}

/// Opens `dir/marvin.lock` to lock it, never through a link and never waiting on a
/// FIFO: `None` unless it is a plain file.
fn open_lock_file(dir: &Path) -> std::io::Result<Option<File>> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(dir.join(LOCK_FILE))?;
    Ok(file.metadata()?.is_file().then_some(file))
}

/// Whether `dir`'s lock file exists and no run holds it. Holds the lock (returned) while
/// the caller removes the directory. A directory without a lock file is not known to be
/// stale (it may be being set up) and is left alone.
fn lock_if_stale(dir: &Path) -> Option<File> {
    let file = open_lock_file(dir).ok()??;
    file.try_lock().ok()?;
    Some(file)
}

/// The lock files of `dir` and of its subdirectories (such as the per-app directories
/// of the process mode), each locked, when no run holds any of them; `None` when one is
/// held (or cannot be locked). Directories without a lock file count as free. The caller
/// removes `dir` while it holds what is returned, so no run takes it meanwhile.
pub fn lock_unused(dir: &Path) -> Option<Vec<File>> {
    let mut held = Vec::new();
    let mut lock = |d: &Path| -> bool {
        match open_lock_file(d) {
            // Not a plain file: not a lock of marvin's, so not free to take.
            Ok(None) => false,
            Ok(Some(file)) => match file.try_lock() {
                Ok(()) => {
                    held.push(file);
                    true
                }
                Err(_) => false,
            },
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        }
    };
    if !lock(dir) {
        return None;
    }
    if let Ok(subdirs) = std::fs::read_dir(dir) {
        for sub in subdirs.flatten() {
            if sub.file_type().is_ok_and(|t| t.is_dir()) && !lock(&sub.path()) {
                return None;
            }
        }
    }
    Some(held)
}

/// Removes the directories of `root` whose names start with one of `prefixes`, that
/// carry a lock file and whose run has ended (the lock is free, and the lock of every
/// subdirectory that has one, such as the per-app directories of the process mode, is
/// free too). Returns the directories removed. Directories this process holds are never
/// removed, nor anything else; failures to remove are left for a later sweep.
pub fn sweep_stale(root: &Path, prefixes: &[&str]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !prefixes.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        // Not followed through symlinks: only real directories of the root.
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = entry.path();
        let Some(_top) = lock_if_stale(&dir) else {
            continue;
        };
        let mut inner = Vec::new();
        let mut busy = false;
        if let Ok(subdirs) = std::fs::read_dir(&dir) {
            for sub in subdirs.flatten() {
                let path = sub.path();
                if sub.file_type().is_ok_and(|t| t.is_dir()) && path.join(LOCK_FILE).exists() {
                    match lock_if_stale(&path) {
                        Some(l) => inner.push(l),
                        None => busy = true,
                    }
                }
            }
        }
        if !busy && std::fs::remove_dir_all(&dir).is_ok() {
            removed.push(dir);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_process_shares_its_hold_and_the_lock_file_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = SwapDirLock::acquire(dir.path()).unwrap();
        let b = SwapDirLock::acquire(dir.path()).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let file = File::open(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(holder_of(&file), Some(std::process::id()));
        // Held: not stale, whatever a sweep of its parent finds.
        assert!(lock_if_stale(dir.path()).is_none());
        drop((a, b));
        assert!(lock_if_stale(dir.path()).is_some());
    }

    #[test]
    fn a_sweep_removes_only_unlocked_directories_with_a_lock_file() {
        let root = tempfile::tempdir().unwrap();
        let make = |name: &str| {
            let d = root.path().join(name);
            std::fs::create_dir(&d).unwrap();
            d
        };
        let held = make("marvin-swap-held");
        let _hold = SwapDirLock::acquire(&held).unwrap();
        let dead = make("marvin-swap-dead");
        drop(SwapDirLock::acquire(&dead).unwrap());
        std::fs::write(dead.join("app"), b"checkpoints").unwrap();
        let unlocked = make("marvin-swap-new");
        let other = make("other-dead");
        drop(SwapDirLock::acquire(&other).unwrap());
        // A dead run's directory whose per-app directory is still held.
        let parent = make("marvin-processes-x");
        drop(SwapDirLock::acquire(&parent).unwrap());
        let app = parent.join("app0");
        std::fs::create_dir(&app).unwrap();
        let _app = SwapDirLock::acquire(&app).unwrap();

        let removed = sweep_stale(root.path(), &["marvin-swap-", "marvin-processes-"]);
        assert_eq!(removed, vec![dead.clone()]);
        // The parent's own lock is free, but an app's is held: in use.
        assert!(lock_unused(&parent).is_none());
        // No lock file at all is no holder.
        assert_eq!(lock_unused(&unlocked).map(|l| l.len()), Some(0));
        assert!(!dead.exists());
        for kept in [&held, &unlocked, &other, &parent] {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
    }
}
