//! The process mode of the System: every app its own OS process inside one memory
//! cgroup that the kernel enforces, as on a phone.
//!
//! [`protocol`] is the control protocol on the app's standard streams,
//! [`app_process`] the child side (`marvin app`), [`launcher`] the System's handle on
//! one child.

pub mod app_process;
pub mod launcher;
pub mod protocol;
