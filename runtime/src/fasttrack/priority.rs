//! Thread nice values: the [`Priorities`] trait the tracker sets them through (so tests
//! can use a mock) and the operating system's implementation, `getpriority` and
//! `setpriority` on a thread id. The fast-track module's only `unsafe` is here.

use std::io;

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
