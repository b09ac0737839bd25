//! Arrays: `aload`, `astore` and `alen`, their superinstructions, and the register
//! forms (`RegALoad`, `RegAStore`, `RegAStoreI`, `RegALen`, with an index displacement).
//! Every element access takes the access barrier with the instruction's kind (read for
//! `aload`/`alen`, write for `astore`) and checks the index and the element type.

use std::sync::atomic::Ordering;

use marvin_runtime::Handle;
use marvin_runtime::ObjKind;
use marvin_runtime::{Access, AccessKind, BarrierMode};

use super::access::dangling;
use super::{Cx, Pos};
use crate::exec::binding::AppBinding;
use crate::exec::op::{Op, ARRAY_CLASS};
use crate::exec::trap::Trap;
use crate::isa::Ty;

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    /// Element `i` of the array `h` as type `t`.
    #[inline(always)]
    pub fn aload(&self, pos: Pos, h: Handle, i: i64, t: Ty) -> Result<u64, Trap> {
        let a = self.access(pos, h, AccessKind::Read)?;
        let obj = a.obj();
        if i < 0 || i >= obj.len() as i64 {
            if obj.header().class != ARRAY_CLASS {
                return Err(self.fail(pos, "array type mismatch"));
            }
            return Err(self.fail(pos, "array index out of bounds"));
        }
        let v = match (obj.kind(), t) {
            (ObjKind::ByteArray, Ty::Int | Ty::Any) => {
                obj.bytes()[i as usize].load(Ordering::Relaxed) as u64
            }
            (ObjKind::IntArray, Ty::Int | Ty::Any) | (ObjKind::RefArray, Ty::Ref | Ty::Any) => {
                obj.words()[i as usize].load(Ordering::Relaxed)
            }
            _ => return Err(self.fail(pos, "array type mismatch")),
        };
        self.checked(pos, &a, v)
    }

    /// Stores `v` (of static type `t`) at element `i` of the array `h`. A value of open
    /// type (`Any`: an element copied from another array) goes into an int or byte array
    /// as it is, and into a reference array when it is null or a live object.
    #[inline(always)]
    pub fn astore(&self, pos: Pos, h: Handle, i: i64, v: u64, t: Ty) -> Result<(), Trap> {
        let a = self.access(pos, h, AccessKind::Write)?;
        let obj = a.obj();
        if i < 0 || i >= obj.len() as i64 {
            if obj.header().class != ARRAY_CLASS {
                return Err(self.fail(pos, "array type mismatch"));
            }
            return Err(self.fail(pos, "array index out of bounds"));
        }
        match (obj.kind(), t) {
            (ObjKind::ByteArray, Ty::Int | Ty::Any) => {
                obj.bytes()[i as usize].store(v as u8, Ordering::Relaxed)
            }
            (ObjKind::IntArray, Ty::Int | Ty::Any) => {
                obj.words()[i as usize].store(v, Ordering::Relaxed)
            }
            (ObjKind::RefArray, Ty::Ref) => a.store_ref(i as usize, v),
            (ObjKind::RefArray, Ty::Any) if v == 0 || !dangling(self.heap, v) => {
                a.store_ref(i as usize, v)
            }
            _ => return Err(self.fail(pos, "array type mismatch")),
        }
        self.checked(pos, &a, ())
    }

    /// Stores the int `v` at element `i` of the array accessed by `a` (an int or byte
    /// array only).
    #[inline(always)]
    fn astore_int(&self, a: Access<'_>, i: i64, v: u64) -> Result<(), Trap> {
        let obj = a.obj();
        if i < 0 || i >= obj.len() as i64 {
            if obj.header().class != ARRAY_CLASS {
                return Err(self.fail(Pos::Here, "array type mismatch"));
            }
            return Err(self.fail(Pos::Here, "array index out of bounds"));
        }
        match obj.kind() {
            ObjKind::ByteArray => obj.bytes()[i as usize].store(v as u8, Ordering::Relaxed),
            ObjKind::IntArray => obj.words()[i as usize].store(v, Ordering::Relaxed),
            _ => return Err(self.fail(Pos::Here, "array type mismatch")),
        }
        self.checked(Pos::Here, &a, ())
    }

    /// `aload` of the array and index on the stack
    #[inline(always)]
    pub fn aload_op(&mut self, t: Ty) -> Result<(), Trap> {
        let i = self.pop() as i64;
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        let v = self.aload(Pos::Here, h, i, t)?;
        self.push(v);
        Ok(())
    }

    /// `astore` of the array, index and value on the stack
    #[inline(always)]
    pub fn astore_op(&mut self, t: Ty) -> Result<(), Trap> {
        let v = self.pop();
        let i = self.pop() as i64;
        let o = self.pop();
        let h = self.handle(Pos::Here, o)?;
        self.astore(Pos::Here, h, i, v, t)
    }

    /// The length of the array `arr` (the stack's top when `None`) to slot `d` (pushed
    /// when `None`)
    #[inline(always)]
    pub fn alen(&mut self, pos: Pos, arr: Option<u16>, d: Option<u16>) -> Result<(), Trap> {
        let v = match arr {
            Some(arr) => self.local(arr as usize),
            None => self.pop(),
        };
        let h = self.handle(pos, v)?;
        let a = self.access(pos, h, AccessKind::Read)?;
        if a.obj().header().class != ARRAY_CLASS {
            return Err(self.fail(pos, "array type mismatch"));
        }
        let n = self.checked(pos, &a, a.obj().len() as u64)?;
        match d {
            Some(d) => self.set_local(d as usize, n),
            None => self.push(n),
        }
        Ok(())
    }

    /// `load arr; load i; aload`
    #[inline(always)]
    pub fn aload_local(&mut self, arr: u32, i: u32, ty: Ty) -> Result<(), Trap> {
        self.advance(2);
        let h = self.handle(Pos::Here, self.local(arr as usize))?;
        let v = self.aload(Pos::Here, h, self.local(i as usize) as i64, ty)?;
        self.push(v);
        Ok(())
    }

    /// `load arr; load i; aload; jnz t` (`jz` when not `on`), an int element
    #[inline(always)]
    pub fn aload_local_br(&mut self, arr: u32, i: u32, on: bool, t: u32) -> Result<(), Trap> {
        self.advance(2);
        let h = self.handle(Pos::Here, self.local(arr as usize))?;
        let v = self.aload(Pos::Here, h, self.local(i as usize) as i64, Ty::Int)?;
        self.branch((v != 0) == on, t, 1)
    }

    /// `load arr; load i; push k; astore`, an int element
    #[inline(always)]
    pub fn astore_local_const(&mut self, arr: u32, i: u32, k: i64) -> Result<(), Trap> {
        self.advance(3);
        let h = self.handle(Pos::Here, self.local(arr as usize))?;
        let a = self.access(Pos::Here, h, AccessKind::Write)?;
        self.astore_int(a, self.local(i as usize) as i64, k as u64)
    }

    /// `d = arr[i + off]` as type `ty` (`Op::RegALoad`)
    #[inline(always)]
    pub fn reg_aload(&mut self, op: &Op) -> Result<(), Trap> {
        let Op::RegALoad {
            d,
            arr,
            i,
            off,
            ty,
            skip,
            at,
        } = *op
        else {
            unreachable!("not a RegALoad: {op:?}")
        };
        let pos = Pos::At(at);
        let h = self.handle(pos, self.local(arr as usize))?;
        let i = (self.local(i as usize) as i64).wrapping_add(off as i64);
        let v = self.aload(pos, h, i, ty)?;
        self.set_local(d as usize, v);
        self.skip(skip);
        Ok(())
    }

    /// `arr[i + off] = v`, the slot `v` of type `ty` (`Op::RegAStore`) or the int
    /// constant `k` (`Op::RegAStoreI`)
    #[inline(always)]
    pub fn reg_astore(&mut self, op: &Op) -> Result<(), Trap> {
        let (arr, i, off, v, ty, skip, at) = match *op {
            Op::RegAStore {
                arr,
                i,
                off,
                v,
                ty,
                skip,
                at,
            } => (arr, i, off, self.local(v as usize), ty, skip, at),
            Op::RegAStoreI {
                arr,
                i,
                off,
                k,
                skip,
                at,
            } => (arr, i, off, k as i64 as u64, Ty::Int, skip, at),
            _ => unreachable!("not a RegAStore: {op:?}"),
        };
        let pos = Pos::At(at);
        let h = self.handle(pos, self.local(arr as usize))?;
        let i = (self.local(i as usize) as i64).wrapping_add(off as i64);
        self.astore(pos, h, i, v, ty)?;
        self.skip(skip);
        Ok(())
    }
}
