//! Monitors and atomics: `monitorenter`/`monitorexit`, `cas` and `xadd` on a resolved or
//! by-name field, and their superinstructions (`CasBr`, `LoadXadd`). `cas` and `xadd` are
//! sequentially consistent, as Java's `compareAndSet` and `getAndAdd` are (volatile
//! semantics); on x86 that is the same `lock cmpxchg` / `lock xadd` a weaker ordering
//! would give, so the hot path pays nothing for it. A resolved field op reaches its slot
//! unchecked once the class compare has passed; the by-name ops resolve first and then
//! take the same barrier, class check and atomic.

use std::sync::atomic::Ordering;

use marvin_runtime::{AccessKind, BarrierMode};

use super::{Cx, Pos};
use crate::exec::binding::AppBinding;
use crate::exec::op::{FieldUse, Slot};
use crate::exec::trap::Trap;
use crate::isa::FieldRef;

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    /// `cas` of the object, expected and new value on the stack, on field `s` (a
    /// reference field's through the reference store when `is_ref`); whether it swapped.
    #[inline(always)]
    pub fn cas(&mut self, s: &Slot, is_ref: bool) -> Result<bool, Trap> {
        let new = self.pop();
        let expected = self.pop();
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        let a = self.instance(Pos::Here, h, AccessKind::Write, s)?;
        // SAFETY: the class check proved an instance with slot `s.slot`.
        let w = unsafe { a.obj().slot_unchecked(s.slot as usize) };
        let ok = w
            .compare_exchange(expected, new, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if ok && is_ref {
            a.store_ref(s.slot as usize, new);
        }
        self.checked(Pos::Here, &a, ok)
    }

    /// `cas` (`is_ref` for a reference field), pushing whether it swapped
    #[inline(always)]
    pub fn cas_op(&mut self, s: &Slot, is_ref: bool) -> Result<(), Trap> {
        let ok = self.cas(s, is_ref)?;
        self.push(ok as u64);
        Ok(())
    }

    /// `cas C.f; jnz/jz t` (`jz` when not `on`)
    #[inline(always)]
    pub fn cas_br(&mut self, s: &Slot, on: bool, t: u32) -> Result<(), Trap> {
        let ok = self.cas(s, false)?;
        self.branch(ok == on, t, 1)
    }

    /// `xadd` of the object and addend on the stack
    #[inline(always)]
    pub fn xadd(&mut self, s: &Slot) -> Result<(), Trap> {
        let d = self.pop();
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        let old = self.with_field(Pos::Here, h, AccessKind::Write, s, |w| {
            w.fetch_add(d, Ordering::SeqCst)
        })?;
        self.push(old);
        Ok(())
    }

    /// `load a; push k; xadd C.f`, and `pop` when `discard`
    #[inline(always)]
    pub fn load_xadd(&mut self, a: u32, k: i32, s: &Slot, discard: bool) -> Result<(), Trap> {
        self.advance(2);
        let h = self.handle(Pos::Here, self.local(a as usize))?;
        let old = self.with_field(Pos::Here, h, AccessKind::Write, s, |w| {
            w.fetch_add(k as i64 as u64, Ordering::SeqCst)
        })?;
        if discard {
            self.advance(1);
        } else {
            self.push(old);
        }
        Ok(())
    }

    /// `cas`, resolved by name (a reference checked as a reflective updater does)
    #[inline(always)]
    pub fn cas_by_name(&mut self, f: FieldRef) -> Result<(), Trap> {
        let nf = self.by_name(f, FieldUse::Any)?;
        let new = self.pop();
        let expected = self.pop();
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        let a = self.instance(Pos::Here, h, AccessKind::Write, &nf.slot)?;
        if nf.is_ref {
            self.value_check(new)?;
        }
        let w = &a.obj().words()[nf.slot.slot as usize];
        let ok = w
            .compare_exchange(expected, new, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if ok && nf.is_ref {
            a.store_ref(nf.slot.slot as usize, new);
        }
        let ok = self.checked(Pos::Here, &a, ok)?;
        self.push(ok as u64);
        Ok(())
    }

    /// `xadd`, resolved by name (an int field)
    #[inline(always)]
    pub fn xadd_by_name(&mut self, f: FieldRef) -> Result<(), Trap> {
        let nf = self.by_name(f, FieldUse::Int)?;
        let d = self.pop();
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        let a = self.instance(Pos::Here, h, AccessKind::Write, &nf.slot)?;
        let w = &a.obj().words()[nf.slot.slot as usize];
        let old = w.fetch_add(d, Ordering::SeqCst);
        let old = self.checked(Pos::Here, &a, old)?;
        self.push(old);
        Ok(())
    }

    /// `monitorenter`: blocks (in the safe state) while another thread holds it
    #[inline(always)]
    pub fn monitor_enter(&mut self) -> Result<(), Trap> {
        let v = self.pop();
        self.handle(Pos::Here, v)?;
        if let Err(holder) = self.app.monitors().try_enter(v, self.th.id, self.th.tid) {
            self.save_pc();
            let pc = self.pc() - 1;
            self.th.monitor_wait(v, holder, self.method, pc);
        }
        Ok(())
    }

    /// `monitorexit`
    #[inline(always)]
    pub fn monitor_exit(&mut self) -> Result<(), Trap> {
        let v = self.pop();
        self.handle(Pos::Here, v)?;
        if let Err(e) = self.app.monitors().exit(v, self.th.id) {
            return Err(self.fail(Pos::Here, e.to_string()));
        }
        Ok(())
    }
}
