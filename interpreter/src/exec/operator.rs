//! The integer operators the translated code names in its operands: [`Bin`], an
//! operation with an immediate, local or slot right operand, and [`Cond`], when a fused
//! compare-and-branch is taken. The stack ops ([`super::op`]), the fusion pass
//! ([`super::fuse`]) and the register runs ([`super::regs`]) share them.

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
    pub(crate) fn of(op: Op) -> Option<Bin> {
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
    pub(crate) fn may_trap(self) -> bool {
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

    /// The branch condition of this comparison followed by `jnz` (`on`) or `jz`.
    pub(crate) fn cond(self, on: bool) -> Option<Cond> {
        // Bit 0: taken when a < b; bit 1: when a == b; bit 2: when a > b.
        let when_true = match self {
            Bin::Lt => 0b001,
            Bin::Le => 0b011,
            Bin::Gt => 0b100,
            Bin::Ge => 0b110,
            Bin::Eq => 0b010,
            Bin::Ne => 0b101,
            _ => return None,
        };
        let c = Cond(when_true);
        Some(if on { c } else { c.not() })
    }
}

/// When a fused compare-and-branch is taken, as a mask over the three orderings of its
/// operands (bit 0: less, bit 1: equal, bit 2: greater): a `jz` after `lt` is the mask
/// of `ge`. Testing it is branch-free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cond(u8);

impl Cond {
    /// The opposite condition.
    pub(crate) fn not(self) -> Cond {
        Cond(!self.0 & 0b111)
    }

    /// Whether the branch is taken for operands `a` and `b`.
    #[inline(always)]
    pub fn taken(self, a: i64, b: i64) -> bool {
        // A loop's test is nearly always `lt`: one compare-and-branch for it.
        if self.0 == 0b001 {
            return a < b;
        }
        let ord = (a > b) as u8 + (a >= b) as u8;
        (self.0 >> ord) & 1 != 0
    }
}
