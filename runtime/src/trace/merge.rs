//! Traces written by other processes, merged into one: whole packets only, writer
//! sequences kept apart.
//!
//! A Perfetto trace file is one `Trace` message, that is a run of its `packet` field
//! (field 1, wire type 2: the byte `0x0A`, a varint length, then that many bytes), so the
//! files of several writers concatenate into one trace, as long as their track uuids and
//! writer sequence ids differ (the interning and incremental state Perfetto keeps are per
//! sequence). A process killed while it wrote leaves a file that ends inside a packet:
//! [`whole_packets`] finds where its last whole packet ends, and [`Foreign::append`] takes
//! that much, giving a file whose sequence id is already in the trace (a pid reused within
//! one run: sequence ids derive from the pid) a fresh one.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use prost::Message;

use super::proto::{Trace, TracePacket};

/// The packet field's key: field 1, wire type 2 (length-delimited).
const PACKET_KEY: u8 = 0x0A;

/// A trace file's bytes split into its whole packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WholePackets {
    /// Each whole packet: its frame (key, length and payload) and its payload.
    pub packets: Vec<(Range<usize>, Range<usize>)>,
    /// The bytes after the last whole packet (a torn tail, or bytes that are not a packet).
    pub torn_bytes: usize,
}

/// Splits `bytes`, the contents of a trace file, into its whole packets: it stops at the
/// first frame that runs past the end (a write cut short), that does not start with the
/// packet key, or whose payload does not decode as a `TracePacket`, and counts the rest as
/// torn.
pub fn whole_packets(bytes: &[u8]) -> WholePackets {
    let (decoded, torn_bytes) = split(bytes);
    WholePackets {
        packets: decoded.into_iter().map(|(f, p, _)| (f, p)).collect(),
        torn_bytes,
    }
}

/// A whole packet: its frame, its payload, and the payload decoded.
type Decoded = (Range<usize>, Range<usize>, TracePacket);

/// [`whole_packets`] with each packet decoded, and the torn bytes.
fn split(bytes: &[u8]) -> (Vec<Decoded>, usize) {
    let mut packets = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some(payload) = frame(bytes, at) else {
            break;
        };
        let Ok(packet) = TracePacket::decode(&bytes[payload.clone()]) else {
            break;
        };
        let end = payload.end;
        packets.push((at..end, payload, packet));
        at = end;
    }
    (packets, bytes.len() - at)
}

/// The payload of the packet frame that starts at `at`, if a whole one does.
fn frame(bytes: &[u8], at: usize) -> Option<Range<usize>> {
    if bytes[at] != PACKET_KEY {
        return None;
    }
    let mut len: u64 = 0;
    let mut pos = at + 1;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(pos)?;
        pos += 1;
        len |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            let end = pos.checked_add(usize::try_from(len).ok()?)?;
            return (end <= bytes.len()).then_some(pos..end);
        }
    }
    None
}

/// What [`crate::trace::Tracer::append_trace`] took of a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Appended {
    /// Whole packets taken.
    pub packets: usize,
    /// Bytes left out after the last whole packet.
    pub torn_bytes: usize,
    /// Packets whose writer sequence id was replaced (it was in the trace already).
    pub resequenced: usize,
}

/// Packets of other writers held for a trace, and the sequence ids they use.
#[derive(Debug, Default)]
pub(super) struct Foreign {
    bytes: Vec<u8>,
    sequences: HashSet<u32>,
}

impl Foreign {
    /// The packets appended so far, framed.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Appends the whole packets of the file `bytes`; `own` is the sequence id of the
    /// trace's own writer.
    pub(super) fn append(&mut self, own: u32, bytes: &[u8]) -> Appended {
        let (packets, torn_bytes) = split(bytes);
        let mut out = Appended {
            packets: packets.len(),
            torn_bytes,
            resequenced: 0,
        };
        // This file's sequence ids as they go into the trace.
        let mut renamed: HashMap<u32, u32> = HashMap::new();
        for (frame, _, mut packet) in packets {
            let Some(seq) = packet.trusted_packet_sequence_id else {
                self.bytes.extend_from_slice(&bytes[frame]);
                continue;
            };
            let to = *renamed.entry(seq).or_insert_with(|| {
                let to = if seq == own || self.sequences.contains(&seq) {
                    fresh(own, &self.sequences)
                } else {
                    seq
                };
                self.sequences.insert(to);
                to
            });
            if to == seq {
                self.bytes.extend_from_slice(&bytes[frame]);
            } else {
                packet.trusted_packet_sequence_id = Some(to);
                out.resequenced += 1;
                let one = Trace {
                    packet: vec![packet],
                };
                one.encode(&mut self.bytes)
                    .expect("a Vec grows to hold any message");
            }
        }
        out
    }
}

/// A sequence id not in `used` and not `own`, counting down from the top of the range
/// (pid-derived ids fill it from 1024 up).
fn fresh(own: u32, used: &HashSet<u32>) -> u32 {
    (2..=u32::MAX)
        .rev()
        .find(|id| *id != own && !used.contains(id))
        .expect("fewer than 2^32 sequences")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::proto::PacketData;
    use crate::trace::Tracer;

    fn traced(name: &str) -> Tracer {
        let t = Tracer::new();
        let p = t.process_track(7, name);
        let main = t.thread_track(p, 7, "main");
        t.complete(main, "work", 10, 20);
        t.instant(main, "tick");
        t
    }

    fn decode(bytes: &[u8]) -> Trace {
        Trace::decode(bytes).expect("a whole trace")
    }

    #[test]
    fn whole_packets_are_taken_and_a_torn_tail_left_out() {
        let bytes = traced("a").encode();
        let whole = whole_packets(&bytes);
        assert_eq!(whole.packets.len(), 5);
        assert_eq!(whole.torn_bytes, 0);
        // Cut anywhere inside the last packet (its key, its length, its payload).
        let last = whole.packets.last().unwrap().0.clone();
        for cut in last.start + 1..last.end {
            let w = whole_packets(&bytes[..cut]);
            assert_eq!(w.packets.len(), 4, "cut at {cut}");
            assert_eq!(w.torn_bytes, cut - last.start, "cut at {cut}");
        }
        // Bytes that are not a packet end the whole part too.
        let mut junk = bytes.clone();
        junk.extend_from_slice(&[0x12, 0x01, 0x00]);
        assert_eq!(whole_packets(&junk).torn_bytes, 3);
        assert_eq!(whole_packets(&[]).packets.len(), 0);
        // A length past any file.
        assert_eq!(
            whole_packets(&[0x0A, 0xff, 0xff, 0xff, 0xff, 0x0f]).torn_bytes,
            6
        );
    }

    #[test]
    fn appended_traces_keep_their_packets_and_lose_only_a_torn_tail() {
        let own = traced("own");
        let other = traced("other");
        let bytes = other.encode();
        let cut = bytes.len() - 3;
        let last_start = whole_packets(&bytes).packets[4].0.start;
        let got = own.append_trace(&bytes[..cut]);
        assert_eq!(
            got,
            Appended {
                packets: 4,
                torn_bytes: cut - last_start,
                resequenced: 0,
            }
        );
        let merged = decode(&own.encode());
        assert_eq!(merged.packet.len(), 5 + 4);
        let seqs: HashSet<u32> = merged
            .packet
            .iter()
            .filter_map(|p| p.trusted_packet_sequence_id)
            .collect();
        assert_eq!(
            seqs,
            HashSet::from([own.sequence_id(), other.sequence_id()])
        );
    }

    #[test]
    fn a_sequence_id_already_in_the_trace_is_replaced() {
        let own = traced("own");
        let other = traced("other");
        let bytes = other.encode();
        assert_eq!(own.append_trace(&bytes).resequenced, 0);
        // The same writer's file again (as a reused pid would give): a fresh sequence.
        let again = own.append_trace(&bytes);
        assert_eq!(again.resequenced, 5);
        let merged = decode(&own.encode());
        let seqs: Vec<u32> = merged
            .packet
            .iter()
            .map(|p| p.trusted_packet_sequence_id.unwrap())
            .collect();
        let distinct: HashSet<u32> = seqs.iter().copied().collect();
        assert_eq!(distinct.len(), 3, "{seqs:?}");
        // The fresh sequence starts as the original did.
        let first_again = &merged.packet[10];
        assert_eq!(first_again.first_packet_on_sequence, Some(true));
        assert!(matches!(
            first_again.data,
            Some(PacketData::TrackDescriptor(_))
        ));
    }
}
