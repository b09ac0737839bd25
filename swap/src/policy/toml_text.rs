//! A policy's TOML form: read from a file or text ([`PolicyConfig::from_file`]), its errors
//! naming the file and the key ([`PolicyError`]), and written back with every key
//! documented ([`PolicyConfig::to_toml_string`], what `marvin policy show` prints).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Compression, PolicyConfig, ReclaimBatch, RestoreMode, VictimOrder};

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
        let bytes = std::fs::read(path).map_err(|source| PolicyError::Io {
            path: path.to_owned(),
            source,
        })?;
        let origin = path.display().to_string();
        // Read, but not text: a bad policy file (named), not an unreadable one.
        let text = String::from_utf8(bytes).map_err(|e| PolicyError::Syntax {
            origin: origin.clone(),
            message: format!(
                "is not UTF-8 text (byte {} is not valid UTF-8)",
                e.utf8_error().valid_up_to()
            ),
        })?;
        PolicyConfig::parse(&text, &origin)
    }

    pub(super) fn parse(text: &str, origin: &str) -> Result<PolicyConfig, PolicyError> {
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
{chunks}"#,
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
            chunks = self.chunks.to_toml_section(),
        )
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
