//! The subset of Perfetto's trace protos the writer emits, as hand-written prost messages.
//!
//! Field numbers and types follow Perfetto's published schema, in the Perfetto repository
//! (`protos/perfetto/trace/trace.proto`, `trace_packet.proto`,
//! `track_event/{track_descriptor,track_event,process_descriptor,thread_descriptor,
//! counter_descriptor,debug_annotation}.proto`). Fields the writer never sets are left out; members of a proto
//! `oneof` that are modelled as `optional` fields encode identically on the wire.

/// `perfetto.protos.Trace`: the whole file is this message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `perfetto.protos.TracePacket`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// Timestamp in nanoseconds of the clock named by `timestamp_clock_id`.
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// A [`BuiltinClock`] (or a sequence-scoped clock id); BOOTTIME when unset.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    /// The writer sequence this packet belongs to (a member of a oneof in the schema).
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// Bit set of [`SequenceFlags`].
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// Set on the first packet a writer emits on its sequence.
    #[prost(bool, optional, tag = "87")]
    pub first_packet_on_sequence: Option<bool>,
    /// The packet's payload (the schema's `data` oneof, the two members used here).
    #[prost(oneof = "PacketData", tags = "11, 60")]
    pub data: Option<PacketData>,
}

/// Members of `TracePacket.data` the writer emits.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum PacketData {
    #[prost(message, tag = "11")]
    TrackEvent(TrackEvent),
    #[prost(message, tag = "60")]
    TrackDescriptor(TrackDescriptor),
}

/// `TracePacket.SequenceFlags`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum SequenceFlags {
    Unspecified = 0,
    IncrementalStateCleared = 1,
    NeedsIncrementalState = 2,
}

/// `perfetto.protos.BuiltinClock` values used here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum BuiltinClock {
    Unknown = 0,
    Realtime = 1,
    Monotonic = 3,
    Boottime = 6,
}

/// `perfetto.protos.TrackDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// Display name (member of the `static_or_dynamic_name` oneof).
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    /// Present (possibly empty) on counter tracks.
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `perfetto.protos.ProcessDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// `perfetto.protos.ThreadDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub tid: Option<i32>,
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// `perfetto.protos.CounterDescriptor`: the writer uses only its presence (a plain counter
/// with no unit).
#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {}

/// `perfetto.protos.TrackEvent`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    /// A [`TrackEventType`].
    #[prost(enumeration = "TrackEventType", optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    /// Event name (member of the `name_field` oneof; the writer does not intern names).
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    /// The `counter_value_field` oneof.
    #[prost(oneof = "CounterValue", tags = "30, 44")]
    pub counter_value: Option<CounterValue>,
    /// Named values shown with the event (the begin of a slice, or an instant).
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
}

/// `perfetto.protos.DebugAnnotation`: one named value (names are not interned).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    /// Member of the `name_field` oneof.
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
    /// The `value` oneof, the members used here.
    #[prost(oneof = "AnnotationValue", tags = "3, 4, 6")]
    pub value: Option<AnnotationValue>,
}

/// `DebugAnnotation.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum AnnotationValue {
    #[prost(uint64, tag = "3")]
    Uint(u64),
    #[prost(int64, tag = "4")]
    Int(i64),
    #[prost(string, tag = "6")]
    String(String),
}

/// `TrackEvent.counter_value_field`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum CounterValue {
    #[prost(int64, tag = "30")]
    Int(i64),
    #[prost(double, tag = "44")]
    Double(f64),
}

/// `TrackEvent.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum TrackEventType {
    Unspecified = 0,
    SliceBegin = 1,
    SliceEnd = 2,
    Instant = 3,
    Counter = 4,
}
