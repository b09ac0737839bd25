//! How to run an app: its heap, executor and swap settings ([`RunConfig`], [`SwapSetup`]).

use std::io::Write;
use std::sync::Arc;

use marvin_runtime::fasttrack;
use marvin_runtime::HeapConfig;

use crate::lifecycle::Lifecycle;
use crate::tracing::TraceTarget;

/// How to run a program.
pub struct RunConfig {
    pub heap: HeapConfig,
    /// Access barriers on (the normal runtime) or off (for measuring their cost).
    pub barriers: bool,
    /// Value-stack slots per thread (locals and operands of every frame).
    pub stack_slots: usize,
    /// Call depth per thread.
    pub max_frames: usize,
    /// Where `print`, `printc` and `prints` write.
    pub out: Box<dyn Write + Send>,
    /// Swapping for a single app (`marvin run --lifecycle/--swap-dir/--policy`).
    pub swap: Option<SwapSetup>,
    /// Where to record a trace, if anywhere.
    pub trace: Option<TraceTarget>,
    /// Field operands resolved once at load (the normal runtime) or by name on every
    /// execution (`--no-resolve`, for comparison).
    pub resolve: bool,
    /// Runs of instructions fused into superinstructions at load (the normal runtime) or
    /// one dispatch per instruction (`--no-fuse`, to check the fused code against).
    pub fuse: bool,
    /// What the main looper blocking on a monitor does to the monitor's holder.
    pub fast_track: fasttrack::Mode,
}

/// How to swap a single app.
pub struct SwapSetup {
    pub dir: std::path::PathBuf,
    pub policy: Arc<dyn marvin_swap::SwapPolicy>,
    pub lifecycle: Option<Lifecycle>,
    /// The swap file never grows past this many bytes (`--swap-limit`: a full disk,
    /// for testing how the app copes).
    pub file_limit: Option<u64>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            heap: HeapConfig::default(),
            barriers: true,
            stack_slots: 1 << 20,
            max_frames: 100_000,
            out: Box::new(std::io::stdout()),
            swap: None,
            trace: None,
            resolve: true,
            fuse: true,
            fast_track: fasttrack::Mode::FastTrack,
        }
    }
}
