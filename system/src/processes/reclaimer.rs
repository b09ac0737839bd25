//! Marvin's reclaimer in the process mode, on a thread of its own beside the System's
//! control loop, so that the low-memory killer and the sampler never wait behind it.
//!
//! The control loop tells it which apps run ([`Request::Apps`]: every live app with its
//! directory and run id, the background ones least recently used first, the one in
//! front) and asks it for room ahead of a launch ([`Request::Room`]). On its own it
//! watches the group every tick and, when the working set comes within twice the
//! headroom of the limit, punches the pages of saved, clean, cold objects out of
//! background apps' memory files (least recently used first) until it is below again.
//! What it found is published in [`Shared`]: whether its last complete pass got less
//! than it asked for (nothing more to take: the killer's cue) and whether a background
//! app's saver is still writing (the killer's hold).
//!
//! Every pass is bounded in time ([`PASS_BUDGET`]): it reclaims in chunks and stops at
//! the budget, reads its requests, and goes on. Dropping the apps' swap-file page cache
//! (`fadvise(DONTNEED)`, which waits on a per-CPU drain of the LRU caches that a busy
//! real-time thread on another CPU can hold up for seconds, measured) is done on a
//! third thread that nothing waits for ([`CacheDropper`]).
//!
//! Traced, each pass that had something to take is a `reclaim pass` slice on the
//! reclaimer's thread track, with what it asked for and took and the apps it took from.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError, TrySendError};
use marvin_swap::external::ExternalApp;
use parking_lot::Mutex;

use super::trace::{ThreadTrace, Tracks};
use marvin_machine::{cgroup, sys};
use marvin_runtime::trace::ArgValue;

/// The longest a reclaim pass runs before it reads its requests again.
pub const PASS_BUDGET: Duration = Duration::from_millis(30);

/// A pass that has run this long is held up ([`Shared::held_up`]).
pub const HELD_UP: Duration = Duration::from_millis(100);

/// The most one call on one app is asked for, so that a pass checks its budget often
/// (about 3 ms of punching on this machine's kind: 500 MiB take 150 ms).
const CHUNK: u64 = 8 << 20;

/// A running app as the reclaimer is told of it.
#[derive(Clone, Debug)]
pub struct LiveApp {
    pub id: usize,
    pub pid: u32,
    /// Its swap directory (swap file, reclaim table, region directory).
    pub dir: PathBuf,
    /// The run id it gave once ready (`None` while it starts: not reclaimed from yet).
    pub run: Option<[u8; 16]>,
}

/// What the control loop tells the reclaimer.
pub enum Request {
    /// The apps that run now: every other app's descriptors are let go at once (a
    /// killed app's memory files stay charged to the group while any is open).
    Apps {
        live: Vec<LiveApp>,
        /// The background apps, least recently used first.
        lru: Vec<usize>,
        front: Option<usize>,
    },
    /// Make `room` bytes below the reclaim threshold, never taking from `except` (the
    /// app about to come to the front, whose swap-file cache is kept too); `done` is
    /// told when the pass ends.
    Room {
        room: u64,
        except: usize,
        done: Sender<()>,
    },
}

/// What the reclaimer publishes for the control loop.
#[derive(Debug, Default)]
pub struct Shared {
    /// The last complete pass could not take enough to bring the working set below the
    /// killer's line: nothing more is reclaimable now.
    short: AtomicBool,
    /// A background app's saver is writing its cold objects.
    saving: AtomicBool,
    /// Passes that went through the apps (or found nothing to do) so far: `short` is
    /// that of the last of them.
    complete: AtomicU64,
    /// When the pass under way began (`CLOCK_BOOTTIME` ns), 0 between passes.
    pass_since_ns: AtomicU64,
    /// The last pass ran past [`HELD_UP`].
    last_held_up: AtomicBool,
    /// The apps it knows, with their descriptors: a pass holds the lock for one call on
    /// one app at a time, so the control loop can take a killed app's descriptors out
    /// ([`Link::forget`]) without waiting for a pass to end.
    apps: Mutex<BTreeMap<usize, App>>,
}

impl Shared {
    pub fn short(&self) -> bool {
        self.short.load(Ordering::Acquire)
    }

    pub fn saving(&self) -> bool {
        self.saving.load(Ordering::Acquire)
    }

    /// How many passes have completed: a pass that completes after this count has
    /// risen by two began after it was read.
    pub fn complete_passes(&self) -> u64 {
        self.complete.load(Ordering::Acquire)
    }

    /// Whether the reclaimer is held up at `now_ns` (`CLOCK_BOOTTIME`): the pass under
    /// way has run past [`HELD_UP`] (a slow system call, a fault), or the last one did
    /// and none has been quick since. The killer then no longer waits for what it may
    /// take.
    pub fn held_up(&self, now_ns: u64) -> bool {
        let running = match self.pass_since_ns.load(Ordering::Acquire) {
            0 => Duration::ZERO,
            since => Duration::from_nanos(now_ns.saturating_sub(since)),
        };
        running > HELD_UP || self.last_held_up.load(Ordering::Acquire)
    }
}

/// The reclaimer's fixed settings.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub limit: u64,
    pub headroom: u64,
    /// How often it looks at the group when nothing asks it.
    pub tick: Duration,
    /// Its `SCHED_FIFO` priority, when it may have one.
    pub realtime: Option<i32>,
    /// A test hook: how long every pass that has something to take sleeps first, so a
    /// test can make passes slow on purpose ([`PASS_DELAY_ENV`]). Zero in a real run.
    pub pass_delay: Duration,
}

/// The environment variable that sets [`Settings::pass_delay`] in milliseconds (for the
/// tests that check the control loop does not wait for a slow pass).
pub const PASS_DELAY_ENV: &str = "MARVIN_TEST_RECLAIM_PASS_DELAY_MS";

impl Settings {
    /// [`PASS_DELAY_ENV`] as a duration; zero when unset or not a number.
    pub fn pass_delay_from_env() -> Duration {
        std::env::var(PASS_DELAY_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(Duration::ZERO, Duration::from_millis)
    }
}

/// What the reclaimer did over the run.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every pass's duration.
    pub pass_ns: Vec<u64>,
    pub reclaimed_bytes: u64,
}

/// The control loop's end of the reclaimer.
pub struct Link {
    tx: Sender<Request>,
    shared: Arc<Shared>,
}

impl Link {
    /// Tells the reclaimer (a reclaimer that ended takes nothing more).
    pub fn send(&self, r: Request) {
        let _ = self.tx.send(r);
    }

    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Lets go of the descriptors of process `pid` at once (a killed app: its memory
    /// files stay charged to the group while any is open). Waits for at most one call of
    /// a pass on one app, and no longer than [`FORGET_WAIT`]; the reclaimer drops them
    /// at its next request otherwise.
    pub fn forget(&self, pid: u32) {
        if let Some(mut apps) = self.shared.apps.try_lock_for(FORGET_WAIT) {
            apps.retain(|_, a| a.info.pid != pid);
        }
    }
}

/// The longest [`Link::forget`] waits for the reclaimer's lock.
const FORGET_WAIT: Duration = Duration::from_millis(20);

/// Starts the reclaimer on a thread of `scope`; it runs until its [`Link`] is dropped,
/// then returns what it did. With `trace`, its passes are traced on a track of its thread.
pub fn spawn<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    group: &'env cgroup::Group,
    swap_name: &'static str,
    settings: Settings,
    trace: Option<Tracks>,
) -> (Link, std::thread::ScopedJoinHandle<'scope, Outcome>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let shared = Arc::new(Shared::default());
    let mut r = Reclaimer {
        group,
        swap_name,
        settings,
        lru: Vec::new(),
        front: None,
        shared: shared.clone(),
        out: Outcome::default(),
        dropper: CacheDropper::spawn(),
        pager: super::native_out::Pager::new(),
        trace: None,
    };
    let handle = std::thread::Builder::new()
        .name("reclaimer".into())
        .spawn_scoped(scope, move || {
            // Real-time as the control loop is (its threads do not inherit it), so a busy
            // machine's CPUs do not keep it from acting before the kernel's OOM killer.
            let _rt = settings
                .realtime
                .and_then(|p| sys::RealtimeThread::enter(p).ok());
            r.trace = trace.map(|t| t.thread("reclaimer"));
            r.serve(&rx);
            r.out
        })
        .expect("spawning the reclaimer thread");
    (Link { tx, shared }, handle)
}

#[derive(Debug)]
struct App {
    info: LiveApp,
    external: Option<ExternalApp>,
}

struct Reclaimer<'g> {
    group: &'g cgroup::Group,
    swap_name: &'static str,
    settings: Settings,
    lru: Vec<usize>,
    front: Option<usize>,
    shared: Arc<Shared>,
    out: Outcome,
    dropper: CacheDropper,
    /// Background apps' native buffers handed to the kernel's swap.
    pager: super::native_out::Pager,
    /// Its track, when the run is traced.
    trace: Option<ThreadTrace>,
}

/// How a pass ended.
enum Pass {
    /// Below the threshold already: nothing asked.
    Idle,
    /// It went through the apps; `short` when what it got could not bring the working
    /// set below the killer's line (the limit less the headroom).
    Complete { short: bool },
    /// Its time ran out first.
    Budget,
}

impl Reclaimer<'_> {
    fn serve(&mut self, rx: &Receiver<Request>) {
        let mut behind = false;
        loop {
            // Idle, it waits for a request or the tick; behind (the last pass ran out of
            // time), it only reads what came meanwhile.
            let first = if behind {
                match rx.try_recv() {
                    Ok(r) => Some(r),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => return,
                }
            } else {
                match rx.recv_timeout(self.settings.tick) {
                    Ok(r) => Some(r),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            };
            let mut rooms = Vec::new();
            for r in first.into_iter().chain(rx.try_iter()) {
                match r {
                    Request::Apps { live, lru, front } => self.set_apps(live, lru, front),
                    Request::Room { room, except, done } => rooms.push((room, except, done)),
                }
            }
            for (room, except, done) in rooms {
                self.dropper.drop_caches(self.cache_paths(Some(except)));
                self.pass(room, Some(except));
                let _ = done.send(());
            }
            self.keep_cache_room();
            let (short, complete) = match self.pass(0, None) {
                Pass::Idle => (false, true),
                Pass::Complete { short } => (short, true),
                // It was still taking when its time ran out: not short.
                Pass::Budget => (false, false),
            };
            self.shared.short.store(short, Ordering::Release);
            if complete {
                self.shared.complete.fetch_add(1, Ordering::AcqRel);
            }
            behind = !complete;
            let saving = {
                let apps = self.shared.apps.lock();
                self.lru.iter().any(|id| {
                    apps.get(id)
                        .and_then(|a| a.external.as_ref())
                        .is_some_and(|x| x.table().is_saving())
                })
            };
            self.shared.saving.store(saving, Ordering::Release);
        }
    }

    fn set_apps(&mut self, live: Vec<LiveApp>, lru: Vec<usize>, front: Option<usize>) {
        // An app gone, or another process in its slot now: its descriptors go at once.
        let mut apps = self.shared.apps.lock();
        apps.retain(|id, a| live.iter().any(|l| l.id == *id && l.pid == a.info.pid));
        for l in live {
            match apps.get_mut(&l.id) {
                Some(a) => a.info = l,
                None => {
                    apps.insert(
                        l.id,
                        App {
                            info: l,
                            external: None,
                        },
                    );
                }
            }
        }
        // The app in front brings its native pages back as it touches them.
        let pids: Vec<u32> = apps.values().map(|a| a.info.pid).collect();
        let front_pid = front.and_then(|f| apps.get(&f)).map(|a| a.info.pid);
        drop(apps);
        self.pager.retain(&pids);
        if let Some(pid) = front_pid {
            self.pager.forget(pid);
        }
        self.lru = lru;
        self.front = front;
    }

    /// The swap files of every running app but `except`.
    fn cache_paths(&self, except: Option<usize>) -> Vec<PathBuf> {
        self.shared
            .apps
            .lock()
            .values()
            .filter(|a| Some(a.info.id) != except)
            .map(|a| a.info.dir.join(self.swap_name))
            .collect()
    }

    /// When the group's usage, page cache included, comes within the headroom of its
    /// limit, has the swap-file page cache of every app but the one in front dropped
    /// (whose launch may be reading ahead into it). The reclaim threshold leaves that
    /// cache out (working set), so without this the group sat at its limit between
    /// launches, and a launch's faults that came while another app's faults or saves had
    /// refilled it ran into the limit.
    fn keep_cache_room(&mut self) {
        let limit = self.settings.limit;
        if self
            .group
            .usage()
            .is_ok_and(|u| u > limit.saturating_sub(self.settings.headroom))
        {
            self.dropper.drop_caches(self.cache_paths(self.front));
        }
    }

    /// One pass: when the working set is above twice the headroom plus `room` below the
    /// limit, reclaims from background apps (never `except`), least recently used
    /// first, until it is below again or the pass's time is up.
    fn pass(&mut self, room: u64, except: Option<usize>) -> Pass {
        // The same measure the killer watches: usage less inactive page cache.
        let Ok(usage) = self.group.working_set() else {
            return Pass::Idle;
        };
        let s = self.settings;
        let threshold = s.limit.saturating_sub(2 * s.headroom + room);
        if usage <= threshold {
            return Pass::Idle;
        }
        let asked = usage - threshold + s.headroom;
        let mut want = asked;
        let t0 = Instant::now();
        self.shared.pass_since_ns.store(
            marvin_runtime::cpuclock::boottime_ns().max(1),
            Ordering::Release,
        );
        if !s.pass_delay.is_zero() {
            std::thread::sleep(s.pass_delay);
        }
        let mut got = 0;
        let mut out_of_time = false;
        let mut touched = self.trace.is_some().then(Vec::new);
        'apps: for id in self.lru.clone() {
            if Some(id) == except || Some(id) == self.front {
                continue;
            }
            loop {
                if want == 0 {
                    break 'apps;
                }
                if t0.elapsed() >= PASS_BUDGET + s.pass_delay {
                    out_of_time = true;
                    break 'apps;
                }
                let ask = want.min(CHUNK);
                // The lock for this one call: the control loop may take a killed app
                // out between two.
                let r = {
                    let mut apps = self.shared.apps.lock();
                    let Some(app) = apps.get_mut(&id) else {
                        continue 'apps;
                    };
                    let Some(x) = open(app, self.swap_name) else {
                        continue 'apps;
                    };
                    x.reclaim(ask)
                };
                got += r.bytes;
                note_taken(touched.as_mut(), id, r.bytes);
                want = want.saturating_sub(r.bytes);
                if r.bytes < ask {
                    // No more objects in this app now: its native buffers go to the
                    // kernel's swap (once since it was last in front).
                    let at = self.shared.apps.lock().get(&id).map(|a| a.info.clone());
                    if let Some(info) = at.filter(|_| want > 0) {
                        let paged = self.pager.page_out(info.pid, &info.dir);
                        got += paged;
                        note_taken(touched.as_mut(), id, paged);
                        want = want.saturating_sub(paged);
                    }
                    break;
                }
            }
        }
        self.shared.pass_since_ns.store(0, Ordering::Release);
        self.shared
            .last_held_up
            .store(t0.elapsed() > HELD_UP, Ordering::Release);
        self.out.pass_ns.push(t0.elapsed().as_nanos() as u64);
        self.out.reclaimed_bytes += got;
        if let Some(t) = &self.trace {
            let launch = except.filter(|_| room > 0).map(|id| (id, room));
            trace_pass(t, t0.elapsed(), asked, got, launch, touched, out_of_time);
        }
        if out_of_time {
            Pass::Budget
        } else {
            // Short only when all it could take leaves the working set above the line
            // the killer acts on: taking less than it asked for (it asks for a headroom
            // more than the threshold) is no reason for a kill when the rest is below it.
            Pass::Complete {
                short: got < asked
                    && usage.saturating_sub(got) > s.limit.saturating_sub(s.headroom),
            }
        }
    }
}

/// Adds `bytes` taken from app `id` to a traced pass's list of apps (`None`: not traced).
fn note_taken(touched: Option<&mut Vec<(usize, u64)>>, id: usize, bytes: u64) {
    let Some(list) = touched.filter(|_| bytes > 0) else {
        return;
    };
    match list.last_mut() {
        Some((last, sum)) if *last == id => *sum += bytes,
        _ => list.push((id, bytes)),
    }
}

/// Records a pass that went through the apps: a slice that began `took` ago, with what it
/// asked for and took, the apps it took from (`app3:1048576 app5:65536`, least recently
/// used first) and how it ended; a pass that made `launch` = (app, bytes) of room ahead of
/// that app's launch names it.
fn trace_pass(
    t: &ThreadTrace,
    took: Duration,
    asked: u64,
    got: u64,
    launch: Option<(usize, u64)>,
    touched: Option<Vec<(usize, u64)>>,
    out_of_time: bool,
) {
    let apps: Vec<String> = touched
        .unwrap_or_default()
        .iter()
        .map(|(id, bytes)| format!("app{id}:{bytes}"))
        .collect();
    let mut args = vec![
        ("asked", ArgValue::Uint(asked)),
        ("bytes", ArgValue::Uint(got)),
        ("apps", ArgValue::Str(apps.join(" "))),
        (
            "ended",
            ArgValue::Str(if out_of_time { "budget" } else { "complete" }.into()),
        ),
    ];
    let name = match launch {
        Some((id, room)) => {
            args.push(("room", ArgValue::Uint(room)));
            format!("reclaim pass (room for app{id})")
        }
        None => "reclaim pass".to_string(),
    };
    t.finished(name, took, args);
}

/// The app's view from outside, opened once it is ready (only a table of the run the
/// app named).
fn open<'a>(app: &'a mut App, swap_name: &str) -> Option<&'a mut ExternalApp> {
    if app.external.is_none() {
        let run = app.info.run?;
        app.external = ExternalApp::open_run(app.info.pid, &run, &app.info.dir, swap_name).ok();
    }
    app.external.as_mut()
}

/// A thread that drops the clean page cache of the files it is given. A request that
/// comes while one waits is dropped: the one waiting covers it.
struct CacheDropper {
    tx: Sender<Vec<PathBuf>>,
}

impl CacheDropper {
    fn spawn() -> CacheDropper {
        let (tx, rx) = crossbeam_channel::bounded::<Vec<PathBuf>>(1);
        // Not joined: it ends when the sender goes, after its last request.
        let _ = std::thread::Builder::new()
            .name("cache-dropper".into())
            .spawn(move || {
                for paths in rx {
                    for p in paths {
                        // A file not there yet (an app still starting) has no cache. The
                        // whole file: a range past the header page would keep the large
                        // folio that holds it, often much of the file's cache.
                        let _ = sys::drop_file_cache(&p, 0);
                    }
                }
            });
        CacheDropper { tx }
    }

    fn drop_caches(&self, paths: Vec<PathBuf>) {
        match self.tx.try_send(paths) {
            Ok(()) | Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {}
        }
    }
}
