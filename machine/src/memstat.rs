//! The kernel's memory counters of a cgroup, read from its flat keyed files
//! (`memory.stat`, `memory.events`, `memory.oom_control`) and normalised over the two
//! cgroup versions, plus the machine's swap counters from `/proc/vmstat` (cgroup v1
//! keeps no per-group swap-in/out counts).

use std::collections::BTreeMap;

use super::cgroup_version::Version;

/// A cgroup's `memory.stat`, in bytes and event counts, the same fields on v1 and v2.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemStat {
    /// Anonymous memory (v1 `total_rss`, v2 `anon`).
    pub anon: u64,
    /// Page cache, shmem included (v1 `total_cache`, v2 `file`).
    pub file: u64,
    /// Shared memory, tmpfs and memfd pages (v1 `total_shmem`, v2 `shmem`).
    pub shmem: u64,
    /// Page cache on the inactive file list (v1 `total_inactive_file`, v2
    /// `inactive_file`): clean or cleanable file pages the kernel reclaims first, before
    /// the group would have to swap or kill.
    pub inactive_file: u64,
    /// Page cache waiting to be written, or being written (v1 `total_dirty` +
    /// `total_writeback`, v2 `file_dirty` + `file_writeback`): not reclaimable until the
    /// write is done.
    pub dirty: u64,
    /// Bytes of the group in swap now (v1 `total_swap`; v2 reads `memory.swap.current`
    /// into it). `None` where the kernel does not account swap.
    pub swap: Option<u64>,
    /// Page faults and major page faults of the group's processes.
    pub pgfault: u64,
    pub pgmajfault: u64,
    /// Pages swapped in and out for this group (v2 `pswpin`/`pswpout`, kernels 6.x);
    /// `None` on v1, whose caller falls back to the machine's counters.
    pub pswpin: Option<u64>,
    pub pswpout: Option<u64>,
    /// Refaults of anonymous pages evicted earlier (swap-ins seen by the working-set
    /// detector), where the kernel reports them.
    pub workingset_refault_anon: Option<u64>,
}

/// Parses a flat keyed file (`key value` per line); lines that do not fit are skipped.
pub fn parse_keyed(text: &str) -> BTreeMap<&str, u64> {
    text.lines()
        .filter_map(|line| {
            let mut it = line.split_whitespace();
            let key = it.next()?;
            let value = it.next()?.parse().ok()?;
            Some((key, value))
        })
        .collect()
}

impl MemStat {
    /// The group's working set: its usage less the clean inactive page cache the kernel
    /// would reclaim first (dirty and writeback pages count: they cannot go yet). This is what the killer and Marvin's reclaimer watch, as
    /// lmkd counts file cache as reclaimable (`other_file`) and container runtimes count
    /// a group's working set: cache that an app's files left behind (a binary read once,
    /// swap-file writes) is not memory pressure.
    pub fn working_set(&self, usage: u64) -> u64 {
        usage.saturating_sub(self.inactive_file.saturating_sub(self.dirty))
    }

    /// Normalises the text of `memory.stat`.
    pub fn parse(version: Version, text: &str) -> MemStat {
        let kv = parse_keyed(text);
        let get = |k: &str| kv.get(k).copied();
        match version {
            // The total_* lines include descendants; a run's group has none, but they
            // are the right numbers if it ever does.
            Version::V1 => MemStat {
                anon: get("total_rss").or(get("rss")).unwrap_or(0),
                file: get("total_cache").or(get("cache")).unwrap_or(0),
                shmem: get("total_shmem").or(get("shmem")).unwrap_or(0),
                inactive_file: get("total_inactive_file")
                    .or(get("inactive_file"))
                    .unwrap_or(0),
                dirty: get("total_dirty").or(get("dirty")).unwrap_or(0)
                    + get("total_writeback").or(get("writeback")).unwrap_or(0),
                swap: get("total_swap").or(get("swap")),
                pgfault: get("total_pgfault").or(get("pgfault")).unwrap_or(0),
                pgmajfault: get("total_pgmajfault").or(get("pgmajfault")).unwrap_or(0),
                pswpin: None,
                pswpout: None,
                workingset_refault_anon: get("total_workingset_refault_anon")
                    .or(get("workingset_refault_anon")),
            },
            Version::V2 => MemStat {
                anon: get("anon").unwrap_or(0),
                file: get("file").unwrap_or(0),
                shmem: get("shmem").unwrap_or(0),
                inactive_file: get("inactive_file").unwrap_or(0),
                dirty: get("file_dirty").unwrap_or(0) + get("file_writeback").unwrap_or(0),
                swap: None,
                pgfault: get("pgfault").unwrap_or(0),
                pgmajfault: get("pgmajfault").unwrap_or(0),
                pswpin: get("pswpin"),
                pswpout: get("pswpout"),
                workingset_refault_anon: get("workingset_refault_anon"),
            },
        }
    }
}

/// The machine's swap-in and swap-out counts in pages (`pswpin`, `pswpout` of
/// `/proc/vmstat`), for cgroup v1, which has no per-group counts: take the difference
/// over a run whose swap device only the run uses.
pub fn machine_swap_pages() -> std::io::Result<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/vmstat")?;
    let kv = parse_keyed(&text);
    Ok((
        kv.get("pswpin").copied().unwrap_or(0),
        kv.get("pswpout").copied().unwrap_or(0),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_prefers_the_hierarchical_totals() {
        let text = "cache 100\nrss 200\nshmem 5\nswap 7\npgfault 9\npgmajfault 3\nworkingset_refault_anon 2\n\
                    hierarchical_memory_limit 9223372036854771712\ntotal_cache 1100\ntotal_rss 1200\n\
                    total_shmem 15\ntotal_swap 17\ntotal_pgfault 19\ntotal_pgmajfault 13\n\
                    total_workingset_refault_anon 12\n";
        let s = MemStat::parse(Version::V1, text);
        assert_eq!(
            (s.anon, s.file, s.shmem, s.swap),
            (1200, 1100, 15, Some(17))
        );
        assert_eq!(
            (s.pgfault, s.pgmajfault, s.workingset_refault_anon),
            (19, 13, Some(12))
        );
        assert_eq!((s.pswpin, s.pswpout), (None, None));
        // Without the totals (an old kernel), the local lines serve.
        let s = MemStat::parse(Version::V1, "cache 100\nrss 200\npgmajfault 3\n");
        assert_eq!((s.anon, s.file, s.pgmajfault, s.swap), (200, 100, 3, None));
    }

    #[test]
    fn v2_reads_its_own_names() {
        let text = "anon 4096\nfile 8192\nkernel 100\nshmem 12\npgfault 50\npgmajfault 6\n\
                    pswpin 4\npswpout 9\nworkingset_refault_anon 3\n";
        let s = MemStat::parse(Version::V2, text);
        assert_eq!(
            (s.anon, s.file, s.shmem, s.pgfault, s.pgmajfault),
            (4096, 8192, 12, 50, 6)
        );
        assert_eq!(
            (s.pswpin, s.pswpout, s.workingset_refault_anon),
            (Some(4), Some(9), Some(3))
        );
        assert_eq!(s.swap, None, "v2 swap comes from memory.swap.current");
    }

    #[test]
    fn the_working_set_leaves_out_inactive_page_cache() {
        let v1 = MemStat::parse(
            Version::V1,
            "inactive_file 5\ntotal_inactive_file 4096\ntotal_cache 8192\n",
        );
        assert_eq!(v1.inactive_file, 4096, "the hierarchical total");
        assert_eq!(v1.working_set(10_000), 10_000 - 4096);
        let v2 = MemStat::parse(Version::V2, "inactive_file 300\nfile 900\n");
        assert_eq!(v2.working_set(1000), 700);
        let dirty = MemStat::parse(
            Version::V2,
            "inactive_file 300\nfile_dirty 100\nfile_writeback 50\n",
        );
        assert_eq!(
            dirty.working_set(1000),
            850,
            "dirty pages cannot be dropped yet"
        );
        assert_eq!(v2.working_set(100), 0, "never below zero");
    }

    #[test]
    fn keyed_files_skip_what_does_not_fit() {
        let kv = parse_keyed("oom_kill_disable 0\nunder_oom 0\noom_kill 4\nbroken\nx y\n");
        assert_eq!(kv.get("oom_kill"), Some(&4));
        assert_eq!(kv.len(), 3);
    }

    #[test]
    fn the_machine_counts_swap() {
        assert!(machine_swap_pages().is_ok(), "/proc/vmstat is readable");
    }
}
