//! The object access path of every op that reads or writes an object: the null check,
//! the runtime's access barrier (`Heap::access`, which sets the header's access bits for
//! the access kind), the class check of a resolved field, the field word itself, and the
//! by-name resolution of the `--no-resolve` comparison form. Each fails at the position
//! it is given ([`Pos`]).

use std::sync::atomic::{AtomicU64, Ordering};

use marvin_runtime::barrier::{Access, AccessKind, BarrierMode};
use marvin_runtime::heap::{Handle, Heap};

use super::{Cx, Pos};
use crate::exec::binding::AppBinding;
use crate::exec::op::{resolve_by_name, FieldUse, NamedField, Slot};
use crate::exec::trap::Trap;
use crate::isa::FieldRef;

impl<'l, A: AppBinding, B: BarrierMode> Cx<'l, '_, A, B> {
    /// The handle `v` names, or a null dereference.
    #[inline(always)]
    pub fn handle(&self, pos: Pos, v: u64) -> Result<Handle, Trap> {
        match Handle::from_value(v) {
            Some(h) => Ok(h),
            None => Err(self.fail(pos, "null dereference")),
        }
    }

    /// One access of kind `kind` to `h` through the barrier.
    #[inline(always)]
    pub fn access(&self, pos: Pos, h: Handle, kind: AccessKind) -> Result<Access<'l>, Trap> {
        match self.heap.access::<B>(h, kind) {
            Ok(a) => Ok(a),
            Err(e) => Err(self.fail(pos, e.to_string())),
        }
    }

    /// `body` on one access of kind `kind` to `h` through the barrier
    /// (`Heap::with_access`: on the fast path nothing is released after `body`). `body`
    /// refuses the access with a [`Refused`], which becomes a trap at `pos`.
    ///
    /// `body` must not capture `self`: through a stub it runs in an out-of-line copy, and
    /// the loop's state, reached by a call that is not inlined, would be kept in memory
    /// rather than registers on every path of the loop.
    #[inline(always)]
    pub fn with_access<R>(
        &self,
        pos: Pos,
        h: Handle,
        kind: AccessKind,
        body: impl FnOnce(&Access<'l>) -> Result<R, Refused>,
    ) -> Result<R, Trap> {
        match self.heap.with_access::<B, _>(h, kind, body) {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(why)) => Err(self.fail(pos, why.message())),
            Err(e) => Err(self.fail(pos, e.to_string())),
        }
    }

    /// An access to `h`, checked to be an instance of `s.class`.
    #[inline(always)]
    pub fn instance(
        &self,
        pos: Pos,
        h: Handle,
        kind: AccessKind,
        s: &Slot,
    ) -> Result<Access<'l>, Trap> {
        let a = self.access(pos, h, kind)?;
        if a.obj().header().class != s.class {
            return Err(self.class_mismatch(pos, s));
        }
        Ok(a)
    }

    /// `body` on an access to `h`, checked to be an instance of `s.class` (`body` must
    /// not capture `self`, as for [`Cx::with_access`]).
    #[inline(always)]
    pub fn with_instance<R>(
        &self,
        pos: Pos,
        h: Handle,
        kind: AccessKind,
        s: &Slot,
        body: impl FnOnce(&Access<'l>) -> R,
    ) -> Result<R, Trap> {
        let class = s.class;
        let checked = self.heap.with_access::<B, _>(
            h,
            kind,
            #[inline(always)]
            move |a| {
                if a.obj().header().class != class {
                    return None;
                }
                Some(body(a))
            },
        );
        match checked {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(self.class_mismatch(pos, s)),
            Err(e) => Err(self.fail(pos, e.to_string())),
        }
    }

    #[inline(always)]
    fn class_mismatch(&self, pos: Pos, s: &Slot) -> Trap {
        let name = &self.loaded.vp.program.classes[s.class as usize].name;
        self.fail(pos, format!("class mismatch (expected {name})"))
    }

    /// `body` of the word of integer field `s` in the instance `h`, class-checked for
    /// `kind` (the access is held until `body` returns; `body` must not capture `self`).
    #[inline(always)]
    pub fn with_field<R>(
        &self,
        pos: Pos,
        h: Handle,
        kind: AccessKind,
        s: &Slot,
        body: impl FnOnce(&AtomicU64) -> R,
    ) -> Result<R, Trap> {
        let slot = s.slot as usize;
        self.with_instance(
            pos,
            h,
            kind,
            s,
            #[inline(always)]
            move |acc| {
                // SAFETY: the class check proved an instance of `s.class`, whose layout has
                // slot `s.slot`.
                let w = unsafe { acc.obj().slot_unchecked(slot) };
                body(w)
            },
        )
    }

    #[inline(always)]
    pub fn read_field(&self, pos: Pos, h: Handle, s: &Slot) -> Result<u64, Trap> {
        self.with_field(
            pos,
            h,
            AccessKind::Read,
            s,
            #[inline(always)]
            |w| w.load(Ordering::Relaxed),
        )
    }

    #[inline(always)]
    pub fn write_field(&self, pos: Pos, h: Handle, s: &Slot, v: u64) -> Result<(), Trap> {
        self.with_field(
            pos,
            h,
            AccessKind::Write,
            s,
            #[inline(always)]
            |w| w.store(v, Ordering::Relaxed),
        )
    }

    /// A reflective updater's `valueCheck`: the new value of a reference field is null or
    /// refers to a live object (MASM references carry no class to cast to).
    #[inline(always)]
    pub fn value_check(&self, v: u64) -> Result<(), Trap> {
        if v != 0 && dangling(self.heap, v) {
            return Err(self.fail(Pos::Here, format!("dangling reference {v}")));
        }
        Ok(())
    }

    /// The field `f` names, resolved for `use_` on every execution (`--no-resolve`).
    #[inline(always)]
    pub fn by_name(&self, f: FieldRef, use_: FieldUse) -> Result<NamedField, Trap> {
        resolve_by_name(&self.loaded.vp.program, &self.loaded.names, f, use_)
            .map_err(|e| self.fail(Pos::Here, e))
    }
}

/// Why the body of an access ([`Cx::with_access`]) refused it: a byte rather than its
/// message, so that the body's result stays in registers.
#[derive(Clone, Copy, Debug)]
pub enum Refused {
    ArrayTypeMismatch,
    ArrayIndexOutOfBounds,
}

impl Refused {
    pub fn message(self) -> &'static str {
        match self {
            Refused::ArrayTypeMismatch => "array type mismatch",
            Refused::ArrayIndexOutOfBounds => "array index out of bounds",
        }
    }
}

/// A reflective updater's `valueCheck` for a non-null reference: whether `v` names
/// nothing live. Out of line: inlined, the handle-table lookup's code took registers from
/// the whole dispatch loop (about 10 more instructions per iteration of an integer loop).
#[inline(never)]
pub(super) fn dangling(heap: &Heap, v: u64) -> bool {
    !heap.table().is_live(v)
}
