//! The primitive shim: every atomic, cell, lock, thread and futex of marvin's model-checked
//! concurrent code comes from here, so the same code runs on `std` normally and on `loom`
//! under `cfg(loom)` (model checking). Its users: DeliQueue (`marvin-deliqueue`), and the
//! loom model of the reclaim-table entry lock, which compiles `marvin-runtime`'s
//! `reclaim_table/lock.rs` over these atomics (the runtime library itself keeps `std`'s,
//! which its memory-mapped table lays out).
//!
//! - [`atomic`]: the atomic integer and pointer types and [`atomic::Ordering`].
//! - [`cell::UnsafeCell`]: an `UnsafeCell` with loom's closure API (`with`, `with_mut`),
//!   so loom can track every access to shared non-atomic data.
//! - [`Arc`], [`Mutex`], [`Condvar`]: `std` (or loom) versions.
//! - [`thread`]: `spawn`, `yield_now`, `current`.
//! - [`futex::Futex`]: a 32-bit wait word (Linux `futex(2)`; a mutex/condvar emulation
//!   under loom and on other systems), the one blocking primitive of the message loop.
//!
//! Code that is never model-checked (benchmarks, the CLI) uses `std` directly.
//!
//! # Surface
//!
//! Public modules: `atomic`, `cell`, `thread`, `futex` (each mirrors the `std` or loom
//! module of its name, so model-checked code reads as it would on `std`). The locks and
//! [`spin_hint`] are at the root.

#[cfg(not(loom))]
pub use std::sync::{Arc, Condvar, Mutex, MutexGuard};

#[cfg(loom)]
pub use loom::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Atomic types and orderings.
pub mod atomic {
    #[cfg(not(loom))]
    pub use std::sync::atomic::{
        fence, AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
        Ordering,
    };

    #[cfg(loom)]
    pub use loom::sync::atomic::{
        fence, AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
        Ordering,
    };
}

/// Threads: spawning, yielding, the current thread.
pub mod thread {
    #[cfg(not(loom))]
    pub use std::thread::{current, spawn, yield_now, JoinHandle, Thread};

    #[cfg(loom)]
    pub use loom::thread::{current, spawn, yield_now, JoinHandle, Thread};
}

/// Spin-loop hint (a plain yield under loom, so models make progress).
#[inline]
pub fn spin_hint() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Cells for shared non-atomic data.
pub mod cell {
    /// An `UnsafeCell` with loom's access API: every access goes through `with` (shared)
    /// or `with_mut` (exclusive) so loom can check that no two conflict.
    #[cfg(not(loom))]
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub struct UnsafeCell<T: ?Sized>(std::cell::UnsafeCell<T>);

    #[cfg(not(loom))]
    impl<T> UnsafeCell<T> {
        #[inline(always)]
        pub const fn new(data: T) -> UnsafeCell<T> {
            UnsafeCell(std::cell::UnsafeCell::new(data))
        }

        #[inline(always)]
        pub fn into_inner(self) -> T {
            self.0.into_inner()
        }
    }

    #[cfg(not(loom))]
    impl<T: ?Sized> UnsafeCell<T> {
        /// Runs `f` with a shared raw pointer to the contents.
        #[inline(always)]
        pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Runs `f` with an exclusive raw pointer to the contents.
        #[inline(always)]
        pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }

    #[cfg(loom)]
    pub use loom::cell::UnsafeCell;
}

/// A futex-style wait word: `wait(expected)` sleeps only while the word still holds
/// `expected`; `wake_*` wakes sleepers. A waker changes the word first, so a wake-up that
/// races with a sleeper is never lost: the sleeper either sees the new value and does not
/// sleep, or is already asleep and is woken.
pub mod futex {
    use std::time::Duration;

    use super::atomic::{AtomicU32, Ordering};

    /// A 32-bit futex word.
    #[derive(Debug)]
    pub struct Futex {
        word: AtomicU32,
        #[cfg(any(loom, not(target_os = "linux")))]
        emulation: Emulation,
    }

    impl Default for Futex {
        fn default() -> Self {
            Futex::new(0)
        }
    }

    impl Futex {
        pub fn new(value: u32) -> Futex {
            Futex {
                word: AtomicU32::new(value),
                #[cfg(any(loom, not(target_os = "linux")))]
                emulation: Emulation::default(),
            }
        }

        /// The word itself, for the caller's protocol (load, fetch_add).
        #[inline]
        pub fn word(&self) -> &AtomicU32 {
            &self.word
        }

        /// Sleeps while the word equals `expected`, at most `timeout` (forever with
        /// `None`). Returns early on a wake, a change of the word, or spuriously: callers
        /// re-check their condition in a loop.
        pub fn wait(&self, expected: u32, timeout: Option<Duration>) {
            #[cfg(all(not(loom), target_os = "linux"))]
            linux::wait(&self.word, expected, timeout);
            #[cfg(any(loom, not(target_os = "linux")))]
            self.emulation.wait(&self.word, expected, timeout);
        }

        /// Wakes every sleeper.
        pub fn wake_all(&self) {
            #[cfg(all(not(loom), target_os = "linux"))]
            linux::wake(&self.word, i32::MAX);
            #[cfg(any(loom, not(target_os = "linux")))]
            self.emulation.wake_all();
        }

        /// Loads the word (SeqCst: callers use it in Dekker-style protocols).
        #[inline]
        pub fn load(&self) -> u32 {
            self.word.load(Ordering::SeqCst)
        }
    }

    #[cfg(all(not(loom), target_os = "linux"))]
    mod linux {
        use std::time::Duration;

        use super::AtomicU32;

        pub(super) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
            let ts = timeout.map(|d| libc::timespec {
                tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            });
            let ts_ptr = ts
                .as_ref()
                .map_or(std::ptr::null(), |t| t as *const libc::timespec);
            // SAFETY: `word` is a live, aligned 32-bit atomic for the whole call (we hold a
            // reference to it); FUTEX_WAIT only reads it atomically, and `ts_ptr` is null
            // or points to a timespec that outlives the call. The result (timeout, EINTR,
            // EAGAIN when the word changed) needs no handling: callers loop.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    word.as_ptr(),
                    libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                    expected,
                    ts_ptr,
                );
            }
        }

        pub(super) fn wake(word: &AtomicU32, count: i32) {
            // SAFETY: `word` is a live, aligned 32-bit atomic; FUTEX_WAKE does not touch
            // memory, it only wakes threads waiting on that address.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    word.as_ptr(),
                    libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                    count,
                );
            }
        }
    }

    /// A futex emulated by a mutex and a condition variable (loom, non-Linux). The mutex
    /// is held across the check of the word and the wait, and wakers take it before
    /// notifying, so a notify cannot fall between the check and the sleep.
    #[cfg(any(loom, not(target_os = "linux")))]
    #[derive(Debug, Default)]
    struct Emulation {
        lock: super::Mutex<()>,
        cond: super::Condvar,
    }

    #[cfg(any(loom, not(target_os = "linux")))]
    impl Emulation {
        fn wait(&self, word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
            let guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            if word.load(Ordering::SeqCst) != expected {
                return;
            }
            match timeout {
                // Under loom a timed wait returns at once: a spurious wake-up, which
                // every caller must tolerate anyway, and which keeps models finite.
                #[cfg(loom)]
                Some(_) => drop(guard),
                #[cfg(not(loom))]
                Some(t) => drop(self.cond.wait_timeout(guard, t)),
                None => drop(self.cond.wait(guard)),
            }
        }

        fn wake_all(&self) {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.cond.notify_all();
        }
    }
}
