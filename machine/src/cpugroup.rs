//! CPU cgroups for threads: a set of sibling groups with their own CPU shares, made for
//! one run under a parent group named for its owner (`marvin-cpu-PID-START-SEQ`), in
//! the cpu controller's hierarchy (cgroup v1 `cpu`, or v2 with `cpu` in threaded
//! groups), as Android places an app's threads in `top-app` or `background`.
//!
//! Threads join a group one by one (v1 `tasks`, v2 `cgroup.threads`). Dropping the
//! [`CpuGroups`] moves every thread still in them back to the group it came from and
//! removes the directories (also while a panic unwinds); [`CpuController::sweep`]
//! removes what a run killed with SIGKILL left. Both are announced on stderr.
//!
//! Shares are given as v1 `cpu.shares` (1024 is a default group); on v2 they become
//! `cpu.weight` by the kernel's own scaling (1024 shares = weight 100, clamped to
//! 1-10000).

use std::fs;
use std::path::{Path, PathBuf};

use super::cgroup::{own_path, parse_mountinfo, read_text, under_mount, write_text, Version};
use super::error::{HostError, Result};
use super::owner::{self, Owner};
use super::{announce, sys};

/// The prefix of every run's parent group.
pub const PREFIX: &str = "marvin-cpu";

/// Where this process's threads are in the cpu controller's hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuController {
    pub version: Version,
    /// This process's own cpu group: threads go back here, and runs' groups go under it.
    pub home: PathBuf,
}

/// The v2 `cpu.weight` for v1 `cpu.shares` (the kernel's conversion, rounded).
pub fn weight_of_shares(shares: u64) -> u64 {
    ((shares * 100 + 512) / 1024).clamp(1, 10_000)
}

/// The scheduler's weight of a thread at `nice` (the kernel's `sched_prio_to_weight`;
/// 1024 at nice 0, about 1.25x per step), for shares that weigh as much as threads at
/// that nice. Values outside -20..=19 are clamped.
pub fn nice_weight(nice: i32) -> u64 {
    const WEIGHTS: [u64; 40] = [
        88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100,
        4904, 3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172,
        137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
    ];
    WEIGHTS[(nice.clamp(-20, 19) + 20) as usize]
}

/// The most `cpu.shares` v1 accepts.
pub const MAX_SHARES: u64 = 262_144;

impl CpuController {
    /// Finds the cpu controller: v1 if mounted there, else v2 when this cgroup's
    /// parent gives `cpu` to it.
    pub fn detect() -> Result<CpuController> {
        let mountinfo = read_text(Path::new("/proc/self/mountinfo"), "reading")?;
        let proc_cgroup = read_text(Path::new("/proc/self/cgroup"), "reading")?;
        CpuController::from_texts(&mountinfo, &proc_cgroup, |p| fs::read_to_string(p).ok())
    }

    /// [`CpuController::detect`] on given texts; `read` reads a file of the v2 tree.
    fn from_texts(
        mountinfo: &str,
        proc_cgroup: &str,
        read: impl Fn(&Path) -> Option<String>,
    ) -> Result<CpuController> {
        let mounts = parse_mountinfo(mountinfo);
        let v1 = mounts
            .iter()
            .find(|m| m.fstype == "cgroup" && m.super_opts.split(',').any(|o| o == "cpu"));
        if let Some(m) = v1 {
            let own = own_path(proc_cgroup, Some("cpu")).ok_or_else(|| {
                HostError::Refused("the cgroup v1 cpu controller is mounted, but /proc/self/cgroup does not name this process's cpu group".into())
            })?;
            return Ok(CpuController {
                version: Version::V1,
                home: under_mount(m.point, m.root, own),
            });
        }
        let no_cpu = || {
            HostError::Refused(
                "no cgroup cpu controller (neither a v1 cpu hierarchy nor cpu on cgroup v2)".into(),
            )
        };
        let m = mounts
            .iter()
            .find(|m| m.fstype == "cgroup2")
            .ok_or_else(no_cpu)?;
        let own = own_path(proc_cgroup, None).ok_or_else(no_cpu)?;
        let home = under_mount(m.point, m.root, own);
        let controllers = read(&home.join("cgroup.controllers")).unwrap_or_default();
        if !controllers.split_whitespace().any(|c| c == "cpu") {
            return Err(HostError::Refused(format!(
                "cgroup v2 does not give the cpu controller to {} (its cgroup.controllers lacks \"cpu\")",
                home.display()
            )));
        }
        Ok(CpuController {
            version: Version::V2,
            home,
        })
    }

    /// Root and a cpu controller, or why not.
    pub fn available() -> Result<CpuController> {
        if !sys::is_root() {
            return Err(HostError::Refused(
                "cpu cgroups need root (effective uid 0)".into(),
            ));
        }
        CpuController::detect()
    }

    /// Creates one parent group for this run and, under it, one group per `(name,
    /// shares)`, announced on stderr. Removed when the returned value is dropped.
    pub fn create(&self, groups: &[(&str, u64)]) -> Result<CpuGroups> {
        let owner = Owner::current().map_err(|e| HostError::io("reading", "/proc/self/stat", e))?;
        let parent = self.home.join(owner.name(PREFIX));
        let mut made = CpuGroups {
            version: self.version,
            home: self.home.clone(),
            parent: parent.clone(),
            groups: Vec::new(),
            enabled_in_home: false,
        };
        if self.version == Version::V2 {
            made.enabled_in_home = enable_cpu(&self.home)?;
        }
        fs::create_dir(&parent).map_err(|e| HostError::io("creating cgroup", &parent, e))?;
        made.groups.push(parent.clone());
        announce(&format!(
            "created cpu cgroup {} ({})",
            parent.display(),
            self.version.name()
        ));
        if self.version == Version::V2 {
            write_text(&parent.join("cgroup.type"), "threaded", "making threaded")?;
            enable_cpu(&parent)?;
        }
        for &(name, shares) in groups {
            if name.is_empty() || name.contains('/') || name.starts_with('.') {
                return Err(HostError::Refused(format!("bad cpu group name {name:?}")));
            }
            let dir = parent.join(name);
            fs::create_dir(&dir).map_err(|e| HostError::io("creating cgroup", &dir, e))?;
            made.groups.push(dir.clone());
            match self.version {
                Version::V1 => write_text(&dir.join("cpu.shares"), &shares.to_string(), "setting")?,
                Version::V2 => {
                    write_text(&dir.join("cgroup.type"), "threaded", "making threaded")?;
                    write_text(
                        &dir.join("cpu.weight"),
                        &weight_of_shares(shares).to_string(),
                        "setting",
                    )?;
                }
            }
            announce(&format!(
                "created cpu cgroup {} ({shares} shares)",
                dir.display()
            ));
        }
        Ok(made)
    }

    /// Removes the run groups of dead owners (their threads are gone with them).
    pub fn sweep(&self) -> Result<Vec<PathBuf>> {
        let mut removed = Vec::new();
        let dead = owner::dead_entries(&self.home, PREFIX)
            .map_err(|e| HostError::io("listing", &self.home, e))?;
        for (parent, owner) in dead {
            let children = fs::read_dir(&parent)
                .map_err(|e| HostError::io("listing", &parent, e))?
                .flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.path());
            let mut dirs: Vec<PathBuf> = children.collect();
            dirs.push(parent.clone());
            for dir in dirs {
                fs::remove_dir(&dir).map_err(|e| HostError::io("removing cgroup", &dir, e))?;
            }
            announce(&format!(
                "removed cpu cgroup {} left by a dead run ({owner})",
                parent.display()
            ));
            removed.push(parent);
        }
        Ok(removed)
    }
}

/// Adds `cpu` to `dir`'s `cgroup.subtree_control` (v2); true when it was not there.
fn enable_cpu(dir: &Path) -> Result<bool> {
    let control = dir.join("cgroup.subtree_control");
    let enabled = read_text(&control, "reading")?;
    if enabled.split_whitespace().any(|c| c == "cpu") {
        return Ok(false);
    }
    write_text(&control, "+cpu", "enabling the cpu controller in")?;
    Ok(true)
}

/// A run's cpu groups. Dropping them moves their threads back and removes them.
#[derive(Debug)]
pub struct CpuGroups {
    version: Version,
    home: PathBuf,
    parent: PathBuf,
    /// Every directory made, the parent first.
    groups: Vec<PathBuf>,
    /// v2: whether `cpu` was enabled in the home group's subtree for this run.
    enabled_in_home: bool,
}

impl CpuGroups {
    fn threads_file(&self) -> &'static str {
        match self.version {
            Version::V1 => "tasks",
            Version::V2 => "cgroup.threads",
        }
    }

    /// The directory of group `name`.
    pub fn path(&self, name: &str) -> Result<&Path> {
        self.groups[1..]
            .iter()
            .find(|p| p.file_name().is_some_and(|n| n == name))
            .map(PathBuf::as_path)
            .ok_or_else(|| HostError::Refused(format!("no cpu group {name:?} in this run")))
    }

    /// Moves the calling thread into group `name` (the thread alone: the process's
    /// other threads stay where they are).
    pub fn join(&self, name: &str) -> Result<()> {
        // "0" is the writing thread.
        write_text(
            &self.path(name)?.join(self.threads_file()),
            "0",
            "moving a thread into",
        )
    }

    /// Moves the calling thread back to the group it came from.
    pub fn leave(&self) -> Result<()> {
        write_text(
            &self.home.join(self.threads_file()),
            "0",
            "moving a thread back to",
        )
    }

    /// Moves every thread of process `pid` into group `name` (threads it starts later
    /// are born in their parent thread's group). A thread that exits meanwhile is
    /// skipped; a process that is gone is an error.
    pub fn move_process(&self, name: &str, pid: u32) -> Result<()> {
        let file = self.path(name)?.join(self.threads_file());
        let task_dir = PathBuf::from(format!("/proc/{pid}/task"));
        let tasks = fs::read_dir(&task_dir).map_err(|e| HostError::io("listing", &task_dir, e))?;
        for task in tasks.flatten() {
            let tid = task.file_name();
            match write_text(&file, &tid.to_string_lossy(), "moving a thread into") {
                Ok(()) => {}
                Err(HostError::Io { source, .. }) if source.raw_os_error() == Some(libc::ESRCH) => {
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Makes the child that `cmd` will start join group `name` between fork and exec
    /// (its only thread then), so every thread it starts is born there.
    pub fn join_before_exec(&self, name: &str, cmd: &mut std::process::Command) -> Result<()> {
        let p = self.path(name)?.join(self.threads_file());
        let file = fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .map_err(|e| HostError::io("opening", &p, e))?;
        sys::join_cgroup_before_exec(cmd, file);
        Ok(())
    }

    /// Sets the shares of the run's parent group (what all its groups together weigh
    /// against the other processes of the machine).
    pub fn set_parent_shares(&self, shares: u64) -> Result<()> {
        match self.version {
            Version::V1 => write_text(
                &self.parent.join("cpu.shares"),
                &shares.to_string(),
                "setting",
            ),
            Version::V2 => write_text(
                &self.parent.join("cpu.weight"),
                &weight_of_shares(shares).to_string(),
                "setting",
            ),
        }
    }

    /// The threads (ids) in group `name`.
    pub fn threads(&self, name: &str) -> Result<Vec<u32>> {
        let text = read_text(&self.path(name)?.join(self.threads_file()), "reading")?;
        Ok(text.lines().filter_map(|l| l.trim().parse().ok()).collect())
    }

    fn remove_all(&mut self) -> Result<()> {
        let home_threads = self.home.join(self.threads_file());
        for dir in self.groups.iter().rev() {
            let file = dir.join(self.threads_file());
            if let Ok(text) = fs::read_to_string(&file) {
                for tid in text.lines().filter(|l| !l.trim().is_empty()) {
                    // A thread that has exited meanwhile is fine.
                    match write_text(&home_threads, tid.trim(), "moving a thread back to") {
                        Ok(()) => {}
                        Err(HostError::Io { source, .. })
                            if source.raw_os_error() == Some(libc::ESRCH) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            match fs::remove_dir(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(HostError::io("removing cgroup", dir, e)),
            }
        }
        self.groups.clear();
        if std::mem::take(&mut self.enabled_in_home) {
            write_text(
                &self.home.join("cgroup.subtree_control"),
                "-cpu",
                "disabling the cpu controller in",
            )?;
        }
        Ok(())
    }

    /// Moves the threads back, removes the groups and announces it; dropping does the
    /// same, reporting a failure on stderr instead.
    pub fn remove(mut self) -> Result<()> {
        self.remove_all()?;
        announce(&format!("removed cpu cgroup {}", self.parent.display()));
        Ok(())
    }
}

impl Drop for CpuGroups {
    fn drop(&mut self) {
        if self.groups.is_empty() && !self.enabled_in_home {
            return;
        }
        match self.remove_all() {
            Ok(()) => announce(&format!("removed cpu cgroup {}", self.parent.display())),
            Err(e) => announce(&format!(
                "could not remove cpu cgroup {}: {e}",
                self.parent.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn v1_cpu_is_found_under_this_process_cpu_group_not_cpuacct() {
        let proc_cgroup = "4:memory:/x\n2:cpuacct:/acct\n1:cpu:/apps/a\n0::/\n";
        let c = CpuController::from_texts(MOUNTINFO, proc_cgroup, |_| None).unwrap();
        assert_eq!(
            c,
            CpuController {
                version: Version::V1,
                home: "/sys/fs/cgroup/cpu/apps/a".into()
            }
        );
    }

    #[test]
    fn v2_needs_cpu_among_the_controllers_of_this_group() {
        let mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";
        let proc_cgroup = "0::/user.slice/s.scope\n";
        let with = |list: &'static str| {
            move |p: &Path| {
                assert_eq!(
                    p,
                    Path::new("/sys/fs/cgroup/user.slice/s.scope/cgroup.controllers")
                );
                Some(list.to_string())
            }
        };
        let c = CpuController::from_texts(mountinfo, proc_cgroup, with("cpu memory")).unwrap();
        assert_eq!(c.version, Version::V2);
        assert_eq!(c.home, PathBuf::from("/sys/fs/cgroup/user.slice/s.scope"));
        let e = CpuController::from_texts(mountinfo, proc_cgroup, with("memory pids")).unwrap_err();
        assert!(e.to_string().contains("lacks \"cpu\""), "{e}");
        let e = CpuController::from_texts("", proc_cgroup, |_| None).unwrap_err();
        assert!(e.to_string().contains("no cgroup cpu controller"), "{e}");
    }

    #[test]
    fn nice_weights_are_the_kernels() {
        assert_eq!(nice_weight(0), 1024);
        assert_eq!(nice_weight(-15), 29154);
        assert_eq!(nice_weight(10), 110);
        assert_eq!(nice_weight(-40), 88761);
        assert_eq!(nice_weight(40), 15);
    }

    #[test]
    fn shares_map_to_weights_as_the_kernel_does() {
        assert_eq!(weight_of_shares(1024), 100);
        assert_eq!(weight_of_shares(52), 5);
        assert_eq!(weight_of_shares(2), 1);
        assert_eq!(weight_of_shares(262_144), 10_000);
    }

    /// Creates groups, moves this thread in and out, and checks that dropping removes
    /// every directory (root and a cpu controller only).
    #[test]
    fn a_thread_joins_a_group_and_dropping_removes_the_groups_and_brings_it_back() {
        let controller = match CpuController::available() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        // A thread of its own, so the test harness's thread never changes group.
        std::thread::spawn(move || {
            let groups = controller
                .create(&[("fg", 1024), ("bg", 52)])
                .expect("creating groups as root");
            let parent = groups.parent.clone();
            let bg = groups.path("bg").unwrap().to_path_buf();
            if controller.version == Version::V1 {
                let shares = fs::read_to_string(bg.join("cpu.shares")).unwrap();
                assert_eq!(shares.trim(), "52");
            }
            assert!(groups.path("nope").is_err());
            groups.join("bg").unwrap();
            let me = fs::read_to_string("/proc/thread-self/stat").unwrap();
            let tid: u32 = me.split(' ').next().unwrap().parse().unwrap();
            assert_eq!(groups.threads("bg").unwrap(), vec![tid]);
            assert!(groups.threads("fg").unwrap().is_empty());
            // Still inside at the drop: the drop moves it back before removing.
            drop(groups);
            assert!(!parent.exists(), "dropping removed {}", parent.display());
            let home_threads = match controller.version {
                Version::V1 => "tasks",
                Version::V2 => "cgroup.threads",
            };
            let home = fs::read_to_string(controller.home.join(home_threads)).unwrap();
            assert!(home.lines().any(|l| l.trim() == tid.to_string()));
        })
        .join()
        .unwrap();
    }

    /// A whole process moves between groups, every thread of it; a gone process is an
    /// error (root and a cpu controller only).
    #[test]
    fn a_process_moves_with_all_its_threads() {
        let controller = match CpuController::available() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        let groups = controller
            .create(&[("top", 1024), ("back", 52)])
            .expect("creating groups as root");
        groups.set_parent_shares(4096).unwrap();
        if controller.version == Version::V1 {
            let shares = fs::read_to_string(groups.parent.join("cpu.shares")).unwrap();
            assert_eq!(shares.trim(), "4096");
        }
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("starting sleep");
        let pid = child.id();
        groups.move_process("back", pid).unwrap();
        assert_eq!(groups.threads("back").unwrap(), vec![pid]);
        groups.move_process("top", pid).unwrap();
        assert_eq!(groups.threads("top").unwrap(), vec![pid]);
        assert!(groups.threads("back").unwrap().is_empty());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(groups.move_process("top", pid).is_err(), "a gone process");
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        groups.join_before_exec("back", &mut cmd).unwrap();
        let mut born = cmd.spawn().expect("starting sleep in a group");
        assert_eq!(groups.threads("back").unwrap(), vec![born.id()]);
        born.kill().unwrap();
        born.wait().unwrap();
        assert!(groups.move_process("nope", std::process::id()).is_err());
    }
}
