//! What the driver asks of a way of hosting the apps ([`Host`]), and what a host
//! answers about a launch ([`Told`], [`Frame`]).

use std::time::Duration;

use super::apps::Apps;
use crate::launch::{Brought, LaunchParts, Pending};
use crate::series::SeriesPoint;
use crate::summary::Summary;

/// The room a host makes under the budget before it tells an app to come to the
/// foreground: what a warm launch of the shipped workloads faults back (a bucket of
/// arrays with their read-ahead, 1-4 MiB) with a margin for what it allocates.
pub(crate) const LAUNCH_ROOM: u64 = 8 << 20;

/// One way to host the apps of a policy's run: what the driver asks of it. Everything
/// it is not asked (turns, launches, the foreground and its UI thread, activity,
/// sampling, the summary and the series) the driver does the same way for both.
pub(crate) trait Host {
    /// What a launch keeps of its app from before the app is told (to count what the
    /// launch brought back).
    type Before;
    /// Held for one turn of the loop (a trace slice).
    type Turn;

    /// What the host adds to the summary before the run (its mode).
    fn begin_summary(&self, _summary: &mut Summary) {}
    /// The start of a turn: what came in since the last (apps whose start finished).
    fn begin_turn(&mut self, apps: &Apps) -> anyhow::Result<Self::Turn>;
    /// After the activity manager's turn: the host's own step against memory pressure
    /// (which may wait up to its tick).
    fn pressure_step(&mut self, _apps: &Apps) -> anyhow::Result<()> {
        Ok(())
    }
    /// Books apps that are gone (killed, crashed, finished): their intervals end
    /// ([`Apps::gone`]).
    fn reap(&mut self, apps: &mut Apps);
    /// With `Some(tick)`, the driver turns once a sample period and, between turns,
    /// observes activity, raises the app in front and drives the launch phase every
    /// tick; with `None` the host paces the loop itself (its pressure step waits).
    fn activity_tick(&self) -> Option<Duration>;
    /// App `id`'s rounds so far, while it can be observed.
    fn rounds(&self, id: usize) -> Option<u64>;
    /// The series' point now (activity is observed just before).
    fn sample(&mut self, apps: &Apps) -> SeriesPoint;
    /// After the last turn, before the final sample.
    fn end_run(&mut self, _apps: &mut Apps) {}
    /// What the host adds to the summary once the run is over.
    fn finish(&mut self, apps: &mut Apps, summary: &mut Summary);

    /// Starts app `id` in the foreground (a launch or a cold restart).
    fn start(&mut self, id: usize) -> anyhow::Result<()>;
    /// Whether app `id`'s start is still under way (it has no process yet).
    fn starting(&self, _id: usize) -> bool {
        false
    }
    /// Whether app `id` runs and can be told.
    fn running(&self, id: usize) -> bool;
    /// Tells running app `id` to come to the foreground.
    fn resume(&mut self, id: usize) -> Told<Self::Before>;
    /// What a cold launch keeps from before its app starts.
    fn cold_before(&self) -> Self::Before;
    /// Tells app `id` it went to the background.
    fn send_to_background(&mut self, id: usize);
    /// The foreground or the LRU order changed (or an app started or died).
    fn placed(&mut self, _apps: &Apps) {}
    /// Says `what` happened to app `id` (launch, restart, foreground, background) in
    /// the host's own trace.
    fn event(&self, _what: &str, _id: usize) {}
    /// Makes room ahead of app `id`'s coming back (up to [`LAUNCH_ROOM`]).
    fn make_room_ahead(&mut self, id: usize);
    /// Whether the launch under way has drawn its frame (`raised`: its UI thread is
    /// under `SCHED_FIFO`).
    fn frame(&mut self, p: &Pending<Self::Before>, raised: bool) -> Frame;
    /// App `id`'s UI threads to raise while it is in front, once they all run.
    fn ui_threads(&mut self, id: usize) -> Option<Vec<u32>>;
    /// App `id`'s other threads' priority as it comes to the front or leaves it.
    fn front_priority(&mut self, _id: usize, _front: bool) {}
}

/// What a host's telling an app to come to the front gives the launch.
pub(crate) struct Told<B> {
    /// When the app was told (`CLOCK_BOOTTIME` ns).
    pub told_ns: u64,
    pub before: B,
    pub frames_before: u64,
    /// Objects an eager restore read back while it was told.
    pub restored_objects: u64,
}

/// Where the launch under way is.
pub(crate) enum Frame {
    /// Its app has not drawn it yet.
    NotYet,
    /// Its app is gone: the launch never finishes.
    Gone,
    /// Drawn at `at_ns`, having brought back `brought`, its parts `parts`.
    Drawn {
        at_ns: u64,
        brought: Brought,
        parts: LaunchParts,
    },
}
