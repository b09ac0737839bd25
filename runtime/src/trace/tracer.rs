//! [`Tracer`]: records tracks and events in memory, cheaply skipped when tracing is off.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::encode;
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
    sequence_id: u32,
    uuid_base: u64,
    next_track: AtomicU64,
    tracks: Mutex<Vec<proto::TrackDescriptor>>,
    events: Mutex<Vec<Event>>,
}

/// Writer sequence ids handed to tracers. Perfetto's own service uses sequence 1, so
/// tracers start at 2.
static NEXT_SEQUENCE_ID: AtomicU32 = AtomicU32::new(2);

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
            .field("sequence_id", &self.shared.sequence_id)
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
        let sequence_id = NEXT_SEQUENCE_ID.fetch_add(1, Ordering::Relaxed);
        // Track uuids only have to be unique within a trace; mixing in the process and the
        // sequence keeps them apart when traces from several writers are concatenated.
        let uuid_base = splitmix64(u64::from(std::process::id()) << 32 | u64::from(sequence_id));
        Tracer {
            shared: Arc::new(Shared {
                enabled: AtomicBool::new(enabled),
                sequence_id,
                uuid_base,
                next_track: AtomicU64::new(0),
                tracks: Mutex::new(Vec::new()),
                events: Mutex::new(Vec::new()),
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

    /// The writer sequence id every packet of this tracer carries.
    pub fn sequence_id(&self) -> u32 {
        self.shared.sequence_id
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
                kind: EventKind::Begin(name.into()),
                tie: begin_tie,
            };
            let end = Event {
                ts: end_ns,
                track: track.uuid,
                kind: EventKind::End,
                tie: end_tie,
            };
            self.shared.events.lock().extend([begin, end]);
        }
    }

    /// Records an instant (zero-length) event named `name` on `track` now.
    #[inline]
    pub fn instant(&self, track: TrackId, name: impl Into<String>) {
        if self.is_enabled() {
            self.record(Tracer::now_ns(), track, EventKind::Instant(name.into()));
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
    /// slice nests).
    pub fn encode(&self) -> Vec<u8> {
        let tracks = self.shared.tracks.lock().clone();
        let events = self.shared.events.lock().clone();
        encode::encode_trace(self.shared.sequence_id, tracks, events)
    }

    /// Writes [`encode`](Tracer::encode)'s bytes to `path` (a `.perfetto-trace` file the
    /// Perfetto UI and trace processor open).
    pub fn write_to(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, self.encode())
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
