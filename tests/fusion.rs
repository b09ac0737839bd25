//! Superinstructions change how many dispatches a program takes, never what it does: every
//! benchmark program, every program of the conformance suite and random integer programs
//! (straight-line code, loops tested at the top and at the bottom, branches, array and
//! field accesses, divisions that may fail, calls of helper methods with loops of their
//! own) print the same, end with the same status and report the same runtime error at the
//! same `METHOD+PC (FILE:LINE)` fused as unfused (`marvin run --no-fuse`, one dispatch per
//! instruction). Random programs include the shapes register runs must get right (a swap
//! of two locals through the stack, `dup`, `pop`, `neg`, array indices with a displacement,
//! constant elements). A fixed set of seeded random programs also runs on every executor path:
//! fused or not, field operands resolved at load or by name (`--no-resolve`), barriers on
//! or off (`--no-barrier`); `MARVIN_GEN_SEEDS=A..B cargo test --test fusion generated`
//! runs other seeds, and a seed that finds a difference joins `FOUND_SEEDS`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use marvin_app::RunConfig;
use marvin_interpreter::exec::op::Op;
use marvin_interpreter::exec::Loaded;
use marvin_interpreter::{load, verify};
use marvin_sidebyside::{default_dir, Suite, ELSEWHERE_PROGRAMS, PROGRAMS};
use proptest::prelude::*;

mod in_process;
use in_process::run_captured;

const MARVIN: &str = env!("CARGO_BIN_EXE_marvin");

/// What one `marvin run` did: exit status, stdout, stderr.
#[derive(Debug, PartialEq, Eq)]
struct Ran {
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

fn marvin_run(args: &[String]) -> Ran {
    let out = Command::new(MARVIN)
        .arg("run")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot start {MARVIN}: {e}"));
    Ran {
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `args` fused and unfused and asserts that both did the same.
fn same_fused_and_unfused(label: &str, args: Vec<String>) -> Ran {
    let fused = marvin_run(&args);
    let mut plain_args = vec!["--no-fuse".to_string()];
    plain_args.extend(args);
    let plain = marvin_run(&plain_args);
    assert_eq!(fused, plain, "{label}: fused and unfused runs differ");
    fused
}

#[test]
fn bench_programs_run_the_same_fused_and_unfused() {
    let dir = default_dir();
    for p in PROGRAMS {
        let path = dir.join("programs").join(format!("{}.masm", p.name));
        let ran = same_fused_and_unfused(
            p.name,
            vec![
                path.display().to_string(),
                "-D".into(),
                format!("N={}", p.tiny),
            ],
        );
        assert_eq!(ran.status, Some(0), "{}: {}", p.name, ran.stderr);
        assert!(!ran.stdout.trim().is_empty(), "{} printed nothing", p.name);
    }
}

/// The conformance programs that run (not the rejected ones; not `messages/`, whose
/// threads and timers make their interleaving, not their instructions, vary).
fn conformance_cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read tests/conformance")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "masm"))
        .collect();
    cases.sort();
    cases
}

#[test]
fn conformance_programs_run_the_same_fused_and_unfused() {
    let cases = conformance_cases();
    assert!(cases.len() > 20, "found only {} cases", cases.len());
    let mut errors = 0;
    for masm in cases {
        let mut args = vec![masm.display().to_string()];
        if let Ok(text) = std::fs::read_to_string(masm.with_extension("args")) {
            args.extend(
                text.lines()
                    .map(str::trim_end)
                    .filter(|l| !l.is_empty())
                    .map(String::from),
            );
        }
        let label = masm.file_name().unwrap().to_string_lossy().into_owned();
        let ran = same_fused_and_unfused(&label, args);
        if ran.stderr.contains("error:") {
            errors += 1;
        }
    }
    // The corpus exercises runtime errors, so their positions are compared too.
    assert!(errors >= 5, "only {errors} cases ended in a runtime error");
}

/// Runs MASM text in process; returns status, output and the rendered error, and how
/// many of main's ops are superinstructions.
fn run_in_process(text: &str, fuse: bool) -> (i32, String, Option<String>, usize) {
    let p = load::load_bytes("gen.masm", text.as_bytes()).expect("generated program loads");
    let vp = verify::verify(p).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let fused = Loaded::translated_with(vp.clone(), true, fuse).code[0]
        .iter()
        .filter(|op| is_superinstruction(op))
        .count();
    let cfg = RunConfig {
        fuse,
        ..RunConfig::default()
    };
    let (outcome, printed) = run_captured(vp, cfg);
    (outcome.status, printed, outcome.error, fused)
}

fn is_superinstruction(op: &Op) -> bool {
    !matches!(
        op,
        Op::Push(_)
            | Op::Load(_)
            | Op::Store(_)
            | Op::Pop
            | Op::Dup
            | Op::Swap
            | Op::Add
            | Op::Sub
            | Op::Mul
            | Op::Div
            | Op::Rem
            | Op::And
            | Op::Or
            | Op::Xor
            | Op::Shl
            | Op::Shr
            | Op::Neg
            | Op::Lt
            | Op::Le
            | Op::Gt
            | Op::Ge
            | Op::Eq
            | Op::Ne
            | Op::Jmp(_)
            | Op::Jz(_)
            | Op::Jnz(_)
            | Op::Print
            | Op::Ret
            | Op::New(_)
            | Op::NewArray(_)
            | Op::ALoad(_)
            | Op::AStore(_)
            | Op::GetField(_)
            | Op::PutField(_)
            | Op::Call(_)
    )
}

/// Locals of a generated method: the array and the object (a helper's first two
/// arguments), VARS integers (a helper's next two arguments are the first two), then the
/// loop counters.
const ARR: u32 = 0;
const OBJ: u32 = 1;
const VAR0: u32 = 2;
const VARS: u32 = 4;
const COUNTERS: u32 = 3;
const LOCALS: u32 = VAR0 + VARS + COUNTERS;
/// Helper methods `f0..f2` of a generated program, each `fk(arr, obj, a, b)` returning an
/// int; `fk` may call the helpers below it, `main` all of them.
const HELPERS: usize = 3;
const OPS: [&str; 16] = [
    "add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "lt", "le", "gt", "ge",
    "eq", "ne",
];
const CMPS: [&str; 6] = ["lt", "le", "gt", "ge", "eq", "ne"];

/// An integer expression over the variables.
#[derive(Clone, Debug)]
enum Expr {
    Var(u32),
    Const(i64),
    Bin(usize, Box<Expr>, Box<Expr>),
    /// `arr[e]`, the index masked into range unless the flag says raw (may fail)
    Elem(Box<Expr>, bool),
    /// `obj.f`
    Field,
    /// `fk(arr, obj, a, b)`, a helper below the caller
    Call(usize, Box<Expr>, Box<Expr>),
    /// `neg e`
    Neg(Box<Expr>),
    /// `arr[(v & 7) + k]`, `k` from -1 to 1 (so it may fail): an index with a displacement
    ElemOff(u32, i64),
    /// `arr[c + k]`, `c` a loop counter (0 to 8, so it may fail), `k` from -2 to 2: a
    /// local plus a constant, which the translator leaves uncomputed until it is read
    ElemNear(u32, i64),
}

/// A statement; loops count with their own counter, so they always end.
#[derive(Clone, Debug)]
enum Stmt {
    Set(u32, Expr),
    Print(u32),
    /// `arr[i] = v`, the index masked into range unless the flag says raw
    SetElem(Expr, bool, Expr),
    SetField(Expr),
    /// `a, b = b, a` through the stack (`load a; load b; store a; store b`): a store into
    /// a local that a pushed `load` still names
    Swap(u32, u32),
    /// `a = b = e` through `dup`
    SetTwo(u32, u32, Expr),
    /// `e` evaluated and dropped with `pop`
    Discard(Expr),
    /// `arr[(v & 7) + k] = c`, a constant element at an index with a displacement
    SetElemConst(u32, i64, i64),
    /// `arr[c + k] = e`, `c` a loop counter: the index is pushed before a value that is
    /// computed (`a[j + 1] = a[j]`)
    SetElemNear(u32, i64, Expr),
    /// `a, b = b, a - k` through the stack (`load a; push k; sub; load b; store a; store
    /// b`): a store into the local an uncomputed sum still reads
    SwapNear(u32, u32, i64),
    If(usize, u32, Expr, Vec<Stmt>),
    /// `for c = 0; c < n; c += step` tested at the top (`jz` out, `jmp` back) or at the
    /// bottom (`jmp` to the test first), bound a constant, a variable or the field
    Loop {
        top: bool,
        bound: Bound,
        step: i64,
        body: Vec<Stmt>,
        /// `v = v + x` right before the increment (`x` may be the counter itself, index
        /// `VARS`, or `v`), the shape a summing loop fuses with its increment and test
        sum: Option<(u32, u32)>,
    },
}

#[derive(Clone, Debug)]
enum Bound {
    Const(i64),
    Var(u32),
    Field,
    /// `k - 1 - v` computed in the loop's test (`c < N - 1 - i`, a bubble sort's inner
    /// bound): two constants folded, a constant minus a local
    Computed(i64, u32),
}

/// An expression of a method that may call the helpers below `calls`.
fn expr(calls: usize) -> BoxedStrategy<Expr> {
    let leaf = prop_oneof![
        4 => (0..VARS).prop_map(Expr::Var),
        3 => prop_oneof![Just(0i64), Just(1), Just(-1), Just(7), -100i64..100, any::<i64>()]
            .prop_map(Expr::Const),
        1 => Just(Expr::Field),
    ];
    leaf.prop_recursive(3, 12, 2, move |inner| {
        let bin = (0..OPS.len(), inner.clone(), inner.clone())
            .prop_map(|(o, a, b)| Expr::Bin(o, Box::new(a), Box::new(b)));
        let elem = (inner.clone(), prop::bool::weighted(0.2))
            .prop_map(|(e, raw)| Expr::Elem(Box::new(e), raw));
        let neg = inner.clone().prop_map(|e| Expr::Neg(Box::new(e)));
        let elem_off = (0..VARS, -1i64..=1).prop_map(|(v, k)| Expr::ElemOff(v, k));
        let elem_near = (0..COUNTERS, -2i64..=2).prop_map(|(c, k)| Expr::ElemNear(c, k));
        if calls == 0 {
            return prop_oneof![4 => bin, 1 => elem, 1 => neg, 1 => elem_off, 1 => elem_near]
                .boxed();
        }
        let call = (0..calls, inner.clone(), inner)
            .prop_map(|(k, a, b)| Expr::Call(k, Box::new(a), Box::new(b)));
        prop_oneof![4 => bin, 1 => elem, 1 => call, 1 => neg, 1 => elem_off, 1 => elem_near].boxed()
    })
    .boxed()
}

/// Statements nested `depth` deep of a method that may call the helpers below `calls`.
fn stmts(depth: u32, calls: usize) -> BoxedStrategy<Vec<Stmt>> {
    let simple = prop_oneof![
        4 => (0..VARS, expr(calls)).prop_map(|(v, e)| Stmt::Set(v, e)),
        1 => (0..VARS).prop_map(Stmt::Print),
        1 => (expr(calls), prop::bool::weighted(0.2), expr(calls))
            .prop_map(|(i, raw, v)| Stmt::SetElem(i, raw, v)),
        // A division of two variables, which fails when the divisor is 0.
        1 => (0..VARS, 3usize..5, 0..VARS, 0..VARS).prop_map(|(d, o, a, b)| {
            Stmt::Set(d, Expr::Bin(o, Box::new(Expr::Var(a)), Box::new(Expr::Var(b))))
        }),
        1 => expr(calls).prop_map(Stmt::SetField),
        1 => (0..VARS, 0..VARS).prop_map(|(a, b)| Stmt::Swap(a, b)),
        1 => (0..VARS, 0..VARS, expr(calls)).prop_map(|(a, b, e)| Stmt::SetTwo(a, b, e)),
        1 => expr(calls).prop_map(Stmt::Discard),
        1 => (0..VARS, -1i64..=1, -5i64..5).prop_map(|(v, k, c)| Stmt::SetElemConst(v, k, c)),
        1 => (0..COUNTERS, -2i64..=2, expr(calls)).prop_map(|(c, k, e)| Stmt::SetElemNear(c, k, e)),
        1 => (0..VARS, 0..VARS, -2i64..=2).prop_map(|(a, b, k)| Stmt::SwapNear(a, b, k)),
    ];
    if depth == 0 {
        return prop::collection::vec(simple, 1..6).boxed();
    }
    let bound = prop_oneof![
        (0i64..6).prop_map(Bound::Const),
        (0..VARS).prop_map(Bound::Var),
        Just(Bound::Field),
        (0i64..8, 0..VARS).prop_map(|(k, v)| Bound::Computed(k, v)),
    ];
    let nested = prop_oneof![
        4 => simple,
        1 => (0..CMPS.len(), 0..VARS, expr(calls), stmts(depth - 1, calls))
            .prop_map(|(c, v, e, b)| Stmt::If(c, v, e, b)),
        1 => (
            any::<bool>(),
            bound,
            1i64..3,
            stmts(depth - 1, calls),
            prop::option::of((0..VARS, 0..=VARS)),
        )
            .prop_map(|(top, bound, step, body, sum)| Stmt::Loop {
                top,
                bound,
                step,
                body,
                sum,
            }),
    ];
    prop::collection::vec(nested, 1..6).boxed()
}

/// A helper's body (statements one loop deep) and the expression it returns; helper `k`
/// calls only helpers below it, so no program recurses.
type Helper = (Vec<Stmt>, Expr);

fn helpers() -> impl Strategy<Value = Vec<Helper>> {
    (0..HELPERS)
        .map(|k| (stmts(1, k), expr(k)))
        .collect::<Vec<_>>()
}

/// A generated program: main's statements, the seeds of its variables, the helpers.
#[derive(Clone, Debug)]
struct Generated {
    body: Vec<Stmt>,
    seeds: Vec<i64>,
    helpers: Vec<Helper>,
}

impl Generated {
    fn text(&self) -> String {
        program(&self.body, &self.seeds, &self.helpers)
    }
}

fn generated() -> impl Strategy<Value = Generated> {
    (
        stmts(2, HELPERS),
        prop::collection::vec(-3i64..3, VARS as usize),
        helpers(),
    )
        .prop_map(|(body, seeds, helpers)| Generated {
            body,
            seeds,
            helpers,
        })
}

/// Writes generated statements as MASM.
struct Gen {
    out: String,
    labels: usize,
}

impl Gen {
    fn line(&mut self, s: impl AsRef<str>) {
        self.out.push_str("  ");
        self.out.push_str(s.as_ref());
        self.out.push('\n');
    }

    fn label(&mut self) -> String {
        self.labels += 1;
        format!("l{}", self.labels)
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Var(v) => self.line(format!("load {}", VAR0 + v)),
            Expr::Const(k) => self.line(format!("push {k}")),
            Expr::Bin(o, a, b) => {
                self.expr(a);
                self.expr(b);
                self.line(OPS[*o]);
            }
            Expr::Elem(i, raw) => {
                self.line(format!("load {ARR}"));
                self.index(i, *raw);
                self.line("aload");
            }
            Expr::Field => {
                self.line(format!("load {OBJ}"));
                self.line("getfield C.f");
            }
            Expr::Call(k, a, b) => {
                self.line(format!("load {ARR}"));
                self.line(format!("load {OBJ}"));
                self.expr(a);
                self.expr(b);
                self.line(format!("call f{k}"));
            }
            Expr::Neg(e) => {
                self.expr(e);
                self.line("neg");
            }
            Expr::ElemOff(v, k) => {
                self.line(format!("load {ARR}"));
                self.elem_index(*v, *k);
                self.line("aload");
            }
            Expr::ElemNear(c, k) => {
                self.line(format!("load {ARR}"));
                self.line(format!("load {}", VAR0 + VARS + c));
                self.line(format!("push {k}"));
                self.line("add");
                self.line("aload");
            }
        }
    }

    /// The index `(v & 7) + k`.
    fn elem_index(&mut self, v: u32, k: i64) {
        self.line(format!("load {}", VAR0 + v));
        self.line("push 7");
        self.line("and");
        self.line(format!("push {k}"));
        self.line("add");
    }

    /// An array index: `e`, masked into the array's 8 elements unless `raw`.
    fn index(&mut self, e: &Expr, raw: bool) {
        self.expr(e);
        if !raw {
            self.line("push 7");
            self.line("and");
        }
    }

    fn stmts(&mut self, body: &[Stmt], depth: u32) {
        for s in body {
            match s {
                Stmt::Set(v, e) => {
                    self.expr(e);
                    self.line(format!("store {}", VAR0 + v));
                }
                Stmt::Print(v) => {
                    self.line(format!("load {}", VAR0 + v));
                    self.line("print");
                }
                Stmt::SetElem(i, raw, v) => {
                    self.line(format!("load {ARR}"));
                    self.index(i, *raw);
                    self.expr(v);
                    self.line("astore");
                }
                Stmt::SetField(v) => {
                    self.line(format!("load {OBJ}"));
                    self.expr(v);
                    self.line("putfield C.f");
                }
                Stmt::Swap(a, b) => {
                    self.line(format!("load {}", VAR0 + a));
                    self.line(format!("load {}", VAR0 + b));
                    self.line(format!("store {}", VAR0 + a));
                    self.line(format!("store {}", VAR0 + b));
                }
                Stmt::SetTwo(a, b, e) => {
                    self.expr(e);
                    self.line("dup");
                    self.line(format!("store {}", VAR0 + a));
                    self.line(format!("store {}", VAR0 + b));
                }
                Stmt::Discard(e) => {
                    self.expr(e);
                    self.line("pop");
                }
                Stmt::SetElemConst(v, k, c) => {
                    self.line(format!("load {ARR}"));
                    self.elem_index(*v, *k);
                    self.line(format!("push {c}"));
                    self.line("astore");
                }
                Stmt::SetElemNear(c, k, e) => {
                    self.line(format!("load {ARR}"));
                    self.line(format!("load {}", VAR0 + VARS + c));
                    self.line(format!("push {k}"));
                    self.line("add");
                    self.expr(e);
                    self.line("astore");
                }
                Stmt::SwapNear(a, b, k) => {
                    self.line(format!("load {}", VAR0 + a));
                    self.line(format!("push {k}"));
                    self.line("sub");
                    self.line(format!("load {}", VAR0 + b));
                    self.line(format!("store {}", VAR0 + a));
                    self.line(format!("store {}", VAR0 + b));
                }
                Stmt::If(c, v, e, then) => {
                    let skip = self.label();
                    self.line(format!("load {}", VAR0 + v));
                    self.expr(e);
                    self.line(CMPS[*c]);
                    self.line(format!("jz {skip}"));
                    self.stmts(then, depth);
                    self.out.push_str(&format!("{skip}:\n"));
                }
                Stmt::Loop {
                    top,
                    bound,
                    step,
                    body,
                    sum,
                } => {
                    let c = VAR0 + VARS + depth;
                    let sum_code = |g: &mut Gen| {
                        if let Some((v, x)) = *sum {
                            // `x == VARS` names the loop's own counter.
                            let x = if x == VARS { c } else { VAR0 + x };
                            let v = VAR0 + v;
                            g.line(format!("load {v}"));
                            g.line(format!("load {x}"));
                            g.line("add");
                            g.line(format!("store {v}"));
                        }
                    };
                    // A bound that is not a small constant may be anything: such a loop
                    // also stops after 8 rounds.
                    let guard = !matches!(bound, Bound::Const(_));
                    let (head, test, out) = (self.label(), self.label(), self.label());
                    self.line("push 0");
                    self.line(format!("store {c}"));
                    let bound_code = |g: &mut Gen| match bound {
                        Bound::Const(k) => g.line(format!("push {k}")),
                        Bound::Var(v) => {
                            // A variable bound, kept small so that the loop stays short.
                            g.line(format!("load {}", VAR0 + v));
                        }
                        Bound::Field => {
                            g.line(format!("load {OBJ}"));
                            g.line("getfield C.f");
                        }
                        Bound::Computed(k, v) => {
                            g.line(format!("push {k}"));
                            g.line("push 1");
                            g.line("sub");
                            g.line(format!("load {}", VAR0 + v));
                            g.line("sub");
                        }
                    };
                    if *top {
                        self.out.push_str(&format!("{head}:\n"));
                        self.line(format!("load {c}"));
                        bound_code(self);
                        self.line("lt");
                        self.line(format!("jz {out}"));
                        self.stmts(body, depth + 1);
                        sum_code(self);
                        self.line(format!("load {c}"));
                        self.line(format!("push {step}"));
                        self.line("add");
                        self.line(format!("store {c}"));
                        if guard {
                            self.line(format!("load {c}"));
                            self.line("push 8");
                            self.line("ge");
                            self.line(format!("jnz {out}"));
                        }
                        self.line(format!("jmp {head}"));
                    } else {
                        self.line(format!("jmp {test}"));
                        self.out.push_str(&format!("{head}:\n"));
                        self.stmts(body, depth + 1);
                        sum_code(self);
                        self.line(format!("load {c}"));
                        self.line(format!("push {step}"));
                        self.line("add");
                        self.line(format!("store {c}"));
                        self.out.push_str(&format!("{test}:\n"));
                        if guard {
                            self.line(format!("load {c}"));
                            self.line("push 8");
                            self.line("ge");
                            self.line(format!("jnz {out}"));
                        }
                        self.line(format!("load {c}"));
                        bound_code(self);
                        self.line("lt");
                        self.line(format!("jnz {head}"));
                    }
                    self.out.push_str(&format!("{out}:\n"));
                }
            }
        }
    }
}

fn program(body: &[Stmt], seeds: &[i64], helpers: &[Helper]) -> String {
    let mut g = Gen {
        out: String::new(),
        labels: 0,
    };
    g.out.push_str(&format!(
        ".class C\n  .field f int\n.end\n.method main args=0 locals={LOCALS}\n"
    ));
    g.line("push 8");
    g.line("newarray int");
    g.line(format!("store {ARR}"));
    g.line("new C");
    g.line(format!("store {OBJ}"));
    g.line(format!("load {OBJ}"));
    g.line("push 3");
    g.line("putfield C.f");
    for (v, k) in seeds.iter().enumerate() {
        g.line(format!("push {k}"));
        g.line(format!("store {}", VAR0 + v as u32));
    }
    g.stmts(body, 0);
    for v in 0..VARS {
        g.line(format!("load {}", VAR0 + v));
        g.line("print");
    }
    g.line("push 0");
    g.line("ret");
    g.out.push_str(".end\n");
    // fk(arr, obj, a, b): its statements (its loops count in its own counters), then the
    // value of its expression.
    for (k, (body, result)) in helpers.iter().enumerate() {
        g.out
            .push_str(&format!(".method f{k} args=4 locals={LOCALS}\n"));
        g.stmts(body, 0);
        g.expr(result);
        g.line("ret");
        g.out.push_str(".end\n");
    }
    g.out
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_programs_run_the_same_fused_and_unfused(g in generated()) {
        let text = g.text();
        let (fs, fo, fe, _) = run_in_process(&text, true);
        let (ps, po, pe, nplain) = run_in_process(&text, false);
        prop_assert_eq!(nplain, 0);
        prop_assert_eq!(fs, ps, "status\n{}", text);
        prop_assert_eq!(fo, po, "output\n{}", text);
        prop_assert_eq!(fe, pe, "error\n{}", text);
    }
}

/// What a run on one executor path did: status, output, the rendered error.
type Outcome3 = (i32, String, Option<String>);

/// Runs MASM text in process on one executor path: fused or one dispatch per instruction
/// (`--no-fuse`), field operands resolved at load or by name (`--no-resolve`), access
/// barriers on or off (`--no-barrier`).
fn run_on_path(text: &str, fuse: bool, resolve: bool, barriers: bool) -> Outcome3 {
    let p = load::load_bytes("gen.masm", text.as_bytes()).expect("generated program loads");
    let vp = verify::verify(p).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let cfg = RunConfig {
        fuse,
        resolve,
        barriers,
        ..RunConfig::default()
    };
    let (outcome, printed) = run_captured(vp, cfg);
    (outcome.status, printed, outcome.error)
}

/// The executor paths every generated program of [`generated_programs_run_the_same_on_every_executor_path`]
/// runs on, as (fuse, resolve, barriers): the default first.
const PATHS: [(bool, bool, bool); 5] = [
    (true, true, true),
    (false, true, true),
    (true, false, true),
    (false, false, true),
    (true, true, false),
];

/// How many seeds, from 0, the fixed set runs (CI runs exactly these programs).
const SEED_COUNT: u64 = 64;
/// Seeds beyond the fixed range that once found a difference between paths; each stays
/// here once fixed.
const FOUND_SEEDS: &[u64] = &[];

/// The program a seed generates: the same strategy as the property tests, drawn from a
/// ChaCha generator seeded with the seed's bytes, so a seed always names the same program.
fn generated_from_seed(seed: u64) -> Generated {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    generated()
        .new_tree(&mut runner)
        .expect("the strategy draws a program")
        .current()
}

/// The seeds to run: `MARVIN_GEN_SEEDS=A..B` (to search further), else the fixed set.
fn seeds_to_run() -> Vec<u64> {
    match std::env::var("MARVIN_GEN_SEEDS") {
        Ok(range) => {
            let (a, b) = range
                .split_once("..")
                .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)))
                .unwrap_or_else(|| panic!("MARVIN_GEN_SEEDS={range:?}: expected A..B"));
            (a..b).collect()
        }
        Err(_) => (0..SEED_COUNT).chain(FOUND_SEEDS.iter().copied()).collect(),
    }
}

/// Random well-typed programs (loops, integer arithmetic that may divide by zero, array
/// elements and a field, calls of helper methods with loops of their own) from a fixed
/// set of seeds print the same, end with the same status and fail at the same position on
/// every executor path. The set must cover what it claims to: calls, loops, fields, arrays
/// and runtime errors.
#[test]
fn generated_programs_run_the_same_on_every_executor_path() {
    let mut covered = [0usize; 9];
    for seed in seeds_to_run() {
        let text = generated_from_seed(seed).text();
        let runs: Vec<Outcome3> = PATHS
            .iter()
            .map(|&(fuse, resolve, barriers)| run_on_path(&text, fuse, resolve, barriers))
            .collect();
        for (path, run) in PATHS.iter().zip(&runs).skip(1) {
            assert_eq!(
                &runs[0], run,
                "seed {seed}: the run with (fuse, resolve, barriers) = {path:?} differs from \
                 the default one\n{text}"
            );
        }
        let features = [
            text.contains("call f"),
            text.contains("jmp "),
            text.contains("getfield C.f"),
            text.contains("aload"),
            runs[0].2.is_some(),
            fused_main(&text).iter().any(is_register_op),
            branch_in_loop(&text),
            text.contains("  push 1\n  sub\n  load "),
            constant_left(&text),
        ];
        for (n, f) in covered.iter_mut().zip(features) {
            *n += usize::from(f);
        }
    }
    let [calls, loops, fields, arrays, errors, regs, branchy, computed, left] = covered;
    eprintln!(
        "generated programs: {calls} with calls, {loops} with loops, {fields} with the \
         field, {arrays} with arrays, {errors} that fail, {regs} with register ops, \
         {branchy} with a branch inside a loop, {computed} with a bound computed in a \
         loop's test, {left} with a constant operand pushed before a local"
    );
    if std::env::var("MARVIN_GEN_SEEDS").is_err() {
        assert!(
            calls >= 16 && loops >= 16 && fields >= 16 && arrays >= 16 && errors >= 4 && regs >= 32,
            "the fixed seeds cover too little: {calls} programs with calls, {loops} with \
             loops, {fields} with the field, {arrays} with arrays, {errors} that fail, \
             {regs} with register ops"
        );
        assert!(
            branchy >= 8 && computed >= 8 && left >= 16,
            "the fixed seeds cover too little: {branchy} programs with a branch inside a \
             loop, {computed} with a bound computed in a loop's test, {left} with a \
             constant pushed before a local"
        );
    }
}

/// Whether `text` has a conditional branch between a loop's head label and its backward
/// `jmp`/`jnz` (an `if` inside a loop; the loops' own tests are `jz` out or `jnz` back).
fn branch_in_loop(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    lines.iter().enumerate().any(|(j, line)| {
        let Some(head) = line
            .trim()
            .strip_prefix("jmp ")
            .or_else(|| line.trim().strip_prefix("jnz "))
        else {
            return false;
        };
        let Some(start) = lines.iter().position(|l| *l == format!("{head}:")) else {
            return false;
        };
        start < j
            && lines[start + 1..j]
                .iter()
                .filter(|l| l.trim().starts_with("jz "))
                .count()
                >= 2
    })
}

/// Whether `text` pushes a constant and then a local as the two operands of one operation
/// (`push k; load v; OP`).
fn constant_left(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    lines
        .windows(3)
        .any(|w| w[0].starts_with("push ") && w[1].starts_with("load ") && OPS.contains(&w[2]))
}

#[test]
fn a_seed_always_generates_the_same_program() {
    for seed in [0, 1, 12_345, u64::MAX] {
        assert_eq!(
            generated_from_seed(seed).text(),
            generated_from_seed(seed).text()
        );
    }
    assert_ne!(generated_from_seed(0).text(), generated_from_seed(1).text());
}

/// The ops `main` of `text` fuses into.
fn fused_main(text: &str) -> Vec<Op> {
    let p = load::load_bytes("t.masm", text.as_bytes()).expect("loads");
    let vp = verify::verify(p).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    Loaded::translated_with(vp, true, true).code[0].clone()
}

/// A summing loop `s = s + x` for `i` below 10 by `step`, tested at the top or the
/// bottom; `x` and `s` may be the counter.
fn summing_loop(top: bool, s: u32, x: u32, step: i64) -> String {
    let sum = format!("  load {s}\n  load {x}\n  add\n  store {s}\n");
    let inc = format!("  load 1\n  push {step}\n  add\n  store 1\n");
    let body = if top {
        format!("top:\n  load 1\n  push 10\n  lt\n  jz done\n{sum}{inc}  jmp top\n")
    } else {
        format!("  jmp test\nbody:\n{sum}{inc}test:\n  load 1\n  push 10\n  lt\n  jnz body\n")
    };
    format!(
        ".method main args=0 locals=3\n  push 5\n  store 0\n  push 0\n  store 1\n  push 2\n  store 2\n{body}done:\n  load 0\n  print\n  load 1\n  print\n  load 2\n  print\n  push 0\n  ret\n.end\n"
    )
}

#[test]
fn summing_loops_fuse_into_one_op_and_run_as_unfused() {
    // s, x: a sum of another local, of the counter, into the counter, of itself.
    for (s, x) in [(0, 2), (0, 1), (1, 2), (0, 0), (1, 1)] {
        for top in [true, false] {
            for step in [1, 3] {
                let text = summing_loop(top, s, x, step);
                let code = fused_main(&text);
                assert!(
                    code.iter().any(|op| matches!(op, Op::AddIncBr { .. })),
                    "s={s} x={x} top={top}: {code:?}"
                );
                let (fs, fo, fe, _) = run_in_process(&text, true);
                let (ps, po, pe, _) = run_in_process(&text, false);
                assert_eq!((fs, &fo, &fe), (ps, &po, &pe), "{text}");
                assert_eq!(fs, 0, "{text}: {fe:?}");
            }
        }
    }
}

#[test]
fn the_multiply_add_step_fuses_and_runs_as_unfused() {
    // h = (h * 31 + i) for i below 10, then a division by zero at a known position:
    // the error after the fused run keeps its place.
    let text = ".method main args=0 locals=2
  push 7
  store 0
  push 0
  store 1
top:
  load 0
  push -31
  mul
  load 1
  add
  store 0
  load 1
  push 1
  add
  store 1
  load 1
  push 10
  lt
  jnz top
  load 0
  print
  load 0
  push 0
  div
  ret
.end
";
    let code = fused_main(text);
    assert_eq!(code[4], Op::LoadMulAddLocal(0, -31, 1), "{code:?}");
    // The instructions behind the fused run stay for branches into it.
    assert_eq!(code[6], Op::Mul);
    let (fs, fo, fe, _) = run_in_process(text, true);
    let (ps, po, pe, _) = run_in_process(text, false);
    assert_eq!((fs, &fo, &fe), (ps, &po, &pe));
    let mut h: i64 = 7;
    for i in 0..10 {
        h = h.wrapping_mul(-31).wrapping_add(i);
    }
    assert_eq!(fo, format!("{h}\n"));
    let err = fe.expect("division by zero");
    assert!(
        err.contains("division by zero") && err.contains("main+22"),
        "{err}"
    );
}

/// An object's field statements (`o.x = o.x OP i`, `o.y = o.y OP o.x`, then into a second
/// object `p.x = o.x OP i` and `p.x = i OP o.y`) over `n` iterations, how the two objects
/// are made given (so a test can hand in a null or an object of another class), then
/// prints the fields.
fn field_rounds(op: &str, n: i64, o_init: &str, p_init: &str) -> String {
    format!(
        ".class C
  .field x int
  .field y int
.end
.class D
  .field z int
.end
.method main args=0 locals=3
  {o_init}
  store 0
  {p_init}
  store 2
  push 0
  store 1
top:
  load 0
  load 0
  getfield C.x
  load 1
  {op}
  putfield C.x
  load 0
  load 0
  getfield C.y
  load 0
  getfield C.x
  {op}
  putfield C.y
  load 2
  load 0
  getfield C.x
  load 1
  {op}
  putfield C.x
  load 2
  load 1
  load 0
  getfield C.y
  {op}
  putfield C.x
  load 1
  push 1
  add
  store 1
  load 1
  push {n}
  lt
  jnz top
  load 0
  getfield C.x
  print
  load 0
  getfield C.y
  print
  load 2
  getfield C.x
  print
  push 0
  ret
.end
"
    )
}

#[test]
fn field_statements_fuse_and_run_as_unfused() {
    for op in [
        "add", "sub", "mul", "xor", "and", "or", "shl", "shr", "lt", "ne",
    ] {
        let text = field_rounds(op, 20, "new C", "new C");
        let code = fused_main(&text);
        // o.x = o.x OP i: one op; o.y = o.y OP o.x: a receiver with a read, then the
        // read-combine-write; p.x = o.x OP i: a receiver with a read, then the
        // combine-with-a-local-and-write; p.x = i OP o.y: the read-combine-write.
        assert!(
            matches!(code[6], Op::FieldBinLocal(0, _, _, 1)),
            "{op}: {code:?}"
        );
        assert!(
            matches!(code[12], Op::LoadLoadGetField(0, 0, _)),
            "{op}: {code:?}"
        );
        assert!(
            matches!(code[15], Op::LoadGetFieldBinPutField(0, _, _, _)),
            "{op}: {code:?}"
        );
        assert!(
            matches!(code[19], Op::LoadLoadGetField(2, 0, _)),
            "{op}: {code:?}"
        );
        assert!(
            matches!(code[22], Op::LoadBinPutField(1, _, _)),
            "{op}: {code:?}"
        );
        assert!(
            matches!(code[27], Op::LoadGetFieldBinPutField(0, _, _, _)),
            "{op}: {code:?}"
        );
        // The instructions behind the fused runs stay for branches into them.
        assert!(matches!(code[8], Op::GetField(_)), "{op}: {code:?}");
        let (fs, fo, fe, _) = run_in_process(&text, true);
        let (ps, po, pe, _) = run_in_process(&text, false);
        assert_eq!((fs, &fo, &fe), (ps, &po, &pe), "{op}\n{text}");
        assert_eq!(fs, 0, "{op}: {fe:?}");
        assert_eq!(fo.lines().count(), 3, "{op}: {fo}");
    }
    // A division may fail: it is not fused into a field write.
    let code = fused_main(&field_rounds("div", 20, "new C", "new C"));
    assert!(
        !code
            .iter()
            .any(|op| matches!(op, Op::FieldBinLocal(..) | Op::LoadBinPutField(..))),
        "{code:?}"
    );
}

#[test]
fn fused_field_statements_fail_where_the_field_instruction_is() {
    // A null `o` or one of another class fails at the read of the first statement's
    // one op (its getfield, main+8); a null `p` or one of another class at the write of
    // the third statement (its putfield, main+24), after a read of `o` in the same
    // fused op.
    for (o, p, at) in [
        ("null", "new C", "main+8 "),
        ("new D", "new C", "main+8 "),
        ("new C", "null", "main+24 "),
        ("new C", "new D", "main+24 "),
    ] {
        let text = field_rounds("add", 5, o, p);
        let (fs, fo, fe, nfused) = run_in_process(&text, true);
        let (ps, po, pe, _) = run_in_process(&text, false);
        assert!(nfused > 0);
        assert_eq!((fs, &fo, &fe), (ps, &po, &pe), "{o} {p}\n{text}");
        let err = fe.expect("the run fails");
        assert!(err.contains(at), "{o} {p}: {err}");
    }
}

/// `s = (s * k + i) OP m` for `i` below 50 (`OP` rem or div), then `s` printed.
fn hash_step(k: i64, m: i64, op: &str) -> String {
    format!(
        ".method main args=0 locals=2
  push 12345
  store 0
  push 0
  store 1
top:
  load 0
  push {k}
  mul
  load 1
  add
  push {m}
  {op}
  store 0
  load 1
  push 1
  add
  store 1
  load 1
  push 50
  lt
  jnz top
  load 0
  print
  push 0
  ret
.end
"
    )
}

#[test]
fn the_hash_step_with_a_constant_modulus_fuses_and_runs_as_unfused() {
    for (k, m) in [
        (31, 1_000_000_007),
        (-31, 1_000_000_007),
        (1_103_515_245, 2_147_483_647),
        (i32::MAX as i64, 2),
        (i32::MIN as i64, 3),
        (7, 65_536),
    ] {
        for op in ["rem", "div"] {
            let text = hash_step(k, m, op);
            let code = fused_main(&text);
            assert!(
                matches!(
                    code[4],
                    Op::LoadMulAddDivStore {
                        a: 0,
                        b: 1,
                        d: 0,
                        ..
                    }
                ),
                "{k} {m} {op}: {code:?}"
            );
            assert_eq!(code[6], Op::Mul, "the run's instructions stay behind it");
            let (fs, fo, fe, _) = run_in_process(&text, true);
            let (ps, po, pe, _) = run_in_process(&text, false);
            assert_eq!((fs, &fo, &fe), (ps, &po, &pe), "{text}");
            let mut s: i64 = 12345;
            for i in 0..50 {
                let x = s.wrapping_mul(k).wrapping_add(i);
                s = if op == "rem" {
                    x.wrapping_rem(m)
                } else {
                    x.wrapping_div(m)
                };
            }
            assert_eq!(fo, format!("{s}\n"), "{k} {m} {op}");
        }
    }
    // A multiplier or a modulus beyond 32 bits, and a zero or one modulus, keep the
    // smaller ops (a zero divisor still fails at its `rem`).
    for (k, m) in [
        (1i64 << 40, 1_000_000_007),
        (31, 1i64 << 40),
        (31, 1),
        (31, 0),
    ] {
        let text = hash_step(k, m, "rem");
        let code = fused_main(&text);
        assert!(
            !code
                .iter()
                .any(|op| matches!(op, Op::LoadMulAddDivStore { .. })),
            "{k} {m}: {code:?}"
        );
        let (fs, fo, fe, _) = run_in_process(&text, true);
        let (ps, po, pe, _) = run_in_process(&text, false);
        assert_eq!((fs, &fo, &fe), (ps, &po, &pe), "{text}");
    }
}

/// Whether `op` is a register op (see `exec::regs`).
fn is_register_op(op: &Op) -> bool {
    format!("{op:?}").starts_with("Reg")
}

#[test]
fn integer_statements_of_any_shape_become_register_ops() {
    // t = (s - j) * (i and 3) - t and s = s + (i xor j), over nested counted loops: shapes
    // no superinstruction names.
    let text = ".method main args=0 locals=4
  push 0
  store 1
outer:
  load 1
  push 30
  lt
  jz done
  push 0
  store 2
inner:
  load 2
  push 20
  lt
  jz next
  load 0
  load 2
  sub
  load 1
  push 3
  and
  mul
  load 3
  sub
  store 3
  load 0
  load 1
  load 2
  xor
  add
  store 0
  load 2
  push 1
  add
  store 2
  jmp inner
next:
  load 1
  push 1
  add
  store 1
  jmp outer
done:
  load 0
  print
  load 3
  print
  push 0
  ret
.end
";
    let code = fused_main(text);
    // `load 0; load 1; load 2; xor; add; store 0` (positions 22 to 27): two ops, the last
    // falling through to a copy of the loop's closing increment and test, written into
    // the run's free positions.
    assert!(
        matches!(code[22], Op::RegXor(_))
            && matches!(code[23], Op::RegAdd(r) if r.d == 0 && r.skip == 0)
            && matches!(code[24], Op::IncBrConst { a: 2, .. }),
        "{code:?}"
    );
    let (fs, fo, fe, _) = run_in_process(text, true);
    let (ps, po, pe, _) = run_in_process(text, false);
    assert_eq!((fs, &fo, &fe), (ps, &po, &pe));
    let (mut s, mut t) = (0i64, 0i64);
    for i in 0..30i64 {
        for j in 0..20i64 {
            t = (s - j) * (i & 3) - t;
            s += i ^ j;
        }
    }
    assert_eq!(fo, format!("{s}\n{t}\n"));
}

#[test]
fn register_runs_fail_where_their_instruction_is() {
    // `a[i + 1]` out of bounds inside a register run, after a division: the error names
    // the `aload`'s position (main+14), fused as unfused.
    let text = ".method main args=0 locals=3
  push 4
  newarray int
  store 0
  push 3
  store 1
  load 1
  push 2
  div
  store 2
  load 2
  load 0
  load 1
  push 1
  add
  aload
  add
  store 2
  load 2
  print
  push 0
  ret
.end
";
    let code = fused_main(text);
    assert!(
        code.iter()
            .any(|op| matches!(op, Op::RegALoad { off: 1, .. })),
        "{code:?}"
    );
    let (fs, fo, fe, _) = run_in_process(text, true);
    let (ps, po, pe, _) = run_in_process(text, false);
    assert_eq!((fs, &fo, &fe), (ps, &po, &pe));
    let err = fe.expect("index out of bounds");
    assert!(
        err.contains("array index out of bounds") && err.contains("main+14"),
        "{err}"
    );
}

#[test]
fn an_element_copied_between_arrays_stores_whatever_its_type() {
    // `b[1] = a[0]`: the value's type is open to the verifier (`astore` of `Any`). An int
    // goes into an int array, an object into a reference array; an int that names no
    // object into a reference array is a type mismatch at that `astore` (main+51).
    let text = ".class C
  .field f int
.end
.method main args=0 locals=4
  push 2
  newarray int
  store 0
  push 2
  newarray int
  store 1
  load 0
  push 0
  push -41
  astore
  load 1
  push 1
  load 0
  push 0
  aload
  astore
  load 1
  push 1
  aload
  print
  push 1
  newarray ref
  store 2
  push 1
  newarray ref
  store 3
  load 2
  push 0
  new C
  astore
  load 3
  push 0
  load 2
  push 0
  aload
  astore
  load 3
  push 0
  aload
  push 7
  putfield C.f
  load 2
  push 0
  aload
  getfield C.f
  print
  load 3
  push 0
  load 0
  push 0
  aload
  astore
  push 0
  ret
.end
";
    for fuse in [true, false] {
        let (status, out, err, _) = run_in_process(text, fuse);
        assert_eq!(out, "-41\n7\n", "fuse={fuse}: {err:?}");
        assert_ne!(status, 0, "fuse={fuse}");
        let err = err.expect("a type mismatch");
        assert!(
            err.contains("array type mismatch") && err.contains("main+51"),
            "fuse={fuse}: {err}"
        );
    }
}

/// The held-out programs of `benches/elsewhere/` (`--suite elsewhere`), at their tiny sizes: each prints
/// the same fused and unfused, and what its Lua peer prints (when `lua5.4` is installed).
#[test]
fn held_out_programs_run_the_same_fused_and_unfused_and_as_their_lua_peers() {
    let dir = Suite::Elsewhere.dir();
    let lua = Command::new("lua5.4")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    assert_eq!(ELSEWHERE_PROGRAMS.len(), 10);
    for (name, n) in ELSEWHERE_PROGRAMS.iter().map(|p| (p.name, p.tiny)) {
        let program = dir.join("programs").join(format!("{name}.masm"));
        let ran = same_fused_and_unfused(
            name,
            vec!["-D".into(), format!("N={n}"), program.display().to_string()],
        );
        assert_eq!(ran.status, Some(0), "{name}: {}", ran.stderr);
        if lua {
            let peer = dir.join("peers").join(format!("{name}.lua"));
            let out = Command::new("lua5.4")
                .arg(&peer)
                .arg(n.to_string())
                .output()
                .expect("lua5.4 runs");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                ran.stdout,
                "{name}: the Lua peer prints otherwise"
            );
        }
    }
}

/// `read(a)`: `a[1]`, `write(a)`: `a[1] = 5` then `a[2] = a[1] + 1`, each a register run.
const ARRAY_ACCESSES: &str = "
.method main args=0 locals=0
  push 0
  ret
.end
.method read args=1 locals=2
  load 0
  push 1
  aload
  store 1
  load 1
  ret
.end
.method write args=1 locals=1
  load 0
  push 1
  push 5
  astore
  load 0
  push 2
  load 0
  push 1
  aload
  push 1
  add
  astore
  push 0
  ret
.end
";

#[test]
fn register_array_ops_set_the_access_bits_the_stack_ops_set() {
    use std::sync::Arc;

    use marvin_app::App;
    use marvin_interpreter::exec::op::ARRAY_CLASS;
    use marvin_interpreter::exec::Thread;
    use marvin_runtime::{AccessKind, NoBarriers};
    use marvin_runtime::{HeaderBits, ObjKind};

    for fuse in [true, false] {
        let p = load::load_bytes("t.masm", ARRAY_ACCESSES.as_bytes()).expect("loads");
        let vp = verify::verify(p).expect("verifies");
        let loaded = Arc::new(Loaded::translated_with(vp, true, fuse));
        let regs = |m: usize| loaded.code[m].iter().filter(|o| is_register_op(o)).count();
        assert_eq!(regs(1) > 0 && regs(2) > 0, fuse, "{:?}", loaded.code);
        let app = Arc::new(App::new(loaded, RunConfig::default()).expect("app"));
        let mut thread = Thread::new(&app).expect("thread");
        let h = app
            .heap()
            .alloc(ObjKind::IntArray, ARRAY_CLASS, 4, 0)
            .expect("allocates");
        let all = HeaderBits::READ | HeaderBits::WRITE | HeaderBits::DIRTY;
        let mut run = |m: u32| {
            {
                let a = app.heap().access::<NoBarriers>(h, AccessKind::Read);
                a.expect("live").obj().header().clear(all);
            }
            let r = thread.invoke(m, &[h.value()]).expect("runs");
            let a = app.heap().access::<NoBarriers>(h, AccessKind::Read);
            let bits = a.expect("live").obj().header().bits();
            (r, bits)
        };
        let (r, b) = run(1);
        assert_eq!(r, 0, "fuse={fuse}");
        assert!(b.contains(HeaderBits::READ), "fuse={fuse}: {b:?}");
        assert!(
            !b.intersects(HeaderBits::WRITE | HeaderBits::DIRTY),
            "fuse={fuse}: {b:?}"
        );
        let (_, b) = run(2);
        assert!(
            b.contains(HeaderBits::READ | HeaderBits::WRITE | HeaderBits::DIRTY),
            "fuse={fuse}: {b:?}"
        );
        assert_eq!(run(1).0, 5, "fuse={fuse}");
    }
}
