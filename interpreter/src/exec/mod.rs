//! The executor: runs a verified program, translated once at load time ([`loaded`],
//! [`op`], [`operator`], [`fuse`] with [`regs`], [`divconst`]), on interpreter threads
//! ([`interp`], its handlers in `ops`, its stack in [`stack`]) inside an app it reaches
//! through [`binding::AppBinding`]. What makes an app (its heap set-up, message loop,
//! swapping, lifecycle, statistics and traces) lives in the `marvin-app` crate.

pub mod binding;
pub mod divconst;
pub mod fuse;
pub mod interp;
pub mod loaded;
pub mod op;
pub mod operator;
mod ops;
pub mod regs;
pub mod stack;
pub mod trap;

pub use binding::{AppBinding, Post, PostAt};
pub use interp::Thread;
pub use loaded::Loaded;
pub use trap::{Fault, Trap};
