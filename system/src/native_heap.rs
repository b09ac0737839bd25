//! The native allocator of the in-process model's one process. On a phone each app is a
//! process with its own allocator; here every app's threads (a looper and a heap task
//! each, sixty and more) share one process, and glibc would give them up to eight
//! arenas per core, each keeping its own freed memory resident. Two arenas serve that
//! many mostly idle threads without contention worth measuring and keep the process's
//! resident memory close to what the apps hold (see docs/experiments.md).
//!
//! In the process mode every app is a process of its own with one arena, and
//! [`release_free_memory`] hands what that arena keeps free back to the kernel, whose
//! cgroup charges it to the apps.

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

/// Gives the allocator's free memory back to the kernel (glibc's `malloc_trim(0)`:
/// free pages anywhere in the heap, not only at its top); whether any was. A freed
/// stub, registry or index entry leaves holes in the heap that glibc keeps resident,
/// and in the process mode the app's cgroup is charged for them. Elsewhere nothing to
/// do.
pub fn release_free_memory() -> bool {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim takes no pointers; it only walks the allocator's own free
    // lists under its locks and may return free pages with madvise.
    unsafe {
        libc::malloc_trim(0) == 1
    }
    #[cfg(not(target_env = "gnu"))]
    false
}
