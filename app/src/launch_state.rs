//! What an app keeps of its launches ([`LaunchState`]): the foreground message its
//! program registered, its frames so far ([`Frames`]) and the hook called on each, and
//! when the launch under way began. The operations on it are in
//! [`foreground`](crate::foreground).

use std::sync::OnceLock;
use std::time::Instant;

use parking_lot::Mutex;

use crate::pin::Pin;
use crate::swapping::SwapIo;

/// The mark that ends a launch: the program's first unit of work in the foreground.
pub const FRAME_MARK: &str = "frame";

/// What is called on every frame, with the frames so far.
pub type FrameHook = Box<dyn Fn(&Frames) + Send + Sync>;

/// The registered foreground message, its argument pinned as a root while registered.
pub(crate) struct Registered {
    pub(crate) method: u32,
    pub(crate) what: i64,
    pub(crate) arg: u64,
    pub(crate) arg_is_ref: bool,
    pub(crate) _pin: Option<Pin>,
}

/// The launch state of one app.
#[derive(Default)]
pub(crate) struct LaunchState {
    pub(crate) registered: Mutex<Option<Registered>>,
    /// The program's strings that are `frame` (marks are by string index).
    frame_strings: Vec<u32>,
    pub(crate) last: Mutex<Frames>,
    pub(crate) hook: OnceLock<FrameHook>,
    /// When the launch under way began (a foreground transition) until its frame.
    pub(crate) quiet_since: Mutex<Option<Instant>>,
}

impl LaunchState {
    pub(crate) fn new(strings: &[String]) -> LaunchState {
        LaunchState {
            frame_strings: strings
                .iter()
                .enumerate()
                .filter(|(_, s)| s.as_str() == FRAME_MARK)
                .map(|(i, _)| i as u32)
                .collect(),
            ..LaunchState::default()
        }
    }

    /// Whether `mark` of string `s` is a frame.
    #[inline]
    pub(crate) fn is_frame(&self, s: u32) -> bool {
        self.frame_strings.contains(&s)
    }
}

/// Frames so far, the time of the last one, and the app's swap counters at it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frames {
    pub count: u64,
    /// `CLOCK_BOOTTIME` ns of the last frame (0 before the first).
    pub last_ns: u64,
    /// The app's swap counters when it made its last frame.
    pub io: SwapIo,
}
