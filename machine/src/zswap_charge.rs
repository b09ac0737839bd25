//! zswap charged by the kernel, the fair form of compressed swap on cgroup v2: zswap's
//! pool is charged to the group that owns the pages (Linux 5.19, `memory.zswap.current`),
//! and `memory.zswap.writeback` = 0 (Linux 6.8) keeps it in RAM like zram (a page zswap
//! cannot take stays in memory instead of going to the disk); the run's swap file only
//! provides the slots. zswap's switch and compressor are machine-wide: [`ZswapCharge`]
//! sets them, announced, and puts them back when dropped; their old values go first into
//! a marker in the state directory, from which [`sweep_zswap`] puts them back after a
//! SIGKILL. The pool's figures are a [`PoolStats`], as zram's.

use std::fs;
use std::path::{Path, PathBuf};

use super::announce;
use super::cgroup::{self, Group, Version};
use super::error::{HostError, Result};
use super::owner::Owner;
use super::zram_charge::PoolStats;

/// zswap's machine-wide switch and compressor, as found and as put back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZswapParams {
    pub enabled: String,
    pub compressor: String,
}

/// Where zswap's machine-wide parameters are.
pub const ZSWAP_PARAMS: &str = "/sys/module/zswap/parameters";
/// The prefix of the marker that keeps zswap's old parameters for the sweep.
pub const ZSWAP_MARKER_PREFIX: &str = "marvin-zswap";

impl ZswapParams {
    fn read(dir: &Path) -> Result<ZswapParams> {
        let get = |name: &str| -> Result<String> {
            Ok(cgroup::read_text(&dir.join(name), "reading")?
                .trim()
                .to_string())
        };
        Ok(ZswapParams {
            enabled: get("enabled")?,
            compressor: get("compressor")?,
        })
    }

    fn write(&self, dir: &Path) -> Result<()> {
        cgroup::write_text(&dir.join("compressor"), &self.compressor, "setting zswap's")?;
        cgroup::write_text(&dir.join("enabled"), &self.enabled, "setting zswap's")
    }

    /// The marker's text, and back.
    pub fn to_text(&self) -> String {
        format!("enabled {}\ncompressor {}\n", self.enabled, self.compressor)
    }

    pub fn from_text(text: &str) -> Option<ZswapParams> {
        let mut enabled = None;
        let mut compressor = None;
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("enabled", v)) => enabled = Some(v.to_string()),
                Some(("compressor", v)) => compressor = Some(v.to_string()),
                _ => {}
            }
        }
        Some(ZswapParams {
            enabled: enabled?,
            compressor: compressor?,
        })
    }
}

/// zswap on, charged to the run's group and kept in RAM (cgroup v2). Dropping it puts
/// zswap's machine-wide parameters back as they were.
#[derive(Debug)]
pub struct ZswapCharge {
    group: PathBuf,
    old: ZswapParams,
    marker: PathBuf,
}

impl ZswapCharge {
    /// Whether the kernel can charge zswap to `group` and keep it from the disk; the
    /// error says why not.
    pub fn support(group: &Group) -> std::result::Result<(), String> {
        if group.version() != Version::V2 {
            return Err("cgroup v1 does not charge zswap to a group".into());
        }
        if !Path::new(ZSWAP_PARAMS).is_dir() {
            return Err("this kernel has no zswap".into());
        }
        if !group.path().join("memory.zswap.current").exists() {
            return Err("this kernel does not charge zswap to groups (Linux 5.19)".into());
        }
        if !group.path().join("memory.zswap.writeback").exists() {
            return Err(
                "this kernel cannot keep zswap from the disk (memory.zswap.writeback, Linux 6.8)"
                    .into(),
            );
        }
        Ok(())
    }

    /// Turns zswap on with `algorithm`, its pool at most the budget and no writeback for
    /// `group`, announced; the old parameters go into a marker in `state_dir` first.
    pub fn enable(group: &Group, algorithm: &str, state_dir: &Path) -> Result<ZswapCharge> {
        ZswapCharge::support(group).map_err(HostError::Refused)?;
        let params = Path::new(ZSWAP_PARAMS);
        let old = ZswapParams::read(params)?;
        let owner = Owner::current().map_err(|e| HostError::io("reading", "/proc/self/stat", e))?;
        fs::create_dir_all(state_dir).map_err(|e| HostError::io("creating", state_dir, e))?;
        let marker = state_dir.join(owner.name(ZSWAP_MARKER_PREFIX));
        fs::write(&marker, old.to_text()).map_err(|e| HostError::io("writing", &marker, e))?;
        let charge = ZswapCharge {
            group: group.path().to_path_buf(),
            old: old.clone(),
            marker,
        };
        let new = ZswapParams {
            enabled: "Y".into(),
            compressor: algorithm.into(),
        };
        new.write(params).map_err(|e| match e {
            HostError::Io { source, .. } if source.raw_os_error() == Some(libc::EINVAL)
                || source.raw_os_error() == Some(libc::ENOENT) =>
            {
                HostError::Refused(format!(
                    "zswap has no compressor {algorithm:?} (see the compression entries of /proc/crypto)"
                ))
            }
            e => e,
        })?;
        cgroup::write_text(
            &group.path().join("memory.zswap.writeback"),
            "0",
            "turning writeback off for",
        )?;
        announce(&format!(
            "zswap on ({algorithm}, was enabled={} compressor={}; put back at the end), \
             charged to {} with writeback off",
            old.enabled,
            old.compressor,
            group.path().display()
        ));
        Ok(charge)
    }

    /// The group's zswap pool now.
    pub fn stats(&self) -> Result<PoolStats> {
        let cur = self.group.join("memory.zswap.current");
        let text = cgroup::read_text(&cur, "reading")?;
        let stat = cgroup::read_text(&self.group.join("memory.stat"), "reading")?;
        PoolStats::parse_zswap(&text, &stat).ok_or_else(|| HostError::Parse {
            path: cur,
            msg: format!("not a number: {text:?}"),
        })
    }
}

impl Drop for ZswapCharge {
    fn drop(&mut self) {
        match self.old.write(Path::new(ZSWAP_PARAMS)) {
            Ok(()) => {
                let _ = fs::remove_file(&self.marker);
                announce(&format!(
                    "zswap put back (enabled={} compressor={})",
                    self.old.enabled, self.old.compressor
                ));
            }
            Err(e) => announce(&format!("could not put zswap back: {e}")),
        }
    }
}

/// Puts zswap's parameters back where a run that died (SIGKILL) changed them: its marker
/// in `state_dir` names a dead owner and holds the old values. Returns the markers
/// handled.
pub fn sweep_zswap(state_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut done = Vec::new();
    let Ok(dead) = super::owner::dead_entries(state_dir, ZSWAP_MARKER_PREFIX) else {
        return Ok(done);
    };
    for (marker, owner) in dead {
        let text = cgroup::read_text(&marker, "reading")?;
        let old = ZswapParams::from_text(&text).ok_or_else(|| HostError::Parse {
            path: marker.clone(),
            msg: "not a zswap marker".into(),
        })?;
        old.write(Path::new(ZSWAP_PARAMS))?;
        fs::remove_file(&marker).map_err(|e| HostError::io("removing", &marker, e))?;
        announce(&format!(
            "put zswap back (enabled={} compressor={}) after a dead run ({owner})",
            old.enabled, old.compressor
        ));
        done.push(marker);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zswap_markers_round_trip() {
        let p = ZswapParams {
            enabled: "N".into(),
            compressor: "lzo".into(),
        };
        assert_eq!(ZswapParams::from_text(&p.to_text()), Some(p));
        assert_eq!(ZswapParams::from_text("enabled N\n"), None);
    }
}
