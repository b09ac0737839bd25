//! The `[chunks]` section of a swap policy: whether cold small objects are packed into
//! page-aligned chunks that are saved and reclaimed as one object, and how.

use serde::{Deserialize, Serialize};

use marvin_runtime::{LARGE_OBJECT_BYTES, PAGE};

/// Largest chunk: a chunk is one byte-array object, and a launch that touches one member
/// brings the whole chunk back.
pub const MAX_CHUNK_BYTES: u64 = 4 << 20;

/// `[chunks]`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChunkConfig {
    /// Pack cold small objects into chunks at all. Off by default.
    pub enabled: bool,
    /// Bytes of one chunk (a multiple of the page size, from 4096 to 4 MiB).
    pub chunk_bytes: u64,
    /// A small object is packed once it was neither read nor written in this many recent
    /// working-set rounds (1 to 4).
    pub cold_rounds: u8,
    /// Keep out objects read in any of the four recorded rounds (the launch set: what
    /// the app's last launch read), however short `cold_rounds` is.
    pub exclude_launch_set: bool,
    /// A resident chunk is rebuilt without its dead members once they pass this share of
    /// its bytes, in (0, 1].
    pub compact_dead_share: f64,
}

impl Default for ChunkConfig {
    fn default() -> Self {
        ChunkConfig {
            enabled: false,
            chunk_bytes: 64 << 10,
            cold_rounds: 4,
            exclude_launch_set: true,
            compact_dead_share: 0.5,
        }
    }
}

impl ChunkConfig {
    /// Checks every range; the error names the key.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let b = self.chunk_bytes;
        if b < PAGE as u64 || b > MAX_CHUNK_BYTES || !b.is_multiple_of(PAGE as u64) {
            return Err((
                "chunks.chunk_bytes",
                format!("must be a multiple of {PAGE} from {PAGE} to {MAX_CHUNK_BYTES}, found {b}"),
            ));
        }
        if !(1..=4).contains(&self.cold_rounds) {
            return Err((
                "chunks.cold_rounds",
                format!(
                    "must be from 1 to 4 (each object keeps a 4-round history), found {}",
                    self.cold_rounds
                ),
            ));
        }
        let t = self.compact_dead_share;
        if !(t > 0.0 && t <= 1.0) {
            return Err((
                "chunks.compact_dead_share",
                format!("must be in (0, 1], found {t}"),
            ));
        }
        Ok(())
    }

    /// Whether a small object with these access histories (4 bits each, bit 0 the most
    /// recent round) and current access bits goes into a chunk; `Some(rounds)` says for
    /// how many recorded rounds it has been cold (its group), `None` keeps it out.
    pub fn coldness(&self, read_history: u8, write_history: u8, accessed_now: bool) -> Option<u8> {
        if accessed_now || (self.exclude_launch_set && read_history & 0xf != 0) {
            return None;
        }
        let any = read_history | write_history;
        let rounds = (1..=4u8)
            .rev()
            .find(|&k| any & ((1 << k) - 1) == 0)
            .unwrap_or(0);
        (rounds >= self.cold_rounds).then_some(rounds)
    }

    /// The section as `marvin policy show` prints it, every key documented.
    pub fn to_toml_section(&self) -> String {
        format!(
            r#"
[chunks]
# Pack small objects (under {large} bytes, which are never stubbed) that stayed cold into
# page-aligned chunks, each saved and reclaimed as one object, with the collector keeping
# each member's references so that it never faults a chunk in. Not in Marvin: false.
enabled = {enabled}
# Bytes of one chunk: a multiple of {page} from {page} to {max}. Not in Marvin: 65536.
chunk_bytes = {bytes}
# A small object is packed once neither read nor written in this many recent working-set
# rounds (1 to 4). Not in Marvin: 4.
cold_rounds = {rounds}
# Keep out objects read in any of the four recorded rounds (what the last launch read).
# Not in Marvin: true.
exclude_launch_set = {launch}
# Rebuild a resident chunk without its dead members once they pass this share of its
# bytes, in (0, 1]. Not in Marvin: 0.5.
compact_dead_share = {share:?}
"#,
            large = LARGE_OBJECT_BYTES,
            page = PAGE,
            max = MAX_CHUNK_BYTES,
            enabled = self.enabled,
            bytes = self.chunk_bytes,
            rounds = self.cold_rounds,
            launch = self.exclude_launch_set,
            share = self.compact_dead_share,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PolicyConfig;

    fn key_error(text: &str) -> String {
        match PolicyConfig::from_toml_str(text) {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn chunks_are_off_by_default_and_shown_with_every_key() {
        let p = PolicyConfig::default();
        assert!(!p.chunks.enabled);
        let shown = p.to_toml_string();
        for key in [
            "[chunks]",
            "enabled = false",
            "chunk_bytes = 65536",
            "cold_rounds = 4",
            "exclude_launch_set = true",
            "compact_dead_share = 0.5",
        ] {
            assert!(shown.contains(key), "{key} missing from:\n{shown}");
        }
        let on = PolicyConfig::from_toml_str(
            "[chunks]\nenabled = true\nchunk_bytes = 8192\ncold_rounds = 2\n",
        )
        .unwrap();
        assert!(on.chunks.enabled);
        assert_eq!(on.chunks.chunk_bytes, 8192);
        assert_eq!(
            PolicyConfig::from_toml_str(&on.to_toml_string()).unwrap(),
            on
        );
    }

    #[test]
    fn bad_chunk_keys_are_errors_naming_the_key() {
        for (text, key) in [
            ("[chunks]\nchunk_bytes = 5000", "chunks.chunk_bytes"),
            ("[chunks]\nchunk_bytes = 0", "chunks.chunk_bytes"),
            ("[chunks]\nchunk_bytes = 8388608", "chunks.chunk_bytes"),
            ("[chunks]\ncold_rounds = 0", "chunks.cold_rounds"),
            ("[chunks]\ncold_rounds = 5", "chunks.cold_rounds"),
            (
                "[chunks]\ncompact_dead_share = 0.0",
                "chunks.compact_dead_share",
            ),
            (
                "[chunks]\ncompact_dead_share = 1.5",
                "chunks.compact_dead_share",
            ),
        ] {
            let e = key_error(text);
            assert!(e.contains(key), "{text}: {e}");
        }
        assert!(key_error("[chunks]\nsize = 1").contains("size"));
    }

    #[test]
    fn coldness_follows_the_window_and_the_launch_set() {
        let c = ChunkConfig {
            cold_rounds: 2,
            ..ChunkConfig::default()
        };
        assert_eq!(c.coldness(0, 0, false), Some(4));
        assert_eq!(c.coldness(0, 0, true), None);
        assert_eq!(c.coldness(0, 0b0100, false), Some(2));
        assert_eq!(c.coldness(0, 0b0010, false), None);
        // Read three rounds ago: cold for two rounds, but in the launch set.
        assert_eq!(c.coldness(0b0100, 0, false), None);
        let c = ChunkConfig {
            exclude_launch_set: false,
            ..c
        };
        assert_eq!(c.coldness(0b0100, 0, false), Some(2));
    }
}
