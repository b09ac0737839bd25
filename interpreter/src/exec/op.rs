//! The executor's internal form of an instruction, translated once at load time.
//!
//! Field operands are resolved to payload slots and class checks to one class id, so the
//! hot path of `getfield`, `putfield`, `cas` and `xadd` is the raw operation behind one
//! compare. Layout decision: an instance's reference fields come first (slots
//! `0..nrefs`), then its int fields, so the collector scans a prefix.
//!
//! [`translate_by_name`] is the comparison form (`marvin run --no-resolve`): the four field
//! instructions keep their operand as a class and field *name* and resolve it on every
//! execution, as a reflective field updater does (see [`resolve_by_name`]): a hashed lookup
//! of the class and of the field in [`NameTables`], a check of the field's type, then (in
//! the interpreter) the holder's class and, for a reference field, the new value. It does
//! what such an updater really does per call and nothing more; `docs/observability.md`
//! lists each step and why.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use marvin_runtime::ObjKind;

use super::operator::{Bin, Cond};
use crate::isa::{self, ElemKind, Instr, Program, Ty};

/// Class id stored in array headers (arrays are not instances of any MASM class).
pub const ARRAY_CLASS: u32 = u32::MAX;

/// A resolved field: the class to check and the payload slot (8 bytes, so that a
/// superinstruction can carry one next to its other operands and still fit in an `Op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub class: u32,
    pub slot: u32,
}

/// The slots of a register op `d = a OP b`, and how many positions to skip after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R3 {
    pub d: u16,
    pub a: u16,
    pub b: u16,
    pub skip: u8,
}

/// The slots and constant of a register op `d = a OP k`, and how many positions to skip
/// after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RI {
    pub d: u16,
    pub a: u16,
    pub k: i32,
    pub skip: u8,
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
    NAlloc,
    NFree,
    NLoad,
    NStore,
    NCheck,
    // Superinstructions (see [`super::fuse`]); each stands for the run in its doc.
    // Calls and returns: a call ends its run (the frame stands at the `call`), a return
    // ends its method.
    /// `load a; call m`
    LoadCall(u32, u32),
    /// `load a; load b; call m`
    LoadLoadCall(u32, u32, u32),
    /// `push k; call m`
    ConstCall(i64, u32),
    /// `load a; push k; add; call m` (`sub` as an add of `-k`): a recursion's step,
    /// `fib(n - 1)`
    LoadAddConstCall(u32, i64, u32),
    /// `load a; ret`
    RetLocal(u32),
    /// `push k; ret`
    RetConst(i64),
    /// `OP; ret`
    BinRet(Bin),
    /// `load a; load b`
    LoadLoad(u32, u32),
    /// `push k; OP`
    BinConst(Bin, i64),
    /// `push k; OP; store a`
    BinConstStore(Bin, i64, u32),
    /// `load a; OP`
    BinLocal(Bin, u32),
    /// `OP; store d`
    BinStore(Bin, u32),
    /// `load a; push k; OP`
    LoadBinConst(u32, Bin, i64),
    /// `load a; load b; OP`
    LoadBinLocal(u32, Bin, u32),
    /// `load a; load b; add; store d`: the commonest three-address operation, apart from
    /// [`Op::LoadBinLocalStore`] so that it needs no second dispatch on the operation
    LoadAddLocalStore(u32, u32, u32),
    /// `load a; push k; OP; store d`
    LoadBinConstStore(u32, Bin, i64, u32),
    /// `load a; load b; OP; store d`: a register machine's three-address operation
    LoadBinLocalStore(u32, Bin, u32, u32),
    /// `load a; OP; store d`
    BinLocalStore(Bin, u32, u32),
    /// `load a; push k; OP1; load b; OP2`: `(a OP1 k) OP2 b`
    LoadBinConstBinLocal(u32, Bin, i64, Bin, u32),
    /// `load a; push k; mul; load b; add`: `a * k + b`, the step of a polynomial hash or
    /// a linear recurrence, apart from [`Op::LoadBinConstBinLocal`] so that it needs no
    /// dispatch on its two operations
    LoadMulAddLocal(u32, i64, u32),
    /// `push k1; OP1; push k2; OP2; store d`
    BinConst2Store(Bin, i64, Bin, i64, u32),
    /// `load a; push k; add; store a` (`sub` as an increment by `-k`)
    IncLocal(u32, i64),
    /// `load a; push k; add; store a; jmp t`
    IncJmp(u32, i64, u32),
    /// `CMP; jnz/jz t`
    BrCmp(Cond, u32),
    /// `load a; push k; CMP; jnz/jz t`, going to `t` when taken and to `fall` otherwise
    /// (the next position where the run is, the run's own next position where a `jmp`
    /// took a copy of it)
    BrLocalConst {
        a: u32,
        k: i64,
        c: Cond,
        t: u32,
        fall: u32,
    },
    /// `load a; load b; CMP; jnz/jz t`, going to `t` or `fall` as [`Op::BrLocalConst`]
    BrLocalLocal {
        a: u32,
        b: u32,
        c: Cond,
        t: u32,
        fall: u32,
    },
    /// `load a; push inc; add; store a` and then [`Op::BrLocalConst`] on `a` (following
    /// it or reached through a `jmp`): the increment and test that close a loop
    IncBrConst {
        a: u32,
        inc: i32,
        k: i32,
        c: Cond,
        t: u32,
        fall: u32,
    },
    /// `load a; push inc; add; store a` and then [`Op::BrLocalLocal`] on `a`
    IncBrLocal {
        a: u32,
        inc: i32,
        b: u32,
        c: Cond,
        t: u32,
        fall: u32,
    },
    /// `load a; load b; add; store a` followed by [`Op::IncBrConst`] on `i`: the sum and
    /// the counted loop's step and test of a summing loop, one dispatch per iteration
    /// (locals below 2^16 and a step within `i16`, so that the op stays three words)
    AddIncBr {
        a: u16,
        b: u16,
        i: u16,
        inc: i16,
        k: i32,
        c: Cond,
        t: u32,
        fall: u32,
    },
    /// `load a; load o; getfield C.f; CMP; jnz/jz t`: a loop bound held in a field
    BrLocalField {
        a: u32,
        o: u32,
        s: Slot,
        c: Cond,
        t: u32,
    },
    /// `load arr; load i; aload`
    ALoadLocal(u32, u32, Ty),
    /// `load arr; load i; aload; jnz t` (`jz` when the flag is false), an int element
    ALoadLocalBr(u32, u32, bool, u32),
    /// `load arr; load i; push k; astore`, an int element
    AStoreLocalConst(u32, u32, i64),
    /// `load a; getfield C.f`
    LoadGetField(u32, Slot),
    /// `load a; getfield C.f; store b`: the read half of a read-modify-cas loop
    LoadGetFieldStore(u32, Slot, u32),
    /// `cas C.f; jnz/jz t` (`jz` when the flag is false): the retry test of a cas loop,
    /// on an int field (a ref field's cas also updates a stub's copy and is not fused)
    CasBr(Slot, bool, u32),
    /// `load a; push k; xadd C.f`, and `pop` after it when the flag is set
    LoadXadd(u32, i32, Slot, bool),
    /// `load o1; load o2; getfield C.f`: a receiver and a field read (the start of
    /// `o1.g = o2.f ...`)
    LoadLoadGetField(u32, u32, Slot),
    /// `load o; getfield C.g; OP; putfield D.f`: an int field written with the value under
    /// it combined with a field read (`OP` one that cannot fail)
    LoadGetFieldBinPutField(u32, Slot, Bin, Slot),
    /// `load b; OP; putfield C.f`: an int field written with the value under it combined
    /// with a local (`OP` one that cannot fail)
    LoadBinPutField(u32, Bin, Slot),
    /// `load o; load o; getfield C.f; load b; OP; putfield C.f`: `o.f = o.f OP b` on an int
    /// field in one dispatch (`OP` one that cannot fail)
    FieldBinLocal(u32, Slot, Bin, u32),
    /// `load a; push k; mul; load b; add; push m; rem|div; store d`: `d = (a * k + b) rem m`
    /// (or `/ m`), a polynomial hash's or a linear congruential generator's step in one
    /// dispatch, the division a multiply by `magic` (see [`super::divconst`]); `m` from 2 to
    /// `i32::MAX`, locals below 2^16, the shift in the low six bits of `shift_rem` and bit
    /// 7 set for `rem`, so that the op stays three words
    LoadMulAddDivStore {
        a: u16,
        b: u16,
        d: u16,
        shift_rem: u8,
        k: i32,
        m: i32,
        magic: i64,
    },
    /// `push k; div` (`rem` when the flag is set) for a constant `k` of 2 or more, as a
    /// multiply by `magic` and a shift (see [`super::divconst`])
    DivConst {
        k: i64,
        magic: i64,
        shift: u8,
        rem: bool,
    },
    /// `push k; div|rem; store d`, as [`Op::DivConst`]
    DivConstStore {
        k: i64,
        magic: i64,
        shift: u8,
        rem: bool,
        d: u32,
    },
    // Register ops (made by [`super::regs`]): every operand is a slot of the running
    // frame, a local or an operand-stack entry at the depth the verifier proves for its
    // position, so a run of stack instructions becomes a few ops that never move the stack
    // pointer. The ops of a run sit at the run's first positions; the last continues
    // `skip` positions further, past the ones the run does not occupy. An op that can
    // fail reports the original position `at` of the instruction it stands for.
    /// `d = a OP b`, `OP` a comparison (the ops below need no dispatch on their operation)
    RegBin {
        op: Bin,
        r: R3,
        at: u32,
    },
    /// `d = a / b` and `d = a rem b`, failing at `at` when `b` is 0 (ops of their own, so
    /// that a remainder by a variable needs no dispatch on its operation)
    RegDiv {
        r: R3,
        at: u32,
    },
    RegRem {
        r: R3,
        at: u32,
    },
    /// `d = a + b`
    RegAdd(R3),
    RegSub(R3),
    RegMul(R3),
    RegAnd(R3),
    RegOr(R3),
    RegXor(R3),
    RegShl(R3),
    RegShr(R3),
    /// `d = a OP k`, an operation that cannot fail with this `k` (a comparison, or a
    /// division by a constant that is not a [`Op::RegDivConst`])
    RegBinI {
        op: Bin,
        r: RI,
    },
    /// `d = a + k` (and `sub`, as an add of `-k`)
    RegAddI(RI),
    RegMulI(RI),
    RegAndI(RI),
    RegOrI(RI),
    RegXorI(RI),
    RegShlI(RI),
    RegShrI(RI),
    /// `d = a / k` (`a rem k` when `rem`) for a constant `k` of 2 or more, as a multiply
    /// by `magic` (see [`super::divconst`])
    RegDivConst {
        d: u16,
        a: u16,
        k: i32,
        shift: u8,
        rem: bool,
        skip: u8,
        magic: i64,
    },
    /// `d = a`
    RegMov {
        d: u16,
        a: u16,
        skip: u8,
    },
    /// `d = k`
    RegMovI {
        d: u16,
        k: i64,
        skip: u8,
    },
    /// To `t` when `a CMP b`, else to `fall`
    RegBr {
        c: Cond,
        a: u16,
        b: u16,
        t: u32,
        fall: u32,
    },
    /// To `t` when `a CMP k`, else to `fall`
    RegBrI {
        c: Cond,
        a: u16,
        k: i32,
        t: u32,
        fall: u32,
    },
    /// To `t` when `a` is non-zero (`on`) or zero, else to `fall`
    RegBrNz {
        a: u16,
        on: bool,
        t: u32,
        fall: u32,
    },
    /// `d = arr[i + off]` as type `ty`
    RegALoad {
        d: u16,
        arr: u16,
        i: u16,
        off: i16,
        ty: Ty,
        skip: u8,
        at: u32,
    },
    /// `arr[i + off] = v`, `v` of type `ty`
    RegAStore {
        arr: u16,
        i: u16,
        off: i16,
        v: u16,
        ty: Ty,
        skip: u8,
        at: u32,
    },
    /// `arr[i + off] = k`, an int element
    RegAStoreI {
        arr: u16,
        i: u16,
        off: i16,
        k: i32,
        skip: u8,
        at: u32,
    },
    /// `d = alen arr`
    RegALen {
        d: u16,
        arr: u16,
        skip: u8,
        at: u32,
    },
    /// `d = o.f`
    RegGetField {
        d: u16,
        o: u16,
        s: Slot,
        skip: u8,
        at: u32,
    },
    /// `o.f = v` (through the reference store when `is_ref`)
    RegPutField {
        o: u16,
        v: u16,
        s: Slot,
        is_ref: bool,
        skip: u8,
        at: u32,
    },
}

impl Op {
    /// How many original instructions this op covers when it falls through (1 unless
    /// fused); the ops that name both successors count the run before their test.
    pub fn covers(self) -> usize {
        match self {
            Op::LoadLoad(..)
            | Op::BinConst(..)
            | Op::BinLocal(..)
            | Op::BinStore(..)
            | Op::BrCmp(..)
            | Op::LoadGetField(..)
            | Op::CasBr(..)
            | Op::DivConst { .. }
            | Op::LoadCall(..)
            | Op::ConstCall(..)
            | Op::RetLocal(..)
            | Op::RetConst(..)
            | Op::BinRet(..) => 2,
            Op::LoadBinConst(..)
            | Op::LoadBinLocal(..)
            | Op::BinConstStore(..)
            | Op::LoadGetFieldStore(..)
            | Op::ALoadLocal(..)
            | Op::BinLocalStore(..)
            | Op::LoadLoadGetField(..)
            | Op::LoadBinPutField(..)
            | Op::LoadLoadCall(..)
            | Op::DivConstStore { .. } => 3,
            Op::LoadXadd(.., discard) => 3 + discard as usize,
            Op::IncLocal(..)
            | Op::LoadAddConstCall(..)
            | Op::LoadGetFieldBinPutField(..)
            | Op::LoadBinConstStore(..)
            | Op::LoadBinLocalStore(..)
            | Op::LoadAddLocalStore(..)
            | Op::BrLocalConst { .. }
            | Op::BrLocalLocal { .. }
            | Op::IncBrConst { .. }
            | Op::IncBrLocal { .. }
            | Op::ALoadLocalBr(..)
            | Op::AStoreLocalConst(..) => 4,
            Op::IncJmp(..)
            | Op::BrLocalField { .. }
            | Op::LoadBinConstBinLocal(..)
            | Op::LoadMulAddLocal(..)
            | Op::BinConst2Store(..) => 5,
            Op::FieldBinLocal(..) => 6,
            Op::AddIncBr { .. } | Op::LoadMulAddDivStore { .. } => 8,
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
        Instr::NAlloc => Op::NAlloc,
        Instr::NFree => Op::NFree,
        Instr::NLoad => Op::NLoad,
        Instr::NStore => Op::NStore,
        Instr::NCheck => Op::NCheck,
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

/// The runtime's name tables, as a reflective lookup sees them: classes by name, and each
/// class's fields by name. Built once at load; by-name execution looks names up here on
/// every execution.
///
/// Both levels are hash tables, as in a runtime that holds thousands of classes (a
/// linear scan over a one-class program would make the reflective path look cheaper than
/// it is anywhere real). They hash with [`NameHash`], the cheap string hash the Android
/// runtime's class table uses, not the standard library's keyed SipHash, which would cost
/// the lookup several times more: the reflective path should pay for a real lookup, not
/// for our choice of hash. Chosen collisions could only slow a hostile program's own
/// by-name run, and the tables exist only in that mode.
#[derive(Debug, Default)]
pub struct NameTables {
    classes: HashMap<String, u32, NameHash>,
    /// Per class, in class order: field name -> (payload slot, declared type).
    fields: Vec<HashMap<String, (u32, Ty), NameHash>>,
}

/// The string hash of the Android runtime's class and field tables
/// (`ComputeModifiedUtf8Hash`, as Java's `String.hashCode`): `h = 31 h + b` over the
/// bytes of the name.
#[derive(Clone, Copy, Debug, Default)]
pub struct NameHash;

impl BuildHasher for NameHash {
    type Hasher = NameHasher;
    fn build_hasher(&self) -> NameHasher {
        NameHasher(0)
    }
}

/// The running state of [`NameHash`].
#[derive(Clone, Copy, Debug)]
pub struct NameHasher(u64);

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.wrapping_mul(31).wrapping_add(b as u64);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl NameTables {
    pub fn new(p: &Program, layouts: &[ClassLayout]) -> NameTables {
        let classes = p
            .classes
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.clone(), i as u32))
            .collect();
        let fields = p
            .classes
            .iter()
            .zip(layouts)
            .map(|(c, l)| {
                c.fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (f.name.clone(), (l.slot_of[i], f.ty)))
                    .collect()
            })
            .collect();
        NameTables { classes, fields }
    }
}

/// Resolves the field `f` names the way a reflective field updater does on each call:
/// looks the class up by its name in the class table, the field by its name in that
/// class's field table, and checks the field's declared type against `use_`. The caller
/// then checks the holder object's class against the result (`isInstance`) and, for a
/// reference field, the new value (`valueCheck`). Errors are runtime error messages.
#[inline(never)]
pub fn resolve_by_name(
    p: &Program,
    names: &NameTables,
    f: isa::FieldRef,
    use_: FieldUse,
) -> Result<NamedField, String> {
    let wanted = &p.classes[f.class as usize];
    let field_name = &wanted.fields[f.field as usize].name;
    let class = *names
        .classes
        .get(wanted.name.as_str())
        .ok_or_else(|| format!("no class {}", wanted.name))?;
    let &(slot, ty) = names.fields[class as usize]
        .get(field_name.as_str())
        .ok_or_else(|| format!("no field {}.{field_name}", wanted.name))?;
    if use_ == FieldUse::Int && ty != Ty::Int {
        return Err(format!("field {}.{field_name} is not an int", wanted.name));
    }
    Ok(NamedField {
        slot: Slot { class, slot },
        is_ref: ty == Ty::Ref,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_CLASSES: &str = "\
.class A
  .field x int
  .field next ref
  .field y int
.end
.class B
  .field y ref
  .field x int
.end
.method main args=0 locals=0
  push 0
  ret
.end
";

    #[test]
    fn by_name_resolution_finds_the_slots_resolution_at_load_finds() {
        let p = crate::load::load_bytes("t.masm", TWO_CLASSES.as_bytes()).expect("loads");
        let layouts = layouts(&p);
        let names = NameTables::new(&p, &layouts);
        for (c, class) in p.classes.iter().enumerate() {
            for (f, field) in class.fields.iter().enumerate() {
                let fr = isa::FieldRef {
                    class: c as u32,
                    field: f as u32,
                };
                let at_load = match translate(&p, &layouts, Instr::GetField(fr)) {
                    Op::GetField(s) => s,
                    other => panic!("getfield translated to {other:?}"),
                };
                let named = resolve_by_name(&p, &names, fr, FieldUse::Any).expect("resolves");
                assert_eq!(named.slot, at_load, "{}.{}", class.name, field.name);
                assert_eq!(named.is_ref, field.ty == Ty::Ref);
                let as_int = resolve_by_name(&p, &names, fr, FieldUse::Int);
                assert_eq!(as_int.is_ok(), field.ty == Ty::Int, "{as_int:?}");
            }
        }
        // Reference fields come first in the payload.
        assert_eq!(layouts[0].slot_of, vec![1, 0, 2]);
        assert_eq!(layouts[1].slot_of, vec![0, 1]);
    }

    #[test]
    fn an_op_stays_three_words() {
        // Every dispatch copies one op: the fused field ops must not widen them all.
        assert!(
            std::mem::size_of::<Op>() <= 24,
            "{}",
            std::mem::size_of::<Op>()
        );
    }

    #[test]
    fn name_hash_is_the_java_string_hash() {
        let mut h = NameHash.build_hasher();
        h.write(b"value");
        // "value".hashCode() in Java.
        assert_eq!(h.finish(), 111_972_721);
    }
}
