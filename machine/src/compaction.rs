//! Android's cached-app compaction, from outside the app: once an app is cached the
//! framework pages its memory out (`CachedAppOptimizer`). Two ways, as Android has them:
//! [`page_out`] gives the kernel `MADV_PAGEOUT` on every private anonymous mapping of the
//! process (read from `/proc/PID/maps`, through a pidfd so a reused pid is never
//! advised), with `process_madvise(2)`; [`reclaim_group`] writes the bytes to a cgroup v2
//! group's `memory.reclaim`, for an app with a group of its own.
//!
//! Pages go to the kernel's swap (zram under the `android` policy): without an active swap
//! device `MADV_PAGEOUT` leaves anonymous pages where they are. Nothing machine-wide is
//! changed here, so nothing needs undoing.

use std::fs;
use std::io;
use std::os::fd::AsFd;
use std::path::Path;

use super::error::{HostError, Result};
use super::sys;
use marvin_runtime::procfs;

/// One mapping of `/proc/PID/maps` worth paging out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub start: u64,
    pub len: u64,
}

/// What one compaction did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compacted {
    /// Mappings advised, and how many of them the kernel refused (unmapped or locked
    /// meanwhile; they are skipped).
    pub ranges: usize,
    pub refused: usize,
    /// Bytes of address space advised (mapped, not necessarily resident).
    pub advised_bytes: u64,
    /// The process's resident anonymous memory before and after (`RssAnon`).
    pub rss_anon_before: u64,
    pub rss_anon_after: u64,
}

impl Compacted {
    /// Resident anonymous bytes the compaction took out of memory.
    pub fn paged_out(&self) -> u64 {
        self.rss_anon_before.saturating_sub(self.rss_anon_after)
    }
}

/// The private anonymous mappings of a `/proc/PID/maps` text that can hold pages: no
/// backing file (inode 0: the heap, the stacks, anonymous and named anonymous mappings),
/// private, accessible, and not one of the kernel's special mappings.
pub fn anon_ranges(maps: &str) -> Vec<Range> {
    maps.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (span, perms) = (f.next()?, f.next()?);
            let (_offset, _dev, inode) = (f.next()?, f.next()?, f.next()?);
            let path = f.next().unwrap_or("");
            let anonymous = inode == "0"
                && (path.is_empty()
                    || path == "[heap]"
                    || path.starts_with("[stack")
                    || path.starts_with("[anon:"));
            let usable = perms.ends_with('p') && perms != "---p";
            if !(anonymous && usable) {
                return None;
            }
            let (a, b) = span.split_once('-')?;
            let start = u64::from_str_radix(a, 16).ok()?;
            let end = u64::from_str_radix(b, 16).ok()?;
            (end > start).then_some(Range {
                start,
                len: end - start,
            })
        })
        .collect()
}

/// Pages out process `pid`'s anonymous memory: `process_madvise(MADV_PAGEOUT)` over every
/// range of [`anon_ranges`], batched, skipping a range the kernel refuses. The pidfd is
/// opened before the maps are read and checked alive after, so the ranges are this
/// process's even if the pid is reused meanwhile. Needs root (`CAP_SYS_NICE`).
pub fn page_out(pid: u32) -> Result<Compacted> {
    let proc_dir = format!("/proc/{pid}");
    let pidfd =
        sys::pidfd_open(pid).map_err(|e| HostError::io("opening a pidfd for", &proc_dir, e))?;
    let maps_path = format!("/proc/{pid}/maps");
    let maps =
        fs::read_to_string(&maps_path).map_err(|e| HostError::io("reading", &maps_path, e))?;
    let before = procfs::mem(pid).map_err(|e| HostError::io("reading", &proc_dir, e))?;
    // Signal 0 checks that the process behind the pidfd still lives: then the pid was
    // not reused while its maps were read.
    sys::pidfd_send_signal(pidfd.as_fd(), 0)
        .map_err(|e| HostError::io("checking that it still runs:", &proc_dir, e))?;
    let ranges = anon_ranges(&maps);
    let mut done = Compacted {
        ranges: ranges.len(),
        rss_anon_before: before.anon,
        ..Compacted::default()
    };
    let mut rest: &[Range] = &ranges;
    while !rest.is_empty() {
        let batch = &rest[..rest.len().min(sys::MADVISE_MAX_RANGES)];
        let spans: Vec<(u64, u64)> = batch.iter().map(|r| (r.start, r.len)).collect();
        match sys::process_madvise(pidfd.as_fd(), &spans, libc::MADV_PAGEOUT) {
            Ok(n) => {
                done.advised_bytes += n;
                let whole = whole_ranges(batch, n);
                // A short count: the kernel refused the range after the last whole one.
                let next = if whole < batch.len() {
                    done.refused += 1;
                    whole + 1
                } else {
                    whole
                };
                rest = &rest[next..];
            }
            // The first range of the batch was refused (unmapped, locked) or the
            // process ended meanwhile.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => break,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOMEM | libc::EINVAL)) => {
                done.refused += 1;
                rest = &rest[1..];
            }
            Err(e) => {
                return Err(HostError::io(
                    "process_madvise(MADV_PAGEOUT) on",
                    &proc_dir,
                    e,
                ))
            }
        }
    }
    done.rss_anon_after = procfs::mem(pid)
        .map(|m| m.anon)
        .unwrap_or(done.rss_anon_before);
    Ok(done)
}

/// How many whole ranges of `batch`, from its start, `bytes` covers.
fn whole_ranges(batch: &[Range], bytes: u64) -> usize {
    let mut left = bytes;
    batch
        .iter()
        .take_while(|r| {
            let fits = r.len <= left;
            if fits {
                left -= r.len;
            }
            fits
        })
        .count()
}

/// Reclaims `bytes` from the cgroup v2 group at `group_dir` (`memory.reclaim`, Linux
/// 5.19): the kernel's own compaction of a group, which Android uses where an app has a
/// group of its own. Returns whether the kernel took all of it (it says `EAGAIN` when it
/// could not).
pub fn reclaim_group(group_dir: &Path, bytes: u64) -> Result<bool> {
    let p = group_dir.join("memory.reclaim");
    if !p.exists() {
        return Err(HostError::Refused(format!(
            "{} has no memory.reclaim (a cgroup v2 group on Linux 5.19 or later is needed)",
            group_dir.display()
        )));
    }
    match fs::write(&p, bytes.to_string()) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(false),
        Err(e) => Err(HostError::io("writing", p, e)),
    }
}

/// Whether `e` says the process is gone (for callers that compact apps that may die).
pub fn is_gone(e: &HostError) -> bool {
    matches!(e, HostError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound
        || source.raw_os_error() == Some(libc::ESRCH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_private_anonymous_mappings_are_paged_out() {
        let maps = "\
55d0c0000000-55d0c0021000 r--p 00000000 fd:01 1234 /usr/bin/app
55d0c1000000-55d0c1400000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
7f0000100000-7f0000101000 ---p 00000000 00:00 0
7f0000200000-7f0000300000 rw-s 00000000 00:01 77 /memfd:region (deleted)
7f0000300000-7f0000310000 rw-p 00000000 00:00 0 [anon:dalvik-main space]
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
7ffd00100000-7ffd00104000 r--p 00000000 00:00 0 [vvar]
7ffd00104000-7ffd00106000 r-xp 00000000 00:00 0 [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]
";
        let r = anon_ranges(maps);
        assert_eq!(
            r,
            vec![
                Range {
                    start: 0x55d0c1000000,
                    len: 0x400000
                },
                Range {
                    start: 0x7f0000000000,
                    len: 0x100000
                },
                Range {
                    start: 0x7f0000300000,
                    len: 0x10000
                },
                Range {
                    start: 0x7ffd00000000,
                    len: 0x21000
                },
            ]
        );
        assert!(
            anon_ranges("garbage\n1-2\n").is_empty(),
            "bad lines are skipped"
        );
    }

    #[test]
    fn a_short_count_names_the_refused_range() {
        let b = [
            Range { start: 0, len: 10 },
            Range { start: 20, len: 5 },
            Range { start: 40, len: 7 },
        ];
        assert_eq!(whole_ranges(&b, 22), 3);
        assert_eq!(whole_ranges(&b, 15), 2);
        assert_eq!(whole_ranges(&b, 12), 1, "the second was refused");
        assert_eq!(whole_ranges(&b, 0), 0);
    }

    #[test]
    fn a_process_that_does_not_exist_is_an_error_saying_so() {
        let e = page_out(u32::MAX >> 2).unwrap_err();
        assert!(is_gone(&e), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = reclaim_group(dir.path(), 4096).unwrap_err();
        assert!(e.to_string().contains("memory.reclaim"), "{e}");
    }
}
