//! The settle step between the policies of a real-mode run: before each policy starts,
//! the machine's disks are brought to rest, so that no policy pays for the writes,
//! discards and writeback the one before it left (or for the page cache it filled).
//!
//! What one policy leaves behind and the next would meet: its files' deletion (on a file
//! system mounted with online `discard`, every freed block is discarded at the next
//! journal commit, which on a virtual disk can hold the journal and the queue for
//! seconds), kernel swap's `swapoff` and swap file, the dirty page cache and its
//! writeback. [`settle`] starts a `sync` of every file system (on its own thread, so a
//! long one is bounded too), then waits until the sync is done, nothing is in flight on
//! any disk, nothing is under writeback and no sector was read, written or discarded for
//! [`SettleConfig::quiet_for`], giving up at [`SettleConfig::bound`] and saying so. Then,
//! where asked, it drops the machine's clean page cache
//! (`/proc/sys/vm/drop_caches`, `1`: clean page cache only; machine-wide but nothing
//! persistent, and announced), so every policy starts with the same free memory.
//!
//! The decision logic reads its samples through [`DiskSource`]; [`ProcSource`] is the
//! machine's (`/proc/diskstats`, `/proc/meminfo`), and tests give it a scripted one.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::error::{HostError, Result};

/// The disk sector of `/proc/diskstats` (always 512 bytes there).
const SECTOR: u64 = 512;

/// What the machine's disks and page cache are doing at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Sectors read, written and discarded so far, summed over the machine's disks.
    pub sectors_read: u64,
    pub sectors_written: u64,
    pub sectors_discarded: u64,
    /// Requests in flight now, summed over the disks.
    pub in_flight: u64,
    /// Page cache waiting to be written, and under writeback now (`/proc/meminfo`).
    pub dirty_bytes: u64,
    pub writeback_bytes: u64,
    /// The settle's `sync` has returned.
    pub synced: bool,
}

impl Sample {
    /// Whether the disks did anything between `self` (earlier) and `later`, or are
    /// doing something at `later`.
    fn moving_until(&self, later: &Sample) -> bool {
        later.in_flight > 0
            || later.writeback_bytes > 0
            || later.sectors_read != self.sectors_read
            || later.sectors_written != self.sectors_written
            || later.sectors_discarded != self.sectors_discarded
    }
}

/// Where [`settle`] reads the machine, and how it waits.
pub trait DiskSource {
    /// Starts a `sync` of every file system; later samples say when it has returned.
    fn start_sync(&mut self) -> Result<()>;
    fn sample(&mut self) -> Result<Sample>;
    /// Time since the source was made.
    fn elapsed(&self) -> Duration;
    fn pause(&mut self, d: Duration);
    /// A stop signal came: give up now.
    fn stop_requested(&self) -> bool {
        false
    }
}

/// How long the disks must stay at rest, how long to wait at most, how often to look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SettleConfig {
    pub quiet_for: Duration,
    pub bound: Duration,
    pub poll: Duration,
}

impl Default for SettleConfig {
    fn default() -> Self {
        SettleConfig {
            quiet_for: Duration::from_secs(1),
            bound: Duration::from_secs(30),
            poll: Duration::from_millis(100),
        }
    }
}

/// What one settle found and did (a policy's `settle` in `summary.json`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settled {
    /// How long it waited, the `sync` included.
    pub waited_ms: u64,
    /// The disks came to rest (false: it gave up at its bound).
    pub idle: bool,
    /// What was pending when it started.
    pub dirty_bytes_at_start: u64,
    pub writeback_bytes_at_start: u64,
    pub in_flight_at_start: u64,
    /// What the disks moved while it waited.
    pub read_bytes: u64,
    pub written_bytes: u64,
    pub discarded_bytes: u64,
    /// The machine's clean page cache was dropped after it.
    pub dropped_caches: bool,
}

impl Settled {
    /// One line for stderr.
    pub fn describe(&self) -> String {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        format!(
            "{} after {:.1} s (pending at the start: {:.1} MiB dirty, {:.1} MiB under \
             writeback, {} requests in flight; moved meanwhile: {:.1} MiB read, {:.1} MiB \
             written, {:.1} MiB discarded){}",
            if self.idle {
                "the disks are at rest"
            } else {
                "the disks did not come to rest; going on"
            },
            self.waited_ms as f64 / 1000.0,
            mib(self.dirty_bytes_at_start),
            mib(self.writeback_bytes_at_start),
            self.in_flight_at_start,
            mib(self.read_bytes),
            mib(self.written_bytes),
            mib(self.discarded_bytes),
            if self.dropped_caches {
                "; clean page cache dropped"
            } else {
                ""
            }
        )
    }
}

/// Syncs, then waits until the disks are at rest or the bound has passed (see the
/// module doc). It does not drop caches; [`settle_machine`] does.
pub fn settle(src: &mut dyn DiskSource, cfg: &SettleConfig) -> Result<Settled> {
    src.start_sync()?;
    let first = src.sample()?;
    let mut prev = first;
    let mut prev_at = src.elapsed();
    // Since when nothing has moved (the sample before the first still one).
    let mut quiet_since: Option<Duration> = None;
    let idle = loop {
        let now = src.elapsed();
        if let Some(q) = quiet_since {
            if prev.synced && now.saturating_sub(q) >= cfg.quiet_for {
                break true;
            }
        }
        if now >= cfg.bound || src.stop_requested() {
            break false;
        }
        src.pause(cfg.poll);
        let s = src.sample()?;
        let at = src.elapsed();
        if prev.moving_until(&s) || !s.synced {
            quiet_since = None;
        } else if quiet_since.is_none() {
            // Nothing moved since the sample before; a sync that returned in between
            // counts from now.
            quiet_since = Some(if prev.synced { prev_at } else { at });
        }
        prev = s;
        prev_at = at;
    };
    Ok(Settled {
        waited_ms: src.elapsed().as_millis() as u64,
        idle,
        dirty_bytes_at_start: first.dirty_bytes,
        writeback_bytes_at_start: first.writeback_bytes,
        in_flight_at_start: first.in_flight,
        read_bytes: prev.sectors_read.saturating_sub(first.sectors_read) * SECTOR,
        written_bytes: prev.sectors_written.saturating_sub(first.sectors_written) * SECTOR,
        discarded_bytes: prev
            .sectors_discarded
            .saturating_sub(first.sectors_discarded)
            * SECTOR,
        dropped_caches: false,
    })
}

/// The machine's settle: [`settle`] over [`ProcSource`], then, if `drop_caches`, the
/// clean page cache dropped (announced).
pub fn settle_machine(cfg: &SettleConfig, drop_caches: bool) -> Result<Settled> {
    let mut src = ProcSource::new()?;
    let mut settled = settle(&mut src, cfg)?;
    if drop_caches {
        let path = Path::new(DROP_CACHES);
        std::fs::write(path, "1\n").map_err(|e| HostError::io("writing", path, e))?;
        settled.dropped_caches = true;
    }
    Ok(settled)
}

const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Sums the sectors read, written and discarded and the requests in flight of the
/// devices `is_disk` accepts, from `/proc/diskstats` text. Kernels before 4.18 have no
/// discard fields (counted as 0).
pub fn parse_diskstats(
    text: &str,
    is_disk: &dyn Fn(&str) -> bool,
) -> std::result::Result<Sample, String> {
    let mut s = Sample::default();
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        if f.len() < 14 {
            return Err(format!(
                "line {}: {} fields, at least 14 expected",
                n + 1,
                f.len()
            ));
        }
        if !is_disk(f[2]) {
            continue;
        }
        let num = |i: usize| -> std::result::Result<u64, String> {
            f[i].parse().map_err(|_| {
                format!(
                    "line {}: field {} is not a number: {:?}",
                    n + 1,
                    i + 1,
                    f[i]
                )
            })
        };
        s.sectors_read += num(5)?;
        s.sectors_written += num(9)?;
        s.in_flight += num(11)?;
        if f.len() >= 18 {
            s.sectors_discarded += num(16)?;
        }
    }
    Ok(s)
}

/// `Dirty` and `Writeback` of `/proc/meminfo` text, in bytes.
pub fn parse_meminfo(text: &str) -> std::result::Result<(u64, u64), String> {
    Ok((
        meminfo_field(text, "Dirty")?,
        meminfo_field(text, "Writeback")?,
    ))
}

/// The field `key` of `/proc/meminfo` text (a line `key:   N kB`), in bytes.
pub fn meminfo_field(text: &str, key: &str) -> std::result::Result<u64, String> {
    let line = text
        .lines()
        .find(|l| l.split(':').next() == Some(key))
        .ok_or_else(|| format!("no {key} line"))?;
    let v = line
        .split(':')
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>();
    match v.as_slice() {
        [n, "kB"] => n
            .parse::<u64>()
            .map(|k| k * 1024)
            .map_err(|_| format!("{key}: not a number: {n:?}")),
        _ => Err(format!("{key}: expected \"N kB\", found {:?}", v.join(" "))),
    }
}

/// Whether a block device of `/sys/block` is a disk whose rest matters: not a loop,
/// RAM, zram (memory, not a disk) or network block device.
pub fn is_real_disk(name: &str) -> bool {
    !["loop", "ram", "zram", "nbd"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// The machine's disks, its `sync` and the real clock.
pub struct ProcSource {
    start: Instant,
    disks: Vec<String>,
    diskstats: PathBuf,
    meminfo: PathBuf,
    synced: Arc<AtomicBool>,
}

impl ProcSource {
    /// The machine's disks (`/sys/block`, less [`is_real_disk`]'s exceptions).
    pub fn new() -> Result<ProcSource> {
        let dir = Path::new("/sys/block");
        let mut disks = Vec::new();
        for e in std::fs::read_dir(dir).map_err(|e| HostError::io("listing", dir, e))? {
            let e = e.map_err(|e| HostError::io("listing", dir, e))?;
            let name = e.file_name().to_string_lossy().into_owned();
            if is_real_disk(&name) {
                disks.push(name);
            }
        }
        Ok(ProcSource::with_files(
            disks,
            "/proc/diskstats".into(),
            "/proc/meminfo".into(),
        ))
    }

    /// The given disks, read from the given files.
    pub fn with_files(disks: Vec<String>, diskstats: PathBuf, meminfo: PathBuf) -> ProcSource {
        ProcSource {
            start: Instant::now(),
            disks,
            diskstats,
            meminfo,
            synced: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl DiskSource for ProcSource {
    fn start_sync(&mut self) -> Result<()> {
        let done = Arc::clone(&self.synced);
        done.store(false, Ordering::SeqCst);
        // Left running if the settle gives up first: it ends when the kernel is done.
        std::thread::Builder::new()
            .name("settle-sync".into())
            .spawn(move || {
                super::sys::sync_all();
                done.store(true, Ordering::SeqCst);
            })
            .map_err(|e| HostError::io("starting", "a sync thread", e))?;
        Ok(())
    }

    fn sample(&mut self) -> Result<Sample> {
        let read =
            |p: &Path| std::fs::read_to_string(p).map_err(|e| HostError::io("reading", p, e));
        let parse = |p: &Path, msg: String| HostError::Parse {
            path: p.to_path_buf(),
            msg,
        };
        let disks = &self.disks;
        let mut s = parse_diskstats(&read(&self.diskstats)?, &|n| disks.iter().any(|d| d == n))
            .map_err(|m| parse(&self.diskstats, m))?;
        let (dirty, writeback) =
            parse_meminfo(&read(&self.meminfo)?).map_err(|m| parse(&self.meminfo, m))?;
        s.dirty_bytes = dirty;
        s.writeback_bytes = writeback;
        s.synced = self.synced.load(Ordering::SeqCst);
        Ok(s)
    }

    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    fn pause(&mut self, d: Duration) {
        std::thread::sleep(d);
    }

    fn stop_requested(&self) -> bool {
        super::signals::stop_requested().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted machine: one sample per step of `poll`, the last one repeated.
    struct Fake {
        samples: Vec<Sample>,
        at: usize,
        clock: Duration,
        synced_started: bool,
    }

    impl Fake {
        fn new(samples: Vec<Sample>) -> Fake {
            Fake {
                samples,
                at: 0,
                clock: Duration::ZERO,
                synced_started: false,
            }
        }
    }

    impl DiskSource for Fake {
        fn start_sync(&mut self) -> Result<()> {
            self.synced_started = true;
            Ok(())
        }
        fn sample(&mut self) -> Result<Sample> {
            assert!(self.synced_started, "sync starts before the first sample");
            let s = self.samples[self.at.min(self.samples.len() - 1)];
            self.at += 1;
            Ok(s)
        }
        fn elapsed(&self) -> Duration {
            self.clock
        }
        fn pause(&mut self, d: Duration) {
            self.clock += d;
        }
    }

    fn idle(written: u64) -> Sample {
        Sample {
            sectors_written: written,
            synced: true,
            ..Sample::default()
        }
    }

    fn cfg() -> SettleConfig {
        SettleConfig::default()
    }

    #[test]
    fn an_idle_disk_settles_after_the_quiet_time() {
        let mut f = Fake::new(vec![idle(100)]);
        let s = settle(&mut f, &cfg()).unwrap();
        assert!(s.idle);
        // Ten polls of 100 ms with nothing moving.
        assert_eq!(s.waited_ms, 1000);
        assert_eq!((s.written_bytes, s.discarded_bytes), (0, 0));
    }

    #[test]
    fn it_waits_while_sectors_move_or_requests_are_in_flight() {
        let mut samples = Vec::new();
        // 2 s of discards, then 1 s with a request in flight but nothing moved, then rest.
        for i in 0..20 {
            samples.push(Sample {
                sectors_discarded: i * 1000,
                dirty_bytes: 4096,
                ..idle(0)
            });
        }
        for _ in 0..10 {
            samples.push(Sample {
                sectors_discarded: 19_000,
                in_flight: 1,
                ..idle(0)
            });
        }
        samples.push(Sample {
            sectors_discarded: 19_000,
            ..idle(0)
        });
        let mut f = Fake::new(samples);
        let s = settle(&mut f, &cfg()).unwrap();
        assert!(s.idle);
        // The last busy sample is at 2.9 s; rest from there for 1 s.
        assert_eq!(s.waited_ms, 3900);
        assert_eq!(s.discarded_bytes, 19_000 * SECTOR);
        assert_eq!(s.dirty_bytes_at_start, 4096);
    }

    #[test]
    fn writeback_and_an_unfinished_sync_keep_it_waiting() {
        let mut samples = vec![
            Sample {
                writeback_bytes: 8192,
                ..idle(0)
            };
            5
        ];
        samples.extend(vec![
            Sample {
                synced: false,
                ..idle(0)
            };
            5
        ]);
        samples.push(idle(0));
        let mut f = Fake::new(samples);
        let s = settle(&mut f, &cfg()).unwrap();
        assert!(s.idle);
        assert_eq!(s.writeback_bytes_at_start, 8192);
        // Busy through the sample at 1.0 s (the last unsynced one), rest for 1 s after.
        assert_eq!(s.waited_ms, 2000);
    }

    #[test]
    fn it_gives_up_at_its_bound_and_says_so() {
        // Writes that never stop.
        let samples: Vec<Sample> = (0..1000).map(|i| idle(i * 8)).collect();
        let mut f = Fake::new(samples);
        let c = SettleConfig {
            bound: Duration::from_secs(5),
            ..cfg()
        };
        let s = settle(&mut f, &c).unwrap();
        assert!(!s.idle);
        assert_eq!(s.waited_ms, 5000);
        assert_eq!(s.written_bytes, 50 * 8 * SECTOR);
        assert!(
            s.describe().contains("did not come to rest"),
            "{}",
            s.describe()
        );
    }

    #[test]
    fn diskstats_sum_the_chosen_disks_and_read_discards() {
        let text = "   7       0 loop0 5 0 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n \
                    254       0 vda 10 1 200 3 20 2 400 5 2 9 9 7 0 5000 8 1 1\n \
                    254       1 vda1 10 1 200 3 20 2 400 5 2 9 9 7 0 5000 8 1 1\n \
                    254      16 vdb 1 0 8 1 1 0 16 1 0 1 1\n";
        let disks = ["vda", "vdb"];
        let s = parse_diskstats(text, &|n| disks.contains(&n)).unwrap();
        assert_eq!(s.sectors_read, 208);
        assert_eq!(s.sectors_written, 416);
        assert_eq!(s.in_flight, 2);
        // vdb is an old-format line without discard fields.
        assert_eq!(s.sectors_discarded, 5000);
    }

    #[test]
    fn bad_proc_text_is_an_error_not_a_panic() {
        assert!(parse_diskstats("254 0 vda 1 2\n", &|_| true)
            .unwrap_err()
            .contains("14 expected"));
        let bad = "254 0 vda 1 0 x 0 0 0 0 0 0 0 0 0 0 0\n";
        assert!(parse_diskstats(bad, &|_| true)
            .unwrap_err()
            .contains("not a number"));
        assert_eq!(
            parse_meminfo("MemTotal: 5 kB\nDirty:  3 kB\nWriteback: 0 kB\n").unwrap(),
            (3072, 0)
        );
        assert!(parse_meminfo("Dirty: 3 kB\n")
            .unwrap_err()
            .contains("Writeback"));
        assert!(parse_meminfo("Dirty: three kB\nWriteback: 0 kB\n")
            .unwrap_err()
            .contains("not a number"));
        assert!(is_real_disk("vda") && !is_real_disk("zram0") && !is_real_disk("loop3"));
    }

    #[test]
    fn a_missing_proc_file_is_an_error_message() {
        let dir = tempfile::tempdir().unwrap();
        let mut src = ProcSource::with_files(
            vec!["vda".into()],
            dir.path().join("diskstats"),
            dir.path().join("meminfo"),
        );
        let e = src.sample().unwrap_err().to_string();
        assert!(e.contains("reading") && e.contains("diskstats"), "{e}");
        std::fs::write(dir.path().join("diskstats"), "garbage\n").unwrap();
        let e = src.sample().unwrap_err().to_string();
        assert!(
            e.contains("unexpected content") && e.contains("diskstats"),
            "{e}"
        );
    }
}
