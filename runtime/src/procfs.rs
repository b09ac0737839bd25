//! What the kernel counts for a process, read from `/proc`: the one `/proc` reader of the
//! workspace (the runtime, the app, the machine layer and the System all read through it).
//! Resident memory split into anonymous, file and shared memory and its swap
//! (`/proc/PID/status`, or the exact page-table walk of `/proc/PID/smaps_rollup`), the
//! resident total (`statm`), major faults, state, nice and start time (`/proc/PID/stat`,
//! also of the calling thread, `/proc/thread-self/stat`), and scheduler times
//! (`schedstat`). Each file has a parser that takes its text, so malformed input is tested
//! without a kernel; a malformed file is an [`io::ErrorKind::InvalidData`] error.

use std::fs;
use std::io;

/// Resident and swapped memory of one process, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcMem {
    /// Resident anonymous memory (`RssAnon`, or `Anonymous` in smaps_rollup): heaps,
    /// stacks, anonymous maps.
    pub anon: u64,
    /// Resident file-backed memory (`RssFile`): swap files, tables, the executable and
    /// its libraries.
    pub file: u64,
    /// Resident shared memory: shmem, tmpfs and memfd pages (`RssShmem`).
    pub shmem: u64,
    /// Pages of the process in swap (`VmSwap`, `Swap`).
    pub swap: u64,
}

impl ProcMem {
    /// Resident memory of all kinds (`VmRSS`: the kernel computes it as the sum of the
    /// three kinds, so it holds exactly within one reading).
    pub fn rss(&self) -> u64 {
        self.anon + self.file + self.shmem
    }
}

/// The fields of `/proc/PID/stat` this workspace uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The state letter (`R`, `S`, `Z`, ...).
    pub state: char,
    /// Minor faults (field 10).
    pub minor_faults: u64,
    /// Major faults: faults that had to read a page from disk or swap (field 12).
    pub major_faults: u64,
    /// Start time after boot in clock ticks (field 22); with the pid it names one
    /// process for good, even once the pid is reused.
    pub start_time: u64,
    /// Its nice value (field 19; a process's is its main thread's).
    pub nice: i32,
}

/// CPU time on and waiting for a CPU, summed over a process's threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedTimes {
    /// Time its threads ran.
    pub run_ns: u64,
    /// Time its threads were runnable but waited on a run queue.
    pub runqueue_ns: u64,
}

/// Parses a `kB` value line body such as `"    1234 kB"` into bytes.
fn kib(value: &str) -> Option<u64> {
    let mut it = value.split_whitespace();
    let n: u64 = it.next()?.parse().ok()?;
    match it.next() {
        Some("kB") | None => Some(n * 1024),
        Some(_) => None,
    }
}

/// Parses the memory lines of `/proc/PID/status`: `RssAnon`, `RssFile` and `RssShmem`
/// must all be there (a kernel thread or a zombie has none: `NotFound`), `VmSwap` is 0
/// when missing; a malformed value of any of them (or of `VmRSS`) is `InvalidData`.
pub fn parse_status(text: &str) -> io::Result<ProcMem> {
    let mut mem = ProcMem::default();
    let mut kinds = 0;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let mut total = 0;
        let slot = match key {
            "RssAnon" => &mut mem.anon,
            "RssFile" => &mut mem.file,
            "RssShmem" => &mut mem.shmem,
            "VmSwap" => &mut mem.swap,
            "VmRSS" => &mut total,
            _ => continue,
        };
        *slot = kib(value).ok_or_else(|| bad(format!("bad {key} line in status: {line:?}")))?;
        if key.starts_with("Rss") {
            kinds += 1;
        }
    }
    match kinds {
        3 => Ok(mem),
        // Kernel threads and zombies have no memory lines.
        0 => Err(io::Error::new(
            io::ErrorKind::NotFound,
            "status has no memory lines (no address space)",
        )),
        _ => Err(bad("status lacks some of RssAnon, RssFile, RssShmem".into())),
    }
}

/// Parses `/proc/PID/smaps_rollup`: `anon` is `Anonymous`, `file` is the rest of
/// `Rss` (shared memory included, which the rollup does not split out; `shmem` is 0
/// here, use [`mem`] for that split).
pub fn parse_smaps_rollup(text: &str) -> io::Result<ProcMem> {
    let (mut rss, mut anon, mut swap) = (None, None, None);
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let slot = match key {
            "Rss" => &mut rss,
            "Anonymous" => &mut anon,
            "Swap" => &mut swap,
            _ => continue,
        };
        *slot = Some(
            kib(value).ok_or_else(|| bad(format!("bad {key} line in smaps_rollup: {line:?}")))?,
        );
    }
    let rss = rss.ok_or_else(|| bad("smaps_rollup has no Rss line".into()))?;
    let anon = anon.unwrap_or(0);
    Ok(ProcMem {
        anon,
        file: rss.saturating_sub(anon),
        shmem: 0,
        swap: swap.unwrap_or(0),
    })
}

/// Parses `/proc/PID/stat`. The command name (field 2) may hold spaces and
/// parentheses, so the fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> io::Result<Stat> {
    let close = text
        .rfind(')')
        .ok_or_else(|| bad("stat has no command name".into()))?;
    // Fields from 3 (state) on.
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let field = |n: usize| -> io::Result<&str> {
        rest.get(n - 3)
            .copied()
            .ok_or_else(|| bad(format!("stat has no field {n}")))
    };
    let num = |n: usize| -> io::Result<u64> {
        field(n)?
            .parse()
            .map_err(|_| bad(format!("stat field {n} is not a number")))
    };
    let state = field(3)?
        .chars()
        .next()
        .ok_or_else(|| bad("stat has an empty state".into()))?;
    Ok(Stat {
        state,
        minor_faults: num(10)?,
        major_faults: num(12)?,
        start_time: num(22)?,
        nice: field(19)?
            .parse()
            .map_err(|_| bad("stat field 19 is not a number".into()))?,
    })
}

/// The resident page count (second field) of a `statm` line.
pub fn parse_statm_resident(statm: &str) -> Option<u64> {
    statm.split_whitespace().nth(1)?.parse().ok()
}

/// The first two fields of a `schedstat` file (run and run-queue time, ns).
pub fn parse_schedstat(text: &str) -> io::Result<SchedTimes> {
    let mut f = text.split_ascii_whitespace().map(str::parse::<u64>);
    match (f.next(), f.next()) {
        (Some(Ok(run_ns)), Some(Ok(runqueue_ns))) => Ok(SchedTimes {
            run_ns,
            runqueue_ns,
        }),
        _ => Err(bad(format!("schedstat: not two numbers: {text:?}"))),
    }
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Reads `/proc/WHO/FILE` (`WHO` a pid, `self` or `thread-self`); an error names the file.
fn read(who: &str, file: &str) -> io::Result<String> {
    let path = format!("/proc/{who}/{file}");
    fs::read_to_string(&path).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))
}

/// The memory of process `pid` from `/proc/PID/status` (cheap: counters, no walk).
pub fn mem(pid: u32) -> io::Result<ProcMem> {
    parse_status(&read(&pid.to_string(), "status")?)
}

/// This process's memory by kind now (`/proc/self/status`).
pub fn resident() -> io::Result<ProcMem> {
    parse_status(&read("self", "status")?)
}

/// Resident bytes of this process now (resident pages of `/proc/self/statm` times the
/// page size).
pub fn resident_bytes() -> io::Result<u64> {
    parse_statm_resident(&read("self", "statm")?)
        .map(|pages| pages * page_size())
        .ok_or_else(|| bad("malformed /proc/self/statm".into()))
}

/// The memory of process `pid` from `/proc/PID/smaps_rollup` (exact: walks the page
/// tables, so it costs time proportional to the mapping; shmem is not split out).
pub fn rollup(pid: u32) -> io::Result<ProcMem> {
    parse_smaps_rollup(&read(&pid.to_string(), "smaps_rollup")?)
}

/// `/proc/PID/stat` of process `pid`.
pub fn stat(pid: u32) -> io::Result<Stat> {
    parse_stat(&read(&pid.to_string(), "stat")?)
}

/// Major faults of process `pid` so far.
pub fn major_faults(pid: u32) -> io::Result<u64> {
    Ok(stat(pid)?.major_faults)
}

/// Major faults of the calling process so far, every thread's, those of threads that
/// ended included (`/proc/self/stat`).
pub fn process_major_faults() -> io::Result<u64> {
    Ok(parse_stat(&read("self", "stat")?)?.major_faults)
}

/// Major faults of the calling thread so far (`/proc/thread-self/stat`): read before
/// and after a collection on the collecting thread, the difference is the collection's
/// own major faults.
pub fn thread_major_faults() -> io::Result<u64> {
    Ok(parse_stat(&read("thread-self", "stat")?)?.major_faults)
}

/// The scheduler's times of thread `tid` of process `pid` (`/proc/PID/task/TID/schedstat`;
/// its run-queue wait is up to date whenever it is running, as when it reads its own).
pub fn thread_sched_times(pid: u32, tid: u32) -> io::Result<SchedTimes> {
    parse_schedstat(&read(&format!("{pid}/task/{tid}"), "schedstat")?)
}

/// The scheduler's times of process `pid`, summed over its threads now alive
/// (`/proc/PID/task/*/schedstat`; a thread that ended meanwhile is not counted).
pub fn sched_times(pid: u32) -> io::Result<SchedTimes> {
    let dir = format!("/proc/{pid}/task");
    let mut sum = SchedTimes::default();
    for entry in fs::read_dir(&dir).map_err(|e| io::Error::new(e.kind(), format!("{dir}: {e}")))? {
        let path = entry?.path().join("schedstat");
        // A thread may end between the listing and the read.
        if let Ok(text) = fs::read_to_string(&path) {
            let t = parse_schedstat(&text)?;
            sum.run_ns += t.run_ns;
            sum.runqueue_ns += t.runqueue_ns;
        }
    }
    Ok(sum)
}

pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_become_bytes() {
        let text =
            "Name:\tcat\nVmRSS:\t    3000 kB\nRssAnon:\t    1000 kB\nRssFile:\t    1500 kB\n\
                    RssShmem:\t     500 kB\nVmSwap:\t      12 kB\n";
        let m = parse_status(text).unwrap();
        assert_eq!(
            m,
            ProcMem {
                anon: 1000 * 1024,
                file: 1500 * 1024,
                shmem: 500 * 1024,
                swap: 12 * 1024
            }
        );
        assert_eq!(m.rss(), 3000 * 1024);
        assert!(parse_status("Name:\tkthreadd\nState:\tS\n").is_err());
        assert!(parse_status("RssAnon:\t lots kB\n").is_err());
        assert!(parse_status("VmRSS:\t 12 kB\n").is_err(), "kinds missing");
        assert!(
            parse_status("VmRSS: x kB\nRssAnon: 1 kB\nRssFile: 1 kB\nRssShmem: 1 kB\n").is_err()
        );
    }

    #[test]
    fn smaps_rollup_splits_anonymous_from_file() {
        let text = "55d0-7ffd ---p 00000000 00:00 0    [rollup]\nRss:                4096 kB\n\
                    Pss:                4000 kB\nAnonymous:          1024 kB\nSwap:                 8 kB\n";
        let m = parse_smaps_rollup(text).unwrap();
        assert_eq!(
            (m.anon, m.file, m.swap),
            (1024 * 1024, 3072 * 1024, 8 * 1024)
        );
        assert!(parse_smaps_rollup("Pss: 1 kB\n").is_err());
    }

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        // A command name with spaces and a parenthesis must not shift the fields.
        let text =
            "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 111 0 7 0 3 4 0 0 5 -15 1 0 98765 1000 200\n";
        let s = parse_stat(text).unwrap();
        assert_eq!(
            s,
            Stat {
                state: 'S',
                minor_faults: 111,
                major_faults: 7,
                start_time: 98765,
                nice: -15,
            }
        );
        assert!(parse_stat("4242 (x) S 1 2\n").is_err());
        assert!(parse_stat("no parens").is_err());
    }

    #[test]
    fn parses_statm() {
        assert_eq!(parse_statm_resident("1000 250 30 5 0 100 0\n"), Some(250));
        assert_eq!(parse_statm_resident("1000"), None);
        assert!(resident_bytes().unwrap() > 0);
    }

    #[test]
    fn this_process_is_counted() {
        // Touch 8 MiB so RSS holds at least that much anonymous memory.
        let block = vec![1u8; 8 << 20];
        let m = mem(std::process::id()).unwrap();
        assert!(
            m.anon >= 8 << 20,
            "RssAnon {} below the 8 MiB just touched",
            m.anon
        );
        let r = rollup(std::process::id()).unwrap();
        assert!(
            r.anon >= 8 << 20,
            "smaps_rollup Anonymous {} below 8 MiB",
            r.anon
        );
        let own = resident().unwrap();
        assert!(own.anon > 0 && own.file > 0, "{own:?}");
        let s = stat(std::process::id()).unwrap();
        // The stat of a process is its main thread's, here the harness waiting on us.
        assert!("RSD".contains(s.state), "state {}", s.state);
        assert!(s.start_time > 0 && s.minor_faults > 0);
        let thread = thread_major_faults().unwrap();
        let process = major_faults(std::process::id()).unwrap();
        assert!(
            thread <= process,
            "a thread's faults ({thread}) are part of the process's ({process})"
        );
        assert!(process_major_faults().unwrap() >= thread);
        assert!(mem(u32::MAX).is_err(), "no such pid");
        drop(block);
    }

    #[test]
    fn schedstat_gives_run_and_queue_time() {
        let t = parse_schedstat("301370 25 1\n").unwrap();
        assert_eq!((t.run_ns, t.runqueue_ns), (301_370, 25));
        assert!(parse_schedstat("12\n").is_err());
        assert!(parse_schedstat("a b c").is_err());
    }

    #[test]
    fn this_process_has_run() {
        let t = sched_times(std::process::id()).unwrap();
        assert!(t.run_ns > 0, "{t:?}");
    }
}
