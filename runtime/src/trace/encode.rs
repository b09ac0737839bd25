//! Turns recorded tracks and events into Perfetto `TracePacket`s on one writer sequence.

use prost::Message;

use super::proto::TrackDescriptor;
use super::proto::{
    AnnotationValue, BuiltinClock, CounterValue, DebugAnnotation, PacketData, SequenceFlags, Trace,
    TracePacket, TrackEvent, TrackEventType,
};
use super::tracer::{ArgValue, Event, EventKind};

/// Encodes a `Trace`: the track descriptors in declaration order, then the events sorted by
/// timestamp (ties broken by [`super::tracer::TieBreak`]), all on sequence
/// `sequence_id`. When `first`, the first packet starts the sequence and declares its
/// (empty) incremental state cleared; otherwise the packets continue a sequence begun in
/// an earlier call.
pub(super) fn encode_trace(
    sequence_id: u32,
    tracks: Vec<TrackDescriptor>,
    mut events: Vec<Event>,
    first: bool,
) -> Vec<u8> {
    // Stable: events with equal keys keep their recording order.
    events.sort_by_key(|e| (e.ts, e.tie));
    let mut packet = Vec::with_capacity(tracks.len() + events.len());
    packet.extend(tracks.into_iter().map(|descriptor| TracePacket {
        trusted_packet_sequence_id: Some(sequence_id),
        data: Some(PacketData::TrackDescriptor(descriptor)),
        ..Default::default()
    }));
    packet.extend(events.into_iter().map(|event| TracePacket {
        timestamp: Some(event.ts),
        timestamp_clock_id: Some(BuiltinClock::Boottime as u32),
        trusted_packet_sequence_id: Some(sequence_id),
        data: Some(PacketData::TrackEvent(track_event(event))),
        ..Default::default()
    }));
    if let Some(head) = packet.first_mut().filter(|_| first) {
        head.first_packet_on_sequence = Some(true);
        head.sequence_flags = Some(SequenceFlags::IncrementalStateCleared as u32);
    }
    Trace { packet }.encode_to_vec()
}

fn track_event(event: Event) -> TrackEvent {
    let (kind, name, counter_value) = match event.kind {
        EventKind::Begin(name) => (TrackEventType::SliceBegin, Some(name), None),
        EventKind::End => (TrackEventType::SliceEnd, None, None),
        EventKind::Instant(name) => (TrackEventType::Instant, Some(name), None),
        EventKind::Counter(v) => (TrackEventType::Counter, None, Some(CounterValue::Double(v))),
    };
    let debug_annotations = event
        .args
        .map(|args| {
            Vec::from(args)
                .into_iter()
                .map(|(name, value)| DebugAnnotation {
                    name: Some(name.to_string()),
                    value: Some(match value {
                        ArgValue::Uint(v) => AnnotationValue::Uint(v),
                        ArgValue::Int(v) => AnnotationValue::Int(v),
                        ArgValue::Str(v) => AnnotationValue::String(v),
                    }),
                })
                .collect()
        })
        .unwrap_or_default();
    TrackEvent {
        r#type: Some(kind as i32),
        track_uuid: Some(event.track),
        categories: Vec::new(),
        name,
        counter_value,
        debug_annotations,
    }
}
