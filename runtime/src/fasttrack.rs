//! Fast-tracked lock holders: when a latency-critical thread (an app's main looper) blocks
//! on a runtime lock, the threads holding that lock are boosted at once, and restored when
//! they release it.
//!
//! A low-priority thread holding a lock the looper wants is delayed mostly by waiting for a
//! CPU, not by its critical section; giving it the CPU first shortens the looper's wait. The
//! runtime's locks a looper can wait on record their holders (a monitor its owner; a shared
//! lock up to [`MAX_READERS`] readers in a [`ReaderSet`]) and call [`FastTracker::on_block`]
//! when a latency-critical thread is about to wait, and [`FastTracker::on_release`] when a
//! holder lets go. The DeliQueue has no internal lock waits (it is lock-free; the looper only
//! sleeps on its futex when it has nothing to do), so it needs no hook.
//!
//! Three [`Mode`]s, compared by `marvin bench inversion`:
//! - [`Mode::Off`]: nothing happens; the holder runs at whatever priority it has.
//! - [`Mode::Inherit`]: priority inheritance only: the holder gets the waiter's nice value
//!   (never a weaker one than it has), as a priority-inheriting mutex would give it.
//! - [`Mode::FastTrack`]: the holder gets [`FastTracker::fast_nice`] (by default
//!   [`FAST_TRACK_NICE`], the strongest CFS weight), ahead of every normal thread including
//!   the waiter's peers, for what is left of its critical section.
//!
//! Priorities are nice values set per thread (`setpriority(PRIO_PROCESS, tid)`), through the
//! [`Priorities`] trait so tests can use a mock. Raising a priority needs `CAP_SYS_NICE` (or
//! a high enough `RLIMIT_NICE`); without it the tracker says so once on stderr, counts the
//! refusal and carries on. Every boost, restore and refusal is reported to an optional
//! observer (the interpreter records them in the trace).
//!
//! Spinning on a fast-tracked holder: once a holder is boosted, the waiter's expected wait is
//! what is left of one critical section run at full speed, often shorter than a park and a
//! wake-up. [`FastTracker::spin_on_holder`] lets the waiter spin (lock released) while the
//! boosted holder is on a CPU (its scheduler clock advances), for at most an adaptive budget
//! (twice the recent successful spins, between [`SPIN_MIN_NS`] and the tracker's limit,
//! [`SPIN_LIMIT_NS`] by default), and stops at once when the holder has not run for
//! [`SPIN_STALL_NS`]: an adaptive mutex's rule (spin while the owner runs, then sleep). It
//! spins only on holders this tracker boosted, so [`Mode::Off`] never spins. The spin's CPU
//! time is part of the detector's overhead ([`Stats::cpu_ns`], and on its own in
//! [`Stats::spin_cpu_ns`]).
//!
//! Sticky fast track for known blockers (as SuperPass's lock-level detector, which tracks a
//! bounded number of blockers): in [`Mode::FastTrack`], a thread that blocked a
//! latency-critical thread on a lock is remembered as a *known blocker* of that lock, in a
//! table of at most [`MAX_KNOWN_BLOCKERS`] entries (the oldest is evicted when it is full);
//! an entry expires when its thread has not blocked a latency-critical thread on that lock
//! for [`KNOWN_BLOCKER_TTL_NS`]. When a known blocker *acquires* that lock again, the lock
//! calls [`FastTracker::on_acquire`] and the thread is boosted at once, for its whole hold,
//! and restored at release as any boost: it is not preempted inside its critical section,
//! so the looper is less likely to find the lock held at all, and waits less when it does.
//! The check on acquisition is a scan of [`MAX_KNOWN_BLOCKERS`] atomics when the acquirer is
//! not a known blocker; a sticky boost's syscalls count in [`Stats::cpu_ns`], and it is
//! reported as an [`Event::Boost`] with `sticky: true`. [`Mode::Inherit`] boosts only while
//! a latency-critical thread waits, and [`Mode::Off`] never, so neither remembers blockers.
//!
//! Ordering contract for lock implementations: call `on_block` while the lock's own state
//! cannot change (under its internal mutex) and `on_release` under the same mutex, so a
//! release always sees a boost made before it.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use crate::cpuclock::{self, CpuClockType};

/// The nice value [`Mode::FastTrack`] gives a holder by default.
pub const FAST_TRACK_NICE: i32 = -20;

/// Longest a waiter spins on a fast-tracked holder before parking, by default.
pub const SPIN_LIMIT_NS: u64 = 400_000;
/// Shortest spin budget the adaptation goes down to.
pub const SPIN_MIN_NS: u64 = 20_000;
/// A holder whose scheduler clock has not advanced for this long is not on a CPU: the
/// waiter stops spinning and parks.
pub const SPIN_STALL_NS: u64 = 50_000;

/// How a [`FastTracker::spin_on_holder`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinEnd {
    /// No spin (nothing fast-tracked, or spinning disabled).
    Skipped,
    /// The lock became free: take it without parking.
    Free,
    /// The spin budget ran out while the holder still ran.
    Budget,
    /// The holder stopped running (or is gone): park.
    Stalled,
}

/// Known blockers a tracker remembers (the oldest is evicted beyond this).
pub const MAX_KNOWN_BLOCKERS: usize = 8;
/// A known blocker that has not blocked a latency-critical thread on its lock for this long
/// is forgotten.
pub const KNOWN_BLOCKER_TTL_NS: u64 = 1_000_000_000;

/// Readers a shared lock records for fast tracking (more readers are not boosted).
pub const MAX_READERS: usize = 4;

/// What a latency-critical thread blocking on a lock does to the lock's holders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Off,
    Inherit,
    FastTrack,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "off" => Ok(Mode::Off),
            "inherit" => Ok(Mode::Inherit),
            "fasttrack" | "fast-track" => Ok(Mode::FastTrack),
            _ => Err(format!(
                "unknown fast-track mode {s:?} (expected off, inherit or fasttrack)"
            )),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Off => "off",
            Mode::Inherit => "inherit",
            Mode::FastTrack => "fasttrack",
        })
    }
}

/// Identifies one lock across the process: a domain (one lock table, from [`new_domain`])
/// and the lock's id within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LockKey {
    pub domain: u64,
    pub id: u64,
}

/// A fresh lock domain id, unique in the process.
pub fn new_domain() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

thread_local! {
    static LATENCY_CRITICAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread latency-critical (an app's main looper) or not.
pub fn set_latency_critical(critical: bool) {
    LATENCY_CRITICAL.with(|c| c.set(critical));
}

/// Whether the calling thread is latency-critical.
pub fn is_latency_critical() -> bool {
    LATENCY_CRITICAL.with(|c| c.get())
}

/// Reads and sets thread nice values.
pub trait Priorities: Send + Sync {
    /// The nice value of thread `tid`.
    fn nice_of(&self, tid: i32) -> io::Result<i32>;
    /// Sets the nice value of thread `tid`.
    fn set_nice(&self, tid: i32, nice: i32) -> io::Result<()>;
}

/// The operating system's thread priorities (`getpriority`/`setpriority` on a tid).
#[derive(Clone, Copy, Debug, Default)]
pub struct OsPriorities;

impl Priorities for OsPriorities {
    fn nice_of(&self, tid: i32) -> io::Result<i32> {
        thread_nice(tid)
    }
    fn set_nice(&self, tid: i32, nice: i32) -> io::Result<()> {
        set_thread_nice(tid, nice)
    }
}

/// The nice value of thread `tid` (0 = the calling thread).
pub fn thread_nice(tid: i32) -> io::Result<i32> {
    // getpriority may legitimately return -1, so errno tells errors apart.
    // SAFETY: errno is the calling thread's own; getpriority has no memory preconditions.
    let nice = unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS, tid.max(0) as libc::id_t)
    };
    let err = io::Error::last_os_error();
    if nice == -1 && err.raw_os_error().unwrap_or(0) != 0 {
        return Err(err);
    }
    Ok(nice)
}

/// Sets the nice value of thread `tid` (0 = the calling thread).
pub fn set_thread_nice(tid: i32, nice: i32) -> io::Result<()> {
    // SAFETY: setpriority has no memory preconditions; a bad tid is an error return.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid.max(0) as libc::id_t, nice) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Something the tracker did, reported to its observer on the thread that did it: boosts on
/// the blocked (latency-critical) thread, restores on the releasing holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A holder was boosted: because `waiter_tid` blocked on `lock` now, or (`sticky`) on
    /// its acquisition of `lock`, as a known blocker that last blocked `waiter_tid`.
    Boost {
        lock: LockKey,
        holder_tid: i32,
        waiter_tid: i32,
        from_nice: i32,
        to_nice: i32,
        sticky: bool,
    },
    Restore {
        holder_tid: i32,
        nice: i32,
    },
    /// The system refused a boost (no privilege); the holder keeps its priority.
    Denied {
        holder_tid: i32,
        error: String,
    },
}

/// Counts of what a tracker did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Times a latency-critical thread blocked on a lock (with the tracker on).
    pub blocks: u64,
    pub boosts: u64,
    pub restores: u64,
    pub denied: u64,
    /// CPU time spent in the tracker's block, spin and release paths (the detector's
    /// overhead, spins included).
    pub cpu_ns: u64,
    /// Spins on a fast-tracked holder, and how many ended with the lock free.
    pub spins: u64,
    pub spins_acquired: u64,
    /// Spins that stopped because the holder was not running.
    pub spins_stalled: u64,
    /// CPU time spent spinning (also counted in `cpu_ns`).
    pub spin_cpu_ns: u64,
    /// Boosts of known blockers on acquisition (also counted in `boosts`).
    pub sticky_boosts: u64,
}

type Observer = Box<dyn Fn(&Event) + Send + Sync>;

/// A monotonic clock in nanoseconds, for the known blockers' expiry.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// A thread that blocked a latency-critical thread on a lock.
#[derive(Clone, Copy, Debug)]
struct KnownBlocker {
    lock: LockKey,
    tid: i32,
    /// The latency-critical thread it blocked last.
    waiter_tid: i32,
    /// When it last blocked one (tracker clock).
    last_ns: u64,
}

/// The known blockers, at most [`MAX_KNOWN_BLOCKERS`]. `tids` mirrors the slots' thread ids
/// (0 = free) so that an acquisition by a thread that is not in the table costs a scan of
/// atomics and no lock; it is written only under the `slots` mutex.
#[derive(Default)]
struct KnownBlockers {
    slots: Mutex<[Option<KnownBlocker>; MAX_KNOWN_BLOCKERS]>,
    tids: [AtomicI32; MAX_KNOWN_BLOCKERS],
}

impl KnownBlockers {
    fn may_know(&self, tid: i32) -> bool {
        // Relaxed: a hint; a blocker recorded concurrently is found on its next acquisition.
        self.tids.iter().any(|t| t.load(Ordering::Relaxed) == tid)
    }

    /// Records (or refreshes) `tid` as a blocker of `lock`, evicting the oldest entry when
    /// the table is full.
    fn remember(&self, lock: LockKey, tid: i32, waiter_tid: i32, now: u64) {
        let mut slots = self.slots.lock();
        let i = slots
            .iter()
            .position(|s| matches!(s, Some(b) if b.lock == lock && b.tid == tid))
            .or_else(|| slots.iter().position(Option::is_none))
            .unwrap_or_else(|| {
                (0..MAX_KNOWN_BLOCKERS)
                    .min_by_key(|&i| slots[i].map_or(0, |b| b.last_ns))
                    .expect("non-empty table")
            });
        slots[i] = Some(KnownBlocker {
            lock,
            tid,
            waiter_tid,
            last_ns: now,
        });
        self.tids[i].store(tid, Ordering::Relaxed);
    }

    /// The latency-critical thread that `tid` last blocked on `lock`, if `tid` is a known
    /// blocker of it; drops expired entries on the way.
    fn lookup(&self, lock: LockKey, tid: i32, now: u64) -> Option<i32> {
        let mut slots = self.slots.lock();
        let mut found = None;
        for (i, slot) in slots.iter_mut().enumerate() {
            let Some(b) = *slot else { continue };
            if now.saturating_sub(b.last_ns) > KNOWN_BLOCKER_TTL_NS {
                *slot = None;
                self.tids[i].store(0, Ordering::Relaxed);
            } else if b.lock == lock && b.tid == tid {
                found = Some(b.waiter_tid);
            }
        }
        found
    }

    fn len(&self) -> usize {
        self.slots.lock().iter().flatten().count()
    }
}

/// A boosted holder: its own nice value, the boost it has, and the locks it was boosted for.
struct Boost {
    saved_nice: i32,
    nice: i32,
    locks: Vec<LockKey>,
}

/// The tracker's record of boosted holders.
#[derive(Default)]
struct Boosts {
    holders: HashMap<i32, Boost>,
    /// Holders whose boost is being undone outside this mutex, with their own nice value:
    /// a boost made meanwhile starts from that value and is re-applied after the restore.
    restoring: HashMap<i32, i32>,
}

/// Boosts the holders of locks that latency-critical threads wait on (see the module doc).
pub struct FastTracker {
    mode: Mode,
    fast_nice: i32,
    priorities: Arc<dyn Priorities>,
    boosted: Mutex<Boosts>,
    /// Number of boosted holders: the release path's one relaxed load when nobody is.
    active: AtomicUsize,
    warned: AtomicBool,
    observer: Mutex<Option<Arc<Observer>>>,
    blocks: AtomicU64,
    boosts: AtomicU64,
    restores: AtomicU64,
    denied: AtomicU64,
    cpu_ns: AtomicU64,
    /// Upper bound of a spin (0: never spin).
    spin_limit_ns: u64,
    /// Moving average of recent spin lengths (successful or timed out while the holder ran);
    /// the budget is twice this, clamped.
    spin_avg_ns: AtomicU64,
    spins: AtomicU64,
    spins_acquired: AtomicU64,
    spins_stalled: AtomicU64,
    spin_cpu_ns: AtomicU64,
    known: KnownBlockers,
    clock: Clock,
    sticky_boosts: AtomicU64,
}

impl std::fmt::Debug for FastTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastTracker")
            .field("mode", &self.mode)
            .field("fast_nice", &self.fast_nice)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl FastTracker {
    /// A tracker in `mode` setting priorities through `priorities`.
    pub fn new(mode: Mode, priorities: Arc<dyn Priorities>) -> FastTracker {
        FastTracker {
            mode,
            fast_nice: FAST_TRACK_NICE,
            priorities,
            boosted: Mutex::new(Boosts::default()),
            active: AtomicUsize::new(0),
            warned: AtomicBool::new(false),
            observer: Mutex::new(None),
            blocks: AtomicU64::new(0),
            boosts: AtomicU64::new(0),
            restores: AtomicU64::new(0),
            denied: AtomicU64::new(0),
            cpu_ns: AtomicU64::new(0),
            spin_limit_ns: SPIN_LIMIT_NS,
            spin_avg_ns: AtomicU64::new(SPIN_LIMIT_NS / 2),
            spins: AtomicU64::new(0),
            spins_acquired: AtomicU64::new(0),
            spins_stalled: AtomicU64::new(0),
            spin_cpu_ns: AtomicU64::new(0),
            known: KnownBlockers::default(),
            clock: {
                let origin = Instant::now();
                Arc::new(move || origin.elapsed().as_nanos() as u64)
            },
            sticky_boosts: AtomicU64::new(0),
        }
    }

    /// Uses `clock` (monotonic nanoseconds) for the known blockers' expiry instead of the
    /// time since the tracker was made.
    pub fn with_clock(mut self, clock: Clock) -> FastTracker {
        self.clock = clock;
        self
    }

    /// Number of known blockers remembered now (expired ones included until the next
    /// acquisition by a known blocker drops them).
    pub fn known_blockers(&self) -> usize {
        self.known.len()
    }

    /// A tracker in `mode` on the operating system's priorities.
    pub fn os(mode: Mode) -> FastTracker {
        FastTracker::new(mode, Arc::new(OsPriorities))
    }

    /// Sets the nice value [`Mode::FastTrack`] gives holders.
    pub fn with_fast_nice(mut self, nice: i32) -> FastTracker {
        self.fast_nice = nice.clamp(-20, 19);
        self
    }

    /// Sets the longest spin on a fast-tracked holder (0: always park at once).
    pub fn with_spin_limit_ns(mut self, limit_ns: u64) -> FastTracker {
        self.spin_limit_ns = limit_ns;
        self.spin_avg_ns = AtomicU64::new(limit_ns / 2);
        self
    }

    pub fn spin_limit_ns(&self) -> u64 {
        self.spin_limit_ns
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn fast_nice(&self) -> i32 {
        self.fast_nice
    }

    /// Reports every later event to `observer` (replacing any earlier one).
    pub fn set_observer(&self, observer: impl Fn(&Event) + Send + Sync + 'static) {
        *self.observer.lock() = Some(Arc::new(Box::new(observer)));
    }

    pub fn stats(&self) -> Stats {
        Stats {
            blocks: self.blocks.load(Ordering::Relaxed),
            boosts: self.boosts.load(Ordering::Relaxed),
            restores: self.restores.load(Ordering::Relaxed),
            denied: self.denied.load(Ordering::Relaxed),
            cpu_ns: self.cpu_ns.load(Ordering::Relaxed),
            spins: self.spins.load(Ordering::Relaxed),
            spins_acquired: self.spins_acquired.load(Ordering::Relaxed),
            spins_stalled: self.spins_stalled.load(Ordering::Relaxed),
            spin_cpu_ns: self.spin_cpu_ns.load(Ordering::Relaxed),
            sticky_boosts: self.sticky_boosts.load(Ordering::Relaxed),
        }
    }

    /// Whether `holder_tid` is boosted now.
    pub fn is_boosted(&self, holder_tid: i32) -> bool {
        self.boosted.lock().holders.contains_key(&holder_tid)
    }

    /// The calling thread, latency-critical, with OS thread id `waiter_tid`, is about to
    /// wait for `lock`, held by `holders` (tids; non-positive ones are ignored). Does nothing
    /// unless the calling thread is latency-critical and the mode is not `Off`.
    pub fn on_block(&self, lock: LockKey, waiter_tid: i32, holders: &[i32]) {
        if self.mode == Mode::Off || !is_latency_critical() {
            return;
        }
        let cpu0 = cpuclock::thread_cpu_time_ns();
        self.blocks.fetch_add(1, Ordering::Relaxed);
        let target = match self.mode {
            Mode::Inherit => self.priorities.nice_of(waiter_tid).unwrap_or(0),
            _ => self.fast_nice,
        };
        let mut events = Vec::new();
        let blockers = || {
            holders
                .iter()
                .copied()
                .filter(|&t| t > 0 && t != waiter_tid)
        };
        {
            let mut boosted = self.boosted.lock();
            for holder in blockers() {
                self.boost_one(
                    &mut boosted,
                    lock,
                    (holder, waiter_tid),
                    target,
                    false,
                    &mut events,
                );
            }
        }
        if self.mode == Mode::FastTrack {
            let now = (self.clock)();
            for holder in blockers() {
                self.known.remember(lock, holder, waiter_tid, now);
            }
        }
        self.cpu_ns.fetch_add(
            cpuclock::thread_cpu_time_ns().saturating_sub(cpu0),
            Ordering::Relaxed,
        );
        self.report(&events);
    }

    /// Boosts `holder` to `target` for `lock` on behalf of `waiter_tid` (`sticky`: on its
    /// acquisition, as a known blocker).
    fn boost_one(
        &self,
        boosts: &mut Boosts,
        lock: LockKey,
        (holder, waiter_tid): (i32, i32),
        target: i32,
        sticky: bool,
        events: &mut Vec<Event>,
    ) {
        let boosted = &mut boosts.holders;
        let current = match (boosted.get(&holder), boosts.restoring.get(&holder)) {
            (Some(b), _) => b.nice,
            // Its restore is under way: its own priority is what it is going back to.
            (None, Some(&own)) => own,
            (None, None) => match self.priorities.nice_of(holder) {
                Ok(n) => n,
                // The holder is gone (it exited): nothing to boost.
                Err(_) => return,
            },
        };
        if current > target {
            if let Err(e) = self.priorities.set_nice(holder, target) {
                self.denied.fetch_add(1, Ordering::Relaxed);
                if !self.warned.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "warning: cannot raise a lock holder's priority ({e}); fast-tracking \
                         needs CAP_SYS_NICE or RLIMIT_NICE, continuing without it"
                    );
                }
                events.push(Event::Denied {
                    holder_tid: holder,
                    error: e.to_string(),
                });
                return;
            }
            self.boosts.fetch_add(1, Ordering::Relaxed);
            if sticky {
                self.sticky_boosts.fetch_add(1, Ordering::Relaxed);
            }
            events.push(Event::Boost {
                lock,
                holder_tid: holder,
                waiter_tid,
                from_nice: current,
                to_nice: target,
                sticky,
            });
        } else if !boosted.contains_key(&holder) {
            // Already at least as strong as the boost: nothing to undo later.
            return;
        }
        let entry = boosted.entry(holder).or_insert_with(|| {
            // Relaxed: read under the same lock-state mutex by `on_release` (module doc).
            self.active.fetch_add(1, Ordering::Relaxed);
            Boost {
                saved_nice: current,
                nice: current,
                locks: Vec::new(),
            }
        });
        entry.nice = entry.nice.min(target);
        if !entry.locks.contains(&lock) {
            entry.locks.push(lock);
        }
    }

    /// The calling latency-critical thread, whose [`FastTracker::on_block`] boosted
    /// `holder_tid`, spins (with the lock's internal mutex released) until `is_free` says the
    /// lock can be taken, the holder stops running ([`SPIN_STALL_NS`] without CPU progress),
    /// or the adaptive budget runs out (module doc); [`SpinEnd::Free`] tells the caller to
    /// take the lock without parking. Returns [`SpinEnd::Skipped`] at once when the mode is
    /// `Off`, spinning is disabled, the caller is not latency-critical, or `holder_tid` is
    /// not boosted by this tracker.
    pub fn spin_on_holder(&self, holder_tid: i32, mut is_free: impl FnMut() -> bool) -> SpinEnd {
        if self.mode == Mode::Off
            || self.spin_limit_ns == 0
            || !is_latency_critical()
            || !self.is_boosted(holder_tid)
        {
            return SpinEnd::Skipped;
        }
        let cpu0 = cpuclock::thread_cpu_time_ns();
        let start = Instant::now();
        let budget = (2 * self.spin_avg_ns.load(Ordering::Relaxed))
            .clamp(SPIN_MIN_NS.min(self.spin_limit_ns), self.spin_limit_ns);
        let clock = cpuclock::thread_cpu_clock_id(holder_tid, CpuClockType::Sched);
        let mut last_run = cpuclock::read_clock_ns(clock).ok();
        let mut last_progress = 0;
        let end = loop {
            if is_free() {
                break SpinEnd::Free;
            }
            let now = start.elapsed().as_nanos() as u64;
            if now >= budget {
                break SpinEnd::Budget;
            }
            let run = cpuclock::read_clock_ns(clock).ok();
            if run.is_none() {
                // The holder is gone; the lock's own release path wakes parked waiters.
                break SpinEnd::Stalled;
            }
            if run != last_run {
                last_run = run;
                last_progress = now;
            } else if now - last_progress >= SPIN_STALL_NS {
                break SpinEnd::Stalled;
            }
            for _ in 0..64 {
                std::hint::spin_loop();
            }
        };
        let spun = start.elapsed().as_nanos() as u64;
        // Adapt to what a wait on a running, boosted holder costs: a success or a budget
        // exhausted while the holder ran both say how long such waits are; a stall says
        // nothing about it.
        if !matches!(end, SpinEnd::Stalled) {
            let avg = self.spin_avg_ns.load(Ordering::Relaxed);
            let next = avg - avg / 8 + spun / 8;
            self.spin_avg_ns.store(next, Ordering::Relaxed);
        }
        self.spins.fetch_add(1, Ordering::Relaxed);
        match end {
            SpinEnd::Free => self.spins_acquired.fetch_add(1, Ordering::Relaxed),
            SpinEnd::Stalled => self.spins_stalled.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        let cpu = cpuclock::thread_cpu_time_ns().saturating_sub(cpu0);
        self.spin_cpu_ns.fetch_add(cpu, Ordering::Relaxed);
        self.cpu_ns.fetch_add(cpu, Ordering::Relaxed);
        end
    }

    /// The calling thread, OS thread id `tid`, has just acquired `lock` (the first level of
    /// a re-entrant lock). In [`Mode::FastTrack`], if it is a known blocker of `lock` (module
    /// doc), it is boosted at once until it releases `lock`. Call it from the acquiring
    /// thread itself, after the lock's internal mutex is released, so that its own
    /// [`FastTracker::on_release`] follows it.
    #[inline]
    pub fn on_acquire(&self, lock: LockKey, tid: i32) {
        if self.mode != Mode::FastTrack || tid <= 0 || !self.known.may_know(tid) {
            return;
        }
        self.acquire_slow(lock, tid);
    }

    #[cold]
    fn acquire_slow(&self, lock: LockKey, tid: i32) {
        let cpu0 = cpuclock::thread_cpu_time_ns();
        let mut events = Vec::new();
        if let Some(waiter_tid) = self.known.lookup(lock, tid, (self.clock)()) {
            let mut boosted = self.boosted.lock();
            self.boost_one(
                &mut boosted,
                lock,
                (tid, waiter_tid),
                self.fast_nice,
                true,
                &mut events,
            );
        }
        self.cpu_ns.fetch_add(
            cpuclock::thread_cpu_time_ns().saturating_sub(cpu0),
            Ordering::Relaxed,
        );
        self.report(&events);
    }

    /// `holder_tid` released `lock`: if it was boosted for it and holds no other lock it was
    /// boosted for, its own priority comes back.
    #[inline]
    pub fn on_release(&self, lock: LockKey, holder_tid: i32) {
        // Relaxed: see the ordering contract in the module doc.
        if self.active.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.release_slow(Some(lock), holder_tid);
    }

    /// `holder_tid` released every lock (it is ending): undo any boost it has.
    pub fn on_release_all(&self, holder_tid: i32) {
        if self.active.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.release_slow(None, holder_tid);
    }

    /// Undoes a boost. The priority is lowered outside every lock: lowering the calling
    /// thread's own priority lets the scheduler preempt it at once, and a low-priority thread
    /// preempted inside a lock is the inversion this module exists to avoid. A boost of the
    /// same thread made while the restore is under way (for another lock it holds) starts
    /// from its own priority and is re-applied after the restore.
    #[cold]
    fn release_slow(&self, lock: Option<LockKey>, holder_tid: i32) {
        let cpu0 = cpuclock::thread_cpu_time_ns();
        let mut events = Vec::new();
        let restore = {
            let mut boosts = self.boosted.lock();
            let boosted = &mut boosts.holders;
            let done = match boosted.get_mut(&holder_tid) {
                None => false,
                Some(b) => {
                    match lock {
                        Some(l) => b.locks.retain(|k| *k != l),
                        None => b.locks.clear(),
                    }
                    b.locks.is_empty()
                }
            };
            if done {
                let b = boosted.remove(&holder_tid).expect("present");
                self.active.fetch_sub(1, Ordering::Relaxed);
                boosts.restoring.insert(holder_tid, b.saved_nice);
                Some(b.saved_nice)
            } else {
                None
            }
        };
        if let Some(own) = restore {
            // Lowering a priority back needs no privilege; a failure means the thread is
            // gone.
            let restored = self.priorities.set_nice(holder_tid, own).is_ok();
            let mut boosts = self.boosted.lock();
            boosts.restoring.remove(&holder_tid);
            if let Some(again) = boosts.holders.get(&holder_tid) {
                // Boosted again meanwhile: raising needs no preemption, so under the lock.
                let _ = self.priorities.set_nice(holder_tid, again.nice);
            } else if restored {
                self.restores.fetch_add(1, Ordering::Relaxed);
                events.push(Event::Restore {
                    holder_tid,
                    nice: own,
                });
            }
        }
        self.cpu_ns.fetch_add(
            cpuclock::thread_cpu_time_ns().saturating_sub(cpu0),
            Ordering::Relaxed,
        );
        self.report(&events);
    }

    fn report(&self, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        let observer = self.observer.lock().clone();
        if let Some(o) = observer {
            for e in events {
                o(e);
            }
        }
    }
}

/// The readers of a shared lock, up to [`MAX_READERS`] tids (0 = free slot), for
/// [`FastTracker::on_block`]. Readers beyond the bound are not recorded (and not boosted).
#[derive(Debug, Default)]
pub struct ReaderSet {
    slots: [AtomicI32; MAX_READERS],
}

impl ReaderSet {
    pub fn new() -> ReaderSet {
        ReaderSet::default()
    }

    /// Records reader `tid`; false when every slot is taken.
    pub fn add(&self, tid: i32) -> bool {
        self.slots.iter().any(|s| {
            // Relaxed: the set is a hint for boosting; the lock itself orders the data.
            s.compare_exchange(0, tid, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        })
    }

    /// Forgets reader `tid` (one slot).
    pub fn remove(&self, tid: i32) {
        for s in &self.slots {
            if s.compare_exchange(tid, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    /// The recorded readers.
    pub fn snapshot(&self) -> Vec<i32> {
        self.slots
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .filter(|&t| t > 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nice values in a table; refuses raises when `privileged` is false.
    #[derive(Default)]
    struct MockPriorities {
        nice: Mutex<HashMap<i32, i32>>,
        unprivileged: AtomicBool,
    }

    impl Priorities for MockPriorities {
        fn nice_of(&self, tid: i32) -> io::Result<i32> {
            Ok(*self.nice.lock().get(&tid).unwrap_or(&0))
        }
        fn set_nice(&self, tid: i32, nice: i32) -> io::Result<()> {
            let mut t = self.nice.lock();
            let cur = *t.get(&tid).unwrap_or(&0);
            if nice < cur && self.unprivileged.load(Ordering::Relaxed) {
                return Err(io::Error::from_raw_os_error(libc::EACCES));
            }
            t.insert(tid, nice);
            Ok(())
        }
    }

    const LOCK: LockKey = LockKey { domain: 1, id: 7 };
    const OTHER: LockKey = LockKey { domain: 1, id: 8 };

    fn setup(mode: Mode) -> (Arc<MockPriorities>, FastTracker) {
        let p = Arc::new(MockPriorities::default());
        p.nice.lock().insert(10, 19);
        p.nice.lock().insert(20, -4);
        (p.clone(), FastTracker::new(mode, p))
    }

    fn critical<R>(f: impl FnOnce() -> R) -> R {
        set_latency_critical(true);
        let r = f();
        set_latency_critical(false);
        r
    }

    #[test]
    fn fast_track_boosts_until_every_boosted_lock_is_released() {
        let (p, ft) = setup(Mode::FastTrack);
        critical(|| ft.on_block(LOCK, 20, &[10]));
        assert_eq!(p.nice_of(10).unwrap(), FAST_TRACK_NICE);
        critical(|| ft.on_block(OTHER, 20, &[10]));
        ft.on_release(LOCK, 10);
        assert_eq!(p.nice_of(10).unwrap(), FAST_TRACK_NICE, "still holds OTHER");
        ft.on_release(OTHER, 10);
        assert_eq!(p.nice_of(10).unwrap(), 19);
        let s = ft.stats();
        assert_eq!((s.blocks, s.boosts, s.restores), (2, 1, 1));
        assert!(!ft.is_boosted(10));
    }

    #[test]
    fn inherit_gives_the_waiters_nice_only() {
        let (p, ft) = setup(Mode::Inherit);
        critical(|| ft.on_block(LOCK, 20, &[10]));
        assert_eq!(p.nice_of(10).unwrap(), -4);
        ft.on_release(LOCK, 10);
        assert_eq!(p.nice_of(10).unwrap(), 19);
    }

    #[test]
    fn only_latency_critical_threads_boost_and_off_does_nothing() {
        let (p, ft) = setup(Mode::FastTrack);
        ft.on_block(LOCK, 20, &[10]);
        assert_eq!(p.nice_of(10).unwrap(), 19);
        let (p, ft) = setup(Mode::Off);
        critical(|| ft.on_block(LOCK, 20, &[10]));
        assert_eq!(p.nice_of(10).unwrap(), 19);
        assert_eq!(ft.stats(), Stats::default());
    }

    #[test]
    fn a_refused_boost_is_reported_and_nothing_is_restored() {
        let (p, ft) = setup(Mode::FastTrack);
        p.unprivileged.store(true, Ordering::Relaxed);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        ft.set_observer(move |e| s2.lock().push(e.clone()));
        critical(|| ft.on_block(LOCK, 20, &[10]));
        critical(|| ft.on_block(LOCK, 20, &[10]));
        ft.on_release(LOCK, 10);
        assert_eq!(p.nice_of(10).unwrap(), 19);
        assert_eq!(ft.stats().denied, 2);
        assert!(ft.warned.load(Ordering::Relaxed));
        assert!(matches!(
            seen.lock()[0],
            Event::Denied { holder_tid: 10, .. }
        ));
        assert_eq!(seen.lock().len(), 2, "no restore after a refused boost");
    }

    #[test]
    fn a_holder_already_stronger_is_left_alone() {
        let (p, ft) = setup(Mode::Inherit);
        p.nice.lock().insert(10, -10);
        critical(|| ft.on_block(LOCK, 20, &[10]));
        assert_eq!(p.nice_of(10).unwrap(), -10);
        assert!(!ft.is_boosted(10));
    }

    #[test]
    fn spinning_needs_a_boosted_holder_and_stops_when_free_or_stalled() {
        let (_, off) = setup(Mode::Off);
        assert_eq!(
            critical(|| off.spin_on_holder(10, || true)),
            SpinEnd::Skipped
        );
        let (_, ft) = setup(Mode::FastTrack);
        assert_eq!(
            critical(|| ft.spin_on_holder(10, || true)),
            SpinEnd::Skipped,
            "not boosted"
        );
        critical(|| ft.on_block(LOCK, 20, &[10]));
        assert_eq!(
            ft.spin_on_holder(10, || true),
            SpinEnd::Skipped,
            "not critical"
        );
        assert_eq!(critical(|| ft.spin_on_holder(10, || true)), SpinEnd::Free);
        // Tid 10 is no thread of this process: its clock cannot be read, so it never runs.
        assert_eq!(
            critical(|| ft.spin_on_holder(10, || false)),
            SpinEnd::Stalled
        );
        let s = ft.stats();
        assert_eq!((s.spins, s.spins_acquired), (2, 1));
        assert!(s.cpu_ns >= s.spin_cpu_ns);
        let (_, never) = setup(Mode::FastTrack);
        let never = never.with_spin_limit_ns(0);
        critical(|| never.on_block(LOCK, 20, &[10]));
        assert_eq!(
            critical(|| never.spin_on_holder(10, || true)),
            SpinEnd::Skipped
        );
    }

    /// Lowers go through a hook that boosts the same holder for another lock, as a looper
    /// blocking on a second lock of that holder would while its restore is under way.
    struct ReboostDuringRestore {
        inner: MockPriorities,
        tracker: std::sync::OnceLock<std::sync::Weak<FastTracker>>,
        fired: AtomicBool,
    }

    impl Priorities for ReboostDuringRestore {
        fn nice_of(&self, tid: i32) -> io::Result<i32> {
            self.inner.nice_of(tid)
        }
        fn set_nice(&self, tid: i32, nice: i32) -> io::Result<()> {
            self.inner.set_nice(tid, nice)?;
            if nice == 19 && !self.fired.swap(true, Ordering::Relaxed) {
                let ft = self.tracker.get().unwrap().upgrade().unwrap();
                critical(|| ft.on_block(OTHER, 20, &[tid]));
            }
            Ok(())
        }
    }

    #[test]
    fn a_boost_made_while_a_restore_is_under_way_is_kept() {
        let p = Arc::new(ReboostDuringRestore {
            inner: MockPriorities::default(),
            tracker: std::sync::OnceLock::new(),
            fired: AtomicBool::new(false),
        });
        p.inner.nice.lock().insert(10, 19);
        let ft = Arc::new(FastTracker::new(Mode::FastTrack, p.clone()));
        p.tracker.set(Arc::downgrade(&ft)).unwrap();
        critical(|| ft.on_block(LOCK, 20, &[10]));
        ft.on_release(LOCK, 10);
        assert!(p.fired.load(Ordering::Relaxed));
        assert_eq!(p.nice_of(10).unwrap(), FAST_TRACK_NICE, "boosted for OTHER");
        assert!(ft.is_boosted(10));
        ft.on_release(OTHER, 10);
        assert_eq!(
            p.nice_of(10).unwrap(),
            19,
            "its own priority, not the boost"
        );
        assert!(!ft.is_boosted(10));
    }

    /// A tracker on a manual clock (nanoseconds in the returned cell).
    fn setup_clocked(mode: Mode) -> (Arc<MockPriorities>, FastTracker, Arc<AtomicU64>) {
        let (p, ft) = setup(mode);
        let now = Arc::new(AtomicU64::new(0));
        let n2 = now.clone();
        let ft = ft.with_clock(Arc::new(move || n2.load(Ordering::Relaxed)));
        (p, ft, now)
    }

    #[test]
    fn a_known_blocker_is_boosted_on_acquisition_and_restored_at_release() {
        let (p, ft, _) = setup_clocked(Mode::FastTrack);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        ft.set_observer(move |e| s2.lock().push(e.clone()));
        // Tid 30 (nice 0 in the mock) never blocked anyone: not boosted.
        ft.on_acquire(LOCK, 30);
        assert!(!ft.is_boosted(30));
        assert_eq!(p.nice_of(30).unwrap(), 0);
        // Tid 10 blocks the looper (20) once: boosted, restored at release.
        critical(|| ft.on_block(LOCK, 20, &[10]));
        ft.on_release(LOCK, 10);
        assert_eq!(p.nice_of(10).unwrap(), 19);
        seen.lock().clear();
        // Its next acquisition of that lock boosts it at once, nobody waiting.
        ft.on_acquire(LOCK, 10);
        assert!(ft.is_boosted(10));
        assert_eq!(p.nice_of(10).unwrap(), FAST_TRACK_NICE);
        assert_eq!(
            seen.lock()[0],
            Event::Boost {
                lock: LOCK,
                holder_tid: 10,
                waiter_tid: 20,
                from_nice: 19,
                to_nice: FAST_TRACK_NICE,
                sticky: true,
            }
        );
        ft.on_release(LOCK, 10);
        assert_eq!(p.nice_of(10).unwrap(), 19);
        assert!(!ft.is_boosted(10));
        // Known for LOCK only: another lock is not fast-tracked.
        ft.on_acquire(OTHER, 10);
        assert!(!ft.is_boosted(10));
        let s = ft.stats();
        assert_eq!((s.boosts, s.sticky_boosts, s.restores), (2, 1, 2));
    }

    #[test]
    fn only_fast_track_remembers_blockers() {
        for mode in [Mode::Off, Mode::Inherit] {
            let (p, ft, _) = setup_clocked(mode);
            critical(|| ft.on_block(LOCK, 20, &[10]));
            ft.on_release(LOCK, 10);
            ft.on_acquire(LOCK, 10);
            assert!(!ft.is_boosted(10), "{mode}");
            assert_eq!(p.nice_of(10).unwrap(), 19, "{mode}");
            assert_eq!(ft.known_blockers(), 0, "{mode}");
        }
    }

    #[test]
    fn known_blockers_expire_without_new_blocks() {
        let (p, ft, now) = setup_clocked(Mode::FastTrack);
        critical(|| ft.on_block(LOCK, 20, &[10]));
        ft.on_release(LOCK, 10);
        // Blocking again refreshes the entry.
        now.store(KNOWN_BLOCKER_TTL_NS / 2, Ordering::Relaxed);
        critical(|| ft.on_block(LOCK, 20, &[10]));
        ft.on_release(LOCK, 10);
        now.store(KNOWN_BLOCKER_TTL_NS, Ordering::Relaxed);
        ft.on_acquire(LOCK, 10);
        assert!(ft.is_boosted(10), "refreshed at half the lifetime");
        ft.on_release(LOCK, 10);
        now.store(2 * KNOWN_BLOCKER_TTL_NS, Ordering::Relaxed);
        ft.on_acquire(LOCK, 10);
        assert!(!ft.is_boosted(10), "expired");
        assert_eq!(p.nice_of(10).unwrap(), 19);
        assert_eq!(ft.known_blockers(), 0, "expired entries are dropped");
    }

    #[test]
    fn known_blockers_are_bounded_and_the_oldest_is_evicted() {
        let (_, ft, now) = setup_clocked(Mode::FastTrack);
        let first = 100;
        for (i, tid) in (first..=first + MAX_KNOWN_BLOCKERS as i32).enumerate() {
            now.store(i as u64, Ordering::Relaxed);
            critical(|| ft.on_block(LOCK, 20, &[tid]));
            ft.on_release(LOCK, tid);
        }
        assert_eq!(ft.known_blockers(), MAX_KNOWN_BLOCKERS);
        ft.on_acquire(LOCK, first);
        assert!(!ft.is_boosted(first), "the oldest was evicted");
        ft.on_acquire(LOCK, first + 1);
        assert!(ft.is_boosted(first + 1), "the others are kept");
    }

    #[test]
    fn reader_sets_are_bounded() {
        let r = ReaderSet::new();
        for t in 1..=MAX_READERS as i32 {
            assert!(r.add(t));
        }
        assert!(!r.add(99));
        r.remove(2);
        assert_eq!(r.snapshot().len(), MAX_READERS - 1);
        assert!(!r.snapshot().contains(&2));
    }

    #[test]
    fn the_os_nice_of_this_thread_reads_back() {
        let me = cpuclock::current_tid();
        let before = thread_nice(me).unwrap();
        // Lowering one's own priority needs no privilege.
        let lower = (before + 1).min(19);
        set_thread_nice(me, lower).unwrap();
        assert_eq!(thread_nice(me).unwrap(), lower);
        let _ = set_thread_nice(me, before);
    }
}
