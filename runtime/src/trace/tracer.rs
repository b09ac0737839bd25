//! [`Tracer`]: records tracks and events in memory, cheaply skipped when tracing is off.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::encode;
use super::merge::{Appended, Foreign};
use super::proto;
use crate::cpuclock;

/// A track events are recorded on: a process, a thread or a counter. Cheap to copy; only
/// meaningful to the [`Tracer`] that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TrackId {
    uuid: u64,
    /// The process the track belongs to (thread descriptors need it).
    pid: i32,
}

impl TrackId {
    /// The track's uuid in the trace (`TrackDescriptor.uuid`, `TrackEvent.track_uuid`).
    pub fn uuid(self) -> u64 {
        self.uuid
    }
}

/// A value shown with an event (a Perfetto debug annotation: the UI lists them in the
/// event's details).
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    Uint(u64),
    Int(i64),
    Str(String),
}

/// An event's named values, in the order given.
pub type Args = Vec<(&'static str, ArgValue)>;

/// What one recorded event does to its track.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum EventKind {
    Begin(String),
    End,
    Instant(String),
    Counter(f64),
}

/// One recorded event: when (`CLOCK_BOOTTIME` ns), on which track, and what.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Event {
    pub(super) ts: u64,
    pub(super) track: u64,
    pub(super) kind: EventKind,
    /// Where the event goes among events with the same timestamp.
    pub(super) tie: TieBreak,
    /// Its named values, if any (on a begin or an instant).
    pub(super) args: Option<Box<[(&'static str, ArgValue)]>>,
}

/// Order among events with equal timestamps. Events recorded as they happen keep their
/// recording order; a slice recorded after the fact ([`Tracer::complete`]) is ordered by its
/// extent, since it may be recorded after events it encloses or precedes: its end comes
/// before anything else at that instant (latest-started first) and its begin after
/// everything else (longest first), so it nests inside slices open at its edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TieBreak {
    /// The end of a completed slice that started at `Reverse(start)`.
    CompletedEnd(std::cmp::Reverse<u64>),
    /// An event recorded when it happened (and zero-length completed slices).
    InOrder,
    /// The begin of a completed slice that ends at `Reverse(end)`.
    CompletedBegin(std::cmp::Reverse<u64>),
}

struct Shared {
    enabled: AtomicBool,
    /// Drawn when first needed ([`Tracer::sequence_id`]), so the many tracers that never
    /// write (those of apps that are not traced) draw none.
    sequence_id: OnceLock<u32>,
    uuid_base: u64,
    next_track: AtomicU64,
    tracks: Mutex<Vec<proto::TrackDescriptor>>,
    events: Mutex<Vec<Event>>,
    /// What [`Tracer::flush_to`] has written so far.
    stream: Mutex<Stream>,
    /// Packets of other writers' traces ([`Tracer::append_trace`]).
    foreign: Mutex<Foreign>,
}

/// How far a streamed trace has got.
#[derive(Default)]
struct Stream {
    /// Track descriptors written so far (the first ones declared).
    tracks_written: usize,
    /// A packet was written (the first one started the sequence).
    started: bool,
}

/// Tracers made by this process so far.
static TRACERS: AtomicU32 = AtomicU32::new(0);

/// Sequence ids this process has drawn so far.
static SEQUENCES: AtomicU32 = AtomicU32::new(0);

/// The writer sequence id of the `n`th tracer of this process that needs one: the process
/// id in the high bits and `n` (mod 1024) in the low ten, so the traces of different processes, written
/// apart and concatenated into one file (the process mode's apps), never share a sequence
/// (Perfetto keeps interning and incremental state per sequence, and sequence 1 is its
/// service's: a pid is at most 2^22, and at least 1, so the id is at least 1024).
fn sequence_id_for(pid: u32, n: u32) -> u32 {
    ((u64::from(pid) << 10 | u64::from(n & 0x3ff)) as u32).max(2)
}

/// A number this process alone draws (its first tracer's `CLOCK_BOOTTIME`, mixed): track
/// uuids mix it in, so two processes that had the same pid in turn (a pid reused within
/// one run) still declare different tracks.
fn process_nonce() -> u64 {
    static NONCE: OnceLock<u64> = OnceLock::new();
    *NONCE.get_or_init(|| splitmix64(cpuclock::boottime_ns()))
}

/// An in-memory Perfetto trace writer, shared by cloning (all clones record into one trace).
///
/// Track descriptors are always recorded (they are rare, and a tracer enabled later still
/// needs them); events are recorded only while the tracer is enabled, and a disabled tracer
/// costs one relaxed atomic load per call. Timestamps come from [`Tracer::now_ns`]
/// (`CLOCK_BOOTTIME`, Perfetto's default trace clock). Memory grows with every event until
/// the tracer is dropped: trace bounded runs.
///
/// Slices on one track must nest: an [`end`](Tracer::end) closes the most recent open slice
/// of its track. Turning tracing off between a `begin` and its `end` drops the `end`, leaving
/// the slice open in the trace; a [`SliceGuard`] always closes the slice it opened.
#[derive(Clone)]
pub struct Tracer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("enabled", &self.is_enabled())
            .field("sequence_id", &self.shared.sequence_id.get())
            .finish_non_exhaustive()
    }
}

impl Default for Tracer {
    /// A disabled tracer.
    fn default() -> Self {
        Tracer::disabled()
    }
}

impl Tracer {
    /// A tracer that records events.
    pub fn new() -> Self {
        Tracer::with_enabled(true)
    }

    /// A tracer that records no events until [`set_enabled`](Tracer::set_enabled)`(true)`.
    pub fn disabled() -> Self {
        Tracer::with_enabled(false)
    }

    fn with_enabled(enabled: bool) -> Self {
        let n = TRACERS.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        // Track uuids only have to be unique within a trace; mixing in the process (its id
        // and nonce) and the tracer's number keeps them apart when traces from several
        // writers are concatenated.
        let uuid_base = splitmix64(process_nonce() ^ (u64::from(pid) << 32 | u64::from(n)));
        Tracer {
            shared: Arc::new(Shared {
                enabled: AtomicBool::new(enabled),
                sequence_id: OnceLock::new(),
                uuid_base,
                next_track: AtomicU64::new(0),
                tracks: Mutex::new(Vec::new()),
                events: Mutex::new(Vec::new()),
                stream: Mutex::new(Stream::default()),
                foreign: Mutex::new(Foreign::default()),
            }),
        }
    }

    /// Whether events are being recorded.
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        // Relaxed: the flag guards no other data; an event racing with a toggle may land
        // either side of it.
        self.shared.enabled.load(Ordering::Relaxed)
    }

    /// Starts or stops recording events.
    pub fn set_enabled(&self, enabled: bool) {
        self.shared.enabled.store(enabled, Ordering::Relaxed);
    }

    /// The current time in the tracer's clock: `CLOCK_BOOTTIME` nanoseconds.
    pub fn now_ns() -> u64 {
        cpuclock::boottime_ns()
    }

    /// The writer sequence id every packet of this tracer carries: unique to this process
    /// (derived from its pid) and to this tracer among the first 1024 of the process that
    /// are asked for theirs (a tracer is when it is encoded or flushed).
    pub fn sequence_id(&self) -> u32 {
        *self.shared.sequence_id.get_or_init(|| {
            sequence_id_for(
                std::process::id(),
                SEQUENCES.fetch_add(1, Ordering::Relaxed),
            )
        })
    }

    /// Declares a process track.
    pub fn process_track(&self, pid: i32, name: &str) -> TrackId {
        let track = self.new_track_id(pid);
        self.add_track(proto::TrackDescriptor {
            uuid: Some(track.uuid),
            process: Some(proto::ProcessDescriptor {
                pid: Some(pid),
                process_name: Some(name.to_string()),
            }),
            ..Default::default()
        });
        track
    }

    /// Declares a thread track inside `process` (a track from
    /// [`process_track`](Tracer::process_track)).
    pub fn thread_track(&self, process: TrackId, tid: i32, name: &str) -> TrackId {
        let track = self.new_track_id(process.pid);
        self.add_track(proto::TrackDescriptor {
            uuid: Some(track.uuid),
            parent_uuid: Some(process.uuid),
            thread: Some(proto::ThreadDescriptor {
                pid: Some(process.pid),
                tid: Some(tid),
                thread_name: Some(name.to_string()),
            }),
            ..Default::default()
        });
        track
    }

    /// Declares a counter track named `name`, shown under `parent`.
    pub fn counter_track(&self, parent: TrackId, name: &str) -> TrackId {
        let track = self.new_track_id(parent.pid);
        self.add_track(proto::TrackDescriptor {
            uuid: Some(track.uuid),
            name: Some(name.to_string()),
            parent_uuid: Some(parent.uuid),
            counter: Some(proto::CounterDescriptor {}),
            ..Default::default()
        });
        track
    }

    /// Opens a slice named `name` on `track` now.
    #[inline]
    pub fn begin(&self, track: TrackId, name: impl Into<String>) {
        if self.is_enabled() {
            self.record(Tracer::now_ns(), track, EventKind::Begin(name.into()));
        }
    }

    /// Closes the most recent open slice on `track` now.
    #[inline]
    pub fn end(&self, track: TrackId) {
        if self.is_enabled() {
            self.record(Tracer::now_ns(), track, EventKind::End);
        }
    }

    /// Opens a slice that the returned guard closes when dropped.
    #[inline]
    pub fn slice(&self, track: TrackId, name: impl Into<String>) -> SliceGuard<'_> {
        let active = self.is_enabled();
        if active {
            self.record(Tracer::now_ns(), track, EventKind::Begin(name.into()));
        }
        SliceGuard {
            tracer: self,
            track,
            active,
        }
    }

    /// Records a slice that already happened, from `start_ns` to `end_ns` (times from
    /// [`Tracer::now_ns`]), such as a lock wait measured once it is over. It must nest with
    /// the other slices of its track; an `end_ns` before `start_ns` is taken as `start_ns`.
    #[inline]
    pub fn complete(&self, track: TrackId, name: impl Into<String>, start_ns: u64, end_ns: u64) {
        if self.is_enabled() {
            self.record_complete(track, name.into(), start_ns, end_ns, None);
        }
    }

    /// [`complete`](Tracer::complete) with named values shown in the slice's details.
    pub fn complete_with(
        &self,
        track: TrackId,
        name: impl Into<String>,
        start_ns: u64,
        end_ns: u64,
        args: Args,
    ) {
        if self.is_enabled() {
            let args = Some(args.into_boxed_slice());
            self.record_complete(track, name.into(), start_ns, end_ns, args);
        }
    }

    fn record_complete(
        &self,
        track: TrackId,
        name: String,
        start_ns: u64,
        end_ns: u64,
        args: Option<Box<[(&'static str, ArgValue)]>>,
    ) {
        let end_ns = end_ns.max(start_ns);
        let (begin_tie, end_tie) = if end_ns > start_ns {
            (
                TieBreak::CompletedBegin(std::cmp::Reverse(end_ns)),
                TieBreak::CompletedEnd(std::cmp::Reverse(start_ns)),
            )
        } else {
            (TieBreak::InOrder, TieBreak::InOrder)
        };
        let begin = Event {
            ts: start_ns,
            track: track.uuid,
            kind: EventKind::Begin(name),
            tie: begin_tie,
            args,
        };
        let end = Event {
            ts: end_ns,
            track: track.uuid,
            kind: EventKind::End,
            tie: end_tie,
            args: None,
        };
        self.shared.events.lock().extend([begin, end]);
    }

    /// Records an instant (zero-length) event named `name` on `track` now.
    #[inline]
    pub fn instant(&self, track: TrackId, name: impl Into<String>) {
        if self.is_enabled() {
            self.record(Tracer::now_ns(), track, EventKind::Instant(name.into()));
        }
    }

    /// [`instant`](Tracer::instant) with named values shown in its details.
    pub fn instant_with(&self, track: TrackId, name: impl Into<String>, args: Args) {
        if self.is_enabled() {
            self.shared.events.lock().push(Event {
                ts: Tracer::now_ns(),
                track: track.uuid,
                kind: EventKind::Instant(name.into()),
                tie: TieBreak::InOrder,
                args: Some(args.into_boxed_slice()),
            });
        }
    }

    /// Sets counter `track` (from [`counter_track`](Tracer::counter_track)) to `value` now.
    #[inline]
    pub fn counter(&self, track: TrackId, value: f64) {
        if self.is_enabled() {
            self.record(Tracer::now_ns(), track, EventKind::Counter(value));
        }
    }

    /// Number of events recorded so far.
    pub fn event_count(&self) -> usize {
        self.shared.events.lock().len()
    }

    /// The trace so far, as a Perfetto `Trace` message: all track descriptors first, then the
    /// events in timestamp order (events with equal timestamps keep their recording order,
    /// except the edges of [`complete`](Tracer::complete)d slices, which are placed so the
    /// slice nests), then the packets of other writers' traces added with
    /// [`append_trace`](Tracer::append_trace). (Of a tracer that was
    /// [flushed](Tracer::flush_to), only what was recorded since.)
    pub fn encode(&self) -> Vec<u8> {
        let tracks = self.shared.tracks.lock().clone();
        let events = self.shared.events.lock().clone();
        let mut bytes = encode::encode_trace(self.sequence_id(), tracks, events, true);
        bytes.extend_from_slice(self.shared.foreign.lock().bytes());
        bytes
    }

    /// Writes [`encode`](Tracer::encode)'s bytes to `path` (a `.perfetto-trace` file the
    /// Perfetto UI and trace processor open).
    pub fn write_to(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, self.encode())
    }

    /// Streams the trace: appends to `w`, in one write, the tracks declared and the events
    /// recorded since the last call (events in timestamp order within the call), and forgets
    /// those events, so a long run's trace does not grow in memory and a process that is
    /// killed leaves what it had flushed. The first packet written starts the sequence.
    /// Returns the bytes written. Events recorded after the fact
    /// ([`complete`](Tracer::complete)) may come in a later call than events with later
    /// timestamps; Perfetto sorts the events of a trace by time when it reads it.
    pub fn flush_to(&self, w: &mut impl std::io::Write) -> std::io::Result<usize> {
        let mut stream = self.shared.stream.lock();
        // The events first: a track is declared before any event on it is recorded, so
        // every track an event taken here names is in the list read after.
        let events = std::mem::take(&mut *self.shared.events.lock());
        let tracks: Vec<proto::TrackDescriptor> =
            self.shared.tracks.lock()[stream.tracks_written..].to_vec();
        if events.is_empty() && tracks.is_empty() {
            return Ok(0);
        }
        let n_tracks = tracks.len();
        let bytes = encode::encode_trace(self.sequence_id(), tracks, events, !stream.started);
        w.write_all(&bytes)?;
        stream.tracks_written += n_tracks;
        stream.started = true;
        Ok(bytes.len())
    }

    /// Adds the packets of a trace another writer wrote (another process's trace file,
    /// whole): they follow this tracer's own in [`encode`](Tracer::encode). Only whole
    /// packets are taken: a file that ends inside a packet (its writer was killed while
    /// writing) loses that torn tail. A writer sequence id already in the trace (this
    /// tracer's, or one appended before: a pid reused within a run) is replaced by one
    /// that is not. Returns what was taken.
    pub fn append_trace(&self, bytes: &[u8]) -> Appended {
        self.shared.foreign.lock().append(self.sequence_id(), bytes)
    }

    fn new_track_id(&self, pid: i32) -> TrackId {
        let n = self.shared.next_track.fetch_add(1, Ordering::Relaxed);
        TrackId {
            uuid: self.shared.uuid_base.wrapping_add(n),
            pid,
        }
    }

    fn add_track(&self, descriptor: proto::TrackDescriptor) {
        self.shared.tracks.lock().push(descriptor);
    }

    #[inline(never)]
    fn record(&self, ts: u64, track: TrackId, kind: EventKind) {
        self.shared.events.lock().push(Event {
            ts,
            track: track.uuid,
            kind,
            tie: TieBreak::InOrder,
            args: None,
        });
    }
}

/// Closes its slice when dropped (see [`Tracer::slice`]).
#[must_use = "the slice ends when the guard is dropped"]
#[derive(Debug)]
pub struct SliceGuard<'a> {
    tracer: &'a Tracer,
    track: TrackId,
    /// Whether a begin was recorded (the tracer was enabled when the slice opened).
    active: bool,
}

impl Drop for SliceGuard<'_> {
    fn drop(&mut self) {
        if self.active {
            // Always close what was opened, even if tracing was turned off meanwhile.
            self.tracer
                .record(Tracer::now_ns(), self.track, EventKind::End);
        }
    }
}

/// A 64-bit mixer (splitmix64's finaliser) for well-spread uuid bases.
fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::trace::proto::{PacketData, Trace, TrackEvent, TrackEventType};

    fn decode(tracer: &Tracer) -> Trace {
        Trace::decode(tracer.encode().as_slice()).expect("the writer's bytes decode")
    }

    fn events(trace: &Trace) -> Vec<(u64, TrackEvent)> {
        trace
            .packet
            .iter()
            .filter_map(|p| match &p.data {
                Some(PacketData::TrackEvent(e)) => Some((p.timestamp.unwrap(), e.clone())),
                _ => None,
            })
            .collect()
    }

    fn kind(e: &TrackEvent) -> TrackEventType {
        TrackEventType::try_from(e.r#type.unwrap()).unwrap()
    }

    #[test]
    fn round_trips_tracks_and_events() {
        let tracer = Tracer::new();
        let process = tracer.process_track(41, "app");
        let main = tracer.thread_track(process, 42, "main");
        let gauge = tracer.counter_track(process, "backlog");
        {
            let _outer = tracer.slice(main, "outer");
            tracer.begin(main, "inner");
            tracer.instant(main, "tick");
            tracer.end(main);
        }
        tracer.counter(gauge, 2.5);

        let trace = decode(&tracer);
        let seq = tracer.sequence_id();
        assert!(trace
            .packet
            .iter()
            .all(|p| p.trusted_packet_sequence_id == Some(seq)));
        assert_eq!(trace.packet[0].first_packet_on_sequence, Some(true));
        assert_eq!(trace.packet[0].sequence_flags, Some(1));

        // Descriptors first, in declaration order.
        let descriptors: Vec<_> = trace.packet[..3]
            .iter()
            .map(|p| match &p.data {
                Some(PacketData::TrackDescriptor(d)) => d.clone(),
                other => panic!("expected a descriptor, got {other:?}"),
            })
            .collect();
        assert_eq!(descriptors[0].uuid, Some(process.uuid()));
        let proc_desc = descriptors[0].process.as_ref().unwrap();
        assert_eq!(
            (proc_desc.pid, proc_desc.process_name.as_deref()),
            (Some(41), Some("app"))
        );
        let thread_desc = descriptors[1].thread.as_ref().unwrap();
        assert_eq!(descriptors[1].parent_uuid, Some(process.uuid()));
        assert_eq!(
            (
                thread_desc.pid,
                thread_desc.tid,
                thread_desc.thread_name.as_deref()
            ),
            (Some(41), Some(42), Some("main"))
        );
        assert!(descriptors[2].counter.is_some());
        assert_eq!(descriptors[2].name.as_deref(), Some("backlog"));
        assert_eq!(descriptors[2].parent_uuid, Some(process.uuid()));

        let events = events(&trace);
        assert_eq!(events.len(), 6);
        assert!(
            events.windows(2).all(|w| w[0].0 <= w[1].0),
            "sorted by time"
        );
        let shape: Vec<_> = events
            .iter()
            .map(|(_, e)| (kind(e), e.name.clone().unwrap_or_default()))
            .collect();
        use TrackEventType::*;
        assert_eq!(
            shape,
            vec![
                (SliceBegin, "outer".into()),
                (SliceBegin, "inner".into()),
                (Instant, "tick".into()),
                (SliceEnd, String::new()),
                (SliceEnd, String::new()),
                (Counter, String::new()),
            ]
        );
        assert_eq!(events[5].1.track_uuid, Some(gauge.uuid()));
        assert_eq!(
            events[5].1.counter_value,
            Some(proto::CounterValue::Double(2.5))
        );
        assert!(events[..5]
            .iter()
            .all(|(_, e)| e.track_uuid == Some(main.uuid())));
    }

    #[test]
    fn a_disabled_tracer_keeps_tracks_but_no_events() {
        let tracer = Tracer::disabled();
        assert!(!tracer.is_enabled());
        let process = tracer.process_track(1, "p");
        let thread = tracer.thread_track(process, 2, "t");
        tracer.begin(thread, "x");
        tracer.end(thread);
        drop(tracer.slice(thread, "y"));
        tracer.complete(thread, "z", 1, 2);
        tracer.counter(thread, 1.0);
        assert_eq!(tracer.event_count(), 0);
        assert_eq!(decode(&tracer).packet.len(), 2);

        tracer.set_enabled(true);
        tracer.instant(thread, "now");
        assert_eq!(tracer.event_count(), 1);
    }

    #[test]
    fn a_guard_closes_its_slice_after_tracing_stops() {
        let tracer = Tracer::new();
        let thread = tracer.thread_track(tracer.process_track(1, "p"), 1, "t");
        let guard = tracer.slice(thread, "s");
        tracer.set_enabled(false);
        drop(guard);
        let kinds: Vec<_> = events(&decode(&tracer))
            .iter()
            .map(|(_, e)| kind(e))
            .collect();
        assert_eq!(
            kinds,
            [TrackEventType::SliceBegin, TrackEventType::SliceEnd]
        );
    }

    #[test]
    fn completed_slices_are_placed_by_their_own_times() {
        let tracer = Tracer::new();
        let thread = tracer.thread_track(tracer.process_track(1, "p"), 1, "t");
        let start = Tracer::now_ns();
        tracer.begin(thread, "outer");
        let (wait_start, wait_end) = (Tracer::now_ns(), Tracer::now_ns());
        tracer.begin(thread, "later");
        tracer.end(thread);
        // Recorded after "later", but it happened before it.
        tracer.complete(thread, "wait", wait_start, wait_end);
        tracer.end(thread);
        let events = events(&decode(&tracer));
        let names: Vec<_> = events
            .iter()
            .map(|(_, e)| e.name.clone().unwrap_or_else(|| "end".into()))
            .collect();
        assert_eq!(names, ["outer", "wait", "end", "later", "end", "end"]);
        assert!(events[0].0 >= start);
        assert_eq!((events[1].0, events[2].0), (wait_start, wait_end));
    }

    #[test]
    fn completed_slices_nest_at_equal_timestamps() {
        let tracer = Tracer::new();
        let thread = tracer.thread_track(tracer.process_track(1, "p"), 1, "t");
        // Recorded out of order, sharing edge times: "a" [10, 20] inside "outer" [10, 40],
        // "b" [20, 30] right after "a", "next" begun (live) at 30, "dot" at 30 with no length.
        tracer.record(30, thread, EventKind::Begin("next".into()));
        tracer.complete(thread, "b", 20, 30);
        tracer.complete(thread, "a", 10, 20);
        tracer.complete(thread, "outer", 10, 40);
        tracer.complete(thread, "dot", 30, 30);
        let events = events(&decode(&tracer));
        let names: Vec<_> = events
            .iter()
            .map(|(ts, e)| format!("{ts}:{}", e.name.clone().unwrap_or_else(|| "end".into())))
            .collect();
        assert_eq!(
            names,
            [
                "10:outer", "10:a", "20:end", "20:b", "30:end", "30:next", "30:dot", "30:end",
                "40:end"
            ]
        );
    }

    #[test]
    fn clones_share_one_trace_and_threads_can_record() {
        let tracer = Tracer::new();
        let process = tracer.process_track(1, "p");
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let tracer = tracer.clone();
                std::thread::spawn(move || {
                    let track = tracer.thread_track(process, 10 + i, "worker");
                    for _ in 0..100 {
                        let _s = tracer.slice(track, "work");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(tracer.event_count(), 4 * 100 * 2);
        let trace = decode(&tracer);
        assert_eq!(trace.packet.len(), 1 + 4 + 800);
    }

    #[test]
    fn tracers_and_tracks_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Tracer>();
        send_sync::<TrackId>();
    }

    #[test]
    fn sequence_ids_derive_from_the_pid() {
        let pid = std::process::id();
        let t = Tracer::new();
        assert_eq!(t.sequence_id() >> 10, pid, "{:#x}", t.sequence_id());
        assert_eq!(sequence_id_for(1, 0), 1024);
        assert_eq!(sequence_id_for(4_194_303, 1023), u32::MAX);
        assert_eq!(sequence_id_for(7, 1024 + 3), 7 << 10 | 3);
        assert_eq!(
            sequence_id_for(0, 0),
            2,
            "never the service's sequence or none"
        );
    }

    #[test]
    fn a_streamed_trace_is_the_flushes_concatenated() {
        let tracer = Tracer::new();
        let mut file = Vec::new();
        assert_eq!(tracer.flush_to(&mut file).unwrap(), 0, "nothing yet");
        let process = tracer.process_track(1, "p");
        let main = tracer.thread_track(process, 1, "main");
        tracer.begin(main, "outer");
        assert!(tracer.flush_to(&mut file).unwrap() > 0);
        assert_eq!(tracer.event_count(), 0, "flushed events are forgotten");
        let worker = tracer.thread_track(process, 2, "worker");
        tracer.instant(worker, "tick");
        tracer.end(main);
        tracer.flush_to(&mut file).unwrap();
        let trace = Trace::decode(file.as_slice()).unwrap();
        let kinds: Vec<_> = trace
            .packet
            .iter()
            .map(|p| match &p.data {
                Some(PacketData::TrackDescriptor(d)) => format!("track {}", d.uuid.unwrap()),
                Some(PacketData::TrackEvent(e)) => format!("{:?}", kind(e)),
                None => "none".into(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                format!("track {}", process.uuid()),
                format!("track {}", main.uuid()),
                "SliceBegin".into(),
                format!("track {}", worker.uuid()),
                "Instant".into(),
                "SliceEnd".into(),
            ]
        );
        // One sequence, started once.
        assert!(trace
            .packet
            .iter()
            .all(|p| p.trusted_packet_sequence_id == Some(tracer.sequence_id())));
        let starts: Vec<_> = trace
            .packet
            .iter()
            .map(|p| p.first_packet_on_sequence == Some(true))
            .collect();
        assert_eq!(starts, [true, false, false, false, false, false]);
    }

    #[test]
    fn annotations_go_with_their_events() {
        let tracer = Tracer::new();
        let thread = tracer.thread_track(tracer.process_track(1, "p"), 1, "t");
        tracer.complete_with(
            thread,
            "pass",
            5,
            9,
            vec![
                ("bytes", ArgValue::Uint(4096)),
                ("apps", ArgValue::Str("app1".into())),
            ],
        );
        tracer.instant_with(thread, "kill", vec![("delta", ArgValue::Int(-3))]);
        let events = events(&decode(&tracer));
        let args: Vec<Vec<(String, Option<proto::AnnotationValue>)>> = events
            .iter()
            .map(|(_, e)| {
                e.debug_annotations
                    .iter()
                    .map(|a| (a.name.clone().unwrap(), a.value.clone()))
                    .collect()
            })
            .collect();
        use proto::AnnotationValue as V;
        assert_eq!(
            args,
            [
                vec![
                    ("bytes".into(), Some(V::Uint(4096))),
                    ("apps".into(), Some(V::String("app1".into())))
                ],
                vec![],
                vec![("delta".into(), Some(V::Int(-3)))],
            ]
        );
    }

    #[test]
    fn track_uuids_are_distinct() {
        let a = Tracer::new();
        let b = Tracer::new();
        let ids: std::collections::HashSet<u64> = (0..100)
            .flat_map(|i| {
                [
                    a.process_track(i, "a").uuid(),
                    b.process_track(i, "b").uuid(),
                ]
            })
            .collect();
        assert_eq!(ids.len(), 200);
        assert_ne!(a.sequence_id(), b.sequence_id());
    }
}
