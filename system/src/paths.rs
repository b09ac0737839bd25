//! Checks of the paths a command will write (`--stats-json`, `--trace`, `--out`,
//! `--plot`, `--swap-dir`, ...) made before the program or experiment starts, so a bad
//! path fails at once with a message naming the flag instead of after a long run.
//!
//! A file is checked by opening it for appending (nothing is truncated; a file the check
//! created is removed again); a directory, or its nearest existing ancestor when it is
//! missing, by creating and removing a temporary file in it. Nothing is left behind.

use std::fs::OpenOptions;
use std::path::Path;

/// A path a flag names that cannot be used; its message names the flag and the path.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {path}: {reason}")]
pub struct PathError {
    pub flag: String,
    pub path: String,
    pub reason: String,
}

fn error(flag: &str, path: &Path, reason: impl Into<String>) -> PathError {
    PathError {
        flag: flag.to_string(),
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Checks that the file `path` (named by `flag`) can be written: it is not a directory,
/// and it can be opened for writing (created if missing, then removed again).
pub fn check_output_file(flag: &str, path: &Path) -> Result<(), PathError> {
    if path.as_os_str().is_empty() {
        return Err(error(flag, path, "an empty path"));
    }
    if path.is_dir() {
        return Err(error(flag, path, "is a directory (a file is expected)"));
    }
    let existed = path.symlink_metadata().is_ok();
    match OpenOptions::new().append(true).create(true).open(path) {
        Ok(_) => {
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            Ok(())
        }
        Err(e) => Err(error(flag, path, format!("cannot be written: {e}"))),
    }
}

/// Checks that the directory `path` (named by `flag`) can hold output: an existing
/// directory a file can be made in, or, when missing, a path whose nearest existing
/// ancestor is such a directory (nothing is created: a command that ends up writing
/// nothing leaves no directory behind).
pub fn check_output_dir(flag: &str, path: &Path) -> Result<(), PathError> {
    if path.as_os_str().is_empty() {
        return Err(error(flag, path, "an empty path"));
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            probe(path).map_err(|e| error(flag, path, format!("cannot be written: {e}")))
        }
        Ok(_) => Err(error(flag, path, "is not a directory")),
        Err(_) => {
            let mut ancestor = path;
            let existing = loop {
                match ancestor.parent() {
                    Some(p) if p.as_os_str().is_empty() => break Path::new("."),
                    Some(p) => {
                        if p.symlink_metadata().is_ok() {
                            break p;
                        }
                        ancestor = p;
                    }
                    None => break Path::new("/"),
                }
            };
            if !existing.is_dir() {
                return Err(error(
                    flag,
                    path,
                    format!(
                        "cannot be created: {} is not a directory",
                        existing.display()
                    ),
                ));
            }
            probe(existing).map_err(|e| error(flag, path, format!("cannot be created: {e}")))
        }
    }
}

/// Checks that the file system where `path` is (or would be created) has room for
/// `need` bytes of `what`; `name` is the flag (or environment variable) that gave the
/// path. The message says how much is free and what needs it.
pub fn check_room(name: &str, path: &Path, need: u64, what: &str) -> Result<(), PathError> {
    let existing = nearest_existing(path);
    let room = marvin_machine::sys::fs_room(existing)
        .map_err(|e| error(name, path, format!("cannot tell its free space: {e}")))?;
    if room.available < need {
        return Err(error(
            name,
            path,
            format!(
                "{} free, the run needs {} for {what}",
                mib_text(room.available),
                mib_text(need)
            ),
        ));
    }
    Ok(())
}

/// Whether `path` (or its nearest existing ancestor) is on a tmpfs.
pub fn on_tmpfs(path: &Path) -> bool {
    marvin_machine::sys::fs_room(nearest_existing(path)).is_ok_and(|r| r.tmpfs)
}

fn mib_text(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// `path` if it exists, else its nearest existing ancestor (`.` for a relative path
/// whose every ancestor is missing).
fn nearest_existing(path: &Path) -> &Path {
    let mut p = path;
    loop {
        if p.symlink_metadata().is_ok() {
            return p;
        }
        match p.parent() {
            Some(q) if q.as_os_str().is_empty() => return Path::new("."),
            Some(q) => p = q,
            None => return Path::new("/"),
        }
    }
}

/// Checks a swap directory: it must be a directory (or be creatable as one) that files
/// can be made in, and an existing one must be safe for the run's files
/// ([`marvin_runtime::SwapFolder::open`]: the run's user's or root's, not
/// writable by other users without the sticky bit). A missing one is made the run's own.
pub fn check_swap_dir(flag: &str, path: &Path) -> Result<(), PathError> {
    // The folder first: no probe file is made in one that is refused.
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        if let Err(e) = marvin_runtime::SwapFolder::open(path) {
            let reason = match e {
                marvin_runtime::FolderError::UnsafeFolder { reason, .. } => {
                    format!("is refused: {reason}")
                }
                e => e.to_string(),
            };
            return Err(error(flag, path, reason));
        }
    }
    check_output_dir(flag, path)
}

/// Makes and removes a file of a name of its own in `dir`. The error is the operating
/// system's alone: the probe's name is marvin's business, not the user's.
fn probe(dir: &Path) -> std::io::Result<()> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static SEQ: AtomicU32 = AtomicU32::new(0);
    loop {
        let name = format!(
            ".marvin-check-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let path = dir.join(name);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(_) => {
                let _ = std::fs::remove_file(&path);
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("stats.json");
        check_output_file("--stats-json", &f).unwrap();
        assert!(!f.exists(), "the check leaves no file behind");
        std::fs::write(&f, "keep").unwrap();
        check_output_file("--stats-json", &f).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "keep");
        let e = check_output_file("--trace", d.path()).unwrap_err();
        assert!(e.to_string().starts_with("--trace "), "{e}");
        assert!(e.to_string().contains("is a directory"), "{e}");
        let e = check_output_file("--trace", &f.join("x")).unwrap_err();
        assert!(e.to_string().contains("cannot be written"), "{e}");
    }

    #[test]
    fn dirs() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("a/b");
        check_output_dir("--out", &out).unwrap();
        assert!(!d.path().join("a").exists(), "nothing created");
        check_output_dir("--out", d.path()).unwrap();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        check_output_dir("--out", Path::new("relative/out")).unwrap();
        let file = d.path().join("file");
        std::fs::write(&file, "").unwrap();
        let e = check_swap_dir("--swap-dir", &file).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("--swap-dir {}: is not a directory", file.display())
        );
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_swap_dir("--swap-dir", &open).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("--swap-dir {}: is refused: ", open.display()))
                && e.contains("writable by other users"),
            "{e}"
        );
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        check_swap_dir("--swap-dir", &open).unwrap();
        let e = check_output_dir("--out", &file.join("sub/dir")).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "--out {}: cannot be created: {} is not a directory",
                file.join("sub/dir").display(),
                file.display()
            )
        );
        check_room("--out", &out, 1, "a test").unwrap();
        let e = check_room("--out", &out, u64::MAX, "the results").unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("--out {}: ", out.display()))
                && e.to_string().contains("MiB free, the run needs")
                && e.to_string().ends_with("for the results"),
            "{e}"
        );
        let e = check_output_dir("--out", Path::new("/proc/marvin-out")).unwrap_err();
        assert!(e.to_string().contains("cannot be created"), "{e}");
        assert!(
            !e.to_string().contains(".marvin-check"),
            "the probe's own name stays out of the message: {e}"
        );
    }
}
