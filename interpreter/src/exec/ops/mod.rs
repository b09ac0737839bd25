//! The interpreter loop's handlers, one module per op family, and the state they share.
//!
//! `Thread::run` (in `super::interp`) is a loop that fetches an op and hands it to its
//! family's handler: [`locals`] (constants, locals and stack moves), [`arith`] (integer
//! arithmetic and compares on the operand stack, and the fused forms of both), [`branch`]
//! (jumps and the fused compare-and-branch and loop-closing ops), [`reg`] (the integer,
//! move and branch ops of register runs, `super::regs`), [`array`], [`field`], [`call`]
//! (calls and returns), [`alloc`], [`sync`] (monitors and atomics), [`native`] (buffers
//! outside the heap) and [`system`] (messages, threads, output, clocks and the other
//! runtime services). The object access
//! path all of them take (null check, access barrier, class check) is [`access`].
//!
//! Every handler is a method of [`Cx`], the loop's state, inlined into the loop
//! (`#[inline(always)]`): the running position, stack and frame cursors live in the one
//! `Cx` of `run`, whose address never reaches a call that is not inlined, so the compiler
//! keeps them in registers as it did the loop's locals. A handler that can fail returns
//! the trap, built from the position of the instruction it stands for ([`Pos`]); the
//! position is computed on the failing path only.

pub(super) mod access;
pub(super) mod alloc;
pub(super) mod arith;
pub(super) mod array;
pub(super) mod branch;
pub(super) mod call;
pub(super) mod field;
pub(super) mod locals;
pub(super) mod native;
pub(super) mod reg;
pub(super) mod sync;
pub(super) mod system;

use std::marker::PhantomData;

use marvin_runtime::BarrierMode;
use marvin_runtime::Heap;
use marvin_runtime::Safepoints;

use super::binding::AppBinding;
use super::interp::Thread;
use super::loaded::{CallDesc, Loaded};
use super::op::Op;
use super::operator::Bin;
use super::stack::{Frame, Slots};
use super::trap::{error, Trap};

/// Where a failing op reports its error.
#[derive(Clone, Copy)]
pub(super) enum Pos {
    /// The running op's position (a stack op, or a superinstruction that advanced past
    /// the instructions before the failing one).
    Here,
    /// An original position (a register op's `at`).
    At(u32),
}

/// The interpreter loop's state: the thread, what stays fixed for an invocation, and the
/// running method, position and stack cursors.
pub(super) struct Cx<'l, 't, A: AppBinding, B: BarrierMode> {
    pub th: &'t mut Thread<A>,
    pub app: &'l A,
    pub loaded: &'l Loaded,
    pub heap: &'l Heap,
    pub safepoints: &'l Safepoints,
    pub calls: &'l [CallDesc],
    /// Every method's ops (`Loaded::code`), so that a call or a return reaches its
    /// method's ops through a slice held here rather than through `loaded` each time.
    pub codes: &'l [Vec<Op>],
    /// A call checks its frame against these two bounds, read once at entry.
    pub capacity: usize,
    pub frame_limit: usize,
    /// The frame count below this invocation: a return to it ends the invocation.
    pub depth0: usize,
    pub method: u32,
    pub code: &'l [Op],
    /// The next op to run: a pointer rather than an index, so a dispatch is one load;
    /// [`Cx::pc`] is its position (past the running op) where an error or a frame needs it.
    pub ip: *const Op,
    pub bp: usize,
    /// The top of the operand stack (an index into `stk`).
    pub sp: usize,
    /// The whole stack (operands are indexed by `sp`) and the running frame's locals.
    pub stk: Slots,
    pub fp: Slots,
    barriers: PhantomData<B>,
}

impl<'l, 't, A: AppBinding, B: BarrierMode> Cx<'l, 't, A, B> {
    /// Enters `entry` with `args` on `th`, above the frames it already runs.
    pub fn enter(
        th: &'t mut Thread<A>,
        app: &'l A,
        entry: u32,
        args: &[u64],
    ) -> Result<Self, Trap> {
        let loaded = app.loaded();
        let info = &loaded.vp.info;
        let bp = th.frames.last().map_or(0, |f| {
            f.bp as usize
                + info[f.method as usize].local_types.len()
                + info[f.method as usize].max_stack as usize
        });
        let nlocals = info[entry as usize].local_types.len();
        let capacity = th.stack.capacity();
        if bp + nlocals + info[entry as usize].max_stack as usize + 1 > capacity {
            return Err(error("stack overflow", entry, 0));
        }
        for i in 0..nlocals {
            th.stack.set(bp + i, args.get(i).copied().unwrap_or(0));
        }
        let stk = th.stack.slots(0);
        let depth0 = th.frames.len();
        let below = th.frames.last().copied();
        th.frames.push(Frame {
            method: entry,
            bp: bp as u32,
            at: 0,
            ret_method: below.map_or(0, |f| f.method),
            ret_bp: below.map_or(0, |f| f.bp),
            ret_at: below.map_or(0, |f| f.at),
        });
        let code: &'l [Op] = &loaded.code[entry as usize];
        Ok(Cx {
            th,
            app,
            loaded,
            heap: app.heap(),
            safepoints: app.safepoints(),
            calls: &loaded.calls[..],
            codes: &loaded.code[..],
            capacity,
            frame_limit: depth0.saturating_add(app.max_frames()),
            depth0,
            method: entry,
            code,
            ip: code.as_ptr(),
            bp,
            sp: bp + nlocals,
            stk,
            fp: stk.at(bp),
            barriers: PhantomData,
        })
    }

    /// The op at `ip`, with `ip` moved past it.
    #[inline(always)]
    pub fn next(&mut self) -> &'l Op {
        debug_assert!(self.pc() < self.code.len());
        // SAFETY: `ip` points into `code` (it is only ever set to a position of the
        // running method, or advanced within one): the verifier proves every reachable
        // position is in range and that no path falls off the end of a method (each ends
        // in ret/jmp/halt), and `code` lives as long as `loaded`.
        let op: &'l Op = unsafe { &*self.ip };
        self.ip = self.ip.wrapping_add(1);
        op
    }

    /// The position of `ip` (past the running op).
    #[inline(always)]
    pub fn pc(&self) -> usize {
        (self.ip as usize - self.code.as_ptr() as usize) / std::mem::size_of::<Op>()
    }

    /// The running op's byte offset into `code` (a frame's `at`).
    #[inline(always)]
    pub fn at(&self) -> usize {
        self.ip as usize - self.code.as_ptr() as usize - std::mem::size_of::<Op>()
    }

    /// The error `msg` at `pos` of the running method.
    #[inline(always)]
    pub fn fail(&self, pos: Pos, msg: impl Into<String>) -> Trap {
        let pc = match pos {
            Pos::Here => self.pc() - 1,
            Pos::At(at) => at as usize,
        };
        error(msg, self.method, pc as u32)
    }

    /// Continues at position `t` of the running method.
    #[inline(always)]
    pub fn jump(&mut self, t: usize) {
        self.ip = self.code.as_ptr().wrapping_add(t);
    }

    /// Moves `ip` `n` positions further.
    #[inline(always)]
    pub fn advance(&mut self, n: usize) {
        self.ip = self.ip.wrapping_add(n);
    }

    #[inline(always)]
    pub fn push(&mut self, v: u64) {
        self.stk.set(self.sp, v);
        self.sp += 1;
    }

    #[inline(always)]
    pub fn pop(&mut self) -> u64 {
        self.sp -= 1;
        self.stk.get(self.sp)
    }

    /// Local (frame slot) `i`.
    #[inline(always)]
    pub fn local(&self, i: usize) -> u64 {
        self.fp.get(i)
    }

    #[inline(always)]
    pub fn set_local(&self, i: usize, v: u64) {
        self.fp.set(i, v)
    }

    /// Continues `n` positions past the next, for the last op of a register run. A real
    /// branch, kept so by the empty `asm!`: as an unconditional add of `n`, the next
    /// dispatch would wait for the load of `n`, where predicting the branch lets it start
    /// at once (`n` is 0 for every op but a run's last).
    #[inline(always)]
    pub fn skip(&mut self, n: u8) {
        if n != 0 {
            // SAFETY: an empty instruction sequence: no memory, stack or register effect;
            // it only keeps the compiler from merging the two paths.
            unsafe { std::arch::asm!("", options(nomem, nostack, preserves_flags)) };
            self.ip = self.ip.wrapping_add(n as usize);
        }
    }

    /// Saves the running op's position in its frame (before a safepoint, a block or an
    /// allocation).
    #[inline(always)]
    pub fn save_pc(&mut self) {
        let at = self.at();
        if let Some(f) = self.th.frames.last_mut() {
            f.at = at;
        }
    }

    /// Polls the safepoint at the running op.
    #[inline(always)]
    pub fn poll(&mut self) -> Result<(), Trap> {
        if self.safepoints.requested() {
            self.save_pc();
            self.th.poll_slow()?;
        }
        Ok(())
    }

    /// Applies `b` for a superinstruction, failing at the instruction `off` past the
    /// run's first (`pc` is past the run's first op).
    #[inline(always)]
    pub fn bin(&self, b: Bin, x: i64, y: i64, off: usize) -> Result<i64, Trap> {
        match b.apply(x, y) {
            Some(v) => Ok(v),
            None => Err(error(
                "division by zero",
                self.method,
                (self.pc() - 1 + off) as u32,
            )),
        }
    }
}
