//! The process mode of the System: every app its own OS process inside one memory
//! cgroup that the kernel enforces, as on a phone.
//!
//! [`protocol`] is the control protocol on the app's standard streams,
//! [`app_process`] the child side (`marvin app`), [`launcher`] the System's handle on
//! one child, and [`run`] one policy's run, set up and taken down: its host of the one
//! run loop (`run_loop`) is in `host` (an app process started, told, observed),
//! its pressure step in `pressure` (the low-memory killer and Marvin's reclaimer), the
//! booking of apps that are gone in `ended`; `trace` its Perfetto trace with every
//! app process's own; `native_out` Marvin's reach into a background app's native
//! buffers (paged out to the kernel's swap). The machine-side pieces (the cgroup,
//! swap, the killer's mechanism, per-process counters) are in [`marvin_machine`].

pub mod app_process;
mod config;
mod death;
mod ended;
mod host;
mod kill_hold;
pub mod launcher;
mod native_out;
mod pressure;
pub mod protocol;
pub mod reclaimer;
pub mod run;
mod spawner;
mod trace;
mod zram;

pub use config::{ProcessConfig, SettleMode};
