//! The object access path of every op that reads or writes an object: the null check,
//! the runtime's access barrier (`Heap::access`, which sets the header's access bits for
//! the access kind), the class check of a resolved field, the field word itself, and the
//! by-name resolution of the `--no-resolve` comparison form. Each fails at the position
//! it is given ([`Pos`]).

use std::sync::atomic::{AtomicU64, Ordering};

use marvin_runtime::{Access, AccessKind, BarrierMode};
use marvin_runtime::{Handle, Heap};

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

    /// `v`, what an access read (or `()` after it wrote), once the access says its bytes
    /// were the object's ([`Access::check`]: an object restored a page run at a time
    /// may turn out damaged while the access touches it); otherwise the runtime error at
    /// `pos`. Every op calls it after its last touch of an object's payload, before it
    /// uses what it read: the signal handler that answers such a touch cannot raise the
    /// error itself.
    #[inline(always)]
    pub fn checked<T>(&self, pos: Pos, a: &Access<'_>, v: T) -> Result<T, Trap> {
        match a.check() {
            Ok(()) => Ok(v),
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
            let name = &self.loaded.vp.program.classes[s.class as usize].name;
            return Err(self.fail(pos, format!("class mismatch (expected {name})")));
        }
        Ok(a)
    }

    /// `body` of the word of integer field `s` in the instance `h`, class-checked for
    /// `kind` (the access is held until `body` returns).
    #[inline(always)]
    pub fn with_field<R>(
        &self,
        pos: Pos,
        h: Handle,
        kind: AccessKind,
        s: &Slot,
        body: impl FnOnce(&AtomicU64) -> R,
    ) -> Result<R, Trap> {
        let acc = self.instance(pos, h, kind, s)?;
        // SAFETY: the class check proved an instance of `s.class`, whose layout has slot
        // `s.slot`.
        let w = unsafe { acc.obj().slot_unchecked(s.slot as usize) };
        let r = body(w);
        self.checked(pos, &acc, r)
    }

    #[inline(always)]
    pub fn read_field(&self, pos: Pos, h: Handle, s: &Slot) -> Result<u64, Trap> {
        self.with_field(pos, h, AccessKind::Read, s, |w| w.load(Ordering::Relaxed))
    }

    #[inline(always)]
    pub fn write_field(&self, pos: Pos, h: Handle, s: &Slot, v: u64) -> Result<(), Trap> {
        self.with_field(pos, h, AccessKind::Write, s, |w| {
            w.store(v, Ordering::Relaxed)
        })
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

/// A reflective updater's `valueCheck` for a non-null reference: whether `v` names
/// nothing live. Out of line: inlined, the handle-table lookup's code took registers from
/// the whole dispatch loop (about 10 more instructions per iteration of an integer loop).
#[inline(never)]
pub(super) fn dangling(heap: &Heap, v: u64) -> bool {
    !heap.table().is_live(v)
}
