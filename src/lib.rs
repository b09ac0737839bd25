//! The `marvin` package: the command line. It parses flags, calls the library crates
//! (the System in `marvin-system`, the machine side in `marvin-machine`, the benchmarks
//! in `marvin-sidebyside`) and prints what they return.

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its
// error handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
