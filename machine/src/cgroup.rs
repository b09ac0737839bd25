//! The run's memory cgroup: finding the memory controller (cgroup v1 or v2, decided at
//! run time), creating one group per run (`marvin-run-PID-START-SEQ`) with the budget as
//! its hard limit, putting processes in it, reading what the kernel counts for it, and
//! removing it (its members killed first) when the [`Group`] is dropped, also while a
//! panic unwinds. [`Hierarchy::sweep`] removes the groups of runs that died without
//! cleaning up (SIGKILL).
//!
//! Where groups go: on v1 under the cgroup this process is in (so any limit above it
//! still holds); on v2 beside it, under its parent, because a v2 group that holds
//! processes cannot also give the memory controller to children.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use super::cgroup_version::Version;
use super::error::{HostError, Result};
/// The keyed-counter parser of cgroup files (`memory.stat`, `cgroup.events`), for the
/// group's other readers.
pub(crate) use super::memstat::parse_keyed;
use super::memstat::MemStat;
use super::owner::{self, Owner};
use super::{announce, mib, sys};

/// The prefix of every run's group name.
pub const PREFIX: &str = "marvin-run";

/// How long removal waits for killed members to leave the group.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Where this process's runs make their groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    pub version: Version,
    /// The directory the run groups are created in.
    pub parent: PathBuf,
}

/// One mount from `/proc/self/mountinfo`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Mount<'a> {
    pub(super) root: &'a str,
    pub(super) point: &'a str,
    pub(super) fstype: &'a str,
    pub(super) super_opts: &'a str,
}

pub(super) fn parse_mountinfo(text: &str) -> Vec<Mount<'_>> {
    text.lines()
        .filter_map(|line| {
            let (pre, post) = line.split_once(" - ")?;
            let pre: Vec<&str> = pre.split(' ').collect();
            let mut post = post.split(' ');
            Some(Mount {
                root: pre.get(3)?,
                point: pre.get(4)?,
                fstype: post.next()?,
                super_opts: post.nth(1).unwrap_or(""),
            })
        })
        .collect()
}

/// This process's cgroup path for the v1 controller `controller`, or for v2 (`None`).
pub(super) fn own_path<'a>(proc_cgroup: &'a str, controller: Option<&str>) -> Option<&'a str> {
    proc_cgroup.lines().find_map(|line| {
        let mut it = line.splitn(3, ':');
        let (id, controllers, path) = (it.next()?, it.next()?, it.next()?);
        let hit = match controller {
            Some(c) => controllers.split(',').any(|x| x == c),
            None => id == "0" && controllers.is_empty(),
        };
        hit.then_some(path)
    })
}

/// Joins a cgroup path (absolute within the hierarchy) to the mount of that hierarchy,
/// whose mountinfo `root` says which part of the hierarchy the mount shows.
pub(super) fn under_mount(point: &str, root: &str, path: &str) -> PathBuf {
    let rel = path
        .strip_prefix(root)
        .unwrap_or(path)
        .trim_start_matches('/');
    let mut p = PathBuf::from(point);
    if !rel.is_empty() {
        p.push(rel);
    }
    p
}

/// Where the v1 memory controller is, from the texts of `/proc/self/mountinfo` and
/// `/proc/self/cgroup`; `None` when it is not mounted as v1.
fn locate_v1(mountinfo: &str, proc_cgroup: &str) -> Option<PathBuf> {
    let mounts = parse_mountinfo(mountinfo);
    let m = mounts
        .iter()
        .find(|m| m.fstype == "cgroup" && m.super_opts.split(',').any(|o| o == "memory"))?;
    let own = own_path(proc_cgroup, Some("memory"))?;
    Some(under_mount(m.point, m.root, own))
}

/// Where v2 groups go (beside this process's cgroup) and its mount; `None` when no
/// cgroup2 is mounted.
fn locate_v2(mountinfo: &str, proc_cgroup: &str) -> Option<(PathBuf, PathBuf)> {
    let mounts = parse_mountinfo(mountinfo);
    let m = mounts.iter().find(|m| m.fstype == "cgroup2")?;
    let own = own_path(proc_cgroup, None)?;
    let own_dir = under_mount(m.point, m.root, own);
    let mount = PathBuf::from(m.point);
    let parent = if own_dir == mount {
        mount.clone()
    } else {
        own_dir.parent()?.to_path_buf()
    };
    Some((parent, mount))
}

pub(super) fn read_text(path: &Path, what: &'static str) -> Result<String> {
    fs::read_to_string(path).map_err(|e| HostError::io(what, path, e))
}

pub(super) fn write_text(path: &Path, value: &str, what: &'static str) -> Result<()> {
    // One write(2) per value, as cgroup files expect.
    fs::write(path, value).map_err(|e| HostError::io(what, path, e))
}

fn read_u64(path: &Path, what: &'static str) -> Result<u64> {
    let text = read_text(path, what)?;
    let t = text.trim();
    if t == "max" {
        return Ok(u64::MAX);
    }
    t.parse().map_err(|_| HostError::Parse {
        path: path.to_path_buf(),
        msg: format!("not a number: {t:?}"),
    })
}

impl Hierarchy {
    /// Finds the memory controller of this machine: v1 if it is mounted there (a
    /// controller bound to v1 is missing from v2), else v2 with `memory` enabled for
    /// the directory the groups go in.
    pub fn detect() -> Result<Hierarchy> {
        let mountinfo = read_text(Path::new("/proc/self/mountinfo"), "reading")?;
        let proc_cgroup = read_text(Path::new("/proc/self/cgroup"), "reading")?;
        Hierarchy::from_texts(&mountinfo, &proc_cgroup, |p| fs::read_to_string(p).ok())
    }

    /// [`Hierarchy::detect`] on given texts; `read` reads a file of the v2 tree.
    fn from_texts(
        mountinfo: &str,
        proc_cgroup: &str,
        read: impl Fn(&Path) -> Option<String>,
    ) -> Result<Hierarchy> {
        if let Some(parent) = locate_v1(mountinfo, proc_cgroup) {
            return Ok(Hierarchy {
                version: Version::V1,
                parent,
            });
        }
        let Some((parent, _mount)) = locate_v2(mountinfo, proc_cgroup) else {
            return Err(HostError::NoMemoryController(
                "neither a cgroup v1 memory hierarchy nor a cgroup2 mount in /proc/self/mountinfo"
                    .into(),
            ));
        };
        let control = parent.join("cgroup.subtree_control");
        let enabled = read(&control).unwrap_or_default();
        if !enabled.split_whitespace().any(|c| c == "memory") {
            return Err(HostError::NoMemoryController(format!(
                "cgroup v2 does not give the memory controller to children of {} (its \
                 cgroup.subtree_control lacks \"memory\")",
                parent.display()
            )));
        }
        Ok(Hierarchy {
            version: Version::V2,
            parent,
        })
    }

    /// Whether a run can create its group here: root and a memory controller. The
    /// error says why not, for the line that announces the in-process fallback.
    pub fn available() -> Result<Hierarchy> {
        if !sys::is_root() {
            return Err(HostError::NotRoot);
        }
        Hierarchy::detect()
    }

    /// Creates a run's group with `limits`, announced on stderr; it is removed when the
    /// returned [`Group`] is dropped.
    pub fn create(&self, limits: &Limits) -> Result<Group> {
        let owner = Owner::current().map_err(|e| HostError::io("reading", "/proc/self/stat", e))?;
        let path = self.parent.join(owner.name(PREFIX));
        fs::create_dir(&path).map_err(|e| HostError::io("creating cgroup", &path, e))?;
        let group = Group {
            version: self.version,
            path,
            sampled_peak: AtomicU64::new(0),
            removed: false,
        };
        // From here on, dropping `group` removes the directory again (and says so).
        announce(&format!(
            "created memory cgroup {} ({}, limit {} MiB{})",
            group.path.display(),
            self.version.name(),
            mib(limits.max_bytes),
            limits
                .high_bytes
                .map(|h| format!(", high {} MiB", mib(h)))
                .unwrap_or_default()
        ));
        group.apply(limits)?;
        Ok(group)
    }

    /// Removes the groups of runs whose owner has died (killed by SIGKILL, which no
    /// guard survives): kills what still runs in them and removes them. Groups of live
    /// runs are left alone. Returns the removed paths.
    pub fn sweep(&self) -> Result<Vec<PathBuf>> {
        let mut removed = Vec::new();
        let dead = owner::dead_entries(&self.parent, PREFIX)
            .map_err(|e| HostError::io("listing", &self.parent, e))?;
        for (path, owner) in dead {
            remove_dir(&path, self.version)?;
            announce(&format!(
                "removed memory cgroup {} left by a dead run ({owner})",
                path.display()
            ));
            removed.push(path);
        }
        Ok(removed)
    }
}

/// The memory limits of a run's group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The hard limit: v1 `memory.limit_in_bytes`, v2 `memory.max`.
    pub max_bytes: u64,
    /// v2 only: `memory.high`, where the kernel throttles and reclaims before the hard
    /// limit (ignored on v1, which has no such knob).
    pub high_bytes: Option<u64>,
    /// v1 only: the group's `memory.swappiness` (v2 has no per-group swappiness).
    pub swappiness: Option<u32>,
}

impl Limits {
    pub fn hard(max_bytes: u64) -> Limits {
        Limits {
            max_bytes,
            high_bytes: None,
            swappiness: None,
        }
    }
}

/// A run's memory cgroup. Dropping it kills what is left in it and removes it.
#[derive(Debug)]
pub struct Group {
    version: Version,
    path: PathBuf,
    /// The highest usage seen by [`Group::usage`], for v2 kernels without
    /// `memory.peak`.
    sampled_peak: AtomicU64,
    removed: bool,
}

impl Group {
    fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    fn apply(&self, l: &Limits) -> Result<()> {
        match self.version {
            Version::V1 => {
                write_text(
                    &self.file("memory.limit_in_bytes"),
                    &l.max_bytes.to_string(),
                    "setting the limit",
                )?;
                // Memory plus swap stays unlimited: the hard limit is on memory only, and
                // swap is bounded by the swap device (-1 is unlimited; the file is absent
                // when the kernel does not account swap).
                let memsw = self.file("memory.memsw.limit_in_bytes");
                if memsw.exists() {
                    write_text(&memsw, "-1", "leaving memory+swap unlimited")?;
                }
                if let Some(s) = l.swappiness {
                    write_text(
                        &self.file("memory.swappiness"),
                        &s.to_string(),
                        "setting swappiness",
                    )?;
                }
            }
            Version::V2 => {
                write_text(
                    &self.file("memory.max"),
                    &l.max_bytes.to_string(),
                    "setting the limit",
                )?;
                if let Some(h) = l.high_bytes {
                    write_text(
                        &self.file("memory.high"),
                        &h.to_string(),
                        "setting memory.high",
                    )?;
                }
            }
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// `cgroup.procs` opened for writing, for [`sys::join_cgroup_before_exec`].
    fn procs_for_child(&self) -> Result<File> {
        let p = self.file("cgroup.procs");
        OpenOptions::new()
            .write(true)
            .open(&p)
            .map_err(|e| HostError::io("opening", p, e))
    }

    /// Makes the child that `cmd` will start join this group between fork and exec,
    /// so all the program's memory is charged here (for a caller that spawns `cmd`
    /// itself).
    pub fn join_before_exec(&self, cmd: &mut std::process::Command) -> Result<()> {
        sys::join_cgroup_before_exec(cmd, self.procs_for_child()?);
        Ok(())
    }

    /// Starts `cmd` inside this group ([`Group::join_before_exec`]).
    pub fn spawn_inside(&self, cmd: &mut std::process::Command) -> Result<std::process::Child> {
        self.join_before_exec(cmd)?;
        cmd.spawn()
            .map_err(|e| HostError::io("starting a process in", &self.path, e))
    }

    /// Moves a running process into the group. What it allocated before stays charged
    /// where it was, so processes should join before they allocate
    /// ([`Group::spawn_inside`]).
    pub fn add_pid(&self, pid: u32) -> Result<()> {
        write_text(
            &self.file("cgroup.procs"),
            &pid.to_string(),
            "moving a process into",
        )
    }

    /// The processes in the group.
    pub fn pids(&self) -> Result<Vec<u32>> {
        pids_of(&self.path)
    }

    /// Sets the hard limit (v1 `memory.limit_in_bytes`, v2 `memory.max`). Lowering it
    /// below the usage makes the kernel reclaim down to it in the writer's context; on
    /// v1 the write fails with `EBUSY` when it could not.
    pub fn set_limit(&self, max_bytes: u64) -> Result<()> {
        let name = match self.version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        };
        write_text(
            &self.file(name),
            &max_bytes.to_string(),
            "setting the limit",
        )
    }

    /// The hard limit as the kernel holds it (rounded down to pages).
    pub fn limit(&self) -> Result<u64> {
        match self.version {
            Version::V1 => read_u64(&self.file("memory.limit_in_bytes"), "reading"),
            Version::V2 => read_u64(&self.file("memory.max"), "reading"),
        }
    }

    /// Memory charged to the group now (v1 `memory.usage_in_bytes`, v2 `memory.current`).
    pub fn usage(&self) -> Result<u64> {
        let u = match self.version {
            Version::V1 => read_u64(&self.file("memory.usage_in_bytes"), "reading")?,
            Version::V2 => read_u64(&self.file("memory.current"), "reading")?,
        };
        self.sampled_peak.fetch_max(u, Ordering::Relaxed);
        Ok(u)
    }

    /// The group's working set: usage less its inactive page cache
    /// ([`MemStat::working_set`]).
    pub fn working_set(&self) -> Result<u64> {
        let usage = self.usage()?;
        Ok(self.stat()?.working_set(usage))
    }

    /// The highest usage: v1 `memory.max_usage_in_bytes`, v2 `memory.peak` (Linux
    /// 5.19), else the highest [`Group::usage`] sampled.
    pub fn peak(&self) -> Result<u64> {
        let sampled = self.sampled_peak.load(Ordering::Relaxed);
        let kernel = match self.version {
            Version::V1 => Some(read_u64(
                &self.file("memory.max_usage_in_bytes"),
                "reading",
            )?),
            Version::V2 => {
                let p = self.file("memory.peak");
                if p.exists() {
                    Some(read_u64(&p, "reading")?)
                } else {
                    None
                }
            }
        };
        Ok(kernel.unwrap_or(0).max(sampled))
    }

    /// `memory.stat`, normalised; on v2 `swap` comes from `memory.swap.current`.
    pub fn stat(&self) -> Result<MemStat> {
        let mut s = MemStat::parse(
            self.version,
            &read_text(&self.file("memory.stat"), "reading")?,
        );
        if self.version == Version::V2 {
            let p = self.file("memory.swap.current");
            if p.exists() {
                s.swap = Some(read_u64(&p, "reading")?);
            }
        }
        Ok(s)
    }

    /// How many processes of the group the kernel's OOM killer has killed (v1
    /// `memory.oom_control`, v2 `memory.events`, both `oom_kill`).
    pub fn oom_kills(&self) -> Result<u64> {
        let name = match self.version {
            Version::V1 => "memory.oom_control",
            Version::V2 => "memory.events",
        };
        let p = self.file(name);
        let text = read_text(&p, "reading")?;
        parse_keyed(&text)
            .get("oom_kill")
            .copied()
            .ok_or_else(|| HostError::Parse {
                path: p,
                msg: "no oom_kill line (kernel older than 4.13?)".into(),
            })
    }

    /// How often usage ran into the limit (v1 `memory.failcnt`, v2 `memory.events`
    /// `max`).
    pub fn limit_hits(&self) -> Result<u64> {
        match self.version {
            Version::V1 => read_u64(&self.file("memory.failcnt"), "reading"),
            Version::V2 => {
                let text = read_text(&self.file("memory.events"), "reading")?;
                Ok(parse_keyed(&text).get("max").copied().unwrap_or(0))
            }
        }
    }

    /// Kills what is left in the group, removes it and announces that. Dropping the
    /// group does the same, reporting a failure on stderr instead of returning it.
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        remove_dir(&self.path, self.version)?;
        announce(&format!("removed memory cgroup {}", self.path.display()));
        Ok(())
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        match remove_dir(&self.path, self.version) {
            Ok(()) => announce(&format!("removed memory cgroup {}", self.path.display())),
            Err(e) => announce(&format!(
                "could not remove memory cgroup {}: {e}",
                self.path.display()
            )),
        }
    }
}

pub(super) fn pids_of(dir: &Path) -> Result<Vec<u32>> {
    let p = dir.join("cgroup.procs");
    let text = read_text(&p, "reading")?;
    Ok(text.lines().filter_map(|l| l.trim().parse().ok()).collect())
}

/// Kills every process in the group at `dir` (v2 `cgroup.kill` where present, else one
/// pidfd SIGKILL each), waits until the group is empty and removes it.
fn remove_dir(dir: &Path, version: Version) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    if version == Version::V2 {
        // The freezer groups of its apps (v2 nests them in the app's group).
        super::freezer::remove_nested(dir)?;
    }
    let deadline = Instant::now() + DRAIN_TIMEOUT;
    let kill_file = dir.join("cgroup.kill");
    loop {
        let pids = pids_of(dir)?;
        if pids.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            return Err(HostError::Refused(format!(
                "cgroup {} still holds processes {pids:?} after SIGKILL",
                dir.display()
            )));
        }
        if version == Version::V2 && kill_file.exists() {
            write_text(&kill_file, "1", "killing the members of")?;
        } else {
            for pid in pids {
                // A task frozen by cgroup v1's freezer does not die until thawed.
                super::freezer::thaw_if_ours(pid);
                // A member that exits meanwhile is fine.
                if let Ok(fd) = sys::pidfd_open(pid) {
                    let _ = sys::pidfd_send_signal(std::os::fd::AsFd::as_fd(&fd), libc::SIGKILL);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            // The last members are still on their way out.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => return Err(HostError::io("removing cgroup", dir, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const PROC_CGROUP: &str = "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n";

    #[test]
    fn v1_groups_go_under_this_process_cgroup() {
        let h = Hierarchy::from_texts(MOUNTINFO, PROC_CGROUP, |_| None).unwrap();
        assert_eq!(
            h,
            Hierarchy {
                version: Version::V1,
                parent: "/sys/fs/cgroup/memory/process_api/abc".into()
            }
        );
        // A mount that shows only part of the hierarchy (a container) is joined right.
        let container = MOUNTINFO.replace(
            "0:32 / /sys/fs/cgroup/memory",
            "0:32 /process_api /sys/fs/cgroup/memory",
        );
        let h = Hierarchy::from_texts(&container, PROC_CGROUP, |_| None).unwrap();
        assert_eq!(h.parent, PathBuf::from("/sys/fs/cgroup/memory/abc"));
    }

    #[test]
    fn v2_groups_go_beside_this_process_cgroup_when_memory_is_delegated() {
        let mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        let proc_cgroup = "0::/user.slice/session-1.scope\n";
        let with_memory = |p: &Path| {
            assert_eq!(
                p,
                Path::new("/sys/fs/cgroup/user.slice/cgroup.subtree_control")
            );
            Some("cpu io memory pids\n".to_string())
        };
        let h = Hierarchy::from_texts(mountinfo, proc_cgroup, with_memory).unwrap();
        assert_eq!(
            h,
            Hierarchy {
                version: Version::V2,
                parent: "/sys/fs/cgroup/user.slice".into()
            }
        );
        // In the root cgroup the groups go under the root.
        let h = Hierarchy::from_texts(mountinfo, "0::/\n", |_| Some("memory".into())).unwrap();
        assert_eq!(h.parent, PathBuf::from("/sys/fs/cgroup"));
        // Without memory delegated, a clear error.
        let e =
            Hierarchy::from_texts(mountinfo, proc_cgroup, |_| Some("cpu pids".into())).unwrap_err();
        assert!(e.to_string().contains("subtree_control"), "{e}");
    }

    #[test]
    fn no_memory_controller_is_an_error() {
        let mountinfo = "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
        let e = Hierarchy::from_texts(mountinfo, "1:cpu:/\n", |_| None).unwrap_err();
        assert!(matches!(e, HostError::NoMemoryController(_)), "{e}");
        // The hybrid layout of this kind of machine with memory only on v2's side and
        // v2 lacking it: also an error, not a wrong directory.
        let e = Hierarchy::from_texts(
            MOUNTINFO.replace("rw,memory", "rw,blkio").as_str(),
            PROC_CGROUP,
            |_| Some("hugetlb".into()),
        )
        .unwrap_err();
        assert!(matches!(e, HostError::NoMemoryController(_)), "{e}");
    }
}
