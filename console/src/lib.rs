//! What every command-line layer of marvin shares: checked writes to the standard
//! streams ([`output`]: the [`out!`], [`outln!`] and [`errln!`] macros), the exit
//! statuses ([`exit`]) and the syntax of sizes ([`size`]: `64k`, `16m`, `1g`).

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its
// error handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod exit;
pub mod output;
pub mod size;
