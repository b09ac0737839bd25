//! The binary (`.mvb`) form of a program: encoding and fully bounds-checked decoding.
//!
//! Layout (all fixed-width integers little-endian):
//!
//! | bytes | content |
//! |---|---|
//! | 0..4 | [`MAGIC`] `7F 4D 56 42` (`\x7fMVB`) |
//! | 4..6 | format [`VERSION`] (u16) |
//! | 6..8 | reserved, 0 (u16) |
//! | 8..16 | FNV-1a 64 checksum of the payload (u64) |
//! | 16..20 | payload length in bytes (u32) |
//! | 20.. | payload |
//!
//! The payload is four sections in order; `uN` is an unsigned LEB128 varint that must fit
//! in N bits, `iN` a zigzag varint, `str` a `u32` byte length then UTF-8 bytes, and a
//! `name` a `str` that is a valid MASM name:
//!
//! - strings: `u32` count, then each `str`;
//! - constants: `u32` count, then each `name`, `i64` value;
//! - classes: `u32` count, then each `name`, `u32` line, `u32` field count, then each field
//!   `name` and one type byte (0 int, 1 ref);
//! - methods: `u32` count, then each `name`, `u32` line, `u32` args, `u32` locals, `u32`
//!   instruction count, then each instruction: one opcode byte (the [`Instr`] variants
//!   numbered in declaration order, `Push` = 0 … `Halt` = 60), its operands (`i64` for
//!   `Push`; `u32` ids, slots and targets; `u32` class and `u32` field for field operands;
//!   one byte for an element kind (0 int, 1 byte, 2 ref) or an `aload`/`astore` type
//!   (0 int, 1 ref, 2 any)), then its `u32` source line.
//!
//! `push NAME` stays [`Instr::PushConst`] so `-D` overrides apply to binary files too.
//! Decoding trusts nothing: every read is bounds-checked, every count is capped by the
//! bytes that remain (each element takes at least one byte), memory is reserved only as
//! elements actually decode, and trailing bytes are an error. Ids and branch targets are
//! checked later by the verifier, exactly as for text.

use crate::diag::Diagnostics;
use crate::isa::{Class, Const, ElemKind, Field, FieldRef, Instr, Method, Program, Ty};
use crate::lexer::is_name;

/// The first four bytes of every binary program.
pub const MAGIC: [u8; 4] = [0x7f, b'M', b'V', b'B'];
/// The format version this build writes and reads.
pub const VERSION: u16 = 1;
const HEADER_LEN: usize = 20;
/// Most elements reserved ahead of decoding them: a count may lie, so vectors grow only
/// as elements actually decode.
const PREALLOC: usize = 1024;

/// True when `bytes` starts with [`MAGIC`].
pub fn is_binary(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

/// The binary form's checksum of a payload: FNV-1a, 64-bit.
pub fn checksum(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Encodes a program (linked or not; `aload`/`astore` types are kept as they are).
pub fn encode(p: &Program) -> Vec<u8> {
    let mut w = Writer(Vec::new());
    w.count(p.strings.len());
    for s in &p.strings {
        w.str(s);
    }
    w.count(p.consts.len());
    for c in &p.consts {
        w.str(&c.name);
        w.i64(c.value);
    }
    w.count(p.classes.len());
    for c in &p.classes {
        w.str(&c.name);
        w.u32(c.line);
        w.count(c.fields.len());
        for f in &c.fields {
            w.str(&f.name);
            w.byte(ty_code(f.ty));
        }
    }
    w.count(p.methods.len());
    for m in &p.methods {
        w.str(&m.name);
        w.u32(m.line);
        w.u32(m.args);
        w.u32(m.locals);
        w.count(m.code.len());
        for (pc, instr) in m.code.iter().enumerate() {
            w.instr(instr);
            w.u32(m.lines.get(pc).copied().unwrap_or(0));
        }
    }
    let payload = w.0;
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&checksum(&payload).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// Decodes a binary program; `file` names it in diagnostics (`FILE:0: ...`).
pub fn decode(file: &str, bytes: &[u8]) -> Result<Program, Diagnostics> {
    decode_inner(file, bytes).map_err(|message| Diagnostics::one(file, 0, message))
}

fn decode_inner(file: &str, bytes: &[u8]) -> Result<Program, String> {
    if !is_binary(bytes) {
        return Err("not a marvin binary program (bad magic number)".into());
    }
    if bytes.len() < HEADER_LEN {
        return Err(format!(
            "truncated binary program: {} bytes, header needs {HEADER_LEN}",
            bytes.len()
        ));
    }
    let le16 = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let version = le16(4);
    if version != VERSION {
        return Err(format!(
            "unsupported binary format version {version} (this build reads {VERSION})"
        ));
    }
    if le16(6) != 0 {
        return Err("corrupt binary program: reserved header bytes are not zero".into());
    }
    let mut sum = [0u8; 8];
    sum.copy_from_slice(&bytes[8..16]);
    let mut len = [0u8; 4];
    len.copy_from_slice(&bytes[16..20]);
    let payload = &bytes[HEADER_LEN..];
    let declared = u32::from_le_bytes(len) as usize;
    if declared != payload.len() {
        return Err(format!(
            "truncated or corrupt binary program: header says {declared} payload bytes, file has {}",
            payload.len()
        ));
    }
    if checksum(payload) != u64::from_le_bytes(sum) {
        return Err("corrupt binary program: checksum mismatch".into());
    }
    let mut r = Reader {
        bytes: payload,
        pos: 0,
    };
    let p = r.program(file)?;
    if r.pos != payload.len() {
        return Err(format!(
            "corrupt binary program: {} unexpected trailing bytes",
            payload.len() - r.pos
        ));
    }
    Ok(p)
}

fn ty_code(ty: Ty) -> u8 {
    match ty {
        Ty::Int => 0,
        Ty::Ref => 1,
        Ty::Any => 2,
    }
}

fn elem_code(kind: ElemKind) -> u8 {
    match kind {
        ElemKind::Int => 0,
        ElemKind::Byte => 1,
        ElemKind::Ref => 2,
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn byte(&mut self, b: u8) {
        self.0.push(b);
    }

    fn u64(&mut self, mut v: u64) {
        loop {
            let low = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                return self.0.push(low);
            }
            self.0.push(low | 0x80);
        }
    }

    fn u32(&mut self, v: u32) {
        self.u64(v.into());
    }

    fn count(&mut self, n: usize) {
        self.u64(n as u64);
    }

    fn i64(&mut self, v: i64) {
        self.u64(((v << 1) ^ (v >> 63)) as u64);
    }

    fn str(&mut self, s: &str) {
        self.count(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }

    fn field(&mut self, f: &FieldRef) {
        self.u32(f.class);
        self.u32(f.field);
    }

    fn instr(&mut self, instr: &Instr) {
        use Instr as I;
        let (op, rest): (u8, &dyn Fn(&mut Writer)) = match instr {
            I::Push(n) => (0, &|w| w.i64(*n)),
            I::PushConst(id) => (1, &|w| w.u32(*id)),
            I::Null => (2, &|_| {}),
            I::Load(i) => (3, &|w| w.u32(*i)),
            I::Store(i) => (4, &|w| w.u32(*i)),
            I::Pop => (5, &|_| {}),
            I::Dup => (6, &|_| {}),
            I::Swap => (7, &|_| {}),
            I::Add => (8, &|_| {}),
            I::Sub => (9, &|_| {}),
            I::Mul => (10, &|_| {}),
            I::Div => (11, &|_| {}),
            I::Rem => (12, &|_| {}),
            I::And => (13, &|_| {}),
            I::Or => (14, &|_| {}),
            I::Xor => (15, &|_| {}),
            I::Shl => (16, &|_| {}),
            I::Shr => (17, &|_| {}),
            I::Neg => (18, &|_| {}),
            I::Lt => (19, &|_| {}),
            I::Le => (20, &|_| {}),
            I::Gt => (21, &|_| {}),
            I::Ge => (22, &|_| {}),
            I::Eq => (23, &|_| {}),
            I::Ne => (24, &|_| {}),
            I::RefEq => (25, &|_| {}),
            I::Jmp(t) => (26, &|w| w.u32(*t)),
            I::Jz(t) => (27, &|w| w.u32(*t)),
            I::Jnz(t) => (28, &|w| w.u32(*t)),
            I::Jnull(t) => (29, &|w| w.u32(*t)),
            I::Jnonnull(t) => (30, &|w| w.u32(*t)),
            I::Call(m) => (31, &|w| w.u32(*m)),
            I::Ret => (32, &|_| {}),
            I::New(c) => (33, &|w| w.u32(*c)),
            I::GetField(f) => (34, &|w| w.field(f)),
            I::PutField(f) => (35, &|w| w.field(f)),
            I::NewArray(k) => (36, &|w| w.byte(elem_code(*k))),
            I::ALoad(t) => (37, &|w| w.byte(ty_code(*t))),
            I::AStore(t) => (38, &|w| w.byte(ty_code(*t))),
            I::ALen => (39, &|_| {}),
            I::Cas(f) => (40, &|w| w.field(f)),
            I::Xadd(f) => (41, &|w| w.field(f)),
            I::MonitorEnter => (42, &|_| {}),
            I::MonitorExit => (43, &|_| {}),
            I::Send(m) => (44, &|w| w.u32(*m)),
            I::SendFront(m) => (45, &|w| w.u32(*m)),
            I::Remove(m) => (46, &|w| w.u32(*m)),
            I::Has(m) => (47, &|w| w.u32(*m)),
            I::Quit => (48, &|_| {}),
            I::Spawn(m) => (49, &|w| w.u32(*m)),
            I::Sleep => (50, &|_| {}),
            I::Print => (51, &|_| {}),
            I::PrintC => (52, &|_| {}),
            I::PrintS(s) => (53, &|w| w.u32(*s)),
            I::Time => (54, &|_| {}),
            I::Mark(s) => (55, &|w| w.u32(*s)),
            I::CpuTime => (56, &|_| {}),
            I::UserTime => (57, &|_| {}),
            I::Gc => (58, &|_| {}),
            I::Assert => (59, &|_| {}),
            I::Halt => (60, &|_| {}),
            I::NAlloc => (61, &|_| {}),
            I::NFree => (62, &|_| {}),
            I::NLoad => (63, &|_| {}),
            I::NStore => (64, &|_| {}),
            I::NCheck => (65, &|_| {}),
        };
        self.byte(op);
        rest(self);
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    #[cold]
    fn corrupt(&self, what: &str) -> String {
        format!(
            "corrupt binary program: {what} at payload byte {}",
            self.pos
        )
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| self.corrupt("unexpected end"))?;
        self.pos += 1;
        Ok(b)
    }

    fn u64(&mut self) -> Result<u64, String> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(self.corrupt("varint overflows 64 bits"));
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.corrupt("varint longer than 10 bytes"))
    }

    fn u32(&mut self) -> Result<u32, String> {
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| self.corrupt("value does not fit 32 bits"))
    }

    fn i64(&mut self) -> Result<i64, String> {
        let v = self.u64()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// A count of elements that each take at least one byte.
    fn count(&mut self, what: &str) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n > self.remaining() {
            return Err(self.corrupt(&format!("{what} count {n} exceeds the bytes remaining")));
        }
        Ok(n)
    }

    fn str(&mut self) -> Result<String, String> {
        let n = self.count("string length")?;
        let raw = &self.bytes[self.pos..self.pos + n];
        let s = std::str::from_utf8(raw).map_err(|_| self.corrupt("string is not UTF-8"))?;
        self.pos += n;
        Ok(s.to_owned())
    }

    fn name(&mut self) -> Result<String, String> {
        let s = self.str()?;
        if !is_name(&s) {
            return Err(self.corrupt(&format!("bad name {s:?}")));
        }
        Ok(s)
    }

    fn ty(&mut self) -> Result<Ty, String> {
        match self.byte()? {
            0 => Ok(Ty::Int),
            1 => Ok(Ty::Ref),
            2 => Ok(Ty::Any),
            _ => Err(self.corrupt("bad type code")),
        }
    }

    fn field(&mut self) -> Result<FieldRef, String> {
        Ok(FieldRef {
            class: self.u32()?,
            field: self.u32()?,
        })
    }

    fn program(&mut self, file: &str) -> Result<Program, String> {
        let n = self.count("string")?;
        let mut strings = Vec::with_capacity(n.min(PREALLOC));
        for _ in 0..n {
            strings.push(self.str()?);
        }
        let n = self.count("constant")?;
        let mut consts = Vec::with_capacity(n.min(PREALLOC));
        for _ in 0..n {
            let name = self.name()?;
            consts.push(Const {
                name,
                value: self.i64()?,
            });
        }
        let n = self.count("class")?;
        let mut classes = Vec::with_capacity(n.min(PREALLOC));
        for _ in 0..n {
            classes.push(self.class()?);
        }
        let n = self.count("method")?;
        let mut methods = Vec::with_capacity(n.min(PREALLOC));
        for _ in 0..n {
            methods.push(self.method()?);
        }
        Ok(Program {
            file: file.to_owned(),
            classes,
            methods,
            strings,
            consts,
        })
    }

    fn class(&mut self) -> Result<Class, String> {
        let name = self.name()?;
        let line = self.u32()?;
        let n = self.count("field")?;
        let mut fields = Vec::with_capacity(n.min(PREALLOC));
        for _ in 0..n {
            let name = self.name()?;
            let ty = match self.ty()? {
                Ty::Any => return Err(self.corrupt("field type must be int or ref")),
                ty => ty,
            };
            fields.push(Field { name, ty });
        }
        Ok(Class { name, fields, line })
    }

    fn method(&mut self) -> Result<Method, String> {
        let name = self.name()?;
        let line = self.u32()?;
        let args = self.u32()?;
        let locals = self.u32()?;
        let n = self.count("instruction")?;
        let mut code = Vec::with_capacity(n.min(PREALLOC));
        let mut lines = Vec::with_capacity(n.min(PREALLOC));
        for _ in 0..n {
            code.push(self.instr()?);
            lines.push(self.u32()?);
        }
        Ok(Method {
            name,
            args,
            locals,
            code,
            lines,
            line,
        })
    }

    fn instr(&mut self) -> Result<Instr, String> {
        use Instr as I;
        Ok(match self.byte()? {
            0 => I::Push(self.i64()?),
            1 => I::PushConst(self.u32()?),
            2 => I::Null,
            3 => I::Load(self.u32()?),
            4 => I::Store(self.u32()?),
            5 => I::Pop,
            6 => I::Dup,
            7 => I::Swap,
            8 => I::Add,
            9 => I::Sub,
            10 => I::Mul,
            11 => I::Div,
            12 => I::Rem,
            13 => I::And,
            14 => I::Or,
            15 => I::Xor,
            16 => I::Shl,
            17 => I::Shr,
            18 => I::Neg,
            19 => I::Lt,
            20 => I::Le,
            21 => I::Gt,
            22 => I::Ge,
            23 => I::Eq,
            24 => I::Ne,
            25 => I::RefEq,
            26 => I::Jmp(self.u32()?),
            27 => I::Jz(self.u32()?),
            28 => I::Jnz(self.u32()?),
            29 => I::Jnull(self.u32()?),
            30 => I::Jnonnull(self.u32()?),
            31 => I::Call(self.u32()?),
            32 => I::Ret,
            33 => I::New(self.u32()?),
            34 => I::GetField(self.field()?),
            35 => I::PutField(self.field()?),
            36 => I::NewArray(match self.byte()? {
                0 => ElemKind::Int,
                1 => ElemKind::Byte,
                2 => ElemKind::Ref,
                _ => return Err(self.corrupt("bad array element kind")),
            }),
            37 => I::ALoad(self.ty()?),
            38 => I::AStore(self.ty()?),
            39 => I::ALen,
            40 => I::Cas(self.field()?),
            41 => I::Xadd(self.field()?),
            42 => I::MonitorEnter,
            43 => I::MonitorExit,
            44 => I::Send(self.u32()?),
            45 => I::SendFront(self.u32()?),
            46 => I::Remove(self.u32()?),
            47 => I::Has(self.u32()?),
            48 => I::Quit,
            49 => I::Spawn(self.u32()?),
            50 => I::Sleep,
            51 => I::Print,
            52 => I::PrintC,
            53 => I::PrintS(self.u32()?),
            54 => I::Time,
            55 => I::Mark(self.u32()?),
            56 => I::CpuTime,
            57 => I::UserTime,
            58 => I::Gc,
            59 => I::Assert,
            60 => I::Halt,
            61 => I::NAlloc,
            62 => I::NFree,
            63 => I::NLoad,
            64 => I::NStore,
            65 => I::NCheck,
            _ => return Err(self.corrupt("unknown opcode")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_instr() -> Vec<Instr> {
        use Instr as I;
        let f = FieldRef {
            class: 3,
            field: 70000,
        };
        vec![
            I::Push(i64::MIN),
            I::Push(-1),
            I::Push(i64::MAX),
            I::PushConst(5),
            I::Null,
            I::Load(1),
            I::Store(300),
            I::Pop,
            I::Dup,
            I::Swap,
            I::Add,
            I::Sub,
            I::Mul,
            I::Div,
            I::Rem,
            I::And,
            I::Or,
            I::Xor,
            I::Shl,
            I::Shr,
            I::Neg,
            I::Lt,
            I::Le,
            I::Gt,
            I::Ge,
            I::Eq,
            I::Ne,
            I::RefEq,
            I::Jmp(1),
            I::Jz(2),
            I::Jnz(3),
            I::Jnull(4),
            I::Jnonnull(u32::MAX),
            I::Call(9),
            I::Ret,
            I::New(2),
            I::GetField(f),
            I::PutField(f),
            I::NewArray(ElemKind::Int),
            I::NewArray(ElemKind::Byte),
            I::NewArray(ElemKind::Ref),
            I::ALoad(Ty::Int),
            I::ALoad(Ty::Ref),
            I::ALoad(Ty::Any),
            I::AStore(Ty::Any),
            I::ALen,
            I::Cas(f),
            I::Xadd(f),
            I::MonitorEnter,
            I::MonitorExit,
            I::Send(1),
            I::SendFront(2),
            I::Remove(3),
            I::Has(4),
            I::Quit,
            I::Spawn(5),
            I::Sleep,
            I::Print,
            I::PrintC,
            I::PrintS(6),
            I::Time,
            I::Mark(7),
            I::CpuTime,
            I::UserTime,
            I::Gc,
            I::Assert,
            I::Halt,
            I::NAlloc,
            I::NFree,
            I::NLoad,
            I::NStore,
            I::NCheck,
        ]
    }

    #[test]
    fn every_instruction_round_trips() {
        let code = every_instr();
        let p = Program {
            file: "x.mvb".into(),
            strings: vec!["héllo\n".into(), String::new()],
            consts: vec![Const {
                name: "N".into(),
                value: -5,
            }],
            classes: vec![Class {
                name: "C".into(),
                line: 4,
                fields: vec![Field {
                    name: "f".into(),
                    ty: Ty::Ref,
                }],
            }],
            methods: vec![Method {
                name: "main".into(),
                args: 0,
                locals: 2,
                lines: (0..code.len() as u32).map(|l| l * 1000).collect(),
                code,
                line: 9,
            }],
        };
        let bytes = encode(&p);
        assert!(is_binary(&bytes));
        assert_eq!(decode("x.mvb", &bytes).unwrap(), p);
    }

    #[test]
    fn header_errors_are_clear() {
        let p = Program::default();
        let bytes = encode(&p);
        let msg = |b: &[u8]| decode("f.mvb", b).unwrap_err().to_string();
        assert!(msg(&bytes[..10]).contains("truncated"));
        assert!(msg(b"hello").contains("magic"));
        let mut v = bytes.clone();
        v[4] = 9;
        assert!(msg(&v).contains("version 9"));
        let mut v = bytes.clone();
        v.push(0);
        assert!(msg(&v).contains("payload bytes"));
        let mut v = bytes.clone();
        v[HEADER_LEN] ^= 1;
        assert!(msg(&v).contains("checksum"));
        assert!(msg(&v).starts_with("f.mvb:0: "));
    }

    #[test]
    fn huge_counts_are_refused_without_allocating() {
        // A valid header around a payload claiming u32::MAX strings.
        let payload = [0xff, 0xff, 0xff, 0xff, 0x0f];
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&VERSION.to_le_bytes());
        v.extend_from_slice(&[0, 0]);
        v.extend_from_slice(&checksum(&payload).to_le_bytes());
        v.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        v.extend_from_slice(&payload);
        let err = decode("f.mvb", &v).unwrap_err().to_string();
        assert!(err.contains("exceeds the bytes remaining"), "{err}");
    }
}
