//! The words of an app's swapping: how it swaps ([`SwapMode`]), its swap counters
//! ([`SwapIo`]) and the record of one memory transition ([`Transition`]).

use serde::Serialize;

/// How an app swaps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwapMode {
    /// Marvin: objects are stubbed when the app goes to the background, saved ahead of
    /// time and reclaimed without I/O; the collector bookmarks swapped objects instead
    /// of faulting them in; the heap task runs the saver and working-set rounds.
    Objects,
    /// The page-swap baseline (a Linux swap file): every object may be paged out, the
    /// foreground app's too, and the collector faults swapped objects in.
    PageSwap,
}

/// Counters of an app's swap side, read without stopping it (all 0 without swapping).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwapIo {
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// Objects read back on first access.
    pub object_faults: u64,
    /// Faults during a collection (0 under Marvin: the collector bookmarks).
    pub gc_faults: u64,
    /// Objects read back by eager restores.
    pub restored_objects: u64,
    /// Bytes of the swap file launches started reading ahead of their faults.
    pub prefetched_bytes: u64,
}

/// One recorded transition.
#[derive(Clone, Debug, Serialize)]
pub struct Transition {
    pub action: String,
    /// Milliseconds since the app started.
    pub at_ms: u64,
    pub rss_before: u64,
    pub rss_after: u64,
    pub objects: u64,
    pub bytes: u64,
    pub duration_ns: u64,
}
