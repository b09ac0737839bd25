//! Register runs: straight-line stack code translated into ops on frame slots.
//!
//! The verifier proves the operand stack's depth at every position, so the entry at depth
//! `t` of a frame with `n` locals always lives in slot `n + t` of that frame: a stack
//! instruction's operands and result are fixed slots, as a register machine's are. This
//! pass walks a run of instructions from a start position with a symbolic stack (as
//! wasmi's translator does): `load a` and `push k` push the local or the constant itself,
//! and an operation reads its operands where they are (a local, a constant, or the slot of
//! an entry an earlier op computed) and writes its result to its entry's slot; a `store d`
//! right after the op that computed its value makes that op write `d` instead, and a
//! compare followed by `jz`/`jnz` becomes one compare-and-branch. So
//! `load s; load i; load j; xor; add; store s` is two ops, `t = i xor j` and `s = s + t`,
//! whatever the surrounding program, with no shape to match. The operands' order does not
//! matter either: two constants are folded into one (`push N; push 1; sub`, unless it
//! divides by zero, which must fail where it runs), a constant pushed before a local is
//! the op's constant operand (`3 * x` as `x * 3`, `k < x` as `x > k`, `k - x` as `-x +
//! k`). A bubble sort's `j < N - 1 - i` is then three ops and Collatz's `3 * x + 1` two,
//! with no op of their own: a new op is a new arm of the dispatch loop, which moves the
//! code of every other arm (the 2026-12-07 interpreter note measured 10-13% on two
//! programs at equal instruction counts).
//!
//! A run stays inside one basic block (no jump target past its first position) and holds
//! only instructions that cannot allocate, call or block, so it contains no safepoint but
//! a branch's: the ops of a run stand for positions nobody else can reach, and at the
//! run's end (and before its branch) every stack entry is in its slot, as the stack code
//! leaves it, so the stack pointer, the collector's stack maps and the code after the run
//! see exactly what unfused code shows them. A run ends with the stack as deep as it
//! started. An op that can fail (division, array and field access) carries the position of
//! the instruction it stands for, which errors report; it does the same access, with the
//! same barrier kind, as that instruction. Runs are candidates for [`super::fuse`], which
//! takes one where it leaves fewer dispatches than its other choices.

use super::divconst::Magic;
use super::op::{Op, R3, RI};
use super::operator::Bin;
use crate::isa::Ty;

/// Longest run tried, in original positions.
const MAX_RUN: usize = 48;

/// What translating a method's runs needs of its frame (the verifier's facts).
pub struct Frame<'a> {
    /// Local slots, arguments included: operand-stack entry `t` is slot `locals + t`.
    pub locals: u32,
    /// Deepest operand stack.
    pub max_stack: u32,
    /// Operand stack types at each position (empty where unreachable).
    pub stack_types: &'a [Vec<Ty>],
}

/// A run of `len` original positions as `ops` (at most one per position), to be written
/// from the run's first position on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub ops: Vec<Op>,
    pub len: usize,
}

/// Where a symbolic stack entry's value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    /// Still in this local (pushed by `load`, not copied).
    Local(u16),
    /// This constant (pushed by `push`, not written anywhere).
    Imm(i64),
    /// This local plus a constant (`load a; push k; add`), not computed yet: an array
    /// index takes it as the local and a displacement, anything else gets the add
    /// (`RegAddI`, which cannot fail) written to the entry's slot when it reads it.
    Sum(u16, i16),
    /// In the entry's own slot.
    Slot,
}

/// The positions some jump goes to: a run may start at one but not contain one.
pub fn jump_targets(code: &[Op]) -> Vec<bool> {
    let mut targets = vec![false; code.len() + 1];
    for op in code {
        if let Op::Jmp(t) | Op::Jz(t) | Op::Jnz(t) = *op {
            if let Some(x) = targets.get_mut(t as usize) {
                *x = true;
            }
        }
    }
    targets
}

/// The translation in progress of one run.
struct Builder {
    /// First slot of the operand stack (the frame's locals count).
    base: u16,
    /// Slots past the last one the frame has.
    end: u32,
    stack: Vec<Src>,
    ops: Vec<Op>,
    /// Whether the last op wrote the top entry's slot and nothing else (so a `store` may
    /// make it write the local instead).
    top_is_last: bool,
}

impl Builder {
    /// The slot of stack entry `t`, if the frame has it.
    fn slot(&self, t: usize) -> Option<u16> {
        let s = self.base as u32 + u32::try_from(t).ok()?;
        (s < self.end).then_some(s as u16)
    }

    fn emit(&mut self, op: Op) {
        self.ops.push(op);
        self.top_is_last = false;
    }

    /// Writes entry `t`'s value into its slot if it is not there yet.
    fn materialize(&mut self, t: usize) -> Option<()> {
        let d = self.slot(t)?;
        match self.stack[t] {
            Src::Slot => {}
            Src::Local(a) => self.emit(Op::RegMov { d, a, skip: 0 }),
            Src::Imm(k) => self.emit(Op::RegMovI { d, k, skip: 0 }),
            Src::Sum(a, k) => self.emit(Op::RegAddI(RI {
                d,
                a,
                k: k as i32,
                skip: 0,
            })),
        }
        self.stack[t] = Src::Slot;
        Some(())
    }

    /// The slot holding entry `t` (a local, or its own slot, a constant written there).
    fn operand(&mut self, t: usize) -> Option<u16> {
        match self.stack[t] {
            Src::Local(a) => Some(a),
            _ => {
                self.materialize(t)?;
                self.slot(t)
            }
        }
    }

    /// The slot and displacement of array index entry `t`: `i + k` computed by the last
    /// op (`push k; add` on a slot, the index of `a[i + 1]`) is read as `i` and `k`, and
    /// that op goes, since no one else reads its result.
    fn index(&mut self, t: usize) -> Option<(u16, i16)> {
        let slot = self.slot(t)?;
        if let Src::Sum(a, k) = self.stack[t] {
            return Some((a, k));
        }
        if let (Src::Slot, Some(&Op::RegAddI(r))) = (self.stack[t], self.ops.last()) {
            if let (true, Ok(off)) = (r.d == slot, i16::try_from(r.k)) {
                self.ops.pop();
                self.top_is_last = false;
                self.stack[t] = Src::Local(r.a);
                let i = self.operand(t)?;
                return Some((i, off));
            }
        }
        Some((self.operand(t)?, 0))
    }

    /// Pushes the result of `op`, which writes entry `t`'s slot (the new top).
    fn result(&mut self, op: Op) {
        self.emit(op);
        self.stack.push(Src::Slot);
        self.top_is_last = true;
    }

    /// Every entry in its slot.
    fn flush(&mut self) -> Option<()> {
        for t in 0..self.stack.len() {
            self.materialize(t)?;
        }
        Some(())
    }

    /// One instruction at position `at`; `None` when it cannot be part of a run.
    fn step(&mut self, op: Op, at: u32) -> Option<()> {
        match op {
            // A new top that no op wrote: a `store` of it must not retarget the last op.
            Op::Load(a) => {
                self.stack.push(Src::Local(u16::try_from(a).ok()?));
                self.top_is_last = false;
            }
            Op::Push(k) => {
                self.stack.push(Src::Imm(k));
                self.top_is_last = false;
            }
            Op::Pop => {
                self.stack.pop()?;
                self.top_is_last = false;
            }
            Op::Dup => {
                let t = self.stack.len().checked_sub(1)?;
                match self.stack[t] {
                    Src::Slot => {
                        let (d, a) = (self.slot(t + 1)?, self.slot(t)?);
                        self.result(Op::RegMov { d, a, skip: 0 });
                    }
                    src => {
                        self.stack.push(src);
                        self.top_is_last = false;
                    }
                }
            }
            Op::Swap => {
                let t = self.stack.len().checked_sub(2)?;
                // An entry computed into its slot would have to move with it.
                if self.stack[t] == Src::Slot || self.stack[t + 1] == Src::Slot {
                    return None;
                }
                self.stack.swap(t, t + 1);
                self.top_is_last = false;
            }
            Op::Store(d) => self.store(u16::try_from(d).ok()?)?,
            Op::Neg => {
                let t = self.stack.len().checked_sub(1)?;
                let a = self.operand(t)?;
                self.stack.pop();
                let d = self.slot(t)?;
                self.result(Op::RegMulI(RI {
                    d,
                    a,
                    k: -1,
                    skip: 0,
                }));
            }
            Op::ALoad(ty) => {
                let t = self.stack.len().checked_sub(2)?;
                let (i, off) = self.index(t + 1)?;
                let arr = self.operand(t)?;
                self.stack.truncate(t);
                let d = self.slot(t)?;
                self.result(Op::RegALoad {
                    d,
                    arr,
                    i,
                    off,
                    ty,
                    skip: 0,
                    at,
                });
            }
            Op::AStore(ty) => {
                let t = self.stack.len().checked_sub(3)?;
                let (i, off) = self.index(t + 1)?;
                let arr = self.operand(t)?;
                let op = match self.stack[t + 2] {
                    Src::Imm(k) if ty == Ty::Int && i32::try_from(k).is_ok() => Op::RegAStoreI {
                        arr,
                        i,
                        off,
                        k: k as i32,
                        skip: 0,
                        at,
                    },
                    _ => Op::RegAStore {
                        arr,
                        i,
                        off,
                        v: self.operand(t + 2)?,
                        ty,
                        skip: 0,
                        at,
                    },
                };
                self.stack.truncate(t);
                self.emit(op);
            }
            Op::ALen => {
                let t = self.stack.len().checked_sub(1)?;
                let arr = self.operand(t)?;
                self.stack.pop();
                let d = self.slot(t)?;
                self.result(Op::RegALen {
                    d,
                    arr,
                    skip: 0,
                    at,
                });
            }
            Op::GetField(s) => {
                let t = self.stack.len().checked_sub(1)?;
                let o = self.operand(t)?;
                self.stack.pop();
                let d = self.slot(t)?;
                self.result(Op::RegGetField {
                    d,
                    o,
                    s,
                    skip: 0,
                    at,
                });
            }
            Op::PutField(s) | Op::PutFieldRef(s) => {
                let t = self.stack.len().checked_sub(2)?;
                let o = self.operand(t)?;
                let v = self.operand(t + 1)?;
                self.stack.truncate(t);
                self.emit(Op::RegPutField {
                    o,
                    v,
                    s,
                    is_ref: matches!(op, Op::PutFieldRef(_)),
                    skip: 0,
                    at,
                });
            }
            op => self.binary(Bin::of(op)?, at)?,
        }
        Some(())
    }

    /// `store d`: the value goes to local `d`, after every entry still reading `d` got
    /// its own copy.
    fn store(&mut self, d: u16) -> Option<()> {
        let t = self.stack.len().checked_sub(1)?;
        let src = self.stack[t];
        let (was_last, emitted) = (self.top_is_last, self.ops.len());
        self.stack.pop();
        for u in 0..t {
            if matches!(self.stack[u], Src::Local(a) | Src::Sum(a, _) if a == d) {
                self.materialize(u)?;
            }
        }
        // The op that computed the value is still the last: it writes `d` instead.
        if was_last && self.ops.len() == emitted {
            if let Some(dst) = self.ops.last_mut().and_then(dest) {
                *dst = d;
                self.top_is_last = false;
                return Some(());
            }
        }
        let op = match src {
            Src::Local(a) => Op::RegMov { d, a, skip: 0 },
            Src::Imm(k) => Op::RegMovI { d, k, skip: 0 },
            Src::Sum(a, k) => Op::RegAddI(RI {
                d,
                a,
                k: k as i32,
                skip: 0,
            }),
            Src::Slot => Op::RegMov {
                d,
                a: self.slot(t)?,
                skip: 0,
            },
        };
        self.emit(op);
        Some(())
    }

    /// A binary operation at position `at`.
    fn binary(&mut self, b: Bin, at: u32) -> Option<()> {
        let t = self.stack.len().checked_sub(2)?;
        if let Some(sum) = self.sum(b, t) {
            self.stack.truncate(t);
            self.stack.push(sum);
            self.top_is_last = false;
            return Some(());
        }
        if let (Src::Imm(x), Src::Imm(y)) = (self.stack[t], self.stack[t + 1]) {
            // Two constants (`push N; push 1; sub`): the value, computed now. A division by
            // zero is left to fail when it runs, at its position.
            if let Some(v) = b.apply(x, y) {
                self.stack.truncate(t);
                self.stack.push(Src::Imm(v));
                self.top_is_last = false;
                return Some(());
            }
        }
        if let Some(op) = self.constant_left(b, t)? {
            self.stack.truncate(t);
            self.result(op);
            return Some(());
        }
        let a = self.operand(t)?;
        let d = self.slot(t)?;
        let constant = match self.stack[t + 1] {
            Src::Imm(k) => i32::try_from(k).ok().map(|k32| (k, k32)),
            _ => None,
        };
        let op = match constant {
            Some((k, k32)) if matches!(b, Bin::Div | Bin::Rem) && Magic::of(k).is_some() => {
                let m = Magic::of(k)?;
                Op::RegDivConst {
                    d,
                    a,
                    k: k32,
                    shift: m.shift,
                    rem: b == Bin::Rem,
                    skip: 0,
                    magic: m.magic,
                }
            }
            Some((_, k)) if !(b.may_trap() && k == 0) => {
                // `sub k` is `add -k` unless `-k` does not fit.
                let (b, k) = match b {
                    Bin::Sub if k != i32::MIN => (Bin::Add, -k),
                    _ => (b, k),
                };
                with_const(b, RI { d, a, k, skip: 0 })
            }
            _ => {
                let b2 = self.operand(t + 1)?;
                with_slots(
                    b,
                    R3 {
                        d,
                        a,
                        b: b2,
                        skip: 0,
                    },
                    at,
                )
            }
        };
        self.stack.truncate(t);
        self.result(op);
        Some(())
    }

    /// `k OP x` with the constant on the left (`push 3; load x; mul`, `push N; load i;
    /// sub`), as the op with the constant on the right: a commutative operation as it is,
    /// a comparison mirrored, a subtraction as a negation and an add. `Some(None)` when the
    /// left entry is not such a constant or the operation has no such form.
    fn constant_left(&mut self, b: Bin, t: usize) -> Option<Option<Op>> {
        let (Src::Imm(k), right) = (self.stack[t], self.stack[t + 1]) else {
            return Some(None);
        };
        let (Ok(k), false) = (i32::try_from(k), matches!(right, Src::Imm(_))) else {
            return Some(None);
        };
        let mirrored = match b {
            Bin::Add | Bin::Mul | Bin::And | Bin::Or | Bin::Xor | Bin::Eq | Bin::Ne => b,
            Bin::Lt => Bin::Gt,
            Bin::Le => Bin::Ge,
            Bin::Gt => Bin::Lt,
            Bin::Ge => Bin::Le,
            Bin::Sub => {
                // `k - x` as `-x + k` (wrapping, the same for every value): two ops into
                // the entry's slot.
                let a = self.operand(t + 1)?;
                let d = self.slot(t)?;
                self.emit(Op::RegMulI(RI {
                    d,
                    a,
                    k: -1,
                    skip: 0,
                }));
                return Some(Some(Op::RegAddI(RI {
                    d,
                    a: d,
                    k,
                    skip: 0,
                })));
            }
            _ => return Some(None),
        };
        let a = self.operand(t + 1)?;
        let d = self.slot(t)?;
        Some(Some(with_const(mirrored, RI { d, a, k, skip: 0 })))
    }

    /// Entries `t` and `t + 1` added (or subtracted) as a [`Src::Sum`], when they are a
    /// local (or a sum) and a constant that keep the displacement in `i16` (a constant
    /// plus a local too).
    fn sum(&self, b: Bin, t: usize) -> Option<Src> {
        if let (Bin::Add, Src::Imm(k), Src::Local(a)) = (b, self.stack[t], self.stack[t + 1]) {
            return Some(Src::Sum(a, i16::try_from(k).ok()?));
        }
        let Src::Imm(k) = self.stack[t + 1] else {
            return None;
        };
        let k = match b {
            Bin::Add => k,
            Bin::Sub => k.checked_neg()?,
            _ => return None,
        };
        let (a, k0) = match self.stack[t] {
            Src::Local(a) => (a, 0),
            Src::Sum(a, k0) => (a, k0 as i64),
            _ => return None,
        };
        Some(Src::Sum(a, i16::try_from(k0.checked_add(k)?).ok()?))
    }

    /// `jnz t` (`on`) or `jz t`, the run's last instruction, whose fall-through is `fall`.
    fn branch(&mut self, on: bool, t: u32, fall: u32) -> Option<()> {
        let top = self.stack.len().checked_sub(1)?;
        if let Src::Sum(..) = self.stack[top] {
            self.materialize(top)?;
        }
        let src = self.stack[top];
        // The compare that computed the condition, if it is the last op: it becomes the
        // branch, after the entries below are in their slots.
        let cmp = if self.top_is_last && src == Src::Slot {
            compare(*self.ops.last()?, on, t, fall)
        } else {
            None
        };
        if cmp.is_some() {
            self.ops.pop();
        }
        self.stack.pop();
        self.flush()?;
        let op = match (cmp, src) {
            (Some(op), _) => op,
            (None, Src::Local(a)) => Op::RegBrNz { a, on, t, fall },
            (None, Src::Slot) => Op::RegBrNz {
                a: self.slot(top)?,
                on,
                t,
                fall,
            },
            (None, Src::Imm(_) | Src::Sum(..)) => return None,
        };
        self.emit(op);
        Some(())
    }
}

/// `d = a OP b` as the op of its operation.
fn with_slots(b: Bin, r: R3, at: u32) -> Op {
    match b {
        Bin::Add => Op::RegAdd(r),
        Bin::Sub => Op::RegSub(r),
        Bin::Div => Op::RegDiv { r, at },
        Bin::Rem => Op::RegRem { r, at },
        Bin::Mul => Op::RegMul(r),
        Bin::And => Op::RegAnd(r),
        Bin::Or => Op::RegOr(r),
        Bin::Xor => Op::RegXor(r),
        Bin::Shl => Op::RegShl(r),
        Bin::Shr => Op::RegShr(r),
        op => Op::RegBin { op, r, at },
    }
}

/// `d = a OP k` as the op of its operation (`OP` cannot fail with `k`).
fn with_const(b: Bin, r: RI) -> Op {
    match b {
        Bin::Add => Op::RegAddI(r),
        Bin::Mul => Op::RegMulI(r),
        Bin::And => Op::RegAndI(r),
        Bin::Or => Op::RegOrI(r),
        Bin::Xor => Op::RegXorI(r),
        Bin::Shl => Op::RegShlI(r),
        Bin::Shr => Op::RegShrI(r),
        op => Op::RegBinI { op, r },
    }
}

/// The destination slot of a register op that computes one value, as a place to change.
fn dest(op: &mut Op) -> Option<&mut u16> {
    match op {
        Op::RegBin { r, .. }
        | Op::RegDiv { r, .. }
        | Op::RegRem { r, .. }
        | Op::RegAdd(r)
        | Op::RegSub(r)
        | Op::RegMul(r)
        | Op::RegAnd(r)
        | Op::RegOr(r)
        | Op::RegXor(r)
        | Op::RegShl(r)
        | Op::RegShr(r) => Some(&mut r.d),
        Op::RegBinI { r, .. }
        | Op::RegAddI(r)
        | Op::RegMulI(r)
        | Op::RegAndI(r)
        | Op::RegOrI(r)
        | Op::RegXorI(r)
        | Op::RegShlI(r)
        | Op::RegShrI(r) => Some(&mut r.d),
        Op::RegDivConst { d, .. }
        | Op::RegMov { d, .. }
        | Op::RegMovI { d, .. }
        | Op::RegALoad { d, .. }
        | Op::RegALen { d, .. }
        | Op::RegGetField { d, .. } => Some(d),
        _ => None,
    }
}

/// The register op's `skip`, for the last op of a run (`None` for a branch).
pub fn skip_mut(op: &mut Op) -> Option<&mut u8> {
    match op {
        Op::RegBin { r, .. }
        | Op::RegDiv { r, .. }
        | Op::RegRem { r, .. }
        | Op::RegAdd(r)
        | Op::RegSub(r)
        | Op::RegMul(r)
        | Op::RegAnd(r)
        | Op::RegOr(r)
        | Op::RegXor(r)
        | Op::RegShl(r)
        | Op::RegShr(r) => Some(&mut r.skip),
        Op::RegBinI { r, .. }
        | Op::RegAddI(r)
        | Op::RegMulI(r)
        | Op::RegAndI(r)
        | Op::RegOrI(r)
        | Op::RegXorI(r)
        | Op::RegShlI(r)
        | Op::RegShrI(r) => Some(&mut r.skip),
        Op::RegDivConst { skip, .. }
        | Op::RegMov { skip, .. }
        | Op::RegMovI { skip, .. }
        | Op::RegALoad { skip, .. }
        | Op::RegAStore { skip, .. }
        | Op::RegAStoreI { skip, .. }
        | Op::RegALen { skip, .. }
        | Op::RegGetField { skip, .. }
        | Op::RegPutField { skip, .. } => Some(skip),
        _ => None,
    }
}

/// A compare op followed by `jnz t` (`on`) or `jz t` as one compare-and-branch.
fn compare(op: Op, on: bool, t: u32, fall: u32) -> Option<Op> {
    Some(match op {
        Op::RegBin { op, r, .. } => Op::RegBr {
            c: op.cond(on)?,
            a: r.a,
            b: r.b,
            t,
            fall,
        },
        Op::RegBinI { op, r } => Op::RegBrI {
            c: op.cond(on)?,
            a: r.a,
            k: r.k,
            t,
            fall,
        },
        _ => return None,
    })
}

/// Every run starting at `code[i]` (the unfused translation), shortest first: one for
/// each later position where the stack is back at its starting depth, and one ending in
/// each conditional branch. `targets` is [`jump_targets`] of `code`.
pub fn runs(code: &[Op], frame: &Frame, targets: &[bool], i: usize) -> Vec<Run> {
    let mut out = Vec::new();
    let end = frame.locals.saturating_add(frame.max_stack);
    if end > u16::MAX as u32 {
        return out;
    }
    let Some(depth) = frame.stack_types.get(i).map(Vec::len) else {
        return out;
    };
    let mut b = Builder {
        base: frame.locals as u16,
        end,
        stack: vec![Src::Slot; depth],
        ops: Vec::new(),
        top_is_last: false,
    };
    for j in i..code.len().min(i + MAX_RUN) {
        // A run starts at a jump target but contains none, and agrees with the verifier
        // on the depth (unreachable code has no depth: no run goes there).
        let depth_here = frame.stack_types.get(j).map(Vec::len);
        if (j > i && targets[j]) || depth_here != Some(b.stack.len()) {
            break;
        }
        let len = j + 1 - i;
        match code[j] {
            Op::Jz(t) | Op::Jnz(t) => {
                let on = matches!(code[j], Op::Jnz(_));
                if b.branch(on, t, (j + 1) as u32).is_some() && b.stack.len() == depth {
                    out.push(Run { ops: b.ops, len });
                }
                break;
            }
            op => {
                if b.step(op, j as u32).is_none() {
                    break;
                }
            }
        }
        if b.stack.len() == depth && !b.ops.is_empty() {
            let mut done = Builder {
                stack: b.stack.clone(),
                ops: b.ops.clone(),
                ..b
            };
            if done.flush().is_none() || done.ops.len() > len {
                continue;
            }
            let skip = u8::try_from(len - done.ops.len()).ok();
            let last = done.ops.last_mut().and_then(skip_mut);
            if let (Some(skip), Some(s)) = (skip, last) {
                *s = skip;
                out.push(Run { ops: done.ops, len });
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "regs_tests.rs"]
mod tests;
