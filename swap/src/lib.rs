//! marvin's ahead-of-time swap: where checkpoints of cold objects go, and the policy that
//! decides what is swapped, when, and how.
//!
//! * [`swap_file`]: one app's swap file, a memory-mapped file of checked slots, rewritten in
//!   place, compacted when dead space passes a threshold.
//! * [`policy`]: the [`SwapPolicy`] trait the saver, reclaimer and restore consult, and
//!   [`PolicyConfig`], its data form (TOML), whose default is the published Marvin setting.
//!
//! The mechanisms that use them (saver, reclaimer, restore) hold no policy constants of
//! their own: they ask the policy.

pub mod policy;
pub mod swap_file;

pub use policy::{PolicyConfig, PolicyError, RestoreMode, SwapPolicy, VictimOrder};
pub use swap_file::{CompactionReport, CorruptKind, SlotId, SwapError, SwapFile};
