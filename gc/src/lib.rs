//! marvin's collector: a precise, non-moving mark-sweep over one app's heap, and the
//! working-set estimator that rides on its heap walk.
//!
//! The front door is [`collect`]: the caller stops the world (see
//! `marvin_runtime::Safepoints`) and hands over the roots its threads published; the
//! collector marks from them (`mark.rs`; a cold chunk's members, `chunk_mark.rs`), then
//! walks the handle table once
//! (`sweep.rs`), freeing the dead and aging the live objects' access bits
//! (`working_set.rs`). Marking reads objects as the runtime, never through the access
//! barrier, so a collection never sets an access bit.
//!
//! # Surface
//!
//! Public modules: none. [`collect`] and its [`CycleReport`]; [`walk_working_set`], the
//! working-set estimate alone, and its [`WorkingSet`].

// Output goes through checked writes (`marvin_console::output`, or `writeln!` with its error
// handled): `print!` and `eprint!` panic when the stream cannot be written.
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod chunk_mark;
mod mark;
mod sweep;
mod working_set;

use std::time::{Duration, Instant};

use marvin_runtime::Heap;

pub use working_set::{walk as walk_working_set, WorkingSet};

/// What one collection did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CycleReport {
    pub marked: u64,
    pub freed_objects: u64,
    pub freed_bytes: u64,
    pub live_bytes: u64,
    pub working_set: WorkingSet,
    pub mark_time: Duration,
    pub sweep_time: Duration,
}

/// A full collection of `heap` from `roots` (reference values; 0 and non-handles are
/// ignored).
///
/// # Safety
/// The world must be stopped: no mutator may run until this returns, and `roots` must
/// hold every reference any mutator, pending message or runtime structure still uses.
pub unsafe fn collect(heap: &Heap, roots: &[u64]) -> CycleReport {
    let t0 = Instant::now();
    let space = heap.stub_space();
    if let Some(s) = space {
        s.collecting
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    // SAFETY: forwarded from this function's contract.
    let marked = unsafe { mark::mark(heap, roots) };
    let t1 = Instant::now();
    // SAFETY: marking is complete and the world is still stopped.
    let swept = unsafe { sweep::sweep(heap) };
    let t2 = Instant::now();
    if let Some(s) = space {
        s.collecting
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }
    heap.collected();
    CycleReport {
        marked,
        freed_objects: swept.freed_objects,
        freed_bytes: swept.freed_bytes,
        live_bytes: heap.in_use() as u64,
        working_set: swept.working_set,
        mark_time: t1 - t0,
        sweep_time: t2 - t1,
    }
}

#[cfg(test)]
mod tests;
