//! MASM: the assembler ([`asm`]), the binary form ([`binary`]), the verifier ([`verify`]),
//! the disassembler ([`disasm`]) and the executor ([`exec`]). The instruction set is
//! defined once, in [`isa`].

pub mod asm;
pub mod binary;
pub mod disasm;
pub mod isa;
pub mod verify;
pub mod exec;
