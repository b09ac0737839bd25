//! How the executor reaches the app it runs in: the [`AppBinding`] trait.
//!
//! The executor (the interpreter loop, its threads and their roots) knows nothing of what
//! makes an app: its heap's configuration, its message loop, swapping, lifecycle, traces
//! or statistics. It asks its app for them through this trait, the way mmtk-core reaches
//! its VM through `VMBinding`. [`Thread`](super::interp::Thread) is generic over the
//! binding, so every call is resolved at compile time and inlined into the loop, as the
//! barrier mode ([`BarrierMode`](marvin_runtime::BarrierMode)) is.
//!
//! The message, thread and looper instructions (`send sendfront remove has quit spawn
//! sleep`) are decoded by the executor (it pops their operands and knows, from the
//! verifier, whether an argument is a reference) and carried out by the app.

use std::sync::Arc;
use std::time::Instant;

use marvin_runtime::trace::names::CodeLocation;
use marvin_runtime::Heap;
use marvin_runtime::NativeBuffers;
use marvin_runtime::Safepoints;
use marvin_runtime::{Holder, Monitors};

use super::loaded::Loaded;
use super::trap::Fault;

/// A message the program posts with `send` or `sendfront`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Post {
    /// The handler method.
    pub method: u32,
    /// The message's `what`.
    pub what: i64,
    /// The handler's argument.
    pub arg: u64,
    /// Whether `arg` is a reference (the app keeps it alive while the message waits).
    pub arg_is_ref: bool,
    /// Where the message goes.
    pub when: PostAt,
}

/// Where a posted message goes in the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostAt {
    /// `sendfront`: before every pending message.
    Front,
    /// `send`: due after this many milliseconds (negative delays count as 0).
    Delayed { ms: u64 },
}

/// What the executor needs from the app it runs in.
///
/// Implementations mark the accessors `#[inline]`: they are on the interpreter loop's
/// hot path (the safepoint poll reads [`safepoints`](AppBinding::safepoints) at every
/// call and backward branch).
pub trait AppBinding: Send + Sync + Sized + 'static {
    /// The translated program.
    fn loaded(&self) -> &Loaded;
    /// The app's heap.
    fn heap(&self) -> &Heap;
    /// The app's safepoints (stop-the-world requests and termination).
    fn safepoints(&self) -> &Arc<Safepoints>;
    /// The app's object monitors.
    fn monitors(&self) -> &Monitors;
    /// The app's buffers outside the heap (`nalloc` and the other native-memory
    /// instructions).
    fn native(&self) -> &NativeBuffers;
    /// Access barriers on (the normal runtime) or off (for measuring their cost).
    fn barriers(&self) -> bool;
    /// Value-stack slots per thread.
    fn stack_slots(&self) -> usize;
    /// Call depth per thread.
    fn max_frames(&self) -> usize;

    /// A full collection. The calling mutator is already in the safe state with its
    /// roots published.
    fn collect_stopped(&self);
    /// Writes program output (`print`, `printc`, `prints`).
    fn write_out(&self, bytes: &[u8]);
    /// Monotonic nanoseconds since the app started (`time`).
    fn now_ns(&self) -> u64;
    /// Counts one `mark` of string `s`.
    fn mark(&self, s: u32);

    /// Whether the app records a trace (then monitor contention is timed and reported).
    fn is_traced(&self) -> bool;
    /// Records that the calling thread waited from `start_ns` to `end_ns` for a monitor
    /// `holder` held, having asked for it at `from`.
    fn monitor_contended(&self, holder: Holder, from: CodeLocation<'_>, start_ns: u64, end_ns: u64);

    /// `send` / `sendfront`.
    fn post(app: &Arc<Self>, post: Post) -> Result<(), Fault>;
    /// `remove`: drops the pending messages for `method` with `what`.
    fn remove(&self, method: u32, what: i64);
    /// `has`: whether a message for `method` with `what` is pending.
    fn has(&self, method: u32, what: i64) -> bool;
    /// `quit`: the main looper ends once the messages already due are handled.
    fn quit(&self);
    /// `spawn`: starts a thread of the app running `method(arg)`.
    fn spawn(app: &Arc<Self>, method: u32, arg: u64, arg_is_ref: bool) -> Result<(), Fault>;
    /// `sleep`: blocks until `until` or until the app ends. The calling thread is in the
    /// safe state meanwhile.
    fn sleep_until(&self, until: Instant);
}
