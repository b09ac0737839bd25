//! The kernel side of restoring pages on first touch: a userfaultfd that reports a touch
//! of a missing page in a registered range as `SIGBUS` to the touching thread, and the
//! `SIGBUS` handler that hands such a fault to the resolver given at [`get`]
//! ([`crate::page_restore`]'s) before it falls back to whatever handled `SIGBUS` before.
//! The only unsafe code of the page-at-a-time restore: its system calls (`userfaultfd`,
//! `mincore`, `write` and `_exit` on the way out), four `ioctl`s, a
//! signal handler's installation and its chaining.
//!
//! Faults arrive as signals on the touching thread (`UFFD_FEATURE_SIGBUS`), not as
//! events for a handler thread: the thread that needs the page reads it, at its own
//! scheduling and I/O priority (the looper of a launch runs real-time in both), with no
//! thread to wake. The descriptor is opened `UFFD_USER_MODE_ONLY`, which needs no
//! privilege: a registered missing page touched by the kernel (a `read` into it, an
//! `madvise`) fails that call with `EFAULT` instead, so nothing but user code may touch a
//! registered range (see [`crate::page_restore`] for how that is kept).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;

use marvin_runtime::PAGE;

const UFFD_API: u64 = 0xAA;
const UFFD_USER_MODE_ONLY: libc::c_int = 1;
const UFFD_FEATURE_SIGBUS: u64 = 1 << 7;
const UFFD_FEATURE_MISSING_SHMEM: u64 = 1 << 5;
const UFFDIO_REGISTER_MODE_MISSING: u64 = 1;

/// `_IOWR(0xAA, nr, size)` and `_IOR(0xAA, nr, size)` of `<linux/userfaultfd.h>`.
const fn iowr(nr: u64, size: u64) -> u64 {
    (3 << 30) | (size << 16) | (0xAA << 8) | nr
}
const fn ior(nr: u64, size: u64) -> u64 {
    (2 << 30) | (size << 16) | (0xAA << 8) | nr
}
const UFFDIO_API: u64 = iowr(0x3F, 24);
const UFFDIO_REGISTER: u64 = iowr(0x00, 32);
const UFFDIO_UNREGISTER: u64 = ior(0x01, 16);
const UFFDIO_COPY: u64 = iowr(0x03, 40);

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct UffdioRange {
    start: u64,
    len: u64,
}

#[repr(C)]
struct UffdioRegister {
    range: UffdioRange,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioCopy {
    dst: u64,
    src: u64,
    len: u64,
    mode: u64,
    copy: i64,
}

/// The process's userfaultfd, opened at first use.
#[derive(Debug)]
pub struct Uffd {
    fd: OwnedFd,
    /// The kernel registers shared memory (memory files) as well as anonymous memory.
    pub shmem: bool,
}

static UFFD: OnceLock<Option<Uffd>> = OnceLock::new();

/// What answers a `SIGBUS` at an address: true when it placed the page (the touch then
/// runs again), false for an address it does not know.
pub type Resolver = fn(usize) -> bool;

static RESOLVER: OnceLock<Resolver> = OnceLock::new();

/// The process's userfaultfd with faults reported as `SIGBUS`, and the `SIGBUS` handler
/// installed, which hands each fault to `resolver` (the first one given, for the
/// process's life); `None` where the kernel offers neither (before 5.11, or a sandbox
/// that forbids the call), and pages then come back whole.
pub fn get(resolver: Resolver) -> Option<&'static Uffd> {
    UFFD.get_or_init(|| {
        let uffd = Uffd::open().ok()?;
        let _ = RESOLVER.set(resolver);
        install_sigbus_handler().ok()?;
        Some(uffd)
    })
    .as_ref()
}

impl Uffd {
    fn open() -> io::Result<Uffd> {
        let flags = libc::O_CLOEXEC | libc::O_NONBLOCK | UFFD_USER_MODE_ONLY;
        // SAFETY: the system call takes flags and returns a new descriptor or -1; it
        // reads and writes no memory of ours.
        let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned to us and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        let mut api = UffdioApi {
            api: UFFD_API,
            features: UFFD_FEATURE_SIGBUS,
            ioctls: 0,
        };
        // SAFETY: `api` is a live `struct uffdio_api` the kernel reads and writes for the
        // call's duration.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), UFFDIO_API as _, &mut api) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        if api.features & UFFD_FEATURE_SIGBUS == 0 {
            return Err(io::Error::from(io::ErrorKind::Unsupported));
        }
        Ok(Uffd {
            fd,
            shmem: api.features & UFFD_FEATURE_MISSING_SHMEM != 0,
        })
    }

    /// Registers `[addr, addr + len)` (page-aligned, a mapping of ours) so that a touch of
    /// a missing page there raises `SIGBUS` on the touching thread.
    pub fn register_missing(&self, addr: usize, len: usize) -> io::Result<()> {
        let mut reg = UffdioRegister {
            range: UffdioRange {
                start: addr as u64,
                len: len as u64,
            },
            mode: UFFDIO_REGISTER_MODE_MISSING,
            ioctls: 0,
        };
        // SAFETY: `reg` is a live `struct uffdio_register` for the call; the kernel checks
        // the range is mapped and ours, and changes no byte of it.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), UFFDIO_REGISTER as _, &mut reg) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Ends the registration of `[addr, addr + len)`: missing pages fault in as usual.
    pub fn unregister(&self, addr: usize, len: usize) -> io::Result<()> {
        let mut range = UffdioRange {
            start: addr as u64,
            len: len as u64,
        };
        // SAFETY: `range` is a live `struct uffdio_range` for the call; no byte of the
        // range changes.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), UFFDIO_UNREGISTER as _, &mut range) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Fills the missing pages of `[dst, dst + src.len())` (page-aligned, registered) with
    /// `src`, atomically per page: a page some other thread filled meanwhile keeps its
    /// bytes. Returns the pages this call filled. Never blocks on a signal; async-signal-safe.
    pub fn copy(&self, dst: usize, src: &[u8]) -> io::Result<usize> {
        let page = PAGE;
        let mut done = 0;
        let mut filled = 0;
        while done < src.len() {
            let mut c = UffdioCopy {
                dst: (dst + done) as u64,
                src: src[done..].as_ptr() as u64,
                len: (src.len() - done) as u64,
                mode: 0,
                copy: 0,
            };
            // SAFETY: `c` is a live `struct uffdio_copy`; the kernel reads `c.len` bytes
            // at `c.src` (inside `src`) and fills only missing pages of our registered
            // range at `c.dst`, which no Rust reference covers while missing.
            let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), UFFDIO_COPY as _, &mut c) };
            if rc == 0 {
                return Ok(filled + (src.len() - done) / page);
            }
            let err = io::Error::last_os_error();
            if c.copy > 0 {
                // Part of it went in before a page that was already there.
                let n = c.copy as usize / page * page;
                filled += n / page;
                done += n;
                continue;
            }
            match err.raw_os_error() {
                // That page is there already (another thread's fill): the next one.
                Some(libc::EEXIST) => done += page,
                Some(libc::EAGAIN) | Some(libc::EINTR) => continue,
                _ => return Err(err),
            }
        }
        Ok(filled)
    }
}

/// Whatever handled `SIGBUS` before ours: a fault that is not a registered page's goes
/// to it.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

fn install_sigbus_handler() -> io::Result<()> {
    // SAFETY: zeroed is a valid `sigaction` (no handler, empty mask) that we fill in.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_sigbus as *const () as usize;
    // Not SA_ONSTACK: the fill reads a run of pages into a buffer on the faulting thread's
    // own stack, larger than an alternate signal stack.
    action.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
    // SAFETY: `action.sa_mask` is ours to fill.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    // SAFETY: zeroed is a valid `sigaction` for the kernel to write the old one into.
    let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: both point at live `sigaction`s; the handler is an `extern "C"` function
    // with the SA_SIGINFO signature that lives as long as the process.
    let rc = unsafe { libc::sigaction(libc::SIGBUS, &action, &mut previous) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let _ = PREVIOUS.set(previous);
    Ok(())
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    if RESOLVER.get().is_some_and(|resolve| resolve(addr)) {
        // The page is in: the touch runs again and finds it.
        return;
    }
    let Some(previous) = PREVIOUS.get() else {
        return;
    };
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // Put the old disposition back: the touch runs again and the kernel's default
        // (a core dump) or the old choice applies.
        // SAFETY: `previous` is the `sigaction` the kernel gave back at installation.
        unsafe { libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut()) };
    } else if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: an SA_SIGINFO handler the process installed, called as the kernel would.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(handler) };
        f(sig, info, ctx);
    } else {
        // SAFETY: a plain handler the process installed, called as the kernel would.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
        f(sig);
    }
}

/// How many pages of `[addr, addr + len)` (page-aligned, mapped) are in memory now.
pub fn resident_pages(addr: usize, len: usize) -> io::Result<usize> {
    let page = PAGE;
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: `vec` holds one byte per page of the range, which the kernel fills; it
    // reads no memory of the range.
    let rc = unsafe { libc::mincore(addr as *mut libc::c_void, len, vec.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(vec.iter().filter(|&&b| b & 1 != 0).count())
}

/// Writes `msg` to stderr and ends the process with `code` at once, from a signal handler
/// (no unwinding, no exit handlers: the thread that would run them is stopped in a touch
/// that cannot complete).
pub fn die(msg: &[u8], code: i32) -> ! {
    // SAFETY: `write` reads `msg` only; `_exit` ends the process. Both are
    // async-signal-safe.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::_exit(code)
    }
}
