//! The process's resident memory, read from `/proc/self`: the total (`statm`) and its
//! breakdown by kind (`status`: anonymous, file-backed and shared-memory pages); and
//! the calling thread's major page faults (`/proc/thread-self/stat`).

/// Resident bytes of this process now (resident pages times the page size).
pub fn resident_bytes() -> std::io::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    parse_statm_resident(&statm)
        .map(|pages| pages * page_size())
        .ok_or_else(|| malformed("/proc/self/statm"))
}

/// The resident page count (second field) of a `statm` line.
pub fn parse_statm_resident(statm: &str) -> Option<u64> {
    statm.split_whitespace().nth(1)?.parse().ok()
}

/// The process's resident memory by kind, in bytes, from one read of
/// `/proc/self/status`. The kernel computes `VmRSS` as the sum of the three kinds, so
/// `anon + file + shmem == rss` holds exactly within one reading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resident {
    /// `VmRSS`: every resident page mapped by the process.
    pub rss: u64,
    /// `RssAnon`: private anonymous pages (heaps, stacks, anonymous maps).
    pub anon: u64,
    /// `RssFile`: pages of regular files mapped by the process (swap files, tables,
    /// the executable and its libraries).
    pub file: u64,
    /// `RssShmem`: shared anonymous memory, tmpfs files and memfds.
    pub shmem: u64,
}

/// Major page faults of the calling thread so far (faults that had to read a page
/// from disk or swap): field 12 of `/proc/thread-self/stat`.
pub fn thread_major_faults() -> std::io::Result<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat")?;
    parse_stat_major_faults(&stat).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "malformed /proc/thread-self/stat",
        )
    })
}

/// Major page faults of the calling process so far, every thread's, those of threads
/// that ended included: field 12 of `/proc/self/stat`.
pub fn process_major_faults() -> std::io::Result<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    parse_stat_major_faults(&stat).ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "malformed /proc/self/stat")
    })
}

/// Field 12 (major faults) of a `stat` line; the command name (field 2) may hold
/// spaces and parentheses, so fields are counted after its last `)`.
pub fn parse_stat_major_faults(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state is field 3, so major faults (12) is the 10th from here.
    rest.split_whitespace().nth(9)?.parse().ok()
}

/// This process's resident memory by kind now.
pub fn resident() -> std::io::Result<Resident> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    parse_status(&status).ok_or_else(|| malformed("/proc/self/status"))
}

/// The `VmRSS`, `RssAnon`, `RssFile` and `RssShmem` lines (in kB) of a `status` text.
pub fn parse_status(status: &str) -> Option<Resident> {
    let (mut rss, mut anon, mut file, mut shmem) = (None, None, None, None);
    for line in status.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let slot = match key {
            "VmRSS" => &mut rss,
            "RssAnon" => &mut anon,
            "RssFile" => &mut file,
            "RssShmem" => &mut shmem,
            _ => continue,
        };
        let kb: u64 = value.trim().strip_suffix("kB")?.trim().parse().ok()?;
        *slot = Some(kb * 1024);
    }
    Some(Resident {
        rss: rss?,
        anon: anon?,
        file: file?,
        shmem: shmem?,
    })
}

fn malformed(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("malformed {what}"))
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
    fn parses_major_faults_past_an_awkward_name() {
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 7 0 1 2 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_stat_major_faults(line), Some(7));
        assert_eq!(parse_stat_major_faults("42 (x) S 1"), None);
        assert!(thread_major_faults().is_ok());
        assert!(process_major_faults().unwrap() >= thread_major_faults().unwrap());
    }

    #[test]
    fn parses_statm() {
        assert_eq!(parse_statm_resident("1000 250 30 5 0 100 0\n"), Some(250));
        assert_eq!(parse_statm_resident("1000"), None);
        assert!(resident_bytes().unwrap() > 0);
    }

    #[test]
    fn parses_status_kinds() {
        let text = "Name:\tmarvin\nVmRSS:\t    1200 kB\nRssAnon:\t     1000 kB\n\
                    RssFile:\t     150 kB\nRssShmem:\t      50 kB\nThreads:\t3\n";
        assert_eq!(
            parse_status(text),
            Some(Resident {
                rss: 1200 << 10,
                anon: 1000 << 10,
                file: 150 << 10,
                shmem: 50 << 10,
            })
        );
        assert_eq!(parse_status("VmRSS:\t 12 kB\n"), None, "kinds missing");
        assert_eq!(
            parse_status("VmRSS: x kB\nRssAnon: 1 kB\nRssFile: 1 kB\nRssShmem: 1 kB\n"),
            None
        );
    }

    #[test]
    fn the_kinds_add_up_to_the_total() {
        let r = resident().unwrap();
        assert!(r.anon > 0 && r.file > 0, "{r:?}");
        assert_eq!(r.anon + r.file + r.shmem, r.rss, "{r:?}");
    }
}
