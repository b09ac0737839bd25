//! The shared memory budget and the three ways of handling pressure.
//!
//! Every app's heap reserves room with the budget before each allocation or swap-in, on
//! the allocating thread, and gives the reservation back once its own figures count the
//! new bytes ([`BudgetHook`]). A reservation that would take accounted memory (resident
//! app memory plus what others hold reserved) past the budget first makes room, there and
//! then, as the kernel would:
//! - `kill` kills the least recently used background app (Android's low-memory killer,
//!   chosen as the process mode's killer chooses: [`marvin_machine::lmk_policy`]);
//! - `page-swap` writes the least recently used page runs (unreferenced first, the
//!   foreground app's too) to their app's swap file synchronously and drops them (a Linux
//!   swap file);
//! - `marvin` asks the reclaimer for saved, clean, cold objects of background apps, in the
//!   policy's victim order and batch size; if that is not enough it falls back to a kill,
//!   as Android's killer still stands behind Marvin.
//!
//! Concurrent allocators make room side by side, as a kernel's direct reclaim does: no
//! lock is held while memory is taken back (kills alone are serialised, as there is one
//! killer). Each allocation that had to wait is one latency sample, from its request until
//! it could go on, whatever the policy did meanwhile.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use marvin_app::App;
use marvin_machine::lmk_policy;
use marvin_runtime::{AllocPressure, Heap};
use marvin_swap::reclaimer;
use marvin_swap::{AppStanding, SwapPolicy, VictimOrder};
use parking_lot::Mutex;

use super::policies::Handling;
use super::PressurePolicy;

/// What one make-room call asks for at least, as a kernel reclaims towards a watermark
/// rather than page by page (4 MiB: 1,024 pages), so that a run of small allocations
/// under pressure does not stop for each page. Marvin's policy caps what one victim
/// gives per request ([`SwapPolicy::reclaim_batch_bytes`]).
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

impl Member {
    /// Where the app stands for a victim chooser: in front or not, and when it last
    /// left the foreground (ns since the run began).
    fn standing(&self) -> lmk_policy::Standing<u64> {
        lmk_policy::Standing {
            id: self.id,
            foreground: self.foreground.load(Ordering::Relaxed),
            left_foreground: self.last_foreground_ns.load(Ordering::Relaxed),
        }
    }
}

/// Latency samples and counters of the pressure path.
#[derive(Default)]
pub struct PressureStats {
    /// One sample per allocation (or swap-in) that found no room: ns from its request
    /// until its room was reserved.
    pub stall_ns: Vec<u64>,
    /// Bytes reclaimed or paged out to make room.
    pub reclaimed_bytes: u64,
    /// Calls to the reclaimer or the page-out, one per victim asked.
    pub reclaim_calls: u64,
}

/// The budget shared by every app of a run.
pub struct Budget {
    pub limit: u64,
    pub pressure: PressurePolicy,
    pub members: Mutex<Vec<Arc<Member>>>,
    /// Marvin's policy: victim order and batch size of the reclaimer.
    policy: Arc<dyn SwapPolicy>,
    /// Bytes reserved by allocations and swap-ins under way, not yet in their heaps.
    reserved: AtomicU64,
    /// The most accounted memory (resident plus reserved) any reservation committed to.
    peak_committed: AtomicU64,
    /// Reservations that went past the budget because nothing was left to take, and
    /// by how much at most.
    over_budget_events: AtomicU64,
    max_over_budget: AtomicU64,
    /// One killer: concurrent allocators do not kill an app each for one shortfall.
    killer: Mutex<()>,
    /// Page-outs under way ([`Budget::page_out_for`]), and how many have booked bytes
    /// since the run began: a page-out that finds nothing while another is under way
    /// waits for that one's booking instead of going over the budget.
    paging_out: AtomicU64,
    paged_out: AtomicU64,
    pub stats: Mutex<PressureStats>,
    /// Asks the System to kill an app (it does the bookkeeping and the reaping).
    pub kill: Box<dyn Fn(usize) + Send + Sync>,
    pub start: Instant,
}

impl Budget {
    pub fn new(
        limit: u64,
        pressure: PressurePolicy,
        policy: Arc<dyn SwapPolicy>,
        kill: Box<dyn Fn(usize) + Send + Sync>,
    ) -> Budget {
        Budget {
            limit,
            pressure,
            members: Mutex::new(Vec::new()),
            policy,
            reserved: AtomicU64::new(0),
            peak_committed: AtomicU64::new(0),
            over_budget_events: AtomicU64::new(0),
            max_over_budget: AtomicU64::new(0),
            killer: Mutex::new(()),
            paging_out: AtomicU64::new(0),
            paged_out: AtomicU64::new(0),
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

    /// Alive members with their apps, but `except`.
    fn alive_but(&self, except: Option<usize>) -> Vec<(Arc<Member>, Arc<App>)> {
        let mut v = self.alive();
        v.retain(|(m, _)| Some(m.id) != except);
        v
    }

    /// Resident app memory as accounted: each alive app's objects in memory and what
    /// the runtime holds for it ([`App::charged_bytes`]).
    pub fn resident(&self) -> u64 {
        self.members
            .lock()
            .iter()
            .filter(|m| m.alive.load(Ordering::Relaxed))
            .filter_map(|m| m.app.upgrade())
            .map(|a| a.charged_bytes())
            .sum()
    }

    /// What the runtime holds for the alive apps ([`marvin_runtime::Heap::runtime_bytes`])
    /// and what it is charged at (part of [`Budget::resident`]).
    pub fn runtime(&self) -> (u64, u64) {
        self.alive().iter().fold((0, 0), |(held, charged), (_, a)| {
            (
                held + a.heap().runtime_bytes() as u64,
                charged + a.heap().runtime_charge() as u64,
            )
        })
    }

    /// The most accounted memory any reservation committed to (resident plus reserved).
    pub fn peak_committed(&self) -> u64 {
        self.peak_committed.load(Ordering::SeqCst)
    }

    /// Reservations that passed the budget, and the largest excess (bytes).
    pub fn over_budget(&self) -> (u64, u64) {
        (
            self.over_budget_events.load(Ordering::SeqCst),
            self.max_over_budget.load(Ordering::SeqCst),
        )
    }

    /// Reserves `bytes` if they fit: `Ok(accounted memory with them)`, else
    /// `Err(bytes short)`.
    ///
    /// Every growth of a heap is reserved first and released only once the heap counts
    /// it, so reading the reservations before the heaps never misses a growth: two
    /// allocators racing for the last room cannot both see it free (the later of the
    /// two adds sees the earlier's reservation).
    fn try_reserve(&self, bytes: u64) -> Result<u64, u64> {
        let reserved = self.reserved.fetch_add(bytes, Ordering::SeqCst) + bytes;
        let used = reserved + self.resident();
        if used <= self.limit {
            Ok(used)
        } else {
            self.reserved.fetch_sub(bytes, Ordering::SeqCst);
            Err(used - self.limit)
        }
    }

    /// How far `bytes` more would pass the budget now.
    fn shortfall(&self, bytes: u64) -> u64 {
        (self.reserved.load(Ordering::SeqCst) + self.resident() + bytes).saturating_sub(self.limit)
    }

    /// Reserves room for `bytes`, making room first when they do not fit; times the
    /// wait when there was one.
    pub(crate) fn reserve(&self, heap: &Heap, bytes: u64) {
        let t0 = Instant::now();
        let mut stalled = false;
        let committed = loop {
            match self.try_reserve(bytes) {
                Ok(used) => break used,
                Err(short) => {
                    stalled = true;
                    if !self.make_room(heap, bytes, short) {
                        // Nothing left to take: the allocation goes ahead over the
                        // budget, and that is counted.
                        let reserved = self.reserved.fetch_add(bytes, Ordering::SeqCst) + bytes;
                        break reserved + self.resident();
                    }
                }
            }
        };
        self.peak_committed.fetch_max(committed, Ordering::SeqCst);
        if committed > self.limit {
            self.over_budget_events.fetch_add(1, Ordering::SeqCst);
            self.max_over_budget
                .fetch_max(committed - self.limit, Ordering::SeqCst);
        }
        if stalled {
            self.stats
                .lock()
                .stall_ns
                .push(t0.elapsed().as_nanos() as u64);
        }
    }

    /// Gives back a reservation.
    pub(crate) fn release(&self, bytes: u64) {
        self.reserved.fetch_sub(bytes, Ordering::SeqCst);
    }

    /// Background members, least recently in the foreground first (never `except`), as
    /// the one victim chooser orders them ([`lmk_policy::lru_background`]).
    fn lru_background(&self, except: Option<usize>) -> Vec<(Arc<Member>, Arc<App>)> {
        let alive = self.alive_but(except);
        let standings: Vec<lmk_policy::Standing<u64>> =
            alive.iter().map(|(m, _)| m.standing()).collect();
        lmk_policy::lru_background(&standings)
            .into_iter()
            .filter_map(|id| alive.iter().find(|(m, _)| m.id == id).cloned())
            .collect()
    }

    /// Marvin's victims in the policy's order (never the requester, never the
    /// foreground).
    fn marvin_victims(&self, requester: Option<usize>) -> Vec<(Arc<Member>, Arc<App>)> {
        let apps = self.alive_but(requester);
        let by_size = self.policy.victim_order() == VictimOrder::LargestFirst;
        let standings: Vec<AppStanding> = apps
            .iter()
            .map(|(m, a)| (m.standing(), a))
            .map(|(st, a)| AppStanding {
                app: st.id as u32,
                foreground: st.foreground,
                last_foreground: st.left_foreground,
                reclaimable_bytes: if by_size {
                    reclaimer::reclaimable_bytes(a.heap())
                } else {
                    0
                },
            })
            .collect();
        self.policy
            .victims(&standings)
            .iter()
            .filter_map(|s| apps.iter().find(|(m, _)| m.id == s.app as usize).cloned())
            .collect()
    }

    fn member_of(&self, heap: &Heap) -> Option<usize> {
        self.alive()
            .iter()
            .find(|(_, a)| std::ptr::eq(a.heap(), heap))
            .map(|(m, _)| m.id)
    }

    /// Kills a background app if `bytes` still do not fit once the killer is free;
    /// true when there is room after (a kill, or another's). The victim is the process
    /// mode's killer's ([`lmk_policy::choose_victim`]): the highest `oom_score_adj` of the
    /// background apps' LRU states, which is the least recently used (of more than a
    /// hundred cached apps, which share the band's top, the one holding most).
    fn kill_for(&self, requester: Option<usize>, bytes: u64) -> bool {
        let _one_killer = self.killer.lock();
        if self.shortfall(bytes) == 0 {
            return true;
        }
        let lru = self.lru_background(requester);
        let ids: Vec<usize> = lru.iter().map(|(m, _)| m.id).collect();
        let candidates: Vec<lmk_policy::Candidate> = lmk_policy::background_states(&ids)
            .into_iter()
            .zip(&lru)
            .map(|((id, state), (_, app))| lmk_policy::Candidate {
                pid: id as u32,
                adj: lmk_policy::oom_score_adj(state),
                rss_bytes: app.charged_bytes(),
            })
            .collect();
        let victim = lmk_policy::choose_victim(&candidates, lmk_policy::FOREGROUND_APP_ADJ);
        match victim.and_then(|v| lru.iter().find(|(m, _)| m.id == v.pid as usize)) {
            Some((m, _)) => {
                m.alive.store(false, Ordering::SeqCst);
                (self.kill)(m.id);
                true
            }
            None => false,
        }
    }

    /// Takes memory from `victims` in order until `short` (at least a batch) is back.
    fn take(
        &self,
        victims: Vec<(Arc<Member>, Arc<App>)>,
        short: u64,
        take: &dyn Fn(&App, u64) -> u64,
    ) -> u64 {
        let want = short.max(RECLAIM_BATCH);
        let (mut got, mut calls) = (0, 0);
        for (_, a) in victims {
            if got >= want {
                break;
            }
            got += take(&a, want - got);
            calls += 1;
        }
        let mut st = self.stats.lock();
        st.reclaimed_bytes += got;
        st.reclaim_calls += calls;
        got
    }

    /// Makes room ahead of a launch: before the System tells app `app` to come to the
    /// foreground, takes back memory of the other apps until `bytes` more fit under
    /// the budget, so that the launch's faults do not wait for reclaim (as Android's
    /// activity manager trims memory for the app that is coming back, or a kernel's
    /// reclaim keeps a watermark free). Marvin reclaims saved, clean, cold objects of
    /// background apps in its victim order; page-swap pages out in its LRU order;
    /// kill takes nothing ahead (the killer acts when an allocation needs the room).
    /// Returns the bytes taken.
    pub fn make_room_ahead(&self, app: usize, bytes: u64) -> u64 {
        let short = self.shortfall(bytes);
        if short == 0 {
            return 0;
        }
        match self.pressure.handling() {
            Handling::Kill | Handling::KernelSwap => 0,
            Handling::ReclaimObjects => {
                let victims = self.marvin_victims(Some(app));
                self.take(victims, short, &|a, want| {
                    a.reclaim(self.policy.reclaim_batch_bytes(want))
                        .map_or(0, |r| r.bytes)
                })
            }
            Handling::PageOut => self.counted_page_out(self.lru_background(Some(app)), short),
        }
    }

    /// Makes room for an allocation of `bytes` that is `short` bytes over the budget;
    /// false when nothing could be taken.
    fn make_room(&self, heap: &Heap, bytes: u64, short: u64) -> bool {
        let requester = self.member_of(heap);
        match self.pressure.handling() {
            // Kernel swap never runs in this model (the registry says so).
            Handling::Kill | Handling::KernelSwap => self.kill_for(requester, bytes),
            // Saved, clean, cold objects of background apps, in the policy's order,
            // at most the policy's batch from each; then the killer.
            Handling::ReclaimObjects => {
                let victims = self.marvin_victims(requester);
                let got = self.take(victims, short, &|a, want| {
                    a.reclaim(self.policy.reclaim_batch_bytes(want))
                        .map_or(0, |r| r.bytes)
                });
                got > 0 || self.kill_for(requester, bytes)
            }
            // Any page run, background apps first, then the foreground ones with the
            // requester last: a kernel's LRU spans every process.
            Handling::PageOut => {
                let mut order = self.lru_background(requester);
                let (fg, rest): (Vec<_>, Vec<_>) = self
                    .alive()
                    .into_iter()
                    .filter(|(m, _)| {
                        m.foreground.load(Ordering::Relaxed) || Some(m.id) == requester
                    })
                    .partition(|(m, _)| Some(m.id) != requester);
                order.extend(fg);
                order.extend(rest);
                self.page_out_for(order, short)
            }
        }
    }
}

/// How long a page-out that found nothing waits at most (in steps of 200 us) for the
/// page-outs under way beside it to book what they dropped (a page-out writes a few MiB:
/// milliseconds).
const PAGE_OUT_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

impl Budget {
    /// Page-swap's make-room: pages out of `order` until `short` is back; true when there
    /// may be room now. Concurrent page-outs run side by side, and each books what it
    /// dropped only at the end of its pass (after charging the swap file's index growth
    /// out of it): one that runs beside another finds the runs the other holds locked or
    /// has dropped, takes nothing, and, were that the end of it, its allocation would go
    /// ahead over the budget while the other's freed bytes were still on the books. So a
    /// page-out that takes nothing waits for those under way beside it, and when one of
    /// them booked bytes meanwhile its allocation tries to reserve again; only when none
    /// did is there nothing left to take.
    fn page_out_for(&self, order: Vec<(Arc<Member>, Arc<App>)>, short: u64) -> bool {
        let seen = self.paged_out.load(Ordering::SeqCst);
        self.counted_page_out(order, short) > 0 || self.another_paged_out(seen)
    }

    /// Pages out of `order` until `short` is back, counted as under way meanwhile and, when
    /// it booked bytes, as done (what [`Budget::another_paged_out`] waits for): an
    /// allocation's make-room and the launch's make-room ahead alike. Returns the bytes.
    fn counted_page_out(&self, order: Vec<(Arc<Member>, Arc<App>)>, short: u64) -> u64 {
        self.paging_out.fetch_add(1, Ordering::SeqCst);
        let got = self.take(order, short, &|a, want| a.page_out(want).bytes);
        if got > 0 {
            self.paged_out.fetch_add(1, Ordering::SeqCst);
        }
        self.paging_out.fetch_sub(1, Ordering::SeqCst);
        got
    }

    /// Whether a page-out other than the caller's booked bytes since `seen` (the count of
    /// page-outs that had when the caller began), waiting at most [`PAGE_OUT_WAIT`] for
    /// those under way to finish.
    fn another_paged_out(&self, seen: u64) -> bool {
        let t0 = Instant::now();
        loop {
            if self.paged_out.load(Ordering::SeqCst) != seen {
                return true;
            }
            if self.paging_out.load(Ordering::SeqCst) == 0 || t0.elapsed() > PAGE_OUT_WAIT {
                return false;
            }
            // A page-out writes up to a few MiB: sleep a little rather than spin on a core.
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
}

/// The hook a heap calls; holds the budget weakly so apps do not keep it alive.
pub struct BudgetHook(pub Weak<Budget>);

impl AllocPressure for BudgetHook {
    fn reserve(&self, heap: &Heap, bytes: usize) {
        if let Some(b) = self.0.upgrade() {
            b.reserve(heap, bytes as u64);
        }
    }

    fn release(&self, _heap: &Heap, bytes: usize) {
        if let Some(b) = self.0.upgrade() {
            b.release(bytes as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The policy file's `[reclaimer]` settings decide what marvin's make-room takes:
    //! three background apps of different sizes, saved ahead of time, and a foreground
    //! app whose allocation finds the budget full.

    use super::*;
    use marvin_app::{RunConfig, SwapMode};
    use marvin_interpreter::exec::Loaded;
    use marvin_interpreter::{asm, verify};
    use marvin_runtime::HeapConfig;
    use marvin_runtime::ObjKind;
    use marvin_swap::{PolicyConfig, ReclaimBatch};

    /// One int array of the benchmarks' reclaim workload (`marvin bench reclaim`): 509
    /// words, 4 KiB with its header.
    const ARRAY_WORDS: u32 = 509;
    const ARRAY_BYTES: u64 = 4096;

    const MIB: u64 = 1 << 20;
    /// Background apps' sizes, in the order they left the foreground (app0 longest ago).
    const SIZES: [u64; 3] = [2 * MIB, 6 * MIB, 3 * MIB];

    struct World {
        budget: Arc<Budget>,
        apps: Vec<Arc<App>>,
        _members: Vec<Arc<Member>>,
        _dir: tempfile::TempDir,
    }

    fn world(policy: PolicyConfig) -> World {
        let p = asm::assemble(
            "idle.masm",
            ".method main args=0 locals=0\n  push 0\n  ret\n.end\n",
        )
        .unwrap();
        let loaded = Arc::new(Loaded::new(verify::verify(p).unwrap()));
        let dir = tempfile::tempdir().unwrap();
        let policy: Arc<dyn SwapPolicy> = Arc::new(policy);
        let total: u64 = SIZES.iter().sum();
        // Full: the foreground app's next array does not fit.
        let budget = Arc::new(Budget::new(
            total,
            PressurePolicy::Marvin,
            policy.clone(),
            Box::new(|_| {}),
        ));
        let (mut apps, mut members) = (Vec::new(), Vec::new());
        // The background apps with their sizes, then the foreground app (`None`).
        let sizes = SIZES.iter().copied().map(Some).chain([None]);
        for (id, size) in sizes.enumerate() {
            let app = Arc::new(
                App::new(
                    loaded.clone(),
                    RunConfig {
                        heap: HeapConfig {
                            handle_capacity: 1 << 13,
                            ..HeapConfig::default()
                        },
                        out: Box::new(std::io::sink()),
                        ..RunConfig::default()
                    },
                )
                .unwrap(),
            );
            app.enable_swap(
                dir.path(),
                &format!("app{id}"),
                policy.clone(),
                SwapMode::Objects,
            )
            .unwrap();
            let foreground = size.is_none();
            if let Some(size) = size {
                // Kept alive by the app's handle table (nothing collects here).
                for _ in 0..size / ARRAY_BYTES {
                    app.heap()
                        .alloc(ObjKind::IntArray, 0, ARRAY_WORDS, 0)
                        .unwrap();
                }
                app.enter_background().unwrap();
                app.save_now(true).unwrap();
                for _ in 0..5 {
                    app.working_set_round();
                }
                assert_eq!(app.resident_bytes(), size);
            }
            let member = Arc::new(Member {
                id,
                app: Arc::downgrade(&app),
                foreground: AtomicBool::new(foreground),
                last_foreground_ns: AtomicU64::new(id as u64),
                alive: AtomicBool::new(true),
            });
            budget.members.lock().push(member.clone());
            members.push(member);
            apps.push(app);
        }
        World {
            budget,
            apps,
            _members: members,
            _dir: dir,
        }
    }

    /// The foreground app asks for one array's room; returns what each background app
    /// gave.
    fn make_room(policy: PolicyConfig) -> Vec<u64> {
        let w = world(policy);
        let fg = w.apps.last().unwrap();
        w.budget.reserve(fg.heap(), ARRAY_BYTES);
        w.budget.release(ARRAY_BYTES);
        assert_eq!(
            w.budget.stats.lock().stall_ns.len(),
            1,
            "one allocation waited"
        );
        assert_eq!(w.budget.over_budget(), (0, 0));
        SIZES
            .iter()
            .zip(&w.apps)
            .map(|(size, a)| size - a.resident_bytes())
            .collect()
    }

    #[test]
    fn lru_takes_from_the_app_longest_in_the_background_first() {
        let given = make_room(PolicyConfig::default());
        // At least a batch (4 MiB): all of app0, then the rest from app1.
        assert_eq!(given[0], SIZES[0], "{given:?}");
        assert!(given[1] >= RECLAIM_BATCH - SIZES[0], "{given:?}");
        assert_eq!(given[2], 0, "{given:?}");
    }

    #[test]
    fn largest_first_takes_from_the_largest_app_first() {
        let mut p = PolicyConfig::default();
        p.reclaimer.victim_order = VictimOrder::LargestFirst;
        let given = make_room(p);
        assert_eq!(given[0], 0, "{given:?}");
        assert!(given[1] >= RECLAIM_BATCH, "{given:?}");
        assert_eq!(given[2], 0, "{given:?}");
    }

    #[test]
    fn a_batch_caps_what_each_victim_gives_per_request() {
        let mut p = PolicyConfig::default();
        p.reclaimer.batch_bytes = ReclaimBatch::Bytes(MIB);
        let given = make_room(p);
        assert_eq!(
            given,
            [MIB, MIB, MIB],
            "a mebibyte from each, in one request"
        );
    }

    #[test]
    fn room_ahead_of_a_launch_spares_the_app_coming_back() {
        let w = world(PolicyConfig::default());
        // App 0, the least recently used, is about to come back: the others give.
        let got = w.budget.make_room_ahead(0, 3 * MIB);
        let given: Vec<u64> = SIZES
            .iter()
            .zip(&w.apps)
            .map(|(size, a)| size - a.resident_bytes())
            .collect();
        assert_eq!(
            given[0], 0,
            "the app coming back keeps its memory: {given:?}"
        );
        assert!(given[1] >= 3 * MIB, "{given:?}");
        assert_eq!(got, given.iter().sum::<u64>());
        assert_eq!(w.budget.shortfall(3 * MIB), 0, "the room is there");
        assert_eq!(
            w.budget.make_room_ahead(0, 3 * MIB),
            0,
            "nothing more to do"
        );
        assert!(
            w.budget.stats.lock().stall_ns.is_empty(),
            "no allocation waited"
        );
    }

    #[test]
    fn a_page_out_that_takes_nothing_tries_again_only_when_another_booked_meanwhile() {
        let b = Budget::new(
            1 << 20,
            PressurePolicy::PageSwap,
            Arc::new(PolicyConfig::default()),
            Box::new(|_| {}),
        );
        // Nothing under way and nothing booked: nothing is left to take.
        assert!(!b.page_out_for(Vec::new(), 4096));
        // Another page-out booked since this one began: the allocation tries again.
        let seen = b.paged_out.load(Ordering::SeqCst);
        b.paged_out.fetch_add(1, Ordering::SeqCst);
        assert!(b.another_paged_out(seen));
        // One under way, which books while this one waits for it.
        let seen = b.paged_out.load(Ordering::SeqCst);
        b.paging_out.fetch_add(1, Ordering::SeqCst);
        std::thread::scope(|s| {
            s.spawn(|| {
                b.paged_out.fetch_add(1, Ordering::SeqCst);
                b.paging_out.fetch_sub(1, Ordering::SeqCst);
            });
            assert!(b.another_paged_out(seen));
        });
        // One under way that books nothing: once it ends, nothing is left.
        let seen = b.paged_out.load(Ordering::SeqCst);
        b.paging_out.fetch_add(1, Ordering::SeqCst);
        std::thread::scope(|s| {
            s.spawn(|| {
                b.paging_out.fetch_sub(1, Ordering::SeqCst);
            });
            assert!(!b.another_paged_out(seen));
        });
    }
}
