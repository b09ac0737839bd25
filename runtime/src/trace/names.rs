//! The names the runtime gives its trace slices and counters, in one place.
//!
//! Lock contention follows the Android runtime's formats exactly, so trace tooling that
//! understands ART traces (Perfetto's `android_monitor_contention` tables, for one) reads
//! marvin's the same way:
//!
//! ```text
//! monitor contention with owner NAME (TID) at METHOD(FILE:LINE) waiters=N blocking from METHOD(FILE:LINE)
//! Lock contention on a monitor lock (owner tid: TID)
//! ```

use std::fmt::Write;

/// A point in the program: a method (a MASM function) and its source position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeLocation<'a> {
    /// The method's printable name, e.g. `void Store.update(Item)` or a MASM function name.
    pub method: &'a str,
    /// The source file, if known (ART prints `null` when it is not).
    pub file: Option<&'a str>,
    pub line: u32,
}

impl std::fmt::Display for CodeLocation<'_> {
    /// `METHOD(FILE:LINE)`, as ART prints a location.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}({}:{})",
            self.method,
            self.file.unwrap_or("null"),
            self.line
        )
    }
}

/// The name of the slice a thread records while blocked on a contended monitor, in ART's
/// format: `monitor contention with owner NAME (TID)`, then ` at LOCATION` if the owner's
/// position is known, ` waiters=N` (the threads already waiting before this one), then
/// ` blocking from LOCATION` if the blocked thread's position is known.
pub fn monitor_contention_name(
    owner_name: &str,
    owner_tid: i32,
    owner_at: Option<CodeLocation<'_>>,
    waiters: usize,
    blocking_from: Option<CodeLocation<'_>>,
) -> String {
    let mut name = format!("monitor contention with owner {owner_name} ({owner_tid})");
    // Writing to a String cannot fail.
    if let Some(at) = owner_at {
        let _ = write!(name, " at {at}");
    }
    let _ = write!(name, " waiters={waiters}");
    if let Some(from) = blocking_from {
        let _ = write!(name, " blocking from {from}");
    }
    name
}

/// The name of the inner slice for the wait itself on a monitor lock, in ART's format:
/// `Lock contention on a monitor lock (owner tid: TID)`.
pub fn monitor_lock_contention_name(owner_tid: i32) -> String {
    format!("Lock contention on a monitor lock (owner tid: {owner_tid})")
}

/// A garbage collection, from the pause to the end of the sweep.
pub const GC: &str = "GC";
/// The collector's mark phase.
pub const GC_MARK: &str = "GC mark";
/// The collector's sweep phase.
pub const GC_SWEEP: &str = "GC sweep";
/// The working-set walk that shifts the access bits into the read/write registers.
pub const WORKING_SET_WALK: &str = "working-set walk";
/// One run of the ahead-of-time swap write task.
pub const SWAP_WRITE_TASK: &str = "swap write task";
/// Moving large cold objects aside and creating their stubs when the app goes to the
/// background.
pub const CREATE_STUBS: &str = "create stubs";
/// One reclaimer pass over the reclaim table.
pub const RECLAIM: &str = "reclaim";
/// Reading every reclaimed object back when the app returns to the foreground.
pub const EAGER_RESTORE: &str = "eager restore";
/// Faulting one reclaimed object back in on first access.
pub const OBJECT_FAULT: &str = "object fault";
/// Compacting the swap file once dead bytes pass the threshold.
pub const SWAP_COMPACT: &str = "swap file compaction";
/// Bringing every mutator thread to a safepoint.
pub const SUSPEND_ALL: &str = "suspend all threads";
/// A looper dispatching one message to its handler.
pub const LOOPER_DISPATCH: &str = "Looper dispatch";
/// A looper idle, waiting for its next message.
pub const LOOPER_IDLE: &str = "Looper idle";

/// A looper dispatching one message: `Looper dispatch: HANDLER what=WHAT`, the handler being
/// the method the message calls.
pub fn looper_dispatch_name(handler: &str, what: i64) -> String {
    format!("{LOOPER_DISPATCH}: {handler} what={what}")
}

/// A `mark` instant of a program: `mark NAME`.
pub fn mark_name(name: &str) -> String {
    format!("mark {name}")
}

/// Instant on a blocked latency-critical thread whose lock holder was fast-tracked:
/// `fast track HOLDER (TID) nice FROM -> TO`.
pub fn fast_track_boost_name(
    holder: &str,
    holder_tid: i32,
    from_nice: i32,
    to_nice: i32,
) -> String {
    format!("fast track {holder} ({holder_tid}) nice {from_nice} -> {to_nice}")
}

/// Instant on a fast-tracked holder that released its lock: `fast track end, nice N`.
pub fn fast_track_restore_name(nice: i32) -> String {
    format!("fast track end, nice {nice}")
}

/// Instant on a blocked thread whose holder could not be boosted (no privilege).
pub fn fast_track_denied_name(holder_tid: i32) -> String {
    format!("fast track denied for {holder_tid}")
}

/// Counter: messages pending on an app's main looper, sampled at each dispatch.
pub const PENDING_MESSAGES: &str = "pending messages";
/// Counter: bytes of an app's objects resident in memory.
pub const RESIDENT_BYTES: &str = "resident bytes";
/// Counter: bytes of an app's objects read or written in the last four working-set rounds.
pub const WORKING_SET_BYTES: &str = "working-set bytes";
/// Counter: bytes of live checkpoints in an app's swap file.
pub const SWAP_LIVE_BYTES: &str = "swap file live bytes";

/// Counter: messages waiting in a DeliQueue (its backlog).
pub const QUEUE_BACKLOG: &str = "DeliQueue backlog";
/// Counter: bytes of live objects in the heap.
pub const HEAP_BYTES: &str = "heap bytes";
/// Counter: bytes of object pages reclaimed (resident memory given back).
pub const RECLAIMED_BYTES: &str = "reclaimed bytes";
/// Counter: bytes used in the swap file, live and dead.
pub const SWAP_FILE_BYTES: &str = "swap file bytes";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitor_contention_matches_art() {
        let owner_at = CodeLocation {
            method: "void Store.update(Item)",
            file: Some("Store.masm"),
            line: 30,
        };
        let from = CodeLocation {
            method: "Item Store.find(long)",
            file: None,
            line: 66,
        };
        assert_eq!(
            monitor_contention_name("worker-3", 12931, Some(owner_at), 2, Some(from)),
            "monitor contention with owner worker-3 (12931) at void Store.update(Item)\
             (Store.masm:30) waiters=2 blocking from Item Store.find(long)(null:66)"
        );
        assert_eq!(
            monitor_contention_name("main", 7, None, 0, None),
            "monitor contention with owner main (7) waiters=0"
        );
        assert_eq!(
            monitor_lock_contention_name(7),
            "Lock contention on a monitor lock (owner tid: 7)"
        );
    }
}
