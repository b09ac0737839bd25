//! Stop requests from outside: SIGINT (Ctrl-C), SIGTERM and SIGHUP set a flag that the
//! run loop polls, so it unwinds and its guards remove the cgroup and swap; a second
//! signal ends the process at once (the next run's sweep removes what it leaves).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use super::sys;

/// The first stop signal received, 0 while none.
static STOP: AtomicI32 = AtomicI32::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The signals that ask a run to stop.
pub const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_stop(sig: libc::c_int) {
    // Only atomics and async-signal-safe calls in here.
    if STOP.swap(sig, Ordering::SeqCst) != 0 {
        sys::write_stderr_raw(b"marvin: second stop signal, exiting now without cleanup\n");
        sys::exit_now(128 + sig);
    }
    sys::write_stderr_raw(
        b"marvin: stop signal received, cleaning up (send it again to exit now)\n",
    );
}

/// Installs the handlers for [`STOP_SIGNALS`] (once per process; later calls do nothing).
pub fn install() -> io::Result<()> {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    sys::install_handler(&STOP_SIGNALS, on_stop)
        .inspect_err(|_| INSTALLED.store(false, Ordering::SeqCst))
}

/// The stop signal received so far, if any.
pub fn stop_requested() -> Option<i32> {
    match STOP.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}
