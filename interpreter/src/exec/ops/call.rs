//! Calls and returns: `call`, `ret`, and the fused forms that push a call's arguments
//! (`LoadCall`, `LoadLoadCall`, `ConstCall`, `LoadAddConstCall`) or compute a return's
//! value (`RetLocal`, `RetConst`, `BinRet`). A call leaves its arguments where they are,
//! as the callee's first locals, and pushes one frame; a return pops it and resumes the
//! caller from the frame's `ret_*` alone.

use std::ops::ControlFlow;

use marvin_runtime::BarrierMode;

use super::Cx;
use crate::exec::binding::AppBinding;
use crate::exec::op::Op;
use crate::exec::stack::Frame;
use crate::exec::trap::{error, Trap};

impl<A: AppBinding, B: BarrierMode> Cx<'_, '_, A, B> {
    /// Calls `m` from the `call` at byte offset `at` of the running method, its arguments
    /// on the stack: polls the safepoint there, checks the callee's frame against the
    /// stack's capacity and the call-depth limit (a stack overflow at the `call`), zeroes
    /// its locals past the arguments, and enters it.
    #[inline(always)]
    pub fn call(&mut self, m: u32, at: usize) -> Result<(), Trap> {
        if self.safepoints.requested() {
            if let Some(f) = self.th.frames.last_mut() {
                f.at = at;
            }
            self.th.poll_slow()?;
        }
        // One lookup: the callee's descriptor (see `loaded::CallDesc`).
        let d = self.calls[m as usize];
        let nbp = self.sp - d.args as usize;
        if nbp + d.need as usize > self.capacity || self.th.frames.len() >= self.frame_limit {
            let pc = at / std::mem::size_of::<Op>();
            return Err(error("stack overflow", self.method, pc as u32));
        }
        for i in d.args as usize..d.locals as usize {
            self.stk.set(nbp + i, 0);
        }
        self.th.frames.push(Frame {
            method: m,
            bp: nbp as u32,
            at: 0,
            ret_method: self.method,
            ret_bp: self.bp as u32,
            ret_at: at,
        });
        self.method = m;
        self.code = &self.codes[m as usize];
        self.bp = nbp;
        self.fp = self.stk.at(nbp);
        self.sp = nbp + d.locals as usize;
        self.ip = self.code.as_ptr();
        Ok(())
    }

    /// `call m` after pushing `args` (the fused forms; `n` the instructions before the
    /// `call`, where the frame stands).
    #[inline(always)]
    pub fn push_call<const N: usize>(
        &mut self,
        args: [u64; N],
        m: u32,
        n: usize,
    ) -> Result<(), Trap> {
        for v in args {
            self.push(v);
        }
        self.call(m, self.at() + n * std::mem::size_of::<Op>())
    }

    /// Returns `v` to the caller, which resumes after the `call` its frame stands at, or
    /// ends the invocation (`Break(v)`) when its entry method returns.
    #[inline(always)]
    pub fn ret(&mut self, v: u64) -> ControlFlow<u64> {
        let f = self.th.frames.pop().expect("running frame");
        if self.th.frames.len() == self.depth0 {
            return ControlFlow::Break(v);
        }
        self.sp = self.bp;
        self.method = f.ret_method;
        self.code = &self.codes[self.method as usize];
        self.bp = f.ret_bp as usize;
        self.fp = self.stk.at(self.bp);
        self.ip = self
            .code
            .as_ptr()
            .wrapping_byte_add(f.ret_at + std::mem::size_of::<Op>());
        self.push(v);
        ControlFlow::Continue(())
    }
}
