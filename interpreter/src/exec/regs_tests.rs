//! Unit tests of [`super`]: the register ops a run of stack code becomes.

use super::*;

/// The runs from position 0 of `code` in a frame of `locals` locals, the stack as deep
/// at each position as `depths` says.
fn runs_of(code: &[Op], locals: u32, depths: &[usize]) -> Vec<Run> {
    let stack_types: Vec<Vec<Ty>> = depths.iter().map(|&d| vec![Ty::Int; d]).collect();
    let frame = Frame {
        locals,
        max_stack: depths.iter().copied().max().unwrap_or(0) as u32,
        stack_types: &stack_types,
    };
    runs(code, &frame, &jump_targets(code), 0)
}

#[test]
fn a_statement_becomes_ops_on_locals_and_stack_slots() {
    // s = s + (i xor j), locals s, i, j: the xor into the stack slot of its entry
    // (slot 3 + 1), the add straight into `s`.
    let code = [
        Op::Load(0),
        Op::Load(1),
        Op::Load(2),
        Op::Xor,
        Op::Add,
        Op::Store(0),
        Op::Ret,
    ];
    let runs = runs_of(&code, 3, &[0, 1, 2, 3, 2, 1, 0]);
    let last = runs.last().expect("a run");
    assert_eq!(last.len, 6);
    assert_eq!(
        last.ops,
        vec![
            Op::RegXor(R3 {
                d: 4,
                a: 1,
                b: 2,
                skip: 0
            }),
            Op::RegAdd(R3 {
                d: 0,
                a: 0,
                b: 4,
                skip: 4
            }),
        ]
    );
}

#[test]
fn a_store_copies_the_local_a_pushed_load_still_names() {
    // a, b = b, a through the stack: `store 0` must not change what the first
    // `load 0` pushed.
    let code = [
        Op::Load(0),
        Op::Load(1),
        Op::Store(0),
        Op::Store(1),
        Op::Ret,
    ];
    let runs = runs_of(&code, 2, &[0, 1, 2, 1, 0]);
    assert_eq!(
        runs.last().expect("a run").ops,
        vec![
            Op::RegMov {
                d: 2,
                a: 0,
                skip: 0
            },
            Op::RegMov {
                d: 0,
                a: 1,
                skip: 0
            },
            Op::RegMov {
                d: 1,
                a: 2,
                skip: 1
            },
        ]
    );
}

#[test]
fn an_index_plus_a_constant_pushed_before_a_computed_value_is_a_displacement() {
    // a[j + 1] = a[j], locals a, j: the sum `j + 1` waits under the load of `a[j]`
    // and becomes the store's displacement, with no add of its own.
    let code = [
        Op::Load(0),
        Op::Load(1),
        Op::Push(1),
        Op::Add,
        Op::Load(0),
        Op::Load(1),
        Op::ALoad(Ty::Int),
        Op::AStore(Ty::Int),
        Op::Ret,
    ];
    let runs = runs_of(&code, 2, &[0, 1, 2, 3, 2, 3, 4, 3, 0]);
    assert_eq!(
        runs.last().expect("a run").ops,
        vec![
            Op::RegALoad {
                d: 4,
                arr: 0,
                i: 1,
                off: 0,
                ty: Ty::Int,
                skip: 0,
                at: 6
            },
            Op::RegAStore {
                arr: 0,
                i: 1,
                off: 1,
                v: 4,
                ty: Ty::Int,
                skip: 6,
                at: 7
            },
        ]
    );
}

#[test]
fn a_store_into_the_local_of_an_uncomputed_sum_computes_it_first() {
    // a, b = b, a - 2 through the stack: `store 0` must not change what `a - 2` reads.
    let code = [
        Op::Load(0),
        Op::Push(2),
        Op::Sub,
        Op::Load(1),
        Op::Store(0),
        Op::Store(1),
        Op::Ret,
    ];
    let runs = runs_of(&code, 2, &[0, 1, 2, 1, 2, 1, 0]);
    assert_eq!(
        runs.last().expect("a run").ops,
        vec![
            Op::RegAddI(RI {
                d: 2,
                a: 0,
                k: -2,
                skip: 0
            }),
            Op::RegMov {
                d: 0,
                a: 1,
                skip: 0
            },
            Op::RegMov {
                d: 1,
                a: 2,
                skip: 3
            },
        ]
    );
}

#[test]
fn a_store_of_a_pushed_local_does_not_retarget_the_op_below_it() {
    // t = v0 * 3; v0 = v1; v1 = t through the stack: `store 0` stores what `load 1`
    // pushed, not the product computed just before it.
    let code = [
        Op::Load(0),
        Op::Push(3),
        Op::Mul,
        Op::Load(1),
        Op::Store(0),
        Op::Store(1),
        Op::Ret,
    ];
    let runs = runs_of(&code, 2, &[0, 1, 2, 1, 2, 1, 0]);
    assert_eq!(
        runs.last().expect("a run").ops,
        vec![
            Op::RegMulI(RI {
                d: 2,
                a: 0,
                k: 3,
                skip: 0
            }),
            Op::RegMov {
                d: 0,
                a: 1,
                skip: 0
            },
            Op::RegMov {
                d: 1,
                a: 2,
                skip: 3
            },
        ]
    );
}

#[test]
fn a_remainder_by_a_local_is_an_op_of_its_own() {
    let code = [Op::Load(0), Op::Load(1), Op::Rem, Op::Store(2), Op::Ret];
    let runs = runs_of(&code, 3, &[0, 1, 2, 1, 0]);
    assert_eq!(
        runs.last().expect("a run").ops,
        vec![Op::RegRem {
            r: R3 {
                d: 2,
                a: 0,
                b: 1,
                skip: 3
            },
            at: 2
        }]
    );
}

#[test]
fn a_run_contains_no_jump_target_and_ends_balanced() {
    // x = 1; (target) y = 2; jmp to the target: the run from 0 stops before it.
    let code = [
        Op::Push(1),
        Op::Store(0),
        Op::Push(2),
        Op::Store(1),
        Op::Jmp(2),
    ];
    let runs = runs_of(&code, 2, &[0, 1, 0, 1, 0]);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].len, 2);
    // Unbalanced prefixes (`push 1` alone) are no run.
    assert!(runs.iter().all(|r| r.len != 1));
}

#[test]
fn a_constant_on_the_left_becomes_the_constant_operand() {
    // x = 3 * x + 1 (Collatz's odd step, the constant pushed first): a multiply and an
    // add into `x`, no move of the constant into a slot.
    let code = [
        Op::Push(3),
        Op::Load(0),
        Op::Mul,
        Op::Push(1),
        Op::Add,
        Op::Store(0),
        Op::Ret,
    ];
    let runs = runs_of(&code, 1, &[0, 1, 2, 1, 2, 1, 0]);
    assert_eq!(
        runs.last().expect("a run").ops,
        vec![
            Op::RegMulI(RI {
                d: 1,
                a: 0,
                k: 3,
                skip: 0
            }),
            Op::RegAddI(RI {
                d: 0,
                a: 1,
                k: 1,
                skip: 4
            }),
        ]
    );
}

#[test]
fn a_bound_computed_in_the_loop_test_is_folded_and_subtracted_once() {
    // j < N - 1 - i with N = 3000 (locals j = 0, i = 1): 2999 - i into the stack slot
    // of its entry (as -i + 2999), then one compare-and-branch on the two slots.
    let code = [
        Op::Load(0),
        Op::Push(3000),
        Op::Push(1),
        Op::Sub,
        Op::Load(1),
        Op::Sub,
        Op::Lt,
        Op::Jz(9),
        Op::Ret,
        Op::Ret,
    ];
    let runs = runs_of(&code, 2, &[0, 1, 2, 3, 2, 3, 2, 1, 0, 0]);
    assert_eq!(
        runs.last().expect("a run").ops,
        vec![
            Op::RegMulI(RI {
                d: 3,
                a: 1,
                k: -1,
                skip: 0
            }),
            Op::RegAddI(RI {
                d: 3,
                a: 3,
                k: 2999,
                skip: 0
            }),
            Op::RegBr {
                c: Bin::Lt.cond(false).expect("a compare"),
                a: 0,
                b: 3,
                t: 9,
                fall: 8
            },
        ]
    );
    // A constant compared with a local is the local compared the other way.
    let code = [
        Op::Push(5),
        Op::Load(0),
        Op::Lt,
        Op::Jnz(5),
        Op::Ret,
        Op::Ret,
    ];
    let runs = runs_of(&code, 1, &[0, 1, 2, 1, 0, 0]);
    assert_eq!(
        runs.last().expect("a run").ops,
        vec![Op::RegBrI {
            c: Bin::Gt.cond(true).expect("a compare"),
            a: 0,
            k: 5,
            t: 5,
            fall: 4
        }]
    );
}

#[test]
fn a_test_of_bits_is_an_and_and_a_branch() {
    // if x and 1 == 0 goto even: the bits into the entry's slot, a branch on it.
    let code = [
        Op::Load(0),
        Op::Push(1),
        Op::And,
        Op::Jz(5),
        Op::Ret,
        Op::Ret,
    ];
    let runs = runs_of(&code, 1, &[0, 1, 2, 1, 0, 0]);
    assert_eq!(
        runs.last().expect("a run").ops,
        vec![
            Op::RegAndI(RI {
                d: 1,
                a: 0,
                k: 1,
                skip: 0
            }),
            Op::RegBrNz {
                a: 1,
                on: false,
                t: 5,
                fall: 4
            }
        ]
    );
}

#[test]
fn a_division_of_constants_by_zero_is_not_folded() {
    // push 1; push 0; div must still fail when it runs: no constant comes of it.
    let code = [Op::Push(1), Op::Push(0), Op::Div, Op::Store(0), Op::Ret];
    let runs = runs_of(&code, 1, &[0, 1, 2, 1, 0]);
    assert!(!runs.is_empty());
    for r in &runs {
        assert!(
            r.ops
                .iter()
                .any(|op| matches!(op, Op::RegDiv { at: 2, .. })),
            "{:?}",
            r.ops
        );
    }
}
