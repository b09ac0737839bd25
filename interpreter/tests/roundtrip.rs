//! Round trips between the forms of a program: text, binary, and disassembled text.

use marvin_interpreter::asm::assemble;
use marvin_interpreter::binary::{decode, encode, is_binary, MAGIC, VERSION};
use marvin_interpreter::disasm::disassemble;
use marvin_interpreter::isa::Instr;
use marvin_interpreter::load::load;
use marvin_interpreter::verify::verify;

mod common;
use common::{samples, without_lines, SIZED};

#[test]
fn text_to_binary_and_back() {
    for src in samples() {
        let p = assemble("prog", src).unwrap();
        let bytes = encode(&p);
        assert!(is_binary(&bytes));
        assert_eq!(&bytes[..4], &MAGIC);
        assert_eq!(u16::from_le_bytes([bytes[4], bytes[5]]), VERSION);
        assert_eq!(decode("prog", &bytes).unwrap(), p);
    }
}

#[test]
fn disassembly_reassembles_to_the_same_program() {
    for src in samples() {
        let p = assemble("prog", src).unwrap();
        let text = disassemble(&p);
        let again = assemble("prog", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(without_lines(again), without_lines(p));
    }
}

#[test]
fn verified_programs_round_trip_and_reverify() {
    for src in samples() {
        let mut p = assemble("prog", src).unwrap();
        p.link(&[]).unwrap();
        let v = verify(p).unwrap();
        // The binary form keeps the inferred aload/astore types.
        let bytes = encode(&v.program);
        assert_eq!(decode("prog", &bytes).unwrap(), v.program);
        // Disassembled, reassembled and verified again: the same facts.
        let text = disassemble(&v.program);
        let again = verify(assemble("prog", &text).unwrap()).unwrap();
        assert_eq!(again.info, v.info);
        assert_eq!(without_lines(again.program), without_lines(v.program));
    }
}

#[test]
fn overrides_apply_to_decoded_binaries() {
    let bytes = encode(&assemble("sized.mvb", SIZED).unwrap());
    let mut p = decode("sized.mvb", &bytes).unwrap();
    assert_eq!(p.methods[0].code[0], Instr::PushConst(0));
    p.link(&[("SIZE".into(), 1000)]).unwrap();
    assert_eq!(p.methods[0].code[0], Instr::Push(1000));
    assert_eq!(p.methods[0].code[1], Instr::Push(-2));
    verify(p).unwrap();

    let mut p = decode("sized.mvb", &bytes).unwrap();
    let err = p.link(&[("SIZ".into(), 1)]).unwrap_err();
    assert!(err.to_string().contains("SIZ"), "{err}");
}

#[test]
fn load_picks_the_form_by_magic() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("p.masm");
    let bin = dir.path().join("p.mvb");
    std::fs::write(&text, SIZED).unwrap();
    let p = load(&text).unwrap();
    std::fs::write(&bin, encode(&p)).unwrap();
    let q = load(&bin).unwrap();
    assert_eq!(q.methods, p.methods);
    assert_eq!(q.file, bin.display().to_string());
    // A corrupted binary names the file.
    let mut bytes = encode(&p);
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    std::fs::write(&bin, bytes).unwrap();
    let err = load(&bin).unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:0: ", bin.display())), "{err}");
    assert!(err.contains("checksum"), "{err}");
}
