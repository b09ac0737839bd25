//! marvin's runtime layer: everything the layers above share about objects and threads.
//!
//! It owns the object model and header bits ([`header`]), the heap and its handles
//! ([`heap`]), the one access barrier ([`barrier`]), object monitors ([`monitor`]) and
//! fast-tracked lock holders ([`fasttrack`]), safepoints ([`safepoint`]), the reclaim
//! table shared with the reclaimer ([`reclaim_table`]), the DeliQueue message loop
//! ([`deliqueue`], [`looper`]) and its legacy baseline ([`legacy_queue`]), thread CPU
//! clocks ([`cpuclock`]), CPU accounting of the runtime's own work ([`cpuaccount`]) and
//! trace events ([`trace`]). Nothing here knows about the collector, the swap file or MASM:
//! where it needs them it defines a trait that a higher layer implements.

// The heap, barrier and stubs sit on memory maps and the mapped reclaim table, which
// loom cannot model; loom builds (`--cfg loom`) leave them out and check the lock-free
// parts (DeliQueue, the reclaim-table lock) on their own.
#[cfg(not(loom))]
pub mod barrier;
pub mod cpuaccount;
pub mod cpuclock;
pub mod deliqueue;
pub mod fasttrack;
pub mod header;
#[cfg(not(loom))]
pub mod heap;
pub mod legacy_queue;
pub mod looper;
pub mod monitor;
#[cfg(not(loom))]
pub mod object;
pub mod procfs;
pub mod reclaim_table;
pub mod safepoint;
#[cfg(not(loom))]
pub mod stub;
pub mod sync;
pub mod trace;
