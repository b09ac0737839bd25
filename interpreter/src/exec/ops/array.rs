//! Arrays: `aload`, `astore` and `alen`, their superinstructions, and the register
//! forms (`RegALoad`, `RegAStore`, `RegAStoreI`, `RegALen`, with an index displacement).
//! Every element access takes the access barrier with the instruction's kind (read for
//! `aload`/`alen`, write for `astore`) and checks the index and the element type.

use std::sync::atomic::Ordering;

use marvin_runtime::barrier::{Access, AccessKind, BarrierMode};
use marvin_runtime::header::ObjKind;
use marvin_runtime::heap::{Handle, Heap};

use super::access::{dangling, Refused};
use super::{Cx, Pos};
use crate::exec::binding::AppBinding;
use crate::exec::op::{Op, ARRAY_CLASS};
use crate::exec::trap::Trap;
use crate::isa::Ty;

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    /// Element `i` of the array `h` as type `t`.
    #[inline(always)]
    pub fn aload(&self, pos: Pos, h: Handle, i: i64, t: Ty) -> Result<u64, Trap> {
        self.with_access(
            pos,
            h,
            AccessKind::Read,
            #[inline(always)]
            move |a| load_element(a, i, t),
        )
    }

    /// Stores `v` (of static type `t`) at element `i` of the array `h`. A value of open
    /// type (`Any`: an element copied from another array) goes into an int or byte array
    /// as it is, and into a reference array when it is null or a live object.
    #[inline(always)]
    pub fn astore(&self, pos: Pos, h: Handle, i: i64, v: u64, t: Ty) -> Result<(), Trap> {
        let heap = self.heap;
        self.with_access(
            pos,
            h,
            AccessKind::Write,
            #[inline(always)]
            move |a| store_element(heap, a, i, v, t),
        )
    }

    /// Stores the int `v` at element `i` of the array `h` (an int or byte array only).
    #[inline(always)]
    fn astore_int(&self, h: Handle, i: i64, v: u64) -> Result<(), Trap> {
        let heap = self.heap;
        self.with_access(
            Pos::Here,
            h,
            AccessKind::Write,
            #[inline(always)]
            move |a| store_element(heap, a, i, v, Ty::Int),
        )
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
        let n = self.with_access(
            pos,
            h,
            AccessKind::Read,
            #[inline(always)]
            |a| {
                if a.obj().header().class != ARRAY_CLASS {
                    return Err(Refused::ArrayTypeMismatch);
                }
                Ok(a.obj().len() as u64)
            },
        )?;
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
        self.astore_int(h, self.local(i as usize) as i64, k as u64)
    }

    /// `d = arr[i + off]` as type `ty` (`Op::RegALoad`)
    #[inline(always)]
    pub fn reg_aload(&mut self, op: &Op) -> Result<(), Trap> {
        // By reference: each operand is loaded where it is used, `at` only where an
        // error needs it, rather than all at once and kept across the access.
        let Op::RegALoad {
            d,
            arr,
            i,
            off,
            ty,
            skip,
            at,
        } = op
        else {
            unreachable!("not a RegALoad: {op:?}")
        };
        let h = self.handle(Pos::At(*at), self.local(*arr as usize))?;
        let i = (self.local(*i as usize) as i64).wrapping_add(*off as i64);
        let v = self.aload(Pos::At(*at), h, i, *ty)?;
        self.set_local(*d as usize, v);
        self.skip(*skip);
        Ok(())
    }

    /// `arr[i + off] = v`, the slot `v` of type `ty` (`Op::RegAStore`) or the int
    /// constant `k` (`Op::RegAStoreI`)
    #[inline(always)]
    pub fn reg_astore(&mut self, op: &Op) -> Result<(), Trap> {
        // By reference, as in `reg_aload`.
        let (arr, i, off, v, ty, skip, at) = match op {
            Op::RegAStore {
                arr,
                i,
                off,
                v,
                ty,
                skip,
                at,
            } => (arr, i, off, self.local(*v as usize), *ty, skip, at),
            Op::RegAStoreI {
                arr,
                i,
                off,
                k,
                skip,
                at,
            } => (arr, i, off, *k as i64 as u64, Ty::Int, skip, at),
            _ => unreachable!("not a RegAStore: {op:?}"),
        };
        let h = self.handle(Pos::At(*at), self.local(*arr as usize))?;
        let i = (self.local(*i as usize) as i64).wrapping_add(*off as i64);
        self.astore(Pos::At(*at), h, i, v, ty)?;
        self.skip(*skip);
        Ok(())
    }
}

/// Whether `i` indexes an array of `len` elements: one unsigned compare, as a negative
/// `i` wraps to above any length.
#[inline(always)]
fn in_bounds(i: i64, len: u32) -> bool {
    (i as u64) < len as u64
}

/// The error of an index outside an object of class `class`: a type mismatch when it is
/// not an array.
#[inline(always)]
fn index_error(class: u32) -> Refused {
    if class != ARRAY_CLASS {
        return Refused::ArrayTypeMismatch;
    }
    Refused::ArrayIndexOutOfBounds
}

/// Element `i` of the array accessed by `a` as type `t`, or the error's message.
#[inline(always)]
fn load_element(a: &Access<'_>, i: i64, t: Ty) -> Result<u64, Refused> {
    let obj = a.obj();
    if !in_bounds(i, obj.len()) {
        return Err(index_error(obj.header().class));
    }
    let kind = obj.kind();
    if holds_words_of(kind, t) {
        // SAFETY: an int or reference array (`holds_words_of`), a word object, of more
        // than `i` elements (checked above).
        return Ok(unsafe { obj.slot_unchecked(i as usize) }.load(Ordering::Relaxed));
    }
    if kind == ObjKind::ByteArray && t != Ty::Ref {
        return Ok(obj.bytes()[i as usize].load(Ordering::Relaxed) as u64);
    }
    Err(Refused::ArrayTypeMismatch)
}

/// Stores `v` of static type `t` at element `i` of the array accessed by `a`, or the
/// error's message.
#[inline(always)]
fn store_element(heap: &Heap, a: &Access<'_>, i: i64, v: u64, t: Ty) -> Result<(), Refused> {
    let obj = a.obj();
    if !in_bounds(i, obj.len()) {
        return Err(index_error(obj.header().class));
    }
    let kind = obj.kind();
    if kind == ObjKind::IntArray && t != Ty::Ref {
        // SAFETY: an int array, a word object, of more than `i` elements (checked above).
        unsafe { obj.slot_unchecked(i as usize) }.store(v, Ordering::Relaxed);
        return Ok(());
    }
    match (kind, t) {
        (ObjKind::ByteArray, Ty::Int | Ty::Any) => {
            obj.bytes()[i as usize].store(v as u8, Ordering::Relaxed)
        }
        (ObjKind::RefArray, Ty::Ref) => a.store_ref(i as usize, v),
        (ObjKind::RefArray, Ty::Any) if v == 0 || !dangling(heap, v) => a.store_ref(i as usize, v),
        _ => return Err(Refused::ArrayTypeMismatch),
    }
    Ok(())
}

/// Whether an array of kind `kind` holds words an element of static type `t` is read
/// from: an int array for `Int`, a reference array for `Ref`, either for `Any`. Shifts
/// and one bit test, where a match on the pair was an indirect jump on the kind.
#[inline(always)]
fn holds_words_of(kind: ObjKind, t: Ty) -> bool {
    const INT: u32 = 1 << ObjKind::IntArray as u32;
    const REF: u32 = 1 << ObjKind::RefArray as u32;
    // Byte `t` holds the kinds `t` reads words from.
    const KINDS: u32 = INT << (8 * Ty::Int as u32)
        | REF << (8 * Ty::Ref as u32)
        | (INT | REF) << (8 * Ty::Any as u32);
    KINDS >> (8 * t as u32 + kind as u32) & 1 != 0
}
