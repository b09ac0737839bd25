//! A swap policy as data ([`PolicyConfig`]): its sections, every knob's default (the
//! published Marvin setting), and the [`SwapPolicy`] decisions it makes from them.

use std::time::Duration;

use marvin_runtime::ObjKind;
use serde::{Deserialize, Serialize};

use super::{duration_text, Compression, RestoreMode, SwapPolicy, VictimOrder};

/// Object kinds a policy file may name as candidates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CandidateKind {
    /// Class instances.
    Instance,
    /// Arrays of 64-bit integers.
    IntArray,
    /// Arrays of bytes.
    ByteArray,
    /// Arrays of references: never allowed (a stub would have to copy every element).
    RefArray,
}

impl CandidateKind {
    /// The runtime's kind.
    pub fn obj_kind(self) -> ObjKind {
        match self {
            CandidateKind::Instance => ObjKind::Instance,
            CandidateKind::IntArray => ObjKind::IntArray,
            CandidateKind::ByteArray => ObjKind::ByteArray,
            CandidateKind::RefArray => ObjKind::RefArray,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            CandidateKind::Instance => "instance",
            CandidateKind::IntArray => "int-array",
            CandidateKind::ByteArray => "byte-array",
            CandidateKind::RefArray => "ref-array",
        }
    }
}

/// How much the reclaimer takes from a victim per request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReclaimBatch {
    /// As much as the request asks for (written `"as-asked"`).
    AsAsked,
    /// At most this many bytes per request.
    Bytes(u64),
}

impl Serialize for ReclaimBatch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ReclaimBatch::AsAsked => s.serialize_str("as-asked"),
            ReclaimBatch::Bytes(n) => s.serialize_u64(*n),
        }
    }
}

impl<'de> Deserialize<'de> for ReclaimBatch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ReclaimBatch, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ReclaimBatch;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("\"as-asked\" or a number of bytes")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ReclaimBatch, E> {
                match v {
                    "as-asked" => Ok(ReclaimBatch::AsAsked),
                    _ => Err(E::custom(format!(
                        "expected \"as-asked\" or a number of bytes, found {v:?}"
                    ))),
                }
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ReclaimBatch, E> {
                u64::try_from(v)
                    .map(ReclaimBatch::Bytes)
                    .map_err(|_| E::custom(format!("a byte count cannot be negative ({v})")))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ReclaimBatch, E> {
                Ok(ReclaimBatch::Bytes(v))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// Which objects are candidates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CandidateConfig {
    /// Smallest candidate, in bytes (header included).
    pub min_size_bytes: u64,
    /// Kinds of object that may be candidates.
    pub kinds: Vec<CandidateKind>,
}

/// When an object is cold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ColdnessConfig {
    /// How many recent working-set rounds an object must not have been written in (1..=4).
    pub window_rounds: u8,
    /// Whether a cold object must also not have been read in those rounds.
    pub cold_requires_unread: bool,
}

/// A periodic task's periods.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SaverConfig {
    /// Period while the app is in the foreground.
    #[serde(with = "duration_text")]
    pub foreground_period: Duration,
    /// Period while the app is in the background.
    #[serde(with = "duration_text")]
    pub background_period: Duration,
    /// Longest time one run may take.
    #[serde(with = "duration_text")]
    pub budget: Duration,
    /// How checkpoints are stored: as they are, or compressed when that shrinks them.
    pub compress: Compression,
}

/// The working-set walk's periods.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkingSetConfig {
    /// Period while the app is in the foreground.
    #[serde(with = "duration_text")]
    pub foreground_period: Duration,
    /// Period while the app is in the background.
    #[serde(with = "duration_text")]
    pub background_period: Duration,
}

/// The reclaimer's choices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReclaimerConfig {
    /// Victim order.
    pub victim_order: VictimOrder,
    /// How much to take from one victim per request.
    pub batch_bytes: ReclaimBatch,
}

/// The default [`RestoreConfig::prefetch_bytes`]: 4 MiB, about three of the default
/// workload's frames' worth of faulted checkpoints.
pub const DEFAULT_LAUNCH_PREFETCH_BYTES: u64 = 4 << 20;
/// The most a policy may set [`RestoreConfig::prefetch_bytes`] to (256 MiB).
pub const MAX_LAUNCH_PREFETCH_BYTES: u64 = 256 << 20;

/// Restore's choice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RestoreConfig {
    /// Eager or on demand.
    pub mode: RestoreMode,
    /// Most bytes of the swap file one launch has asked for ahead of its faults and no
    /// fault has read yet (0: none); see [`SwapPolicy::launch_prefetch_bytes`].
    pub prefetch_bytes: u64,
    /// Smallest object (payload bytes) a fault brings back a run of pages at a time (0:
    /// every object whole); see [`SwapPolicy::page_restore_min_bytes`].
    pub page_min_bytes: u64,
}

/// Swap-file compaction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompactionConfig {
    /// Dead fraction above which the swap file is compacted, in (0, 1].
    pub threshold: f64,
}

/// A swap policy as data: every knob, with the published Marvin settings as defaults.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// `[candidates]`
    pub candidates: CandidateConfig,
    /// `[coldness]`
    pub coldness: ColdnessConfig,
    /// `[saver]`
    pub saver: SaverConfig,
    /// `[working_set]`
    pub working_set: WorkingSetConfig,
    /// `[reclaimer]`
    pub reclaimer: ReclaimerConfig,
    /// `[restore]`
    pub restore: RestoreConfig,
    /// `[compaction]`
    pub compaction: CompactionConfig,
    /// `[chunks]`
    pub chunks: crate::chunk_policy::ChunkConfig,
}

impl Default for CandidateConfig {
    fn default() -> Self {
        CandidateConfig {
            min_size_bytes: 2048,
            kinds: vec![
                CandidateKind::IntArray,
                CandidateKind::ByteArray,
                CandidateKind::Instance,
            ],
        }
    }
}

impl Default for ColdnessConfig {
    fn default() -> Self {
        ColdnessConfig {
            window_rounds: 4,
            cold_requires_unread: false,
        }
    }
}

impl Default for SaverConfig {
    fn default() -> Self {
        SaverConfig {
            foreground_period: Duration::from_secs(5),
            background_period: Duration::from_secs(30),
            budget: Duration::from_secs(1),
            compress: Compression::None,
        }
    }
}

impl Default for WorkingSetConfig {
    fn default() -> Self {
        WorkingSetConfig {
            foreground_period: Duration::from_secs(5),
            background_period: Duration::from_secs(30),
        }
    }
}

impl Default for ReclaimerConfig {
    fn default() -> Self {
        ReclaimerConfig {
            victim_order: VictimOrder::Lru,
            batch_bytes: ReclaimBatch::AsAsked,
        }
    }
}

impl Default for RestoreConfig {
    fn default() -> Self {
        RestoreConfig {
            mode: RestoreMode::Eager,
            prefetch_bytes: DEFAULT_LAUNCH_PREFETCH_BYTES,
            page_min_bytes: 0,
        }
    }
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig { threshold: 0.25 }
    }
}

impl SwapPolicy for PolicyConfig {
    fn is_candidate(&self, kind: ObjKind, size_bytes: usize) -> bool {
        kind != ObjKind::RefArray
            && size_bytes as u64 >= self.candidates.min_size_bytes
            && self.candidates.kinds.iter().any(|k| k.obj_kind() == kind)
    }

    fn is_cold(&self, read_history: u8, write_history: u8) -> bool {
        let window = (1u8 << self.coldness.window_rounds.clamp(1, 4)) - 1;
        write_history & window == 0
            && (!self.coldness.cold_requires_unread || read_history & window == 0)
    }

    fn saver_period(&self, foreground: bool) -> Duration {
        if foreground {
            self.saver.foreground_period
        } else {
            self.saver.background_period
        }
    }

    fn saver_budget(&self) -> Duration {
        self.saver.budget
    }

    fn working_set_period(&self, foreground: bool) -> Duration {
        if foreground {
            self.working_set.foreground_period
        } else {
            self.working_set.background_period
        }
    }

    fn victim_order(&self) -> VictimOrder {
        self.reclaimer.victim_order
    }

    fn reclaim_batch_bytes(&self, requested: u64) -> u64 {
        match self.reclaimer.batch_bytes {
            ReclaimBatch::AsAsked => requested,
            ReclaimBatch::Bytes(n) => requested.min(n),
        }
    }

    fn restore_mode(&self) -> RestoreMode {
        self.restore.mode
    }

    fn compression(&self) -> Compression {
        self.saver.compress
    }

    fn launch_prefetch_bytes(&self) -> u64 {
        self.restore.prefetch_bytes
    }

    fn page_restore_min_bytes(&self) -> usize {
        self.restore.page_min_bytes as usize
    }

    fn compaction_threshold(&self) -> f64 {
        self.compaction.threshold
    }

    fn chunks(&self) -> crate::chunk_policy::ChunkConfig {
        self.chunks.clone()
    }
}
