//! The MASM instruction set and the in-memory form of a program.
//!
//! This module is the one definition of the ISA: the assembler (`asm`) and the binary
//! loader (`binary`) produce a [`Program`], the verifier (`verify`) checks it and fills in
//! the facts the executor needs ([`MethodInfo`], resolved [`Instr::ALoad`] types), and the
//! executor (`exec`) only runs it.

/// Index of a class in [`Program::classes`].
pub type ClassId = u32;
/// Index of a method in [`Program::methods`].
pub type MethodId = u32;
/// Index of a string in [`Program::strings`].
pub type StrId = u32;
/// Index of a named constant in [`Program::consts`].
pub type ConstId = u32;

/// The static type of a value: `int`, `ref`, or `Any` where the verifier leaves it open
/// (an argument that is never used, an array element that is only popped).
/// The collector scans a slot only when its type is `Ref`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ty {
    Int,
    Ref,
    #[default]
    Any,
}

/// The element kind of a `newarray`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemKind {
    Int,
    Byte,
    Ref,
}

/// A field operand `C.f`, resolved to the class and the field's index within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldRef {
    pub class: ClassId,
    pub field: u32,
}

/// One instruction. Branch targets are instruction indices within the method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Instr {
    Push(i64),
    /// `push NAME` of a `.const`; lowered to `Push` by [`Program::link`].
    PushConst(ConstId),
    Null,
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
    RefEq,
    Jmp(u32),
    Jz(u32),
    Jnz(u32),
    Jnull(u32),
    Jnonnull(u32),
    Call(MethodId),
    Ret,
    New(ClassId),
    GetField(FieldRef),
    PutField(FieldRef),
    NewArray(ElemKind),
    /// `aload`; the operand is the element type the verifier inferred from how the loaded
    /// value is used (`Any` when it is only popped). The assembler writes `Any`.
    ALoad(Ty),
    /// `astore`; the operand is the static type of the stored value.
    AStore(Ty),
    ALen,
    Cas(FieldRef),
    Xadd(FieldRef),
    MonitorEnter,
    MonitorExit,
    Send(MethodId),
    SendFront(MethodId),
    Remove(MethodId),
    Has(MethodId),
    Quit,
    Spawn(MethodId),
    Sleep,
    Print,
    PrintC,
    PrintS(StrId),
    Time,
    Mark(StrId),
    CpuTime,
    UserTime,
    Gc,
    Assert,
    Halt,
    /// `nalloc`: `int(bytes) int(seed) -> int(handle)`, a native buffer outside the heap.
    NAlloc,
    /// `nfree`: `int(handle) ->`.
    NFree,
    /// `nload`: `int(handle) int(index) -> int`.
    NLoad,
    /// `nstore`: `int(handle) int(index) int(value) ->`.
    NStore,
    /// `ncheck`: `int(handle) int(seed) -> int`, bytes that differ from the seed's fill.
    NCheck,
}

/// A field of a class: slot `i` of an instance holds field `i`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub ty: Ty,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    pub name: String,
    pub fields: Vec<Field>,
    /// Source line of the `.class` directive (0 when unknown, e.g. from a binary file).
    pub line: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Method {
    pub name: String,
    pub args: u32,
    pub locals: u32,
    pub code: Vec<Instr>,
    /// Source line of each instruction, parallel to `code`.
    pub lines: Vec<u32>,
    /// Source line of the `.method` directive.
    pub line: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Const {
    pub name: String,
    pub value: i64,
}

/// A whole program as loaded from text or binary, before or after verification.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    /// The file it was loaded from, used in `FILE:LINE` messages.
    pub file: String,
    pub classes: Vec<Class>,
    pub methods: Vec<Method>,
    pub strings: Vec<String>,
    pub consts: Vec<Const>,
}

/// What the verifier proves about one method; the executor and the collector rely on it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodInfo {
    /// Inferred type of each argument (`Any` when never used).
    pub arg_types: Vec<Ty>,
    /// Inferred return type (`Any` when it only ever returns values of open type).
    pub ret_type: Ty,
    /// Type of each local slot (arguments included); `Any` for slots never used.
    pub local_types: Vec<Ty>,
    /// Operand stack types at the entry of each instruction, bottom first
    /// (empty for unreachable instructions).
    pub stack_types: Vec<Vec<Ty>>,
    /// Largest operand stack depth anywhere in the method.
    pub max_stack: u32,
}

/// A program the verifier accepted: the program (constants lowered, `aload`/`astore`
/// typed) and one [`MethodInfo`] per method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedProgram {
    pub program: Program,
    pub info: Vec<MethodInfo>,
    /// The `main` method.
    pub entry: MethodId,
}

impl Program {
    /// Finds a method by name.
    pub fn method_id(&self, name: &str) -> Option<MethodId> {
        self.methods
            .iter()
            .position(|m| m.name == name)
            .map(|i| i as MethodId)
    }

    /// Finds a class by name.
    pub fn class_id(&self, name: &str) -> Option<ClassId> {
        self.classes
            .iter()
            .position(|c| c.name == name)
            .map(|i| i as ClassId)
    }
}
