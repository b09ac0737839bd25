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
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use marvin_runtime::RunIdentity;

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
}

/// This run's hold on a swap directory; the lock is released when the last holder drops.
#[derive(Debug)]
pub struct SwapDirLock {
    dir: PathBuf,
    /// The locked file (the `flock` lives as long as this descriptor).
    _file: File,
}

impl SwapDirLock {
    /// Takes `dir` (which must exist) for this run, or shares this run's existing hold.
    pub fn acquire(dir: &Path) -> Result<Arc<SwapDirLock>, SwapDirError> {
        static HELD: Mutex<Option<HashMap<PathBuf, Weak<SwapDirLock>>>> = Mutex::new(None);
        let io = |op, source| SwapDirError::Io {
            dir: dir.to_owned(),
            op,
            source,
        };
        let key = dir
            .canonicalize()
            .map_err(|e| io("resolve the directory", e))?;
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        let held = held.get_or_insert_with(HashMap::new);
        held.retain(|_, w| w.strong_count() > 0);
        if let Some(lock) = held.get(&key).and_then(Weak::upgrade) {
            return Ok(lock);
        }
        let file = lock_dir(&key).map_err(|e| match e {
            Locking::Held(holder) => SwapDirError::InUse {
                dir: dir.to_owned(),
                holder,
            },
            Locking::Io(op, source) => io(op, source),
        })?;
        let lock = Arc::new(SwapDirLock {
            dir: key.clone(),
            _file: file,
        });
        held.insert(key, Arc::downgrade(&lock));
        Ok(lock)
    }

    /// The directory (resolved).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

enum Locking {
    Held(Option<u32>),
    Io(&'static str, std::io::Error),
}

/// Locks `dir/marvin.lock`. A new lock file is written and locked under a temporary name
/// first and then renamed into place, so a sweeper never finds the lock file free in the
/// moment between its creation and its lock.
fn lock_dir(dir: &Path) -> Result<File, Locking> {
    let path = dir.join(LOCK_FILE);
    loop {
        match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(mut file) => match file.try_lock() {
                Ok(()) => {
                    // Our lock now; the file may have been replaced (a sweeper removed
                    // the directory's files): only a lock on the linked file counts.
                    if !same_file(&file, &path) {
                        continue;
                    }
                    write_owner(&mut file).map_err(|e| Locking::Io("write the lock file", e))?;
                    return Ok(file);
                }
                Err(TryLockError::WouldBlock) => return Err(Locking::Held(holder_of(&path))),
                Err(TryLockError::Error(e)) => return Err(Locking::Io("lock the directory", e)),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let tmp = dir.join(format!(".{LOCK_FILE}.{}", std::process::id()));
                let mut file =
                    File::create(&tmp).map_err(|e| Locking::Io("create the lock file", e))?;
                file.try_lock()
                    .map_err(|e| Locking::Io("lock the directory", e.into()))?;
                write_owner(&mut file).map_err(|e| Locking::Io("write the lock file", e))?;
                // No replace: if another run got its lock file in first, contend for that one.
                match std::fs::hard_link(&tmp, &path) {
                    Ok(()) => {
                        let _ = std::fs::remove_file(&tmp);
                        return Ok(file);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        let _ = std::fs::remove_file(&tmp);
                        continue;
                    }
                    Err(e) => {
                        let _ = std::fs::remove_file(&tmp);
                        return Err(Locking::Io("create the lock file", e));
                    }
                }
            }
            Err(e) => return Err(Locking::Io("open the lock file", e)),
        }
    }
}

fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
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
    use std::os::unix::fs::FileExt;
    file.write_all_at(text.as_bytes(), 0)?;
    file.flush()
}

/// The pid a lock file names, if it can be read.
fn holder_of(path: &Path) -> Option<u32> {
    let mut text = String::new();
    File::open(path)
        .ok()?
        .take(4096)
        .read_to_string(&mut text)
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("pid "))
        .and_then(|p| p.trim().parse().ok())
}

/// Whether `dir`'s lock file exists and no run holds it. Holds the lock (returned) while
/// the caller removes the directory. A directory without a lock file is not known to be
/// stale (it may be being set up) and is left alone.
fn lock_if_stale(dir: &Path) -> Option<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join(LOCK_FILE))
        .ok()?;
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
        match OpenOptions::new()
            .read(true)
            .write(true)
            .open(d.join(LOCK_FILE))
        {
            Ok(file) => match file.try_lock() {
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
        assert_eq!(
            holder_of(&dir.path().join(LOCK_FILE)),
            Some(std::process::id())
        );
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
