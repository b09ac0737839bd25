//! The `zram` policy's charging of zram's compressed pool to the run's budget
//! ([`ZramRun`]): the mechanism chosen and announced at the start, the group's limit
//! lowered by the pool before the killer looks at every tick, and the pool's figures
//! for the summary at the end (docs/machine-side.md, "How the run loop calls them").

use std::path::Path;

use marvin_machine::cgroup::Group;
use marvin_machine::swapdev;
use marvin_machine::zram_charge::{Mechanism, PoolStats, ZramCharge};

use crate::summary::ZramFigures;

/// The pool's charging for one run, held beside the machine.
pub(super) struct ZramRun {
    algorithm: String,
    charging: String,
    budget: u64,
    charge: ZramCharge,
    max_over_budget: u64,
    floor_over: u64,
    min_limit: u64,
    /// The pool when it held the most pages (for the compression ratio: at the end it
    /// may hold a page or two).
    fullest: PoolStats,
}

impl ZramRun {
    /// Chooses how the pool is charged to `group`, says it on stderr and starts the
    /// charge at `budget` (the limit never below `floor`). Where the kernel could charge
    /// zswap (cgroup v2) the run still lowers the limit: this mode's swap is zram.
    pub(super) fn start(group: &Group, budget: u64, floor: u64, algorithm: &str) -> ZramRun {
        let mechanism = match Mechanism::choose(group) {
            Mechanism::KernelZswap => Mechanism::LimitLowered {
                why: "the process mode swaps to zram; zswap charged by the kernel is not \
                      wired into it"
                    .to_owned(),
            },
            m => m,
        };
        mechanism.announce(algorithm);
        ZramRun {
            algorithm: algorithm.to_owned(),
            charging: mechanism.describe(algorithm),
            budget,
            charge: ZramCharge::new(budget, floor, Path::new(swapdev::ZRAM_SYS)),
            max_over_budget: 0,
            floor_over: 0,
            min_limit: budget,
            fullest: PoolStats::default(),
        }
    }

    /// One tick, before the killer samples the group: usage plus pool as they are now
    /// (the bound's check), then the limit lowered (or raised) by the pool.
    pub(super) fn tick(&mut self, group: &Group) -> anyhow::Result<()> {
        let usage = group.usage()?;
        let tick = self.charge.tick(group)?;
        let over = (usage + tick.pool_bytes).saturating_sub(self.budget);
        self.max_over_budget = self.max_over_budget.max(over);
        self.floor_over = self.floor_over.max(tick.over_budget_bytes);
        self.min_limit = self.min_limit.min(tick.limit_bytes);
        let pool = PoolStats::read_zram(Path::new(swapdev::ZRAM_SYS))?;
        if pool.stored_bytes > self.fullest.stored_bytes {
            self.fullest = pool;
        }
        Ok(())
    }

    /// The pool's figures, read before the device goes.
    pub(super) fn figures(&self) -> anyhow::Result<ZramFigures> {
        let pool = PoolStats::read_zram(Path::new(swapdev::ZRAM_SYS))?;
        Ok(ZramFigures {
            algorithm: self.algorithm.clone(),
            charging: self.charging.clone(),
            compression_ratio: self.fullest.compression_ratio(),
            pool,
            max_over_budget_bytes: self.max_over_budget,
            largest_growth_bytes: self.charge.largest_growth(),
            floor_over_bytes: self.floor_over,
            refusals: self.charge.refusals(),
            min_limit_bytes: self.min_limit,
        })
    }
}
