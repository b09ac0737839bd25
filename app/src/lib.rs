//! What makes an app: one running MASM program with its heap, main looper, threads,
//! swapping, memory transitions, lifecycle script, statistics and trace. The executor
//! (`marvin-interpreter`) runs the app's code and reaches the app through
//! [`AppBinding`](marvin_interpreter::exec::AppBinding), implemented in [`binding`].
//!
//! - [`app`]: the [`App`] and its shared state;
//! - [`config`]: how to run one ([`RunConfig`], [`SwapSetup`]);
//! - [`messages`]: the main looper (the app's message loop) and the message instructions;
//! - [`threads`]: background threads (`spawn`);
//! - [`memory`]: swapping and the memory transitions (background, save, reclaim,
//!   foreground) and the heap task;
//! - [`lifecycle`]: scripted transitions (`--lifecycle bg@2s,...`);
//! - [`stats`]: what `--stats` reports; [`tracing`]: the app's part of a Perfetto trace;
//! - [`run`]: runs a program as one app to its end.

pub mod app;
pub mod binding;
pub mod config;
pub mod lifecycle;
pub mod memory;
pub mod messages;
pub mod run;
pub mod stats;
pub mod threads;
pub mod tracing;

pub use app::App;
pub use config::{RunConfig, SwapSetup};
pub use run::{run, Outcome};
pub use stats::RunStats;
pub use tracing::{AppTrace, TraceTarget};
