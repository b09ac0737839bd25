//! Every system call of the machine side that needs `unsafe`, each behind a safe
//! wrapper: signal handlers, pidfds (`pidfd_open`, `pidfd_send_signal`,
//! `process_mrelease`), `process_madvise` (paging another process's memory out), eventfd
//! and poll, `swapon`/`swapoff`, joining a cgroup between
//! fork and exec, the control thread's real-time scheduling ([`RealtimeThread`]) and
//! another thread's ([`set_thread_fifo`], the UI thread of the app in front) with its
//! block I/O class ([`set_thread_io_class`]), dropping a file's clean pages from the page
//! cache ([`drop_file_cache`], room ahead of a launch), locking the System's memory
//! ([`lock_memory`]), a file system's free room ([`fs_room`], checked before a run), and
//! handing another process's pages to the kernel's swap ([`page_out`]).
//! Nothing else in `marvin-machine` uses `unsafe`.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// `SWAP_FLAG_PREFER` from `<sys/swap.h>` (not in the libc crate): the low 15 bits of
/// the flags are the priority.
const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
const SWAP_FLAG_PRIO_MASK: libc::c_int = 0x7fff;

fn cvt(rc: libc::c_long) -> io::Result<libc::c_long> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// Whether this process runs with effective uid 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The size of a memory page.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory preconditions; _SC_PAGESIZE is always supported.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}

/// Installs `handler` for `signals` (without `SA_RESTART`, so a blocking call returns
/// `EINTR` and the caller gets to look at its stop flag).
pub fn install_handler(
    signals: &[libc::c_int],
    handler: extern "C" fn(libc::c_int),
) -> io::Result<()> {
    for &sig in signals {
        // SAFETY: a zeroed sigaction is a valid value (empty mask, no flags); it is
        // filled in before use.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = handler as usize;
        action.sa_flags = 0;
        // SAFETY: sa_mask is a valid sigset_t owned by `action`.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: `action` is a fully initialised sigaction whose handler is an
        // `extern "C" fn(c_int)` that only touches atomics and async-signal-safe calls;
        // the old action is not asked for.
        let rc = unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) };
        cvt(rc as libc::c_long)?;
    }
    Ok(())
}

/// Writes `msg` to stderr with a single `write(2)`, which is async-signal-safe (for use
/// inside a signal handler, where `eprintln!` is not allowed).
pub fn write_stderr_raw(msg: &[u8]) {
    // SAFETY: the pointer and length describe the live slice `msg`; fd 2 may be
    // closed, in which case write fails harmlessly.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
    }
}

/// Ends the process at once with `code`, running no destructors (async-signal-safe).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and has no preconditions.
    unsafe { libc::_exit(code) }
}

/// Sends `sig` to this process (used by tests of the signal path).
pub fn raise(sig: libc::c_int) -> io::Result<()> {
    // SAFETY: raise has no memory preconditions.
    cvt(unsafe { libc::raise(sig) } as libc::c_long).map(drop)
}

/// A pidfd for `pid` (`pidfd_open(2)`, Linux 5.3): it names that process and no
/// other, even after the pid is reused.
pub fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags by value and returns a new fd or -1.
    let fd =
        cvt(unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0 as libc::c_uint) })?;
    // SAFETY: the kernel returned a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Asks the kernel to page out the memory of the process behind `pidfd` in `ranges`
/// (address, length): [`process_madvise`] with `MADV_PAGEOUT`, in batches of at most
/// [`MADVISE_MAX_RANGES`], as Android's cached-app compaction does. Anonymous pages go
/// to swap when there is a swap device, and stay otherwise. The other process may have
/// unmapped a range meanwhile: the kernel then stops at it, and what it advised is
/// returned (bytes).
pub fn page_out(pidfd: BorrowedFd<'_>, ranges: &[(u64, u64)]) -> io::Result<u64> {
    let mut advised = 0u64;
    for batch in ranges.chunks(MADVISE_MAX_RANGES) {
        advised += process_madvise(pidfd, batch, libc::MADV_PAGEOUT)?;
    }
    Ok(advised)
}

/// Sends `sig` to the process behind `pidfd` (`pidfd_send_signal(2)`, Linux 5.1).
pub fn pidfd_send_signal(pidfd: BorrowedFd<'_>, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: the fd is live for the call (borrowed); info is NULL, which the kernel
    // reads as "as kill(2) would send it"; flags are 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0 as libc::c_uint,
        )
    };
    cvt(rc).map(drop)
}

/// Asks the kernel to free the memory of the killed process behind `pidfd` now rather
/// than when its last thread has exited (`process_mrelease(2)`, Linux 5.15). Returns
/// `Ok(false)` where the kernel lacks the call or the process was already gone.
pub fn process_mrelease(pidfd: BorrowedFd<'_>) -> io::Result<bool> {
    // SAFETY: the fd is live for the call; flags are 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_process_mrelease,
            pidfd.as_raw_fd(),
            0 as libc::c_uint,
        )
    };
    match cvt(rc) {
        Ok(_) => Ok(true),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::ESRCH)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The most ranges one `process_madvise(2)` call takes (`UIO_MAXIOV`).
pub const MADVISE_MAX_RANGES: usize = 1024;

/// Gives the kernel `advice` (`MADV_PAGEOUT`, `MADV_COLD`, `MADV_WILLNEED`) on `ranges`
/// (start address, length) of the memory of the process behind `pidfd`
/// (`process_madvise(2)`, Linux 5.10; needs `CAP_SYS_NICE` and ptrace read access to the
/// target). At most [`MADVISE_MAX_RANGES`] ranges. Returns the bytes advised: the kernel
/// stops at the first range it refuses (one unmapped or locked meanwhile) and returns what
/// it advised before it, or the error if that was the first range.
pub fn process_madvise(
    pidfd: BorrowedFd<'_>,
    ranges: &[(u64, u64)],
    advice: libc::c_int,
) -> io::Result<u64> {
    if ranges.len() > MADVISE_MAX_RANGES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "more ranges than one process_madvise call takes",
        ));
    }
    let iov: Vec<libc::iovec> = ranges
        .iter()
        .map(|&(start, len)| libc::iovec {
            iov_base: start as usize as *mut libc::c_void,
            iov_len: len as usize,
        })
        .collect();
    // SAFETY: the kernel reads only the iovec array from this process's memory, which
    // is live and correctly sized for the call; the addresses in it are the target's
    // and are never dereferenced here. The fd is live for the call; flags are 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_process_madvise,
            pidfd.as_raw_fd(),
            iov.as_ptr(),
            iov.len(),
            advice,
            0 as libc::c_uint,
        )
    };
    cvt(rc).map(|n| n as u64)
}

/// A non-blocking, close-on-exec eventfd (for `cgroup.event_control`).
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd takes its arguments by value and returns a new fd or -1.
    let fd =
        cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) } as libc::c_long)?;
    // SAFETY: the kernel returned a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Waits up to `timeout` until one of `fds` reports one of its events; returns which
/// did (all false on timeout or when a signal interrupted the wait).
pub fn poll(fds: &[(BorrowedFd<'_>, libc::c_short)], timeout: Duration) -> io::Result<Vec<bool>> {
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|(fd, events)| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: *events,
            revents: 0,
        })
        .collect();
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: `polls` is a live, correctly sized array of pollfd whose fds are borrowed
    // for the duration of the call.
    let rc = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(e);
    }
    Ok(polls
        .iter()
        .map(|p| p.revents & (p.events | libc::POLLERR | libc::POLLHUP) != 0)
        .collect())
}

/// Turns on swapping to `path` (`swapon(2)`), at `priority` if given.
pub fn swapon(path: &Path, priority: Option<u16>) -> io::Result<()> {
    let c = c_path(path)?;
    let flags = match priority {
        Some(p) => SWAP_FLAG_PREFER | (p as libc::c_int & SWAP_FLAG_PRIO_MASK),
        None => 0,
    };
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    cvt(unsafe { libc::swapon(c.as_ptr(), flags) } as libc::c_long).map(drop)
}

/// Turns off swapping to `path` (`swapoff(2)`); the kernel reads its pages back first.
pub fn swapoff(path: &Path) -> io::Result<()> {
    let c = c_path(path)?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    cvt(unsafe { libc::swapoff(c.as_ptr()) } as libc::c_long).map(drop)
}

/// Makes the child of `cmd` join the cgroup whose `cgroup.procs` is open as `procs`
/// between fork and exec, so everything the program does after exec is charged to the
/// group. Writing "0" to `cgroup.procs` moves the writer (both cgroup versions).
pub fn join_cgroup_before_exec(cmd: &mut Command, procs: File) {
    let fd: OwnedFd = procs.into();
    let raw = fd.as_fd().as_raw_fd();
    // The descriptor stays open in the parent until the Command is dropped; the child
    // inherits it across fork and it closes at exec (it is close-on-exec).
    let keep = std::sync::Arc::new(fd);
    let hook = move || {
        let _keep = &keep;
        // SAFETY: write(2) is async-signal-safe; the fd is open in the forked child
        // (inherited) and the buffer is a static byte string.
        let rc = unsafe { libc::write(raw, b"0".as_ptr().cast(), 1) };
        if rc == 1 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    };
    // SAFETY: the hook runs in the child between fork and exec; it allocates nothing,
    // takes no locks and calls only write(2), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(hook);
    }
}

/// The calling thread under `SCHED_FIFO` while this guard lives, as Android runs lmkd: the
/// System's control loop (the low-memory killer, the reclaimer) must act before the
/// kernel's OOM killer does however busy the machine's CPUs are, and it sleeps between its
/// rounds, so it takes little. `SCHED_RESET_ON_FORK` makes the threads and processes it
/// starts (the apps) run normally. Dropping the guard returns the thread to `SCHED_OTHER`.
#[derive(Debug)]
pub struct RealtimeThread(());

impl RealtimeThread {
    /// Raises the calling thread to `SCHED_FIFO` priority `priority` (1..=99), or says
    /// why it cannot (no `CAP_SYS_NICE`, an RT budget of 0 in its cgroup).
    pub fn enter(priority: i32) -> io::Result<RealtimeThread> {
        set_scheduler(libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, priority)?;
        Ok(RealtimeThread(()))
    }
}

impl Drop for RealtimeThread {
    fn drop(&mut self) {
        let _ = set_scheduler(libc::SCHED_OTHER, 0);
    }
}

fn set_scheduler(policy: libc::c_int, priority: i32) -> io::Result<()> {
    set_thread_scheduler(0, policy, priority)
}

/// Puts thread `tid` (of any process; 0 is the calling thread) under `SCHED_FIFO`
/// priority `priority` with `SCHED_RESET_ON_FORK` (threads it starts run normally), or,
/// with `None`, back under `SCHED_OTHER`. Needs `CAP_SYS_NICE` for another process's
/// thread.
pub fn set_thread_fifo(tid: u32, priority: Option<i32>) -> io::Result<()> {
    match priority {
        Some(p) => set_thread_scheduler(tid, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, p),
        None => set_thread_scheduler(tid, libc::SCHED_OTHER, 0),
    }
}

/// Sets thread `tid`'s nice value (0: the calling thread; lowering it below what it was
/// needs `CAP_SYS_NICE`).
pub fn set_thread_nice(tid: u32, nice: i32) -> io::Result<()> {
    let who = libc::id_t::from(tid);
    // SAFETY: setpriority has no memory preconditions; on Linux PRIO_PROCESS with a
    // thread id names that one thread, and a stale id only makes the call fail.
    cvt(unsafe { libc::setpriority(libc::PRIO_PROCESS, who, nice) } as libc::c_long).map(drop)
}

/// Writes every file system's dirty data out (`sync(2)`); returns when the kernel is
/// done.
pub fn sync_all() {
    // SAFETY: sync(2) takes no arguments, touches none of this process's memory and
    // cannot fail.
    unsafe { libc::sync() }
}

/// Drops the clean pages of the file at `path` from `from` on from the page cache, for
/// every process that has the file open ([`marvin_runtime::memfd::drop_cache`]: whole
/// pages only, large folios the range does not wholly cover stay).
pub fn drop_file_cache(path: &Path, from: u64) -> io::Result<()> {
    marvin_runtime::memfd::drop_cache(&File::open(path)?, from)
}

/// Locks the calling process's memory, as lmkd does, until the guard is dropped: every
/// page mapped now is faulted in and kept, and every page mapped later is kept once
/// touched (`MCL_ONFAULT`, so thread stacks are not filled in). The System then never
/// waits on a page fault for its own code, which it shares with the apps and which the
/// kernel may otherwise reclaim under their group's pressure, nor for a page of an app's
/// reclaim table. Needs `CAP_IPC_LOCK` (root) or a large enough `RLIMIT_MEMLOCK`.
pub fn lock_memory() -> io::Result<MemoryLock> {
    // SAFETY: mlockall has no memory preconditions; it only pins pages.
    cvt(unsafe { libc::mlockall(libc::MCL_CURRENT) } as libc::c_long)?;
    let future = libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT;
    // SAFETY: as above.
    cvt(unsafe { libc::mlockall(future) } as libc::c_long)?;
    Ok(MemoryLock(()))
}

/// The process's memory stays locked while this lives ([`lock_memory`]).
#[derive(Debug)]
pub struct MemoryLock(());

impl Drop for MemoryLock {
    fn drop(&mut self) {
        // SAFETY: munlockall has no memory preconditions.
        unsafe { libc::munlockall() };
    }
}

/// What a file system has room for, as `statfs(2)` tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsRoom {
    /// Bytes an unprivileged writer may still use (`f_bavail` blocks).
    pub available: u64,
    /// The file system is a tmpfs (which cannot hold an active swap file).
    pub tmpfs: bool,
}

/// The room on the file system that holds `path` (which must exist).
pub fn fs_room(path: &Path) -> io::Result<FsRoom> {
    let c = c_path(path)?;
    // SAFETY: a zeroed statfs is a valid value for the kernel to fill in.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a live, writable statfs.
    cvt(unsafe { libc::statfs(c.as_ptr(), &mut st) } as libc::c_long)?;
    // The field types differ between architectures: the casts are needed elsewhere.
    #[allow(clippy::unnecessary_cast)]
    Ok(FsRoom {
        available: (st.f_bavail as u64).saturating_mul(st.f_bsize as u64),
        tmpfs: st.f_type as i64 == libc::TMPFS_MAGIC as i64,
    })
}

/// A thread's block I/O class (`ioprio_set(2)`), as the I/O scheduler (mq-deadline,
/// BFQ) orders requests by it: a real-time request is dispatched before every
/// best-effort one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoClass {
    /// The real-time class at `level` (0 highest, 7 lowest).
    RealTime(u8),
    /// No class of its own: best effort at the level its nice value gives it.
    Default,
}

const IOPRIO_WHO_PROCESS: libc::c_long = 1;
const IOPRIO_CLASS_SHIFT: u32 = 13;
const IOPRIO_CLASS_RT: libc::c_long = 1;

impl IoClass {
    /// The `ioprio` value the system call takes and returns.
    fn value(self) -> libc::c_long {
        match self {
            IoClass::RealTime(level) => {
                (IOPRIO_CLASS_RT << IOPRIO_CLASS_SHIFT) | libc::c_long::from(level.min(7))
            }
            IoClass::Default => 0,
        }
    }
}

/// Sets thread `tid`'s block I/O class (of any process; 0 is the calling thread). The
/// real-time class needs `CAP_SYS_ADMIN` or `CAP_SYS_NICE`.
pub fn set_thread_io_class(tid: u32, class: IoClass) -> io::Result<()> {
    let tid = libc::c_long::from(tid);
    // SAFETY: ioprio_set takes three integers and touches no memory of this process; a
    // stale thread id only makes it fail with ESRCH.
    cvt(unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, tid, class.value()) })
        .map(drop)
}

/// Thread `tid`'s block I/O class (`Default` for any class but real time).
pub fn thread_io_class(tid: u32) -> io::Result<IoClass> {
    let tid = libc::c_long::from(tid);
    // SAFETY: as for ioprio_set: integers only.
    let v = cvt(unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, tid) })?;
    Ok(if v >> IOPRIO_CLASS_SHIFT == IOPRIO_CLASS_RT {
        IoClass::RealTime((v & 7) as u8)
    } else {
        IoClass::Default
    })
}

/// Thread `tid`'s scheduling policy (`SCHED_RESET_ON_FORK` masked off).
pub fn thread_policy(tid: u32) -> io::Result<libc::c_int> {
    let tid = libc::pid_t::try_from(tid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "thread id out of range"))?;
    // SAFETY: sched_getscheduler has no memory preconditions.
    cvt(unsafe { libc::sched_getscheduler(tid) } as libc::c_long)
        .map(|p| p as libc::c_int & !libc::SCHED_RESET_ON_FORK)
}

fn set_thread_scheduler(tid: u32, policy: libc::c_int, priority: i32) -> io::Result<()> {
    let tid = libc::pid_t::try_from(tid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "thread id out of range"))?;
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param for the duration of the call; `tid` names a
    // thread (0: the calling one), and a stale id only makes the call fail with ESRCH.
    cvt(unsafe { libc::sched_setscheduler(tid, policy, &param) } as libc::c_long).map(drop)
}

#[cfg(test)]
mod cache_tests {
    use super::*;

    /// How many of the first `pages` pages of `file` are in the page cache (by `mincore`,
    /// which reads nothing in).
    fn cached_pages(file: &File, pages: usize) -> usize {
        marvin_runtime::memfd::cached_pages(file, 0, pages as u64 * 4096).expect("mincore")
    }

    #[test]
    fn a_files_clean_pages_leave_the_cache_and_its_data_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 64 * 4096]).unwrap();
        let file = File::open(&path).unwrap();
        file.sync_all().unwrap();
        let fs = Command::new("stat")
            .args(["-f", "-c", "%T"])
            .arg(dir.path())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        if fs == "tmpfs" {
            eprintln!("skipped: on tmpfs the page cache is the file: nothing to drop");
            return;
        }
        let before = cached_pages(&file, 64);
        if before == 0 {
            eprintln!("skipped: nothing of a file just written is cached here");
            return;
        }
        // From within the first page: that page stays (later ones go only where the
        // cache's large folios lie wholly past it, so they are not checked).
        drop_file_cache(&path, 64).unwrap();
        assert_eq!(cached_pages(&file, 1), 1, "the first page stays");
        drop_file_cache(&path, 0).unwrap();
        assert_eq!(cached_pages(&file, 64), 0, "from 0, every page goes");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            vec![7u8; 64 * 4096],
            "data stays"
        );
        let e = drop_file_cache(&dir.path().join("missing"), 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}

#[cfg(test)]
mod realtime_tests {
    use super::*;

    /// The scheduling policy of the calling thread.
    fn policy() -> libc::c_int {
        // SAFETY: sched_getscheduler has no memory preconditions; pid 0 is this thread.
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn the_guard_raises_the_thread_and_its_children_run_normally() {
        let rt = match RealtimeThread::enter(1) {
            Ok(rt) => rt,
            Err(e) => {
                println!("skipped: cannot run SCHED_FIFO here: {e}");
                return;
            }
        };
        assert_eq!(
            policy() & !libc::SCHED_RESET_ON_FORK,
            libc::SCHED_FIFO,
            "this thread is real-time"
        );
        let child = std::thread::spawn(policy).join().unwrap();
        assert_eq!(child, libc::SCHED_OTHER, "a thread it starts is not");
        drop(rt);
        assert_eq!(policy(), libc::SCHED_OTHER, "and back to normal after");
    }
}

#[cfg(test)]
mod io_class_tests {
    use super::*;

    #[test]
    fn a_thread_gets_the_real_time_io_class_and_loses_it() {
        // A thread of its own, so the test thread's class never changes.
        std::thread::spawn(|| {
            assert_eq!(thread_io_class(0).unwrap(), IoClass::Default, "the default");
            if let Err(e) = set_thread_io_class(0, IoClass::RealTime(4)) {
                println!("skipped: cannot take the real-time I/O class here: {e}");
                return;
            }
            assert_eq!(thread_io_class(0).unwrap(), IoClass::RealTime(4));
            set_thread_io_class(0, IoClass::Default).unwrap();
            assert_eq!(thread_io_class(0).unwrap(), IoClass::Default);
        })
        .join()
        .unwrap();
        assert!(
            set_thread_io_class(u32::MAX >> 2, IoClass::Default).is_err(),
            "no such thread"
        );
    }
}
