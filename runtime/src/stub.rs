//! Stubs: the indirection through which a swappable object is reached.
//!
//! (The memory-management layer fills this in; until then no handle entry is ever
//! tagged as a stub, so the barrier's cold path only reports the access as a fault.)

use crate::barrier::{AccessError, AccessKind};
use crate::heap::{Handle, Heap};
use crate::object::Obj;

/// The shared hold on a stub's reclaim-table entry for the length of one access.
pub struct StubAccess<'h> {
    obj: Obj<'h>,
}

impl<'h> StubAccess<'h> {
    pub(crate) fn enter(
        _heap: &'h Heap,
        h: Handle,
        _entry: u64,
        _kind: AccessKind,
        _barrier: bool,
    ) -> Result<StubAccess<'h>, AccessError> {
        Err(AccessError::Fault {
            handle: h.value(),
            reason: "stubs are not enabled".into(),
        })
    }

    pub(crate) fn obj(&self) -> Obj<'h> {
        self.obj
    }

    pub(crate) fn update_ref_copy(&self, _word: usize, _value: u64) {}
}
