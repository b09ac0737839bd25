//! The native allocator of the in-process model's one process. On a phone each app is a
//! process with its own allocator; here every app's threads (a looper and a heap task
//! each, sixty and more) share one process, and glibc would give them up to eight
//! arenas per core, each keeping its own freed memory resident. Two arenas serve that
//! many mostly idle threads without contention worth measuring and keep the process's
//! resident memory close to what the apps hold (see docs/experiments.md).

/// Arenas the in-process model lets glibc's allocator use.
pub const ARENAS: i32 = 2;

/// Caps the process's allocator arenas at [`ARENAS`] (glibc only; elsewhere nothing to
/// do). Arenas already created stay; call it before the apps start.
pub fn limit_arenas() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets an allocator parameter; M_ARENA_MAX takes any positive
    // count and affects only arenas created later.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
    }
}
