//! Marvin's reach into native memory in the process mode: a background app's buffers
//! outside its managed heap (`nalloc`), which no object swap can stub, are handed to the
//! kernel's swap by the System with `process_madvise(MADV_PAGEOUT)`, as Android's
//! cached-app compaction does; the app's objects stay with object swap, and the killer
//! stays the backstop.
//!
//! The app publishes where its buffers are: a file in its swap directory ([`FILE`]), one
//! `ADDRESS LENGTH` line (hexadecimal, page-aligned) per buffer, rewritten (written apart
//! and renamed into place) whenever the set changes ([`Publisher`]). Marvin's reclaimer
//! reads it for a background app once it has taken all the app's reclaimable objects, and
//! pages out the ranges it has not paged out since the app was last in front
//! ([`Pager`]). A touch brings a page back from swap, as for any anonymous page: the
//! memory comes back intact, and the app's own checks (`ncheck`) say so. Swapped pages
//! are charged as kernel swap's are (the group's swap usage).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use marvin_app::App;
use marvin_interpreter::exec::AppBinding;

/// The ranges file in an app's swap directory.
pub const FILE: &str = "native.ranges";

/// The app's side: rewrites the ranges file when the buffers change.
#[derive(Default)]
pub struct Publisher {
    last: Vec<(usize, usize)>,
}

impl Publisher {
    /// Writes `app`'s buffer ranges to `dir`'s ranges file if they changed since the last
    /// call.
    pub fn publish(&mut self, app: &App, dir: &Path) -> std::io::Result<()> {
        let mut now = app.native().ranges();
        now.sort_unstable();
        if now == self.last {
            return Ok(());
        }
        let tmp = dir.join(format!("{FILE}.new"));
        let mut f = std::fs::File::create(&tmp)?;
        let mut text = String::with_capacity(now.len() * 24);
        for (addr, len) in &now {
            text.push_str(&format!("{addr:x} {len:x}\n"));
        }
        f.write_all(text.as_bytes())?;
        drop(f);
        std::fs::rename(&tmp, dir.join(FILE))?;
        self.last = now;
        Ok(())
    }
}

/// Parses a ranges file; a malformed line is an error (the System leaves the app alone).
pub fn parse(text: &str) -> Result<Vec<(u64, u64)>, String> {
    text.lines()
        .map(|line| {
            let mut it = line.split_whitespace();
            let mut num = || {
                it.next()
                    .and_then(|s| u64::from_str_radix(s, 16).ok())
                    .ok_or_else(|| format!("bad line in {FILE}: {line:?}"))
            };
            let r = (num()?, num()?);
            if r.1 == 0 || r.0.checked_add(r.1).is_none() {
                return Err(format!("bad range in {FILE}: {line:?}"));
            }
            Ok(r)
        })
        .collect()
}

/// The System's side: what it paged out of each app since the app was last in front.
#[derive(Default)]
pub struct Pager {
    out: BTreeMap<u32, BTreeSet<(u64, u64)>>,
    /// Whether a swap device is on: without one, anonymous pages cannot leave, and the
    /// pager does nothing (and claims nothing).
    swap_on: bool,
}

impl Pager {
    /// A pager for a run; it acts only when a swap device is on (`/proc/swaps`).
    pub fn new() -> Pager {
        let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
        Pager {
            out: BTreeMap::new(),
            swap_on: swaps.lines().count() > 1,
        }
    }

    /// Pages out the ranges of app process `pid` (its swap directory `dir`) not paged out
    /// since it was last in front; returns their bytes. Any error (the app gone, no ranges
    /// file yet, no permission) leaves the app alone: 0.
    pub fn page_out(&mut self, pid: u32, dir: &Path) -> u64 {
        if !self.swap_on {
            return 0;
        }
        let Ok(text) = std::fs::read_to_string(dir.join(FILE)) else {
            return 0;
        };
        let Ok(ranges) = parse(&text) else {
            return 0;
        };
        let done = self.out.entry(pid).or_default();
        let new: Vec<(u64, u64)> = ranges.into_iter().filter(|r| !done.contains(r)).collect();
        if new.is_empty() {
            return 0;
        }
        let Ok(pidfd) = marvin_machine::sys::pidfd_open(pid) else {
            return 0;
        };
        use std::os::fd::AsFd;
        match marvin_machine::sys::page_out(pidfd.as_fd(), &new) {
            Ok(_) => {
                done.extend(new.iter().copied());
                new.iter().map(|r| r.1).sum()
            }
            Err(_) => 0,
        }
    }

    /// The app came to the front (its pages come back as it touches them), or is gone:
    /// what was paged out of it is forgotten.
    pub fn forget(&mut self, pid: u32) {
        self.out.remove(&pid);
    }

    /// Keeps only the apps in `live` (process ids).
    pub fn retain(&mut self, live: &[u32]) {
        self.out.retain(|pid, _| live.contains(pid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_bad_ones_are_errors() {
        assert_eq!(
            parse("7f0000001000 2000\n10 1\n").unwrap(),
            [(0x7f00_0000_1000, 0x2000), (0x10, 1)]
        );
        assert!(parse("").unwrap().is_empty());
        for bad in ["zz 10", "10", "10 0", "ffffffffffffffff 2"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    /// The mechanism end to end, in this process: a native buffer paged out with
    /// `process_madvise(MADV_PAGEOUT)` leaves memory, and comes back intact when touched.
    /// Needs root (`CAP_SYS_NICE`) and a swap device already on (tests never turn one on).
    #[test]
    fn native_memory_paged_out_comes_back_intact() {
        use marvin_runtime::NativeBuffers;
        if !marvin_machine::sys::is_root() {
            eprintln!("skipped: needs root for process_madvise");
            return;
        }
        let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
        if swaps.lines().count() < 2 {
            eprintln!("skipped: no swap device is on (a test never turns one on)");
            return;
        }
        let n = NativeBuffers::new();
        let h = n.alloc(4 << 20, 42).unwrap();
        let ranges: Vec<(u64, u64)> = n
            .ranges()
            .iter()
            .map(|&(a, l)| (a as u64, l as u64))
            .collect();
        let resident = |r: &[(u64, u64)]| {
            let r: Vec<(usize, usize)> = r.iter().map(|&(a, l)| (a as usize, l as usize)).collect();
            marvin_app::reach::present_bytes(&r).unwrap()
        };
        assert_eq!(resident(&ranges), 4 << 20);
        let me = marvin_machine::sys::pidfd_open(std::process::id()).unwrap();
        use std::os::fd::AsFd;
        let advised = marvin_machine::sys::page_out(me.as_fd(), &ranges).unwrap();
        assert_eq!(advised, 4 << 20);
        let left = resident(&ranges);
        assert!(
            left < 1 << 20,
            "{left} bytes still resident after the page-out"
        );
        // Touched again: every byte as it was filled.
        assert_eq!(n.check(h, 42).unwrap(), 0);
        assert_eq!(resident(&ranges), 4 << 20);
    }
}
