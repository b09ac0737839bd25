//! zram charged honestly: compressed swap in RAM whose memory counts against the same
//! budget as the apps' own. zram keeps its compressed pages in kernel memory (zsmalloc)
//! that no memory cgroup is charged for, so a group on zram swap would get that memory on
//! top of its limit. Two ways to count it, chosen by [`Mechanism::choose`] and said in one
//! line ([`Mechanism::describe`]):
//!
//! - **cgroup v2 with zswap** ([`super::zswap_charge`]): the kernel charges zswap's pool
//!   to the group that owns the pages and can keep it in RAM like zram.
//! - **otherwise** ([`ZramCharge`], cgroup v1): the System lowers the group's hard limit by
//!   the pool's size (`mm_stat` `mem_used_total`) at every tick of its loop, and raises it
//!   again as the pool shrinks. Between two ticks the pool can grow unseen, so the group's
//!   usage plus the pool stays within the budget plus one tick's growth of the pool.
//!
//! [`PoolStats`] is what the summary shows of the pool: its size, the compression ratio
//! and the time spent compressing. The time is zram's own block-layer write time
//! (`/sys/block/zram0/stat` field 8, `write_ticks`): zram compresses synchronously in
//! its write path, in whatever context swaps (an app's direct reclaim, kswapd, the
//! System's lowering of the limit), and that field counts exactly that path. The kernel
//! samples it per request in jiffies, which over thousands of pages averages out to the
//! time spent; a compression preempted midway counts its wait too, so it is an upper
//! bound on the CPU. The alternatives count other work as well (the apps' system time
//! holds their page faults and frees; kswapd does not run for a group's limit). zswap
//! exposes no time: there the field is `None`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::cgroup::{self, Group};
use super::error::{HostError, Result};
use super::memstat::parse_keyed;
use super::{announce, mib, sys};

/// The compression algorithm by default, as Android's.
pub const DEFAULT_ALGORITHM: &str = "lz4";

/// The algorithms a zram device offers and the one selected, from its
/// `comp_algorithm` (`lzo [lz4] zstd`).
pub fn parse_algorithms(text: &str) -> (Vec<String>, Option<String>) {
    let mut selected = None;
    let names = text
        .split_whitespace()
        .map(
            |w| match w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                Some(inner) => {
                    selected = Some(inner.to_string());
                    inner.to_string()
                }
                None => w.to_string(),
            },
        )
        .collect();
    (names, selected)
}

/// Checks `name` against the device's list; the error names the ones it has.
pub fn check_algorithm(comp_algorithm: &str, name: &str) -> Result<()> {
    let (names, _) = parse_algorithms(comp_algorithm);
    if names.iter().any(|n| n == name) {
        Ok(())
    } else {
        Err(HostError::Refused(format!(
            "zram has no compression algorithm {name:?}; this kernel offers: {}",
            names.join(", ")
        )))
    }
}

/// The algorithm the zram device at `sys_dir` compresses with now.
pub fn current_algorithm(sys_dir: &Path) -> Result<String> {
    let p = sys_dir.join("comp_algorithm");
    let text = cgroup::read_text(&p, "reading")?;
    parse_algorithms(&text).1.ok_or_else(|| HostError::Parse {
        path: p,
        msg: format!("no selected algorithm in {text:?}"),
    })
}

/// Selects `name` on the (unsized) zram device at `sys_dir` after checking it against the
/// device's list.
pub fn set_algorithm(sys_dir: &Path, name: &str) -> Result<()> {
    let p = sys_dir.join("comp_algorithm");
    check_algorithm(&cgroup::read_text(&p, "reading")?, name)?;
    cgroup::write_text(&p, name, "selecting the compression algorithm in")
}

/// What a compressed pool holds and cost, for the summary and the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolStats {
    /// Memory the pool uses now (zram `mem_used_total`, zswap `memory.zswap.current`).
    pub pool_bytes: u64,
    /// The most it used (zram `mem_used_max`; `None` for zswap).
    pub pool_peak_bytes: Option<u64>,
    /// The pages stored, uncompressed (zram `orig_data_size`, zswap `zswapped`).
    pub stored_bytes: u64,
    /// The same pages compressed (zram `compr_data_size`, zswap `zswap`).
    pub compressed_bytes: u64,
    /// Pages written into the pool and read back out.
    pub pages_out: u64,
    pub pages_in: u64,
    /// Time in zram's write and read paths (compressing, decompressing); `None` for
    /// zswap, which does not count it.
    pub compress_time: Option<Duration>,
    pub decompress_time: Option<Duration>,
}

impl PoolStats {
    /// Stored over compressed bytes (`orig_data_size / compr_data_size`); `None` while
    /// the pool is empty.
    pub fn compression_ratio(&self) -> Option<f64> {
        (self.compressed_bytes > 0).then(|| self.stored_bytes as f64 / self.compressed_bytes as f64)
    }

    /// zram's figures from the texts of its `mm_stat` and `stat` files.
    pub fn parse_zram(mm_stat: &str, stat: &str) -> Option<PoolStats> {
        let mm: Vec<u64> = mm_stat
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect::<Option<_>>()?;
        let io: Vec<u64> = stat
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect::<Option<_>>()?;
        let (reads, read_ms, write_sectors, write_ms) =
            (*io.first()?, *io.get(3)?, *io.get(6)?, *io.get(7)?);
        let page_sectors = sys::page_size() / 512;
        Some(PoolStats {
            stored_bytes: *mm.first()?,
            compressed_bytes: *mm.get(1)?,
            pool_bytes: *mm.get(2)?,
            pool_peak_bytes: Some(*mm.get(4)?),
            pages_out: write_sectors / page_sectors,
            pages_in: reads,
            compress_time: Some(Duration::from_millis(write_ms)),
            decompress_time: Some(Duration::from_millis(read_ms)),
        })
    }

    /// The zram device at `sys_dir` now.
    pub fn read_zram(sys_dir: &Path) -> Result<PoolStats> {
        let mm_path = sys_dir.join("mm_stat");
        let stat_path = sys_dir.join("stat");
        let mm = cgroup::read_text(&mm_path, "reading")?;
        let stat = cgroup::read_text(&stat_path, "reading")?;
        PoolStats::parse_zram(&mm, &stat).ok_or_else(|| HostError::Parse {
            path: mm_path,
            msg: format!("mm_stat {mm:?} or stat {stat:?} is not what zram writes"),
        })
    }

    /// A v2 group's zswap from its `memory.zswap.current` and `memory.stat` texts.
    pub fn parse_zswap(current: &str, memory_stat: &str) -> Option<PoolStats> {
        let kv = parse_keyed(memory_stat);
        Some(PoolStats {
            pool_bytes: current.trim().parse().ok()?,
            pool_peak_bytes: None,
            stored_bytes: kv.get("zswapped").copied().unwrap_or(0),
            compressed_bytes: kv.get("zswap").copied().unwrap_or(0),
            pages_out: kv.get("zswpout").copied().unwrap_or(0),
            pages_in: kv.get("zswpin").copied().unwrap_or(0),
            compress_time: None,
            decompress_time: None,
        })
    }
}

/// How a run's compressed swap is counted against its budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// zswap, charged by the kernel (cgroup v2, writeback off,
    /// [`super::zswap_charge::ZswapCharge`]).
    KernelZswap,
    /// zram, with the group's limit lowered by the pool every tick; `why` says why the
    /// kernel's own charging is not used.
    LimitLowered { why: String },
}

impl Mechanism {
    /// zswap where the kernel charges it to `group` and can keep it in RAM, else zram
    /// with the limit lowered.
    pub fn choose(group: &Group) -> Mechanism {
        match super::zswap_charge::ZswapCharge::support(group) {
            Ok(()) => Mechanism::KernelZswap,
            Err(why) => Mechanism::LimitLowered { why },
        }
    }

    /// Says on stderr which mechanism the run uses ([`Mechanism::describe`]).
    pub fn announce(&self, algorithm: &str) {
        announce(&self.describe(algorithm));
    }

    /// The run's one line on it (also for `config.toml`).
    pub fn describe(&self, algorithm: &str) -> String {
        match self {
            Mechanism::KernelZswap => format!(
                "compressed swap charged by the kernel: zswap ({algorithm}) with \
                 memory.zswap.writeback=0, its pool counted in the group's memory (cgroup v2)"
            ),
            Mechanism::LimitLowered { why } => format!(
                "compressed swap charged by the System: zram ({algorithm}), the group's limit \
                 lowered by the pool's size (mm_stat mem_used_total) at every tick, so usage \
                 plus pool stays within the budget plus one tick's growth of the pool ({why})"
            ),
        }
    }
}

/// One tick of [`ZramCharge`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChargeTick {
    /// The pool as read this tick.
    pub pool_bytes: u64,
    /// The group's limit after the tick.
    pub limit_bytes: u64,
    /// How much the pool grew since the limit last took it into account: what usage
    /// plus pool could exceed the budget by just before this tick.
    pub growth_bytes: u64,
    /// The kernel could not reclaim down to the lowered limit (v1 `EBUSY`); the old
    /// limit stays and the next tick tries again.
    pub refused: bool,
    /// The pool is so large that even the floor limit leaves usage plus pool above the
    /// budget by this much (the killer's business).
    pub over_budget_bytes: u64,
}

/// The System's charging of zram on cgroup v1: the group's limit is the budget less the
/// pool, renewed by [`ZramCharge::tick`] every tick of the run loop.
#[derive(Debug)]
pub struct ZramCharge {
    budget: u64,
    floor: u64,
    sys_dir: PathBuf,
    /// The pool the limit accounts for now.
    charged_pool: u64,
    limit: u64,
    largest_growth: u64,
    refusals: u64,
}

impl ZramCharge {
    /// Charges the pool of the zram device at `sys_dir` against `budget`; the limit never
    /// goes below `floor` (a group at a limit of nothing cannot even run its killer's
    /// victim to its end).
    pub fn new(budget: u64, floor: u64, sys_dir: &Path) -> ZramCharge {
        ZramCharge {
            budget,
            floor: floor.min(budget),
            sys_dir: sys_dir.to_path_buf(),
            charged_pool: 0,
            limit: budget,
            largest_growth: 0,
            refusals: 0,
        }
    }

    /// Reads the pool and sets `group`'s limit to the budget less it (whole pages, at
    /// least the floor). Lowering the limit makes the kernel reclaim down to it in the
    /// caller's thread, which swaps (so compresses) there.
    pub fn tick(&mut self, group: &Group) -> Result<ChargeTick> {
        let pool = PoolStats::read_zram(&self.sys_dir)?.pool_bytes;
        let growth = pool.saturating_sub(self.charged_pool);
        self.largest_growth = self.largest_growth.max(growth);
        let page = sys::page_size();
        let wanted = self.budget.saturating_sub(pool);
        let target = (wanted.max(self.floor) / page) * page;
        let mut refused = false;
        if target != self.limit {
            match group.set_limit(target) {
                Ok(()) => {
                    self.limit = target;
                    self.charged_pool = pool;
                }
                Err(HostError::Io { source, .. }) if source.raw_os_error() == Some(libc::EBUSY) => {
                    refused = true;
                    self.refusals += 1;
                }
                Err(e) => return Err(e),
            }
        } else {
            self.charged_pool = pool;
        }
        Ok(ChargeTick {
            pool_bytes: pool,
            limit_bytes: self.limit,
            growth_bytes: growth,
            refused,
            over_budget_bytes: (self.limit + pool).saturating_sub(self.budget),
        })
    }

    /// The pool the group's limit accounts for now (read at the last tick whose limit
    /// the kernel took).
    pub fn charged_pool(&self) -> u64 {
        self.charged_pool
    }

    /// The limit the group has now.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The largest growth of the pool between two ticks so far: the bound that held.
    pub fn largest_growth(&self) -> u64 {
        self.largest_growth
    }

    /// Ticks whose lowering the kernel refused.
    pub fn refusals(&self) -> u64 {
        self.refusals
    }
}

/// The pool in MiB, for announcements.
pub fn pool_line(s: &PoolStats) -> String {
    format!(
        "pool {} MiB holding {} MiB{}",
        mib(s.pool_bytes),
        mib(s.stored_bytes),
        s.compression_ratio()
            .map(|r| format!(" (ratio {r:.2})"))
            .unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_algorithm_list_parses_and_a_missing_one_is_a_clear_error() {
        let (names, sel) = parse_algorithms("[lzo-rle] lzo lz4 \n");
        assert_eq!(names, ["lzo-rle", "lzo", "lz4"]);
        assert_eq!(sel.as_deref(), Some("lzo-rle"));
        assert!(check_algorithm("lzo [lz4] zstd", "zstd").is_ok());
        let e = check_algorithm("[lzo-rle] lzo lz4", "zstd").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("\"zstd\"") && msg.contains("lzo-rle, lzo, lz4"),
            "{msg}"
        );
    }

    #[test]
    fn zram_figures_parse() {
        // Figures of a real device after a 64 MiB workload swapped onto it.
        let mm =
            "   4096       63    20480        0 64819200        0        0        0    25651\n";
        let stat = "   10874        0    87240       20    30770        0   246160      180        0      200      200        0        0        0        0        0        0\n";
        let s = PoolStats::parse_zram(mm, stat).unwrap();
        assert_eq!(
            (s.stored_bytes, s.compressed_bytes, s.pool_bytes),
            (4096, 63, 20480)
        );
        assert_eq!(s.pool_peak_bytes, Some(64819200));
        assert_eq!(
            (s.pages_out, s.pages_in),
            (246160 / (sys::page_size() / 512), 10874)
        );
        assert_eq!(s.compress_time, Some(Duration::from_millis(180)));
        assert_eq!(s.decompress_time, Some(Duration::from_millis(20)));
        assert!((s.compression_ratio().unwrap() - 4096.0 / 63.0).abs() < 1e-9);
        assert_eq!(PoolStats::default().compression_ratio(), None);
        assert_eq!(PoolStats::parse_zram("1 2", stat), None, "too few fields");
        assert_eq!(PoolStats::parse_zram(mm, "x"), None);
    }

    #[test]
    fn zswap_figures_parse() {
        let s = PoolStats::parse_zswap(
            "1048576\n",
            "anon 9\nzswap 1000000\nzswapped 3000000\nzswpout 700\nzswpin 5\n",
        )
        .unwrap();
        assert_eq!(
            (s.pool_bytes, s.stored_bytes, s.compressed_bytes),
            (1048576, 3000000, 1000000)
        );
        assert_eq!((s.pages_out, s.pages_in), (700, 5));
        assert_eq!(s.compress_time, None);
        assert_eq!(PoolStats::parse_zswap("max", ""), None);
    }

    #[test]
    fn the_announcement_says_which_mechanism() {
        let v1 = Mechanism::LimitLowered {
            why: "cgroup v1 does not charge zswap to a group".into(),
        };
        let line = v1.describe("lz4");
        assert!(
            line.contains("mem_used_total") && line.contains("one tick's growth"),
            "{line}"
        );
        assert!(Mechanism::KernelZswap
            .describe("lz4")
            .contains("memory.zswap.writeback=0"));
    }
}
