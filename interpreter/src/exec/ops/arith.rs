//! Integer arithmetic and compares on the operand stack, and their superinstructions
//! (see `super::super::fuse`): an operation with a constant or local operand, with its
//! result stored to a local, chains of two operations, and the division by a constant
//! as a multiply (`super::super::divconst`). A superinstruction that can fail reports
//! the position of its dividing instruction.

use marvin_runtime::BarrierMode;

use super::{Cx, Pos};
use crate::exec::binding::AppBinding;
use crate::exec::divconst::Magic;
use crate::exec::op::Op;
use crate::exec::operator::Bin;
use crate::exec::trap::Trap;

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    /// `a OP b` of the two top operands, for an operation that cannot fail.
    #[inline(always)]
    pub fn binop(&mut self, f: impl FnOnce(i64, i64) -> i64) {
        let b = self.pop() as i64;
        let a = self.pop() as i64;
        self.push(f(a, b) as u64);
    }

    /// `div` (`rem` when `rem`) of the two top operands.
    #[inline(always)]
    pub fn div(&mut self, rem: bool) -> Result<(), Trap> {
        let b = self.pop() as i64;
        let a = self.pop() as i64;
        if b == 0 {
            return Err(self.fail(Pos::Here, "division by zero"));
        }
        self.push(if rem {
            a.wrapping_rem(b)
        } else {
            a.wrapping_div(b)
        } as u64);
        Ok(())
    }

    #[inline(always)]
    pub fn neg(&mut self) {
        let a = self.pop() as i64;
        self.push(a.wrapping_neg() as u64);
    }

    /// `push k; OP`
    #[inline(always)]
    pub fn bin_const(&mut self, b: Bin, k: i64) -> Result<(), Trap> {
        let x = self.pop() as i64;
        let v = self.bin(b, x, k, 1)?;
        self.push(v as u64);
        self.advance(1);
        Ok(())
    }

    /// `push k; OP; store a`
    #[inline(always)]
    pub fn bin_const_store(&mut self, b: Bin, k: i64, a: u32) -> Result<(), Trap> {
        let x = self.pop() as i64;
        let v = self.bin(b, x, k, 1)?;
        self.set_local(a as usize, v as u64);
        self.advance(2);
        Ok(())
    }

    /// `load a; OP`
    #[inline(always)]
    pub fn bin_local(&mut self, b: Bin, a: u32) -> Result<(), Trap> {
        let y = self.local(a as usize) as i64;
        let x = self.pop() as i64;
        let v = self.bin(b, x, y, 1)?;
        self.push(v as u64);
        self.advance(1);
        Ok(())
    }

    /// `OP; store d`
    #[inline(always)]
    pub fn bin_store(&mut self, b: Bin, d: u32) -> Result<(), Trap> {
        let y = self.pop() as i64;
        let x = self.pop() as i64;
        let v = self.bin(b, x, y, 0)?;
        self.set_local(d as usize, v as u64);
        self.advance(1);
        Ok(())
    }

    /// `load a; push k; OP`
    #[inline(always)]
    pub fn load_bin_const(&mut self, a: u32, b: Bin, k: i64) -> Result<(), Trap> {
        let v = self.bin(b, self.local(a as usize) as i64, k, 2)?;
        self.push(v as u64);
        self.advance(2);
        Ok(())
    }

    /// `load a; load c; OP`
    #[inline(always)]
    pub fn load_bin_local(&mut self, a: u32, b: Bin, c: u32) -> Result<(), Trap> {
        let x = self.local(a as usize) as i64;
        let y = self.local(c as usize) as i64;
        let v = self.bin(b, x, y, 2)?;
        self.push(v as u64);
        self.advance(2);
        Ok(())
    }

    /// `load a; push k; OP; store d`
    #[inline(always)]
    pub fn load_bin_const_store(&mut self, a: u32, b: Bin, k: i64, d: u32) -> Result<(), Trap> {
        let v = self.bin(b, self.local(a as usize) as i64, k, 2)?;
        self.set_local(d as usize, v as u64);
        self.advance(3);
        Ok(())
    }

    /// `load a; load c; OP; store d`
    #[inline(always)]
    pub fn load_bin_local_store(&mut self, a: u32, b: Bin, c: u32, d: u32) -> Result<(), Trap> {
        let x = self.local(a as usize) as i64;
        let y = self.local(c as usize) as i64;
        let v = self.bin(b, x, y, 2)?;
        self.set_local(d as usize, v as u64);
        self.advance(3);
        Ok(())
    }

    /// `load a; load c; add; store d`
    #[inline(always)]
    pub fn load_add_local_store(&mut self, a: u32, c: u32, d: u32) {
        let x = self.local(a as usize);
        let y = self.local(c as usize);
        self.set_local(d as usize, x.wrapping_add(y));
        self.advance(3);
    }

    /// `load a; OP; store d`
    #[inline(always)]
    pub fn bin_local_store(&mut self, b: Bin, a: u32, d: u32) -> Result<(), Trap> {
        let y = self.local(a as usize) as i64;
        let x = self.pop() as i64;
        let v = self.bin(b, x, y, 1)?;
        self.set_local(d as usize, v as u64);
        self.advance(2);
        Ok(())
    }

    /// `load a; push k; OP1; load c; OP2`
    #[inline(always)]
    pub fn load_bin_const_bin_local(
        &mut self,
        a: u32,
        b1: Bin,
        k: i64,
        b2: Bin,
        c: u32,
    ) -> Result<(), Trap> {
        let x = self.bin(b1, self.local(a as usize) as i64, k, 2)?;
        let y = self.local(c as usize) as i64;
        let v = self.bin(b2, x, y, 4)?;
        self.push(v as u64);
        self.advance(4);
        Ok(())
    }

    /// `load a; push k; mul; load b; add`
    #[inline(always)]
    pub fn load_mul_add_local(&mut self, a: u32, k: i64, b: u32) {
        let x = (self.local(a as usize) as i64).wrapping_mul(k);
        self.push(x.wrapping_add(self.local(b as usize) as i64) as u64);
        self.advance(4);
    }

    /// `push k1; OP1; push k2; OP2; store d`
    #[inline(always)]
    pub fn bin_const2_store(
        &mut self,
        b1: Bin,
        k1: i64,
        b2: Bin,
        k2: i64,
        d: u32,
    ) -> Result<(), Trap> {
        let x = self.pop() as i64;
        let x = self.bin(b1, x, k1, 1)?;
        let v = self.bin(b2, x, k2, 3)?;
        self.set_local(d as usize, v as u64);
        self.advance(4);
        Ok(())
    }

    /// `load a; push k; add; store a`
    #[inline(always)]
    pub fn inc_local(&mut self, a: u32, k: i64) {
        let v = (self.local(a as usize) as i64).wrapping_add(k);
        self.set_local(a as usize, v as u64);
        self.advance(3);
    }

    /// `push k; div|rem` (`Op::DivConst`), by a multiply
    #[inline(always)]
    pub fn div_const(&mut self, op: &Op) {
        let Op::DivConst {
            k,
            magic,
            shift,
            rem,
        } = *op
        else {
            unreachable!("not a DivConst: {op:?}")
        };
        let x = self.pop() as i64;
        self.push(Magic { magic, shift }.apply(x, k, rem) as u64);
        self.advance(1);
    }

    /// `push k; div|rem; store d` (`Op::DivConstStore`), by a multiply
    #[inline(always)]
    pub fn div_const_store(&mut self, op: &Op) {
        let Op::DivConstStore {
            k,
            magic,
            shift,
            rem,
            d,
        } = *op
        else {
            unreachable!("not a DivConstStore: {op:?}")
        };
        let x = self.pop() as i64;
        self.set_local(d as usize, Magic { magic, shift }.apply(x, k, rem) as u64);
        self.advance(2);
    }

    /// `load a; push k; mul; load b; add; push m; rem|div; store d`
    /// (`Op::LoadMulAddDivStore`), the division by a multiply
    #[inline(always)]
    pub fn load_mul_add_div_store(&mut self, op: &Op) {
        let Op::LoadMulAddDivStore {
            a,
            b,
            d,
            shift_rem,
            k,
            m,
            magic,
        } = *op
        else {
            unreachable!("not a LoadMulAddDivStore: {op:?}")
        };
        let x = (self.local(a as usize) as i64)
            .wrapping_mul(k as i64)
            .wrapping_add(self.local(b as usize) as i64);
        let div = Magic {
            magic,
            shift: shift_rem & 63,
        };
        let v = div.apply(x, m as i64, shift_rem & 0x80 != 0);
        self.set_local(d as usize, v as u64);
        self.advance(7);
    }
}
