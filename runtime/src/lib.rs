//! marvin's runtime layer: everything the layers above share about objects and threads.
//!
//! It owns the object model and header bits ([`header`]), the heap and its handles
//! ([`heap`]), the one access barrier ([`barrier`]), object monitors ([`monitor`]),
//! safepoints ([`safepoint`]), the DeliQueue message loop ([`deliqueue`], [`looper`]) and
//! its legacy baseline ([`legacy_queue`]), thread CPU clocks ([`cpuclock`]) and trace
//! events ([`trace`]). Nothing here knows about the collector, the swap file or MASM:
//! where it needs them it defines a trait that a higher layer implements.

pub mod barrier;
pub mod cpuclock;
pub mod deliqueue;
pub mod header;
pub mod heap;
pub mod legacy_queue;
pub mod looper;
pub mod monitor;
pub mod object;
pub mod safepoint;
pub mod stub;
pub mod sync;
pub mod trace;
pub mod reclaim_table;
pub mod procfs;
