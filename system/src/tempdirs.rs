//! marvin's temporary directories: `marvin run`'s swap directory, each policy's own
//! directory in both modes of `marvin pressure` and the process mode's written-out
//! workload. Each is named after the process that made it
//! (`marvin-processes-kill-PID-START-XXXXXX`, [`Owner::dir_prefix`]), so that the sweep
//! ([`sweep`]) can tell a dead run's directory from a live one's by its name alone: with
//! or without its lock file, whatever the dead run managed to write into it.
//!
//! The sweep removes a directory once its owner has died and no run holds a lock inside
//! it (an app process of the dead run may still hold its own directory: it goes with
//! the run's cgroup first). Directories of older marvins, whose names carry no owner,
//! go when their lock file is free, or, without one (a written-out workload, which a
//! live run of an older marvin holds no file of), once untouched for a day and no
//! process has a file open inside or names it on its command line. A directory is first
//! renamed out of the way (`.marvin-removing-NAME`), so two
//! sweeps never both remove, nor both announce, one directory; a sweep that dies
//! midway leaves that name, which the next sweep finishes. Every removal is announced
//! once on stderr.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use marvin_machine::Owner;

/// The kinds of temporary directory marvin makes (each name starts with one).
pub const PREFIXES: [&str; 4] = [
    "marvin-swap-",
    "marvin-pressure-",
    "marvin-processes-",
    "marvin-workload-",
];
/// What a directory is renamed to while a sweep removes it.
const REMOVING: &str = ".marvin-removing-";

/// A new temporary directory of this process in `parent` (the temporary root when
/// `None`): `KIND[LABEL-]PID-START-XXXXXX`, removed when the returned guard drops.
pub fn create(
    kind: &str,
    label: Option<&str>,
    parent: Option<&Path>,
) -> io::Result<tempfile::TempDir> {
    debug_assert!(PREFIXES.contains(&kind), "{kind} is not a known kind");
    let me = Owner::current()?;
    let prefix = me.dir_prefix(kind, label);
    let builder = {
        let mut b = tempfile::Builder::new();
        b.prefix(&prefix).rand_bytes(6);
        b
    };
    match parent {
        Some(p) => builder.tempdir_in(p),
        None => builder.tempdir(),
    }
}

/// Why a directory of `root` may be removed, if it may: the owner that died, or `None`
/// for an older marvin's directory that no process uses.
fn owner_of(name: &str) -> Option<Option<Owner>> {
    let name = name.strip_prefix(REMOVING).unwrap_or(name);
    let kind = PREFIXES.iter().find(|k| name.starts_with(*k))?;
    Some(Owner::parse_dir_name(kind, name))
}

/// How long an older marvin's directory without a lock file must have been left
/// untouched before a sweep takes it.
const UNOWNED_AGE: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// Whether `dir` belongs to this process's user (root sweeps root's alone too).
fn mine(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let uid = marvin_runtime::run_user();
    fs::symlink_metadata(dir).is_ok_and(|m| m.uid() == uid)
}

/// Whether `dir` was modified less than [`UNOWNED_AGE`] ago.
fn recent(dir: &Path) -> bool {
    fs::metadata(dir)
        .and_then(|m| m.modified())
        .map_or(true, |t| t.elapsed().map_or(true, |age| age < UNOWNED_AGE))
}

/// Whether some process has a file open, its working directory or an argument under
/// `dir`.
fn in_use(dir: &Path) -> bool {
    let named = dir.to_string_lossy().into_owned();
    let Ok(procs) = fs::read_dir("/proc") else {
        return true;
    };
    for p in procs.flatten() {
        if !p
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        if fs::read_link(p.path().join("cwd")).is_ok_and(|c| c.starts_with(dir)) {
            return true;
        }
        if fs::read(p.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&named))
        {
            return true;
        }
        let Ok(fds) = fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        if fds
            .flatten()
            .any(|fd| fs::read_link(fd.path()).is_ok_and(|t| t.starts_with(dir)))
        {
            return true;
        }
    }
    false
}

/// Whether an active swap area lives under `dir` (it cannot be removed until the
/// machine sweep turns it off).
fn holds_active_swap(dir: &Path) -> bool {
    marvin_machine::swapdev::active_swaps().is_ok_and(|s| s.iter().any(|s| s.path.starts_with(dir)))
}

/// Removes the temporary directories of `root` that runs which have ended left (see the
/// module doc), announcing each on stderr; returns them (by their names before the
/// sweep's rename). `only`: just the directories of this (dead) owner.
pub fn sweep(root: &Path, only: Option<Owner>) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(owner) = owner_of(&name) else {
            continue;
        };
        // Not followed through symlinks: only real directories of the root, and only
        // this user's (a shared swap directory may hold another user's look-alikes).
        if !entry.file_type().is_ok_and(|t| t.is_dir()) || !mine(&entry.path()) {
            continue;
        }
        match (owner, only) {
            (Some(o), Some(want)) if o != want => continue,
            (None, Some(_)) => continue,
            (Some(o), _) if !o.is_gone() => continue,
            _ => {}
        }
        let dir = entry.path();
        let Some(_locks) = marvin_swap::lock_unused(&dir) else {
            continue;
        };
        let has_lock = dir.join(marvin_swap::LOCK_FILE).exists();
        if owner.is_none() && !has_lock && (recent(&dir) || in_use(&dir)) {
            continue;
        }
        if holds_active_swap(&dir) {
            continue;
        }
        let original = root.join(name.strip_prefix(REMOVING).unwrap_or(&name));
        let claimed = if name.starts_with(REMOVING) {
            dir.clone()
        } else {
            let to = root.join(format!("{REMOVING}{name}"));
            // Another sweep renamed it first: that one removes it and says so.
            if fs::rename(&dir, &to).is_err() {
                continue;
            }
            to
        };
        match fs::remove_dir_all(&claimed) {
            Ok(()) => {
                let whose = owner.map_or_else(
                    || "an older marvin".to_owned(),
                    |o| format!("a run that ended, {o}"),
                );
                marvin_machine::announce(&format!(
                    "removed {} left by {whose}",
                    original.display()
                ));
                removed.push(original);
            }
            Err(e) => marvin_machine::announce(&format!(
                "could not remove {} left by a run that ended: {e}",
                claimed.display()
            )),
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dead() -> Owner {
        let me = Owner::current().unwrap();
        Owner {
            pid: me.pid,
            start_time: me.start_time + 1,
        }
    }

    #[test]
    fn a_dead_runs_directories_go_with_or_without_a_lock_file_and_live_ones_stay() {
        let root = tempfile::tempdir().unwrap();
        let mine = create("marvin-processes-", Some("kill"), Some(root.path())).unwrap();
        let dead = dead();
        let make = |name: String| {
            let d = root.path().join(name);
            fs::create_dir(&d).unwrap();
            d
        };
        // What a SIGKILL in the middle of a policy leaves: app directories and the
        // policy file, the directory's own lock file gone.
        let lost_lock = make(format!(
            "{}AAAAAA",
            dead.dir_prefix("marvin-processes-", Some("marvin"))
        ));
        for app in ["app0", "app1", "app2"] {
            fs::create_dir(lost_lock.join(app)).unwrap();
            fs::write(lost_lock.join(app).join("swap"), b"x").unwrap();
        }
        fs::write(lost_lock.join("policy.toml"), b"x").unwrap();
        let workload = make(format!(
            "{}BBBBBB",
            dead.dir_prefix("marvin-workload-", None)
        ));
        fs::write(workload.join("buckets.masm"), b"x").unwrap();
        // A dead run's directory whose app directory a live process still holds.
        let held = make(format!(
            "{}CCCCCC",
            dead.dir_prefix("marvin-processes-", Some("kill"))
        ));
        fs::create_dir(held.join("app0")).unwrap();
        let _app = marvin_swap::SwapDirLock::acquire(&held.join("app0")).unwrap();
        // A half-finished sweep's leftover.
        let half = make(format!(
            "{REMOVING}{}DDDDDD",
            dead.dir_prefix("marvin-pressure-", Some("marvin"))
        ));
        let stranger = make("marvin-notours".into());

        let removed = sweep(root.path(), None);
        let want: std::collections::BTreeSet<PathBuf> = [
            lost_lock.clone(),
            workload.clone(),
            root.path().join(
                half.file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .strip_prefix(REMOVING)
                    .unwrap(),
            ),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            removed
                .iter()
                .cloned()
                .collect::<std::collections::BTreeSet<_>>(),
            want
        );
        assert_eq!(removed.len(), 3, "each once: {removed:?}");
        for gone in [&lost_lock, &workload, &half] {
            assert!(!gone.exists(), "{} stayed", gone.display());
        }
        for kept in [mine.path(), held.as_path(), stranger.as_path()] {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
        assert!(sweep(root.path(), None).is_empty(), "nothing twice");
    }

    #[test]
    fn a_sweep_of_one_owner_leaves_the_other_dead_runs() {
        let root = tempfile::tempdir().unwrap();
        let a = dead();
        let b = Owner {
            start_time: a.start_time + 1,
            ..a
        };
        let da = root
            .path()
            .join(format!("{}AAAAAA", a.dir_prefix("marvin-swap-", None)));
        let db = root
            .path()
            .join(format!("{}BBBBBB", b.dir_prefix("marvin-swap-", None)));
        fs::create_dir(&da).unwrap();
        fs::create_dir(&db).unwrap();
        assert_eq!(sweep(root.path(), Some(a)), vec![da.clone()]);
        assert!(!da.exists() && db.exists());
    }

    #[test]
    fn an_older_marvins_directory_goes_only_when_unused() {
        let root = tempfile::tempdir().unwrap();
        // With a lock file: free is unused.
        let locked = root.path().join("marvin-processes-Ab3xZ9");
        fs::create_dir(&locked).unwrap();
        let hold = marvin_swap::SwapDirLock::acquire(&locked).unwrap();
        assert!(sweep(root.path(), None).is_empty(), "its lock is held");
        drop(hold);
        assert_eq!(sweep(root.path(), None), vec![locked.clone()]);
        // Without one: a day untouched, and no file open inside.
        let bare = root.path().join("marvin-workload-Cd4yW8");
        fs::create_dir(&bare).unwrap();
        assert!(sweep(root.path(), None).is_empty(), "made just now");
        let day_ago =
            std::time::SystemTime::now() - UNOWNED_AGE - std::time::Duration::from_secs(60);
        let open = fs::File::create(bare.join("buckets.masm")).unwrap();
        fs::File::open(&bare)
            .unwrap()
            .set_modified(day_ago)
            .unwrap();
        assert!(sweep(root.path(), None).is_empty(), "a file is open inside");
        drop(open);
        fs::File::open(&bare)
            .unwrap()
            .set_modified(day_ago)
            .unwrap();
        assert_eq!(sweep(root.path(), None), vec![bare.clone()]);
    }
}
