//! The disassembler: a [`Program`] back to MASM text that assembles to an equal program
//! (source lines aside). Branch targets get labels `L<pc>:`, constant pushes that are not
//! yet linked print as `push NAME`, and strings are escaped.
//!
//! It never fails: an operand that does not resolve (possible only in a program that has
//! not been verified) prints as `?<id>`, which the assembler rejects.

use std::fmt::Write;

use crate::isa::{FieldRef, Instr, Method, Program};
use crate::lexer::escape;
use crate::mnemonic::{elem_name, name, ty_name};

/// Disassembles a whole program.
pub fn disassemble(p: &Program) -> String {
    let mut out = String::new();
    for c in &p.consts {
        let _ = writeln!(out, ".const {} {}", c.name, c.value);
    }
    if !p.consts.is_empty() {
        out.push('\n');
    }
    for c in &p.classes {
        let _ = writeln!(out, ".class {}", c.name);
        for f in &c.fields {
            let _ = writeln!(out, "  .field {} {}", f.name, ty_name(f.ty));
        }
        out.push_str(".end\n\n");
    }
    for m in &p.methods {
        method(&mut out, p, m);
    }
    out
}

fn method(out: &mut String, p: &Program, m: &Method) {
    let _ = writeln!(
        out,
        ".method {} args={} locals={}",
        m.name, m.args, m.locals
    );
    let mut is_target = vec![false; m.code.len() + 1];
    for instr in &m.code {
        if let Some(t) = branch_target(instr) {
            if let Some(slot) = is_target.get_mut(t as usize) {
                *slot = true;
            }
        }
    }
    for (pc, instr) in m.code.iter().enumerate() {
        if is_target[pc] {
            let _ = writeln!(out, "L{pc}:");
        }
        let _ = writeln!(out, "  {}", text(p, instr));
    }
    if is_target[m.code.len()] {
        let _ = writeln!(out, "L{}:", m.code.len());
    }
    out.push_str(".end\n\n");
}

fn branch_target(instr: &Instr) -> Option<u32> {
    match *instr {
        Instr::Jmp(t) | Instr::Jz(t) | Instr::Jnz(t) | Instr::Jnull(t) | Instr::Jnonnull(t) => {
            Some(t)
        }
        _ => None,
    }
}

/// One instruction with its operand.
fn text(p: &Program, instr: &Instr) -> String {
    let mnemonic = name(instr);
    let method = |id: u32| match p.methods.get(id as usize) {
        Some(m) => m.name.clone(),
        None => format!("?{id}"),
    };
    let string = |id: u32| match p.strings.get(id as usize) {
        Some(s) => escape(s),
        None => format!("?{id}"),
    };
    let operand = match *instr {
        Instr::Push(n) => n.to_string(),
        Instr::PushConst(id) => match p.consts.get(id as usize) {
            Some(c) => c.name.clone(),
            None => format!("?{id}"),
        },
        Instr::Load(i) | Instr::Store(i) => i.to_string(),
        Instr::Jmp(t) | Instr::Jz(t) | Instr::Jnz(t) | Instr::Jnull(t) | Instr::Jnonnull(t) => {
            format!("L{t}")
        }
        Instr::Call(m)
        | Instr::Send(m)
        | Instr::SendFront(m)
        | Instr::Remove(m)
        | Instr::Has(m)
        | Instr::Spawn(m) => method(m),
        Instr::New(c) => match p.classes.get(c as usize) {
            Some(class) => class.name.clone(),
            None => format!("?{c}"),
        },
        Instr::GetField(f) | Instr::PutField(f) | Instr::Cas(f) | Instr::Xadd(f) => field(p, f),
        Instr::NewArray(k) => elem_name(k).to_owned(),
        Instr::PrintS(s) | Instr::Mark(s) => string(s),
        _ => return mnemonic.to_owned(),
    };
    format!("{mnemonic} {operand}")
}

fn field(p: &Program, f: FieldRef) -> String {
    match p.classes.get(f.class as usize) {
        Some(c) => match c.fields.get(f.field as usize) {
            Some(field) => format!("{}.{}", c.name, field.name),
            None => format!("{}.?{}", c.name, f.field),
        },
        None => format!("?{}.?{}", f.class, f.field),
    }
}
