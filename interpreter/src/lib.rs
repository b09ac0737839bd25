//! MASM: the assembler ([`asm`]), the binary form ([`binary`]), the verifier ([`verify`]),
//! the disassembler ([`disasm`]) and the executor ([`exec`]). The instruction set is
//! defined once, in [`isa`].

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its error
// handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod asm;
pub mod binary;
pub mod diag;
pub mod disasm;
pub mod exec;
pub mod fuzzing;
pub mod isa;
mod lexer;
pub mod link;
pub mod load;
mod mnemonic;
pub mod verify;

pub use diag::{Diag, Diagnostics};
pub use link::{parse_define, DefineError};
