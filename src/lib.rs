//! The `marvin` package: the command line's building blocks and, with the experiments,
//! the System facade (many apps, one memory budget).

// Output goes through checked writes (`marvin::cli::output`, or `writeln!` with its error
// handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod bench;
pub mod cli;
pub mod host;
pub mod system;
