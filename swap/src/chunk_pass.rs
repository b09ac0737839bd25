//! One chunking pass, at a safepoint with the app's threads stopped: compacts resident
//! chunks with enough dead members, then moves the small objects the policy finds cold
//! into new chunks, coldest first (grouped by how long they have been cold), each group
//! in address order.

use marvin_runtime::HeaderBits;
use marvin_runtime::Obj;
use marvin_runtime::{ChunkError, ChunkReport};
use marvin_runtime::{Handle, Heap, ENTRY_STUB, LARGE_OBJECT_BYTES};

use crate::chunk_policy::ChunkConfig;

/// What one pass did: chunks rebuilt, and chunks made of newly cold objects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkPassReport {
    pub compacted: ChunkReport,
    pub packed: ChunkReport,
}

/// Runs one pass over `heap` under `config` (nothing when chunks are off).
///
/// # Safety
/// The app's mutators must be stopped.
pub unsafe fn chunk_cold_objects(
    heap: &Heap,
    config: &ChunkConfig,
) -> Result<ChunkPassReport, ChunkError> {
    let mut report = ChunkPassReport::default();
    if !config.enabled || heap.stub_space().is_none() {
        return Ok(report);
    }
    // SAFETY: forwarded: mutators are stopped.
    report.compacted = unsafe { heap.compact_chunks(config.compact_dead_share)? };
    let mut groups: [Vec<(usize, Handle)>; 5] = Default::default();
    heap.table().for_each(|h, e| {
        if e & ENTRY_STUB != 0 {
            return;
        }
        // SAFETY: an untagged live entry; mutators are stopped.
        let obj = unsafe { Obj::from_addr(e as usize) };
        let hdr = obj.header();
        let bits = hdr.bits();
        if obj.size() >= LARGE_OBJECT_BYTES || bits.contains(HeaderBits::NO_SWAP) {
            return;
        }
        let now = bits.intersects(HeaderBits::READ | HeaderBits::WRITE);
        if let Some(rounds) = config.coldness(hdr.read_history(), hdr.write_history(), now) {
            groups[rounds as usize].push((obj.addr(), h));
        }
    });
    // Coldest first, each group in address order; a chunk may take the end of one
    // group and the start of the next, so that no group is left out for being small.
    let order: Vec<(Handle, u8)> = (1..=4u8)
        .rev()
        .flat_map(|rounds| {
            let group = &mut groups[rounds as usize];
            group.sort_unstable();
            group
                .iter()
                .map(move |&(_, h)| (h, rounds))
                .collect::<Vec<_>>()
        })
        .collect();
    // SAFETY: forwarded: mutators are stopped.
    report.packed = unsafe { heap.pack_chunks(&order, config.chunk_bytes as usize)? };
    Ok(report)
}
