//! The access barrier: the single entry point through which the interpreter reads and
//! writes objects.
//!
//! [`Heap::access`] resolves a handle for one access. On the fast path (the handle
//! points straight at a resident object) it sets the header's READ bit, or WRITE and
//! DIRTY, and hands back the object. A handle that reaches its object through a stub
//! takes the cold path, which holds the stub's reclaim-table entry for the whole access
//! and faults the object in when it is out. The barrier is generic over a
//! [`BarrierMode`] so that a build without barriers can be measured side by side in one
//! binary ([`NoBarriers`]).

use std::sync::atomic::Ordering;

pub use crate::access::{AccessError, AccessKind};
use crate::header::HeaderBits;
use crate::heap::{Handle, Heap, ENTRY_STUB};
use crate::object::Obj;

/// Whether accesses record access bits.
pub trait BarrierMode: Copy + Send + Sync + 'static {
    const ON: bool;
}

/// Accesses set header bits (the normal runtime).
#[derive(Clone, Copy, Debug, Default)]
pub struct Barriers;
impl BarrierMode for Barriers {
    const ON: bool = true;
}

/// Accesses skip the header bits: only for measuring the barrier's cost. Objects
/// cannot be stubbed or swapped in this mode.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoBarriers;
impl BarrierMode for NoBarriers {
    const ON: bool = false;
}

/// One access in progress: the resident object, and the stub entry's shared lock when
/// the object is reached through a stub (released on drop).
///
/// Two words: the stubbed part sits behind one pointer, allocated only on the stub path.
/// Every op moves its access through a few `Result`s, and a wider struct (the stub's
/// access and a chunk member inline) made each plain field access copy it about three
/// times (fields.masm ran about 3x slower).
pub struct Access<'h> {
    obj: Obj<'h>,
    stubbed: Option<Box<Stubbed<'h>>>,
}

/// What an access through a stub holds besides the object.
struct Stubbed<'h> {
    stub: crate::stub::StubAccess<'h>,
    /// The record of a small object in a cold chunk (its reference copies).
    member: Option<&'h crate::heap::chunk::ChunkMember>,
}

impl Stubbed<'_> {
    #[cold]
    #[inline(never)]
    fn check(&self) -> Result<(), AccessError> {
        self.stub.check()
    }

    #[cold]
    #[inline(never)]
    fn update_ref_copy(&self, word: usize, value: u64) {
        match self.member {
            Some(m) => m.update_ref_copy(word, value),
            None => self.stub.update_ref_copy(word, value),
        }
    }
}

impl<'h> Access<'h> {
    #[inline(always)]
    pub fn obj(&self) -> Obj<'h> {
        self.obj
    }

    /// Whether the bytes this access read or wrote were the object's: an error when the
    /// object turned out damaged while the access touched it (a page restored a page
    /// run at a time whose checkpoint piece failed its check, see
    /// [`crate::stub::StubHooks::damage`]). Call it after the last touch of the payload
    /// and before using what was read: the caller then reports the error instead. Free
    /// for an object reached without a stub (only stubbed objects come back so).
    #[inline(always)]
    pub fn check(&self) -> Result<(), AccessError> {
        match &self.stubbed {
            None => Ok(()),
            Some(s) => s.check(),
        }
    }

    /// Stores a reference into payload word `word` (an instance's ref slot or a ref
    /// array element), keeping a stub's reference copy current.
    #[inline(always)]
    pub fn store_ref(&self, word: usize, value: u64) {
        self.obj.words()[word].store(value, Ordering::Relaxed);
        if let Some(s) = &self.stubbed {
            s.update_ref_copy(word, value);
        }
    }
}

impl Heap {
    /// Resolves `h` for one access of the given kind. Every object read and write of the
    /// interpreter goes through here.
    #[inline(always)]
    pub fn access<B: BarrierMode>(
        &self,
        h: Handle,
        kind: AccessKind,
    ) -> Result<Access<'_>, AccessError> {
        let e = self.table().entry(h).load(Ordering::Acquire);
        if e & ENTRY_STUB != 0 || e == 0 {
            return self.access_slow::<B>(h, e, kind);
        }
        // SAFETY: a non-zero, untagged entry is the address of a live object that is
        // resident (only stubbed objects are ever reclaimed) and does not move while
        // the calling mutator is between safepoints.
        let obj = unsafe { Obj::from_addr(e as usize) };
        if B::ON {
            match kind {
                AccessKind::Read => obj.header().ensure(HeaderBits::READ),
                AccessKind::Write => obj.header().ensure(HeaderBits::WRITE | HeaderBits::DIRTY),
            }
        }
        Ok(Access { obj, stubbed: None })
    }

    #[cold]
    #[inline(never)]
    fn access_slow<B: BarrierMode>(
        &self,
        h: Handle,
        e: u64,
        kind: AccessKind,
    ) -> Result<Access<'_>, AccessError> {
        if e == 0 {
            return Err(AccessError::Dangling(h.value()));
        }
        if crate::heap::chunk::is_chunk_entry(e) {
            let (stub, obj, member) = crate::heap::chunk_access::enter(self, h, e, kind, B::ON)?;
            return Ok(Access {
                obj,
                stubbed: Some(Box::new(Stubbed {
                    stub,
                    member: Some(member),
                })),
            });
        }
        let stub = crate::stub::StubAccess::enter(self, h, e, kind, B::ON)?;
        Ok(Access {
            obj: stub.obj(),
            stubbed: Some(Box::new(Stubbed { stub, member: None })),
        })
    }
}
