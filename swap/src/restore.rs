//! Restore: eagerly, when an app comes back to the foreground, every reclaimed object is
//! read back and given its references from its stub before the app's looper runs
//! again. (On demand, on first access, is the barrier's object fault.)

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use marvin_runtime::heap::Heap;
use marvin_runtime::stub::StubHooks;

use crate::app_swap::{counting_eager_read_ahead, AppSwap};

/// What one eager restore did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoreReport {
    pub objects: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    /// Objects that could not be read back (each with its error).
    pub errors: Vec<String>,
}

/// Reads back every reclaimed object of `heap`.
pub fn restore_all(heap: &Heap, swap: &AppSwap) -> RestoreReport {
    let t0 = Instant::now();
    let mut r = RestoreReport::default();
    let Some(space) = heap.stub_space() else {
        return r;
    };
    // In address order, which is the order of their checkpoints in the file as the saver
    // wrote them: each read brings the neighbours that follow along (read-ahead). Every
    // stub is visited and its entry locked, resident or not: a reclaimer that took an
    // entry before the app came to the foreground may still be dropping its pages.
    let mut stubs = space.all();
    stubs.sort_unstable_by_key(|s| s.addr);
    let (batch, ahead, ahead_bytes) = counting_eager_read_ahead(|| {
        swap.batch(|| {
            for stub in &stubs {
                let _growth = (!space.table.entry(stub.entry).is_resident())
                    .then(|| heap.before_growth(swap.fault_bytes(stub)))
                    .flatten();
                match space.restore(stub) {
                    Ok(true) => {
                        r.objects += 1;
                        r.bytes += stub.bytes() as u64;
                    }
                    Ok(false) => {}
                    Err(e) => r.errors.push(e.to_string()),
                }
            }
        })
    });
    r.objects += ahead;
    r.bytes += ahead_bytes;
    if let Err(e) = batch {
        r.errors.push(e.to_string());
    }
    // Eager restores were counted as faults by the stub space; book them here too.
    swap.counters
        .restored_eager_objects
        .fetch_add(r.objects, Ordering::Relaxed);
    swap.counters
        .restored_eager_bytes
        .fetch_add(r.bytes, Ordering::Relaxed);
    r.elapsed = t0.elapsed();
    r
}
