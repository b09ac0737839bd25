//! A thread's value stack and frames: the stack every frame's locals and operands live
//! on, indexed without bounds checks ([`ValueStack`], and `Slots`, the cursor the
//! interpreter loop keeps in a register), the frame records of the running calls
//! ([`Frame`]), and the references they hold for a collection ([`frame_roots`]).

use crate::isa::Ty;

use super::binding::AppBinding;
use super::op::Op;

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
    pub(crate) fn at(self, i: usize) -> Slots {
        #[cfg(debug_assertions)]
        debug_assert!(i <= self.left);
        Slots {
            ptr: self.ptr.wrapping_add(i),
            #[cfg(debug_assertions)]
            left: self.left - i,
        }
    }

    #[inline(always)]
    pub(crate) fn get(self, i: usize) -> u64 {
        #[cfg(debug_assertions)]
        debug_assert!(i < self.left);
        // SAFETY: as in `ValueStack::get`: the loop makes its cursors from the running
        // thread's stack, whose mapping outlives the loop and never moves, and indexes
        // them only below bp + locals + max_stack of the running frame (proved by the
        // verifier and checked against the capacity by `call`).
        unsafe { *self.ptr.add(i) }
    }

    #[inline(always)]
    pub(crate) fn set(self, i: usize, v: u64) {
        #[cfg(debug_assertions)]
        debug_assert!(i < self.left);
        // SAFETY: as in `get`; the loop is the only code touching the stack while it
        // runs (collections read it from this thread, between instructions).
        unsafe { *self.ptr.add(i) = v }
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
