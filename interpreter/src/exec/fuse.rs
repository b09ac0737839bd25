//! Superinstructions: common runs of stack instructions fused into one dispatch.
//!
//! The translated code keeps one op per original instruction, so branch targets, stack
//! maps and error positions keep their meaning: a fused op is written over the first op
//! of its run and, when it runs, does the whole run and continues after it. A branch
//! into the middle of a run finds the original ops there. Runs are fused only when no
//! instruction inside can allocate, call or block, so a fused op contains at most one
//! safepoint: its own backward branch, polled with the branch target's stack map.
//!
//! Field instructions fuse only in their resolved form: the fused op carries the field's
//! slot, fixed at load. The atomics idioms are `load o; push k; xadd C.f` (with the `pop`
//! that discards the old value), `load o; getfield C.f; store t` (the read of a
//! read-modify-cas loop) and `cas C.f; jz retry` (its retry test, int fields only: a
//! reference cas also keeps a stub's copy current). Each does its one object access at
//! the position of the field instruction it stands for, so errors and the barrier see
//! the same access as unfused code. By-name field instructions (`--no-resolve`) have no
//! slot to carry and stay one dispatch each, like the call of a reflective updater.

use super::op::Op;

/// An integer operation that can take an immediate or a local operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Bin {
    fn of(op: Op) -> Option<Bin> {
        Some(match op {
            Op::Add => Bin::Add,
            Op::Sub => Bin::Sub,
            Op::Mul => Bin::Mul,
            Op::Div => Bin::Div,
            Op::Rem => Bin::Rem,
            Op::And => Bin::And,
            Op::Or => Bin::Or,
            Op::Xor => Bin::Xor,
            Op::Shl => Bin::Shl,
            Op::Shr => Bin::Shr,
            Op::Lt => Bin::Lt,
            Op::Le => Bin::Le,
            Op::Gt => Bin::Gt,
            Op::Ge => Bin::Ge,
            Op::Eq => Bin::Eq,
            Op::Ne => Bin::Ne,
            _ => return None,
        })
    }

    /// Whether `b` as a right operand can fail (division by zero).
    fn may_trap(self) -> bool {
        matches!(self, Bin::Div | Bin::Rem)
    }

    /// Applies the operation; `None` is division by zero.
    #[inline(always)]
    pub fn apply(self, a: i64, b: i64) -> Option<i64> {
        Some(match self {
            Bin::Add => a.wrapping_add(b),
            Bin::Sub => a.wrapping_sub(b),
            Bin::Mul => a.wrapping_mul(b),
            Bin::Div => {
                if b == 0 {
                    return None;
                }
                a.wrapping_div(b)
            }
            Bin::Rem => {
                if b == 0 {
                    return None;
                }
                a.wrapping_rem(b)
            }
            Bin::And => a & b,
            Bin::Or => a | b,
            Bin::Xor => a ^ b,
            Bin::Shl => a.wrapping_shl(b as u32 & 63),
            Bin::Shr => a.wrapping_shr(b as u32 & 63),
            Bin::Lt => (a < b) as i64,
            Bin::Le => (a <= b) as i64,
            Bin::Gt => (a > b) as i64,
            Bin::Ge => (a >= b) as i64,
            Bin::Eq => (a == b) as i64,
            Bin::Ne => (a != b) as i64,
        })
    }

    fn is_compare(self) -> bool {
        matches!(
            self,
            Bin::Lt | Bin::Le | Bin::Gt | Bin::Ge | Bin::Eq | Bin::Ne
        )
    }
}

/// Finds the longest fusable run starting at `code[i]`.
fn fuse_at(code: &[Op], i: usize) -> Option<Op> {
    let at = |k: usize| code.get(i + k).copied();
    let branch = |op: Option<Op>| match op {
        Some(Op::Jnz(t)) => Some((true, t)),
        Some(Op::Jz(t)) => Some((false, t)),
        _ => None,
    };
    match (at(0)?, at(1), at(2), at(3)) {
        (Op::Load(a), Some(Op::Push(k)), Some(Op::Xadd(s)), next) if i32::try_from(k).is_ok() => {
            Some(Op::LoadXadd(a, k as i32, s, next == Some(Op::Pop)))
        }
        (Op::Load(a), Some(Op::GetField(s)), Some(Op::Store(b)), _) => {
            Some(Op::LoadGetFieldStore(a, s, b))
        }
        (Op::Cas(s), br, _, _) if branch(br).is_some() => {
            let (on, t) = branch(br)?;
            Some(Op::CasBr(s, on, t))
        }
        (Op::Load(a), Some(Op::Push(k)), Some(Op::Add), Some(Op::Store(b))) if a == b => {
            Some(Op::IncLocal(a, k))
        }
        (Op::Load(a), Some(Op::Push(k)), Some(op), br)
            if Bin::of(op).is_some_and(Bin::is_compare) && branch(br).is_some() =>
        {
            let (on, t) = branch(br)?;
            Some(Op::BrLocalConst(a, k, Bin::of(op)?, on, t))
        }
        (Op::Load(a), Some(Op::Load(b)), Some(op), br)
            if Bin::of(op).is_some_and(Bin::is_compare) && branch(br).is_some() =>
        {
            let (on, t) = branch(br)?;
            Some(Op::BrLocalLocal(a, b, Bin::of(op)?, on, t))
        }
        (Op::Load(a), Some(Op::Push(k)), Some(op), _)
            if Bin::of(op).is_some_and(|b| !(b.may_trap() && k == 0)) =>
        {
            Some(Op::LoadBinConst(a, Bin::of(op)?, k))
        }
        (Op::Load(a), Some(Op::Load(b)), Some(op), _) if Bin::of(op).is_some() => {
            Some(Op::LoadBinLocal(a, Bin::of(op)?, b))
        }
        (op, br, _, _) if Bin::of(op).is_some_and(Bin::is_compare) && branch(br).is_some() => {
            let (on, t) = branch(br)?;
            Some(Op::BrCmp(Bin::of(op)?, on, t))
        }
        (Op::Push(k), Some(op), Some(Op::Store(a)), _)
            if Bin::of(op).is_some_and(|b| !(b.may_trap() && k == 0)) =>
        {
            Some(Op::BinConstStore(Bin::of(op)?, k, a))
        }
        (Op::Push(k), Some(op), _, _) if Bin::of(op).is_some_and(|b| !(b.may_trap() && k == 0)) => {
            Some(Op::BinConst(Bin::of(op)?, k))
        }
        (Op::Load(a), Some(op), _, _) if Bin::of(op).is_some() => {
            Some(Op::BinLocal(Bin::of(op)?, a))
        }
        (Op::Load(a), Some(Op::GetField(s)), _, _) => Some(Op::LoadGetField(a, s)),
        (Op::Load(a), Some(Op::Load(b)), _, _) => Some(Op::LoadLoad(a, b)),
        _ => None,
    }
}

/// Writes fused ops over the starts of fusable runs.
pub fn fuse(code: &mut [Op]) {
    let original = code.to_vec();
    for (i, op) in code.iter_mut().enumerate() {
        if let Some(f) = fuse_at(&original, i) {
            *op = f;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::op::Slot;
    use super::*;

    #[test]
    fn fuses_the_counting_loop_and_keeps_the_originals_behind() {
        // i = i + 1; if i < 10 goto 0
        let mut code = vec![
            Op::Load(1),
            Op::Push(1),
            Op::Add,
            Op::Store(1),
            Op::Load(1),
            Op::Push(10),
            Op::Lt,
            Op::Jnz(0),
        ];
        fuse(&mut code);
        assert_eq!(code[0], Op::IncLocal(1, 1));
        assert_eq!(code[4], Op::BrLocalConst(1, 10, Bin::Lt, true, 0));
        // Branches into the middle of a run still find the original instruction.
        assert_eq!(code[3], Op::Store(1));
        assert_eq!(code[7], Op::Jnz(0));
    }

    #[test]
    fn fuses_the_atomics_idioms_in_resolved_code_only() {
        let s = Slot { class: 0, slot: 1 };
        // retry: t = o.f; if !cas(o.f, t, t + 1) goto retry; o.f += 1 (xadd, old dropped)
        let mut code = vec![
            Op::Load(0),
            Op::GetField(s),
            Op::Store(2),
            Op::Load(0),
            Op::Load(2),
            Op::Load(2),
            Op::Push(1),
            Op::Add,
            Op::Cas(s),
            Op::Jz(0),
            Op::Load(0),
            Op::Push(1),
            Op::Xadd(s),
            Op::Pop,
            Op::Load(0),
            Op::Push(-1),
            Op::Xadd(s),
            Op::Ret,
        ];
        fuse(&mut code);
        assert_eq!(code[0], Op::LoadGetFieldStore(0, s, 2));
        assert_eq!(code[8], Op::CasBr(s, false, 0));
        assert_eq!(code[10], Op::LoadXadd(0, 1, s, true));
        assert_eq!(code[14], Op::LoadXadd(0, -1, s, false));
        assert_eq!(code[13], Op::Pop);
        // A reference cas is not fused, nor an add too wide for the fused immediate.
        let mut code = vec![
            Op::CasRef(s),
            Op::Jz(0),
            Op::Load(0),
            Op::Push(1 << 40),
            Op::Xadd(s),
        ];
        fuse(&mut code);
        assert_eq!(code[0], Op::CasRef(s));
        assert!(!matches!(code[2], Op::LoadXadd(..)));
    }

    #[test]
    fn never_fuses_a_division_by_a_zero_constant() {
        let mut code = vec![Op::Load(0), Op::Push(0), Op::Div, Op::Ret];
        fuse(&mut code);
        assert!(!matches!(code[0], Op::LoadBinConst(..)));
        assert_eq!(Bin::Rem.apply(7, 0), None);
        assert_eq!(Bin::Div.apply(i64::MIN, -1), Some(i64::MIN));
    }
}
