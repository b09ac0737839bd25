//! Swap policies: the decisions the saver, the reclaimer and restore consult, as a trait
//! ([`SwapPolicy`]) and as data ([`PolicyConfig`], read from and written to TOML).
//!
//! [`PolicyConfig::default`] is the published Marvin setting: objects of at least 2048 bytes
//! that are instances or int/byte arrays (never reference arrays) are candidates; an object
//! is cold when it was not written in the last 4 working-set rounds; the saver runs every 5 s
//! in the foreground and 30 s in the background, each run bounded to 1 s; the working-set
//! walk runs at the same periods; the reclaimer takes the least recently used background app
//! first, as much as it is asked for; restore is eager; the swap file is compacted when
//! more than 25% of it is dead.
//!
//! A policy file is a TOML document with the sections of [`PolicyConfig::to_toml_string`]
//! (which documents every key). Keys left out keep their default; unknown keys, wrong types
//! and out-of-range values are errors that name the key.
//!
//! The module is split by job: the trait and what it speaks of (here), the policy as data
//! and its defaults ([`config`]), its range checks and time scaling (`checks`), and its
//! TOML form, read with errors that name the key and written with every key documented
//! (`toml_text`).

mod checks;
mod config;
mod duration_text;
mod toml_text;

use std::time::Duration;

use marvin_runtime::ObjKind;
use serde::{Deserialize, Serialize};

pub use crate::swap_file::Compression;
pub use checks::{MAX_PERIOD, MIN_PERIOD};
pub use config::{
    CandidateConfig, CandidateKind, ColdnessConfig, CompactionConfig, PolicyConfig, ReclaimBatch,
    ReclaimerConfig, RestoreConfig, SaverConfig, WorkingSetConfig, DEFAULT_LAUNCH_PREFETCH_BYTES,
    MAX_LAUNCH_PREFETCH_BYTES,
};
pub use toml_text::PolicyError;

/// Which background app the reclaimer takes memory from first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VictimOrder {
    /// The app that left the foreground longest ago (Marvin's choice).
    Lru,
    /// The app with the most reclaimable bytes.
    LargestFirst,
}

/// When reclaimed objects are read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RestoreMode {
    /// All of an app's reclaimed objects, when it returns to the foreground, before its UI runs.
    Eager,
    /// Each object on its first access (an object fault).
    OnDemand,
}

/// An app as the reclaimer sees it when choosing a victim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppStanding {
    /// The caller's id for the app.
    pub app: u32,
    /// Whether it is in the foreground (never a victim).
    pub foreground: bool,
    /// When it last left the foreground, on any clock that grows (smaller = longer ago).
    pub last_foreground: u64,
    /// Bytes the reclaimer could take from it now.
    pub reclaimable_bytes: u64,
}

/// The decisions the swap mechanisms consult. [`PolicyConfig`] implements it from data; an
/// experiment may implement it in code.
pub trait SwapPolicy: Send + Sync + std::fmt::Debug {
    /// Whether an object of `kind` and `size_bytes` (its whole footprint) may be stubbed and
    /// swapped at all.
    fn is_candidate(&self, kind: ObjKind, size_bytes: usize) -> bool;

    /// Whether an object is cold, from its 4-bit access history registers (bit 0 = the most
    /// recent working-set round).
    fn is_cold(&self, read_history: u8, write_history: u8) -> bool;

    /// How often the saver runs for an app in the foreground or in the background.
    fn saver_period(&self, foreground: bool) -> Duration;

    /// How long one saver run may take before it stops until its next period.
    fn saver_budget(&self) -> Duration;

    /// How often the working-set walk runs for an app in the foreground or the background.
    fn working_set_period(&self, foreground: bool) -> Duration;

    /// How victims are ordered.
    fn victim_order(&self) -> VictimOrder;

    /// The apps to take memory from, best victim first; foreground apps are never included.
    fn victims(&self, apps: &[AppStanding]) -> Vec<AppStanding> {
        let mut victims: Vec<AppStanding> =
            apps.iter().copied().filter(|a| !a.foreground).collect();
        match self.victim_order() {
            VictimOrder::Lru => victims.sort_by_key(|a| (a.last_foreground, a.app)),
            VictimOrder::LargestFirst => victims.sort_by_key(|a| {
                (
                    std::cmp::Reverse(a.reclaimable_bytes),
                    a.last_foreground,
                    a.app,
                )
            }),
        }
        victims
    }

    /// How many bytes to take from one victim when `requested` bytes are asked for.
    fn reclaim_batch_bytes(&self, requested: u64) -> u64;

    /// When reclaimed objects are read back.
    fn restore_mode(&self) -> RestoreMode;

    /// How the saver stores checkpoints (as they are unless a policy says otherwise).
    fn compression(&self) -> Compression {
        Compression::None
    }

    /// Most bytes of the swap file a launch (from the foreground transition until its
    /// frame) has asked the page cache for ahead of its faults and no fault has read yet,
    /// so that the frame's reads are in flight at once instead of one after another
    /// (0: none). What the faults read of it is given back, so a launch whose faults
    /// follow its prefetch is read ahead all the way.
    fn launch_prefetch_bytes(&self) -> u64 {
        0
    }

    /// The smallest object (payload bytes, references none) an object fault brings back a
    /// run of pages at a time, its other pages coming back on first touch
    /// ([`crate::page_restore`]); 0: every object comes back whole.
    fn page_restore_min_bytes(&self) -> usize {
        0
    }

    /// The fraction of dead bytes in the swap file above which it is compacted.
    fn compaction_threshold(&self) -> f64;

    /// Cold chunks of small objects (off unless the policy turns them on).
    fn chunks(&self) -> crate::chunk_policy::ChunkConfig {
        crate::chunk_policy::ChunkConfig::default()
    }
}

#[cfg(test)]
mod tests;
