#!/usr/bin/env python3
"""Decodes a merged trace of several processes with Perfetto's published schema, checks it
and prints a JSON summary.

Usage: processes.py TRACE

A merged trace (`marvin pressure --trace` in the process mode) holds several writer
sequences, one per process, concatenated. The checks are runtime/tests/decode_trace.py's,
made per sequence and per track as Perfetto's trace processor reads such a file:
  - it parses as perfetto.protos.Trace; every packet names a sequence (not 0, and not 1,
    the tracing service's);
  - each sequence's first packet starts it (first_packet_on_sequence) and clears its
    incremental state, and no later packet starts it again;
  - track uuids are unique in the whole trace; a parent is declared before its child; every
    event names a track declared before it, on the same sequence (a track has one writer);
  - each sequence declares the tracks of one process, and no two sequences the same pid;
  - events carry BOOTTIME timestamps; on every track, taken in time order (the trace
    processor sorts a trace's events by time, keeping file order among equal times), no
    slice end comes without a begin, and no slice ends before it begins; counter values are
    on counter tracks.
A slice that never ends is not an error here but is listed under "open": a process killed
inside a slice leaves it so (the caller checks that only killed processes do).
Then it prints
{"sequences": N,
 "processes": [{"pid", "name", "sequence", "threads": [name], "counters": {name: values}}],
 "slices": {"PID/THREAD": {name: count}}, "instants": {"PID/THREAD": [name]},
 "open": {"PID/THREAD": [name]},
 "annotations": {slice or instant name before " (": [[annotation name, value]]} (the first
 one's), "pids": [[event name, pid]] (every slice begin or instant with a pid
 annotation)}.
Exit status: 0 on success, 1 when a check fails, 3 when the perfetto package is missing.
"""

import json
import os
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "tests"))
import decode_trace  # noqa: E402  (exits 3 itself when perfetto is missing)

pb = decode_trace.pb
TrackEvent = pb.TrackEvent
check = decode_trace.check


def annotation_value(a):
    kind = a.WhichOneof("value")
    return getattr(a, kind) if kind else None


def analyse(trace):
    packets = list(trace.packet)
    check(packets, "the trace has no packets")
    tracks, track_seq, started = {}, {}, set()
    seq_pids = defaultdict(set)
    events = []  # (ts, index, packet)
    for i, p in enumerate(packets):
        seq = p.trusted_packet_sequence_id
        check(seq not in (0, 1), f"packet {i}: sequence {seq}")
        if seq not in started:
            check(p.first_packet_on_sequence,
                  f"packet {i}: the first of sequence {seq} does not start it")
            check(p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED,
                  f"packet {i}: the first of sequence {seq} does not clear its state")
            started.add(seq)
        else:
            check(not p.first_packet_on_sequence, f"packet {i}: sequence {seq} started again")
        kind = p.WhichOneof("data")
        if kind == "track_descriptor":
            d = p.track_descriptor
            check(d.uuid not in tracks, f"packet {i}: duplicate track uuid {d.uuid}")
            if d.HasField("parent_uuid"):
                check(d.parent_uuid in tracks,
                      f"packet {i}: parent {d.parent_uuid} not declared before its child")
            tracks[d.uuid] = d
            track_seq[d.uuid] = seq
            if d.HasField("process"):
                seq_pids[seq].add(d.process.pid)
            if d.HasField("thread"):
                seq_pids[seq].add(d.thread.pid)
        elif kind == "track_event":
            check(p.HasField("timestamp"), f"packet {i}: event without timestamp")
            check(p.timestamp_clock_id == pb.BUILTIN_CLOCK_BOOTTIME,
                  f"packet {i}: clock {p.timestamp_clock_id}, expected BOOTTIME")
            e = p.track_event
            check(e.track_uuid in tracks, f"packet {i}: unknown track {e.track_uuid}")
            check(track_seq[e.track_uuid] == seq,
                  f"packet {i}: an event of sequence {seq} on a track of sequence "
                  f"{track_seq[e.track_uuid]}")
            events.append((p.timestamp, i, p))
        else:
            raise decode_trace.CheckFailed(f"packet {i}: unexpected payload {kind}")
    owners = {}
    for seq, pids in seq_pids.items():
        check(len(pids) == 1, f"sequence {seq} declares the tracks of processes {pids}")
        pid = next(iter(pids))
        check(pid not in owners, f"sequences {owners.get(pid)} and {seq} both declare pid {pid}")
        owners[pid] = seq

    events.sort(key=lambda x: (x[0], x[1]))
    open_slices = defaultdict(list)
    slices, instants, values, annotations = defaultdict(Counter), defaultdict(list), \
        defaultdict(list), {}
    pids = []
    for ts, i, p in events:
        e = p.track_event
        stack = open_slices[e.track_uuid]
        if e.type == TrackEvent.TYPE_SLICE_BEGIN:
            check(e.name, f"packet {i}: unnamed slice")
            slices[e.track_uuid][e.name] += 1
            stack.append((e.name, ts))
        elif e.type == TrackEvent.TYPE_SLICE_END:
            check(stack, f"packet {i}: slice end with no open slice on its track")
            name, begin = stack.pop()
            check(ts >= begin, f"slice {name} ends before it begins")
        elif e.type == TrackEvent.TYPE_INSTANT:
            instants[e.track_uuid].append(e.name)
        elif e.type == TrackEvent.TYPE_COUNTER:
            check(tracks[e.track_uuid].HasField("counter"),
                  f"packet {i}: counter value on a non-counter track")
            check(e.HasField("double_counter_value"), f"packet {i}: counter without value")
            values[e.track_uuid].append(e.double_counter_value)
        else:
            raise decode_trace.CheckFailed(f"packet {i}: unexpected event type {e.type}")
        if e.debug_annotations:
            key = e.name.split(" (")[0]
            annotations.setdefault(
                key, [[a.name, annotation_value(a)] for a in e.debug_annotations])
            for a in e.debug_annotations:
                if a.name == "pid":
                    pids.append([e.name, annotation_value(a)])
    still_open = {uuid: [s[0] for s in stack] for uuid, stack in open_slices.items() if stack}
    return tracks, track_seq, slices, instants, values, annotations, pids, still_open


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        trace = decode_trace.decode(argv[1])
        tracks, track_seq, slices, instants, values, annotations, pids, still_open = \
            analyse(trace)
    except decode_trace.CheckFailed as err:
        print(f"{argv[1]}: {err}", file=sys.stderr)
        return 1
    except Exception as err:
        print(f"{argv[1]}: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    processes = {}
    for uuid, d in tracks.items():
        if d.HasField("process"):
            processes[uuid] = {"pid": d.process.pid, "name": d.process.process_name,
                               "sequence": track_seq[uuid], "threads": [], "counters": {}}
    label = {}
    for uuid, d in tracks.items():
        if d.HasField("thread"):
            processes[d.parent_uuid]["threads"].append(d.thread.thread_name)
            label[uuid] = f"{d.thread.pid}/{d.thread.thread_name}"
        elif d.HasField("counter"):
            processes[d.parent_uuid]["counters"][d.name] = values.get(uuid, [])
    out = {
        "sequences": len(set(track_seq.values())),
        "processes": list(processes.values()),
        "slices": {label[u]: dict(c) for u, c in slices.items() if u in label},
        "instants": {label[u]: i for u, i in instants.items() if u in label},
        "open": {label.get(u, str(u)): names for u, names in still_open.items()},
        "annotations": annotations,
        "pids": pids,
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
