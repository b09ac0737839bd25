//! The reclaimer from outside: the System returns the pages of an app process's saved,
//! clean, cold objects without the app's help, as the kernel side does in the design.
//!
//! It needs two things of the app, both in the app's swap directory: its reclaim table
//! (`NAME.table`, opened as a [`ReclaimTableView`]) and its region directory
//! (`NAME.regions`, see [`marvin_runtime::region_dir`]), which says where the app's
//! large-object regions are mapped and which of its descriptors holds each region's
//! memory file. [`AppMemory::open`] takes those descriptors over with `pidfd_getfd` (or
//! `/proc/PID/fd/N`) and checks each is the published memory file.
//!
//! A reclaim ([`ExternalApp::reclaim`]) runs the same scan as the in-process reclaimer
//! ([`crate::reclaimer`]): try-lock each candidate entry (never waiting), re-check the
//! app's foreground flag and the entry's flags under the lock, turn the object's address
//! into (memory file, offset), then punch the holes, neighbours in one
//! `fallocate(PUNCH_HOLE | KEEP_SIZE)` per run, mark the entries reclaimed and release
//! them. What it took is booked in the table's header, where the app sees it. The app
//! faults such objects back in from its swap file exactly as after a reclaim of its own.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;
use std::time::Instant;

use marvin_runtime::memfd;
use marvin_runtime::{ReclaimTableError, ReclaimTableView};
use marvin_runtime::{RegionDirError, RegionDirectory};

use crate::reclaimer::{table_contradiction, take, ReclaimReport};

/// The reclaim table file of app `name` in its swap directory `dir`.
pub fn table_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(table_name(name))
}

/// The name of app `name`'s reclaim table in its swap directory.
pub fn table_name(name: &str) -> String {
    format!("{name}.table")
}

/// The name of app `name`'s region directory in its swap directory.
pub fn regions_name(name: &str) -> String {
    format!("{name}.regions")
}

/// The region directory file of app `name` in its swap directory `dir`.
pub fn regions_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(regions_name(name))
}

/// Why an app's memory could not be opened from outside.
#[derive(Debug, thiserror::Error)]
pub enum ExternalError {
    #[error(transparent)]
    Table(#[from] ReclaimTableError),
    #[error(transparent)]
    Regions(#[from] RegionDirError),
    #[error("{path} belongs to process {found}, not {expected}")]
    WrongProcess {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error("{path} belongs to run {found}, not to the app's run {expected}")]
    WrongRun {
        path: PathBuf,
        /// The table's run id (32 hex digits).
        found: String,
        /// The run id the app said it has.
        expected: String,
    },
    #[error("region {index} of process {pid} ({base:#x}, {len} bytes): {source}")]
    Region {
        pid: u32,
        index: usize,
        base: u64,
        len: u64,
        source: std::io::Error,
    },
}

/// An app process's large-object regions, each with its memory file opened here.
#[derive(Debug)]
pub struct AppMemory {
    pid: u32,
    path: PathBuf,
    directory: RegionDirectory,
    files: Vec<File>,
}

impl AppMemory {
    /// Reads the region directory at `path`, checks it belongs to process `pid`, and
    /// opens every region's memory file.
    pub fn open(pid: u32, path: &Path) -> Result<AppMemory, ExternalError> {
        let mut memory = AppMemory {
            pid,
            path: path.to_owned(),
            directory: RegionDirectory {
                pid,
                regions: Vec::new(),
            },
            files: Vec::new(),
        };
        memory.refresh()?;
        Ok(memory)
    }

    /// Reads the directory again and opens the memory files of regions added since.
    pub fn refresh(&mut self) -> Result<(), ExternalError> {
        let directory = RegionDirectory::read(&self.path)?;
        if directory.pid != self.pid {
            return Err(ExternalError::WrongProcess {
                path: self.path.clone(),
                found: directory.pid,
                expected: self.pid,
            });
        }
        let mut files = Vec::with_capacity(directory.regions.len());
        for (index, r) in directory.regions.iter().enumerate() {
            let region_err = |source| ExternalError::Region {
                pid: self.pid,
                index,
                base: r.base,
                len: r.len,
                source,
            };
            // A region already open (regions are never unmapped) is kept as it is.
            let known = self
                .directory
                .regions
                .iter()
                .position(|k| k == r)
                .and_then(|k| self.files[k].try_clone().ok());
            let file = match known {
                Some(f) => f,
                None => memfd::open_remote(self.pid, r.fd, r.ino).map_err(region_err)?,
            };
            let size = file.metadata().map_err(region_err)?.len();
            if size != r.len {
                return Err(region_err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("its memory file holds {size} bytes"),
                )));
            }
            files.push(file);
        }
        self.directory = directory;
        self.files = files;
        Ok(())
    }

    /// The process whose memory this is.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Number of regions open.
    pub fn regions(&self) -> usize {
        self.files.len()
    }

    /// Whether `[addr, addr + len)` lies whole in one region.
    pub fn reaches(&self, addr: u64, len: u64) -> bool {
        self.directory.locate(addr, len).is_some()
    }

    /// Punches the holes of `runs` (`(address, bytes)` of the app), neighbours in one
    /// call, never across two regions. Returns the calls made and the calls that failed
    /// (their pages stay, the rest go).
    pub fn punch(&self, runs: &mut [(usize, usize)]) -> (u64, u64) {
        runs.sort_unstable();
        let mut holes: Vec<(usize, u64, u64)> = Vec::with_capacity(runs.len());
        for &(addr, bytes) in runs.iter() {
            let Some((i, off)) = self.directory.locate(addr as u64, bytes as u64) else {
                continue;
            };
            match holes.last_mut() {
                Some((li, lo, lb)) if *li == i && *lo + *lb == off => *lb += bytes as u64,
                _ => holes.push((i, off, bytes as u64)),
            }
        }
        let mut failed = 0;
        for &(i, off, len) in &holes {
            if memfd::punch_hole(&self.files[i], off, len).is_err() {
                failed += 1;
            }
        }
        (holes.len() as u64, failed)
    }
}

/// A run id from its 32 hex digits (the process protocol's `ready` message), or `None`
/// for anything else.
pub fn parse_run_id(text: &str) -> Option<[u8; 16]> {
    let bytes = text.as_bytes();
    if bytes.len() != 32 || !bytes.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let mut run = [0u8; 16];
    for (i, b) in run.iter_mut().enumerate() {
        *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(run)
}

/// An app process as the System's reclaimer sees it: its reclaim table and its memory.
///
/// It holds descriptors of the app's memory files: drop it when the app exits, or the
/// files (and whatever pages they still hold, charged to the app's cgroup) outlive it.
#[derive(Debug)]
pub struct ExternalApp {
    table: ReclaimTableView,
    memory: AppMemory,
    /// Where the next scan starts (a clock hand, as in the in-process reclaimer).
    hand: AtomicU32,
}

impl ExternalApp {
    /// Opens app `name` of process `pid` from its swap directory `dir`: a table or a
    /// region directory another process made (another run's, left in or given the same
    /// directory) is refused before any entry is read.
    pub fn open(pid: u32, dir: &Path, name: &str) -> Result<ExternalApp, ExternalError> {
        let table = ReclaimTableView::open(&table_path(dir, name))?;
        let memory = AppMemory::open(pid, &regions_path(dir, name))?;
        ExternalApp::new(table, memory)
    }

    /// As [`ExternalApp::open`], and refused unless the table's header names run `run`
    /// too: the run id the app gave the System (the process protocol's `ready` message),
    /// so a table another run left or wrote in the directory is never acted on, even by a
    /// process that reuses the pid.
    pub fn open_run(
        pid: u32,
        run: &[u8; 16],
        dir: &Path,
        name: &str,
    ) -> Result<ExternalApp, ExternalError> {
        let table = ReclaimTableView::open(&table_path(dir, name))?;
        let found = table.owner().run;
        if &found != run {
            return Err(ExternalError::WrongRun {
                path: table.path().to_owned(),
                found: marvin_runtime::id_hex(&found),
                expected: marvin_runtime::id_hex(run),
            });
        }
        let memory = AppMemory::open(pid, &regions_path(dir, name))?;
        ExternalApp::new(table, memory)
    }

    /// An app from a table view and its memory, opened separately; refused when the
    /// table's header names another process than the memory's.
    pub fn new(table: ReclaimTableView, memory: AppMemory) -> Result<ExternalApp, ExternalError> {
        let owner = table.owner().pid;
        if owner != memory.pid() {
            return Err(ExternalError::WrongProcess {
                path: table.path().to_owned(),
                found: owner,
                expected: memory.pid(),
            });
        }
        Ok(ExternalApp {
            table,
            memory,
            hand: AtomicU32::new(0),
        })
    }

    /// The app's reclaim table.
    pub fn table(&self) -> &ReclaimTableView {
        &self.table
    }

    /// The app's memory.
    pub fn memory(&self) -> &AppMemory {
        &self.memory
    }

    /// Reclaims up to `want` bytes of the app's saved, clean, cold objects (nothing while
    /// it is in the foreground). Entries in regions added since the directory was read
    /// are reached after reading it again once.
    pub fn reclaim(&mut self, want: u64) -> ReclaimReport {
        let t0 = Instant::now();
        let mut total = self.reclaim_once(want);
        if total.unreachable > 0
            && total.refused.is_none()
            && total.bytes < want
            && self.memory.refresh().is_ok()
        {
            let more = self.reclaim_once(want - total.bytes);
            total.unreachable = 0;
            total.add(&more);
        }
        total.latency = t0.elapsed();
        total
    }

    fn reclaim_once(&self, want: u64) -> ReclaimReport {
        if self.table.is_foreground() {
            return ReclaimReport::default();
        }
        let mut taken = take(
            || self.table.iter_occupied(),
            &self.hand,
            || self.table.is_foreground(),
            want,
            |e| Ok(self.memory.reaches(e.addr(), e.size())),
        );
        let mut r = taken.report;
        if !taken.runs.is_empty() {
            // Nothing of the app but its table is known here: before any page goes, a
            // table whose entries contradict one another (two of them over the same
            // pages, say) is refused, and the entries taken are released unmarked. Paid
            // only by a scan that took something.
            if let Some(refusal) = table_contradiction(self.table.iter_occupied()) {
                drop(taken);
                return ReclaimReport {
                    refused: Some(refusal),
                    contended: r.contended,
                    ..ReclaimReport::default()
                };
            }
            let (calls, failed) = self.memory.punch(&mut taken.runs);
            r.madvise_calls = calls;
            r.failed_calls = failed;
            taken.finish();
            self.table.book_reclaimed_out(r.objects, r.bytes);
        }
        r
    }
}
