//! Making stubs when an app goes to the background: every candidate object (by policy)
//! gets a stub, at a safepoint with the app's threads stopped.

use marvin_runtime::Obj;
use marvin_runtime::StubError;
use marvin_runtime::{Handle, Heap, ENTRY_STUB};

use crate::policy::SwapPolicy;

/// What one stubbing pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StubReport {
    pub objects: u64,
    pub bytes: u64,
}

/// Stubs every candidate object of `heap`.
///
/// # Safety
/// The app's mutators must be stopped.
pub unsafe fn stub_candidates(
    heap: &Heap,
    policy: &dyn SwapPolicy,
) -> Result<StubReport, StubError> {
    let mut candidates: Vec<(Handle, u64)> = Vec::new();
    heap.table().for_each(|h, e| {
        if e & ENTRY_STUB != 0 {
            return;
        }
        // SAFETY: an untagged live entry; mutators are stopped.
        let obj = unsafe { Obj::from_addr(e as usize) };
        if policy.is_candidate(obj.kind(), obj.size()) {
            candidates.push((h, obj.size() as u64));
        }
    });
    // The stubs count as the app's memory: their growth is charged first (with the
    // registry's, should it double).
    let stubbing: usize = candidates
        .iter()
        .map(|&(h, _)| {
            // SAFETY: live untagged entries (collected just above); mutators are stopped.
            let nrefs = unsafe { heap.raw_object(h) }.map_or(0, |o| o.ref_words().len());
            marvin_runtime::stubbing_bytes(nrefs)
        })
        .sum();
    let registry = heap
        .stub_space()
        .map_or(0, |s| s.registry_growth(candidates.len()));
    let _growth = heap.runtime_growth(stubbing + registry);
    let mut report = StubReport::default();
    for (h, bytes) in candidates {
        // SAFETY: forwarded: mutators are stopped.
        if unsafe { heap.stub_object(h)? } {
            report.objects += 1;
            report.bytes += bytes;
        }
    }
    Ok(report)
}
