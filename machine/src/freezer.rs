//! Freezing cached apps, as Android 14 does with the cgroup freezer: each app frozen gets
//! a freezer group of its own (`marvin-freeze-PID-START-SEQ`, named for the run that made
//! it, [`Owner`]), and is frozen and thawed by writing to it. The thaw is timed, so a
//! launch can include it.
//!
//! Where the groups go: with the cgroup v1 `freezer` controller mounted, under the
//! freezer cgroup this process is in (`freezer.state` = `FROZEN` / `THAWED`); otherwise on
//! cgroup v2 as a child of the app's own v2 group, which for an app of a run is the run's
//! memory group, so its memory stays charged there (`cgroup.freeze` = 1 / 0, and
//! `cgroup.events` `frozen`).
//!
//! [`Freezer`] is the run's: it announces itself once, keeps the groups of the apps it
//! froze, and on [`Freezer::release`] (the app ended) or when dropped (also while a panic
//! unwinds) thaws each, moves what is left in it back to where the app came from, and
//! removes it. A run killed by SIGKILL leaves its groups frozen: [`sweep`] thaws and
//! removes the groups of dead owners. Order matters on v1, where a frozen task does not
//! even die of SIGKILL until it is thawed: the killer thaws an app before it kills it,
//! and the sweep of frozen groups runs before the sweep of memory groups (whose removal
//! also thaws a member it finds frozen, [`thaw_if_ours`]).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::announce;
use super::cgroup::{self, Version};
use super::error::{HostError, Result};
use super::owner::{self, Owner};

/// The prefix of every freezer group's name.
pub const PREFIX: &str = "marvin-freeze";

/// How long freezing waits for every task of the group to stop (a task in an
/// uninterruptible sleep, such as a page fault reading from swap, freezes when it wakes).
const FREEZE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where this machine's freezer groups go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// cgroup v1's `freezer` controller: groups under this directory.
    V1 { parent: PathBuf },
    /// cgroup v2's core freezer: each group a child of its app's v2 group, found from
    /// `/proc/PID/cgroup` under this mount (`root` is the part of the hierarchy the mount
    /// shows).
    V2 { mount: PathBuf, root: String },
}

impl Place {
    pub fn version(&self) -> Version {
        match self {
            Place::V1 { .. } => Version::V1,
            Place::V2 { .. } => Version::V2,
        }
    }

    /// Finds the freezer from the texts of `/proc/self/mountinfo` and `/proc/self/cgroup`:
    /// v1's controller where it is mounted, else cgroup v2.
    pub fn from_texts(mountinfo: &str, proc_cgroup: &str) -> Option<Place> {
        let mounts = cgroup::parse_mountinfo(mountinfo);
        if let Some(m) = mounts
            .iter()
            .find(|m| m.fstype == "cgroup" && m.super_opts.split(',').any(|o| o == "freezer"))
        {
            let own = cgroup::own_path(proc_cgroup, Some("freezer"))?;
            return Some(Place::V1 {
                parent: cgroup::under_mount(m.point, m.root, own),
            });
        }
        Place::v2_from_texts(mountinfo)
    }

    /// cgroup v2's freezer from the mount texts, even where v1's controller is mounted
    /// too (a hybrid layout): for tests of both.
    pub fn v2_from_texts(mountinfo: &str) -> Option<Place> {
        let mounts = cgroup::parse_mountinfo(mountinfo);
        let m = mounts.iter().find(|m| m.fstype == "cgroup2")?;
        Some(Place::V2 {
            mount: PathBuf::from(m.point),
            root: m.root.to_string(),
        })
    }

    /// This machine's freezer, or why there is none.
    pub fn detect() -> Result<Place> {
        let mountinfo = cgroup::read_text(Path::new("/proc/self/mountinfo"), "reading")?;
        let proc_cgroup = cgroup::read_text(Path::new("/proc/self/cgroup"), "reading")?;
        Place::from_texts(&mountinfo, &proc_cgroup).ok_or_else(|| {
            HostError::Refused(
                "no cgroup freezer: neither the v1 freezer controller nor a cgroup2 mount".into(),
            )
        })
    }

    /// The directory a new group for `pid` goes in.
    fn parent_for(&self, pid: u32) -> Result<PathBuf> {
        match self {
            Place::V1 { parent } => Ok(parent.clone()),
            Place::V2 { mount, root } => {
                let p = format!("/proc/{pid}/cgroup");
                let text = cgroup::read_text(Path::new(&p), "reading")?;
                let own = cgroup::own_path(&text, None).ok_or_else(|| HostError::Parse {
                    path: p.into(),
                    msg: "no cgroup v2 line".into(),
                })?;
                Ok(cgroup::under_mount(&mount.to_string_lossy(), root, own))
            }
        }
    }
}

/// One app's freezer group.
#[derive(Debug)]
struct AppGroup {
    path: PathBuf,
    /// Where the app came from: its members go back there before the group is removed.
    home: PathBuf,
    frozen: bool,
}

/// The run's freezer: the groups of the apps it froze, thawed and removed when dropped.
#[derive(Debug)]
pub struct Freezer {
    place: Place,
    owner: Owner,
    groups: BTreeMap<u32, AppGroup>,
}

impl Freezer {
    /// The run's freezer, announced once (the groups are made as apps are first frozen).
    pub fn new(place: Place) -> Result<Freezer> {
        let owner = Owner::current().map_err(|e| HostError::io("reading", "/proc/self/stat", e))?;
        announce(&Freezer::describe(&place));
        Ok(Freezer {
            place,
            owner,
            groups: BTreeMap::new(),
        })
    }

    /// The one line that says how apps are frozen.
    pub fn describe(place: &Place) -> String {
        match place {
            Place::V1 { parent } => format!(
                "freezing cached apps with the cgroup v1 freezer, one group per app under {} \
                 ({PREFIX}-PID-START-SEQ; thawed and removed when the app ends and at the end \
                 of the run)",
                parent.display()
            ),
            Place::V2 { .. } => format!(
                "freezing cached apps with cgroup v2's cgroup.freeze, one child group per app \
                 ({PREFIX}-PID-START-SEQ) in the app's group; thawed and removed when the app \
                 ends and at the end of the run"
            ),
        }
    }

    pub fn place(&self) -> &Place {
        &self.place
    }

    /// Freezes app `pid` (making its group at the first freeze) and waits until every
    /// task of it has stopped; returns how long that took.
    pub fn freeze(&mut self, pid: u32) -> Result<Duration> {
        if !self.groups.contains_key(&pid) {
            let g = self.make_group(pid)?;
            self.groups.insert(pid, g);
        }
        let g = self.groups.get_mut(&pid).expect("made above");
        let start = Instant::now();
        set_frozen(self.place.version(), &g.path, true)?;
        g.frozen = true;
        wait_frozen(self.place.version(), &g.path)?;
        Ok(start.elapsed())
    }

    /// Thaws app `pid` if it is frozen; returns how long the thaw took (zero when it was
    /// not frozen), for the launch's time.
    pub fn thaw(&mut self, pid: u32) -> Result<Duration> {
        let Some(g) = self.groups.get_mut(&pid) else {
            return Ok(Duration::ZERO);
        };
        if !g.frozen {
            return Ok(Duration::ZERO);
        }
        let start = Instant::now();
        set_frozen(self.place.version(), &g.path, false)?;
        g.frozen = false;
        Ok(start.elapsed())
    }

    /// Whether app `pid` is frozen, as the kernel says.
    pub fn is_frozen(&self, pid: u32) -> Result<bool> {
        match self.groups.get(&pid) {
            Some(g) => is_frozen(self.place.version(), &g.path),
            None => Ok(false),
        }
    }

    /// The group app `pid` is frozen in, if it has one.
    pub fn group_of(&self, pid: u32) -> Option<&Path> {
        self.groups.get(&pid).map(|g| g.path.as_path())
    }

    /// Thaws app `pid`, moves it back where it came from and removes its group: when the
    /// app ends (call before killing it on cgroup v1, where a frozen task does not die)
    /// or the run does.
    pub fn release(&mut self, pid: u32) -> Result<()> {
        match self.groups.remove(&pid) {
            Some(g) => remove_group(self.place.version(), &g.path, &g.home),
            None => Ok(()),
        }
    }

    /// Releases every app ([`Freezer::release`]), returning the first error.
    pub fn release_all(&mut self) -> Result<()> {
        let pids: Vec<u32> = self.groups.keys().copied().collect();
        let mut first = Ok(());
        let n = pids.len();
        for pid in pids {
            let r = self.release(pid);
            if first.is_ok() {
                first = r;
            }
        }
        if n > 0 {
            announce(&format!("thawed and removed {n} freezer group(s)"));
        }
        first
    }

    fn make_group(&self, pid: u32) -> Result<AppGroup> {
        let home = self.place.parent_for(pid)?;
        let path = home.join(self.owner.name(PREFIX));
        fs::create_dir(&path).map_err(|e| HostError::io("creating freezer group", &path, e))?;
        let g = AppGroup {
            path,
            home,
            frozen: false,
        };
        if let Err(e) = cgroup::write_text(
            &g.path.join("cgroup.procs"),
            &pid.to_string(),
            "moving an app into",
        ) {
            let _ = fs::remove_dir(&g.path);
            return Err(e);
        }
        Ok(g)
    }
}

impl Drop for Freezer {
    fn drop(&mut self) {
        if let Err(e) = self.release_all() {
            announce(&format!("could not remove a freezer group: {e}"));
        }
    }
}

fn set_frozen(version: Version, group: &Path, frozen: bool) -> Result<()> {
    let (file, value) = match (version, frozen) {
        (Version::V1, true) => ("freezer.state", "FROZEN"),
        (Version::V1, false) => ("freezer.state", "THAWED"),
        (Version::V2, true) => ("cgroup.freeze", "1"),
        (Version::V2, false) => ("cgroup.freeze", "0"),
    };
    cgroup::write_text(&group.join(file), value, "freezing or thawing")
}

/// Whether the kernel reports the group wholly frozen (v1 `freezer.state` `FROZEN`, v2
/// `cgroup.events` `frozen 1`).
fn is_frozen(version: Version, group: &Path) -> Result<bool> {
    Ok(match version {
        Version::V1 => {
            cgroup::read_text(&group.join("freezer.state"), "reading")?.trim() == "FROZEN"
        }
        Version::V2 => {
            let text = cgroup::read_text(&group.join("cgroup.events"), "reading")?;
            cgroup::parse_keyed(&text).get("frozen") == Some(&1)
        }
    })
}

fn wait_frozen(version: Version, group: &Path) -> Result<()> {
    let deadline = Instant::now() + FREEZE_TIMEOUT;
    while !is_frozen(version, group)? {
        if Instant::now() > deadline {
            return Err(HostError::Refused(format!(
                "{} did not freeze within {FREEZE_TIMEOUT:?}",
                group.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Thaws the group at `path`, moves its members to `home` and removes it.
fn remove_group(version: Version, path: &Path, home: &Path) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    set_frozen(version, path, false)?;
    for pid in cgroup::pids_of(path)? {
        // A member that ended meanwhile is fine.
        let _ = cgroup::write_text(&home.join("cgroup.procs"), &pid.to_string(), "moving back");
    }
    let deadline = Instant::now() + FREEZE_TIMEOUT;
    loop {
        match fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            // A member on its way out, or one that moved in meanwhile.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                for pid in cgroup::pids_of(path).unwrap_or_default() {
                    let _ = cgroup::write_text(
                        &home.join("cgroup.procs"),
                        &pid.to_string(),
                        "moving back",
                    );
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(HostError::io("removing freezer group", path, e)),
        }
    }
}

/// Thaws and removes the freezer groups nested in the cgroup v2 group at `dir` (a run's
/// memory group), their members moved up into it: a v2 group that has a child cannot be
/// removed, and the kill of its members would not see the child's. For the memory group's
/// removal, which then kills them.
pub fn remove_nested(dir: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let named = e
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(PREFIX));
        if named && e.path().is_dir() {
            remove_group(Version::V2, &e.path(), dir)?;
        }
    }
    Ok(())
}

/// Thaws process `pid` if it sits frozen in a freezer group of ours (a v1 group named
/// [`PREFIX`]): a frozen task on v1 does not die of SIGKILL until thawed, so a memory
/// group's removal calls this for each member it kills. Returns whether it thawed one.
pub fn thaw_if_ours(pid: u32) -> bool {
    let Ok(place) = Place::detect() else {
        return false;
    };
    let Place::V1 { .. } = place else {
        // v2's freezer lets SIGKILL through.
        return false;
    };
    let Ok(text) = fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
        return false;
    };
    let Some(own) = cgroup::own_path(&text, Some("freezer")) else {
        return false;
    };
    let name = own.rsplit('/').next().unwrap_or("");
    if Owner::parse_name(PREFIX, name).is_none() {
        return false;
    }
    let Ok(mountinfo) = fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let mounts = cgroup::parse_mountinfo(&mountinfo);
    let Some(m) = mounts
        .iter()
        .find(|m| m.fstype == "cgroup" && m.super_opts.split(',').any(|o| o == "freezer"))
    else {
        return false;
    };
    let dir = cgroup::under_mount(m.point, m.root, own);
    set_frozen(Version::V1, &dir, false).is_ok()
}

/// Thaws and removes the freezer groups of runs that died without cleaning up (SIGKILL),
/// their members moved back out (the memory group's sweep then kills them); groups of
/// live runs are left alone. On v1 it looks under this process's freezer cgroup; on v2 in
/// the run groups under `run_parent` (where the memory groups are). Returns what it
/// removed. Run it before the memory groups' sweep.
pub fn sweep(run_parent: Option<&Path>) -> Result<Vec<PathBuf>> {
    let Ok(place) = Place::detect() else {
        return Ok(Vec::new());
    };
    let dirs: Vec<PathBuf> = match &place {
        Place::V1 { parent } => vec![parent.clone()],
        Place::V2 { .. } => match run_parent {
            Some(p) => fs::read_dir(p)
                .map(|es| {
                    es.flatten()
                        .filter(|e| {
                            e.file_name()
                                .to_str()
                                .is_some_and(|n| n.starts_with(cgroup::PREFIX))
                        })
                        .map(|e| e.path())
                        .collect()
                })
                .unwrap_or_default(),
            None => Vec::new(),
        },
    };
    let mut removed = Vec::new();
    for dir in dirs {
        let Ok(dead) = owner::dead_entries(&dir, PREFIX) else {
            continue;
        };
        for (path, owner) in dead {
            remove_group(place.version(), &path, &dir)?;
            announce(&format!(
                "thawed and removed freezer group {} left by a dead run ({owner})",
                path.display()
            ));
            removed.push(path);
        }
    }
    Ok(removed)
}

/// Whether `owner` left a freezer group (for a guardian deciding whether to sweep).
pub fn left_by(owner: Owner, run_parent: Option<&Path>) -> bool {
    let ours = |dir: &Path| {
        fs::read_dir(dir).is_ok_and(|es| {
            es.flatten().any(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| Owner::parse_name(PREFIX, n))
                    == Some(owner)
            })
        })
    };
    match Place::detect() {
        Ok(Place::V1 { parent }) => ours(&parent),
        Ok(Place::V2 { .. }) => run_parent
            .is_some_and(|p| fs::read_dir(p).is_ok_and(|es| es.flatten().any(|e| ours(&e.path())))),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn v1_freezer_groups_go_under_this_process_freezer_cgroup() {
        let p = Place::from_texts(MOUNTINFO, "6:freezer:/apps\n4:memory:/x\n0::/\n").unwrap();
        assert_eq!(
            p,
            Place::V1 {
                parent: "/sys/fs/cgroup/freezer/apps".into()
            }
        );
    }

    #[test]
    fn without_the_v1_freezer_cgroup_v2_serves() {
        let mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";
        let p = Place::from_texts(mountinfo, "0::/user.slice\n").unwrap();
        assert_eq!(
            p,
            Place::V2 {
                mount: "/sys/fs/cgroup".into(),
                root: "/".into()
            }
        );
        assert_eq!(p.version(), Version::V2);
        let none = "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
        assert_eq!(Place::from_texts(none, "1:cpu:/\n"), None);
    }

    #[test]
    fn an_app_never_frozen_thaws_in_no_time() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = Freezer {
            place: Place::V1 {
                parent: dir.path().to_path_buf(),
            },
            owner: Owner::current().unwrap(),
            groups: BTreeMap::new(),
        };
        assert_eq!(f.thaw(12345).unwrap(), Duration::ZERO);
        assert!(!f.is_frozen(12345).unwrap());
        assert!(f.release(12345).is_ok());
    }
}
