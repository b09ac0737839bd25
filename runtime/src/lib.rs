//! marvin's runtime layer: everything the layers above share about objects and threads.
//!
//! It owns the object model and header bits (`header.rs`), the heap and its handles
//! (`heap/`, its cold chunks in `heap/chunk.rs`), the one access barrier (`barrier.rs`),
//! object monitors (`monitor.rs`) and fast-tracked lock holders ([`fasttrack`]),
//! safepoints (`safepoint.rs`), the reclaim table shared with the reclaimer
//! (`reclaim_table/`, its stubs' trust bits in `stub_bits.rs`), memory another process
//! can reclaim ([`memfd`]), buffers outside the heap (`native.rs`), thread CPU clocks
//! ([`cpuclock`]), CPU accounting of the runtime's own work (`cpuaccount.rs`), the run's
//! identity in its shared files (`run_identity.rs`), the swap folder whose files are
//! never made through a link (`swap_folder.rs`), trace events ([`trace`]) and the one
//! duration syntax of flags, policy files and lifecycle scripts ([`duration`]).
//! Nothing here knows about the collector, the swap file or MASM: where it needs them it
//! defines a trait that a higher layer implements. The message queue and looper are a
//! crate of their own, `marvin-deliqueue`.
//!
//! Nothing here changes under `cfg(loom)`: the one part that is model-checked, the
//! reclaim-table entry lock, is compiled into its loom test with `marvin-sync`'s atomics
//! (see `reclaim_table/`).
//!
//! # Surface
//!
//! Public modules: `cpuclock`, `duration`, `memfd`, `fasttrack`, `trace`,
//! `trace::merge`, `trace::names`, `trace::proto` (namespaces of calls and names read
//! as `cpuclock::thread_cpu_time_ns()`, `duration::parse(..)`, `memfd::on_tmpfs(..)`,
//! `fasttrack::Mode`, `trace::names::CodeLocation`), `procfs` (the `/proc` reader, being
//! made one with the machine's). Re-exported here:
//!
//! - objects: [`ObjKind`], [`ObjHeader`], [`HeaderBits`], [`HEADER_BYTES`], [`Obj`];
//! - the heap: [`Heap`], [`HeapConfig`], [`Handle`], [`AllocBuffer`] and its
//!   [`ALLOC_BUFFER_GRANT`] and [`ALLOC_BUFFER_BATCH`], [`AllocError`], [`AllocPressure`], [`GcNeed`],
//!   [`footprint`], [`ENTRY_STUB`], [`PAGE`], [`LARGE_OBJECT_BYTES`],
//!   [`MAX_ARRAY_LEN`], [`RUNTIME_HEADROOM`], the large space ([`LargeBacking`],
//!   [`LargeSpace`], [`REGION_BYTES`], [`page_round`]), its region directory
//!   ([`RegionDirectory`], [`RegionDirError`]) and its cold chunks ([`ChunkSpace`],
//!   [`Chunk`], [`ChunkMember`], [`ChunkCounters`], [`ChunkFigures`], [`ChunkReport`],
//!   [`ChunkError`], [`ChunkFault`], [`ENTRY_CHUNK`], [`is_chunk_entry`]);
//! - buffers outside the heap: [`NativeBuffers`], [`NativeError`], [`NativeStats`],
//!   [`MAX_BUFFER_BYTES`], [`page_size`];
//! - access: [`Barriers`], [`NoBarriers`], [`BarrierMode`], [`Access`], [`AccessKind`],
//!   [`AccessError`];
//! - stubs: [`StubSpace`], [`Stub`], [`StubState`], [`StubHooks`], [`StubCounters`],
//!   [`StubError`], [`FaultError`], [`Registry`], [`stub_bytes`], [`stubbing_bytes`],
//!   [`malloc_bytes`], their trust bits ([`StubBits`], [`note_damage_on_this_thread`]);
//! - the reclaim table: [`ReclaimTable`], [`ReclaimTableView`], [`TableOwner`],
//!   [`Entry`], [`EntryId`], [`EntryFlags`], [`EntryLock`], [`EntryError`],
//!   [`EntryFault`], [`ReclaimTableError`], [`TableFull`], [`ReclaimerGuard`],
//!   [`SharedGuard`], [`ENTRY_BYTES`], [`MAX_CAPACITY`], [`LOCK_WAIT_LIMIT`];
//! - threads: [`Monitors`], [`Holder`], [`thread_id`], [`Safepoints`], [`Mutator`],
//!   [`CpuAccount`], [`Activity`], [`process_cpu_time_ns`];
//! - the run: [`RunIdentity`], [`id_hex`], and its swap folder ([`SwapFolder`],
//!   [`FolderError`], [`run_user`]).

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its error
// handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod access;
mod barrier;
mod cpuaccount;
pub mod cpuclock;
pub mod duration;
pub mod fasttrack;
mod header;
mod heap;
pub mod memfd;
mod monitor;
mod native;
mod object;
pub mod procfs;
mod reclaim_table;
mod run_identity;
mod safepoint;
mod stub;
mod stub_bits;
/// What [`StubBits`] is built from: `std`'s atomics (loom's in its model,
/// `tests/loom_stub_bits.rs`, which compiles that file a second time).
mod stub_atomics {
    pub(crate) use std::sync::atomic::{fence, AtomicU8, Ordering};
}
mod stub_trust;
mod swap_folder;
pub mod trace;

pub use barrier::{Access, AccessError, AccessKind, BarrierMode, Barriers, NoBarriers};
pub use cpuaccount::{process_cpu_time_ns, Activity, CpuAccount};
pub use header::{HeaderBits, ObjHeader, ObjKind, HEADER_BYTES};
pub use heap::alloc_buffer::{BATCH_HANDLES as ALLOC_BUFFER_BATCH, GRANT as ALLOC_BUFFER_GRANT};
pub use heap::chunk::{
    is_chunk_entry, Chunk, ChunkCounters, ChunkError, ChunkFigures, ChunkMember, ChunkReport,
    ChunkSpace, ENTRY_CHUNK,
};
pub use heap::chunk_access::ChunkFault;
pub use heap::large_space::{page_round, LargeSpace, REGION_BYTES};
pub use heap::region_dir::{RegionDirError, RegionDirectory};
pub use heap::{
    footprint, AllocBuffer, AllocError, AllocPressure, GcNeed, Handle, Heap, HeapConfig,
    LargeBacking, ENTRY_STUB, LARGE_OBJECT_BYTES, MAX_ARRAY_LEN, PAGE, RUNTIME_HEADROOM,
};
pub use monitor::{thread_id, Holder, Monitors};
pub use native::{page_size, NativeBuffers, NativeError, NativeStats, MAX_BUFFER_BYTES};
pub use object::Obj;
pub use reclaim_table::{
    Entry, EntryError, EntryFault, EntryFlags, EntryId, EntryLock, ReclaimTable, ReclaimTableError,
    ReclaimTableView, ReclaimerGuard, SharedGuard, TableFull, TableOwner, ENTRY_BYTES,
    LOCK_WAIT_LIMIT, MAX_CAPACITY,
};
pub use run_identity::{id_hex, RunIdentity};
pub use safepoint::{Mutator, Safepoints};
pub use stub::{
    malloc_bytes, stub_bytes, stubbing_bytes, FaultError, Registry, Stub, StubCounters, StubError,
    StubHooks, StubSpace, StubState,
};
pub use stub_bits::{note_damage_on_this_thread, StubBits};
pub use swap_folder::{run_user, FolderError, SwapFolder};
