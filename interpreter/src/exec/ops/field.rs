//! Fields: `getfield` and `putfield` resolved at load (a class check, then the slot) or by
//! name (`--no-resolve`), their superinstructions, and the register forms (`RegGetField`,
//! `RegPutField`). Each access takes the barrier with its instruction's kind, in the
//! order of the instructions a fused op stands for, and fails at that instruction.

use std::sync::atomic::Ordering;

use marvin_runtime::{AccessKind, BarrierMode};

use super::{Cx, Pos};
use crate::exec::binding::AppBinding;
use crate::exec::op::{FieldUse, Op, Slot};
use crate::exec::operator::{Bin, Cond};
use crate::exec::trap::Trap;
use crate::isa::FieldRef;

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    /// `getfield`
    #[inline(always)]
    pub fn get_field(&mut self, s: &Slot) -> Result<(), Trap> {
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        let v = self.read_field(Pos::Here, h, s)?;
        self.push(v);
        Ok(())
    }

    /// `putfield` of an int field
    #[inline(always)]
    pub fn put_field(&mut self, s: &Slot) -> Result<(), Trap> {
        let v = self.pop();
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        self.write_field(Pos::Here, h, s, v)
    }

    /// `putfield` of a reference field
    #[inline(always)]
    pub fn put_field_ref(&mut self, s: &Slot) -> Result<(), Trap> {
        let v = self.pop();
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        let a = self.instance(Pos::Here, h, AccessKind::Write, s)?;
        a.store_ref(s.slot as usize, v);
        self.checked(Pos::Here, &a, ())
    }

    /// `getfield`, resolved by name
    #[inline(always)]
    pub fn get_field_by_name(&mut self, f: FieldRef) -> Result<(), Trap> {
        let nf = self.by_name(f, FieldUse::Any)?;
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        let a = self.instance(Pos::Here, h, AccessKind::Read, &nf.slot)?;
        let v = a.obj().words()[nf.slot.slot as usize].load(Ordering::Relaxed);
        let v = self.checked(Pos::Here, &a, v)?;
        self.push(v);
        Ok(())
    }

    /// `putfield`, resolved by name (a reference checked as a reflective updater does)
    #[inline(always)]
    pub fn put_field_by_name(&mut self, f: FieldRef) -> Result<(), Trap> {
        let nf = self.by_name(f, FieldUse::Any)?;
        let v = self.pop();
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        let a = self.instance(Pos::Here, h, AccessKind::Write, &nf.slot)?;
        if nf.is_ref {
            self.value_check(v)?;
            a.store_ref(nf.slot.slot as usize, v);
        } else {
            a.obj().words()[nf.slot.slot as usize].store(v, Ordering::Relaxed);
        }
        self.checked(Pos::Here, &a, ())
    }

    /// `load a; getfield C.f`, and `store b` after it when `b` is given
    #[inline(always)]
    pub fn load_get_field(&mut self, a: u32, s: &Slot, b: Option<u32>) -> Result<(), Trap> {
        self.advance(1);
        let h = self.handle(Pos::Here, self.local(a as usize))?;
        let v = self.read_field(Pos::Here, h, s)?;
        match b {
            Some(b) => {
                self.set_local(b as usize, v);
                self.advance(1);
            }
            None => self.push(v),
        }
        Ok(())
    }

    /// `load a; load o; getfield C.f` (the read at `getfield`, +2)
    #[inline(always)]
    pub fn load_load_get_field(&mut self, a: u32, o: u32, s: &Slot) -> Result<(), Trap> {
        self.advance(2);
        let x = self.local(a as usize);
        let h = self.handle(Pos::Here, self.local(o as usize))?;
        let v = self.read_field(Pos::Here, h, s)?;
        self.push(x);
        self.push(v);
        Ok(())
    }

    /// `load o; getfield C.g; OP; putfield D.f` (the read at `getfield`, +1, the write
    /// at `putfield`, +3)
    #[inline(always)]
    pub fn load_get_field_bin_put_field(
        &mut self,
        o: u32,
        g: &Slot,
        b: Bin,
        f: &Slot,
    ) -> Result<(), Trap> {
        self.advance(1);
        let h = self.handle(Pos::Here, self.local(o as usize))?;
        let y = self.read_field(Pos::Here, h, g)? as i64;
        let x = self.pop() as i64;
        let v = self.bin(b, x, y, 1)?;
        self.advance(2);
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        self.write_field(Pos::Here, h, f, v as u64)
    }

    /// `load c; OP; putfield C.f` (the write at `putfield`, +2)
    #[inline(always)]
    pub fn load_bin_put_field(&mut self, c: u32, b: Bin, f: &Slot) -> Result<(), Trap> {
        let y = self.local(c as usize) as i64;
        let x = self.pop() as i64;
        let v = self.bin(b, x, y, 1)?;
        self.advance(2);
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        self.write_field(Pos::Here, h, f, v as u64)
    }

    /// `load o; load o; getfield C.f; load c; OP; putfield C.f` (the read at `getfield`,
    /// +2, the write at `putfield`, +5)
    #[inline(always)]
    pub fn field_bin_local(&mut self, o: u32, s: &Slot, b: Bin, c: u32) -> Result<(), Trap> {
        self.advance(2);
        let h = self.handle(Pos::Here, self.local(o as usize))?;
        let x = self.read_field(Pos::Here, h, s)? as i64;
        let v = self.bin(b, x, self.local(c as usize) as i64, 2)?;
        self.advance(3);
        self.write_field(Pos::Here, h, s, v as u64)
    }

    /// `load a; load o; getfield C.f; CMP; jnz/jz t`
    #[inline(always)]
    pub fn br_local_field(
        &mut self,
        a: u32,
        o: u32,
        s: &Slot,
        c: Cond,
        t: u32,
    ) -> Result<(), Trap> {
        self.advance(2);
        let h = self.handle(Pos::Here, self.local(o as usize))?;
        let y = self.read_field(Pos::Here, h, s)? as i64;
        let x = self.local(a as usize) as i64;
        self.branch(c.taken(x, y), t, 2)
    }

    /// `d = o.f`
    #[inline(always)]
    pub fn reg_get_field(
        &mut self,
        d: u16,
        o: u16,
        s: &Slot,
        skip: u8,
        at: u32,
    ) -> Result<(), Trap> {
        let h = self.handle(Pos::At(at), self.local(o as usize))?;
        let v = self.read_field(Pos::At(at), h, s)?;
        self.set_local(d as usize, v);
        self.skip(skip);
        Ok(())
    }

    /// `o.f = v`, through the reference store when `is_ref` (`Op::RegPutField`)
    #[inline(always)]
    pub fn reg_put_field(&mut self, op: &Op) -> Result<(), Trap> {
        let Op::RegPutField {
            o,
            v,
            ref s,
            is_ref,
            skip,
            at,
        } = *op
        else {
            unreachable!("not a RegPutField: {op:?}")
        };
        let pos = Pos::At(at);
        let h = self.handle(pos, self.local(o as usize))?;
        let v = self.local(v as usize);
        if is_ref {
            let a = self.instance(pos, h, AccessKind::Write, s)?;
            a.store_ref(s.slot as usize, v);
            self.checked(pos, &a, ())?;
        } else {
            self.write_field(pos, h, s, v)?;
        }
        self.skip(skip);
        Ok(())
    }
}
