//! marvin's ahead-of-time swap: where checkpoints of cold objects go, and the policy that
//! decides what is swapped, when, and how.
//!
//! * `swap_file.rs`: one app's swap file, a memory-mapped file of checked slots, rewritten in
//!   place, compacted when dead space passes a threshold.
//! * `policy.rs`: the [`SwapPolicy`] trait the saver, reclaimer and restore consult, and
//!   [`PolicyConfig`], its data form (TOML), whose default is the published Marvin setting.
//!
//! * `swap_dir.rs`: a swap directory belongs to one run (an exclusive lock naming its
//!   holder), and the directories of runs that ended without cleaning up are swept.
//! * `app_swap.rs`: one app's swap side ([`AppSwap`]): its file, policy and counters, and
//!   the stub hooks the runtime calls to fault objects in and free their slots.
//! * [`stubber`]: stubs for every candidate when an app goes to the background.
//! * [`saver`]: the ahead-of-time saver (checkpoints of cold objects) and compaction.
//! * [`reclaimer`]: the "kernel" side, dropping pages of saved, clean, cold objects.
//! * [`external`]: the same reclaimer acting on another process, through its reclaim
//!   table and the memory files of its large-object space.
//! * [`restore`]: eager restore when an app comes back to the foreground, in batches read
//!   front to back with the kernel reading ahead of them.
//! * `read_window.rs`: how far ahead of a restore (or of faults in a row) the kernel reads
//!   the swap file, and what the reads leave behind in the page cache.
//! * `prefault.rs`: the pages a restore fills, made resident in bulk.
//! * [`page_restore`]: large objects brought back a run of pages at a time on first
//!   touch (through `uffd`, the userfaultfd and its `SIGBUS` handler).
//! * [`pageout`]: the page-swap baseline's synchronous swap-out on the allocation path.
//! * `chunk_pass.rs`: cold small objects packed into chunks ([`chunk_cold_objects`]),
//!   by the settings of `chunk_policy.rs` ([`ChunkConfig`]).
//!
//! The mechanisms hold no policy constants of their own: they ask the policy.
//!
//! # Surface
//!
//! Public modules: `stubber`, `saver`, `reclaimer`, `external`, `restore`,
//! `page_restore`, `pageout` (the swap's operations, each a namespace of its calls:
//! `saver::save`, `reclaimer::reclaim_from`, `restore::restore_all`). Re-exported here:
//! an app's swap side ([`AppSwap`], [`AttachError`], [`NoCheckpoint`], [`SwapCounters`]
//! and its read-ahead sizes), the policy ([`SwapPolicy`], [`PolicyConfig`] and its
//! parts, the periods' bounds [`MIN_PERIOD`] and [`MAX_PERIOD`]), cold chunks ([`chunk_cold_objects`], [`ChunkPassReport`], [`ChunkConfig`],
//! [`MAX_CHUNK_BYTES`]), the swap file ([`SwapFile`], [`SlotId`], [`SwapError`], its on-disk layout
//! and write-back period) and a run's swap directory ([`SwapDirLock`], [`sweep_stale`]).

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its error
// handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod app_swap;
mod chunk_pass;
mod chunk_policy;
pub mod external;
pub mod page_restore;
pub mod pageout;
mod policy;
mod prefault;
mod prefault_claims;
mod read_window;
pub mod reclaimer;
pub mod restore;
pub mod saver;
pub mod stubber;
mod swap_dir;
mod swap_file;
mod uffd;

pub use app_swap::{
    AppSwap, AttachError, NoCheckpoint, SwapCounters, PAGE_CLUSTER_BYTES, PREFETCH_AHEAD_BYTES,
    PREFETCH_AHEAD_MAX_BYTES, READ_AHEAD_BYTES,
};

pub use chunk_pass::{chunk_cold_objects, ChunkPassReport};
pub use chunk_policy::{ChunkConfig, MAX_CHUNK_BYTES};
pub use policy::{
    AppStanding, CandidateConfig, CandidateKind, ColdnessConfig, CompactionConfig, Compression,
    PolicyConfig, PolicyError, ReclaimBatch, ReclaimerConfig, RestoreConfig, RestoreMode,
    SaverConfig, SwapPolicy, VictimOrder, WorkingSetConfig, DEFAULT_LAUNCH_PREFETCH_BYTES,
    MAX_PERIOD, MIN_PERIOD,
};
pub use swap_dir::{lock_unused, sweep_stale, SwapDirLock, LOCK_FILE};
pub use swap_file::layout::{
    HeaderError, SlotHeader, SlotState, FILE_HEADER_BYTES, SLOT_HEADER_BYTES,
};
pub use swap_file::{CompactionReport, CorruptKind, SlotId, SwapError, SwapFile, WRITE_BACK_EVERY};
