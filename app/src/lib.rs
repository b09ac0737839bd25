//! What makes an app: one running MASM program with its heap, main looper, threads,
//! swapping, memory transitions, lifecycle script, statistics and trace. The executor
//! (`marvin-interpreter`) runs the app's code and reaches the app through
//! [`AppBinding`](marvin_interpreter::exec::AppBinding), implemented in [`binding`].
//!
//! - [`app`]: the [`App`] and its shared state; its fields are private, the System, the
//!   benchmarks and the command line use its operations;
//! - [`config`]: how to run one ([`RunConfig`], [`SwapSetup`]);
//! - [`launch`]: starting its threads ([`App::launch`] gives a [`Running`] app);
//! - [`command`]: the [`Command`]s that drive an app from outside (background,
//!   foreground, save, reclaim, gc, stop), with a one-line text form for a parent
//!   process to send;
//! - [`messages`]: the main looper (the app's message loop) and the message instructions;
//! - [`threads`]: background threads (`spawn`);
//! - [`foreground`]: the program's foreground message ([`App::resume`]) and its frames
//!   (`mark "frame"`), which time a launch;
//! - [`memory`]: swapping and the memory transitions (background, save, reclaim,
//!   foreground) and the heap task;
//! - [`lifecycle`]: scripted transitions (`--lifecycle bg@2s,...`);
//! - [`stats`]: what `--stats` reports; [`reach`]: where each kind of its memory is
//!   (resident, reclaimed, swapped); [`tracing`]: the app's part of a Perfetto trace;
//! - [`run`]: runs a program as one app to its end;
//! - [`error`]: why an app operation failed ([`AppError`]).

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its error
// handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod app;
pub mod binding;
pub mod chunks;
pub mod command;
pub mod config;
pub mod error;
pub mod foreground;
pub mod launch;
mod launch_state;
pub mod lifecycle;
pub mod memory;
pub mod messages;
mod pin;
pub mod reach;
pub mod run;
pub mod stats;
mod swapping;
pub mod threads;
pub mod tracing;

pub use app::{App, GcTotals};
pub use command::Command;
pub use config::{RunConfig, SwapSetup};
pub use error::AppError;
pub use foreground::{Frames, FOREGROUND_HANDLER, FRAME_MARK};
pub use launch::Running;
pub use memory::{SwapIo, SwapMode, Transition};
pub use run::{run, run_until, Outcome};
pub use stats::{KindBytes, RunStats};
pub use tracing::{AppTrace, TraceTarget};
