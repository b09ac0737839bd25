//! Real Linux swap for a run, created by the run and removed by it: a swap file in a
//! directory of the run (zeros written, mode 0600, our own header, `swapon(2)`), or the
//! zram device `/dev/zram0` (its `disksize` set, header written, `swapon(2)`; reset on
//! the way out). The [`SwapDevice`] guard turns swap off and removes the file or resets
//! zram when dropped, also while a panic unwinds; [`sweep`] removes the swap of runs
//! that died by SIGKILL. A device the run did not create is never touched: a zram
//! device already sized or in use is refused, and the sweep only acts on names that
//! carry a dead owner ([`Owner`]).
//!
//! zram keeps its compressed pages in kernel memory that is charged to no cgroup: a
//! run on zram swap gets that memory on top of its limit, which the run reports
//! ([`SwapDevice::zram_memory_bytes`]).
//!
//! Drop the run's [`super::Group`] (killing its processes) before its swap device:
//! `swapoff` reads every swapped page back into memory, charged to its owner.

use std::fs::{self, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::error::{HostError, Result};
use super::owner::Owner;
use super::swap_header::{self, MIN_PAGES};
use super::{announce, mib, sys};

/// The prefix of swap file names and zram ownership markers.
pub const FILE_PREFIX: &str = "marvin-swap";
pub const ZRAM_MARKER_PREFIX: &str = "marvin-zram";
/// The zram device a run sets up, in sysfs.
pub const ZRAM_SYS: &str = "/sys/block/zram0";
const ZRAM_DEV: &str = "/dev/zram0";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Zram,
}

/// A swap area the run created; dropping it turns it off and removes it.
#[derive(Debug)]
pub struct SwapDevice {
    kind: Kind,
    path: PathBuf,
    bytes: u64,
    /// zram only: the file that says this run owns the device.
    marker: Option<PathBuf>,
    active: bool,
    removed: bool,
}

/// The directory for zram ownership markers: `/run/marvin` (gone after a reboot, like
/// zram's state), or the temp directory where there is no `/run`.
pub fn default_state_dir() -> PathBuf {
    if Path::new("/run").is_dir() {
        PathBuf::from("/run/marvin")
    } else {
        std::env::temp_dir().join("marvin")
    }
}

/// One line of `/proc/swaps`: the path and the KiB used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActiveSwap {
    pub path: PathBuf,
    pub size_bytes: u64,
    pub used_bytes: u64,
}

/// Parses `/proc/swaps` (the kernel writes a space in a path as `\040`).
pub fn parse_proc_swaps(text: &str) -> Vec<ActiveSwap> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let kib = |i: usize| f.get(i)?.parse::<u64>().ok().map(|k| k * 1024);
            Some(ActiveSwap {
                path: PathBuf::from(f.first()?.replace("\\040", " ")),
                size_bytes: kib(2)?,
                used_bytes: kib(3)?,
            })
        })
        .collect()
}

/// The swap areas active on the machine.
pub fn active_swaps() -> Result<Vec<ActiveSwap>> {
    let text = fs::read_to_string("/proc/swaps")
        .map_err(|e| HostError::io("reading", "/proc/swaps", e))?;
    Ok(parse_proc_swaps(&text))
}

/// The priority a run's swap is turned on at: the highest there is, so the kernel puts
/// the run's pages on the run's own device before any other swap the machine has (a
/// distribution's zram, a device turned on by hand); another real-mode run, whose device
/// would share it, cannot run at the same time ([`super::MachineLock`]).
pub const RUN_PRIORITY: u16 = 32767;

fn need_root() -> Result<()> {
    if sys::is_root() {
        Ok(())
    } else {
        Err(HostError::NotRoot)
    }
}

/// Whole pages in `bytes`, at least [`MIN_PAGES`].
fn pages_for(bytes: u64, page: u64) -> Result<u64> {
    let pages = bytes / page;
    if pages < MIN_PAGES {
        return Err(HostError::Refused(format!(
            "a swap area of {bytes} bytes is too small (at least {} KiB)",
            MIN_PAGES * page / 1024
        )));
    }
    Ok(pages)
}

impl SwapDevice {
    /// Creates a swap file of `bytes` in `dir` and turns it on, at `priority` if given.
    pub fn enable_file(dir: &Path, bytes: u64, priority: Option<u16>) -> Result<SwapDevice> {
        need_root()?;
        let page = sys::page_size();
        let pages = pages_for(bytes, page)?;
        let owner = Owner::current().map_err(|e| HostError::io("reading", "/proc/self/stat", e))?;
        let path = dir.join(format!("{}.swap", owner.name(FILE_PREFIX)));
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| HostError::io("creating swap file", &path, e))?;
        let dev = SwapDevice {
            kind: Kind::File,
            path,
            bytes: pages * page,
            marker: None,
            active: false,
            removed: false,
        };
        announce(&format!(
            "created swap file {} ({} MiB)",
            dev.path.display(),
            mib(dev.bytes)
        ));
        // Written zeros, not fallocate: the kernel refuses swap files with holes, and
        // on some filesystems unwritten extents too.
        let chunk = vec![0u8; 1 << 20];
        let mut left = dev.bytes;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            file.write_all(&chunk[..n])
                .map_err(|e| HostError::io("writing swap file", &dev.path, e))?;
            left -= n as u64;
        }
        let head = swap_header::header(page as usize, pages, swap_header::random_uuid(), "marvin");
        file.seek(SeekFrom::Start(0))
            .map_err(|e| HostError::io("writing swap file", &dev.path, e))?;
        file.write_all(&head)
            .map_err(|e| HostError::io("writing swap file", &dev.path, e))?;
        file.sync_all()
            .map_err(|e| HostError::io("syncing swap file", &dev.path, e))?;
        drop(file);
        dev.turn_on(priority)
    }

    /// Sets up `/dev/zram0` with `bytes` of (uncompressed) capacity and turns it on. The
    /// device must be unused (disksize 0, not in `/proc/swaps`); `state_dir` keeps the
    /// marker that lets a later run's sweep reset it if this run dies.
    pub fn enable_zram(state_dir: &Path, bytes: u64, priority: Option<u16>) -> Result<SwapDevice> {
        SwapDevice::enable_zram_with(state_dir, bytes, None, priority)
    }

    /// [`SwapDevice::enable_zram`] compressing with `algorithm` (one of the device's
    /// `comp_algorithm` list, checked first: [`super::zram_charge::set_algorithm`]),
    /// or the kernel's default with `None`. Resetting the device on the way out puts the
    /// default back.
    pub fn enable_zram_with(
        state_dir: &Path,
        bytes: u64,
        algorithm: Option<&str>,
        priority: Option<u16>,
    ) -> Result<SwapDevice> {
        need_root()?;
        zram_free()?;
        let sys_dir = Path::new(ZRAM_SYS);
        let page = sys::page_size();
        let pages = pages_for(bytes, page)?;
        let owner = Owner::current().map_err(|e| HostError::io("reading", "/proc/self/stat", e))?;
        fs::create_dir_all(state_dir).map_err(|e| HostError::io("creating", state_dir, e))?;
        let marker = state_dir.join(owner.name(ZRAM_MARKER_PREFIX));
        fs::write(&marker, "zram0\n").map_err(|e| HostError::io("writing", &marker, e))?;
        let dev = SwapDevice {
            kind: Kind::Zram,
            path: PathBuf::from(ZRAM_DEV),
            bytes: pages * page,
            marker: Some(marker),
            active: false,
            removed: false,
        };
        // With the guard made (and the marker written), so that a failure or a SIGKILL
        // from here on resets the device, which puts the default algorithm back.
        if let Some(a) = algorithm {
            super::zram_charge::set_algorithm(sys_dir, a)?;
        }
        let size_path = sys_dir.join("disksize");
        fs::write(&size_path, dev.bytes.to_string())
            .map_err(|e| HostError::io("writing", size_path, e))?;
        announce(&format!(
            "set up {ZRAM_DEV} for swap ({} MiB uncompressed, {}; its memory is not charged to the cgroup)",
            mib(dev.bytes),
            super::zram_charge::current_algorithm(sys_dir).unwrap_or_else(|_| "its default algorithm".into())
        ));
        let head = swap_header::header(page as usize, pages, swap_header::random_uuid(), "marvin");
        let mut block = OpenOptions::new()
            .write(true)
            .open(&dev.path)
            .map_err(|e| HostError::io("opening", &dev.path, e))?;
        block
            .write_all(&head)
            .map_err(|e| HostError::io("writing the swap header to", &dev.path, e))?;
        block
            .sync_all()
            .map_err(|e| HostError::io("syncing", &dev.path, e))?;
        drop(block);
        dev.turn_on(priority)
    }

    fn turn_on(mut self, priority: Option<u16>) -> Result<SwapDevice> {
        sys::swapon(&self.path, priority).map_err(|e| HostError::io("swapon", &self.path, e))?;
        self.active = true;
        announce(&format!("swap on {}", self.path.display()));
        Ok(self)
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Capacity in bytes (uncompressed, for zram).
    pub fn size_bytes(&self) -> u64 {
        self.bytes
    }

    /// Bytes in use on this device now (from `/proc/swaps`).
    pub fn used_bytes(&self) -> Result<u64> {
        Ok(active_swaps()?
            .into_iter()
            .find(|s| s.path == self.path)
            .map(|s| s.used_bytes)
            .unwrap_or(0))
    }

    /// zram only: the memory the device itself uses for compressed pages
    /// (`mm_stat` field 3, `mem_used_total`), which no cgroup is charged for.
    pub fn zram_memory_bytes(&self) -> Result<Option<u64>> {
        if self.kind != Kind::Zram {
            return Ok(None);
        }
        let p = Path::new(ZRAM_SYS).join("mm_stat");
        let text = fs::read_to_string(&p).map_err(|e| HostError::io("reading", &p, e))?;
        Ok(text.split_whitespace().nth(2).and_then(|v| v.parse().ok()))
    }

    /// Turns the swap off and removes the file or resets zram, announcing it.
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        self.teardown()
    }

    fn teardown(&mut self) -> Result<()> {
        if self.active {
            sys::swapoff(&self.path).map_err(|e| HostError::io("swapoff", &self.path, e))?;
            self.active = false;
            announce(&format!("swap off {}", self.path.display()));
        }
        match self.kind {
            Kind::File => match fs::remove_file(&self.path) {
                Ok(()) => announce(&format!("removed swap file {}", self.path.display())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(HostError::io("removing swap file", &self.path, e)),
            },
            Kind::Zram => {
                reset_zram()?;
                announce(&format!("reset {ZRAM_DEV}"));
            }
        }
        if let Some(m) = self.marker.take() {
            let _ = fs::remove_file(m);
        }
        Ok(())
    }
}

impl Drop for SwapDevice {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        self.removed = true;
        if let Err(e) = self.teardown() {
            announce(&format!(
                "could not remove swap {}: {e}",
                self.path.display()
            ));
        }
    }
}

/// Whether a run can set up `/dev/zram0`: the module is loaded and the device unused
/// (disksize 0, not active swap); the error says why not.
pub fn zram_free() -> Result<()> {
    let sys_dir = Path::new(ZRAM_SYS);
    if !sys_dir.is_dir() {
        return Err(HostError::Refused(format!(
            "no {ZRAM_SYS}: load the zram module (modprobe zram)"
        )));
    }
    let disksize = fs::read_to_string(sys_dir.join("disksize"))
        .map_err(|e| HostError::io("reading", sys_dir.join("disksize"), e))?;
    let in_swaps = active_swaps()?
        .iter()
        .any(|s| s.path == Path::new(ZRAM_DEV));
    if disksize.trim() != "0" || in_swaps {
        return Err(HostError::Refused(format!(
            "{ZRAM_DEV} is already set up (disksize {}{}); the run only uses a zram device it sets up itself",
            disksize.trim(),
            if in_swaps { ", active swap" } else { "" }
        )));
    }
    Ok(())
}

fn reset_zram() -> Result<()> {
    let p = Path::new(ZRAM_SYS).join("reset");
    fs::write(&p, "1").map_err(|e| HostError::io("writing", p, e))
}

/// Removes the swap of runs that died without cleaning up: active swap files named by
/// a dead owner (anywhere; `/proc/swaps` has their paths), such files left inactive in
/// `file_dirs`, and zram set up by a dead owner (its marker in `state_dir`). Returns
/// what was removed. Needs root only when there is something to remove.
pub fn sweep(state_dir: &Path, file_dirs: &[&Path]) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let dead = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| Owner::parse_name(FILE_PREFIX, n))
            .filter(|o| !o.is_alive())
    };
    for s in active_swaps()? {
        if let Some(owner) = dead(&s.path) {
            sys::swapoff(&s.path).map_err(|e| HostError::io("swapoff", &s.path, e))?;
            let _ = fs::remove_file(&s.path);
            announce(&format!(
                "removed swap file {} left by a dead run ({owner})",
                s.path.display()
            ));
            removed.push(s.path);
        }
    }
    for dir in file_dirs {
        let Ok(entries) = fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if let Some(owner) = dead(&p) {
                fs::remove_file(&p).map_err(|e| HostError::io("removing", &p, e))?;
                announce(&format!(
                    "removed swap file {} left by a dead run ({owner})",
                    p.display()
                ));
                removed.push(p);
            }
        }
    }
    if let Ok(entries) = fs::read_dir(state_dir) {
        for e in entries.flatten() {
            let p = e.path();
            let owner = p
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| Owner::parse_name(ZRAM_MARKER_PREFIX, n));
            let Some(owner) = owner.filter(|o| !o.is_alive()) else {
                continue;
            };
            if active_swaps()?
                .iter()
                .any(|s| s.path == Path::new(ZRAM_DEV))
            {
                sys::swapoff(Path::new(ZRAM_DEV))
                    .map_err(|e| HostError::io("swapoff", ZRAM_DEV, e))?;
            }
            reset_zram()?;
            fs::remove_file(&p).map_err(|e| HostError::io("removing", &p, e))?;
            announce(&format!(
                "reset {ZRAM_DEV} left set up by a dead run ({owner})"
            ));
            removed.push(PathBuf::from(ZRAM_DEV));
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_swaps_lines_parse() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /swap\\040dir/marvin-swap-1-2-0.swap file\t\t65532\t\t1024\t\t-2\n\
                    /dev/zram0                              partition\t262140\t\t0\t\t100\n";
        let s = parse_proc_swaps(text);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].path, PathBuf::from("/swap dir/marvin-swap-1-2-0.swap"));
        assert_eq!(
            (s[0].size_bytes, s[0].used_bytes),
            (65532 * 1024, 1024 * 1024)
        );
        assert_eq!(s[1].path, PathBuf::from("/dev/zram0"));
        assert!(parse_proc_swaps("Filename Type Size Used Priority\n").is_empty());
    }

    #[test]
    fn tiny_areas_are_refused() {
        assert!(pages_for(4096 * 15, 4096).is_err());
        assert_eq!(pages_for(4096 * 16 + 100, 4096).unwrap(), 16);
    }

    #[test]
    fn sweep_leaves_live_owners_and_strangers_alone() {
        let dir = tempfile::tempdir().unwrap();
        let me = Owner::current().unwrap();
        let mine = dir.path().join(format!("{}.swap", me.name(FILE_PREFIX)));
        let stranger = dir.path().join("swapfile");
        let dead = Owner {
            pid: me.pid,
            start_time: me.start_time + 1,
        };
        let leftover = dir.path().join(format!("{}.swap", dead.name(FILE_PREFIX)));
        for p in [&mine, &stranger, &leftover] {
            fs::write(p, b"x").unwrap();
        }
        let state = dir.path().join("state");
        let removed = sweep(&state, &[dir.path()]).unwrap();
        assert_eq!(removed, vec![leftover.clone()]);
        assert!(mine.exists() && stranger.exists() && !leftover.exists());
    }
}
