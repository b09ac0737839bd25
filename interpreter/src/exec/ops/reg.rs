//! The integer, move and branch ops of register runs (see `super::super::regs`): operands
//! in frame slots at fixed indices, never moving the stack pointer; the last op of a run
//! continues past the run's free positions ([`Cx::skip`]) and a failing one reports the
//! original position `at` of its instruction. One op per operation (`reg3`, `reg_k` with
//! the operation inlined), so that no op dispatches a second time on its operation
//! (`RegDiv` and `RegRem` too, through `reg_bin` with a constant operation); the compares
//! share `RegBin`/`RegBinI`.

use marvin_runtime::BarrierMode;

use super::{Cx, Pos};
use crate::exec::binding::AppBinding;
use crate::exec::divconst::Magic;
use crate::exec::op::{Op, R3, RI};
use crate::exec::operator::{Bin, Cond};
use crate::exec::trap::Trap;

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    /// `d = a OP b` for an operation that cannot fail.
    #[inline(always)]
    pub fn reg3(&mut self, r: &R3, f: impl FnOnce(i64, i64) -> i64) {
        let (x, y) = (
            self.local(r.a as usize) as i64,
            self.local(r.b as usize) as i64,
        );
        self.set_local(r.d as usize, f(x, y) as u64);
        self.skip(r.skip);
    }

    /// `d = a OP k` for an operation that cannot fail.
    #[inline(always)]
    pub fn reg_k(&mut self, r: &RI, f: impl FnOnce(i64, i64) -> i64) {
        let (x, k) = (self.local(r.a as usize) as i64, r.k as i64);
        self.set_local(r.d as usize, f(x, k) as u64);
        self.skip(r.skip);
    }

    /// `d = a OP b`, a division (failing at `at`) or a compare.
    #[inline(always)]
    pub fn reg_bin(&mut self, op: Bin, r: &R3, at: u32) -> Result<(), Trap> {
        let (x, y) = (
            self.local(r.a as usize) as i64,
            self.local(r.b as usize) as i64,
        );
        let Some(v) = op.apply(x, y) else {
            return Err(self.fail(Pos::At(at), "division by zero"));
        };
        self.set_local(r.d as usize, v as u64);
        self.skip(r.skip);
        Ok(())
    }

    /// `d = a OP k`: `regs` makes no division by a constant zero, so this cannot fail.
    #[inline(always)]
    pub fn reg_bin_k(&mut self, op: Bin, r: &RI) {
        let v = op
            .apply(self.local(r.a as usize) as i64, r.k as i64)
            .unwrap_or(0);
        self.set_local(r.d as usize, v as u64);
        self.skip(r.skip);
    }

    /// `d = a / k` (`a rem k` when `rem`, `Op::RegDivConst`), by a multiply
    #[inline(always)]
    pub fn reg_div_const(&mut self, op: &Op) {
        let Op::RegDivConst {
            d,
            a,
            k,
            shift,
            rem,
            skip,
            magic,
        } = *op
        else {
            unreachable!("not a RegDivConst: {op:?}")
        };
        let v = Magic { magic, shift }.apply(self.local(a as usize) as i64, k as i64, rem);
        self.set_local(d as usize, v as u64);
        self.skip(skip);
    }

    /// `d = a`
    #[inline(always)]
    pub fn reg_mov(&mut self, d: u16, a: u16, skip: u8) {
        self.set_local(d as usize, self.local(a as usize));
        self.skip(skip);
    }

    /// `d = k`
    #[inline(always)]
    pub fn reg_mov_k(&mut self, d: u16, k: i64, skip: u8) {
        self.set_local(d as usize, k as u64);
        self.skip(skip);
    }

    /// To `t` when `a CMP b`, else to `fall`
    #[inline(always)]
    pub fn reg_br(&mut self, c: Cond, a: u16, b: u16, t: u32, fall: u32) -> Result<(), Trap> {
        let (x, y) = (self.local(a as usize) as i64, self.local(b as usize) as i64);
        self.fork(c.taken(x, y), t, fall)
    }

    /// To `t` when `a CMP k`, else to `fall`
    #[inline(always)]
    pub fn reg_br_k(&mut self, c: Cond, a: u16, k: i32, t: u32, fall: u32) -> Result<(), Trap> {
        self.fork(c.taken(self.local(a as usize) as i64, k as i64), t, fall)
    }

    /// To `t` when `a` is non-zero (`on`) or zero, else to `fall`
    #[inline(always)]
    pub fn reg_br_nz(&mut self, a: u16, on: bool, t: u32, fall: u32) -> Result<(), Trap> {
        self.fork((self.local(a as usize) != 0) == on, t, fall)
    }
}
