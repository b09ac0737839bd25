//! An app's side of a launch: the foreground message its program registers, and the
//! frame clock.
//!
//! A program learns that it came to the foreground through its **foreground message**:
//! `send on_foreground` (a handler named [`FOREGROUND_HANDLER`]) does not post a message
//! but registers it (its `what` and argument; the delay is ignored), replacing any
//! earlier registration. Each time the app is brought to the foreground
//! ([`App::resume`]), the runtime posts that message at the front of the main looper's
//! queue, as Android calls an activity's `onResume`. The program then does its first
//! unit of foreground work and marks it with `mark "frame"` ([`FRAME_MARK`]); the time of
//! every frame is kept on `CLOCK_BOOTTIME`, which every process of the machine reads
//! alike, so a System in another process can time a launch from its own clock.
//!
//! Between a foreground transition and the frame that follows it, the app keeps its own
//! background work out of the way ([`App::in_launch_quiet`]): its heap task runs no
//! saver pass and no working-set walk (a walk stops every thread, the looper drawing
//! the frame among them) until the frame, or [`LAUNCH_QUIET_MAX`] at most.

use std::sync::Arc;
use std::time::{Duration, Instant};

use marvin_interpreter::exec::{Post, PostAt};
use marvin_runtime::cpuclock::boottime_ns;

use crate::app::App;
use crate::error::AppError;
use crate::launch_state::Registered;
pub use crate::launch_state::{FrameHook, Frames, FRAME_MARK};
use crate::pin::Pin;

/// The handler a program names to register its foreground message.
pub const FOREGROUND_HANDLER: &str = "on_foreground";

/// The longest a launch keeps the heap task quiet when no frame comes (a program that
/// never marks one, or a frame stuck behind a long message): its saves and working-set
/// rounds then go on.
pub const LAUNCH_QUIET_MAX: Duration = Duration::from_secs(2);

impl App {
    /// Whether `method` is the foreground handler (its `send` registers, not posts).
    pub(crate) fn is_foreground_handler(&self, method: u32) -> bool {
        self.loaded
            .vp
            .program
            .methods
            .get(method as usize)
            .is_some_and(|m| m.name == FOREGROUND_HANDLER)
    }

    /// `send on_foreground`: registers the message, replacing an earlier one.
    pub(crate) fn register_foreground(self: &Arc<Self>, post: &Post) {
        let pin = if post.arg_is_ref {
            Pin::new(&self.pinned, post.arg)
        } else {
            None
        };
        *self.launch.registered.lock() = Some(Registered {
            method: post.method,
            what: post.what,
            arg: post.arg,
            arg_is_ref: post.arg_is_ref,
            _pin: pin,
        });
    }

    /// A launch begins (call it before the foreground transition, then
    /// [`App::resume`]): the heap task runs no saver pass and no working-set walk until
    /// the next frame ([`App::in_launch_quiet`]), and wakes at it.
    pub fn begin_launch_quiet(&self) {
        *self.launch.quiet_since.lock() = Some(Instant::now());
    }

    /// The launch's frame came (or none will): the heap task goes on at once.
    fn end_launch_quiet(&self) {
        if let Some(swap) = self.swap() {
            swap.end_launch_prefetch();
        }
        if self.launch.quiet_since.lock().take().is_some() {
            self.wake_sleepers();
        }
    }

    /// How much longer the heap task stays quiet for the launch under way (`None`: no
    /// launch under way, or it began [`LAUNCH_QUIET_MAX`] ago).
    pub fn in_launch_quiet(&self) -> Option<Duration> {
        let since = (*self.launch.quiet_since.lock())?;
        LAUNCH_QUIET_MAX
            .checked_sub(since.elapsed())
            .filter(|left| !left.is_zero())
    }

    /// The app is in the foreground: posts its registered foreground message at the
    /// front of its main looper's queue. Returns whether there was one to post (an app
    /// still starting registers it later, and its first frame comes from its start; a
    /// launch without a message to post keeps no quiet for a frame).
    pub fn resume(self: &Arc<Self>) -> bool {
        let post = {
            let r = self.launch.registered.lock();
            let Some(r) = r.as_ref() else {
                self.end_launch_quiet();
                return false;
            };
            Post {
                method: r.method,
                what: r.what,
                arg: r.arg,
                arg_is_ref: r.arg_is_ref,
                when: PostAt::Front,
            }
        };
        // After quit there is no looper to run it: nothing to post to.
        let posted = matches!(crate::messages::post(self, post), Ok(()));
        if !posted {
            self.end_launch_quiet();
        }
        posted
    }

    /// A `mark "frame"`: notes its time and the swap counters, and calls the hook.
    pub(crate) fn note_frame(&self) {
        let f = {
            let mut last = self.launch.last.lock();
            last.count += 1;
            last.last_ns = boottime_ns();
            last.io = self.swap_io();
            *last
        };
        self.end_launch_quiet();
        if let Some(hook) = self.launch.hook.get() {
            hook(&f);
        }
    }

    /// Frames so far (`mark "frame"`), and when the last one came.
    pub fn frames(&self) -> Frames {
        *self.launch.last.lock()
    }

    /// Calls `hook` with the time of every frame from now on (once per app).
    pub fn on_frame(&self, hook: FrameHook) -> Result<(), AppError> {
        self.launch
            .hook
            .set(hook)
            .map_err(|_| AppError::FrameHookAlreadySet)
    }
}
