//! The reclaimer: the "kernel" side. It scans background apps' reclaim tables and
//! returns the pages of objects that are occupied, resident, saved, clean and cold to the
//! OS, neighbours in one `madvise` call. It never waits on an app thread (an entry whose
//! lock is contended is skipped), never takes memory from the foreground app, and does
//! no disk I/O.
//!
//! Which entries to take ([`take`]) is shared with the reclaimer that acts on another
//! process ([`crate::external`]); only how the pages go back differs.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use marvin_runtime::page_round;
use marvin_runtime::{Entry, EntryId, ReclaimerGuard};
use marvin_runtime::{Handle, Heap};
use marvin_runtime::{Registry, StubSpace};

/// What one reclaim request did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReclaimReport {
    pub objects: u64,
    pub bytes: u64,
    /// Calls that returned pages (`madvise`, or `fallocate` holes for memory files).
    pub madvise_calls: u64,
    /// Entries skipped because an app thread held them.
    pub contended: u64,
    /// Entries skipped because their pages are not where the reclaimer can reach them
    /// (an external reclaimer: no published region holds them).
    pub unreachable: u64,
    /// Calls that failed (their pages stayed; the objects are marked reclaimed anyway
    /// and fault back in from their clean checkpoints).
    pub failed_calls: u64,
    pub latency: Duration,
    /// The table was refused, nothing taken: an entry contradicts itself, another entry
    /// or what the app knows ([`Refusal`]).
    pub refused: Option<Refusal>,
}

/// Why a reclaimer refused a table and took nothing from it: the table is shared memory,
/// and one whose entries cannot all be the runtime's is not acted on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The entry found wrong.
    pub entry: EntryId,
    /// What is wrong with it.
    pub why: &'static str,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "entry {} {}", self.entry, self.why)
    }
}

impl ReclaimReport {
    pub(crate) fn add(&mut self, o: &ReclaimReport) {
        self.objects += o.objects;
        self.bytes += o.bytes;
        self.madvise_calls += o.madvise_calls;
        self.contended += o.contended;
        self.unreachable += o.unreachable;
        self.failed_calls += o.failed_calls;
        self.refused = self.refused.or(o.refused);
    }
}

/// The entries one scan took, each under its reclaimer lock, and their page runs.
pub(crate) struct Taken<'t> {
    guards: Vec<ReclaimerGuard<'t>>,
    /// `(address, bytes)` of every taken object, in scan order.
    pub runs: Vec<(usize, usize)>,
    /// Objects, bytes, contended and unreachable entries of the scan.
    pub report: ReclaimReport,
}

impl Taken<'_> {
    /// Marks every taken entry reclaimed (RESIDENT cleared) and releases the locks: call
    /// once the pages are gone. If returning them failed part way, marking them
    /// regardless is safe: each checkpoint is clean, so a fault reads back exactly what
    /// the object holds.
    pub fn finish(self) {
        for g in self.guards {
            g.release_reclaimed();
        }
    }
}

/// One reclaimer scan of a table: from the clock hand `hand` round to it again, takes
/// occupied entries that look reclaimable, each with a try-lock (never waiting: a
/// contended entry is skipped and counted), until `want` bytes are taken. Under each lock
/// it asks `is_foreground` again (an app that came to the foreground while the scan ran
/// loses nothing more: the scan stops), checks the entry is still reclaimable, and asks
/// `reachable(entry)` whether the caller can return its pages (the entry's object is
/// where the caller can reach it, and the entry, which is shared memory, still describes
/// it). The caller then
/// returns the pages of [`Taken::runs`] and calls [`Taken::finish`].
///
/// An entry that contradicts itself ([`Entry::contradiction`]), seen in the scan or
/// under its lock, or that `reachable` refuses (`Err`: it contradicts what the caller
/// knows), refuses the whole table: every lock taken is released with nothing marked,
/// no run is returned, and the report says why ([`ReclaimReport::refused`]).
///
/// `scan` yields the table's occupied entries in index order (it is called twice: the
/// part after the hand, then the part before).
pub(crate) fn take<'t, I>(
    scan: impl Fn() -> I,
    hand: &AtomicU32,
    is_foreground: impl Fn() -> bool,
    want: u64,
    mut reachable: impl FnMut(&Entry) -> Result<bool, &'static str>,
) -> Taken<'t>
where
    I: Iterator<Item = (EntryId, &'t Entry)>,
{
    let mut taken = Taken {
        guards: Vec::new(),
        runs: Vec::new(),
        report: ReclaimReport::default(),
    };
    let r = &mut taken.report;
    // A clock hand: each scan starts where the last one stopped, so small requests do
    // not rescan the same taken-over entries from the start of the table.
    let start = hand.load(Ordering::Relaxed);
    let after = scan().filter(|(id, _)| id.index() >= start);
    let before = scan().filter(|(id, _)| id.index() < start);
    for (id, entry) in after.chain(before) {
        if r.bytes >= want {
            break;
        }
        hand.store(id.index() + 1, Ordering::Relaxed);
        if let Some(why) = entry.contradiction() {
            return refuse(taken, id, why);
        }
        if !entry.looks_reclaimable() {
            continue;
        }
        match entry.try_lock_reclaimer() {
            // Asked again under the entry's lock: an app that came to the foreground
            // while this scan ran loses nothing more. Its eager restore takes each
            // entry's shared lock after the switch, so an entry it already brought
            // back is locked here only after the switch is visible.
            Some(_) if is_foreground() => break,
            Some(g) if g.is_reclaimable() => {
                // Read again under the lock: what it acts on must not contradict itself.
                let checked = match entry.contradiction() {
                    Some(why) => Err(why),
                    None => reachable(entry),
                };
                match checked {
                    Ok(true) => {}
                    Ok(false) => {
                        r.unreachable += 1;
                        continue;
                    }
                    Err(why) => {
                        drop(g);
                        return refuse(taken, id, why);
                    }
                }
                taken
                    .runs
                    .push((entry.addr() as usize, entry.size() as usize));
                r.bytes += entry.size();
                r.objects += 1;
                taken.guards.push(g);
            }
            Some(_) => {}
            None => r.contended += 1,
        }
    }
    taken
}

/// Gives up a scan: releases every lock it took, marking nothing, and says why.
fn refuse<'t>(taken: Taken<'t>, entry: EntryId, why: &'static str) -> Taken<'t> {
    let report = ReclaimReport {
        refused: Some(Refusal { entry, why }),
        contended: taken.report.contended,
        ..ReclaimReport::default()
    };
    drop(taken.guards);
    Taken {
        guards: Vec::new(),
        runs: Vec::new(),
        report,
    }
}

/// The first contradiction between the occupied entries of a table, as a reclaimer
/// from outside checks it before it acts on any (it knows nothing of the app but the
/// table): an entry that contradicts itself ([`Entry::contradiction`]), or two entries
/// whose pages overlap (one may say resident and the other reclaimed of the same pages;
/// punching one would take the other's).
pub(crate) fn table_contradiction<'t>(
    entries: impl Iterator<Item = (EntryId, &'t Entry)>,
) -> Option<Refusal> {
    let mut runs = Vec::new();
    for (id, entry) in entries {
        if let Some(why) = entry.contradiction() {
            return Some(Refusal { entry: id, why });
        }
        runs.push((entry.addr(), entry.addr().saturating_add(entry.size()), id));
    }
    runs.sort_unstable();
    runs.windows(2).find(|w| w[1].0 < w[0].1).map(|w| Refusal {
        entry: w[1].2,
        why: "overlaps the pages of another entry",
    })
}

/// Entries a scan checks against the stub registry under one hold of it.
const REGISTRY_CHUNK: u32 = 256;

/// Checks entries against the stub registry, holding it for [`REGISTRY_CHUNK`] checks
/// at a time: a scan checks every entry it takes, and taking the registry's lock and a
/// reference to the stub for each cost a reclaim of 500 MiB about a fifth of its time.
struct RegistryCheck<'s> {
    space: &'s StubSpace,
    held: Option<Registry<'s>>,
    uses: u32,
}

impl<'s> RegistryCheck<'s> {
    fn new(space: &'s StubSpace) -> RegistryCheck<'s> {
        RegistryCheck {
            space,
            held: None,
            uses: 0,
        }
    }

    /// Whether `entry` still describes the object its owner handle names, at the
    /// address and with the size the object's stub knows: the table is shared memory,
    /// and the reclaimer drops pages only where an object of this app really is. An
    /// entry that says CLEAN of an object whose checkpoint the app knows is not current
    /// (or that it found damaged) refuses the table (`Err`).
    fn describes_its_object(&mut self, entry: &Entry) -> Result<bool, &'static str> {
        if self.uses >= REGISTRY_CHUNK {
            // Let others at the registry between chunks.
            self.held = None;
            self.uses = 0;
        }
        self.uses += 1;
        let registry = self.held.get_or_insert_with(|| self.space.registry());
        let Some(stub) = Handle::from_value(entry.owner()).and_then(|h| registry.get(h)) else {
            return Ok(false);
        };
        if stub.addr as u64 != entry.addr() || page_round(stub.bytes()) as u64 != entry.size() {
            return Ok(false);
        }
        if !self.space.may_drop_pages(stub) {
            return Err("says CLEAN, but the object was written after its checkpoint");
        }
        Ok(true)
    }
}

/// Bytes the reclaimer could take from one app now (a snapshot: nothing if it is in the
/// foreground), for a policy that chooses victims by size. Scans the app's table.
pub fn reclaimable_bytes(heap: &Heap) -> u64 {
    let Some(space) = heap.stub_space() else {
        return 0;
    };
    if space.table.is_foreground() {
        return 0;
    }
    space
        .table
        .iter_occupied()
        .filter(|(_, e)| e.looks_reclaimable())
        .map(|(_, e)| e.size())
        .sum()
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
    let Some(space) = heap.stub_space() else {
        return ReclaimReport::default();
    };
    if space.table.is_foreground() {
        return ReclaimReport::default();
    }
    let mut check = RegistryCheck::new(space);
    let mut taken = take(
        || space.table.iter_occupied(),
        &space.reclaim_hand,
        || space.table.is_foreground(),
        want,
        |e| check.describes_its_object(e),
    );
    drop(check);
    let mut r = taken.report;
    if !taken.runs.is_empty() {
        if coalesce {
            // SAFETY: every run belongs to an entry whose reclaimer lock we hold and
            // which is marked reclaimed below before the lock is released: no app
            // thread reads these pages until it has faulted the object back in.
            if let Ok(calls) = unsafe { heap.large_space().discard(&mut taken.runs) } {
                r.madvise_calls = calls as u64;
            }
        } else {
            for run in &taken.runs {
                // SAFETY: as above, one run at a time.
                if let Ok(calls) = unsafe { heap.large_space().discard(&mut [*run]) } {
                    r.madvise_calls += calls as u64;
                }
            }
        }
        taken.finish();
        space.went_out(r.bytes);
    }
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
