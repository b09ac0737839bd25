//! The app's side of cold chunks: the chunking pass at a background transition (with the
//! world stopped, right after stubbing) and the chunk figures of `--stats`.

use std::sync::atomic::Ordering;

use serde::Serialize;

use marvin_runtime::ChunkError;
use marvin_runtime::Heap;
use marvin_swap::ChunkPassReport;

use crate::app::App;

/// What cold chunks hold and did, in the stats (separate from the per-object figures).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct ChunkStats {
    /// Chunks alive now, their live small objects and those objects' bytes.
    pub chunks: u64,
    pub chunk_objects: u64,
    pub chunk_object_bytes: u64,
    /// Small-object bytes in chunks whose checkpoint is current.
    pub small_bytes_saved: u64,
    /// Small-object bytes in chunks whose pages are returned to the OS.
    pub small_bytes_reclaimed: u64,
    /// Small objects ever moved into chunks, and their bytes.
    pub objects_chunked: u64,
    pub bytes_chunked: u64,
    /// Accesses that found their chunk out and brought it back, and the chunks' bytes.
    pub chunk_faults: u64,
    pub chunk_fault_bytes: u64,
    /// Chunks rebuilt without their dead members.
    pub chunk_compactions: u64,
    /// Bytes of whole small-object pages the moved objects left, returned to the OS.
    pub small_pages_released: u64,
    /// Members found dead by collections.
    pub chunk_members_freed: u64,
}

impl ChunkStats {
    /// The figures of `heap`'s chunks; `None` when no chunk was ever made.
    pub fn of(heap: &Heap) -> Option<ChunkStats> {
        let space = heap.chunks();
        let c = &space.counters;
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        if l(&c.chunks_made) == 0 {
            return None;
        }
        let f = space.figures(heap);
        Some(ChunkStats {
            chunks: f.chunks,
            chunk_objects: f.members,
            chunk_object_bytes: f.member_bytes,
            small_bytes_saved: f.saved_bytes,
            small_bytes_reclaimed: f.reclaimed_bytes,
            objects_chunked: l(&c.objects_chunked),
            bytes_chunked: l(&c.bytes_chunked),
            chunk_faults: l(&c.faults),
            chunk_fault_bytes: l(&c.fault_bytes),
            chunk_compactions: l(&c.compactions),
            small_pages_released: l(&c.small_pages_released),
            chunk_members_freed: l(&c.members_freed),
        })
    }

    /// The lines `--stats` prints for chunks.
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "cold chunks",
                format!(
                    "{} chunks, {} small objects, {} bytes",
                    self.chunks, self.chunk_objects, self.chunk_object_bytes
                ),
            ),
            (
                "chunked (all time)",
                format!(
                    "{} objects, {} bytes",
                    self.objects_chunked, self.bytes_chunked
                ),
            ),
            ("small bytes saved", self.small_bytes_saved.to_string()),
            (
                "small bytes reclaimed",
                self.small_bytes_reclaimed.to_string(),
            ),
            (
                "chunk faults",
                format!("{} ({} bytes)", self.chunk_faults, self.chunk_fault_bytes),
            ),
            ("chunk compactions", self.chunk_compactions.to_string()),
        ]
    }
}

impl App {
    /// Books the outcome of a chunking pass: a pass that could not make a chunk (no
    /// memory for it) leaves the objects where they were and says why in the swap's
    /// last error.
    pub(crate) fn pack_cold_chunks(&self, r: Result<ChunkPassReport, ChunkError>) {
        if let (Err(e), Some(sw)) = (r, self.swap()) {
            *sw.last_error.lock() = Some(format!("cold chunks: {e}"));
        }
    }
}
