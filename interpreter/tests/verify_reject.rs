//! Every kind of program the front end must reject, each with the line and message it
//! reports, and acceptance of good programs with checks of the inferred facts.

use marvin_interpreter::asm::assemble;
use marvin_interpreter::isa::{Instr, Program, Ty, VerifiedProgram};
use marvin_interpreter::verify::verify;
use marvin_interpreter::Diagnostics;

mod common;
use common::{EVERYTHING, FIB};

/// Assembles, links and verifies.
fn build(src: &str) -> Result<VerifiedProgram, Diagnostics> {
    let mut p = assemble("t.masm", src)?;
    p.link(&[])?;
    verify(p)
}

/// Asserts that `src` is rejected with a diagnostic at `line` whose message contains
/// `needle`.
#[track_caller]
fn rejects(src: &str, line: u32, needle: &str) {
    let err = match build(src) {
        Ok(_) => panic!("accepted:\n{src}"),
        Err(e) => e,
    };
    let hit = err
        .0
        .iter()
        .any(|d| d.line == line && d.message.contains(needle) && d.file == "t.masm");
    assert!(hit, "expected `{needle}` at line {line}, got:\n{err}");
    let text = err.to_string();
    assert!(text.contains(&format!("t.masm:{line}: ")), "{text}");
}

/// A `main` wrapper around a body (the body starts on line 2).
fn main_with(body: &str) -> String {
    format!(".method main args=0 locals=4\n{body}\n  push 0\n  ret\n.end\n")
}

// ---- assembler: syntax -------------------------------------------------------------

#[test]
fn unknown_instruction() {
    rejects(&main_with("  frob 3"), 2, "unknown instruction `frob`");
}

#[test]
fn unknown_directive_and_misplaced_lines() {
    rejects(".klass A\n", 1, "unknown directive");
    rejects("push 1\n", 1, "inside a method");
    rejects(".field x int\n", 1, "outside a class");
    rejects(".end\n", 1, "without");
    rejects(
        ".method main args=0 locals=0\n  push 0\n  ret\n",
        1,
        "has no `.end`",
    );
    rejects(
        ".class A\n.method main args=0 locals=0\n",
        2,
        "inside a class or method",
    );
}

#[test]
fn bad_operand_count_and_kind() {
    rejects(&main_with("  push"), 2, "takes one operand");
    rejects(&main_with("  push 1 2"), 2, "takes one operand");
    rejects(&main_with("  add 1"), 2, "takes no operand");
    rejects(&main_with("  load x"), 2, "bad local index");
    rejects(&main_with("  load -1"), 2, "bad local index");
    rejects(&main_with("  prints hello"), 2, "string literal");
    rejects(&main_with("  push \"s\""), 2, "does not take a string");
    rejects(&main_with("  newarray long"), 2, "element kind");
    rejects(&main_with("  getfield nodot"), 2, "CLASS.FIELD");
}

#[test]
fn bad_integers() {
    rejects(
        &main_with("  push 9223372036854775808"),
        2,
        "out of the 64-bit range",
    );
    rejects(&main_with("  push 12ab"), 2, "bad integer");
    rejects(".const N 0xZZ\n", 1, "bad integer");
}

#[test]
fn bad_strings() {
    rejects(&main_with("  prints \"a\\qb\""), 2, "bad string escape");
    rejects(&main_with("  prints \"open"), 2, "unterminated string");
}

#[test]
fn bad_names() {
    rejects(".class 9x\n.end\n", 1, "bad class name");
    rejects(&main_with("  call 1abc"), 2, "bad method name");
    rejects(
        &main_with("bad-label:\n  push 1\n  pop"),
        2,
        "bad label name",
    );
    rejects(".const a.b 1\n", 1, "bad constant name");
}

#[test]
fn method_header() {
    rejects(
        ".method f args=2 locals=1\n  push 0\n  ret\n.end\n",
        1,
        "less than args",
    );
    rejects(
        ".method f args=1\n  push 0\n  ret\n.end\n",
        1,
        "takes 3 operand",
    );
    rejects(
        ".method f args=x locals=1\n  push 0\n  ret\n.end\n",
        1,
        "bad `args=` value",
    );
    rejects(
        ".method f args=0 locals=70000\n  push 0\n  ret\n.end\n",
        1,
        "bad `locals=`",
    );
    rejects(
        ".method f args=0 stack=3\n  push 0\n  ret\n.end\n",
        1,
        "bad `.method` operand",
    );
}

// ---- assembler: names ----------------------------------------------------------------

#[test]
fn undefined_names() {
    rejects(&main_with("  jmp nowhere"), 2, "undefined label `nowhere`");
    rejects(
        &main_with("  new Ghost\n  pop"),
        2,
        "undefined class `Ghost`",
    );
    rejects(
        &format!(
            ".class A\n  .field x int\n.end\n{}",
            main_with("  null\n  getfield A.y\n  pop")
        ),
        6,
        "undefined field `A.y`",
    );
    rejects(
        &main_with("  call ghost\n  pop"),
        2,
        "undefined method `ghost`",
    );
    rejects(
        &main_with("  push SIZE\n  pop"),
        2,
        "undefined constant `SIZE`",
    );
}

#[test]
fn label_marking_nothing() {
    rejects(
        ".method main args=0 locals=0\n  push 0\n  ret\nend:\n.end\n",
        4,
        "marks no instruction",
    );
}

#[test]
fn duplicate_names() {
    rejects(".class A\n.end\n.class A\n.end\n", 3, "duplicate class `A`");
    rejects(
        ".class A\n  .field x int\n  .field x ref\n.end\n",
        3,
        "duplicate field",
    );
    let f = ".method f args=0 locals=0\n  push 0\n  ret\n.end\n";
    rejects(&format!("{f}{f}"), 5, "duplicate method `f`");
    rejects(&main_with("a:\n  push 1\na:\n  pop"), 4, "duplicate label");
    rejects(".const N 1\n.const N 2\n", 2, "duplicate constant `N`");
}

#[test]
fn undeclared_override() {
    let mut p = assemble("t.masm", &main_with("  nop_free:\n  push 1\n  pop")).unwrap();
    let err = p.link(&[("SIZE".into(), 3)]).unwrap_err();
    assert!(err.to_string().contains("SIZE"), "{err}");
}

// ---- verifier ------------------------------------------------------------------------

/// A good `main`, assembled, for hand-made corruptions of what the assembler cannot write.
fn simple() -> Program {
    let mut p = assemble("t.masm", &main_with("  push 1\n  pop")).unwrap();
    p.link(&[]).unwrap();
    p
}

#[test]
fn bad_branch_target() {
    let mut p = simple();
    p.methods[0].code[0] = Instr::Jmp(99);
    let err = verify(p).unwrap_err();
    assert_eq!(err.0[0].line, 2);
    assert!(
        err.0[0].message.contains("branch target 99 out of range"),
        "{err}"
    );
}

#[test]
fn bad_ids_from_binary_input() {
    for (instr, needle) in [
        (Instr::Call(9), "undefined method #9"),
        (Instr::New(4), "undefined class #4"),
        (Instr::PrintS(3), "undefined string #3"),
        (Instr::PushConst(0), "undefined constant #0"),
    ] {
        let mut p = simple();
        p.methods[0].code[0] = instr;
        let err = verify(p).unwrap_err();
        assert!(err.0[0].message.contains(needle), "{err}");
        assert_eq!(err.0[0].line, 2);
    }
}

#[test]
fn unlinked_constant() {
    let p = assemble(
        "t.masm",
        &format!(".const N 3\n{}", main_with("  push N\n  pop")),
    )
    .unwrap();
    let err = verify(p).unwrap_err();
    assert!(
        err.0[0].message.contains("constant `N` was not linked"),
        "{err}"
    );
    assert_eq!(err.0[0].line, 3);
}

#[test]
fn wrong_arity() {
    let src = format!(
        "{}.method two args=2 locals=2\n  push 0\n  ret\n.end\n",
        main_with("  push 1\n  call two\n  pop")
    );
    rejects(&src, 3, "wrong arity: `call two` needs 2");
}

#[test]
fn stack_underflow() {
    rejects(
        &main_with("  push 1\n  add"),
        3,
        "stack underflow: `add` needs 2",
    );
    rejects(
        ".method main args=0 locals=0\n  ret\n.end\n",
        2,
        "stack underflow",
    );
}

#[test]
fn stack_depth_differs_where_paths_meet() {
    let src = main_with("  push 1\n  jz join\n  push 7\njoin:\n  push 0\n  pop");
    rejects(&src, 4, "stack depth differs where paths meet at line 6");
}

#[test]
fn stack_type_differs_where_paths_meet() {
    let src = main_with("  push 1\n  push 5\n  swap\n  jz other\n  pop\n  null\nother:\n  pop");
    rejects(&src, 7, "holds ref here but int on another path");
}

#[test]
fn local_out_of_range() {
    rejects(&main_with("  load 4\n  pop"), 2, "local 4 out of range");
    rejects(&main_with("  push 1\n  store 9"), 3, "local 9 out of range");
}

#[test]
fn falling_off_the_end() {
    rejects(
        ".method main args=0 locals=0\n  push 1\n  pop\n.end\n",
        3,
        "fall off the end",
    );
    rejects(".method main args=0 locals=0\n.end\n", 1, "is empty");
    rejects(
        ".method main args=0 locals=0\n  push 1\n  jz done\n  push 0\n  ret\ndone:\n  push 2\n  pop\n.end\n",
        8,
        "fall off the end",
    );
}

#[test]
fn main_missing_or_with_arguments() {
    rejects(
        ".method f args=0 locals=0\n  push 0\n  ret\n.end\n",
        0,
        "no `main`",
    );
    rejects(
        ".method main args=1 locals=1\n  push 0\n  ret\n.end\n",
        1,
        "`main` must take no arguments",
    );
}

#[test]
fn message_and_thread_targets_need_their_arity() {
    let one = ".method one args=1 locals=1\n  push 0\n  ret\n.end\n";
    let two = ".method two args=2 locals=2\n  push 0\n  ret\n.end\n";
    for (body, line, needle) in [
        (
            "  push 1\n  push 2\n  push 0\n  send one",
            5,
            "target `one` must take 2",
        ),
        (
            "  push 1\n  push 2\n  sendfront one",
            4,
            "target `one` must take 2",
        ),
        ("  push 1\n  remove one", 3, "target `one` must take 2"),
        ("  push 1\n  has one\n  pop", 3, "target `one` must take 2"),
        ("  null\n  spawn two", 3, "target `two` must take 1"),
    ] {
        let src = format!("{}{one}{two}", main_with(body));
        rejects(&src, line, needle);
    }
}

const CLASS: &str = ".class Box\n  .field n int\n  .field next ref\n.end\n";

/// A program with class `Box` (lines 1-4) and `main` starting on line 5.
fn with_box(body: &str) -> String {
    format!("{CLASS}{}", main_with(body))
}

#[test]
fn field_type_rules() {
    rejects(
        &with_box("  push 3\n  getfield Box.n\n  pop"),
        7,
        "`getfield` reference operand must be ref, found int",
    );
    rejects(
        &with_box("  new Box\n  push 1\n  putfield Box.next"),
        8,
        "`putfield` value must be ref, found int",
    );
    rejects(
        &with_box("  new Box\n  null\n  null\n  cas Box.n\n  pop"),
        9,
        "`cas` new value must be int, found ref",
    );
    rejects(
        &with_box("  new Box\n  push 0\n  null\n  cas Box.next\n  pop"),
        9,
        "`cas` expected value must be ref",
    );
    rejects(
        &with_box("  new Box\n  push 1\n  xadd Box.next\n  pop"),
        8,
        "xadd needs an int field",
    );
    rejects(
        &with_box("  new Box\n  getfield Box.next\n  print"),
        8,
        "`print` int operand must be int, found ref",
    );
}

#[test]
fn array_operands() {
    rejects(
        &main_with("  push 1\n  push 0\n  aload\n  pop"),
        4,
        "`aload` reference operand must be ref",
    );
    rejects(
        &main_with("  push 1\n  alen\n  pop"),
        3,
        "`alen` reference operand must be ref",
    );
    rejects(
        &main_with("  push 1\n  newarray int\n  null\n  push 0\n  astore"),
        6,
        "`astore` int operand",
    );
    rejects(
        &main_with("  null\n  newarray int\n  pop"),
        3,
        "`newarray` int operand",
    );
}

#[test]
fn return_types_must_agree() {
    let src = format!(
        "{}.method f args=1 locals=1\n  load 0\n  jz a\n  push 1\n  ret\na:\n  null\n  ret\n.end\n",
        main_with("  push 0\n  call f\n  pop")
    );
    rejects(&src, 15, "returns int elsewhere, this `ret` returns ref");
}

#[test]
fn local_keeps_the_type_of_its_first_store() {
    rejects(
        &main_with("  push 1\n  store 2\n  null\n  store 2"),
        5,
        "local 2 holds int",
    );
}

#[test]
fn arguments_are_checked_at_every_call() {
    let src = format!(
        "{}.method inc args=1 locals=1\n  load 0\n  push 1\n  add\n  ret\n.end\n",
        main_with("  push 1\n  call inc\n  pop\n  null\n  call inc\n  pop")
    );
    rejects(
        &src,
        6,
        "`call inc` passes ref as argument 0 of `inc`, which takes int",
    );
}

#[test]
fn argument_types_found_later_still_check_earlier_calls() {
    // `inc`'s argument gets its type only when `inc` is analysed, after `main`.
    let src = format!(
        "{}.method inc args=1 locals=1\n  load 0\n  getfield Box.n\n  ret\n.end\n",
        with_box("  push 1\n  call inc\n  pop")
    );
    rejects(
        &src,
        7,
        "passes int as argument 0 of `inc`, which takes ref",
    );
}

#[test]
fn message_and_spawn_arguments_flow_into_targets() {
    let handler = ".method h args=2 locals=2\n  load 1\n  getfield Box.n\n  ret\n.end\n";
    let src = format!(
        "{}{handler}",
        with_box("  push 1\n  push 2\n  push 0\n  send h")
    );
    rejects(
        &src,
        9,
        "`send h` passes int as argument 1 of `h`, which takes ref",
    );
    let worker = ".method w args=1 locals=1\n  load 0\n  alen\n  ret\n.end\n";
    let src = format!("{}{worker}", main_with("  push 5\n  spawn w"));
    rejects(
        &src,
        3,
        "`spawn w` passes int as argument 0 of `w`, which takes ref",
    );
    let what_as_ref = ".method h args=2 locals=2\n  load 0\n  alen\n  ret\n.end\n";
    let src = format!(
        "{}{what_as_ref}",
        main_with("  push 1\n  null\n  sendfront h")
    );
    rejects(&src, 4, "passes int as argument 0 of `h`");
}

#[test]
fn many_problems_are_all_reported() {
    let err = build(&main_with("  frob\n  push\n  jmp nowhere")).unwrap_err();
    let lines: Vec<u32> = err.0.iter().map(|d| d.line).collect();
    assert_eq!(lines, vec![2, 3, 4], "{err}");
}

// ---- acceptance ----------------------------------------------------------------------

#[test]
fn fib_is_accepted_with_int_types() {
    let v = build(FIB).unwrap();
    assert_eq!(v.entry, 0);
    let fib = &v.info[1];
    assert_eq!(fib.arg_types, vec![Ty::Int]);
    assert_eq!(fib.ret_type, Ty::Int);
    assert_eq!(fib.max_stack, 3);
    // Entry of `add` (pc 13): fib(n-1) and fib(n-2) on the stack.
    assert_eq!(fib.stack_types[13], vec![Ty::Int, Ty::Int]);
    // `main`'s locals are never used.
    assert_eq!(v.info[0].local_types, vec![Ty::Any, Ty::Any]);
}

#[test]
fn every_instruction_is_accepted_and_typed() {
    let v = build(EVERYTHING).unwrap();
    let main = &v.info[0];
    assert_eq!(&main.local_types[..3], &[Ty::Ref, Ty::Int, Ty::Ref]);
    let code = &v.program.methods[0].code;
    // The element of the ref[] used by `alen` is a reference.
    let aloads: Vec<&Instr> = code
        .iter()
        .filter(|i| matches!(i, Instr::ALoad(_)))
        .collect();
    assert_eq!(aloads, vec![&Instr::ALoad(Ty::Ref), &Instr::ALoad(Ty::Ref)]);
    let astores: Vec<&Instr> = code
        .iter()
        .filter(|i| matches!(i, Instr::AStore(_)))
        .collect();
    assert_eq!(
        astores,
        vec![&Instr::AStore(Ty::Ref), &Instr::AStore(Ty::Int)]
    );
    // `onmsg` is called with a ref and with null as arg 1, which it never uses.
    let onmsg = &v.info[1];
    assert_eq!(onmsg.arg_types, vec![Ty::Int, Ty::Any]);
    // `worker` gets the ref[] through `spawn`; elements are popped (Any), read as ints,
    // and copied (Any).
    let worker = &v.info[2];
    assert_eq!(worker.arg_types, vec![Ty::Ref]);
    let wcode = &v.program.methods[2].code;
    assert_eq!(wcode[2], Instr::ALoad(Ty::Any));
    assert_eq!(wcode[6], Instr::ALoad(Ty::Ref));
    assert_eq!(wcode[8], Instr::ALoad(Ty::Int));
    assert_eq!(wcode[14], Instr::ALoad(Ty::Any));
    assert_eq!(wcode[15], Instr::AStore(Ty::Any));
    assert_eq!(worker.local_types, vec![Ty::Ref, Ty::Any]);
}

#[test]
fn stack_types_track_refs_for_the_collector() {
    let src = with_box(
        "  new Box\n  store 0\n  load 0\n  push 1\n  load 0\n  getfield Box.next\n  pop\n  pop\n  pop",
    );
    let v = build(&src).unwrap();
    let info = &v.info[0];
    assert_eq!(info.local_types[0], Ty::Ref);
    // Entry of `getfield` (pc 5): ref, int, ref.
    assert_eq!(info.stack_types[5], vec![Ty::Ref, Ty::Int, Ty::Ref]);
    assert_eq!(info.stack_types[0], Vec::<Ty>::new());
    assert_eq!(info.max_stack, 3);
    assert_eq!(info.stack_types.len(), v.program.methods[0].code.len());
}

#[test]
fn unreachable_code_has_no_stack_types() {
    let v =
        build(".method main args=0 locals=0\n  push 0\n  ret\n  push 1\n  ret\n.end\n").unwrap();
    assert_eq!(v.info[0].stack_types[2], Vec::<Ty>::new());
    assert_eq!(v.info[0].stack_types[1], vec![Ty::Int]);
}

#[test]
fn unused_argument_accepts_either_type() {
    let src = format!(
        "{}.method ignore args=1 locals=1\n  push 0\n  ret\n.end\n",
        main_with("  push 1\n  call ignore\n  null\n  call ignore\n  add\n  pop")
    );
    let v = build(&src).unwrap();
    assert_eq!(v.info[1].arg_types, vec![Ty::Any]);
    assert_eq!(v.info[1].ret_type, Ty::Int);
}

#[test]
fn types_flow_back_through_argument_chains() {
    // `a` passes its argument to `b`, which dereferences it: both take ref.
    let src = format!(
        "{}.method a args=1 locals=1\n  load 0\n  call b\n  ret\n.end\n.method b args=1 locals=1\n  load 0\n  getfield Box.n\n  ret\n.end\n",
        with_box("  new Box\n  call a\n  pop")
    );
    let v = build(&src).unwrap();
    assert_eq!(v.info[1].arg_types, vec![Ty::Ref]);
    assert_eq!(v.info[2].arg_types, vec![Ty::Ref]);
    assert_eq!(v.info[1].ret_type, Ty::Int);
}

#[test]
fn labels_may_share_a_line_and_keys_any_order() {
    let v = build(".method main locals=1 args=0\n  push 0\nend: ret\n.end\n").unwrap();
    assert_eq!(v.program.methods[0].code, vec![Instr::Push(0), Instr::Ret]);
}
