//! The executor's internal form of an instruction, translated once at load time.
//!
//! Field operands are resolved to payload slots and class checks to one class id, so the
//! hot path of `getfield`, `putfield`, `cas` and `xadd` is the raw operation behind one
//! compare. Layout decision: an instance's reference fields come first (slots
//! `0..nrefs`), then its int fields, so the collector scans a prefix.
//!
//! [`translate_by_name`] is the comparison form (`marvin run --no-resolve`): the four field
//! instructions keep their operand as a class and field *name* and resolve it on every
//! execution, as a reflective field updater does (see [`resolve_by_name`]).

use marvin_runtime::header::ObjKind;

use super::fuse::Bin;
use crate::isa::{self, ElemKind, Instr, Program, Ty};

/// Class id stored in array headers (arrays are not instances of any MASM class).
pub const ARRAY_CLASS: u32 = u32::MAX;

/// A resolved field: the class to check and the payload slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub class: u32,
    pub slot: u32,
    /// The field's index in its class as written (for by-name execution and messages).
    pub field: u32,
}

/// One executable instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Push(i64),
    Load(u32),
    Store(u32),
    Pop,
    Dup,
    Swap,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Neg,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Jmp(u32),
    Jz(u32),
    Jnz(u32),
    Call(u32),
    Ret,
    New(u32),
    GetField(Slot),
    PutField(Slot),
    PutFieldRef(Slot),
    NewArray(ObjKind),
    ALoad(Ty),
    AStore(Ty),
    ALen,
    Cas(Slot),
    CasRef(Slot),
    Xadd(Slot),
    /// `getfield`, `putfield`, `cas` and `xadd` resolved by name on every execution.
    GetFieldByName(isa::FieldRef),
    PutFieldByName(isa::FieldRef),
    CasByName(isa::FieldRef),
    XaddByName(isa::FieldRef),
    MonitorEnter,
    MonitorExit,
    Send(u32),
    SendFront(u32),
    Remove(u32),
    Has(u32),
    Quit,
    Spawn(u32),
    Sleep,
    Print,
    PrintC,
    PrintS(u32),
    Time,
    Mark(u32),
    CpuTime,
    UserTime,
    Gc,
    Assert,
    Halt,
    // Superinstructions (see [`super::fuse`]); each stands for the run in its doc.
    /// `load a; load b`
    LoadLoad(u32, u32),
    /// `push k; OP`
    BinConst(Bin, i64),
    /// `push k; OP; store a`
    BinConstStore(Bin, i64, u32),
    /// `load a; OP`
    BinLocal(Bin, u32),
    /// `load a; push k; OP`
    LoadBinConst(u32, Bin, i64),
    /// `load a; load b; OP`
    LoadBinLocal(u32, Bin, u32),
    /// `load a; push k; add; store a`
    IncLocal(u32, i64),
    /// `CMP; jnz t` (`jz` when the flag is false)
    BrCmp(Bin, bool, u32),
    /// `load a; push k; CMP; jnz/jz t`
    BrLocalConst(u32, i64, Bin, bool, u32),
    /// `load a; load b; CMP; jnz/jz t`
    BrLocalLocal(u32, u32, Bin, bool, u32),
    /// `load a; getfield C.f`
    LoadGetField(u32, Slot),
}

impl Op {
    /// How many original instructions this op covers (1 unless fused).
    pub fn covers(self) -> usize {
        match self {
            Op::LoadLoad(..)
            | Op::BinConst(..)
            | Op::BinLocal(..)
            | Op::BrCmp(..)
            | Op::LoadGetField(..) => 2,
            Op::LoadBinConst(..) | Op::LoadBinLocal(..) | Op::BinConstStore(..) => 3,
            Op::IncLocal(..) | Op::BrLocalConst(..) | Op::BrLocalLocal(..) => 4,
            _ => 1,
        }
    }
}

/// The payload layout of one class.
#[derive(Clone, Debug)]
pub struct ClassLayout {
    /// Payload slot of each field, in declaration order.
    pub slot_of: Vec<u32>,
    pub nrefs: u16,
    pub slots: u32,
}

/// Computes every class's layout: reference fields first.
pub fn layouts(p: &Program) -> Vec<ClassLayout> {
    p.classes
        .iter()
        .map(|c| {
            let nrefs = c.fields.iter().filter(|f| f.ty == Ty::Ref).count();
            let (mut r, mut i) = (0u32, nrefs as u32);
            let slot_of = c
                .fields
                .iter()
                .map(|f| {
                    let s = if f.ty == Ty::Ref { &mut r } else { &mut i };
                    *s += 1;
                    *s - 1
                })
                .collect();
            ClassLayout {
                slot_of,
                nrefs: nrefs as u16,
                slots: c.fields.len() as u32,
            }
        })
        .collect()
}

/// Translates one verified instruction.
pub fn translate(p: &Program, layouts: &[ClassLayout], ins: Instr) -> Op {
    let slot = |f: isa::FieldRef| Slot {
        class: f.class,
        slot: layouts[f.class as usize].slot_of[f.field as usize],
        field: f.field,
    };
    let is_ref =
        |f: isa::FieldRef| p.classes[f.class as usize].fields[f.field as usize].ty == Ty::Ref;
    match ins {
        Instr::Push(v) => Op::Push(v),
        // The verifier rejects unlinked programs; a constant that survived is 0.
        Instr::PushConst(c) => Op::Push(p.consts.get(c as usize).map_or(0, |c| c.value)),
        Instr::Null => Op::Push(0),
        Instr::Load(i) => Op::Load(i),
        Instr::Store(i) => Op::Store(i),
        Instr::Pop => Op::Pop,
        Instr::Dup => Op::Dup,
        Instr::Swap => Op::Swap,
        Instr::Add => Op::Add,
        Instr::Sub => Op::Sub,
        Instr::Mul => Op::Mul,
        Instr::Div => Op::Div,
        Instr::Rem => Op::Rem,
        Instr::And => Op::And,
        Instr::Or => Op::Or,
        Instr::Xor => Op::Xor,
        Instr::Shl => Op::Shl,
        Instr::Shr => Op::Shr,
        Instr::Neg => Op::Neg,
        Instr::Lt => Op::Lt,
        Instr::Le => Op::Le,
        Instr::Gt => Op::Gt,
        Instr::Ge => Op::Ge,
        Instr::Eq | Instr::RefEq => Op::Eq,
        Instr::Ne => Op::Ne,
        Instr::Jmp(t) => Op::Jmp(t),
        Instr::Jz(t) | Instr::Jnull(t) => Op::Jz(t),
        Instr::Jnz(t) | Instr::Jnonnull(t) => Op::Jnz(t),
        Instr::Call(m) => Op::Call(m),
        Instr::Ret => Op::Ret,
        Instr::New(c) => Op::New(c),
        Instr::GetField(f) => Op::GetField(slot(f)),
        Instr::PutField(f) if is_ref(f) => Op::PutFieldRef(slot(f)),
        Instr::PutField(f) => Op::PutField(slot(f)),
        Instr::NewArray(k) => Op::NewArray(match k {
            ElemKind::Int => ObjKind::IntArray,
            ElemKind::Byte => ObjKind::ByteArray,
            ElemKind::Ref => ObjKind::RefArray,
        }),
        Instr::ALoad(t) => Op::ALoad(t),
        Instr::AStore(t) => Op::AStore(t),
        Instr::ALen => Op::ALen,
        Instr::Cas(f) if is_ref(f) => Op::CasRef(slot(f)),
        Instr::Cas(f) => Op::Cas(slot(f)),
        Instr::Xadd(f) => Op::Xadd(slot(f)),
        Instr::MonitorEnter => Op::MonitorEnter,
        Instr::MonitorExit => Op::MonitorExit,
        Instr::Send(m) => Op::Send(m),
        Instr::SendFront(m) => Op::SendFront(m),
        Instr::Remove(m) => Op::Remove(m),
        Instr::Has(m) => Op::Has(m),
        Instr::Quit => Op::Quit,
        Instr::Spawn(m) => Op::Spawn(m),
        Instr::Sleep => Op::Sleep,
        Instr::Print => Op::Print,
        Instr::PrintC => Op::PrintC,
        Instr::PrintS(s) => Op::PrintS(s),
        Instr::Time => Op::Time,
        Instr::Mark(s) => Op::Mark(s),
        Instr::CpuTime => Op::CpuTime,
        Instr::UserTime => Op::UserTime,
        Instr::Gc => Op::Gc,
        Instr::Assert => Op::Assert,
        Instr::Halt => Op::Halt,
    }
}

/// Translates one verified instruction for by-name execution: field instructions keep
/// their symbolic operand; everything else is translated as [`translate`] does.
pub fn translate_by_name(p: &Program, layouts: &[ClassLayout], ins: Instr) -> Op {
    match ins {
        Instr::GetField(f) => Op::GetFieldByName(f),
        Instr::PutField(f) => Op::PutFieldByName(f),
        Instr::Cas(f) => Op::CasByName(f),
        Instr::Xadd(f) => Op::XaddByName(f),
        other => translate(p, layouts, other),
    }
}

/// What a by-name field instruction needs of the field's declared type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldUse {
    /// `getfield`, `putfield`, `cas`: either type.
    Any,
    /// `xadd`: an int field.
    Int,
}

/// A field resolved by name: its slot and whether it holds a reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamedField {
    pub slot: Slot,
    pub is_ref: bool,
}

/// Resolves the field `f` names the way a reflective updater does on each call: finds the
/// class by its name among the program's classes, the field by its name within the class,
/// and checks the field's declared type against `use_`. The caller then checks the object's
/// class against the result. Errors are runtime error messages.
#[inline(never)]
pub fn resolve_by_name(
    p: &Program,
    layouts: &[ClassLayout],
    f: isa::FieldRef,
    use_: FieldUse,
) -> Result<NamedField, String> {
    let wanted = &p.classes[f.class as usize];
    let field_name = &wanted.fields[f.field as usize].name;
    let class = p
        .classes
        .iter()
        .position(|c| c.name == wanted.name)
        .ok_or_else(|| format!("no class {}", wanted.name))?;
    let fields = &p.classes[class].fields;
    let field = fields
        .iter()
        .position(|fd| fd.name == *field_name)
        .ok_or_else(|| format!("no field {}.{field_name}", wanted.name))?;
    let ty = fields[field].ty;
    if use_ == FieldUse::Int && ty != Ty::Int {
        return Err(format!("field {}.{field_name} is not an int", wanted.name));
    }
    Ok(NamedField {
        slot: Slot {
            class: class as u32,
            slot: layouts[class].slot_of[field],
            field: field as u32,
        },
        is_ref: ty == Ty::Ref,
    })
}
