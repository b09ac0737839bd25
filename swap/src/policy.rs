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

mod duration_text;

use std::path::{Path, PathBuf};
use std::time::Duration;

use marvin_runtime::ObjKind;
use serde::{Deserialize, Serialize};

pub use crate::swap_file::Compression;

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

    fn name(self) -> &'static str {
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
/// The largest [`RestoreConfig::page_min_bytes`]: the largest checkpoint.
const MAX_PAYLOAD_BYTES: u64 = crate::swap_file::layout::MAX_PAYLOAD as u64;
/// The longest period (and saver budget) a policy may set: a day. A longer one never
/// comes round in an experiment, and every `--time-scale` a run accepts keeps it
/// representable.
pub const MAX_PERIOD: Duration = Duration::from_secs(24 * 60 * 60);

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

/// A policy could not be read, or holds a bad value.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The policy file could not be read.
    #[error("cannot read policy file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A key is unknown, has the wrong type, or is out of range.
    #[error("policy {origin}: key `{key}`: {message}")]
    Key {
        /// Where the policy came from (a file, or "text").
        origin: String,
        /// The key's dotted path, e.g. `saver.budget`.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// The document is not valid TOML, or the error could not be tied to a key.
    #[error("policy {origin}: {message}")]
    Syntax {
        /// Where the policy came from.
        origin: String,
        /// The parser's message, with its line and column.
        message: String,
    },
    /// `scaled` was given a factor that is not a positive, finite number, or that makes a
    /// duration unrepresentable.
    #[error("time scale {scale} is not usable{}: {reason}", key.map(|k| format!(" for `{k}`")).unwrap_or_default())]
    BadScale {
        /// The factor.
        scale: f64,
        /// The period it could not scale, if it was one period.
        key: Option<&'static str>,
        /// Why.
        reason: String,
    },
}

impl PolicyConfig {
    /// Reads a policy from TOML text; missing keys keep their defaults.
    pub fn from_toml_str(text: &str) -> Result<PolicyConfig, PolicyError> {
        PolicyConfig::parse(text, "text")
    }

    /// Reads a policy file.
    pub fn from_file(path: &Path) -> Result<PolicyConfig, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
            path: path.to_owned(),
            source,
        })?;
        PolicyConfig::parse(&text, &path.display().to_string())
    }

    fn parse(text: &str, origin: &str) -> Result<PolicyConfig, PolicyError> {
        let config: PolicyConfig =
            toml::from_str(text).map_err(|e| toml_error(text, origin, &e))?;
        config
            .validate()
            .map_err(|(key, message)| PolicyError::Key {
                origin: origin.to_string(),
                key: key.to_string(),
                message,
            })?;
        Ok(config)
    }

    /// Checks every range; the error names the key.
    fn validate(&self) -> Result<(), (&'static str, String)> {
        let large = marvin_runtime::LARGE_OBJECT_BYTES as u64;
        if self.candidates.min_size_bytes < large {
            return Err((
                "candidates.min_size_bytes",
                format!(
                    "must be at least {large}, found {}: objects under {large} bytes live in \
                     the small-object space, which is never stubbed or swapped",
                    self.candidates.min_size_bytes
                ),
            ));
        }
        if self.candidates.kinds.contains(&CandidateKind::RefArray) {
            return Err((
                "candidates.kinds",
                "reference arrays are never swap candidates".into(),
            ));
        }
        if !(1..=4).contains(&self.coldness.window_rounds) {
            let found = self.coldness.window_rounds;
            return Err((
                "coldness.window_rounds",
                format!("must be 1 to 4 (the history holds 4 rounds), found {found}"),
            ));
        }
        let periods = [
            ("saver.foreground_period", self.saver.foreground_period),
            ("saver.background_period", self.saver.background_period),
            ("saver.budget", self.saver.budget),
            (
                "working_set.foreground_period",
                self.working_set.foreground_period,
            ),
            (
                "working_set.background_period",
                self.working_set.background_period,
            ),
        ];
        for (key, d) in periods {
            if d.is_zero() {
                return Err((key, "must be longer than zero".into()));
            }
            if d > MAX_PERIOD {
                return Err((
                    key,
                    format!(
                        "must be at most 24h (a longer period never comes round in a run), found {}",
                        marvin_runtime::duration::format(d)
                    ),
                ));
            }
        }
        if self.reclaimer.batch_bytes == ReclaimBatch::Bytes(0) {
            return Err((
                "reclaimer.batch_bytes",
                "must be more than zero bytes (or \"as-asked\")".into(),
            ));
        }
        if self.restore.prefetch_bytes > MAX_LAUNCH_PREFETCH_BYTES {
            return Err((
                "restore.prefetch_bytes",
                format!(
                    "must be at most {MAX_LAUNCH_PREFETCH_BYTES}, found {}",
                    self.restore.prefetch_bytes
                ),
            ));
        }
        let page_min = self.restore.page_min_bytes;
        let sums_min = crate::swap_file::page_sums::PAGE_SUMS_MIN_BYTES as u64;
        if page_min != 0 && !(sums_min..=MAX_PAYLOAD_BYTES).contains(&page_min) {
            return Err((
                "restore.page_min_bytes",
                format!(
                    "must be 0 (off) or {sums_min} to {MAX_PAYLOAD_BYTES}, found {page_min}: \
                     smaller checkpoints keep no checksum per page"
                ),
            ));
        }
        let t = self.compaction.threshold;
        if !(t > 0.0 && t <= 1.0) {
            return Err((
                "compaction.threshold",
                format!("must be in (0, 1], found {t}"),
            ));
        }
        Ok(())
    }

    /// The same policy with every period and the saver's budget multiplied by `time_scale`
    /// (0.1 runs an experiment's clocks ten times faster).
    pub fn scaled(&self, time_scale: f64) -> Result<PolicyConfig, PolicyError> {
        if !(time_scale.is_finite() && time_scale > 0.0) {
            return Err(PolicyError::BadScale {
                scale: time_scale,
                key: None,
                reason: "it must be a positive, finite number".into(),
            });
        }
        let scale = |key: &'static str, d: Duration| -> Result<Duration, PolicyError> {
            let scaled =
                Duration::try_from_secs_f64(d.as_secs_f64() * time_scale).map_err(|e| {
                    PolicyError::BadScale {
                        scale: time_scale,
                        key: Some(key),
                        reason: format!(
                            "{} times {time_scale}: {e}",
                            marvin_runtime::duration::format(d)
                        ),
                    }
                })?;
            // A period never scales down to zero: that would be a busy loop.
            Ok(scaled.max(Duration::from_nanos(1)))
        };
        let mut out = self.clone();
        out.saver.foreground_period =
            scale("saver.foreground_period", self.saver.foreground_period)?;
        out.saver.background_period =
            scale("saver.background_period", self.saver.background_period)?;
        out.saver.budget = scale("saver.budget", self.saver.budget)?;
        out.working_set.foreground_period = scale(
            "working_set.foreground_period",
            self.working_set.foreground_period,
        )?;
        out.working_set.background_period = scale(
            "working_set.background_period",
            self.working_set.background_period,
        )?;
        Ok(out)
    }

    /// The policy as a TOML document in which every key is documented (what
    /// `marvin policy show` prints); it parses back to an equal policy.
    pub fn to_toml_string(&self) -> String {
        let kinds: Vec<String> = self
            .candidates
            .kinds
            .iter()
            .map(|k| format!("\"{}\"", k.name()))
            .collect();
        let batch = match self.reclaimer.batch_bytes {
            ReclaimBatch::AsAsked => "\"as-asked\"".to_string(),
            ReclaimBatch::Bytes(n) => n.to_string(),
        };
        let d = |v: Duration| format!("\"{}\"", marvin_runtime::duration::format(v));
        format!(
            r#"# marvin swap policy. Durations are strings with a unit: ns, us, ms, s, m or h ("5s",
# "1500ms", "0.5s"; see "Durations" in docs/experiments.md). Keys left out keep the values
# shown here for the published Marvin setting; unknown keys are errors.

[candidates]
# Smallest object (header included, in bytes) that may be stubbed and swapped: at least
# 2048, the large-object threshold (smaller objects are never stubbed). Marvin: 2048.
min_size_bytes = {min_size}
# Kinds of object that may be candidates: "instance", "int-array", "byte-array".
# Reference arrays ("ref-array") are never candidates. Marvin: all three.
kinds = [{kinds}]

[coldness]
# An object is cold when it was not written in this many recent working-set rounds (1 to 4;
# each object keeps a 4-round history). Marvin: 4.
window_rounds = {window}
# Whether a cold object must also not have been read in those rounds. Marvin: false.
cold_requires_unread = {unread}

[saver]
# How often the saver writes checkpoints of cold, dirty candidates, per app state.
# Marvin: every 5s in the foreground, every 30s in the background.
foreground_period = {saver_fg}
background_period = {saver_bg}
# Longest time one saver run may take; the rest waits for the next period. Marvin: 1s.
budget = {budget}
# How checkpoints are stored: "none" (as they are; Marvin) or "lz4" (one LZ4 block when
# that saves at least an eighth of the object's bytes, so restores read fewer bytes).
compress = {compress}

[working_set]
# How often the working-set walk shifts each object's access bits into its history.
# Marvin: every 5s in the foreground, every 30s in the background.
foreground_period = {ws_fg}
background_period = {ws_bg}

[reclaimer]
# Which background app gives memory first: "lru" (left the foreground longest ago;
# Marvin) or "largest-first" (most reclaimable bytes). The foreground app never does.
victim_order = {victim}
# Most bytes taken from one victim per request: "as-asked" (Marvin) or a byte count.
batch_bytes = {batch}

[restore]
# "eager": read all of an app's reclaimed objects back when it returns to the foreground
# (Marvin); "on-demand": read each back at its first access (an object fault).
mode = {restore}
# Most bytes of the swap file one launch has read ahead of its faults into the page cache
# and no fault has used yet (what the faults use is given back; the rest is dropped after
# its frame); 0 turns it off. Not in Marvin: 4194304.
prefetch_bytes = {prefetch}
# Smallest object (payload bytes) an object fault brings back a run of pages at a time, its
# other pages coming back when first touched, as the kernel swaps pages in: at least 65536,
# or 0 for every object whole. Not in Marvin: 0.
page_min_bytes = {page_min}

[compaction]
# Compact the swap file when its dead bytes exceed this fraction of it, in (0, 1].
# Marvin: 0.25.
threshold = {threshold:?}
"#,
            min_size = self.candidates.min_size_bytes,
            kinds = kinds.join(", "),
            window = self.coldness.window_rounds,
            unread = self.coldness.cold_requires_unread,
            saver_fg = d(self.saver.foreground_period),
            saver_bg = d(self.saver.background_period),
            budget = d(self.saver.budget),
            compress = match self.saver.compress {
                Compression::None => "\"none\"",
                Compression::Lz4 => "\"lz4\"",
            },
            ws_fg = d(self.working_set.foreground_period),
            ws_bg = d(self.working_set.background_period),
            victim = match self.reclaimer.victim_order {
                VictimOrder::Lru => "\"lru\"",
                VictimOrder::LargestFirst => "\"largest-first\"",
            },
            batch = batch,
            restore = match self.restore.mode {
                RestoreMode::Eager => "\"eager\"",
                RestoreMode::OnDemand => "\"on-demand\"",
            },
            prefetch = self.restore.prefetch_bytes,
            page_min = self.restore.page_min_bytes,
            threshold = self.compaction.threshold,
        )
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
}

/// Turns toml's error into one that names the key: from the error's span, the key on that
/// line and the table header above it.
fn toml_error(text: &str, origin: &str, e: &toml::de::Error) -> PolicyError {
    let located = e
        .span()
        .and_then(|span| Some((key_at(text, span.start)?, span.start)));
    match located {
        Some((key, at)) => {
            let line = text[..at.min(text.len())].matches('\n').count() + 1;
            let message = format!("{} (line {line})", e.message().trim());
            PolicyError::Key {
                origin: origin.to_string(),
                key,
                message,
            }
        }
        None => PolicyError::Syntax {
            origin: origin.to_string(),
            message: e.to_string().trim().to_string(),
        },
    }
}

/// The dotted path of the key whose line holds byte `at`, if that line is `key = value`.
fn key_at(text: &str, at: usize) -> Option<String> {
    let at = at.min(text.len());
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = &text[line_start..line_end];
    let mut table = None;
    for previous in text[..line_start].lines().rev() {
        let t = previous.trim();
        if t.starts_with('[') {
            table = Some(t.trim_matches(|c| c == '[' || c == ']').trim().to_string());
            break;
        }
    }
    let trimmed = line.trim();
    if trimmed.starts_with('[') {
        // An error on a table header: the table itself is the key.
        return Some(
            trimmed
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string(),
        );
    }
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches('"');
    if key.is_empty() {
        return None;
    }
    Some(match table {
        Some(table) => format!("{table}.{key}"),
        None => key.to_string(),
    })
}

#[cfg(test)]
mod tests;
