//! Instruction mnemonics: the one table mapping MASM instruction names to [`Instr`]
//! constructors (for the assembler) and back (for the disassembler).

use crate::isa::{ClassId, ElemKind, FieldRef, Instr, MethodId, StrId, Ty};

/// What a mnemonic takes as its operand, with the constructor of its instruction.
#[derive(Clone, Copy)]
pub(crate) enum OpKind {
    /// No operand.
    Plain(Instr),
    /// `push N` or `push NAME`.
    Push,
    /// A local slot index.
    Local(fn(u32) -> Instr),
    /// A label in the same method.
    Label(fn(u32) -> Instr),
    Method(fn(MethodId) -> Instr),
    Class(fn(ClassId) -> Instr),
    /// A `C.f` field operand.
    Field(fn(FieldRef) -> Instr),
    /// `int`, `byte` or `ref`.
    Elem,
    /// A string literal.
    Str(fn(StrId) -> Instr),
}

/// The operand kind of a mnemonic, or `None` for an unknown instruction.
pub(crate) fn lookup(name: &str) -> Option<OpKind> {
    use Instr as I;
    use OpKind::*;
    Some(match name {
        "push" => Push,
        "null" => Plain(I::Null),
        "load" => Local(I::Load),
        "store" => Local(I::Store),
        "pop" => Plain(I::Pop),
        "dup" => Plain(I::Dup),
        "swap" => Plain(I::Swap),
        "add" => Plain(I::Add),
        "sub" => Plain(I::Sub),
        "mul" => Plain(I::Mul),
        "div" => Plain(I::Div),
        "rem" => Plain(I::Rem),
        "and" => Plain(I::And),
        "or" => Plain(I::Or),
        "xor" => Plain(I::Xor),
        "shl" => Plain(I::Shl),
        "shr" => Plain(I::Shr),
        "neg" => Plain(I::Neg),
        "lt" => Plain(I::Lt),
        "le" => Plain(I::Le),
        "gt" => Plain(I::Gt),
        "ge" => Plain(I::Ge),
        "eq" => Plain(I::Eq),
        "ne" => Plain(I::Ne),
        "refeq" => Plain(I::RefEq),
        "jmp" => Label(I::Jmp),
        "jz" => Label(I::Jz),
        "jnz" => Label(I::Jnz),
        "jnull" => Label(I::Jnull),
        "jnonnull" => Label(I::Jnonnull),
        "call" => Method(I::Call),
        "ret" => Plain(I::Ret),
        "new" => Class(I::New),
        "getfield" => Field(I::GetField),
        "putfield" => Field(I::PutField),
        "newarray" => Elem,
        "aload" => Plain(I::ALoad(Ty::Any)),
        "astore" => Plain(I::AStore(Ty::Any)),
        "alen" => Plain(I::ALen),
        "cas" => Field(I::Cas),
        "xadd" => Field(I::Xadd),
        "monitorenter" => Plain(I::MonitorEnter),
        "monitorexit" => Plain(I::MonitorExit),
        "send" => Method(I::Send),
        "sendfront" => Method(I::SendFront),
        "remove" => Method(I::Remove),
        "has" => Method(I::Has),
        "quit" => Plain(I::Quit),
        "spawn" => Method(I::Spawn),
        "sleep" => Plain(I::Sleep),
        "print" => Plain(I::Print),
        "printc" => Plain(I::PrintC),
        "prints" => Str(I::PrintS),
        "time" => Plain(I::Time),
        "mark" => Str(I::Mark),
        "cputime" => Plain(I::CpuTime),
        "usertime" => Plain(I::UserTime),
        "gc" => Plain(I::Gc),
        "assert" => Plain(I::Assert),
        "halt" => Plain(I::Halt),
        "nalloc" => Plain(I::NAlloc),
        "nfree" => Plain(I::NFree),
        "nload" => Plain(I::NLoad),
        "nstore" => Plain(I::NStore),
        "ncheck" => Plain(I::NCheck),
        _ => return None,
    })
}

/// The mnemonic of an instruction.
pub(crate) fn name(instr: &Instr) -> &'static str {
    use Instr as I;
    match instr {
        I::Push(_) | I::PushConst(_) => "push",
        I::Null => "null",
        I::Load(_) => "load",
        I::Store(_) => "store",
        I::Pop => "pop",
        I::Dup => "dup",
        I::Swap => "swap",
        I::Add => "add",
        I::Sub => "sub",
        I::Mul => "mul",
        I::Div => "div",
        I::Rem => "rem",
        I::And => "and",
        I::Or => "or",
        I::Xor => "xor",
        I::Shl => "shl",
        I::Shr => "shr",
        I::Neg => "neg",
        I::Lt => "lt",
        I::Le => "le",
        I::Gt => "gt",
        I::Ge => "ge",
        I::Eq => "eq",
        I::Ne => "ne",
        I::RefEq => "refeq",
        I::Jmp(_) => "jmp",
        I::Jz(_) => "jz",
        I::Jnz(_) => "jnz",
        I::Jnull(_) => "jnull",
        I::Jnonnull(_) => "jnonnull",
        I::Call(_) => "call",
        I::Ret => "ret",
        I::New(_) => "new",
        I::GetField(_) => "getfield",
        I::PutField(_) => "putfield",
        I::NewArray(_) => "newarray",
        I::ALoad(_) => "aload",
        I::AStore(_) => "astore",
        I::ALen => "alen",
        I::Cas(_) => "cas",
        I::Xadd(_) => "xadd",
        I::MonitorEnter => "monitorenter",
        I::MonitorExit => "monitorexit",
        I::Send(_) => "send",
        I::SendFront(_) => "sendfront",
        I::Remove(_) => "remove",
        I::Has(_) => "has",
        I::Quit => "quit",
        I::Spawn(_) => "spawn",
        I::Sleep => "sleep",
        I::Print => "print",
        I::PrintC => "printc",
        I::PrintS(_) => "prints",
        I::Time => "time",
        I::Mark(_) => "mark",
        I::CpuTime => "cputime",
        I::UserTime => "usertime",
        I::Gc => "gc",
        I::Assert => "assert",
        I::Halt => "halt",
        I::NAlloc => "nalloc",
        I::NFree => "nfree",
        I::NLoad => "nload",
        I::NStore => "nstore",
        I::NCheck => "ncheck",
    }
}

/// The MASM spelling of an array element kind.
pub(crate) fn elem_name(kind: ElemKind) -> &'static str {
    match kind {
        ElemKind::Int => "int",
        ElemKind::Byte => "byte",
        ElemKind::Ref => "ref",
    }
}

/// Parses an array element kind.
pub(crate) fn parse_elem(s: &str) -> Option<ElemKind> {
    match s {
        "int" => Some(ElemKind::Int),
        "byte" => Some(ElemKind::Byte),
        "ref" => Some(ElemKind::Ref),
        _ => None,
    }
}

/// The MASM spelling of a type (`int`, `ref`, `any`).
pub(crate) fn ty_name(ty: Ty) -> &'static str {
    match ty {
        Ty::Int => "int",
        Ty::Ref => "ref",
        Ty::Any => "any",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_plain_mnemonic_round_trips() {
        let names = [
            "null",
            "pop",
            "dup",
            "swap",
            "add",
            "sub",
            "mul",
            "div",
            "rem",
            "and",
            "or",
            "xor",
            "shl",
            "shr",
            "neg",
            "lt",
            "le",
            "gt",
            "ge",
            "eq",
            "ne",
            "refeq",
            "ret",
            "aload",
            "astore",
            "alen",
            "monitorenter",
            "monitorexit",
            "quit",
            "sleep",
            "print",
            "printc",
            "time",
            "cputime",
            "usertime",
            "gc",
            "assert",
            "halt",
            "nalloc",
            "nfree",
            "nload",
            "nstore",
            "ncheck",
        ];
        for n in names {
            match lookup(n) {
                Some(OpKind::Plain(i)) => assert_eq!(name(&i), n),
                _ => panic!("{n} is not a plain mnemonic"),
            }
        }
    }

    #[test]
    fn operand_mnemonics_round_trip() {
        for n in ["load", "store", "jmp", "jz", "jnz", "jnull", "jnonnull"] {
            let i = match lookup(n) {
                Some(OpKind::Local(f)) | Some(OpKind::Label(f)) => f(3),
                _ => panic!("{n}"),
            };
            assert_eq!(name(&i), n);
        }
        for n in ["call", "send", "sendfront", "remove", "has", "spawn"] {
            let Some(OpKind::Method(f)) = lookup(n) else {
                panic!("{n}")
            };
            assert_eq!(name(&f(1)), n);
        }
        for n in ["getfield", "putfield", "cas", "xadd"] {
            let Some(OpKind::Field(f)) = lookup(n) else {
                panic!("{n}")
            };
            assert_eq!(name(&f(FieldRef { class: 0, field: 0 })), n);
        }
        for n in ["prints", "mark"] {
            let Some(OpKind::Str(f)) = lookup(n) else {
                panic!("{n}")
            };
            assert_eq!(name(&f(0)), n);
        }
        let Some(OpKind::Class(f)) = lookup("new") else {
            panic!("new")
        };
        assert_eq!(name(&f(0)), "new");
        assert!(lookup("frobnicate").is_none());
        for k in [ElemKind::Int, ElemKind::Byte, ElemKind::Ref] {
            assert_eq!(parse_elem(elem_name(k)), Some(k));
        }
    }
}
