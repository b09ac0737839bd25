//! Unit tests of [`super`]: the fused ops each pass makes, and what stays behind them.

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
        Op::Ret,
    ];
    fuse(&mut code, None);
    let c = Bin::Lt.cond(true).unwrap();
    assert_eq!(
        code[0],
        Op::IncBrConst {
            a: 1,
            inc: 1,
            k: 10,
            c,
            t: 0,
            fall: 8
        }
    );
    assert_eq!(
        code[4],
        Op::BrLocalConst {
            a: 1,
            k: 10,
            c,
            t: 0,
            fall: 8
        }
    );
    // Branches into the middle of a run still find the original instruction.
    assert_eq!(code[3], Op::Store(1));
    assert_eq!(code[7], Op::Jnz(0));
}

#[test]
fn a_counting_down_loop_closes_in_one_dispatch() {
    // top: if !(j >= k) goto done; j = j - 1; goto top; done: ret (tested at the top,
    // as a `while` loop counting down is written)
    let mut code = vec![
        Op::Load(1),
        Op::Load(2),
        Op::Ge,
        Op::Jz(9),
        Op::Load(1),
        Op::Push(1),
        Op::Sub,
        Op::Store(1),
        Op::Jmp(0),
        Op::Ret,
    ];
    fuse(&mut code, None);
    assert_eq!(
        code[4],
        Op::IncBrLocal {
            a: 1,
            inc: -1,
            b: 2,
            c: Bin::Ge.cond(true).unwrap(),
            t: 4,
            fall: 9
        }
    );
    // The decrement of the most negative constant is still an increment by it.
    let mut code = vec![
        Op::Load(0),
        Op::Push(i64::MIN),
        Op::Sub,
        Op::Store(0),
        Op::Ret,
    ];
    fuse(&mut code, None);
    assert_eq!(code[0], Op::IncLocal(0, i64::MIN));
}

#[test]
fn a_loop_over_two_indices_closes_on_the_tested_one() {
    // top: if !(x <= 100) goto done; s = s + a[p - 1] + a[p + 1]; x = x + 1;
    // p = p + 1; goto top; done: return s. Locals a, x, p, s.
    use Op::*;
    let mut code = vec![
        Load(1),
        Push(100),
        Le,
        Jz(27),
        Load(3),
        Load(0),
        Load(2),
        Push(1),
        Sub,
        ALoad(Ty::Int),
        Add,
        Load(0),
        Load(2),
        Push(1),
        Add,
        ALoad(Ty::Int),
        Add,
        Store(3),
        Load(1),
        Push(1),
        Add,
        Store(1),
        Load(2),
        Push(1),
        Add,
        Store(2),
        Jmp(0),
        Load(3),
        Ret,
    ];
    let (i, r) = (Ty::Int, Ty::Ref);
    let stack_types: Vec<Vec<Ty>> = vec![
        vec![],
        vec![i],
        vec![i, i],
        vec![i],
        vec![],
        vec![i],
        vec![i, r],
        vec![i, r, i],
        vec![i, r, i, i],
        vec![i, r, i],
        vec![i, i],
        vec![i],
        vec![i, r],
        vec![i, r, i],
        vec![i, r, i, i],
        vec![i, r, i],
        vec![i, i],
        vec![i],
        vec![],
        vec![i],
        vec![i, i],
        vec![i],
        vec![],
        vec![i],
        vec![i, i],
        vec![i],
        vec![],
        vec![],
        vec![i],
    ];
    let frame = regs::Frame {
        locals: 4,
        max_stack: 4,
        stack_types: &stack_types,
    };
    fuse(&mut code, Some(&frame));
    // The statement's ops, `p`'s step, then `x`'s step and test as one op.
    let closing = code[4..12]
        .iter()
        .position(|op| matches!(op, IncBrConst { a: 1, inc: 1, .. }))
        .unwrap_or_else(|| panic!("{code:?}"));
    assert!(
        matches!(code[4 + closing - 1], RegAddI(r) if r.a == 2 && r.d == 2 && r.k == 1),
        "{code:?}"
    );
}

/// top: if !(i < 10) goto done; s = s + i; i = i + 1; goto top; done: ret
fn summing_loop_tested_at_the_top() -> Vec<Op> {
    vec![
        Op::Load(1),
        Op::Push(10),
        Op::Lt,
        Op::Jz(13),
        Op::Load(0),
        Op::Load(1),
        Op::Add,
        Op::Store(0),
        Op::Load(1),
        Op::Push(1),
        Op::Add,
        Op::Store(1),
        Op::Jmp(0),
        Op::Ret,
    ]
}

#[test]
fn a_loop_tested_at_the_top_closes_in_one_dispatch() {
    let mut code = summing_loop_tested_at_the_top();
    fuse(&mut code, None);
    let c = Bin::Lt.cond(false).unwrap();
    assert_eq!(c, Bin::Ge.cond(true).unwrap());
    assert_eq!(
        code[0],
        Op::BrLocalConst {
            a: 1,
            k: 10,
            c,
            t: 13,
            fall: 4
        }
    );
    // (The sum at 4 takes the increment and test along as well: see the next test.)
    // The increment takes the test along: it goes to the body or out, as the jmp
    // to the test would; the backward successor (the body) is the taken one.
    let again = Bin::Lt.cond(true).unwrap();
    assert_eq!(
        code[8],
        Op::IncBrConst {
            a: 1,
            inc: 1,
            k: 10,
            c: again,
            t: 4,
            fall: 13
        }
    );
    // A jmp to the test alone becomes the test.
    assert_eq!(
        code[12],
        Op::BrLocalConst {
            a: 1,
            k: 10,
            c: again,
            t: 4,
            fall: 13
        }
    );
}

#[test]
fn a_summing_loop_runs_one_op_per_iteration() {
    let mut code = summing_loop_tested_at_the_top();
    fuse(&mut code, None);
    let again = Bin::Lt.cond(true).unwrap();
    // The sum takes the closing increment and test along: back to itself or out.
    assert_eq!(
        code[4],
        Op::AddIncBr {
            a: 0,
            b: 1,
            i: 1,
            inc: 1,
            k: 10,
            c: again,
            t: 4,
            fall: 13
        }
    );
    // The increment and test stay for whatever reaches them on their own.
    assert!(matches!(code[8], Op::IncBrConst { a: 1, .. }));
    assert_eq!(code[7], Op::Store(0));
}

#[test]
fn a_sum_fuses_with_the_loop_test_only_as_an_accumulation() {
    // d = a + b with d != a, then the increment and test: no AddIncBr.
    let mut code = vec![
        Op::Load(0),
        Op::Load(1),
        Op::Add,
        Op::Store(2),
        Op::Load(1),
        Op::Push(1),
        Op::Add,
        Op::Store(1),
        Op::Load(1),
        Op::Push(10),
        Op::Lt,
        Op::Jnz(0),
        Op::Ret,
    ];
    fuse(&mut code, None);
    assert_eq!(code[0], Op::LoadAddLocalStore(0, 1, 2));
    // A local above the op's 16-bit fields keeps the two ops apart.
    let mut wide = vec![
        Op::Load(70_000),
        Op::Load(1),
        Op::Add,
        Op::Store(70_000),
        Op::Load(1),
        Op::Push(1),
        Op::Add,
        Op::Store(1),
        Op::Load(1),
        Op::Push(10),
        Op::Lt,
        Op::Jnz(0),
        Op::Ret,
    ];
    fuse(&mut wide, None);
    assert_eq!(wide[0], Op::LoadAddLocalStore(70_000, 1, 70_000));
    assert!(matches!(wide[4], Op::IncBrConst { .. }));
}

#[test]
fn prefers_the_chain_with_fewer_dispatches() {
    // s = s + a[i]: `load s` alone, then `load a; load i; aload`, then `add; store s`
    // (3 dispatches), not `load s; load a` first (4).
    let mut code = vec![
        Op::Load(2),
        Op::Load(0),
        Op::Load(1),
        Op::ALoad(Ty::Int),
        Op::Add,
        Op::Store(2),
        Op::Ret,
    ];
    fuse(&mut code, None);
    assert_eq!(code[0], Op::Load(2));
    assert_eq!(code[1], Op::ALoadLocal(0, 1, Ty::Int));
    assert_eq!(code[4], Op::BinStore(Bin::Add, 2));
}

#[test]
fn a_three_address_add_has_its_own_op() {
    // d = a + b needs no dispatch on the operation; d = a - b keeps the general op.
    let mut code = vec![
        Op::Load(0),
        Op::Load(1),
        Op::Add,
        Op::Store(2),
        Op::Load(0),
        Op::Load(1),
        Op::Sub,
        Op::Store(2),
        Op::Ret,
    ];
    fuse(&mut code, None);
    assert_eq!(code[0], Op::LoadAddLocalStore(0, 1, 2));
    assert_eq!(code[4], Op::LoadBinLocalStore(0, Bin::Sub, 1, 2));
    assert_eq!(code[0].covers(), 4);
}

#[test]
fn fuses_expression_runs_of_five() {
    // x = ((x >> 16) ^ x) * K & M
    let mut code = vec![
        Op::Load(2),
        Op::Push(16),
        Op::Shr,
        Op::Load(2),
        Op::Xor,
        Op::Push(73),
        Op::Mul,
        Op::Push(0xffff),
        Op::And,
        Op::Store(2),
        Op::Ret,
    ];
    fuse(&mut code, None);
    assert_eq!(
        code[0],
        Op::LoadBinConstBinLocal(2, Bin::Shr, 16, Bin::Xor, 2)
    );
    assert_eq!(
        code[5],
        Op::BinConst2Store(Bin::Mul, 73, Bin::And, 0xffff, 2)
    );
}

#[test]
fn compare_masks_agree_with_the_comparisons() {
    for b in [Bin::Lt, Bin::Le, Bin::Gt, Bin::Ge, Bin::Eq, Bin::Ne] {
        for on in [true, false] {
            let c = b.cond(on).unwrap();
            for (x, y) in [(1, 2), (2, 2), (3, 2), (i64::MIN, i64::MAX), (-1, -1)] {
                let v = b.apply(x, y).unwrap() != 0;
                assert_eq!(c.taken(x, y), v == on, "{b:?} {on} {x} {y}");
            }
        }
    }
    assert_eq!(Bin::Add.cond(true), None);
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
    fuse(&mut code, None);
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
        Op::Ret,
    ];
    fuse(&mut code, None);
    assert_eq!(code[0], Op::CasRef(s));
    assert!(!matches!(code[2], Op::LoadXadd(..)));
}

#[test]
fn divides_by_a_constant_with_a_multiply() {
    // s = (s * 31 + i) rem 1000000007; q = q / 10 (left on the stack)
    let mut code = vec![
        Op::Load(0),
        Op::Push(31),
        Op::Mul,
        Op::Load(1),
        Op::Add,
        Op::Push(1_000_000_007),
        Op::Rem,
        Op::Store(0),
        Op::Load(2),
        Op::Push(10),
        Op::Div,
        Op::Print,
        Op::Ret,
    ];
    fuse(&mut code, None);
    let m = Magic::of(1_000_000_007).unwrap();
    // The whole statement is one op; the division behind it keeps its own.
    assert_eq!(
        code[0],
        Op::LoadMulAddDivStore {
            a: 0,
            b: 1,
            d: 0,
            shift_rem: m.shift | 0x80,
            k: 31,
            m: 1_000_000_007,
            magic: m.magic,
        }
    );
    assert_eq!(code[0].covers(), 8);
    assert_eq!(code[1], Op::BinConst(Bin::Mul, 31));
    assert_eq!(
        code[5],
        Op::DivConstStore {
            k: 1_000_000_007,
            magic: m.magic,
            shift: m.shift,
            rem: true,
            d: 0
        }
    );
    assert_eq!(code[5].covers(), 3);
    // `load q` then the division: the multiply rather than one dispatch fewer.
    assert_eq!(code[8], Op::Load(2));
    let m = Magic::of(10).unwrap();
    assert_eq!(
        code[9],
        Op::DivConst {
            k: 10,
            magic: m.magic,
            shift: m.shift,
            rem: false
        }
    );
    // A divisor of 1, -1 or below keeps the generic op.
    for k in [1, -1, -7] {
        let mut code = vec![Op::Push(k), Op::Rem, Op::Store(0), Op::Ret];
        fuse(&mut code, None);
        assert_eq!(code[0], Op::BinConstStore(Bin::Rem, k, 0), "{k}");
    }
}

#[test]
fn never_fuses_a_division_by_a_zero_constant() {
    let mut code = vec![Op::Load(0), Op::Push(0), Op::Div, Op::Ret];
    fuse(&mut code, None);
    assert!(!matches!(code[0], Op::LoadBinConst(..)));
    assert!(!matches!(code[1], Op::BinConst(..)));
    assert_eq!(Bin::Rem.apply(7, 0), None);
    assert_eq!(Bin::Div.apply(i64::MIN, -1), Some(i64::MIN));
}
