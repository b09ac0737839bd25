//! What every command-line layer of marvin shares: checked writes to the standard
//! streams (the [`out!`], [`outln!`] and [`errln!`] macros), the exit
//! statuses and the syntax of sizes (`64k`, `16m`, `1g`).
//!
//! # Surface
//!
//! Public modules: none. Everything is re-exported here:
//!
//! - writing: the [`out!`], [`outln!`] and [`errln!`] macros, [`write_stdout`],
//!   [`write_stderr`], [`OutputError`] (a failed write, with its exit status),
//!   [`shorten_tokens`] and [`MAX_TOKEN_BYTES`] (overlong tokens quoted by their ends);
//! - exit statuses: [`EXIT_FAILURE`], [`EXIT_USAGE`], [`EXIT_REJECTED`], [`EXIT_OUTPUT`],
//!   [`EXIT_BROKEN_PIPE`];
//! - sizes: [`parse_size`].

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its
// error handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod exit;
mod output;
mod size;

pub use exit::{EXIT_FAILURE, EXIT_REJECTED, EXIT_USAGE};
pub use output::{
    shorten_tokens, write_stderr, write_stdout, OutputError, EXIT_BROKEN_PIPE, EXIT_OUTPUT,
    MAX_TOKEN_BYTES,
};
pub use size::parse_size;
