//! An access to a small object that lives in a cold chunk: the chunk's stub is entered
//! (its reclaim-table entry held shared for the whole access, the chunk faulted in first
//! when it is out, the chunk marked dirty around a write), then the member is reached at
//! its offset. The member's own header bits are left alone: the chunk's header records
//! its accesses, so that nothing but a real write changes the chunk's bytes.

use std::sync::atomic::Ordering;

use super::chunk::ChunkMember;
use super::{Handle, Heap, ENTRY_STUB};
use crate::access::{AccessError, AccessKind};
use crate::object::Obj;
use crate::stub::StubAccess;

/// A chunk that could not be brought back, named with the member that asked.
#[derive(Debug, thiserror::Error)]
#[error("cold chunk {chunk} (holding object {member}): {reason}")]
pub struct ChunkFault {
    pub chunk: u64,
    pub member: u64,
    #[source]
    pub reason: crate::access::FaultError,
}

/// Resolves the chunk-tagged entry `e` of `h` for one access: the hold on the chunk's
/// entry, the member object and its record.
pub(crate) fn enter<'h>(
    heap: &'h Heap,
    h: Handle,
    e: u64,
    kind: AccessKind,
    barrier: bool,
) -> Result<(StubAccess<'h>, Obj<'h>, &'h ChunkMember), AccessError> {
    // SAFETY: a chunk-tagged entry points at a member record kept alive by the heap's
    // chunk space; records are only dropped by a collection or a compaction, with
    // mutators stopped.
    let member: &'h ChunkMember = unsafe { heap.member_of_entry(e) };
    let stub = member.stub();
    let was_out = heap
        .stub_space()
        .is_some_and(|s| !s.table.entry(stub.entry).is_resident());
    let stub_entry = stub as *const crate::stub::Stub as u64 | ENTRY_STUB;
    let access =
        StubAccess::enter(heap, stub.handle, stub_entry, kind, barrier).map_err(|e| match e {
            AccessError::Fault { handle, reason } => AccessError::Fault {
                handle: h.value(),
                reason: Box::new(ChunkFault {
                    chunk: handle,
                    member: h.value(),
                    reason,
                }),
            },
            AccessError::Dangling(_) => AccessError::Dangling(h.value()),
        })?;
    if was_out {
        let c = &heap.chunks().counters;
        c.faults.fetch_add(1, Ordering::Relaxed);
        c.fault_bytes
            .fetch_add(stub.bytes() as u64, Ordering::Relaxed);
    }
    // SAFETY: the chunk is resident and its entry held shared for the access's length.
    let obj = unsafe { member.object() };
    Ok((access, obj, member))
}
