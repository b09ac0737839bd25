//! What makes an app: one running MASM program with its heap, main looper, threads,
//! swapping, memory transitions, lifecycle script, statistics and trace. The executor
//! (`marvin-interpreter`) runs the app's code and reaches the app through
//! `AppBinding` (`marvin_interpreter`), implemented in `binding.rs`.
//!
//! - `app.rs`: the [`App`] and its shared state; its fields are private, the System, the
//!   benchmarks and the command line use its operations;
//! - `config.rs`: how to run one ([`RunConfig`], [`SwapSetup`]);
//! - `launch.rs`: starting its threads ([`App::launch`] gives a [`Running`] app);
//! - `command.rs`: the [`Command`]s that drive an app from outside (background,
//!   foreground, save, reclaim, gc, stop), with a one-line text form for a parent
//!   process to send;
//! - `messages.rs`: the main looper (the app's message loop) and the message instructions;
//! - `threads.rs`: background threads (`spawn`);
//! - `foreground.rs`: the program's foreground message ([`App::resume`]) and its frames
//!   (`mark "frame"`), which time a launch;
//! - `memory.rs`: swapping and the memory transitions (background, save, reclaim,
//!   foreground) and the heap task;
//! - `lifecycle.rs`: scripted transitions (`--lifecycle bg@2s,...`);
//! - `stats.rs`: what `--stats` reports; [`reach`]: where each kind of its memory is
//!   (resident, reclaimed, swapped); `tracing.rs`: the app's part of a Perfetto trace;
//! - `chunks.rs`: the heap's cold chunks as `--stats` reports them ([`ChunkStats`]);
//! - `run.rs`: runs a program as one app to its end;
//! - `error.rs`: why an app operation failed ([`AppError`]).
//!
//! # Surface
//!
//! Public modules: `reach` (a set of calls read as `reach::measure`). The app ([`App`], [`GcTotals`], [`Running`], [`AppError`]), how
//! to run one ([`RunConfig`], [`SwapSetup`], [`run`], [`run_until`], [`Outcome`],
//! [`RunStats`], [`KindBytes`], [`ChunkStats`]), driving it ([`Command`], [`Lifecycle`]), its memory ([`SwapIo`],
//! [`SwapMode`], [`Transition`]), its frames ([`Frames`], [`FOREGROUND_HANDLER`],
//! [`FRAME_MARK`]) and its trace ([`AppTrace`], [`TraceTarget`]).

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its error
// handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod app;
mod binding;
mod chunks;
mod command;
mod config;
mod error;
mod foreground;
mod launch;
mod launch_state;
mod lifecycle;
mod memory;
mod messages;
mod pin;
pub mod reach;
mod run;
mod stats;
mod swapping;
mod threads;
mod tracing;

pub use app::{App, GcTotals};
pub use chunks::ChunkStats;
pub use command::Command;
pub use config::{RunConfig, SwapSetup};
pub use error::AppError;
pub use foreground::{Frames, FOREGROUND_HANDLER, FRAME_MARK};
pub use launch::Running;
pub use lifecycle::Lifecycle;
pub use memory::{SwapIo, SwapMode, Transition};
pub use run::{run, run_until, Outcome};
pub use stats::{KindBytes, RunStats};
pub use tracing::{AppTrace, TraceTarget};
