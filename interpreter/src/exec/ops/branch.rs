//! Jumps and branches: `jmp`, `jz`, `jnz`, and the fused compare-and-branch and
//! loop-closing ops (`BrCmp`, `BrLocal*`, `IncJmp`, `IncBr*`, `AddIncBr`). A backward
//! transfer polls the safepoint: `jmp`/`jz`/`jnz` at their own position, a fused branch
//! with the destination's stack map ([`Cx::goto`]).

use marvin_runtime::BarrierMode;

use super::Cx;
use crate::exec::binding::AppBinding;
use crate::exec::op::Op;
use crate::exec::operator::Cond;
use crate::exec::trap::Trap;

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    /// `jmp t`, and `jz`/`jnz` when `taken`.
    #[inline(always)]
    pub fn jmp(&mut self, taken: bool, t: u32) -> Result<(), Trap> {
        if taken {
            let dest = self.code.as_ptr().wrapping_add(t as usize);
            if dest < self.ip {
                self.poll()?;
            }
            self.ip = dest;
        }
        Ok(())
    }

    /// Goes to `next`, polling the safepoint when that is a lower position (a backward
    /// transfer) with the destination's stack map; `pc` is past the current op.
    #[inline(always)]
    pub fn goto(&mut self, next: u32) -> Result<(), Trap> {
        let next = next as usize;
        let dest = self.code.as_ptr().wrapping_add(next);
        if dest < self.ip && self.safepoints.requested() {
            if let Some(f) = self.th.frames.last_mut() {
                f.at = next * std::mem::size_of::<Op>();
            }
            self.th.poll_slow()?;
        }
        self.ip = dest;
        Ok(())
    }

    /// A conditional branch of a fused op: to `t` when taken, else `rest` ops further.
    #[inline(always)]
    pub fn branch(&mut self, taken: bool, t: u32, rest: usize) -> Result<(), Trap> {
        if taken {
            self.goto(t)
        } else {
            self.advance(rest);
            Ok(())
        }
    }

    /// A fused branch that names both successors: `fall` always lies after the op
    /// (`fuse` keeps it so), so only the taken side can be a backward transfer. Kept a
    /// real branch: a select of the next position would make the next dispatch wait for
    /// the comparison.
    #[inline(always)]
    pub fn fork(&mut self, taken: bool, t: u32, fall: u32) -> Result<(), Trap> {
        if taken {
            self.goto(t)
        } else {
            self.jump(fall as usize);
            Ok(())
        }
    }

    /// `load a; push k; add; store a; jmp t`
    #[inline(always)]
    pub fn inc_jmp(&mut self, a: u32, k: i64, t: u32) -> Result<(), Trap> {
        let v = (self.local(a as usize) as i64).wrapping_add(k);
        self.set_local(a as usize, v as u64);
        self.goto(t)
    }

    /// `CMP; jnz/jz t`
    #[inline(always)]
    pub fn br_cmp(&mut self, c: Cond, t: u32) -> Result<(), Trap> {
        let y = self.pop() as i64;
        let x = self.pop() as i64;
        self.branch(c.taken(x, y), t, 1)
    }

    /// `load a; push k; CMP; jnz/jz t`
    #[inline(always)]
    pub fn br_local_const(
        &mut self,
        a: u32,
        k: i64,
        c: Cond,
        t: u32,
        fall: u32,
    ) -> Result<(), Trap> {
        let x = self.local(a as usize) as i64;
        self.fork(c.taken(x, k), t, fall)
    }

    /// `load a; load b; CMP; jnz/jz t`
    #[inline(always)]
    pub fn br_local_local(
        &mut self,
        a: u32,
        b: u32,
        c: Cond,
        t: u32,
        fall: u32,
    ) -> Result<(), Trap> {
        let x = self.local(a as usize) as i64;
        let y = self.local(b as usize) as i64;
        self.fork(c.taken(x, y), t, fall)
    }

    /// `a += inc` and the test of `a` against `k` (`Op::IncBrConst`) or the local `b`
    /// (`Op::IncBrLocal`)
    #[inline(always)]
    pub fn inc_br(&mut self, op: &Op) -> Result<(), Trap> {
        let (a, inc, c, t, fall) = match *op {
            Op::IncBrConst {
                a, inc, c, t, fall, ..
            }
            | Op::IncBrLocal {
                a, inc, c, t, fall, ..
            } => (a, inc, c, t, fall),
            _ => unreachable!("not an IncBr: {op:?}"),
        };
        let x = (self.local(a as usize) as i64).wrapping_add(inc as i64);
        self.set_local(a as usize, x as u64);
        let y = match *op {
            Op::IncBrLocal { b, .. } => self.local(b as usize) as i64,
            Op::IncBrConst { k, .. } => k as i64,
            _ => unreachable!("not an IncBr: {op:?}"),
        };
        self.fork(c.taken(x, y), t, fall)
    }

    /// `a += b` and `IncBrConst` on `i` (`Op::AddIncBr`)
    #[inline(always)]
    pub fn add_inc_br(&mut self, op: &Op) -> Result<(), Trap> {
        let Op::AddIncBr {
            a,
            b,
            i,
            inc,
            k,
            c,
            t,
            fall,
        } = *op
        else {
            unreachable!("not an AddIncBr: {op:?}")
        };
        let s = self.local(a as usize).wrapping_add(self.local(b as usize));
        self.set_local(a as usize, s);
        let x = (self.local(i as usize) as i64).wrapping_add(inc as i64);
        self.set_local(i as usize, x as u64);
        self.fork(c.taken(x, k as i64), t, fall)
    }
}
