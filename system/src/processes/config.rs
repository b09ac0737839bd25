//! What the process mode adds to the shared settings ([`ProcessConfig`]) and what it
//! does between policies ([`SettleMode`]).

use std::path::PathBuf;
use std::sync::Arc;

use marvin_machine::swapdev;
use marvin_swap::PolicyConfig;

use crate::SystemConfig;

/// What the process mode adds to the shared settings.
#[derive(Clone, Debug)]
pub struct ProcessConfig {
    /// The machine, held by the experiment from before its sweep to its last policy's
    /// end ([`crate::guardian::take_machine`]).
    pub machine: Arc<marvin_machine::MachineLock>,
    pub system: SystemConfig,
    /// The program apps are started with (`marvin`).
    pub exe: PathBuf,
    /// The workload and its resolved defines.
    pub workload: PathBuf,
    pub defines: Vec<(String, i64)>,
    /// Marvin's swap policy, already scaled.
    pub policy: Arc<PolicyConfig>,
    /// The kernel-swap policy's swap device.
    pub swap_device: swapdev::Kind,
    /// Its size.
    pub swap_bytes: u64,
    /// The `zram` policy's compression algorithm (`--zram-algorithm`).
    pub zram_algorithm: String,
    /// The killer's headroom below the limit.
    pub headroom: u64,
    /// What is done before each policy starts (`--settle`).
    pub settle: SettleMode,
}

/// What the runner does between policies so that each starts from the same machine
/// state (see [`marvin_machine::settle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettleMode {
    /// Nothing: a policy starts right after the one before it.
    Off,
    /// `sync`, then wait (bounded) until the disks are at rest.
    Wait,
    /// As `Wait`, then drop the machine's clean page cache.
    DropCaches,
}

impl ProcessConfig {
    /// The default headroom: 1/16 of the limit, at least 4 MiB.
    pub fn default_headroom(limit: u64) -> u64 {
        (limit / 16).max(4 << 20)
    }
}
