//! The shared memory budget and the three ways of handling pressure.
//!
//! Every app's heap asks [`Budget::before_alloc`] before each allocation, on the
//! allocating thread. When the resident app memory plus the allocation would pass the
//! budget, the pressure policy makes room there and then, as the kernel would:
//! - `kill` kills the least recently used background app (Android's low-memory killer);
//! - `page-swap` writes the least recently used page runs (cold first, the foreground
//!   app's too) to their app's swap file synchronously and drops them (a Linux swap file);
//! - `marvin` asks the reclaimer for saved, clean, cold objects of background apps, least
//!   recently used first; if that is not enough it falls back to a kill, as Android's
//!   killer still stands behind Marvin.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use marvin_app::App;
use marvin_runtime::heap::{AllocPressure, Heap};
use parking_lot::Mutex;

use super::Pressure;

/// The least a swap policy takes back per make-room call, as a kernel reclaims towards a
/// watermark rather than page by page (4 MiB: 1,024 pages), so that a run of small
/// allocations under pressure does not stop for each page.
pub const RECLAIM_BATCH: u64 = 4 << 20;

/// One app as the budget sees it.
pub struct Member {
    pub id: usize,
    pub app: Weak<App>,
    pub foreground: AtomicBool,
    /// When the app last left (or was in) the foreground, in ns since the run began.
    pub last_foreground_ns: AtomicU64,
    pub alive: AtomicBool,
}

/// Latency samples and counters of the pressure path.
#[derive(Default)]
pub struct PressureStats {
    pub reclaim_latency_ns: Vec<u64>,
    pub reclaimed_bytes: u64,
    pub over_budget_events: u64,
    pub max_over_budget: u64,
}

/// The budget shared by every app of a run.
pub struct Budget {
    pub limit: u64,
    pub pressure: Pressure,
    pub members: Mutex<Vec<Arc<Member>>>,
    /// Serialises make-room work, as a kernel's reclaim path is.
    room: Mutex<()>,
    pub stats: Mutex<PressureStats>,
    /// Asks the System to kill an app (it does the bookkeeping and the reaping).
    pub kill: Box<dyn Fn(usize) + Send + Sync>,
    pub start: Instant,
}

impl Budget {
    pub fn new(limit: u64, pressure: Pressure, kill: Box<dyn Fn(usize) + Send + Sync>) -> Budget {
        Budget {
            limit,
            pressure,
            members: Mutex::new(Vec::new()),
            room: Mutex::new(()),
            stats: Mutex::new(PressureStats::default()),
            kill,
            start: Instant::now(),
        }
    }

    /// Alive members with their apps.
    fn alive(&self) -> Vec<(Arc<Member>, Arc<App>)> {
        self.members
            .lock()
            .iter()
            .filter(|m| m.alive.load(Ordering::Relaxed))
            .filter_map(|m| m.app.upgrade().map(|a| (m.clone(), a)))
            .collect()
    }

    /// Resident app memory as accounted: each alive app's heap, less what is out.
    pub fn resident(&self) -> u64 {
        self.alive().iter().map(|(_, a)| a.resident_bytes()).sum()
    }

    /// Background members, least recently in the foreground first (never `except`).
    fn lru_background(&self, except: Option<usize>) -> Vec<(Arc<Member>, Arc<App>)> {
        let mut v: Vec<_> = self
            .alive()
            .into_iter()
            .filter(|(m, _)| !m.foreground.load(Ordering::Relaxed) && Some(m.id) != except)
            .collect();
        v.sort_by_key(|(m, _)| (m.last_foreground_ns.load(Ordering::Relaxed), m.id));
        v
    }

    fn member_of(&self, heap: &Heap) -> Option<usize> {
        self.alive()
            .iter()
            .find(|(_, a)| std::ptr::eq(a.heap(), heap))
            .map(|(m, _)| m.id)
    }

    fn kill_one(&self, requester: Option<usize>) -> bool {
        match self.lru_background(requester).first() {
            Some((m, _)) => {
                m.alive.store(false, Ordering::SeqCst);
                (self.kill)(m.id);
                true
            }
            None => false,
        }
    }

    fn make_room(&self, heap: &Heap, bytes: u64) {
        let _room = self.room.lock();
        let need = |s: &Self| (s.resident() + bytes).saturating_sub(s.limit);
        let mut short = need(self);
        if short == 0 {
            return;
        }
        let requester = self.member_of(heap);
        // Take memory back until the allocation fits: other apps keep allocating while
        // we work, so one pass over the victims may not be enough; stop when a pass finds
        // nothing. Each take is at least a batch.
        let mut take_until_fits =
            |victims: &dyn Fn() -> Vec<(Arc<Member>, Arc<App>)>,
             take: &dyn Fn(&App, u64) -> u64| {
                let t0 = Instant::now();
                let mut total = 0;
                while short > 0 {
                    let mut got = 0;
                    for (_, a) in victims() {
                        if got >= short {
                            break;
                        }
                        got += take(&a, (short - got).max(RECLAIM_BATCH));
                    }
                    total += got;
                    short = need(self);
                    if got == 0 {
                        break;
                    }
                }
                let mut st = self.stats.lock();
                st.reclaim_latency_ns.push(t0.elapsed().as_nanos() as u64);
                st.reclaimed_bytes += total;
            };
        match self.pressure {
            Pressure::Kill => {}
            // Saved, clean, cold objects of background apps, least recently used first.
            Pressure::Marvin => take_until_fits(&|| self.lru_background(requester), &|a, want| {
                a.reclaim(want).map_or(0, |r| r.bytes)
            }),
            // Any page run, background apps first, then the foreground ones with the
            // requester last: a kernel's LRU spans every process.
            Pressure::PageSwap => take_until_fits(
                &|| {
                    let mut order = self.lru_background(requester);
                    let alive = self.alive();
                    let (fg, rest): (Vec<_>, Vec<_>) = alive
                        .into_iter()
                        .filter(|(m, _)| {
                            m.foreground.load(Ordering::Relaxed) || Some(m.id) == requester
                        })
                        .partition(|(m, _)| Some(m.id) != requester);
                    order.extend(fg);
                    order.extend(rest);
                    order
                },
                &|a, want| a.page_out(want).bytes,
            ),
        }
        // Kill (the policy itself, or the fallback) until it fits or nobody is left.
        while short > 0 && self.pressure != Pressure::PageSwap && self.kill_one(requester) {
            short = need(self);
        }
        if short > 0 {
            let mut st = self.stats.lock();
            st.over_budget_events += 1;
            st.max_over_budget = st.max_over_budget.max(short);
        }
    }
}

/// The hook a heap calls; holds the budget weakly so apps do not keep it alive.
pub struct BudgetHook(pub Weak<Budget>);

impl AllocPressure for BudgetHook {
    fn before_alloc(&self, heap: &Heap, bytes: usize) {
        if let Some(b) = self.0.upgrade() {
            if b.resident() + bytes as u64 > b.limit {
                b.make_room(heap, bytes as u64);
            }
        }
    }
}
