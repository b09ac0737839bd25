//! The reclaimer: the "kernel" side. It scans background apps' reclaim tables and
//! returns the pages of objects that are occupied, resident, saved, clean and cold to the
//! OS, neighbours in one `madvise` call. It never waits on an app thread (an entry whose
//! lock is contended is skipped), never takes memory from the foreground app, and does
//! no disk I/O.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use marvin_runtime::heap::Heap;

/// What one reclaim request did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReclaimReport {
    pub objects: u64,
    pub bytes: u64,
    pub madvise_calls: u64,
    /// Entries skipped because an app thread held them.
    pub contended: u64,
    pub latency: Duration,
}

impl ReclaimReport {
    fn add(&mut self, o: &ReclaimReport) {
        self.objects += o.objects;
        self.bytes += o.bytes;
        self.madvise_calls += o.madvise_calls;
        self.contended += o.contended;
    }
}

/// Reclaims up to `want` bytes from one app (nothing if it is in the foreground).
pub fn reclaim_from(heap: &Heap, want: u64) -> ReclaimReport {
    reclaim_runs(heap, want, true)
}

/// As [`reclaim_from`], but returns each object's pages in a call of its own, never
/// coalescing neighbours: the reference a page-at-a-time reclaimer would be, kept for
/// `marvin bench reclaim` to measure what coalescing saves.
pub fn reclaim_from_per_object(heap: &Heap, want: u64) -> ReclaimReport {
    reclaim_runs(heap, want, false)
}

fn reclaim_runs(heap: &Heap, want: u64, coalesce: bool) -> ReclaimReport {
    let t0 = Instant::now();
    let mut r = ReclaimReport::default();
    let Some(space) = heap.stub_space() else {
        return r;
    };
    if space.table.is_foreground() {
        return r;
    }
    let mut guards = Vec::new();
    let mut runs = Vec::new();
    // A clock hand: each scan starts where the last one stopped, so small requests do
    // not rescan the same taken-over entries from the start of the table.
    let hand = space.reclaim_hand.load(Ordering::Relaxed);
    let after = space
        .table
        .iter_occupied()
        .filter(|(id, _)| id.index() >= hand);
    let before = space
        .table
        .iter_occupied()
        .filter(|(id, _)| id.index() < hand);
    for (id, entry) in after.chain(before) {
        if r.bytes >= want {
            break;
        }
        space.reclaim_hand.store(id.index() + 1, Ordering::Relaxed);
        if !entry.looks_reclaimable() {
            continue;
        }
        match entry.try_lock_reclaimer() {
            // Asked again under the entry's lock: an app that came to the foreground
            // while this scan ran loses nothing more. Its eager restore takes each
            // entry's shared lock after the switch, so an entry it already brought
            // back is locked here only after the switch is visible.
            Some(_) if space.table.is_foreground() => break,
            Some(g) if g.is_reclaimable() => {
                runs.push((entry.addr() as usize, entry.size() as usize));
                r.bytes += entry.size();
                r.objects += 1;
                guards.push(g);
            }
            Some(_) => {}
            None => r.contended += 1,
        }
    }
    if !runs.is_empty() {
        // If a call fails part way, some pages may be gone: every entry taken is
        // marked reclaimed regardless, which is safe because each checkpoint is clean
        // (a fault reads back exactly what the object holds).
        if coalesce {
            // SAFETY: every run belongs to an entry whose reclaimer lock we hold and
            // which is marked reclaimed below before the lock is released: no app
            // thread reads these pages until it has faulted the object back in.
            if let Ok(calls) = unsafe { heap.large_space().discard(&mut runs) } {
                r.madvise_calls = calls as u64;
            }
        } else {
            for run in &runs {
                // SAFETY: as above, one run at a time.
                if let Ok(calls) = unsafe { heap.large_space().discard(&mut [*run]) } {
                    r.madvise_calls += calls as u64;
                }
            }
        }
        for g in &guards {
            g.mark_reclaimed();
        }
        space.went_out(r.bytes);
    }
    drop(guards);
    r.latency = t0.elapsed();
    r
}

/// Reclaims up to `want` bytes from several apps, in the order given (least recently
/// used first), skipping foreground apps.
pub fn reclaim(apps: &[&Heap], want: u64) -> ReclaimReport {
    let t0 = Instant::now();
    let mut total = ReclaimReport::default();
    for heap in apps {
        if total.bytes >= want {
            break;
        }
        let r = reclaim_from(heap, want - total.bytes);
        total.add(&r);
    }
    total.latency = t0.elapsed();
    total
}
