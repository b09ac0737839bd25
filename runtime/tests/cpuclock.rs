//! Thread CPU clocks against each other and against `/proc`.
//!
//! Tolerances: with tick-based accounting the kernel splits CPU time into user and system in
//! whole scheduler ticks while the total (`CLOCK_THREAD_CPUTIME_ID`) counts nanoseconds, and
//! `/proc` rounds down to `_SC_CLK_TCK` ticks (10 ms), so comparisons between differently
//! accounted figures allow one `/proc` tick (`tick_ns()`, at least one scheduler tick) per
//! source of rounding. Figures read through the same kernel counter are compared exactly.
//!
//! User time is sampled: each scheduler tick charges the thread that is running at that
//! instant (less the ticks a hypervisor stole), so on a loaded machine a thread can burn
//! tens of milliseconds between ticks that all land on other threads and show no user time
//! at all. The tests therefore never expect user time from a fixed amount of work: they spin
//! until the user clock moves, bounded by [`USER_TIME_BOUND_NS`] of CPU time, and they read
//! a parked thread only once `/proc` shows it asleep.

use std::hint::black_box;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use marvin_runtime::cpuclock::{
    current_tid, proc_thread_times, read_clock_ns, thread_cpu_clock_id, thread_cpu_time_ns,
    thread_user_time_ns, thread_user_time_of, thread_user_time_of_handle, thread_user_time_of_tid,
    tick_ns, CpuClockType,
};

/// Burns at least `ns` of this thread's CPU time in user mode (the clock is read only every
/// few hundred thousand iterations, so almost all of it is user time).
fn spin_cpu(ns: u64) {
    let start = thread_cpu_time_ns();
    let mut x = 0u64;
    while thread_cpu_time_ns() - start < ns {
        for i in 0..200_000u64 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
    }
    black_box(x);
}

/// How much CPU time a busy thread may take before its user clock must have moved: generous,
/// since ticks sample whichever thread runs (a few milliseconds alone, far more under load).
const USER_TIME_BOUND_NS: u64 = 10_000_000_000;

/// Spins until this thread's user clock has advanced by at least `ns` since `user0`, or
/// [`USER_TIME_BOUND_NS`] of CPU time has gone; returns the user clock then.
fn spin_until_user_time(user0: u64, ns: u64) -> u64 {
    let start = thread_cpu_time_ns();
    loop {
        let user = thread_user_time_ns();
        if user - user0 >= ns || thread_cpu_time_ns() - start >= USER_TIME_BOUND_NS {
            return user;
        }
        spin_cpu(1_000_000);
    }
}

/// The scheduler state of thread `tid` of this process (field 3 of its `stat` line).
fn thread_state(tid: i32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 1..];
    after_comm.trim_start().chars().next().unwrap()
}

/// Waits (bounded by a minute, however loaded the machine) until thread `tid` sleeps.
fn wait_until_asleep(tid: i32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while thread_state(tid) != 'S' {
        assert!(
            Instant::now() < deadline,
            "thread {tid} never went to sleep"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn clocks_are_monotonic() {
    let (mut total, mut user) = (thread_cpu_time_ns(), thread_user_time_ns());
    for _ in 0..200 {
        black_box((0..2_000u64).sum::<u64>());
        let (t, u) = (thread_cpu_time_ns(), thread_user_time_ns());
        assert!(t >= total, "total went back: {total} -> {t}");
        assert!(u >= user, "user went back: {user} -> {u}");
        (total, user) = (t, u);
    }
}

/// The calling thread's tick-accounted user + system time (`PROF`): the counters that user
/// time (`VIRT`) is one part of, sampled by the same ticks.
fn tick_total_ns() -> u64 {
    read_clock_ns(thread_cpu_clock_id(0, CpuClockType::Prof)).unwrap()
}

#[test]
fn user_time_does_not_exceed_the_total() {
    spin_cpu(30_000_000);
    for _ in 0..50 {
        // User first, total second: the total is read later and only grows. Both are
        // tick-sampled (a tick charges a whole tick to the thread it lands on, however
        // briefly that thread ran), so they are compared with each other, exactly; the
        // precise total (`CLOCK_THREAD_CPUTIME_ID`) can be well below them on a loaded
        // machine.
        let user = thread_user_time_ns();
        let total = tick_total_ns();
        assert!(user <= total, "user {user} ns > total {total} ns");
        spin_cpu(1_000_000);
    }
}

#[test]
fn a_busy_thread_clocks_advance() {
    let (total0, user0) = (thread_cpu_time_ns(), thread_user_time_ns());
    spin_cpu(60_000_000);
    let total1 = thread_cpu_time_ns();
    assert!(
        total1 - total0 >= 60_000_000,
        "total advanced {}",
        total1 - total0
    );
    // User-mode spinning shows as user time once ticks land on this thread: at least a
    // `/proc` tick of it within the bound.
    let user1 = spin_until_user_time(user0, tick_ns());
    let total1 = thread_cpu_time_ns();
    assert!(
        user1 - user0 >= tick_ns(),
        "user advanced only {} ns over {} ns of CPU",
        user1 - user0,
        total1 - total0
    );
}

/// A thread that burns some CPU (until its user clock shows some), reports its tid and the
/// user time it read of itself, then blocks until told to finish.
struct ParkedThread {
    handle: thread::JoinHandle<()>,
    tid: i32,
    /// The thread's own user clock as it last read it, before it parked.
    own_user_ns: u64,
    finish: mpsc::Sender<()>,
}

impl ParkedThread {
    fn start(burn_ns: u64) -> Self {
        let (tid_tx, tid_rx) = mpsc::channel();
        let (finish, finish_rx) = mpsc::channel::<()>();
        let handle = thread::spawn(move || {
            spin_cpu(burn_ns);
            let own_user_ns = spin_until_user_time(0, 1);
            tid_tx.send((current_tid(), own_user_ns)).unwrap();
            let _ = finish_rx.recv();
        });
        let (tid, own_user_ns) = tid_rx.recv().unwrap();
        // Read it only once it is blocked in that recv, however long the machine takes.
        wait_until_asleep(tid);
        ParkedThread {
            handle,
            tid,
            own_user_ns,
            finish,
        }
    }

    fn stop(self) {
        self.finish.send(()).unwrap();
        self.handle.join().unwrap();
    }
}

#[test]
fn a_sleeping_thread_clocks_stand_still() {
    let parked = ParkedThread::start(40_000_000);
    let by_handle0 = thread_user_time_of_handle(&parked.handle).unwrap();
    let by_tid0 = thread_user_time_of_tid(parked.tid).unwrap();
    let (proc_user0, proc_sys0) = proc_thread_times(parked.tid).unwrap();
    // Another thread's clock, read through the handle and the tid, is the one the thread
    // read of itself (the same counter, which only grows).
    assert!(parked.own_user_ns > 0, "the busy thread shows no user time");
    assert!(
        by_handle0 >= parked.own_user_ns && by_tid0 >= parked.own_user_ns,
        "own {} handle {by_handle0} tid {by_tid0}",
        parked.own_user_ns
    );

    thread::sleep(Duration::from_millis(150));
    // Meanwhile this thread works, which must not be charged to the parked one.
    spin_cpu(20_000_000);

    let by_handle1 = thread_user_time_of_handle(&parked.handle).unwrap();
    let by_tid1 = thread_user_time_of_tid(parked.tid).unwrap();
    let (proc_user1, proc_sys1) = proc_thread_times(parked.tid).unwrap();
    let tick = tick_ns();
    assert!(
        by_handle1 - by_handle0 <= tick,
        "{by_handle0} -> {by_handle1}"
    );
    assert!(by_tid1 - by_tid0 <= tick, "{by_tid0} -> {by_tid1}");
    assert!(
        proc_user1 - proc_user0 <= tick,
        "{proc_user0} -> {proc_user1}"
    );
    assert!(proc_sys1 - proc_sys0 <= tick, "{proc_sys0} -> {proc_sys1}");
    parked.stop();
}

#[test]
fn fast_path_equals_the_general_path() {
    spin_cpu(20_000_000);
    for _ in 0..100 {
        let fast0 = thread_user_time_ns();
        // SAFETY: pthread_self() is the calling thread, alive for the call.
        let general = unsafe { thread_user_time_of(libc::pthread_self()) }.unwrap();
        let by_tid = thread_user_time_of_tid(current_tid()).unwrap();
        let fast1 = thread_user_time_ns();
        // All three read the same per-thread user-time counter, in this order.
        assert!(
            fast0 <= general && general <= by_tid && by_tid <= fast1,
            "{fast0} {general} {by_tid} {fast1}"
        );
        assert!(fast1 - fast0 <= tick_ns());
    }
}

#[test]
fn proc_agrees_with_the_clocks() {
    let parked = ParkedThread::start(80_000_000);
    let user = thread_user_time_of_tid(parked.tid).unwrap();
    let total = read_clock_ns(thread_cpu_clock_id(parked.tid, CpuClockType::Sched)).unwrap();
    let (proc_user, proc_sys) = proc_thread_times(parked.tid).unwrap();
    // /proc truncates to ticks and rescales its user/system split to the precise total,
    // while the clock's user figure is raw tick accounting (which a loaded machine can put
    // ticks above the precise total): the totals are compared, which both agree on within
    // two ticks, and user time against the tick-accounted total it is part of.
    let slack = 2 * tick_ns();
    let prof = read_clock_ns(thread_cpu_clock_id(parked.tid, CpuClockType::Prof)).unwrap();
    assert!(user <= prof, "clock user {user} vs tick total {prof}");
    assert!(
        total.abs_diff(proc_user + proc_sys) <= slack,
        "clock {total} vs /proc {proc_user}+{proc_sys}"
    );
    assert!(total >= 80_000_000);
    parked.stop();

    // The calling thread, read back to back.
    spin_cpu(50_000_000);
    let user = thread_user_time_ns();
    let prof = tick_total_ns();
    let total = thread_cpu_time_ns();
    let (proc_user, proc_sys) = proc_thread_times(current_tid()).unwrap();
    // As above: user time within the tick total, the precise totals within two ticks.
    assert!(user <= prof, "clock user {user} vs tick total {prof}");
    assert!(
        total.abs_diff(proc_user + proc_sys) <= slack,
        "clock {total} vs /proc {proc_user}+{proc_sys}"
    );
}

#[test]
fn unknown_threads_are_errors_not_panics() {
    assert!(thread_user_time_of_tid(-5).is_err());
    assert!(proc_thread_times(i32::MAX).is_err());
}
