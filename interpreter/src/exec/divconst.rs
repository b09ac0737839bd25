//! Division and remainder by a constant as a multiply, for the fused `push k; div|rem` ops.
//!
//! A hardware 64-bit division takes tens of cycles and sits on the critical path of any
//! loop that carries its result (`s = (s * 31 + i) rem 1000000007`). When the divisor is
//! a constant the quotient is the high half of a 128-bit product with a "magic" multiplier
//! and a shift, both computed once at load (Granlund and Montgomery, *Division by
//! Invariant Integers using Multiplication*, 1994; the signed algorithm of Warren,
//! *Hacker's Delight*, 2nd ed., figure 10-1, at 64 bits), as compilers do for a literal
//! divisor. The result is exactly `i64::wrapping_div` / `wrapping_rem` (truncating
//! toward zero, the remainder taking the dividend's sign) for every dividend.
//!
//! Only divisors from 2 to `i64::MAX` are handled: 0 must trap, 1 and -1 need no
//! division, and negative constants are rare enough to keep the generic op.

/// The multiplier and shift for one positive divisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Magic {
    pub magic: i64,
    pub shift: u8,
}

impl Magic {
    /// The multiplier and shift that divide by `d`, or `None` for a divisor this module
    /// does not handle (below 2).
    pub fn of(d: i64) -> Option<Magic> {
        if d < 2 {
            return None;
        }
        let d = d as u64;
        let two63: u64 = 1 << 63;
        // The largest dividend magnitude whose remainder is d - 1 (`anc`, |nc|).
        let anc = two63 - 1 - two63 % d;
        let mut p: u32 = 63;
        let (mut q1, mut r1) = (two63 / anc, two63 % anc);
        let (mut q2, mut r2) = (two63 / d, two63 % d);
        loop {
            p += 1;
            // r1 < anc < 2^63 and r2 < d < 2^63: the doublings cannot overflow; the
            // quotients wrap as in the published algorithm.
            q1 = q1.wrapping_mul(2);
            r1 *= 2;
            if r1 >= anc {
                q1 = q1.wrapping_add(1);
                r1 -= anc;
            }
            q2 = q2.wrapping_mul(2);
            r2 *= 2;
            if r2 >= d {
                q2 = q2.wrapping_add(1);
                r2 -= d;
            }
            let delta = d - r2;
            if !(q1 < delta || (q1 == delta && r1 == 0)) {
                break;
            }
        }
        Some(Magic {
            magic: q2.wrapping_add(1) as i64,
            shift: (p - 64) as u8,
        })
    }

    /// `n / d` truncated toward zero, for the `d` this was made for.
    #[inline(always)]
    pub fn quotient(self, n: i64) -> i64 {
        let hi = ((self.magic as i128 * n as i128) >> 64) as i64;
        // A multiplier of 2^63 or more was stored as a negative number: add the dividend
        // back (branch-free: the mask is all ones only then).
        let q = hi.wrapping_add(n & (self.magic >> 63)) >> self.shift;
        // Round toward zero: add one to a negative quotient.
        q.wrapping_add(((q as u64) >> 63) as i64)
    }

    /// `n` rem `d` (the sign of `n`), for the `d` this was made for.
    #[inline(always)]
    pub fn remainder(self, n: i64, d: i64) -> i64 {
        n.wrapping_sub(self.quotient(n).wrapping_mul(d))
    }

    /// `n` rem `d` when `rem`, else `n / d`: what a fused `push d; div|rem` leaves.
    #[inline(always)]
    pub fn apply(self, n: i64, d: i64, rem: bool) -> i64 {
        if rem {
            self.remainder(n, d)
        } else {
            self.quotient(n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dividends() -> Vec<i64> {
        let mut v = vec![
            0,
            1,
            -1,
            2,
            -2,
            i64::MIN,
            i64::MIN + 1,
            i64::MAX,
            i64::MAX - 1,
            1_000_000_006,
            1_000_000_007,
            -1_000_000_007,
        ];
        for s in 0..64 {
            let p = 1i64.wrapping_shl(s);
            for q in [p, p.wrapping_neg()] {
                v.extend([q, q.wrapping_sub(1), q.wrapping_add(1)]);
            }
        }
        v
    }

    fn check(d: i64, n: i64) {
        let m = Magic::of(d).expect("a divisor of 2 or more");
        assert_eq!(m.quotient(n), n.wrapping_div(d), "{n} / {d} ({m:?})");
        assert_eq!(m.remainder(n, d), n.wrapping_rem(d), "{n} rem {d} ({m:?})");
    }

    #[test]
    fn divides_exactly_at_the_edges() {
        let mut divisors: Vec<i64> = (2..=1000).collect();
        for s in 1..63 {
            let p = 1i64 << s;
            divisors.extend([p, p - 1, p + 1]);
        }
        divisors.extend([
            i64::MAX,
            i64::MAX - 1,
            1_000_000_007,
            (1 << 62) + 1,
            3_037_000_499,
        ]);
        for &d in divisors.iter().filter(|&&d| d >= 2) {
            for n in dividends() {
                check(d, n);
            }
        }
    }

    #[test]
    fn handles_only_divisors_of_two_and_more() {
        for d in [i64::MIN, -7, -2, -1, 0, 1] {
            assert_eq!(Magic::of(d), None, "{d}");
        }
        // Both kinds of multiplier occur among small divisors: below 2^63, and 2^63 or
        // more (stored negative, the dividend added back), so the tests here cover both.
        let negative = (2..1000)
            .filter(|&d| Magic::of(d).unwrap().magic < 0)
            .count();
        assert!(negative > 0 && negative < 998, "{negative}");
    }

    proptest! {
        #[test]
        fn divides_as_the_hardware_does(d in 2i64..=i64::MAX, n in any::<i64>()) {
            check(d, n);
        }

        #[test]
        fn divides_by_small_divisors(d in 2i64..100_000, n in any::<i64>()) {
            check(d, n);
        }
    }
}
