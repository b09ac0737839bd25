//! What the subprocess tests of swapping (`memory_swap.rs`, `swap_safety.rs`) share: the
//! programs and quick-cold policy of `tests/memory/`, and a reader of a swap file's live
//! checkpoints.

use std::path::{Path, PathBuf};

use marvin_swap::{SlotHeader, SlotState, FILE_HEADER_BYTES, SLOT_HEADER_BYTES};

/// A policy under which arrays are cold a fraction of a second after their last write
/// (fast working-set rounds, a one-round window), so the reclaims take them.
pub const QUICK_COLD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/memory/quick_cold.toml");

/// A program of `tests/memory/`.
pub fn program(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/memory")
        .join(name)
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The live checkpoints at the start of a swap file (slots written in order), with their
/// offsets; none when the file cannot be read.
pub fn live_checkpoints(path: &Path) -> Vec<(u64, SlotHeader)> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let mut at = FILE_HEADER_BYTES;
    let mut live = Vec::new();
    while let Some(raw) = bytes.get(at as usize..(at + SLOT_HEADER_BYTES) as usize) {
        match SlotHeader::decode(raw) {
            Ok(h) if h.state == SlotState::Live => {
                live.push((at, h));
                at += SLOT_HEADER_BYTES + h.capacity as u64;
            }
            _ => break,
        }
    }
    live
}
