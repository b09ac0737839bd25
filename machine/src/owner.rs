//! Who owns a machine-wide object (a run's cgroup, its swap file or zram device): the
//! owner's pid and start time, written into the object's name, so that a later run can
//! tell a leftover of a dead run (removed by the start-up sweep) from the object of a
//! live one (left alone), even after the dead run's pid has been reused.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use marvin_runtime::procfs;

/// A process named for good: its pid and its start time in clock ticks after boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    pub start_time: u64,
}

impl Owner {
    /// This process.
    pub fn current() -> io::Result<Owner> {
        Owner::of(std::process::id())
    }

    /// Process `pid` as it is now.
    pub fn of(pid: u32) -> io::Result<Owner> {
        Ok(Owner {
            pid,
            start_time: procfs::stat(pid)?.start_time,
        })
    }

    /// Whether this very process still runs (the pid exists with the same start time
    /// and is not a zombie).
    pub fn is_alive(&self) -> bool {
        match procfs::stat(self.pid) {
            Ok(s) => s.start_time == self.start_time && s.state != 'Z' && s.state != 'X',
            Err(_) => false,
        }
    }

    /// Whether this process has ended entirely: it is not alive and no thread of it is
    /// left. A killed process's first thread shows as a zombie while its other threads
    /// are still on their way out, holding its open files (and so its locks).
    pub fn is_gone(&self) -> bool {
        if self.is_alive() {
            return false;
        }
        match procfs::stat(self.pid) {
            Ok(s) if s.start_time == self.start_time => {
                fs::read_dir(format!("/proc/{}/task", self.pid)).map_or(true, |t| t.count() <= 1)
            }
            _ => true,
        }
    }

    /// The name of a new object of this owner: `PREFIX-PID-START-SEQ`, where SEQ counts
    /// up within the process so one run can own several objects.
    pub fn name(&self, prefix: &str) -> String {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        format!("{prefix}-{}-{}-{seq}", self.pid, self.start_time)
    }

    /// The start of the name of a directory this owner makes with a random tail (a
    /// temporary directory): `KIND[LABEL-]PID-START-`, where `kind` ends with `-`. A
    /// sweep reads the owner back with [`Owner::parse_dir_name`], so it can tell a dead
    /// run's directory from a live one's without any file inside it.
    pub fn dir_prefix(&self, kind: &str, label: Option<&str>) -> String {
        let label = label.map(|l| format!("{l}-")).unwrap_or_default();
        format!("{kind}{label}{}-{}-", self.pid, self.start_time)
    }

    /// The owner in a directory name made from [`Owner::dir_prefix`] with this `kind`
    /// and a random tail without `-`; `None` for other names (older marvins' temporary
    /// directories, which carry no owner).
    pub fn parse_dir_name(kind: &str, name: &str) -> Option<Owner> {
        let rest = name.strip_prefix(kind)?;
        let mut parts = rest.rsplitn(3, '-');
        let tail = parts.next()?;
        let start_time = parts.next()?.parse().ok()?;
        let pid = parts.next()?.rsplit('-').next()?.parse().ok()?;
        if tail.is_empty() || !tail.chars().all(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        Some(Owner { pid, start_time })
    }

    /// The owner written into `name` by [`Owner::name`] with this `prefix`, if `name`
    /// is one of ours (an extension after the sequence number is allowed).
    pub fn parse_name(prefix: &str, name: &str) -> Option<Owner> {
        let rest = name.strip_prefix(prefix)?.strip_prefix('-')?;
        let mut parts = rest.splitn(3, '-');
        let pid = parts.next()?.parse().ok()?;
        let start_time = parts.next()?.parse().ok()?;
        let seq = parts.next()?;
        let seq = seq.split('.').next()?;
        seq.parse::<u32>().ok()?;
        Some(Owner { pid, start_time })
    }
}

/// The entries of `dir` named by [`Owner::name`] with `prefix` whose owner has died,
/// with their owners: what a start-up sweep removes (entries of live runs and names
/// that are not ours are left out).
pub fn dead_entries(dir: &Path, prefix: &str) -> io::Result<Vec<(PathBuf, Owner)>> {
    Ok(fs::read_dir(dir)?
        .flatten()
        .filter_map(|entry| {
            let owner = entry
                .file_name()
                .to_str()
                .and_then(|n| Owner::parse_name(prefix, n))?;
            (!owner.is_alive()).then(|| (entry.path(), owner))
        })
        .collect())
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pid {} (started at tick {})", self.pid, self.start_time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_entries_are_the_dead_owners_names_only() {
        let dir = tempfile::tempdir().unwrap();
        let me = Owner::current().unwrap();
        let dead = Owner {
            pid: me.pid,
            start_time: me.start_time + 1,
        };
        let live_name = me.name("marvin-run");
        let dead_name = dead.name("marvin-run");
        for n in [
            &live_name,
            &dead_name,
            &dead.name("other"),
            &"stranger".to_string(),
        ] {
            fs::create_dir(dir.path().join(n)).unwrap();
        }
        let found = dead_entries(dir.path(), "marvin-run").unwrap();
        assert_eq!(found, vec![(dir.path().join(&dead_name), dead)]);
    }

    #[test]
    fn names_round_trip_and_strangers_are_not_ours() {
        let me = Owner::current().unwrap();
        assert!(me.is_alive());
        let a = me.name("marvin-run");
        let b = me.name("marvin-run");
        assert_ne!(a, b, "two objects of one run get two names");
        assert_eq!(Owner::parse_name("marvin-run", &a), Some(me));
        assert_eq!(
            Owner::parse_name("marvin-swap", &format!("{}.swap", me.name("marvin-swap"))),
            Some(me)
        );
        for stranger in [
            "marvin-run",
            "marvin-run-1-2",
            "marvin-run-x-2-3",
            "marvin-runner-1-2-3",
            "other-1-2-3",
            "marvin-run-1-2-z",
        ] {
            assert_eq!(
                Owner::parse_name("marvin-run", stranger),
                None,
                "{stranger}"
            );
        }
    }

    #[test]
    fn directory_names_carry_their_owner() {
        let me = Owner::current().unwrap();
        for label in [None, Some("kill"), Some("kernel-swap")] {
            let name = format!("{}Ab3xZ9", me.dir_prefix("marvin-processes-", label));
            assert_eq!(
                Owner::parse_dir_name("marvin-processes-", &name),
                Some(me),
                "{name}"
            );
        }
        for stranger in [
            "marvin-processes-Ab3xZ9",
            "marvin-processes-12-34-",
            "marvin-processes-x-34-Ab3",
            "marvin-processes-12-y-Ab3",
            "marvin-pressure-12-34-Ab3",
        ] {
            assert_eq!(
                Owner::parse_dir_name("marvin-processes-", stranger),
                None,
                "{stranger}"
            );
        }
    }

    #[test]
    fn a_reused_pid_is_not_the_owner() {
        let me = Owner::current().unwrap();
        let earlier = Owner {
            pid: me.pid,
            start_time: me.start_time + 1,
        };
        assert!(
            !earlier.is_alive(),
            "same pid, other start time: a different process"
        );
        assert!(!Owner {
            pid: u32::MAX,
            start_time: 1
        }
        .is_alive());
    }
}
