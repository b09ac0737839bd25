//! marvin's runtime layer: everything the layers above share about objects and threads.
//!
//! It owns the object model and header bits ([`header`]), the heap and its handles
//! ([`heap`]), the one access barrier ([`barrier`]), object monitors ([`monitor`]) and
//! fast-tracked lock holders ([`fasttrack`]), safepoints ([`safepoint`]), the reclaim
//! table shared with the reclaimer ([`reclaim_table`]), memory another process can
//! reclaim ([`memfd`]), buffers outside the heap ([`native`]), thread CPU clocks
//! ([`cpuclock`]), CPU accounting of the runtime's own work ([`cpuaccount`]), the run's
//! identity in its shared files ([`run_identity`]), the swap folder whose files are never
//! made through a link ([`swap_folder`]), trace events ([`trace`]) and the one duration syntax of
//! flags, policy files and lifecycle scripts ([`duration`]).
//! Nothing here knows about the collector, the swap file or MASM: where it needs them it
//! defines a trait that a higher layer implements. The message queue and looper are a
//! crate of their own, `marvin-deliqueue`.
//!
//! Nothing here changes under `cfg(loom)`: the one part that is model-checked, the
//! reclaim-table entry lock, is compiled into its loom test with `marvin-sync`'s atomics
//! (see [`reclaim_table`]).

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its error
// handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod access;
pub mod barrier;
pub mod cpuaccount;
pub mod cpuclock;
pub mod duration;
pub mod fasttrack;
pub mod header;
pub mod heap;
pub mod memfd;
pub mod monitor;
pub mod native;
pub mod object;
pub mod procfs;
pub mod reclaim_table;
pub mod run_identity;
pub mod safepoint;
pub mod stub;
pub mod stub_bits;
pub mod swap_folder;
/// What [`stub_bits`] is built from: `std`'s atomics (loom's in its model,
/// `tests/loom_stub_bits.rs`, which compiles that file a second time).
mod stub_atomics {
    pub(crate) use std::sync::atomic::{fence, AtomicU8, Ordering};
}
mod stub_trust;
pub mod trace;
