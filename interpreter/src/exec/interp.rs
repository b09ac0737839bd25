//! The interpreter loop of one MASM thread.
//!
//! A thread keeps one value stack (`super::stack`): each frame's locals followed by its
//! operands. A call leaves the arguments where they are and they become the callee's
//! first locals. The verifier proves every stack depth and local index, and a call checks
//! that the callee's locals and deepest operand stack fit, so the loop indexes the stack
//! without bounds checks. `Thread::run` fetches an op and hands it to its family's
//! handler in `super::ops`, where the loop's state (the position, the stack and frame
//! cursors) is kept in registers. Every object access goes through the runtime's access
//! barrier (`Heap::access`); safepoints are polled at calls, backward branches and
//! allocations.

use std::ops::ControlFlow;
use std::sync::Arc;

use marvin_runtime::trace::names::CodeLocation;
use marvin_runtime::trace::Tracer;
use marvin_runtime::Holder;
use marvin_runtime::Mutator;
use marvin_runtime::ObjKind;
use marvin_runtime::{footprint, AllocBuffer, GcNeed};
use marvin_runtime::{BarrierMode, Barriers, NoBarriers};

use super::binding::AppBinding;
use super::op::Op;
use super::operator::Bin;
use super::ops::{Cx, Pos};
pub use super::stack::{frame_pc, frame_roots, Frame, ValueStack};
use super::trap::{error, Fault, Trap};

/// Collections one allocation under `--heap-limit` runs at most while other threads keep
/// refilling the heap (see [`Thread::alloc_slow`]).
const COLLECTIONS_PER_ALLOCATION: usize = 3;

/// A MASM thread of an app.
pub struct Thread<A: AppBinding> {
    pub app: Arc<A>,
    pub mutator: Mutator,
    pub stack: ValueStack,
    pub frames: Vec<Frame>,
    pub id: u64,
    pub tid: i32,
    /// This thread's allocation buffer (see `marvin_runtime::alloc_buffer`).
    pub alloc_buffer: AllocBuffer,
}

impl<A: AppBinding> Drop for Thread<A> {
    fn drop(&mut self) {
        self.app.heap().retire(&mut self.alloc_buffer);
    }
}

impl<A: AppBinding> Thread<A> {
    /// A new thread of `app`, registered as a mutator; fails only when its value stack
    /// cannot be mapped.
    pub fn new(app: &Arc<A>) -> Result<Thread<A>, Trap> {
        let stack = ValueStack::new(app.stack_slots()).map_err(|e| {
            error(
                format!("out of memory: cannot map a thread's stack: {e}"),
                0,
                0,
            )
        })?;
        Ok(Thread {
            app: app.clone(),
            mutator: app.safepoints().register(),
            stack,
            frames: Vec::new(),
            id: marvin_runtime::thread_id(),
            tid: current_tid(),
            alloc_buffer: AllocBuffer::new(),
        })
    }

    /// Runs `method` with `args` to completion on this thread.
    pub fn invoke(&mut self, method: u32, args: &[u64]) -> Result<u64, Trap> {
        let r = if self.app.barriers() {
            self.run::<Barriers>(method, args)
        } else {
            self.run::<NoBarriers>(method, args)
        };
        self.frames.clear();
        // What this invocation allocated is in the heap's counters when it returns.
        self.app.heap().settle(&mut self.alloc_buffer);
        r
    }

    /// Publishes this thread's roots and blocks in the safe state while `f` runs.
    pub fn blocking<R>(&mut self, extra: &[u64], f: impl FnOnce() -> R) -> R {
        // A collection may run meanwhile: its figures include this thread's allocations.
        self.app.heap().settle(&mut self.alloc_buffer);
        let (app, frames, stack) = (&*self.app, &self.frames, &self.stack);
        self.mutator.blocking(
            |r| {
                frame_roots(app, frames, stack, r);
                r.extend_from_slice(extra);
            },
            f,
        )
    }

    /// A full collection from this thread.
    pub fn collect(&mut self, extra: &[u64]) {
        let app = self.app.clone();
        self.blocking(extra, || app.collect_stopped());
    }

    /// Blocks (in the safe state) until this thread holds the monitor of `obj`, which
    /// `holder` held when `monitorenter` at `method`+`pc` found it taken; traced as a
    /// contention slice in the Android runtime's format.
    #[cold]
    #[inline(never)]
    pub(super) fn monitor_wait(&mut self, obj: u64, holder: Holder, method: u32, pc: usize) {
        let app = self.app.clone();
        let traced = app.is_traced();
        let start = if traced { Tracer::now_ns() } else { 0 };
        let (id, tid) = (self.id, self.tid);
        self.blocking(&[obj], || app.monitors().enter_blocking(obj, id, tid));
        if traced {
            let p = &app.loaded().vp.program;
            let m = &p.methods[method as usize];
            let from = CodeLocation {
                method: &m.name,
                file: Some(&p.file),
                line: m.lines.get(pc).copied().unwrap_or(0),
            };
            app.monitor_contended(holder, from, start, Tracer::now_ns());
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn poll_slow(&mut self) -> Result<(), Trap> {
        self.app.heap().settle(&mut self.alloc_buffer);
        let (app, frames, stack) = (&*self.app, &self.frames, &self.stack);
        self.mutator.poll(|r| frame_roots(app, frames, stack, r));
        if app.safepoints().is_terminating() {
            return Err(Trap::Terminated);
        }
        Ok(())
    }

    /// Allocates from this thread's buffer, or through [`Thread::alloc_slow`] when the
    /// buffer is used up or a safepoint is requested.
    #[inline(always)]
    pub(super) fn alloc(
        &mut self,
        kind: ObjKind,
        class: u32,
        len: u32,
        nrefs: u16,
    ) -> Result<u64, Fault> {
        if !self.app.safepoints().requested() {
            if let Some(h) =
                self.app
                    .heap()
                    .alloc_fast(&mut self.alloc_buffer, kind, class, len, nrefs)
            {
                return Ok(h.value());
            }
        }
        self.alloc_slow(kind, class, len, nrefs)
    }

    /// Allocates, collecting first when the heap asks for it.
    #[cold]
    #[inline(never)]
    fn alloc_slow(
        &mut self,
        kind: ObjKind,
        class: u32,
        len: u32,
        nrefs: u16,
    ) -> Result<u64, Fault> {
        let bytes = footprint(kind, len);
        self.app.heap().settle(&mut self.alloc_buffer);
        if self.app.heap().gc_need(bytes) == GcNeed::Collect {
            // Out of memory only when the object does not fit beside what a collection
            // found live. Other threads allocate again as soon as it ends: a heap they
            // filled up meanwhile is collected again (a few times at most, then the
            // object goes in over the limit by its size).
            for _ in 0..COLLECTIONS_PER_ALLOCATION {
                self.collect(&[]);
                if self.app.heap().full_after_gc(bytes) {
                    return Err(Fault::OutOfMemory);
                }
                if !self.app.heap().over_limit(bytes) {
                    break;
                }
            }
        } else if self.app.safepoints().requested() && self.poll_slow().is_err() {
            return Err(Fault::Terminated);
        }
        Ok(self
            .app
            .heap()
            .alloc_buffered(&mut self.alloc_buffer, kind, class, len, nrefs)?
            .value())
    }

    /// Runs `entry` with `args` until it returns: one dispatch per op, to the op's family
    /// handler (`super::ops`).
    ///
    /// This is the one function over 150 lines, on purpose: it is the dispatch loop, one
    /// `match` with an arm per op whose handlers are inlined into it, so that the
    /// instruction pointer, the stack and locals cursors stay in registers across ops and
    /// every op ends in its own jump to the next one. Split into functions, each dispatch
    /// would pass those through memory (the 2026-12 dispatch note measured what the
    /// cursors in locals saved).
    fn run<B: BarrierMode>(&mut self, entry: u32, args: &[u64]) -> Result<u64, Trap> {
        let app = self.app.clone();
        let mut cx = Cx::<A, B>::enter(self, &app, entry, args)?;
        macro_rules! ret {
            ($v:expr) => {{
                let v: u64 = $v;
                if let ControlFlow::Break(v) = cx.ret(v) {
                    return Ok(v);
                }
            }};
        }
        loop {
            // Matched in place (`match *op`): copying the 24-byte op out first cost a
            // store and reloads on every dispatch (about a third of an integer loop's time).
            let op = cx.next();
            match *op {
                // Constants, locals and stack moves (`ops::locals`).
                Op::Push(v) => cx.push(v as u64),
                Op::Load(i) => cx.load(i),
                Op::Store(i) => cx.store(i),
                Op::Pop => cx.sp -= 1,
                Op::Dup => cx.dup(),
                Op::Swap => cx.swap(),
                Op::LoadLoad(a, b) => cx.load_load(a, b),
                // Integer arithmetic and compares (`ops::arith`).
                Op::Add => cx.binop(|a, b| a.wrapping_add(b)),
                Op::Sub => cx.binop(|a, b| a.wrapping_sub(b)),
                Op::Mul => cx.binop(|a, b| a.wrapping_mul(b)),
                Op::Div => cx.div(false)?,
                Op::Rem => cx.div(true)?,
                Op::And => cx.binop(|a, b| a & b),
                Op::Or => cx.binop(|a, b| a | b),
                Op::Xor => cx.binop(|a, b| a ^ b),
                Op::Shl => cx.binop(|a, b| a.wrapping_shl(b as u32 & 63)),
                Op::Shr => cx.binop(|a, b| a.wrapping_shr(b as u32 & 63)),
                Op::Neg => cx.neg(),
                Op::Lt => cx.binop(|a, b| (a < b) as i64),
                Op::Le => cx.binop(|a, b| (a <= b) as i64),
                Op::Gt => cx.binop(|a, b| (a > b) as i64),
                Op::Ge => cx.binop(|a, b| (a >= b) as i64),
                Op::Eq => cx.binop(|a, b| (a == b) as i64),
                Op::Ne => cx.binop(|a, b| (a != b) as i64),
                Op::BinConst(b, k) => cx.bin_const(b, k)?,
                Op::BinConstStore(b, k, a) => cx.bin_const_store(b, k, a)?,
                Op::BinLocal(b, a) => cx.bin_local(b, a)?,
                Op::BinStore(b, d) => cx.bin_store(b, d)?,
                Op::LoadBinConst(a, b, k) => cx.load_bin_const(a, b, k)?,
                Op::LoadBinLocal(a, b, c) => cx.load_bin_local(a, b, c)?,
                Op::LoadBinConstStore(a, b, k, d) => cx.load_bin_const_store(a, b, k, d)?,
                Op::LoadBinLocalStore(a, b, c, d) => cx.load_bin_local_store(a, b, c, d)?,
                Op::LoadAddLocalStore(a, c, d) => cx.load_add_local_store(a, c, d),
                Op::BinLocalStore(b, a, d) => cx.bin_local_store(b, a, d)?,
                Op::LoadBinConstBinLocal(a, b1, k, b2, c) => {
                    cx.load_bin_const_bin_local(a, b1, k, b2, c)?
                }
                Op::LoadMulAddLocal(a, k, b) => cx.load_mul_add_local(a, k, b),
                Op::BinConst2Store(b1, k1, b2, k2, d) => cx.bin_const2_store(b1, k1, b2, k2, d)?,
                Op::IncLocal(a, k) => cx.inc_local(a, k),
                Op::DivConst { .. } => cx.div_const(op),
                Op::DivConstStore { .. } => cx.div_const_store(op),
                Op::LoadMulAddDivStore { .. } => cx.load_mul_add_div_store(op),
                // Jumps and branches (`ops::branch`).
                Op::Jmp(t) => cx.jmp(true, t)?,
                Op::Jz(t) => {
                    let taken = cx.pop() == 0;
                    cx.jmp(taken, t)?
                }
                Op::Jnz(t) => {
                    let taken = cx.pop() != 0;
                    cx.jmp(taken, t)?
                }
                Op::IncJmp(a, k, t) => cx.inc_jmp(a, k, t)?,
                Op::BrCmp(c, t) => cx.br_cmp(c, t)?,
                Op::BrLocalConst { a, k, c, t, fall } => cx.br_local_const(a, k, c, t, fall)?,
                Op::BrLocalLocal { a, b, c, t, fall } => cx.br_local_local(a, b, c, t, fall)?,
                Op::IncBrConst { .. } => cx.inc_br(op)?,
                Op::IncBrLocal { .. } => cx.inc_br(op)?,
                Op::AddIncBr { .. } => cx.add_inc_br(op)?,
                // Register runs' integer, move and branch ops (`ops::reg`).
                Op::RegBin { op, ref r, at } => cx.reg_bin(op, r, at)?,
                Op::RegDiv { ref r, at } => cx.reg_bin(Bin::Div, r, at)?,
                Op::RegRem { ref r, at } => cx.reg_bin(Bin::Rem, r, at)?,
                Op::RegAdd(ref r) => cx.reg3(r, |x, y| x.wrapping_add(y)),
                Op::RegSub(ref r) => cx.reg3(r, |x, y| x.wrapping_sub(y)),
                Op::RegMul(ref r) => cx.reg3(r, |x, y| x.wrapping_mul(y)),
                Op::RegAnd(ref r) => cx.reg3(r, |x, y| x & y),
                Op::RegOr(ref r) => cx.reg3(r, |x, y| x | y),
                Op::RegXor(ref r) => cx.reg3(r, |x, y| x ^ y),
                Op::RegShl(ref r) => cx.reg3(r, |x, y| x.wrapping_shl(y as u32 & 63)),
                Op::RegShr(ref r) => cx.reg3(r, |x, y| x.wrapping_shr(y as u32 & 63)),
                Op::RegBinI { op, ref r } => cx.reg_bin_k(op, r),
                Op::RegAddI(ref r) => cx.reg_k(r, |x, k| x.wrapping_add(k)),
                Op::RegMulI(ref r) => cx.reg_k(r, |x, k| x.wrapping_mul(k)),
                Op::RegAndI(ref r) => cx.reg_k(r, |x, k| x & k),
                Op::RegOrI(ref r) => cx.reg_k(r, |x, k| x | k),
                Op::RegXorI(ref r) => cx.reg_k(r, |x, k| x ^ k),
                Op::RegShlI(ref r) => cx.reg_k(r, |x, k| x.wrapping_shl(k as u32 & 63)),
                Op::RegShrI(ref r) => cx.reg_k(r, |x, k| x.wrapping_shr(k as u32 & 63)),
                Op::RegDivConst { .. } => cx.reg_div_const(op),
                Op::RegMov { d, a, skip } => cx.reg_mov(d, a, skip),
                Op::RegMovI { d, k, skip } => cx.reg_mov_k(d, k, skip),
                Op::RegBr { c, a, b, t, fall } => cx.reg_br(c, a, b, t, fall)?,
                Op::RegBrI { c, a, k, t, fall } => cx.reg_br_k(c, a, k, t, fall)?,
                Op::RegBrNz { a, on, t, fall } => cx.reg_br_nz(a, on, t, fall)?,
                // Arrays (`ops::array`).
                Op::ALoad(t) => cx.aload_op(t)?,
                Op::AStore(t) => cx.astore_op(t)?,
                Op::ALen => cx.alen(Pos::Here, None, None)?,
                Op::ALoadLocal(arr, i, ty) => cx.aload_local(arr, i, ty)?,
                Op::ALoadLocalBr(arr, i, on, t) => cx.aload_local_br(arr, i, on, t)?,
                Op::AStoreLocalConst(arr, i, k) => cx.astore_local_const(arr, i, k)?,
                Op::RegALoad { .. } => cx.reg_aload(op)?,
                Op::RegAStore { .. } => cx.reg_astore(op)?,
                Op::RegAStoreI { .. } => cx.reg_astore(op)?,
                Op::RegALen { d, arr, skip, at } => {
                    cx.alen(Pos::At(at), Some(arr), Some(d))?;
                    cx.skip(skip);
                }
                // Fields (`ops::field`).
                Op::GetField(ref s) => cx.get_field(s)?,
                Op::PutField(ref s) => cx.put_field(s)?,
                Op::PutFieldRef(ref s) => cx.put_field_ref(s)?,
                Op::GetFieldByName(f) => cx.get_field_by_name(f)?,
                Op::PutFieldByName(f) => cx.put_field_by_name(f)?,
                Op::LoadGetField(a, ref s) => cx.load_get_field(a, s, None)?,
                Op::LoadGetFieldStore(a, ref s, b) => cx.load_get_field(a, s, Some(b))?,
                Op::LoadLoadGetField(a, o, ref s) => cx.load_load_get_field(a, o, s)?,
                Op::LoadGetFieldBinPutField(o, ref g, b, ref f) => {
                    cx.load_get_field_bin_put_field(o, g, b, f)?
                }
                Op::LoadBinPutField(c, b, ref f) => cx.load_bin_put_field(c, b, f)?,
                Op::FieldBinLocal(o, ref s, b, c) => cx.field_bin_local(o, s, b, c)?,
                Op::BrLocalField { a, o, ref s, c, t } => cx.br_local_field(a, o, s, c, t)?,
                Op::RegGetField {
                    d,
                    o,
                    ref s,
                    skip,
                    at,
                } => cx.reg_get_field(d, o, s, skip, at)?,
                Op::RegPutField { .. } => cx.reg_put_field(op)?,
                // Calls and returns (`ops::call`).
                Op::Call(m) => {
                    let at = cx.at();
                    cx.call(m, at)?
                }
                Op::LoadCall(a, m) => cx.push_call([cx.local(a as usize)], m, 1)?,
                Op::LoadLoadCall(a, b, m) => {
                    cx.push_call([cx.local(a as usize), cx.local(b as usize)], m, 2)?
                }
                Op::ConstCall(k, m) => cx.push_call([k as u64], m, 1)?,
                Op::LoadAddConstCall(a, k, m) => {
                    cx.push_call([cx.local(a as usize).wrapping_add(k as u64)], m, 3)?
                }
                Op::Ret => ret!(cx.pop()),
                Op::RetLocal(a) => ret!(cx.local(a as usize)),
                Op::RetConst(k) => ret!(k as u64),
                Op::BinRet(b) => {
                    let y = cx.pop() as i64;
                    let x = cx.pop() as i64;
                    ret!(cx.bin(b, x, y, 0)? as u64)
                }
                // Allocation (`ops::alloc`).
                Op::New(c) => cx.new_instance(c)?,
                Op::NewArray(kind) => cx.new_array(kind)?,
                // Monitors and atomics (`ops::sync`).
                Op::Cas(ref s) => cx.cas_op(s, false)?,
                Op::CasRef(ref s) => cx.cas_op(s, true)?,
                Op::CasBr(ref s, on, t) => cx.cas_br(s, on, t)?,
                Op::Xadd(ref s) => cx.xadd(s)?,
                Op::LoadXadd(a, k, ref s, discard) => cx.load_xadd(a, k, s, discard)?,
                Op::CasByName(f) => cx.cas_by_name(f)?,
                Op::XaddByName(f) => cx.xadd_by_name(f)?,
                Op::MonitorEnter => cx.monitor_enter()?,
                Op::MonitorExit => cx.monitor_exit()?,
                // The runtime's services (`ops::system`).
                Op::Send(_)
                | Op::SendFront(_)
                | Op::Remove(_)
                | Op::Has(_)
                | Op::Quit
                | Op::Spawn(_)
                | Op::Sleep => cx.message(*op)?,
                Op::Print => cx.print(),
                Op::PrintC => cx.print_c(),
                Op::PrintS(s) => cx.print_s(s),
                Op::Time => cx.push(app.now_ns()),
                Op::Mark(s) => app.mark(s),
                Op::CpuTime => cx.push(marvin_runtime::cpuclock::thread_cpu_time_ns()),
                Op::UserTime => cx.user_time(),
                Op::Gc => cx.gc(),
                Op::Assert => cx.assert()?,
                Op::Halt => return Err(Trap::Halt(cx.pop() as i64)),
                // Native memory (`ops::native`).
                Op::NAlloc | Op::NFree | Op::NLoad | Op::NStore | Op::NCheck => cx.native(op)?,
            }
        }
    }
}

/// The calling thread's OS thread id.
pub fn current_tid() -> i32 {
    marvin_runtime::cpuclock::current_tid()
}
