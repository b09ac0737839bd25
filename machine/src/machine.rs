//! Everything one run sets up on the machine, in order, and takes down in reverse: the
//! stop-signal handlers, the start-up sweeps of what dead runs left, the run's swap
//! (none, a swap file or zram) and its memory cgroup. Dropping a [`Machine`] removes
//! the group first (its processes die, so nothing is read back from swap into a live
//! group) and then the swap.

use std::path::PathBuf;
use std::sync::Arc;

use super::cgroup::{Group, Hierarchy, Limits, Version};
use super::error::Result;
use super::machine_lock::MachineLock;
use super::swapdev::{self, SwapDevice};
use super::{memstat, signals, sys};

/// The swap a run gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SwapChoice {
    None,
    /// A swap file of `bytes` in `dir`.
    File {
        dir: PathBuf,
        bytes: u64,
    },
    /// `/dev/zram0` with `bytes` of uncompressed capacity (its memory is not charged
    /// to the cgroup).
    Zram {
        bytes: u64,
        /// The compression algorithm (checked against the device's list); `None`: the
        /// kernel's default.
        algorithm: Option<String>,
    },
}

/// What to set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineConfig {
    pub limits: Limits,
    pub swap: SwapChoice,
    /// Where zram ownership markers live ([`swapdev::default_state_dir`]).
    pub state_dir: PathBuf,
}

/// A run's machine-wide state. Field order is drop order: the group before the swap.
pub struct Machine {
    group: Group,
    swap: Option<SwapDevice>,
    /// `/proc/vmstat` swap-in/out pages when the run started (v1 has no per-group
    /// counts).
    vmstat_at_start: (u64, u64),
    /// What the start-up sweeps removed.
    swept: Vec<PathBuf>,
    /// The machine, held from before the sweeps until the swap is off (dropped last).
    _lock: Arc<MachineLock>,
}

/// Swap traffic of a run, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwapTraffic {
    pub swap_in_bytes: u64,
    pub swap_out_bytes: u64,
    /// Whether the counts are the group's own (v2) or the machine's over the run (v1).
    pub per_group: bool,
}

impl Machine {
    /// Checks for root and a memory controller, installs the stop-signal handlers, sweeps
    /// what dead runs left, then creates the swap and the group; `lock` is the caller's
    /// hold on the machine, kept until the swap is off.
    pub fn set_up(cfg: &MachineConfig, lock: Arc<MachineLock>) -> Result<Machine> {
        let hierarchy = Hierarchy::available()?;
        signals::install().map_err(|e| super::HostError::io("installing", "signal handlers", e))?;
        // Frozen groups first: a task frozen by cgroup v1's freezer does not die of the
        // SIGKILL that removing its memory group sends.
        let mut swept = super::freezer::sweep(Some(&hierarchy.parent))?;
        swept.extend(hierarchy.sweep()?);
        let file_dirs: Vec<&std::path::Path> = match &cfg.swap {
            SwapChoice::File { dir, .. } => vec![dir.as_path()],
            _ => Vec::new(),
        };
        swept.extend(swapdev::sweep(&cfg.state_dir, &file_dirs)?);
        swept.extend(super::zswap_charge::sweep_zswap(&cfg.state_dir)?);
        let swap = match &cfg.swap {
            SwapChoice::None => None,
            SwapChoice::File { dir, bytes } => Some(SwapDevice::enable_file(
                dir,
                *bytes,
                Some(swapdev::RUN_PRIORITY),
            )?),
            SwapChoice::Zram { bytes, algorithm } => Some(SwapDevice::enable_zram_with(
                &cfg.state_dir,
                *bytes,
                algorithm.as_deref(),
                Some(swapdev::RUN_PRIORITY),
            )?),
        };
        let vmstat_at_start = memstat::machine_swap_pages()
            .map_err(|e| super::HostError::io("reading", "/proc/vmstat", e))?;
        // If creating the group fails, `swap` is dropped here and removed.
        let group = hierarchy.create(&cfg.limits)?;
        Ok(Machine {
            group,
            swap,
            vmstat_at_start,
            swept,
            _lock: lock,
        })
    }

    pub fn group(&self) -> &Group {
        &self.group
    }

    pub fn swap(&self) -> Option<&SwapDevice> {
        self.swap.as_ref()
    }

    /// What the start-up sweeps removed.
    pub fn swept(&self) -> &[PathBuf] {
        &self.swept
    }

    /// Swap-ins and swap-outs so far: the group's own on v2 kernels that count them,
    /// else the machine's since the run started.
    pub fn swap_traffic(&self) -> Result<SwapTraffic> {
        let page = sys::page_size();
        let stat = self.group.stat()?;
        if let (Version::V2, Some(i), Some(o)) = (self.group.version(), stat.pswpin, stat.pswpout) {
            return Ok(SwapTraffic {
                swap_in_bytes: i * page,
                swap_out_bytes: o * page,
                per_group: true,
            });
        }
        let (i, o) = memstat::machine_swap_pages()
            .map_err(|e| super::HostError::io("reading", "/proc/vmstat", e))?;
        Ok(SwapTraffic {
            swap_in_bytes: i.saturating_sub(self.vmstat_at_start.0) * page,
            swap_out_bytes: o.saturating_sub(self.vmstat_at_start.1) * page,
            per_group: false,
        })
    }

    /// Removes the group, then the swap, returning the first error.
    pub fn tear_down(self) -> Result<()> {
        let Machine { group, swap, .. } = self;
        let g = group.remove();
        let s = swap.map(SwapDevice::remove).unwrap_or(Ok(()));
        g.and(s)
    }
}
