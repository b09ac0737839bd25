//! Hostile input: mutated, truncated and spliced binaries and random or mutated text.
//! Whatever the bytes, the front end answers `Ok` or `Err` and never panics; whatever it
//! accepts disassembles to text it accepts again.

use std::panic::{catch_unwind, AssertUnwindSafe};

use marvin_interpreter::asm::assemble;
use marvin_interpreter::binary::{checksum, encode};
use marvin_interpreter::disasm::disassemble;
use marvin_interpreter::load::load_bytes;
use marvin_interpreter::verify::verify;
use proptest::prelude::*;

mod common;
use common::samples;

const HEADER_LEN: usize = 20;

fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() >= HEADER_LEN {
        let sum = checksum(&bytes[HEADER_LEN..]).to_le_bytes();
        let len = ((bytes.len() - HEADER_LEN) as u32).to_le_bytes();
        bytes[8..16].copy_from_slice(&sum);
        bytes[16..20].copy_from_slice(&len);
    }
    bytes
}

fn sample_binaries() -> Vec<Vec<u8>> {
    samples()
        .iter()
        .map(|src| encode(&assemble("s", src).unwrap()))
        .collect()
}

/// Runs the whole front end; panics (caught by the caller's check) only on a bug.
fn pipeline(bytes: &[u8]) {
    let Ok(mut p) = load_bytes("h", bytes) else {
        return;
    };
    let _ = disassemble(&p);
    if p.link(&[]).is_err() {
        return;
    }
    let Ok(v) = verify(p) else { return };
    let text = disassemble(&v.program);
    let again = assemble("h", &text).unwrap_or_else(|e| panic!("reassembly failed: {e}\n{text}"));
    verify(again).unwrap_or_else(|e| panic!("reverification failed: {e}\n{text}"));
}

fn no_panic(bytes: &[u8]) -> Result<(), TestCaseError> {
    match catch_unwind(AssertUnwindSafe(|| pipeline(bytes))) {
        Ok(()) => Ok(()),
        Err(_) => Err(TestCaseError::fail(format!(
            "panic on input {:?}",
            String::from_utf8_lossy(bytes)
        ))),
    }
}

/// Text fragments that make up plausible (and implausible) MASM lines.
fn masm_line() -> impl Strategy<Value = String> {
    let words = prop::sample::select(vec![
        "push",
        "push N",
        "null",
        "load",
        "store",
        "pop",
        "dup",
        "swap",
        "add",
        "div",
        "neg",
        "lt",
        "refeq",
        "jmp",
        "jz",
        "jnz",
        "jnull",
        "jnonnull",
        "call",
        "ret",
        "new A",
        "getfield A.x",
        "putfield A.r",
        "newarray ref",
        "newarray byte",
        "aload",
        "astore",
        "alen",
        "cas A.x",
        "xadd A.x",
        "monitorenter",
        "monitorexit",
        "send f",
        "sendfront f",
        "remove f",
        "has f",
        "quit",
        "spawn g",
        "sleep",
        "print",
        "prints \"a\\tb\"",
        "mark \"r\"",
        "time",
        "gc",
        "assert",
        "halt",
        ".end",
        ".method f args=2 locals=3",
        ".method g args=1 locals=1",
        ".method main args=0 locals=2",
        ".class A",
        ".field x int",
        ".field r ref",
        ".const N 3",
        "L:",
        "M:",
        "; comment",
        "",
        "\"",
        "push 0x",
        "push -9223372036854775808",
    ]);
    let operand = prop::sample::select(vec![
        "", " 0", " 1", " 2", " L", " M", " f", " g", " main", " -1",
    ]);
    (words, operand).prop_map(|(w, o)| format!("{w}{o}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn mutated_binaries_are_handled(
        which in 0usize..3,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        sealed in any::<bool>(),
    ) {
        let mut bytes = sample_binaries().swap_remove(which);
        for (at, value) in edits {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if sealed {
            bytes = reseal(bytes);
        }
        no_panic(&bytes)?;
    }

    #[test]
    fn truncated_binaries_are_handled(which in 0usize..3, cut in any::<prop::sample::Index>(), sealed in any::<bool>()) {
        let mut bytes = sample_binaries().swap_remove(which);
        bytes.truncate(cut.index(bytes.len()));
        if sealed {
            bytes = reseal(bytes);
        }
        no_panic(&bytes)?;
    }

    #[test]
    fn spliced_binaries_are_handled(
        a in 0usize..3, b in 0usize..3,
        at_a in any::<prop::sample::Index>(), at_b in any::<prop::sample::Index>(),
    ) {
        let bins = sample_binaries();
        let (x, y) = (&bins[a], &bins[b]);
        let mut bytes = x[..HEADER_LEN + at_a.index(x.len() - HEADER_LEN)].to_vec();
        bytes.extend_from_slice(&y[HEADER_LEN + at_b.index(y.len() - HEADER_LEN)..]);
        no_panic(&reseal(bytes))?;
    }

    #[test]
    fn random_bytes_are_handled(mut bytes in prop::collection::vec(any::<u8>(), 0..200), magic in any::<bool>()) {
        if magic && bytes.len() >= 4 {
            bytes[..4].copy_from_slice(&marvin_interpreter::binary::MAGIC);
            bytes = reseal(bytes);
        }
        no_panic(&bytes)?;
    }

    #[test]
    fn random_text_is_handled(lines in prop::collection::vec(masm_line(), 0..40)) {
        no_panic(lines.join("\n").as_bytes())?;
    }

    #[test]
    fn mutated_text_is_handled(
        which in 0usize..3,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<char>()), 1..5),
    ) {
        let mut chars: Vec<char> = samples()[which].chars().collect();
        for (at, c) in edits {
            let i = at.index(chars.len());
            chars[i] = c;
        }
        no_panic(chars.into_iter().collect::<String>().as_bytes())?;
    }

    #[test]
    fn line_edits_of_valid_text_are_handled(
        which in 0usize..3,
        drop in prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        insert in prop::collection::vec((any::<prop::sample::Index>(), masm_line()), 0..3),
    ) {
        let mut lines: Vec<String> = samples()[which].lines().map(str::to_owned).collect();
        for at in drop {
            let i = at.index(lines.len());
            lines.remove(i);
        }
        for (at, line) in insert {
            let i = at.index(lines.len() + 1);
            lines.insert(i, line);
        }
        no_panic(lines.join("\n").as_bytes())?;
    }
}

#[test]
fn deep_stacks_and_long_chains_stay_bounded() {
    // 60 000 pushes in one method: rejected for size, quickly, not by exhausting memory.
    let mut src = String::from(".method main args=0 locals=0\n");
    for _ in 0..60_000 {
        src.push_str("  push 1\n");
    }
    src.push_str("  ret\n.end\n");
    let err = verify(assemble("deep", &src).unwrap()).unwrap_err();
    assert!(err.to_string().contains("too large to verify"), "{err}");

    // A chain of 5000 methods each passing its argument on: inference stays iterative.
    let mut src = String::from(".method main args=0 locals=0\n  null\n  call m0\n  ret\n.end\n");
    for i in 0..5000 {
        src.push_str(&format!(
            ".method m{i} args=1 locals=1\n  load 0\n  call m{}\n  ret\n.end\n",
            i + 1
        ));
    }
    src.push_str(".method m5000 args=1 locals=1\n  load 0\n  alen\n  ret\n.end\n");
    let v = verify(assemble("chain", &src).unwrap()).unwrap();
    assert_eq!(v.info[1].arg_types, vec![marvin_interpreter::isa::Ty::Ref]);
}
