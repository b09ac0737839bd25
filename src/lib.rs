//! The `marvin` package: the command line. It parses flags, calls the library crates
//! (the System in `marvin-system`, the machine side in `marvin-machine`, the benchmarks
//! in `marvin-sidebyside`) and prints what they return.
//!
//! # Surface
//!
//! Public modules: none. The binary runs [`main`]; the tests parse flags with [`Cli`]
//! into a [`Cmd`].

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its
// error handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod cli;

pub use cli::{main, Cli, Cmd};
