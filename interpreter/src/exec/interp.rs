//! The interpreter loop of one MASM thread.
//!
//! A thread keeps one value stack: each frame's locals followed by its operands. A
//! call leaves the arguments where they are and they become the callee's first locals.
//! The verifier proves every stack depth and local index, and a call checks that the
//! callee's locals and deepest operand stack fit, so the loop indexes the stack without
//! bounds checks (see [`ValueStack`]). The loop keeps what every op needs in locals the
//! compiler can hold in registers: a pointer to the next op (not an index, so a dispatch
//! is one load), and cursors to the stack and to the running frame's locals ([`Slots`]),
//! rather than reaching them through `self` on every op. Register ops (`super::regs`) read
//! and write frame slots at fixed indices and never move the stack pointer; a failing one
//! reports its instruction's position (`fail!(at, ...)`), and one that ends a run continues
//! past the run's free positions with a predicted branch (`skip!`) rather than an add, so
//! the next dispatch does not wait for the load of the distance. Every object access goes through
//! the runtime's access barrier (`Heap::access`); safepoints are polled at calls, backward
//! branches and allocations.
//!
//! `cas` and `xadd` are sequentially consistent, as Java's `compareAndSet` and
//! `getAndAdd` are (volatile semantics); on x86 that is the same `lock cmpxchg` /
//! `lock xadd` a weaker ordering would give, so the hot path pays nothing for it. A
//! resolved field op reaches its slot unchecked once the class compare has passed; the
//! by-name ops resolve first (`op::resolve_by_name`) and then take the same barrier,
//! class check and atomic.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use marvin_runtime::barrier::{AccessKind, BarrierMode};
use marvin_runtime::header::ObjKind;
use marvin_runtime::heap::{footprint, AllocBuffer, GcNeed, Handle, MAX_ARRAY_LEN};
use marvin_runtime::monitor::Holder;
use marvin_runtime::safepoint::Mutator;
use marvin_runtime::trace::names::CodeLocation;
use marvin_runtime::trace::Tracer;

use super::binding::{AppBinding, Post, PostAt};
use super::divconst::Magic;
use super::op::{resolve_by_name, FieldUse, Op, ARRAY_CLASS};
use super::trap::{error, Fault, Trap};
use crate::isa::Ty;

/// Collections one allocation under `--heap-limit` runs at most while other threads keep
/// refilling the heap (see [`Thread::alloc_slow`]).
const COLLECTIONS_PER_ALLOCATION: usize = 3;

/// A frame: which method, where its locals start on the value stack, where it stands,
/// and the frame below it to return to.
///
/// Positions are byte offsets into a method's ops (no division by the op's size on the
/// call path). A call pushes one frame that carries its caller's method, base and `call`
/// position (`ret_*`), and a return pops it and resumes from those alone: the caller's
/// own entry is neither written by the call nor read by the return. So a frame's own
/// `at` is current only while it runs (written where it polls, blocks or fails); a
/// caller's position is its callee's `ret_at` ([`frame_pc`]).
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub method: u32,
    pub bp: u32,
    /// The running frame's op, where it was last saved.
    pub at: usize,
    /// The frame below: its method, base and `call` (for an invocation's entry frame, the
    /// frame it was invoked from, as that frame was saved).
    pub ret_method: u32,
    pub ret_bp: u32,
    pub ret_at: usize,
}

/// The position of the op frame `i` of `frames` stands at: the running frame's saved
/// one, a caller's `call`.
pub fn frame_pc(frames: &[Frame], i: usize) -> usize {
    let at = match frames.get(i + 1) {
        Some(callee) => callee.ret_at,
        None => frames.get(i).map_or(0, |f| f.at),
    };
    at / std::mem::size_of::<Op>()
}

/// A thread's value stack with unchecked indexing.
pub struct ValueStack {
    /// A private anonymous mapping: the kernel hands out zeroed pages on first touch, so
    /// a deep stack costs memory only as deep as it is used (a `calloc` of this size may
    /// come from the allocator's heap and be zeroed, that is touched, at once).
    map: memmap2::MmapMut,
    ptr: *mut u64,
    len: usize,
}

impl ValueStack {
    pub fn new(slots: usize) -> std::io::Result<ValueStack> {
        let len = slots.max(16);
        let mut map = memmap2::MmapOptions::new()
            .len(len * 8)
            .no_reserve_swap()
            .map_anon()?;
        let ptr = map.as_mut_ptr() as *mut u64;
        Ok(ValueStack { map, ptr, len })
    }

    pub fn capacity(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> u64 {
        debug_assert!(i < self.len);
        // SAFETY: every index the loop uses is below bp + locals + max_stack of the
        // running frame (proved by the verifier), and `call` checked that this bound
        // is within the stack's capacity; `ptr` points at `len` u64s of `map`, which
        // lives as long as `self` and is only accessed through `self`.
        unsafe { *self.ptr.add(i) }
    }

    #[inline(always)]
    pub(crate) fn set(&mut self, i: usize, v: u64) {
        debug_assert!(i < self.len);
        // SAFETY: as in `get`; `&mut self` makes this the only access.
        unsafe { *self.ptr.add(i) = v }
    }

    /// The slots from `from` on as a cursor the loop keeps in a register: the stack's
    /// mapping never moves, so the loop need not reach it through `self` on every access.
    #[inline(always)]
    pub(crate) fn slots(&self, from: usize) -> Slots {
        debug_assert!(from <= self.len);
        Slots {
            ptr: self.ptr.wrapping_add(from),
            #[cfg(debug_assertions)]
            left: self.len - from,
        }
    }

    pub fn slice(&self, from: usize, to: usize) -> &[u64] {
        let to = to.min(self.len);
        let from = from.min(to);
        // SAFETY: `from..to` lies within the mapping (clamped above), borrowed for as
        // long as `self` is.
        unsafe { std::slice::from_raw_parts(self.ptr.add(from), to - from) }
    }

    /// The mapping (kept for its lifetime; the pointer above borrows it).
    pub fn mapped_bytes(&self) -> usize {
        self.map.len()
    }
}

/// The slots of a [`ValueStack`] from some index on (the whole stack, or a frame's
/// locals), indexed without bounds checks as [`ValueStack::get`] is.
#[derive(Clone, Copy)]
pub(crate) struct Slots {
    ptr: *mut u64,
    #[cfg(debug_assertions)]
    left: usize,
}

impl Slots {
    /// The slots from `i` on.
    #[inline(always)]
    fn at(self, i: usize) -> Slots {
        #[cfg(debug_assertions)]
        debug_assert!(i <= self.left);
        Slots {
            ptr: self.ptr.wrapping_add(i),
            #[cfg(debug_assertions)]
            left: self.left - i,
        }
    }

    #[inline(always)]
    fn get(self, i: usize) -> u64 {
        #[cfg(debug_assertions)]
        debug_assert!(i < self.left);
        // SAFETY: as in `ValueStack::get`: the loop makes its cursors from the running
        // thread's stack, whose mapping outlives the loop and never moves, and indexes
        // them only below bp + locals + max_stack of the running frame (proved by the
        // verifier and checked against the capacity by `call`).
        unsafe { *self.ptr.add(i) }
    }

    #[inline(always)]
    fn set(self, i: usize, v: u64) {
        #[cfg(debug_assertions)]
        debug_assert!(i < self.left);
        // SAFETY: as in `get`; the loop is the only code touching the stack while it
        // runs (collections read it from this thread, between instructions).
        unsafe { *self.ptr.add(i) = v }
    }
}

/// A MASM thread of an app.
pub struct Thread<A: AppBinding> {
    pub app: Arc<A>,
    pub mutator: Mutator,
    pub stack: ValueStack,
    pub frames: Vec<Frame>,
    pub id: u64,
    pub tid: i32,
    /// This thread's allocation buffer (see `marvin_runtime::heap::alloc_buffer`).
    pub alloc_buffer: AllocBuffer,
}

impl<A: AppBinding> Drop for Thread<A> {
    fn drop(&mut self) {
        self.app.heap().retire(&mut self.alloc_buffer);
    }
}

/// Writes the references held by `frames` (as stopped at their `pc`s) into `out`.
pub fn frame_roots<A: AppBinding>(
    app: &A,
    frames: &[Frame],
    stack: &ValueStack,
    out: &mut Vec<u64>,
) {
    let info = &app.loaded().vp.info;
    let methods = &app.loaded().vp.program.methods;
    for (i, f) in frames.iter().enumerate() {
        let mi = &info[f.method as usize];
        let bp = f.bp as usize;
        for (k, t) in mi.local_types.iter().enumerate() {
            root(*t, stack.get(bp + k), out);
        }
        let types = mi
            .stack_types
            .get(frame_pc(frames, i))
            .map_or(&[][..], |v| v.as_slice());
        // A caller's top operands moved into its callee's locals.
        let depth = match frames.get(i + 1) {
            Some(callee) => types
                .len()
                .saturating_sub(methods[callee.method as usize].args as usize),
            None => types.len(),
        };
        let ob = bp + mi.local_types.len();
        for (k, t) in types[..depth].iter().enumerate() {
            root(*t, stack.get(ob + k), out);
        }
    }
}

/// Adds a slot's value to the roots: always for `ref` slots, and for slots of open type
/// (`Any`: an array element copied with `aload`/`astore`, an unused argument) whenever
/// the value is a live handle, so a reference held only there survives a collection
/// (conservatively: an int that looks like a handle keeps that object alive a while).
#[inline]
fn root(t: Ty, v: u64, out: &mut Vec<u64>) {
    match t {
        Ty::Ref => out.push(v),
        Ty::Any if v != 0 && v <= u32::MAX as u64 => out.push(v),
        _ => {}
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
            id: marvin_runtime::monitor::thread_id(),
            tid: current_tid(),
            alloc_buffer: AllocBuffer::new(),
        })
    }

    /// Runs `method` with `args` to completion on this thread.
    pub fn invoke(&mut self, method: u32, args: &[u64]) -> Result<u64, Trap> {
        let r = if self.app.barriers() {
            self.run::<marvin_runtime::barrier::Barriers>(method, args)
        } else {
            self.run::<marvin_runtime::barrier::NoBarriers>(method, args)
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
    fn monitor_wait(&mut self, obj: u64, holder: Holder, method: u32, pc: usize) {
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
    fn poll_slow(&mut self) -> Result<(), Trap> {
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
    fn alloc(&mut self, kind: ObjKind, class: u32, len: u32, nrefs: u16) -> Result<u64, Fault> {
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

    /// Executes one message, thread or looper instruction at `method`+`pc` on the value
    /// stack whose top is `sp`: pops its operands, asks the app to carry it out, and
    /// returns the new top.
    fn message_op(
        &mut self,
        op: Op,
        mut sp: usize,
        method: u32,
        pc: usize,
    ) -> Result<usize, Fault> {
        let app = self.app.clone();
        let arg_is_ref = |depth_from_top: usize| {
            let types = &app.loaded().vp.info[method as usize].stack_types[pc];
            types.len() >= depth_from_top && types[types.len() - depth_from_top] == Ty::Ref
        };
        let pop = |sp: &mut usize| {
            *sp -= 1;
            self.stack.get(*sp)
        };
        match op {
            Op::Send(m) | Op::SendFront(m) => {
                let front = matches!(op, Op::SendFront(_));
                let arg_is_ref = arg_is_ref(if front { 1 } else { 2 });
                let when = if front {
                    PostAt::Front
                } else {
                    PostAt::Delayed {
                        ms: (pop(&mut sp) as i64).max(0) as u64,
                    }
                };
                let arg = pop(&mut sp);
                let what = pop(&mut sp) as i64;
                A::post(
                    &app,
                    Post {
                        method: m,
                        what,
                        arg,
                        arg_is_ref,
                        when,
                    },
                )?;
            }
            Op::Remove(m) => {
                let what = pop(&mut sp) as i64;
                app.remove(m, what);
            }
            Op::Has(m) => {
                let what = pop(&mut sp) as i64;
                let has = app.has(m, what);
                self.stack.set(sp, has as u64);
                sp += 1;
            }
            Op::Quit => app.quit(),
            Op::Spawn(m) => {
                let arg_is_ref = arg_is_ref(1);
                let arg = pop(&mut sp);
                A::spawn(&app, m, arg, arg_is_ref)?;
            }
            Op::Sleep => {
                let ms = pop(&mut sp) as i64;
                let until = Instant::now() + Duration::from_millis(ms.max(0) as u64);
                let a = app.clone();
                self.blocking(&[], || a.sleep_until(until));
                if app.safepoints().is_terminating() {
                    return Err(Fault::Terminated);
                }
            }
            _ => unreachable!("not a message instruction: {op:?}"),
        }
        Ok(sp)
    }

    fn run<B: BarrierMode>(&mut self, entry: u32, args: &[u64]) -> Result<u64, Trap> {
        let app_arc = self.app.clone();
        let app = &*app_arc;
        let loaded = app.loaded();
        let heap = app.heap();
        let info = &loaded.vp.info;
        let calls = &loaded.calls[..];

        // Enter the entry method.
        let base = self.frames.last().map_or(0, |f| {
            f.bp as usize
                + info[f.method as usize].local_types.len()
                + info[f.method as usize].max_stack as usize
        });
        let mut method = entry;
        let mut code: &[Op] = &loaded.code[method as usize];
        let mut bp = base;
        let nlocals = info[method as usize].local_types.len();
        if bp + nlocals + info[method as usize].max_stack as usize + 1 > self.stack.capacity() {
            return Err(error("stack overflow", method, 0));
        }
        for i in 0..nlocals {
            self.stack.set(bp + i, args.get(i).copied().unwrap_or(0));
        }
        let mut sp = bp + nlocals;
        // The next op to run: a pointer rather than an index, so a dispatch is one load;
        // `pc!()` is its position (past the running op) where an error or a frame needs it.
        let mut ip: *const Op = code.as_ptr();
        // The whole stack (operands are indexed by `sp`) and the running frame's locals.
        let stk = self.stack.slots(0);
        let mut fp = stk.at(bp);
        let safepoints: &marvin_runtime::safepoint::Safepoints = app.safepoints();
        let depth0 = self.frames.len();
        // A call checks its frame against these two bounds, read once here.
        let capacity = self.stack.capacity();
        let frame_limit = depth0.saturating_add(app.max_frames());
        let below = self.frames.last().copied();
        self.frames.push(Frame {
            method,
            bp: bp as u32,
            at: 0,
            ret_method: below.map_or(0, |f| f.method),
            ret_bp: below.map_or(0, |f| f.bp),
            ret_at: below.map_or(0, |f| f.at),
        });

        macro_rules! pc {
            () => {
                (ip as usize - code.as_ptr() as usize) / std::mem::size_of::<Op>()
            };
        }
        // The running op's byte offset into `code` (a frame's `at`).
        macro_rules! at {
            () => {
                ip as usize - code.as_ptr() as usize - std::mem::size_of::<Op>()
            };
        }
        // Continues at position `$t` of the running method.
        macro_rules! jump {
            ($t:expr) => {
                ip = code.as_ptr().wrapping_add($t)
            };
        }
        macro_rules! pop {
            () => {{
                sp -= 1;
                stk.get(sp)
            }};
        }
        macro_rules! push {
            ($v:expr) => {{
                let v: u64 = $v;
                stk.set(sp, v);
                sp += 1;
            }};
        }
        macro_rules! binop {
            (|$a:ident, $b:ident| $e:expr) => {{
                let $b = pop!() as i64;
                let $a = pop!() as i64;
                push!(($e) as u64);
            }};
        }
        // Fails with `$msg` at original position `$pos` (a register op's `at`).
        macro_rules! fail {
            ($pos:expr, $msg:expr) => {{
                return Err(error($msg, method, ($pos) as u32));
            }};
        }
        // Fails at the running op's position.
        macro_rules! trap {
            ($msg:expr) => {
                fail!(pc!() - 1, $msg)
            };
        }
        macro_rules! save_pc {
            () => {{
                if let Some(f) = self.frames.last_mut() {
                    f.at = at!();
                }
            }};
        }
        macro_rules! poll {
            () => {{
                if safepoints.requested() {
                    save_pc!();
                    self.poll_slow()?;
                }
            }};
        }
        // The object access macros fail at the running op's position, or at `@ $pos`.
        macro_rules! handle {
            ($v:expr) => {
                handle!(@ pc!() - 1; $v)
            };
            (@ $pos:expr; $v:expr) => {{
                match Handle::from_value($v) {
                    Some(h) => h,
                    None => fail!($pos, "null dereference"),
                }
            }};
        }
        macro_rules! access {
            ($h:expr, $kind:expr) => {
                access!(@ pc!() - 1; $h, $kind)
            };
            (@ $pos:expr; $h:expr, $kind:expr) => {{
                match heap.access::<B>($h, $kind) {
                    Ok(a) => a,
                    Err(e) => fail!($pos, e.to_string()),
                }
            }};
        }
        macro_rules! instance {
            ($h:expr, $kind:expr, $s:expr) => {
                instance!(@ pc!() - 1; $h, $kind, $s)
            };
            (@ $pos:expr; $h:expr, $kind:expr, $s:expr) => {{
                let a = access!(@ $pos; $h, $kind);
                if a.obj().header().class != $s.class {
                    let name = &loaded.vp.program.classes[$s.class as usize].name;
                    fail!($pos, format!("class mismatch (expected {name})"));
                }
                a
            }};
        }
        // The word of integer field `$s` in the instance `$h`, class-checked for `$kind`,
        // bound to `$w` for `$body` (the access is held until `$body` ends).
        macro_rules! with_field {
            ($h:expr, $kind:expr, $s:expr, |$w:ident| $body:expr) => {
                with_field!(@ pc!() - 1; $h, $kind, $s, |$w| $body)
            };
            (@ $pos:expr; $h:expr, $kind:expr, $s:expr, |$w:ident| $body:expr) => {{
                let acc = instance!(@ $pos; $h, $kind, $s);
                // SAFETY: the class check proved an instance of `$s.class`, whose layout
                // has slot `$s.slot`.
                let $w = unsafe { acc.obj().slot_unchecked($s.slot as usize) };
                $body
            }};
        }
        macro_rules! read_field {
            ($h:expr, $s:expr) => {
                read_field!(@ pc!() - 1; $h, $s)
            };
            (@ $pos:expr; $h:expr, $s:expr) => {
                with_field!(@ $pos; $h, AccessKind::Read, $s, |w| w.load(Ordering::Relaxed))
            };
        }
        macro_rules! write_field {
            ($h:expr, $s:expr, $v:expr) => {
                write_field!(@ pc!() - 1; $h, $s, $v)
            };
            (@ $pos:expr; $h:expr, $s:expr, $v:expr) => {
                with_field!(@ $pos; $h, AccessKind::Write, $s, |w| w
                    .store($v, Ordering::Relaxed))
            };
        }

        // For superinstructions: `pc` is past the run's first op.
        macro_rules! bin {
            ($b:expr, $x:expr, $y:expr, $at:expr) => {
                match $b.apply($x, $y) {
                    Some(v) => v,
                    None => return Err(error("division by zero", method, (pc!() - 1 + $at) as u32)),
                }
            };
        }
        // Goes to `next`, polling the safepoint when that is a lower position (a backward
        // transfer) with the destination's stack map; `pc` is past the current op.
        macro_rules! goto {
            ($next:expr) => {{
                let next = $next as usize;
                let dest = code.as_ptr().wrapping_add(next);
                if dest < ip && safepoints.requested() {
                    if let Some(f) = self.frames.last_mut() {
                        f.at = next * std::mem::size_of::<Op>();
                    }
                    self.poll_slow()?;
                }
                ip = dest;
            }};
        }
        // A conditional branch of a fused op: to `t` when taken, else `rest` ops further.
        macro_rules! branch {
            ($taken:expr, $t:expr, $rest:expr) => {{
                if $taken {
                    goto!($t);
                } else {
                    ip = ip.wrapping_add($rest);
                }
            }};
        }
        // A fused branch that names both successors: `fall` always lies after the op
        // (`fuse` keeps it so), so only the taken side can be a backward transfer. Kept
        // a real branch: a select of the next position would make the next dispatch wait
        // for the comparison.
        macro_rules! fork {
            ($taken:expr, $t:expr, $fall:expr) => {{
                if $taken {
                    goto!($t);
                } else {
                    jump!($fall as usize);
                }
            }};
        }
        // `aload` of element `i` of the array `h` as type `t` (errors at `pc - 1`, or at
        // `@ $pos`).
        macro_rules! aload {
            ($h:expr, $i:expr, $t:expr) => {
                aload!(@ pc!() - 1; $h, $i, $t)
            };
            (@ $pos:expr; $h:expr, $i:expr, $t:expr) => {{
                let i: i64 = $i;
                let a = access!(@ $pos; $h, AccessKind::Read);
                let obj = a.obj();
                if i < 0 || i >= obj.len() as i64 {
                    if obj.header().class != ARRAY_CLASS {
                        fail!($pos, "array type mismatch");
                    }
                    fail!($pos, "array index out of bounds");
                }
                match (obj.kind(), $t) {
                    (ObjKind::ByteArray, Ty::Int | Ty::Any) => {
                        obj.bytes()[i as usize].load(Ordering::Relaxed) as u64
                    }
                    (ObjKind::IntArray, Ty::Int | Ty::Any)
                    | (ObjKind::RefArray, Ty::Ref | Ty::Any) => {
                        obj.words()[i as usize].load(Ordering::Relaxed)
                    }
                    _ => fail!($pos, "array type mismatch"),
                }
            }};
        }
        // `astore` of `v` (of static type `t`) at element `i` of the array `h` (errors at
        // `@ $pos`). A value of open type (`Any`: an element copied from another array)
        // goes into an int or byte array as it is, and into a reference array when it is
        // null or a live object.
        macro_rules! astore {
            (@ $pos:expr; $h:expr, $i:expr, $v:expr, $t:expr) => {{
                let (i, v): (i64, u64) = ($i, $v);
                let a = access!(@ $pos; $h, AccessKind::Write);
                let obj = a.obj();
                if i < 0 || i >= obj.len() as i64 {
                    if obj.header().class != ARRAY_CLASS {
                        fail!($pos, "array type mismatch");
                    }
                    fail!($pos, "array index out of bounds");
                }
                match (obj.kind(), $t) {
                    (ObjKind::ByteArray, Ty::Int | Ty::Any) => {
                        obj.bytes()[i as usize].store(v as u8, Ordering::Relaxed)
                    }
                    (ObjKind::IntArray, Ty::Int | Ty::Any) => {
                        obj.words()[i as usize].store(v, Ordering::Relaxed)
                    }
                    (ObjKind::RefArray, Ty::Ref) => a.store_ref(i as usize, v),
                    (ObjKind::RefArray, Ty::Any) if v == 0 || !dangling(heap, v) => {
                        a.store_ref(i as usize, v)
                    }
                    _ => fail!($pos, "array type mismatch"),
                }
            }};
        }
        // `astore` of an int `v` at element `i` of the array `h` (errors at `pc - 1`).
        macro_rules! astore_int {
            ($a:expr, $i:expr, $v:expr) => {{
                let (i, v): (i64, u64) = ($i, $v);
                let a = $a;
                let obj = a.obj();
                if i < 0 || i >= obj.len() as i64 {
                    if obj.header().class != ARRAY_CLASS {
                        trap!("array type mismatch");
                    }
                    trap!("array index out of bounds");
                }
                match obj.kind() {
                    ObjKind::ByteArray => obj.bytes()[i as usize].store(v as u8, Ordering::Relaxed),
                    ObjKind::IntArray => obj.words()[i as usize].store(v, Ordering::Relaxed),
                    _ => trap!("array type mismatch"),
                }
            }};
        }
        // A reflective updater's `valueCheck`: the new value of a reference field is null
        // or refers to a live object (MASM references carry no class to cast to).
        macro_rules! value_check {
            ($v:expr) => {{
                let v: u64 = $v;
                if v != 0 && dangling(heap, v) {
                    trap!(format!("dangling reference {v}"));
                }
            }};
        }
        // Calls `m` from the `call` at byte offset `$at` of the running method, its
        // arguments on the stack: polls the safepoint there, checks the callee's frame
        // against the stack's capacity and the call-depth limit (a stack overflow at the
        // `call`), zeroes its locals past the arguments, which stay where they are as its
        // first locals, and enters it.
        macro_rules! call {
            ($m:expr, $at:expr) => {{
                let (m, at): (u32, usize) = ($m, $at);
                if safepoints.requested() {
                    if let Some(f) = self.frames.last_mut() {
                        f.at = at;
                    }
                    self.poll_slow()?;
                }
                // One lookup: the callee's descriptor (see `loaded::CallDesc`).
                let d = calls[m as usize];
                let nbp = sp - d.args as usize;
                if nbp + d.need as usize > capacity || self.frames.len() >= frame_limit {
                    let pc = at / std::mem::size_of::<Op>();
                    return Err(error("stack overflow", method, pc as u32));
                }
                for i in d.args as usize..d.locals as usize {
                    stk.set(nbp + i, 0);
                }
                self.frames.push(Frame {
                    method: m,
                    bp: nbp as u32,
                    at: 0,
                    ret_method: method,
                    ret_bp: bp as u32,
                    ret_at: at,
                });
                method = m;
                code = &loaded.code[m as usize];
                bp = nbp;
                fp = stk.at(bp);
                sp = bp + d.locals as usize;
                ip = code.as_ptr();
            }};
        }
        // Returns `$v` to the caller, which resumes after the run its `call` ended, or
        // from this invocation when its entry method returns.
        macro_rules! ret {
            ($v:expr) => {{
                let v: u64 = $v;
                let f = self.frames.pop().expect("running frame");
                if self.frames.len() == depth0 {
                    return Ok(v);
                }
                sp = bp;
                method = f.ret_method;
                code = &loaded.code[method as usize];
                bp = f.ret_bp as usize;
                fp = stk.at(bp);
                ip = code
                    .as_ptr()
                    .wrapping_byte_add(f.ret_at + std::mem::size_of::<Op>());
                push!(v);
            }};
        }
        // Continues `$n` positions past the next, for the last op of a register run. A
        // real branch, kept so by the empty `asm!`: as an unconditional add of `$n`, the
        // next dispatch would wait for the load of `$n`, where predicting the branch
        // lets it start at once (`$n` is 0 for every op but a run's last).
        macro_rules! skip {
            ($n:expr) => {{
                let n: u8 = $n;
                if n != 0 {
                    // SAFETY: an empty instruction sequence: no memory, stack or register
                    // effect; it only keeps the compiler from merging the two paths.
                    unsafe { std::arch::asm!("", options(nomem, nostack, preserves_flags)) };
                    ip = ip.wrapping_add(n as usize);
                }
            }};
        }
        // A register op `d = a OP b` (`$r`, an `R3`) that cannot fail.
        macro_rules! reg {
            ($r:expr, |$x:ident, $y:ident| $e:expr) => {{
                let r = $r;
                let ($x, $y) = (fp.get(r.a as usize) as i64, fp.get(r.b as usize) as i64);
                fp.set(r.d as usize, ($e) as u64);
                skip!(r.skip);
            }};
        }
        // A register op `d = a OP k` (`$r`, an `RI`) that cannot fail.
        macro_rules! reg_k {
            ($r:expr, |$x:ident, $k:ident| $e:expr) => {{
                let r = $r;
                let ($x, $k) = (fp.get(r.a as usize) as i64, r.k as i64);
                fp.set(r.d as usize, ($e) as u64);
                skip!(r.skip);
            }};
        }
        macro_rules! by_name {
            ($f:expr, $use:expr) => {{
                match resolve_by_name(&loaded.vp.program, &loaded.names, $f, $use) {
                    Ok(nf) => nf,
                    Err(e) => trap!(e),
                }
            }};
        }

        loop {
            debug_assert!(pc!() < code.len());
            // Matched in place (`match *op`): copying the 24-byte op out first cost a
            // store and reloads on every dispatch (about a third of an integer loop's time).
            // SAFETY: `ip` points into `code` (it is only ever set to a position of the
            // running method, or advanced within one): the verifier proves every reachable
            // position is in range and that no path falls off the end of a method (each
            // ends in ret/jmp/halt), and `code` lives as long as `loaded`.
            let op: &Op = unsafe { &*ip };
            ip = ip.wrapping_add(1);
            match *op {
                Op::Push(v) => push!(v as u64),
                Op::Load(i) => push!(fp.get(i as usize)),
                Op::Store(i) => {
                    let v = pop!();
                    fp.set(i as usize, v);
                }
                Op::Pop => sp -= 1,
                Op::Dup => {
                    let v = stk.get(sp - 1);
                    push!(v);
                }
                Op::Swap => {
                    let b = stk.get(sp - 1);
                    let a = stk.get(sp - 2);
                    stk.set(sp - 1, a);
                    stk.set(sp - 2, b);
                }
                Op::Add => binop!(|a, b| a.wrapping_add(b)),
                Op::Sub => binop!(|a, b| a.wrapping_sub(b)),
                Op::Mul => binop!(|a, b| a.wrapping_mul(b)),
                Op::Div => {
                    let b = pop!() as i64;
                    let a = pop!() as i64;
                    if b == 0 {
                        trap!("division by zero");
                    }
                    push!(a.wrapping_div(b) as u64);
                }
                Op::Rem => {
                    let b = pop!() as i64;
                    let a = pop!() as i64;
                    if b == 0 {
                        trap!("division by zero");
                    }
                    push!(a.wrapping_rem(b) as u64);
                }
                Op::And => binop!(|a, b| a & b),
                Op::Or => binop!(|a, b| a | b),
                Op::Xor => binop!(|a, b| a ^ b),
                Op::Shl => binop!(|a, b| a.wrapping_shl(b as u32 & 63)),
                Op::Shr => binop!(|a, b| a.wrapping_shr(b as u32 & 63)),
                Op::Neg => {
                    let a = pop!() as i64;
                    push!(a.wrapping_neg() as u64);
                }
                Op::Lt => binop!(|a, b| (a < b) as i64),
                Op::Le => binop!(|a, b| (a <= b) as i64),
                Op::Gt => binop!(|a, b| (a > b) as i64),
                Op::Ge => binop!(|a, b| (a >= b) as i64),
                Op::Eq => binop!(|a, b| (a == b) as i64),
                Op::Ne => binop!(|a, b| (a != b) as i64),
                Op::Jmp(t) => {
                    let dest = code.as_ptr().wrapping_add(t as usize);
                    if dest < ip {
                        poll!();
                    }
                    ip = dest;
                }
                Op::Jz(t) => {
                    if pop!() == 0 {
                        let dest = code.as_ptr().wrapping_add(t as usize);
                        if dest < ip {
                            poll!();
                        }
                        ip = dest;
                    }
                }
                Op::Jnz(t) => {
                    if pop!() != 0 {
                        let dest = code.as_ptr().wrapping_add(t as usize);
                        if dest < ip {
                            poll!();
                        }
                        ip = dest;
                    }
                }
                Op::Call(m) => call!(m, at!()),
                Op::Ret => {
                    let v = pop!();
                    ret!(v);
                }
                Op::New(c) => {
                    save_pc!();
                    let l = &loaded.layouts[c as usize];
                    match self.alloc(ObjKind::Instance, c, l.slots, l.nrefs) {
                        Ok(h) => push!(h),
                        Err(f) => return Err(f.at(method, (pc!() - 1) as u32)),
                    }
                }
                Op::NewArray(kind) => {
                    let n = stk.get(sp - 1) as i64;
                    if n < 0 {
                        trap!("negative array length");
                    }
                    if n as u64 > MAX_ARRAY_LEN {
                        trap!("out of memory");
                    }
                    save_pc!();
                    match self.alloc(kind, ARRAY_CLASS, n as u32, 0) {
                        Ok(h) => {
                            sp -= 1;
                            push!(h)
                        }
                        Err(f) => return Err(f.at(method, (pc!() - 1) as u32)),
                    }
                }
                Op::GetField(s) => {
                    let h = handle!(pop!());
                    push!(read_field!(h, s));
                }
                Op::PutField(s) => {
                    let v = pop!();
                    let h = handle!(pop!());
                    write_field!(h, s, v);
                }
                Op::PutFieldRef(s) => {
                    let v = pop!();
                    let h = handle!(pop!());
                    let a = instance!(h, AccessKind::Write, s);
                    a.store_ref(s.slot as usize, v);
                }
                Op::Cas(s) | Op::CasRef(s) => {
                    let new = pop!();
                    let expected = pop!();
                    let h = handle!(pop!());
                    let a = instance!(h, AccessKind::Write, s);
                    // SAFETY: the class check proved an instance with slot `s.slot`.
                    let w = unsafe { a.obj().slot_unchecked(s.slot as usize) };
                    let ok = w
                        .compare_exchange(expected, new, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok();
                    if ok && matches!(op, Op::CasRef(_)) {
                        a.store_ref(s.slot as usize, new);
                    }
                    push!(ok as u64);
                }
                Op::Xadd(s) => {
                    let d = pop!();
                    let h = handle!(pop!());
                    push!(with_field!(h, AccessKind::Write, s, |w| w
                        .fetch_add(d, Ordering::SeqCst)));
                }
                Op::GetFieldByName(f) => {
                    let nf = by_name!(f, FieldUse::Any);
                    let h = handle!(pop!());
                    let a = instance!(h, AccessKind::Read, nf.slot);
                    push!(a.obj().words()[nf.slot.slot as usize].load(Ordering::Relaxed));
                }
                Op::PutFieldByName(f) => {
                    let nf = by_name!(f, FieldUse::Any);
                    let v = pop!();
                    let h = handle!(pop!());
                    let a = instance!(h, AccessKind::Write, nf.slot);
                    if nf.is_ref {
                        value_check!(v);
                        a.store_ref(nf.slot.slot as usize, v);
                    } else {
                        a.obj().words()[nf.slot.slot as usize].store(v, Ordering::Relaxed);
                    }
                }
                Op::CasByName(f) => {
                    let nf = by_name!(f, FieldUse::Any);
                    let new = pop!();
                    let expected = pop!();
                    let h = handle!(pop!());
                    let a = instance!(h, AccessKind::Write, nf.slot);
                    if nf.is_ref {
                        value_check!(new);
                    }
                    let w = &a.obj().words()[nf.slot.slot as usize];
                    let ok = w
                        .compare_exchange(expected, new, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok();
                    if ok && nf.is_ref {
                        a.store_ref(nf.slot.slot as usize, new);
                    }
                    push!(ok as u64);
                }
                Op::XaddByName(f) => {
                    let nf = by_name!(f, FieldUse::Int);
                    let d = pop!();
                    let h = handle!(pop!());
                    let a = instance!(h, AccessKind::Write, nf.slot);
                    let w = &a.obj().words()[nf.slot.slot as usize];
                    push!(w.fetch_add(d, Ordering::SeqCst));
                }
                Op::ALoad(t) => {
                    let i = pop!() as i64;
                    let h = handle!(pop!());
                    let v = aload!(h, i, t);
                    push!(v);
                }
                Op::AStore(t) => {
                    let v = pop!();
                    let i = pop!() as i64;
                    let h = handle!(pop!());
                    astore!(@ pc!() - 1; h, i, v, t);
                }
                Op::ALen => {
                    let h = handle!(pop!());
                    let a = access!(h, AccessKind::Read);
                    if a.obj().header().class != ARRAY_CLASS {
                        trap!("array type mismatch");
                    }
                    push!(a.obj().len() as u64);
                }
                Op::MonitorEnter => {
                    let v = pop!();
                    let _ = handle!(v);
                    if let Err(holder) = app.monitors().try_enter(v, self.id, self.tid) {
                        save_pc!();
                        self.monitor_wait(v, holder, method, pc!() - 1);
                    }
                }
                Op::MonitorExit => {
                    let v = pop!();
                    let _ = handle!(v);
                    if let Err(e) = app.monitors().exit(v, self.id) {
                        trap!(e.to_string());
                    }
                }
                Op::Send(_)
                | Op::SendFront(_)
                | Op::Remove(_)
                | Op::Has(_)
                | Op::Quit
                | Op::Spawn(_)
                | Op::Sleep => {
                    save_pc!();
                    sp = match self.message_op(*op, sp, method, pc!() - 1) {
                        Ok(sp) => sp,
                        Err(f) => return Err(f.at(method, (pc!() - 1) as u32)),
                    };
                }
                Op::Print => {
                    let v = pop!() as i64;
                    app.write_out(format!("{v}\n").as_bytes());
                }
                Op::PrintC => {
                    let v = pop!();
                    app.write_out(&[v as u8]);
                }
                Op::PrintS(s) => {
                    let text = &loaded.vp.program.strings[s as usize];
                    let mut line = String::with_capacity(text.len() + 1);
                    line.push_str(text);
                    line.push('\n');
                    app.write_out(line.as_bytes());
                }
                Op::Time => push!(app.now_ns()),
                Op::Mark(s) => app.mark(s),
                Op::CpuTime => push!(marvin_runtime::cpuclock::thread_cpu_time_ns()),
                Op::UserTime => {
                    // The user-time clock is tick-accounted while the total is exact,
                    // so a raw user reading can pass the total by up to a tick: clamp
                    // it so that user time is never more than user + system time.
                    let user = marvin_runtime::cpuclock::thread_user_time_ns();
                    push!(user.min(marvin_runtime::cpuclock::thread_cpu_time_ns()))
                }
                Op::Gc => {
                    save_pc!();
                    self.collect(&[]);
                }
                Op::Assert => {
                    if pop!() == 0 {
                        trap!("assertion failed");
                    }
                }
                Op::Halt => {
                    let code = pop!() as i64;
                    return Err(Trap::Halt(code));
                }
                Op::LoadCall(a, m) => {
                    push!(fp.get(a as usize));
                    call!(m, at!() + std::mem::size_of::<Op>());
                }
                Op::LoadLoadCall(a, b, m) => {
                    let (x, y) = (fp.get(a as usize), fp.get(b as usize));
                    push!(x);
                    push!(y);
                    call!(m, at!() + 2 * std::mem::size_of::<Op>());
                }
                Op::ConstCall(k, m) => {
                    push!(k as u64);
                    call!(m, at!() + std::mem::size_of::<Op>());
                }
                Op::LoadAddConstCall(a, k, m) => {
                    push!(fp.get(a as usize).wrapping_add(k as u64));
                    call!(m, at!() + 3 * std::mem::size_of::<Op>());
                }
                Op::RetLocal(a) => ret!(fp.get(a as usize)),
                Op::RetConst(k) => ret!(k as u64),
                Op::BinRet(b) => {
                    let y = pop!() as i64;
                    let x = pop!() as i64;
                    let v = bin!(b, x, y, 0);
                    ret!(v as u64);
                }
                Op::LoadLoad(a, b) => {
                    let (x, y) = (fp.get(a as usize), fp.get(b as usize));
                    push!(x);
                    push!(y);
                    ip = ip.wrapping_add(1);
                }
                Op::BinConst(b, k) => {
                    let x = pop!() as i64;
                    let v = bin!(b, x, k, 1);
                    push!(v as u64);
                    ip = ip.wrapping_add(1);
                }
                Op::BinConstStore(b, k, a) => {
                    let x = pop!() as i64;
                    let v = bin!(b, x, k, 1);
                    fp.set(a as usize, v as u64);
                    ip = ip.wrapping_add(2);
                }
                Op::BinLocal(b, a) => {
                    let y = fp.get(a as usize) as i64;
                    let x = pop!() as i64;
                    let v = bin!(b, x, y, 1);
                    push!(v as u64);
                    ip = ip.wrapping_add(1);
                }
                Op::BinStore(b, d) => {
                    let y = pop!() as i64;
                    let x = pop!() as i64;
                    let v = bin!(b, x, y, 0);
                    fp.set(d as usize, v as u64);
                    ip = ip.wrapping_add(1);
                }
                Op::LoadBinConst(a, b, k) => {
                    let v = bin!(b, fp.get(a as usize) as i64, k, 2);
                    push!(v as u64);
                    ip = ip.wrapping_add(2);
                }
                Op::LoadBinLocal(a, b, c) => {
                    let x = fp.get(a as usize) as i64;
                    let y = fp.get(c as usize) as i64;
                    let v = bin!(b, x, y, 2);
                    push!(v as u64);
                    ip = ip.wrapping_add(2);
                }
                Op::LoadBinConstStore(a, b, k, d) => {
                    let v = bin!(b, fp.get(a as usize) as i64, k, 2);
                    fp.set(d as usize, v as u64);
                    ip = ip.wrapping_add(3);
                }
                Op::LoadBinLocalStore(a, b, c, d) => {
                    let x = fp.get(a as usize) as i64;
                    let y = fp.get(c as usize) as i64;
                    let v = bin!(b, x, y, 2);
                    fp.set(d as usize, v as u64);
                    ip = ip.wrapping_add(3);
                }
                Op::LoadAddLocalStore(a, c, d) => {
                    let x = fp.get(a as usize);
                    let y = fp.get(c as usize);
                    fp.set(d as usize, x.wrapping_add(y));
                    ip = ip.wrapping_add(3);
                }
                Op::BinLocalStore(b, a, d) => {
                    let y = fp.get(a as usize) as i64;
                    let x = pop!() as i64;
                    let v = bin!(b, x, y, 1);
                    fp.set(d as usize, v as u64);
                    ip = ip.wrapping_add(2);
                }
                Op::LoadBinConstBinLocal(a, b1, k, b2, c) => {
                    let x = bin!(b1, fp.get(a as usize) as i64, k, 2);
                    let y = fp.get(c as usize) as i64;
                    let v = bin!(b2, x, y, 4);
                    push!(v as u64);
                    ip = ip.wrapping_add(4);
                }
                Op::LoadMulAddLocal(a, k, b) => {
                    let x = (fp.get(a as usize) as i64).wrapping_mul(k);
                    push!(x.wrapping_add(fp.get(b as usize) as i64) as u64);
                    ip = ip.wrapping_add(4);
                }
                Op::BinConst2Store(b1, k1, b2, k2, d) => {
                    let x = pop!() as i64;
                    let x = bin!(b1, x, k1, 1);
                    let v = bin!(b2, x, k2, 3);
                    fp.set(d as usize, v as u64);
                    ip = ip.wrapping_add(4);
                }
                Op::IncLocal(a, k) => {
                    let v = (fp.get(a as usize) as i64).wrapping_add(k);
                    fp.set(a as usize, v as u64);
                    ip = ip.wrapping_add(3);
                }
                Op::IncJmp(a, k, t) => {
                    let v = (fp.get(a as usize) as i64).wrapping_add(k);
                    fp.set(a as usize, v as u64);
                    goto!(t);
                }
                Op::BrCmp(c, t) => {
                    let y = pop!() as i64;
                    let x = pop!() as i64;
                    branch!(c.taken(x, y), t, 1);
                }
                Op::BrLocalConst { a, k, c, t, fall } => {
                    let x = fp.get(a as usize) as i64;
                    fork!(c.taken(x, k), t, fall);
                }
                Op::BrLocalLocal { a, b, c, t, fall } => {
                    let x = fp.get(a as usize) as i64;
                    let y = fp.get(b as usize) as i64;
                    fork!(c.taken(x, y), t, fall);
                }
                Op::IncBrConst {
                    a,
                    inc,
                    k,
                    c,
                    t,
                    fall,
                } => {
                    let x = (fp.get(a as usize) as i64).wrapping_add(inc as i64);
                    fp.set(a as usize, x as u64);
                    fork!(c.taken(x, k as i64), t, fall);
                }
                Op::IncBrLocal {
                    a,
                    inc,
                    b,
                    c,
                    t,
                    fall,
                } => {
                    let x = (fp.get(a as usize) as i64).wrapping_add(inc as i64);
                    fp.set(a as usize, x as u64);
                    let y = fp.get(b as usize) as i64;
                    fork!(c.taken(x, y), t, fall);
                }
                Op::AddIncBr {
                    a,
                    b,
                    i,
                    inc,
                    k,
                    c,
                    t,
                    fall,
                } => {
                    let s = fp.get(a as usize).wrapping_add(fp.get(b as usize));
                    fp.set(a as usize, s);
                    let x = (fp.get(i as usize) as i64).wrapping_add(inc as i64);
                    fp.set(i as usize, x as u64);
                    fork!(c.taken(x, k as i64), t, fall);
                }
                Op::BrLocalField { a, o, s, c, t } => {
                    ip = ip.wrapping_add(2);
                    let h = handle!(fp.get(o as usize));
                    let acc = instance!(h, AccessKind::Read, s);
                    // SAFETY: the class check proved an instance of `s.class`, whose
                    // layout has slot `s.slot`.
                    let y = unsafe { acc.obj().slot_unchecked(s.slot as usize) }
                        .load(Ordering::Relaxed) as i64;
                    let x = fp.get(a as usize) as i64;
                    branch!(c.taken(x, y), t, 2);
                }
                Op::ALoadLocal(arr, i, ty) => {
                    ip = ip.wrapping_add(2);
                    let h = handle!(fp.get(arr as usize));
                    let v = aload!(h, fp.get(i as usize) as i64, ty);
                    push!(v);
                }
                Op::ALoadLocalBr(arr, i, on, t) => {
                    ip = ip.wrapping_add(2);
                    let h = handle!(fp.get(arr as usize));
                    let v = aload!(h, fp.get(i as usize) as i64, Ty::Int);
                    branch!((v != 0) == on, t, 1);
                }
                Op::AStoreLocalConst(arr, i, k) => {
                    ip = ip.wrapping_add(3);
                    let h = handle!(fp.get(arr as usize));
                    let a = access!(h, AccessKind::Write);
                    astore_int!(a, fp.get(i as usize) as i64, k as u64);
                }
                Op::LoadGetField(a, s) => {
                    ip = ip.wrapping_add(1);
                    let h = handle!(fp.get(a as usize));
                    push!(read_field!(h, s));
                }
                Op::LoadGetFieldStore(a, s, b) => {
                    ip = ip.wrapping_add(1);
                    let h = handle!(fp.get(a as usize));
                    let v = read_field!(h, s);
                    fp.set(b as usize, v);
                    ip = ip.wrapping_add(1);
                }
                Op::CasBr(s, on, t) => {
                    let new = pop!();
                    let expected = pop!();
                    let h = handle!(pop!());
                    let a = instance!(h, AccessKind::Write, s);
                    // SAFETY: the class check proved an instance with slot `s.slot`.
                    let w = unsafe { a.obj().slot_unchecked(s.slot as usize) };
                    let ok = w
                        .compare_exchange(expected, new, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok();
                    branch!(ok == on, t, 1);
                }
                Op::DivConst {
                    k,
                    magic,
                    shift,
                    rem,
                } => {
                    let x = pop!() as i64;
                    push!(Magic { magic, shift }.apply(x, k, rem) as u64);
                    ip = ip.wrapping_add(1);
                }
                Op::DivConstStore {
                    k,
                    magic,
                    shift,
                    rem,
                    d,
                } => {
                    let x = pop!() as i64;
                    fp.set(d as usize, Magic { magic, shift }.apply(x, k, rem) as u64);
                    ip = ip.wrapping_add(2);
                }
                Op::LoadLoadGetField(a, o, s) => {
                    // The read at `getfield` (+2).
                    ip = ip.wrapping_add(2);
                    let x = fp.get(a as usize);
                    let h = handle!(fp.get(o as usize));
                    let v = read_field!(h, s);
                    push!(x);
                    push!(v);
                }
                Op::LoadGetFieldBinPutField(o, g, b, f) => {
                    // The read at `getfield` (+1), the write at `putfield` (+3).
                    ip = ip.wrapping_add(1);
                    let h = handle!(fp.get(o as usize));
                    let y = read_field!(h, g) as i64;
                    let x = pop!() as i64;
                    let v = bin!(b, x, y, 1);
                    ip = ip.wrapping_add(2);
                    let h = handle!(pop!());
                    write_field!(h, f, v as u64);
                }
                Op::LoadBinPutField(c, b, f) => {
                    let y = fp.get(c as usize) as i64;
                    let x = pop!() as i64;
                    let v = bin!(b, x, y, 1);
                    // The write at `putfield` (+2).
                    ip = ip.wrapping_add(2);
                    let h = handle!(pop!());
                    write_field!(h, f, v as u64);
                }
                Op::FieldBinLocal(o, s, b, c) => {
                    // The read at `getfield` (+2), the write at `putfield` (+5).
                    ip = ip.wrapping_add(2);
                    let h = handle!(fp.get(o as usize));
                    let x = read_field!(h, s) as i64;
                    let v = bin!(b, x, fp.get(c as usize) as i64, 2);
                    ip = ip.wrapping_add(3);
                    write_field!(h, s, v as u64);
                }
                Op::LoadMulAddDivStore {
                    a,
                    b,
                    d,
                    shift_rem,
                    k,
                    m,
                    magic,
                } => {
                    let x = (fp.get(a as usize) as i64)
                        .wrapping_mul(k as i64)
                        .wrapping_add(fp.get(b as usize) as i64);
                    let div = Magic {
                        magic,
                        shift: shift_rem & 63,
                    };
                    fp.set(
                        d as usize,
                        div.apply(x, m as i64, shift_rem & 0x80 != 0) as u64,
                    );
                    ip = ip.wrapping_add(7);
                }
                Op::LoadXadd(a, k, s, discard) => {
                    ip = ip.wrapping_add(2);
                    let h = handle!(fp.get(a as usize));
                    let old = with_field!(h, AccessKind::Write, s, |w| w
                        .fetch_add(k as i64 as u64, Ordering::SeqCst));
                    if discard {
                        ip = ip.wrapping_add(1);
                    } else {
                        push!(old);
                    }
                }
                // Register ops (see `regs`): operands in frame slots, `skip` past the
                // run's free positions, errors at `at`.
                Op::RegBin { op, r, at } => {
                    let (x, y) = (fp.get(r.a as usize) as i64, fp.get(r.b as usize) as i64);
                    let Some(v) = op.apply(x, y) else {
                        fail!(at, "division by zero");
                    };
                    fp.set(r.d as usize, v as u64);
                    skip!(r.skip);
                }
                Op::RegAdd(r) => reg!(r, |x, y| x.wrapping_add(y)),
                Op::RegSub(r) => reg!(r, |x, y| x.wrapping_sub(y)),
                Op::RegMul(r) => reg!(r, |x, y| x.wrapping_mul(y)),
                Op::RegAnd(r) => reg!(r, |x, y| x & y),
                Op::RegOr(r) => reg!(r, |x, y| x | y),
                Op::RegXor(r) => reg!(r, |x, y| x ^ y),
                Op::RegShl(r) => reg!(r, |x, y| x.wrapping_shl(y as u32 & 63)),
                Op::RegShr(r) => reg!(r, |x, y| x.wrapping_shr(y as u32 & 63)),
                Op::RegBinI { op, r } => {
                    // `regs` makes no division by a constant zero: this cannot fail.
                    let v = op
                        .apply(fp.get(r.a as usize) as i64, r.k as i64)
                        .unwrap_or(0);
                    fp.set(r.d as usize, v as u64);
                    skip!(r.skip);
                }
                Op::RegAddI(r) => reg_k!(r, |x, k| x.wrapping_add(k)),
                Op::RegMulI(r) => reg_k!(r, |x, k| x.wrapping_mul(k)),
                Op::RegAndI(r) => reg_k!(r, |x, k| x & k),
                Op::RegOrI(r) => reg_k!(r, |x, k| x | k),
                Op::RegXorI(r) => reg_k!(r, |x, k| x ^ k),
                Op::RegShlI(r) => reg_k!(r, |x, k| x.wrapping_shl(k as u32 & 63)),
                Op::RegShrI(r) => reg_k!(r, |x, k| x.wrapping_shr(k as u32 & 63)),
                Op::RegDivConst {
                    d,
                    a,
                    k,
                    shift,
                    rem,
                    skip,
                    magic,
                } => {
                    let v = Magic { magic, shift }.apply(fp.get(a as usize) as i64, k as i64, rem);
                    fp.set(d as usize, v as u64);
                    skip!(skip);
                }
                Op::RegMov { d, a, skip } => {
                    fp.set(d as usize, fp.get(a as usize));
                    skip!(skip);
                }
                Op::RegMovI { d, k, skip } => {
                    fp.set(d as usize, k as u64);
                    skip!(skip);
                }
                Op::RegBr { c, a, b, t, fall } => {
                    let (x, y) = (fp.get(a as usize) as i64, fp.get(b as usize) as i64);
                    fork!(c.taken(x, y), t, fall);
                }
                Op::RegBrI { c, a, k, t, fall } => {
                    fork!(c.taken(fp.get(a as usize) as i64, k as i64), t, fall);
                }
                Op::RegBrNz { a, on, t, fall } => {
                    fork!((fp.get(a as usize) != 0) == on, t, fall);
                }
                Op::RegALoad {
                    d,
                    arr,
                    i,
                    off,
                    ty,
                    skip,
                    at,
                } => {
                    let h = handle!(@ at; fp.get(arr as usize));
                    let i = (fp.get(i as usize) as i64).wrapping_add(off as i64);
                    let v = aload!(@ at; h, i, ty);
                    fp.set(d as usize, v);
                    skip!(skip);
                }
                Op::RegAStore {
                    arr,
                    i,
                    off,
                    v,
                    ty,
                    skip,
                    at,
                } => {
                    let h = handle!(@ at; fp.get(arr as usize));
                    let i = (fp.get(i as usize) as i64).wrapping_add(off as i64);
                    astore!(@ at; h, i, fp.get(v as usize), ty);
                    skip!(skip);
                }
                Op::RegAStoreI {
                    arr,
                    i,
                    off,
                    k,
                    skip,
                    at,
                } => {
                    let h = handle!(@ at; fp.get(arr as usize));
                    let i = (fp.get(i as usize) as i64).wrapping_add(off as i64);
                    astore!(@ at; h, i, k as i64 as u64, Ty::Int);
                    skip!(skip);
                }
                Op::RegALen { d, arr, skip, at } => {
                    let h = handle!(@ at; fp.get(arr as usize));
                    let a = access!(@ at; h, AccessKind::Read);
                    if a.obj().header().class != ARRAY_CLASS {
                        fail!(at, "array type mismatch");
                    }
                    fp.set(d as usize, a.obj().len() as u64);
                    skip!(skip);
                }
                Op::RegGetField { d, o, s, skip, at } => {
                    let h = handle!(@ at; fp.get(o as usize));
                    let v = read_field!(@ at; h, s);
                    fp.set(d as usize, v);
                    skip!(skip);
                }
                Op::RegPutField {
                    o,
                    v,
                    s,
                    is_ref,
                    skip,
                    at,
                } => {
                    let h = handle!(@ at; fp.get(o as usize));
                    let v = fp.get(v as usize);
                    if is_ref {
                        let a = instance!(@ at; h, AccessKind::Write, s);
                        a.store_ref(s.slot as usize, v);
                    } else {
                        write_field!(@ at; h, s, v);
                    }
                    skip!(skip);
                }
            }
        }
    }
}

/// The calling thread's OS thread id.
pub fn current_tid() -> i32 {
    marvin_runtime::cpuclock::current_tid()
}

/// A reflective updater's `valueCheck` for a non-null reference: whether `v` names
/// nothing live. Out of line: inlined, the handle-table lookup's code took registers from
/// the whole dispatch loop (about 10 more instructions per iteration of an integer loop).
#[inline(never)]
fn dangling(heap: &marvin_runtime::heap::Heap, v: u64) -> bool {
    !heap.table().is_live(v)
}
