//! Thread CPU clocks: how much CPU time a thread has used, read as cheaply as Linux allows.
//!
//! The kernel names a per-thread CPU clock with a `clockid_t` that encodes the thread id and
//! the clock type: `((!tid) << 3) | per_thread_bit | type`, where the per-thread bit is 4 and
//! the two low bits pick the type (0 `PROF` = user+system, 1 `VIRT` = user only, 2 `SCHED` =
//! scheduler runtime, the most precise user+system figure). A thread id of 0 means "the
//! calling thread", so the current thread's user-time clock is a constant
//! ([`CURRENT_THREAD_USER_CLOCK`]) and reading it is one `clock_gettime` call with no lookup.
//!
//! This module owns:
//! - [`thread_cpu_time_ns`]: the current thread's user+system time (`CLOCK_THREAD_CPUTIME_ID`),
//!   and [`measure_thread_cpu`], the CPU time a piece of work takes on it;
//! - [`thread_user_time_ns`]: the current thread's user time through the constant clock id;
//! - [`thread_user_time_of`] (and its safe forms [`thread_user_time_of_handle`],
//!   [`thread_user_time_of_tid`], [`thread_user_time_via_pthread_self`]): a thread's user
//!   time through the general path, `pthread_getcpuclockid`;
//! - [`proc_thread_times`]: the `/proc/self/task/<tid>/stat` parser, kept as the fallback
//!   and as the benchmark baseline (`marvin bench cputime`);
//! - [`current_tid`] and [`boottime_ns`] (the clock the trace writer stamps events with).
//!
//! All of the runtime's clock `unsafe` lives here.
//!
//! Precision: the kernel keeps the user/system split in scheduler ticks (with tick-based
//! accounting), while `SCHED` and `CLOCK_THREAD_CPUTIME_ID` count nanoseconds of runtime, so
//! user time can run ahead of or behind the precise total by about one tick. One
//! [`tick_ns`] of slack is the honest tolerance when comparing them.

mod proc;

use std::io;
use std::thread::JoinHandle;

pub use proc::{clock_ticks_per_second, parse_stat_times, proc_thread_times};

/// Per-thread flag in a CPU clock id (`CPUCLOCK_PERTHREAD_MASK`).
const CPUCLOCK_PERTHREAD: libc::clockid_t = 4;
/// Mask of the clock-type bits in a CPU clock id (`CPUCLOCK_CLOCK_MASK`).
const CPUCLOCK_TYPE_MASK: libc::clockid_t = 3;

/// The clock types a CPU clock id can name (its two low bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum CpuClockType {
    /// User + system time, tick-accounted (`CPUCLOCK_PROF`).
    Prof = 0,
    /// User time only (`CPUCLOCK_VIRT`).
    Virt = 1,
    /// Scheduler runtime: user + system in nanoseconds (`CPUCLOCK_SCHED`).
    Sched = 2,
}

/// The kernel's encoding of a per-thread CPU clock id (`MAKE_THREAD_CPUCLOCK`).
/// `tid == 0` names the calling thread.
pub const fn thread_cpu_clock_id(tid: i32, kind: CpuClockType) -> libc::clockid_t {
    ((!tid) << 3) | CPUCLOCK_PERTHREAD | kind as libc::clockid_t
}

/// The calling thread's user-time clock: computed at compile time, valid on every thread.
pub const CURRENT_THREAD_USER_CLOCK: libc::clockid_t = thread_cpu_clock_id(0, CpuClockType::Virt);

/// Replaces the clock type of a CPU clock id (for example turning the `SCHED` id that
/// `pthread_getcpuclockid` returns into the `VIRT` one).
pub const fn with_clock_type(id: libc::clockid_t, kind: CpuClockType) -> libc::clockid_t {
    (id & !CPUCLOCK_TYPE_MASK) | kind as libc::clockid_t
}

/// One `/proc` clock tick (1 / `_SC_CLK_TCK` s) in nanoseconds, the unit of the coarsest
/// figures here; comparisons between user time and precise totals allow about one of these.
pub fn tick_ns() -> u64 {
    1_000_000_000 / clock_ticks_per_second()
}

/// Reads `clock`, or returns the OS error `clock_gettime` reported.
pub fn read_clock_ns(clock: libc::clockid_t) -> io::Result<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call; an unknown or
    // stale clock id only makes the kernel return EINVAL, it never touches other memory.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(timespec_ns(&ts))
}

#[inline]
fn timespec_ns(ts: &libc::timespec) -> u64 {
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// The calling thread's CPU time (user + system) in nanoseconds, from
/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`. Falls back to the `/proc` figures (tick
/// precision) if the clock cannot be read, and to 0 if neither can.
pub fn thread_cpu_time_ns() -> u64 {
    match read_clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) {
        Ok(ns) => ns,
        Err(_) => read_proc_fallback(|user, system| user.saturating_add(system)),
    }
}

/// Runs `f` on the calling thread and returns its result with the thread CPU time (user +
/// system, [`thread_cpu_time_ns`]) it took: the one measurement behind
/// [`CpuAccount::measure`](crate::cpuaccount::CpuAccount::measure) and the fast-track
/// detector's overhead.
#[inline]
pub fn measure_thread_cpu<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let start = thread_cpu_time_ns();
    let r = f();
    (r, thread_cpu_time_ns().saturating_sub(start))
}

/// The calling thread's user CPU time in nanoseconds: one `clock_gettime` on the constant
/// "current thread, VIRT" clock id. Falls back to the `/proc` parser if the clock cannot be
/// read (a kernel without per-thread CPU clocks), and to 0 if neither can.
#[inline]
pub fn thread_user_time_ns() -> u64 {
    match read_clock_ns(CURRENT_THREAD_USER_CLOCK) {
        Ok(ns) => ns,
        Err(_) => read_proc_fallback(|user, _| user),
    }
}

#[cold]
#[inline(never)]
fn read_proc_fallback(pick: impl Fn(u64, u64) -> u64) -> u64 {
    proc_thread_times(current_tid())
        .map(|(user, system)| pick(user, system))
        .unwrap_or(0)
}

/// User CPU time of `thread` in nanoseconds, the general path: `pthread_getcpuclockid`
/// names the thread's clock, its type bits are set to `VIRT`, and `clock_gettime` reads it.
///
/// # Safety
/// `thread` must identify a thread of this process that has not been joined or detached-and-
/// exited: glibc reads the thread's descriptor through the handle, which is freed once the
/// thread is joined. `libc::pthread_self()` always qualifies, as does the handle of an
/// unjoined [`JoinHandle`] (see [`thread_user_time_of_handle`]).
pub unsafe fn thread_user_time_of(thread: libc::pthread_t) -> io::Result<u64> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: the caller guarantees `thread` is a live (unjoined) pthread handle; `clock` is a
    // valid writable clockid_t.
    let rc = unsafe { libc::pthread_getcpuclockid(thread, &mut clock) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    read_clock_ns(with_clock_type(clock, CpuClockType::Virt))
}

/// The calling thread's user CPU time through the general path ([`thread_user_time_of`] on
/// `pthread_self()`): what [`thread_user_time_ns`] replaces, kept to cross-check and
/// benchmark it.
pub fn thread_user_time_via_pthread_self() -> io::Result<u64> {
    // SAFETY: pthread_self() is the calling thread, which is alive for the whole call.
    unsafe { thread_user_time_of(libc::pthread_self()) }
}

/// User CPU time of the thread behind `handle`, through [`thread_user_time_of`]. Works after
/// the thread has finished too, as long as it has not been joined (the handle keeps its
/// descriptor alive); a finished thread's clock reads as an error (`EINVAL`).
pub fn thread_user_time_of_handle<T>(handle: &JoinHandle<T>) -> io::Result<u64> {
    use std::os::unix::thread::JoinHandleExt;
    // SAFETY: `handle` is borrowed, so the thread has not been joined (joining consumes the
    // handle) and std never detaches a thread while its JoinHandle exists.
    unsafe { thread_user_time_of(handle.as_pthread_t()) }
}

/// User CPU time of thread `tid` of this process, by encoding the clock id from the tid
/// directly (no pthread handle needed). A tid that is not a live thread of this process
/// reads as an error; a reused tid reads the new thread's clock.
pub fn thread_user_time_of_tid(tid: i32) -> io::Result<u64> {
    read_clock_ns(thread_cpu_clock_id(tid, CpuClockType::Virt))
}

/// The calling thread's kernel thread id (`gettid`).
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// `CLOCK_BOOTTIME` in nanoseconds: monotonic, counts suspend, and is Perfetto's default trace
/// clock, so trace timestamps taken from it need no clock conversion.
pub fn boottime_ns() -> u64 {
    // CLOCK_BOOTTIME exists on every Linux this runtime supports (2.6.39+); should reading it
    // ever fail, CLOCK_MONOTONIC is the closest substitute.
    read_clock_ns(libc::CLOCK_BOOTTIME)
        .or_else(|_| read_clock_ns(libc::CLOCK_MONOTONIC))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_thread_clock_id_matches_the_kernel_encoding() {
        // (!0) << 3 = -8; | per-thread 4 | VIRT 1 = -3.
        assert_eq!(CURRENT_THREAD_USER_CLOCK, -3);
        assert_eq!(thread_cpu_clock_id(0, CpuClockType::Sched), -2);
        // glibc's pthread_getcpuclockid gives the SCHED id; switching it to VIRT keeps the tid.
        let sched = thread_cpu_clock_id(1234, CpuClockType::Sched);
        assert_eq!(
            with_clock_type(sched, CpuClockType::Virt),
            thread_cpu_clock_id(1234, CpuClockType::Virt)
        );
    }

    #[test]
    fn pthread_getcpuclockid_uses_the_same_encoding() {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: pthread_self() is the live calling thread; `clock` is writable.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
        assert_eq!(rc, 0);
        assert_eq!(
            clock,
            thread_cpu_clock_id(current_tid(), CpuClockType::Sched)
        );
    }
}
