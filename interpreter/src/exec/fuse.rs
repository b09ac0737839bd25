//! Superinstructions: common runs of stack instructions fused into one dispatch.
//!
//! The translated code keeps one op per original instruction, so branch targets, stack
//! maps and error positions keep their meaning: a fused op is written over the first op
//! of its run and, when it runs, does the whole run and continues after it. A branch
//! into the middle of a run finds the original ops there (each position holds the best
//! run starting at it). Runs are fused only when no instruction inside can allocate, call
//! or block (a `call` may only end a run), so a fused op contains at most one safepoint: a
//! transfer to a lower position (a backward branch), polled with the destination's stack
//! map, or its call's, polled at the `call`'s position.
//!
//! Fusion runs in four passes over the translated code of a method:
//! 1. Choosing runs. Every position gets one of the runs that start there (or its own
//!    instruction), chosen so that straight-line code from there to its next jump takes
//!    the fewest dispatches; positions are decided from the end backwards, so the choice
//!    at `p` knows the cost of what follows each candidate.
//! 2. Closing loops. A `jmp` whose destination holds a test-and-branch op (`load a;
//!    push k; CMP; jz/jnz t` and the two-local form) takes a copy of that op: a loop with
//!    its test at the top then closes in one dispatch instead of two. An increment of a
//!    local followed by such a test on the same local, directly or through a `jmp`,
//!    becomes one op (`IncBrConst`, `IncBrLocal`), as a register machine's
//!    `FORLOOP`: those branch ops carry both successors (`t`, taken, and `fall`), so a
//!    copy at another position goes where the original would. Only ops that cannot fail
//!    are copied, so every error keeps the position of the instruction that failed.
//! 3. Summing into the loop's step. A sum into a local (`load a; load b; add; store a`)
//!    right before such a closing increment and test becomes one op with it
//!    (`AddIncBr`): a summing loop then runs one dispatch per iteration. Neither part can
//!    fail; the op is not made when its taken side lands inside its own run.
//! 4. Falling through to the loop's test. Register runs ([`super::regs`]) are candidates
//!    in pass 1 beside the fixed runs: straight-line integer, array or field code of a
//!    basic block becomes a few ops on frame slots, whatever its shape. A run's ops fill
//!    its first positions and the last skips the rest (no position inside a chosen run
//!    may be continued at from outside it); when the run is followed by an op that names
//!    both its successors (a loop's closing test), that op is copied right after the
//!    run's last op, which then falls through instead of skipping; when that last op is
//!    an increment of the local the test reads, the two become one op (`IncBrConst`,
//!    `IncBrLocal`), as in pass 2. A run ending in two increments of different locals
//!    (`x = x + 1; p = p + 1`, a loop over two indices) has them swapped first when the
//!    test reads the first.
//!
//! Calls and returns fuse with the instructions that push a call's arguments or a
//! return's value (`load a; push k; sub; call m`, `push k; call m`, `load a; ret`,
//! `add; ret`, ...). A call may only end a run: the caller's frame then stands at the
//! `call`'s position (its stack map, its errors) and the return resumes after the run,
//! so the collector, a stack overflow and a trace see what unfused code shows them.
//!
//! `load a; push k; mul; load b; add` (a polynomial hash's or a recurrence's step) has an
//! op of its own beside the generic `LoadBinConstBinLocal`, which dispatches on each of
//! its two operations; followed by `push m; rem|div; store d` (a constant modulus) the
//! whole statement is one op (`LoadMulAddDivStore`).
//!
//! Field instructions fuse only in their resolved form: the fused op carries the field's
//! slot, fixed at load. The atomics idioms are `load o; push k; xadd C.f` (with the `pop`
//! that discards the old value), `load o; getfield C.f; store t` (the read of a
//! read-modify-cas loop) and `cas C.f; jz retry` (its retry test, int fields only: a
//! reference cas also keeps a stub's copy current). Each does its one object access at
//! the position of the field instruction it stands for, so errors and the barrier see
//! the same access as unfused code. The same holds for the field statements on int
//! fields: `o.f = o.f OP b` on locals (`FieldBinLocal`: a read, then a write of the same
//! object), a write of the value under it combined with a local (`LoadBinPutField`) or
//! with a field read from a local (`LoadGetFieldBinPutField`), and a receiver pushed
//! with a field read (`LoadLoadGetField`, the start of `p.g = o.f ...`); their `OP` is
//! one that cannot fail, so the only errors are the field accesses'. By-name field
//! instructions (`--no-resolve`) have no slot to carry and stay one dispatch each, like
//! the call of a reflective updater.
//! `marvin run --no-fuse` runs the translated code without this pass (one dispatch per
//! instruction), which the tests compare against.

use super::divconst::Magic;
use super::op::Op;
pub use super::operator::{Bin, Cond};
use super::regs;
use crate::isa::Ty;

/// A conditional branch as fused: `jnz t` (`on`) or `jz t`.
fn branch(op: Option<Op>) -> Option<(bool, u32)> {
    match op {
        Some(Op::Jnz(t)) => Some((true, t)),
        Some(Op::Jz(t)) => Some((false, t)),
        _ => None,
    }
}

/// The code after a position, as the candidates read it.
#[derive(Clone, Copy)]
struct Here<'a> {
    code: &'a [Op],
    i: usize,
}

impl Here<'_> {
    /// The op `k` positions on.
    fn at(self, k: usize) -> Option<Op> {
        self.code.get(self.i + k).copied()
    }

    /// The operation `k` positions on, if it is a binary one.
    fn bin(self, k: usize) -> Option<Bin> {
        self.at(k).and_then(Bin::of)
    }

    /// A compare `k` positions on followed by `jz`/`jnz`: its condition and target.
    fn cmp_br(self, k: usize) -> Option<(Cond, u32)> {
        let (on, t) = branch(self.at(k + 1))?;
        self.bin(k)?.cond(on).map(|c| (c, t))
    }

    /// The position `len` on (a fused branch's fall-through).
    fn fall(self, len: usize) -> u32 {
        (self.i + len) as u32
    }
}

/// A constant right operand the generic ops take: anything but a zero divisor (which
/// fails) and a divisor that `DivConst` turns into a multiply (a division is slower than
/// the extra dispatch).
fn safe(b: Bin, k: i64) -> bool {
    !(b.may_trap() && (k == 0 || Magic::of(k).is_some()))
}

/// Every fused run that starts at `code[i]`, longest first (its own op is not listed).
fn candidates(code: &[Op], i: usize) -> Vec<Op> {
    let here = Here { code, i };
    let mut out = Vec::new();
    calls_and_returns(code, i, &mut out);
    match here.at(0) {
        Some(Op::Load(a)) => from_load(here, a, &mut out),
        Some(Op::Push(k)) => from_push(here, k, &mut out),
        Some(Op::Cas(s)) => {
            if let Some((on, t)) = branch(here.at(1)) {
                out.push(Op::CasBr(s, on, t));
            }
        }
        Some(op) if Bin::of(op).is_some() => {
            if let Some((c, t)) = here.cmp_br(0) {
                out.push(Op::BrCmp(c, t));
            }
            if let (Some(b), Some(Op::Store(d))) = (Bin::of(op), here.at(1)) {
                out.push(Op::BinStore(b, d));
            }
        }
        _ => {}
    }
    out
}

/// The runs that start with `load a` (see [`candidates`]).
fn from_load(here: Here, a: u32, out: &mut Vec<Op>) {
    let (at, bin, cmp_br, fall) = (
        |k| here.at(k),
        |k| here.bin(k),
        |k| here.cmp_br(k),
        |k| here.fall(k),
    );
    let code = here.code;
    let i = here.i;
    match (at(1), at(2), at(3)) {
        (Some(Op::Push(k)), Some(Op::Xadd(s)), next) if i32::try_from(k).is_ok() => {
            out.push(Op::LoadXadd(a, k as i32, s, next == Some(Op::Pop)));
        }
        (Some(Op::GetField(s)), Some(Op::Store(b)), _) => out.push(Op::LoadGetFieldStore(a, s, b)),
        _ => {}
    }
    if let Some(op) = mul_add_div_store(a, &code[i + 1..]) {
        out.push(op);
    }
    if let (Some(Op::Load(b)), Some(Op::GetField(s))) = (at(1), at(2)) {
        if let (Some(Op::Load(c)), Some(op), Some(Op::PutField(f))) = (at(3), bin(4), at(5)) {
            if b == a && f == s && !op.may_trap() {
                out.push(Op::FieldBinLocal(a, s, op, c));
            }
        }
        out.push(Op::LoadLoadGetField(a, b, s));
    }
    if let (Some(Op::GetField(g)), Some(op), Some(Op::PutField(f))) = (at(1), bin(2), at(3)) {
        if !op.may_trap() {
            out.push(Op::LoadGetFieldBinPutField(a, g, op, f));
        }
    }
    if let (Some(op), Some(Op::PutField(f))) = (bin(1), at(2)) {
        if !op.may_trap() {
            out.push(Op::LoadBinPutField(a, op, f));
        }
    }
    // A decrement is an increment by `-k`: `x - k` is `x + (-k)` in two's
    // complement for every `k`, so a counting-down loop closes as one op too.
    match (at(1), at(2), at(3)) {
        (Some(Op::Push(k)), Some(Op::Add), Some(Op::Store(d))) if d == a => {
            out.push(Op::IncLocal(a, k))
        }
        (Some(Op::Push(k)), Some(Op::Sub), Some(Op::Store(d))) if d == a => {
            out.push(Op::IncLocal(a, k.wrapping_neg()))
        }
        _ => {}
    }
    if let Some(Op::Push(k)) = at(1) {
        if let Some((c, t)) = cmp_br(2) {
            out.push(Op::BrLocalConst {
                a,
                k,
                c,
                t,
                fall: fall(4),
            });
        }
        if let (Some(b), Some(Op::Store(d))) = (bin(2), at(3)) {
            if safe(b, k) {
                out.push(Op::LoadBinConstStore(a, b, k, d));
            }
        }
        if let (Some(Op::Mul), Some(Op::Load(b)), Some(Op::Add)) = (at(2), at(3), at(4)) {
            out.push(Op::LoadMulAddLocal(a, k, b));
        }
        if let (Some(b1), Some(Op::Load(b)), Some(b2)) = (bin(2), at(3), bin(4)) {
            if safe(b1, k) {
                out.push(Op::LoadBinConstBinLocal(a, b1, k, b2, b));
            }
        }
        if let Some(b) = bin(2).filter(|&b| safe(b, k)) {
            out.push(Op::LoadBinConst(a, b, k));
        }
    }
    if let Some(Op::Load(b)) = at(1) {
        if let (Some(Op::GetField(s)), Some((c, t))) = (at(2), cmp_br(3)) {
            out.push(Op::BrLocalField { a, o: b, s, c, t });
        }
        if let Some((c, t)) = cmp_br(2) {
            out.push(Op::BrLocalLocal {
                a,
                b,
                c,
                t,
                fall: fall(4),
            });
        }
        match (at(2), at(3), at(4)) {
            (Some(Op::ALoad(Ty::Int)), Some(Op::Jnz(t)), _) => {
                out.push(Op::ALoadLocalBr(a, b, true, t))
            }
            (Some(Op::ALoad(Ty::Int)), Some(Op::Jz(t)), _) => {
                out.push(Op::ALoadLocalBr(a, b, false, t))
            }
            (Some(Op::Push(k)), Some(Op::AStore(Ty::Int)), _) => {
                out.push(Op::AStoreLocalConst(a, b, k))
            }
            _ => {}
        }
        if let Some(Op::ALoad(ty)) = at(2) {
            out.push(Op::ALoadLocal(a, b, ty));
        }
        if let (Some(op), Some(Op::Store(d))) = (bin(2), at(3)) {
            out.push(if op == Bin::Add {
                Op::LoadAddLocalStore(a, b, d)
            } else {
                Op::LoadBinLocalStore(a, op, b, d)
            });
        }
        if let Some(op) = bin(2) {
            out.push(Op::LoadBinLocal(a, op, b));
        }
        out.push(Op::LoadLoad(a, b));
    }
    if let Some(Op::GetField(s)) = at(1) {
        out.push(Op::LoadGetField(a, s));
    }
    if let (Some(b), Some(Op::Store(d))) = (bin(1), at(2)) {
        out.push(Op::BinLocalStore(b, a, d));
    }
    if let Some(b) = bin(1) {
        out.push(Op::BinLocal(b, a));
    }
}

/// The runs that start with `push k` (see [`candidates`]).
fn from_push(here: Here, k: i64, out: &mut Vec<Op>) {
    let (at, bin) = (|k| here.at(k), |k| here.bin(k));
    if let (Some(op @ (Op::Div | Op::Rem)), Some(m)) = (at(1), Magic::of(k)) {
        let rem = op == Op::Rem;
        if let Some(Op::Store(d)) = at(2) {
            out.push(Op::DivConstStore {
                k,
                magic: m.magic,
                shift: m.shift,
                rem,
                d,
            });
        }
        out.push(Op::DivConst {
            k,
            magic: m.magic,
            shift: m.shift,
            rem,
        });
    }
    if let (Some(b1), Some(Op::Push(k2)), Some(b2), Some(Op::Store(d))) =
        (bin(1), at(2), bin(3), at(4))
    {
        if safe(b1, k) && safe(b2, k2) {
            out.push(Op::BinConst2Store(b1, k, b2, k2, d));
        }
    }
    if let (Some(b), Some(Op::Store(d))) = (bin(1), at(2)) {
        if safe(b, k) {
            out.push(Op::BinConstStore(b, k, d));
        }
    }
    if let Some(b) = bin(1).filter(|&b| safe(b, k)) {
        out.push(Op::BinConst(b, k));
    }
}

/// The runs that start at `code[i]` and end in a `call` (its arguments pushed from locals
/// or a constant, or one computed by `add`/`sub` of a constant, which cannot fail) or a
/// `ret` (of a local, a constant or an operation's result), longest first. Every error of
/// a run that ends in a call is the call's own (a stack overflow, at the `call`'s
/// position).
fn calls_and_returns(code: &[Op], i: usize, out: &mut Vec<Op>) {
    let at = |k: usize| code.get(i + k).copied();
    match (at(0), at(1), at(2), at(3)) {
        (Some(Op::Load(a)), Some(Op::Push(k)), Some(Op::Add), Some(Op::Call(m))) => {
            out.push(Op::LoadAddConstCall(a, k, m));
        }
        (Some(Op::Load(a)), Some(Op::Push(k)), Some(Op::Sub), Some(Op::Call(m))) => {
            // Two's complement: `x - k` is `x + (-k)` for every `k`, `i64::MIN` included.
            out.push(Op::LoadAddConstCall(a, k.wrapping_neg(), m));
        }
        (Some(Op::Load(a)), Some(Op::Load(b)), Some(Op::Call(m)), _) => {
            out.push(Op::LoadLoadCall(a, b, m));
        }
        _ => {}
    }
    match (at(0), at(1)) {
        (Some(Op::Load(a)), Some(Op::Call(m))) => out.push(Op::LoadCall(a, m)),
        (Some(Op::Push(k)), Some(Op::Call(m))) => out.push(Op::ConstCall(k, m)),
        (Some(Op::Load(a)), Some(Op::Ret)) => out.push(Op::RetLocal(a)),
        (Some(Op::Push(k)), Some(Op::Ret)) => out.push(Op::RetConst(k)),
        (Some(op), Some(Op::Ret)) => {
            if let Some(b) = Bin::of(op) {
                out.push(Op::BinRet(b));
            }
        }
        _ => {}
    }
}

/// `push k; mul; load b; add; push m; rem|div; store d` (the run after `load a`) as one
/// [`Op::LoadMulAddDivStore`], when its operands fit the op.
fn mul_add_div_store(a: u32, rest: &[Op]) -> Option<Op> {
    let [Op::Push(k), Op::Mul, Op::Load(b), Op::Add, Op::Push(m), div, Op::Store(d), ..] = *rest
    else {
        return None;
    };
    let rem = match div {
        Op::Rem => true,
        Op::Div => false,
        _ => return None,
    };
    let m32 = i32::try_from(m).ok()?;
    let magic = Magic::of(m)?;
    Some(Op::LoadMulAddDivStore {
        a: u16::try_from(a).ok()?,
        b: u16::try_from(b).ok()?,
        d: u16::try_from(d).ok()?,
        shift_rem: magic.shift | (u8::from(rem) << 7),
        k: i32::try_from(k).ok()?,
        m: m32,
        magic: magic.magic,
    })
}

/// Where execution goes after `op` at position `i` when it does not jump: `None` for ops
/// that always jump, return or stop.
fn next(op: Op, i: usize) -> Option<usize> {
    match op {
        Op::Jmp(_)
        | Op::Ret
        | Op::RetLocal(_)
        | Op::RetConst(_)
        | Op::BinRet(_)
        | Op::Halt
        | Op::IncJmp(..) => None,
        Op::BrLocalConst { fall, .. }
        | Op::BrLocalLocal { fall, .. }
        | Op::IncBrConst { fall, .. }
        | Op::IncBrLocal { fall, .. }
        | Op::AddIncBr { fall, .. } => Some(fall as usize),
        _ => Some(i + op.covers()),
    }
}

/// The position a chain of `jmp`s starting at `t` ends at (`code` as chosen so far).
fn through_jumps(code: &[Op], mut t: u32) -> u32 {
    for _ in 0..code.len() {
        match code.get(t as usize) {
            Some(&Op::Jmp(u)) if u != t => t = u,
            _ => break,
        }
    }
    t
}

/// Whether `op` decides its successor itself (both branches explicit) and cannot fail, so
/// a copy of it at another position does what it does.
fn movable(op: Op) -> bool {
    matches!(
        op,
        Op::BrLocalConst { .. }
            | Op::BrLocalLocal { .. }
            | Op::IncBrConst { .. }
            | Op::IncBrLocal { .. }
            | Op::RegBr { .. }
            | Op::RegBrI { .. }
            | Op::RegBrNz { .. }
    )
}

/// `op` as placed at position `at`: an op that names both successors keeps the one after
/// `at` as its fall-through (the executor polls safepoints on the taken side only),
/// inverting its condition if need be; `None` when both lie at or before `at`.
fn placed(op: Op, at: usize) -> Option<Op> {
    let at = at as u32;
    let flip = |c: Cond, t: u32, fall: u32| -> Option<(Cond, u32, u32)> {
        if fall > at {
            Some((c, t, fall))
        } else if t > at {
            Some((c.not(), fall, t))
        } else {
            None
        }
    };
    Some(match op {
        Op::BrLocalConst { a, k, c, t, fall } => {
            let (c, t, fall) = flip(c, t, fall)?;
            Op::BrLocalConst { a, k, c, t, fall }
        }
        Op::BrLocalLocal { a, b, c, t, fall } => {
            let (c, t, fall) = flip(c, t, fall)?;
            Op::BrLocalLocal { a, b, c, t, fall }
        }
        Op::IncBrConst {
            a,
            inc,
            k,
            c,
            t,
            fall,
        } => {
            let (c, t, fall) = flip(c, t, fall)?;
            Op::IncBrConst {
                a,
                inc,
                k,
                c,
                t,
                fall,
            }
        }
        Op::IncBrLocal {
            a,
            inc,
            b,
            c,
            t,
            fall,
        } => {
            let (c, t, fall) = flip(c, t, fall)?;
            Op::IncBrLocal {
                a,
                inc,
                b,
                c,
                t,
                fall,
            }
        }
        Op::RegBr { c, a, b, t, fall } => {
            let (c, t, fall) = flip(c, t, fall)?;
            Op::RegBr { c, a, b, t, fall }
        }
        Op::RegBrI { c, a, k, t, fall } => {
            let (c, t, fall) = flip(c, t, fall)?;
            Op::RegBrI { c, a, k, t, fall }
        }
        Op::RegBrNz { a, on, t, fall } => {
            if fall > at {
                Op::RegBrNz { a, on, t, fall }
            } else if t > at {
                Op::RegBrNz {
                    a,
                    on: !on,
                    t: fall,
                    fall: t,
                }
            } else {
                return None;
            }
        }
        other => other,
    })
}

/// Whether `original[j]` is a test of local `a` against a constant or a local followed by
/// `jz`/`jnz`, or a `jmp` to one: what pass 2 fuses an increment of `a` before it with.
fn closes_loop(original: &[Op], j: usize, a: u32) -> bool {
    let j = match original.get(j) {
        Some(&Op::Jmp(t)) => t as usize,
        _ => j,
    };
    let is_test = |k: usize| {
        let cmp = original.get(j + 2).copied().and_then(Bin::of);
        let br = branch(original.get(j + 3).copied());
        matches!(original.get(k), Some(&Op::Load(x)) if x == a)
            && matches!(original.get(j + 1), Some(Op::Push(_) | Op::Load(_)))
            && cmp.zip(br).is_some_and(|(c, (on, _))| c.cond(on).is_some())
    };
    is_test(j)
}

/// `IncLocal(a, inc)` followed by the test-and-branch `br` (on `a`), as one op.
fn inc_then(a: u32, inc: i64, br: Op) -> Option<Op> {
    let inc = i32::try_from(inc).ok()?;
    match br {
        Op::BrLocalConst {
            a: x,
            k,
            c,
            t,
            fall,
        } if x == a => Some(Op::IncBrConst {
            a,
            inc,
            k: i32::try_from(k).ok()?,
            c,
            t,
            fall,
        }),
        Op::BrLocalLocal {
            a: x,
            b,
            c,
            t,
            fall,
        } if x == a => Some(Op::IncBrLocal {
            a,
            inc,
            b,
            c,
            t,
            fall,
        }),
        Op::RegBrI {
            c,
            a: x,
            k,
            t,
            fall,
        } if x as u32 == a => Some(Op::IncBrConst {
            a,
            inc,
            k,
            c,
            t,
            fall,
        }),
        Op::RegBr {
            c,
            a: x,
            b,
            t,
            fall,
        } if x as u32 == a => Some(Op::IncBrLocal {
            a,
            inc,
            b: b as u32,
            c,
            t,
            fall,
        }),
        _ => None,
    }
}

/// Whether `op` is a fixed superinstruction that divides (`div`, `rem`) through the
/// generic [`Bin::apply`], a second dispatch on the operation.
fn divides(op: Op) -> bool {
    let d = |b: Bin| matches!(b, Bin::Div | Bin::Rem);
    match op {
        Op::BinRet(b)
        | Op::BinConst(b, _)
        | Op::BinConstStore(b, ..)
        | Op::BinLocal(b, _)
        | Op::BinStore(b, _)
        | Op::LoadBinConst(_, b, _)
        | Op::LoadBinLocal(_, b, _)
        | Op::LoadBinConstStore(_, b, ..)
        | Op::LoadBinLocalStore(_, b, ..)
        | Op::BinLocalStore(b, ..) => d(b),
        Op::LoadBinConstBinLocal(_, b1, _, b2, _) | Op::BinConst2Store(b1, _, b2, ..) => {
            d(b1) || d(b2)
        }
        _ => false,
    }
}

/// Fuses a method's translated code in place (see the module doc for the passes). With
/// the method's `frame`, register runs ([`super::regs`]) are candidates too.
pub fn fuse(code: &mut [Op], frame: Option<&regs::Frame>) {
    let original = code.to_vec();
    let runs = choose_runs(code, &original, frame);
    close_loops(code);
    // Pass 3: a sum into a local right before a loop's closing increment and test runs
    // with it. The sum cannot fail, so the branch op's errors (none) and safepoint keep
    // their meaning; the taken side must not land inside the fused run, whose ops after
    // the first would then be a forward transfer from here but a backward one there.
    let closed = code.to_vec();
    for (i, op) in code.iter_mut().enumerate() {
        if let Some(fused) = add_then(&closed, i) {
            *op = fused;
        }
    }
    for (i, run) in runs {
        fall_through_to_test(code, i, &run);
    }
}

/// Pass 1: from the end, the run at each position that leaves the fewest dispatches to
/// the next jump, written into `code`. The ops of a register run fill the positions after
/// its first: those are `dead`, and no choice further up may continue at one. Returns the
/// register runs chosen, with their first positions.
fn choose_runs(
    code: &mut [Op],
    original: &[Op],
    frame: Option<&regs::Frame>,
) -> Vec<(usize, regs::Run)> {
    let n = code.len();
    let targets = regs::jump_targets(original);
    let mut cost = vec![0u32; n + 1];
    let mut dead = vec![false; n + 1];
    let mut runs: Vec<(usize, regs::Run)> = Vec::new();
    for i in (0..n).rev() {
        let after = |j: usize| -> Option<u32> {
            match j {
                j if j > n || dead[j] => None,
                j => Some(cost[j]),
            }
        };
        let cost_of = |op: Op| match (op, next(op, i)) {
            // Pass 2 makes an increment and the test after it one op.
            (Op::IncLocal(a, _), _) if closes_loop(original, i + 4, a) => Some(1),
            (_, Some(j)) if j <= n => after(j).map(|c| 1 + c),
            _ => Some(1),
        };
        let mut best = original[i];
        let mut best_cost = cost_of(best).unwrap_or(u32::MAX);
        for c in candidates(original, i) {
            if let Some(k) = cost_of(c) {
                if k < best_cost {
                    (best, best_cost) = (c, k);
                }
            }
        }
        let mut run = None;
        for r in frame.map_or_else(Vec::new, |f| regs::runs(original, f, &targets, i)) {
            if let Some(c) = after(i + r.len) {
                let k = r.ops.len() as u32 + c;
                // Of two runs as good, the longer (they come shortest first): it may end
                // where pass 4 can give it a loop's test to fall through to. A run as good
                // as a fixed op that divides through the generic operation is taken too:
                // its division is an op of its own, with no second dispatch.
                let tie = run.is_some() || divides(best);
                if k < best_cost || (k == best_cost && tie) {
                    best_cost = k;
                    run = Some(r);
                }
            }
        }
        match run {
            Some(r) => {
                code[i..i + r.ops.len()].copy_from_slice(&r.ops);
                dead[i + 1..i + r.len].fill(true);
                runs.push((i, r));
            }
            None => code[i] = best,
        }
        cost[i] = best_cost;
    }
    runs
}

/// Pass 2: close loops, reading the choices of pass 1: a `jmp` takes a copy of the test it
/// goes to, an increment the test after it.
fn close_loops(code: &mut [Op]) {
    let chosen = code.to_vec();
    for i in 0..code.len() {
        match chosen[i] {
            Op::Jmp(t) => {
                let t = through_jumps(&chosen, t);
                code[i] = match chosen.get(t as usize) {
                    Some(&op) if movable(op) => placed(op, i).unwrap_or(Op::Jmp(t)),
                    _ => Op::Jmp(t),
                };
            }
            Op::IncLocal(a, inc) => {
                let after = chosen.get(i + 4).copied();
                let br = match after {
                    Some(Op::Jmp(t)) => {
                        let t = through_jumps(&chosen, t);
                        match chosen
                            .get(t as usize)
                            .copied()
                            .and_then(|op| inc_then(a, inc, op))
                        {
                            Some(op) => Some(op),
                            None => Some(Op::IncJmp(a, inc, t)),
                        }
                    }
                    Some(op) => inc_then(a, inc, op),
                    None => None,
                };
                if let Some(op) = br.and_then(|op| placed(op, i)) {
                    code[i] = op;
                }
            }
            _ => {}
        }
    }
}

/// Pass 4: the register `run` at `i` that skips to an op naming both its successors (a
/// loop's closing test) gets a copy of that op right after its last op, in its free
/// positions, so it falls through: no dispatch waits for the skip to be loaded.
fn fall_through_to_test(code: &mut [Op], i: usize, run: &regs::Run) {
    let m = run.ops.len();
    if code[i..i + m] != run.ops[..] || m >= run.len {
        return;
    }
    let Some(&next) = code.get(i + run.len) else {
        return;
    };
    let (true, Some(copy)) = (movable(next), placed(next, i + m)) else {
        return;
    };
    code[i + m] = copy;
    if let Some(skip) = regs::skip_mut(&mut code[i + m - 1]) {
        *skip = 0;
    }
    // A run that ends in `x = x + k; p = p + q` (two steps of a loop over two indices,
    // `x` the one tested) ends in `x`'s step instead: each reads and writes its own slot
    // only and neither can fail, so the two commute.
    if let (Some(&Op::RegAddI(x)), Op::RegAddI(p)) = (
        code.get((i + m).wrapping_sub(2)).filter(|_| m >= 2),
        code[i + m - 1],
    ) {
        let steps = x.d == x.a && p.d == p.a && x.a != p.a;
        if steps && inc_then(x.a as u32, x.k as i64, copy).is_some() {
            code[i + m - 2] = Op::RegAddI(p);
            code[i + m - 1] = Op::RegAddI(x);
        }
    }
    // A run that ends in `x = x + k` before a test of `x` closes its loop in one op, as
    // pass 2 closes a loop whose increment is alone.
    if let Op::RegAddI(r) = code[i + m - 1] {
        let closed = inc_then(r.a as u32, r.k as i64, copy).and_then(|op| placed(op, i + m - 1));
        if let (true, Some(op)) = (r.d == r.a, closed) {
            code[i + m - 1] = op;
        }
    }
}

/// `LoadAddLocalStore(a, b, a)` at `i` followed by an `IncBrConst` (as closed by pass 2)
/// as one [`Op::AddIncBr`], when its operands fit.
fn add_then(code: &[Op], i: usize) -> Option<Op> {
    let Some(&Op::LoadAddLocalStore(a, b, d)) = code.get(i) else {
        return None;
    };
    let Some(&Op::IncBrConst {
        a: ic,
        inc,
        k,
        c,
        t,
        fall,
    }) = code.get(i + 4)
    else {
        return None;
    };
    if d != a || (t as usize > i && t as usize <= i + 4) || fall as usize <= i + 4 {
        return None;
    }
    Some(Op::AddIncBr {
        a: u16::try_from(a).ok()?,
        b: u16::try_from(b).ok()?,
        i: u16::try_from(ic).ok()?,
        inc: i16::try_from(inc).ok()?,
        k,
        c,
        t,
        fall,
    })
}

#[cfg(test)]
#[path = "fuse_tests.rs"]
mod tests;
