//! Calls and returns, fused with the instructions that push their arguments and values
//! (`load a; push k; sub; call m`, `load a; ret`, `add; ret`, ...), do what the unfused
//! ones do: deep recursion stops at the same depth with a stack overflow at the same
//! `call`, the collector finds every frame's references (locals and operands held across
//! a call) under a heap small enough to collect during the calls, and random programs of
//! calls print the same, end the same and fail at the same position fused as unfused.

use marvin_app::RunConfig;
use marvin_interpreter::exec::op::Op;
use marvin_interpreter::exec::Loaded;
use marvin_interpreter::{load, verify};
use marvin_runtime::HeapConfig;
use proptest::prelude::*;

mod in_process;
use in_process::run_captured;

/// What an in-process run did: status, output, the rendered error, collections.
#[derive(Debug, PartialEq, Eq)]
struct Ran {
    status: i32,
    out: String,
    error: Option<String>,
    collections: u64,
}

fn verified(text: &str) -> marvin_interpreter::isa::VerifiedProgram {
    let p = load::load_bytes("calls.masm", text.as_bytes()).expect("program loads");
    verify::verify(p).unwrap_or_else(|d| panic!("{d:?}\n{text}"))
}

fn run(text: &str, fuse: bool, tweak: impl FnOnce(&mut RunConfig)) -> Ran {
    let mut cfg = RunConfig {
        fuse,
        ..RunConfig::default()
    };
    tweak(&mut cfg);
    let (outcome, printed) = run_captured(verified(text), cfg);
    Ran {
        status: outcome.status,
        out: printed,
        error: outcome.error,
        collections: outcome.stats.collections,
    }
}

/// Every method's fused ops.
fn fused(text: &str) -> Vec<Vec<Op>> {
    Loaded::translated_with(verified(text), true, true).code
}

fn is_call_or_return_fusion(op: &Op) -> bool {
    matches!(
        op,
        Op::LoadCall(..)
            | Op::LoadLoadCall(..)
            | Op::ConstCall(..)
            | Op::LoadAddConstCall(..)
            | Op::RetLocal(..)
            | Op::RetConst(..)
            | Op::BinRet(..)
    )
}

/// `rec(n)` recurses to depth `n` through `load 0; push 1; sub; call rec` (position 9)
/// and returns its depth through `push 1; add; ret` and `load 0; ret`.
fn recursion(depth: u32) -> String {
    format!(
        ".method main args=0 locals=0
  push {depth}
  call rec
  print
  push 0
  ret
.end
.method rec args=1 locals=1
  load 0
  push 1
  lt
  jz deeper
  load 0
  ret
deeper:
  load 0
  push 1
  sub
  call rec
  push 1
  add
  ret
.end
"
    )
}

#[test]
fn deep_recursion_overflows_at_the_same_depth_and_call_fused_and_unfused() {
    let text = recursion(0);
    let rec = &fused(&text)[1];
    assert!(
        matches!(rec[6], Op::LoadAddConstCall(0, -1, 1)),
        "the recursive call is fused: {rec:?}"
    );
    // The call-depth limit, then the value stack's capacity, bound the recursion.
    type Limit = fn(&mut RunConfig);
    let limits: [(&str, Limit); 2] = [
        ("frames", |c| c.max_frames = 200),
        ("stack", |c| c.stack_slots = 250),
    ];
    for (what, limit) in limits {
        let mut deepest_ok = None;
        let mut overflowed = false;
        for depth in (100..400).step_by(7) {
            let text = recursion(depth);
            let f = run(&text, true, limit);
            let p = run(&text, false, limit);
            assert_eq!(
                f, p,
                "{what} limit, depth {depth}: fused and unfused differ"
            );
            match &f.error {
                None => {
                    assert_eq!(f.out.trim(), depth.to_string(), "{what}: depth {depth}");
                    deepest_ok = Some(depth);
                }
                Some(e) => {
                    assert!(e.contains("stack overflow"), "{what}: {e}");
                    // At the recursive `call` (position 9 of `rec`), not elsewhere in
                    // its fused run.
                    assert!(e.contains("rec+9"), "{what}: {e}");
                    overflowed = true;
                }
            }
        }
        assert!(
            deepest_ok.is_some() && overflowed,
            "{what}: the limit was not crossed"
        );
    }
}

/// `tree(n)` makes two objects per call: one held in a local across both recursive
/// calls, one held on the operand stack across the first; it returns the sum of what
/// they hold over the whole recursion.
const TREE: &str = ".class Box
  .field v int
.end
.method main args=0 locals=0
  push N
  call tree
  print
  push 0
  ret
.end
.method tree args=1 locals=2
  load 0
  push 1
  lt
  jz go
  push 0
  ret
go:
  new Box
  store 1
  load 1
  load 0
  putfield Box.v
  new Box
  dup
  load 0
  putfield Box.v
  load 0
  push 1
  sub
  call tree
  swap
  getfield Box.v
  add
  load 0
  push 2
  sub
  call tree
  add
  load 1
  getfield Box.v
  add
  ret
.end
";

/// What `tree(n)` returns.
fn tree(n: i64) -> i64 {
    if n < 1 {
        0
    } else {
        tree(n - 1) + tree(n - 2) + 2 * n
    }
}

#[test]
fn frames_references_survive_collections_during_calls() {
    let n = 16;
    let text = TREE.replace("push N", &format!("push {n}"));
    assert!(
        fused(&text)[1].iter().any(is_call_or_return_fusion),
        "tree's calls and returns are fused"
    );
    let small_heap = |c: &mut RunConfig| {
        c.heap = HeapConfig {
            gc_min_free: 4 << 10,
            gc_max_free: 8 << 10,
            ..HeapConfig::default()
        };
    };
    for fuse in [true, false] {
        let r = run(&text, fuse, small_heap);
        assert_eq!(r.error, None, "fuse {fuse}");
        assert_eq!(r.out.trim(), tree(n).to_string(), "fuse {fuse}");
        assert!(
            r.collections >= 10,
            "fuse {fuse}: only {} collections ran during the calls",
            r.collections
        );
    }
}

/// An integer expression of a generated method.
#[derive(Clone, Debug)]
enum Expr {
    Arg(u32),
    Const(i64),
    Bin(usize, Box<Expr>, Box<Expr>),
    /// A call of an earlier method (index below the caller's) with these arguments.
    Call(usize, Vec<Expr>),
}

const OPS: [&str; 8] = ["add", "sub", "mul", "div", "rem", "xor", "lt", "eq"];
/// Methods `f0..f3`; `fi` takes `ARGS[i]` arguments.
const ARGS: [u32; 4] = [1, 2, 1, 2];

fn expr(callers_below: usize) -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        (0..2u32).prop_map(Expr::Arg),
        (-3i64..4).prop_map(Expr::Const),
    ];
    leaf.prop_recursive(3, 12, 2, move |inner| {
        let call = (
            0..callers_below.max(1),
            prop::collection::vec(inner.clone(), 2),
        )
            .prop_map(|(m, args)| Expr::Call(m, args));
        let bin = (0..OPS.len(), inner.clone(), inner)
            .prop_map(|(o, a, b)| Expr::Bin(o, Box::new(a), Box::new(b)));
        if callers_below == 0 {
            bin.boxed()
        } else {
            prop_oneof![bin, call].boxed()
        }
    })
}

fn emit(e: &Expr, args: u32, out: &mut String) {
    match e {
        // An argument a method lacks reads its first one.
        Expr::Arg(a) => out.push_str(&format!("  load {}\n", a % args)),
        Expr::Const(k) => out.push_str(&format!("  push {k}\n")),
        Expr::Bin(o, a, b) => {
            emit(a, args, out);
            emit(b, args, out);
            out.push_str(&format!("  {}\n", OPS[*o]));
        }
        Expr::Call(m, xs) => {
            for x in &xs[..ARGS[*m] as usize] {
                emit(x, args, out);
            }
            out.push_str(&format!("  call f{m}\n"));
        }
    }
}

fn call_program(bodies: &[Expr], inputs: &[(i64, i64)]) -> String {
    let mut out = String::from(".method main args=0 locals=0\n");
    for (x, y) in inputs {
        out.push_str(&format!("  push {x}\n  push {y}\n  call f3\n  print\n"));
    }
    out.push_str("  push 0\n  ret\n.end\n");
    for (i, body) in bodies.iter().enumerate() {
        let args = ARGS[i];
        out.push_str(&format!(".method f{i} args={args} locals={}\n", args + 1));
        emit(body, args, &mut out);
        out.push_str("  ret\n.end\n");
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 150,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_call_programs_run_the_same_fused_and_unfused(
        b0 in expr(0),
        b1 in expr(1),
        b2 in expr(2),
        b3 in expr(3),
        inputs in prop::collection::vec((-4i64..5, -4i64..5), 1..4),
    ) {
        let text = call_program(&[b0, b1, b2, b3], &inputs);
        let f = run(&text, true, |_| {});
        let p = run(&text, false, |_| {});
        prop_assert_eq!(f, p, "{}", text);
    }
}

#[test]
fn generated_call_programs_use_the_fused_calls_and_returns() {
    // One program of each shape the generator makes, to show the property above runs
    // the fused ops: a recursion step, a constant (main's) and a local argument, two
    // local arguments, and returns of a local, a constant and an operation.
    let step = Expr::Bin(0, Box::new(Expr::Arg(0)), Box::new(Expr::Const(1)));
    let bodies = [
        Expr::Arg(0),
        Expr::Const(2),
        Expr::Call(0, vec![step.clone(), step]),
        Expr::Bin(
            0,
            Box::new(Expr::Call(1, vec![Expr::Arg(0), Expr::Arg(1)])),
            Box::new(Expr::Call(2, vec![Expr::Arg(1), Expr::Const(3)])),
        ),
    ];
    let text = call_program(&bodies, &[(1, 2)]);
    let ops: Vec<Op> = fused(&text).concat();
    type Shape = (&'static str, fn(&Op) -> bool);
    let shapes: [Shape; 7] = [
        ("RetLocal", |op: &Op| matches!(op, Op::RetLocal(_))),
        ("RetConst", |op: &Op| matches!(op, Op::RetConst(_))),
        ("BinRet", |op: &Op| matches!(op, Op::BinRet(_))),
        ("LoadAddConstCall", |op: &Op| {
            matches!(op, Op::LoadAddConstCall(..))
        }),
        ("LoadLoadCall", |op: &Op| matches!(op, Op::LoadLoadCall(..))),
        ("LoadCall", |op: &Op| matches!(op, Op::LoadCall(..))),
        ("ConstCall", |op: &Op| matches!(op, Op::ConstCall(..))),
    ];
    for (name, want) in shapes {
        assert!(ops.iter().any(want), "no {name} in {ops:?}\n{text}");
    }
    let f = run(&text, true, |_| {});
    assert_eq!(f, run(&text, false, |_| {}));
    assert_eq!(f.error, None);
}
