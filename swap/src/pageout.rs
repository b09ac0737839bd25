//! Page-granular swapping on demand, the page-swap baseline (a Linux swap file): when
//! the budget would be exceeded, the least recently used pages are written to the swap
//! file synchronously, on the allocating thread's path, and dropped. Nothing is saved
//! ahead of time, every large object's page run is a candidate (the foreground app's
//! too), and a later access, the collector's included, reads it back synchronously,
//! with its neighbours in the swap file ([`crate::app_swap::PAGE_CLUSTER_BYTES`], the
//! kernel's `page-cluster` read-ahead).
//!
//! What a kernel gives a swapped page and this model gives a page run:
//! - **Referenced bits.** Reads count as references as writes do: a run is cold only
//!   when neither read nor written in the policy's window of working-set rounds
//!   ([`crate::app_swap::AppSwap`]'s `is_cold` without bookmarking), and a run accessed
//!   since the last round (its READ or WRITE bit set, as a page's accessed bit) gets a
//!   second chance: the first pass skips it.
//! - **Swap cache.** A run read back and not written since keeps its slot, so paging it
//!   out again writes nothing (a clean swap-cache page is dropped without I/O).
//! - **No global lock.** Each allocator pages out on its own thread, as direct reclaim
//!   does on each CPU; entries are taken with try-locks and a contended one is skipped.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use marvin_runtime::page_round;
use marvin_runtime::EntryFlags;
use marvin_runtime::HeaderBits;
use marvin_runtime::{Handle, Heap};

use crate::app_swap::AppSwap;

/// What one swap-out did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageOutReport {
    pub objects: u64,
    pub bytes: u64,
    pub bytes_written: u64,
    /// Runs dropped without a write: their slot still held what they hold.
    pub clean_drops: u64,
    pub latency: Duration,
}

/// Writes out and drops up to `want` bytes of `heap`'s resident page runs: first the
/// runs that are cold and not referenced since the last working-set round (the Clock
/// approximation of LRU, with second chances), then any.
pub fn page_out(heap: &Heap, swap: &AppSwap, want: u64) -> PageOutReport {
    let t0 = Instant::now();
    let mut r = PageOutReport::default();
    let Some(space) = heap.stub_space() else {
        return r;
    };
    let mut buf = Vec::new();
    for pass in 0..2 {
        for (_, entry) in space.table.iter_occupied() {
            if r.bytes >= want {
                break;
            }
            if !entry.is_resident() || (pass == 0 && !entry.flags().contains(EntryFlags::COLD)) {
                continue;
            }
            let Some(guard) = entry.try_lock_reclaimer() else {
                continue;
            };
            if !entry.is_resident() {
                continue;
            }
            let Some(stub) = Handle::from_value(entry.owner()).and_then(|h| space.get(h)) else {
                continue;
            };
            // The entry is shared memory: its pages are dropped only if it still
            // describes this stub's object, and the stub's own address and size are used.
            let size = page_round(stub.bytes()) as u64;
            if entry.addr() != stub.addr as u64 || entry.size() != size {
                continue;
            }
            let mut st = stub.state.lock();
            if st.is_dead() {
                continue;
            }
            // SAFETY: resident, and the reclaimer lock keeps every app thread out.
            let obj = unsafe { stub.object() };
            let bits = obj.header().bits();
            if !bits.contains(HeaderBits::STUB) || stub.bits.is_damaged() {
                // Not in its pages though the table says resident (they read zero), or
                // damaged: never written over its checkpoint; its access reports it.
                continue;
            }
            if pass == 0 && bits.intersects(HeaderBits::READ | HeaderBits::WRITE) {
                // Referenced since the last round: a second chance.
                continue;
            }
            if bits.contains(HeaderBits::SAVED)
                && !bits.contains(HeaderBits::DIRTY)
                && stub.bits.is_current()
                && st.slot().is_some()
            {
                // Read back and not written since: its slot holds it already.
                r.clean_drops += 1;
            } else {
                if let Err(e) = swap.write_checkpoint(&stub, &mut st, obj, &mut buf) {
                    swap.record_error(&e);
                    continue;
                }
                r.bytes_written += buf.len() as u64;
                // No writer can run meanwhile: the reclaimer lock keeps them out.
                stub.bits.set_current();
            }
            let mut run = [(stub.addr, size as usize)];
            // SAFETY: the entry is locked for the reclaimer and marked reclaimed before
            // the lock is released; its slot holds what the object holds.
            let _ = unsafe { heap.large_space().discard(&mut run) };
            entry.lock().insert_flags(EntryFlags::SAVED);
            guard.mark_reclaimed();
            // Booked below, once the swap file's index growth is charged out of it.
            r.objects += 1;
            r.bytes += size;
        }
    }
    // Page-outs run while another allocation makes room: the index's growth is charged
    // out of the pages just dropped, before they are booked, never reserved anew.
    heap.absorb_runtime_growth(r.bytes as usize);
    space.went_out(r.bytes);
    if r.bytes_written > 0 {
        swap.file.lock().release_all();
    }
    swap.counters
        .bytes_written
        .fetch_add(r.bytes_written, Ordering::Relaxed);
    swap.counters.book_reclaim(r.objects, r.bytes);
    r.latency = t0.elapsed();
    r
}
