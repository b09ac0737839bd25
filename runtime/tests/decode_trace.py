#!/usr/bin/env python3
"""Decodes a marvin trace with Perfetto's published schema and checks it.

Usage: decode_trace.py TRACE [--expect FILE]

Always checks the trace's structure: it parses as perfetto.protos.Trace; every packet is on
one writer sequence; the first packet clears incremental state; track descriptors come
before events; event timestamps are sorted; every event names a declared track; on every
track each slice begin has an end and ends never outnumber begins (valid nesting); counter
events are on counter tracks and carry a value.

With --expect, also compares the decoded trace with a tab-separated description:
  process <pid> <name>
  thread  <pid> <tid> <name>           (its parent must be the process with that pid)
  counter <parent thread or process name> <name>
  slice   <thread name> <depth> <name>   (a thread's slices, in begin order)
  instant <thread name> <name>
  value   <counter name> <value>         (a counter's values, in time order)

Exit status: 0 when every check passes, 1 when one fails, 2 on bad usage, 3 when the
perfetto package (pip install perfetto) is missing.
"""

import sys

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as err:  # pragma: no cover - depends on the machine
    print(f"the perfetto Python package is missing ({err}); pip install perfetto",
          file=sys.stderr)
    sys.exit(3)

TrackEvent = pb.TrackEvent


class CheckFailed(Exception):
    pass


def check(cond, message):
    if not cond:
        raise CheckFailed(message)


def decode(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    return trace


def analyse(trace):
    """Returns (tracks by uuid, slices by track, instants by track, values by track)."""
    packets = list(trace.packet)
    check(packets, "the trace has no packets")
    sequences = {p.trusted_packet_sequence_id for p in packets}
    check(len(sequences) == 1 and 0 not in sequences,
          f"expected one non-zero writer sequence, found {sequences}")
    first = packets[0]
    check(first.first_packet_on_sequence, "first packet lacks first_packet_on_sequence")
    check(first.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED,
          "first packet does not clear incremental state")

    tracks = {}
    seen_event = False
    last_ts = None
    open_slices = {}
    slices, instants, values = {}, {}, {}
    for i, p in enumerate(packets):
        kind = p.WhichOneof("data")
        if kind == "track_descriptor":
            check(not seen_event, f"packet {i}: track descriptor after events")
            d = p.track_descriptor
            check(d.uuid not in tracks, f"packet {i}: duplicate track uuid {d.uuid}")
            if d.HasField("parent_uuid"):
                check(d.parent_uuid in tracks,
                      f"packet {i}: parent {d.parent_uuid} not declared before its child")
            tracks[d.uuid] = d
        elif kind == "track_event":
            seen_event = True
            check(p.HasField("timestamp"), f"packet {i}: event without timestamp")
            check(p.timestamp_clock_id == pb.BUILTIN_CLOCK_BOOTTIME,
                  f"packet {i}: clock {p.timestamp_clock_id}, expected BOOTTIME")
            check(last_ts is None or p.timestamp >= last_ts,
                  f"packet {i}: timestamp {p.timestamp} before {last_ts}")
            last_ts = p.timestamp
            e = p.track_event
            check(e.track_uuid in tracks, f"packet {i}: unknown track {e.track_uuid}")
            stack = open_slices.setdefault(e.track_uuid, [])
            if e.type == TrackEvent.TYPE_SLICE_BEGIN:
                check(e.name, f"packet {i}: unnamed slice")
                slices.setdefault(e.track_uuid, []).append(
                    {"name": e.name, "depth": len(stack), "ts": p.timestamp, "end": None})
                stack.append(slices[e.track_uuid][-1])
            elif e.type == TrackEvent.TYPE_SLICE_END:
                check(stack, f"packet {i}: slice end with no open slice on its track")
                stack.pop()["end"] = p.timestamp
            elif e.type == TrackEvent.TYPE_INSTANT:
                instants.setdefault(e.track_uuid, []).append(e.name)
            elif e.type == TrackEvent.TYPE_COUNTER:
                check(tracks[e.track_uuid].HasField("counter"),
                      f"packet {i}: counter value on a non-counter track")
                check(e.HasField("double_counter_value"), f"packet {i}: counter without value")
                values.setdefault(e.track_uuid, []).append(e.double_counter_value)
            else:
                raise CheckFailed(f"packet {i}: unexpected event type {e.type}")
        else:
            raise CheckFailed(f"packet {i}: unexpected payload {kind}")
    for uuid, stack in open_slices.items():
        check(not stack, f"track {uuid}: slices never ended: {[s['name'] for s in stack]}")
    for uuid, track_slices in slices.items():
        for s in track_slices:
            check(s["end"] >= s["ts"], f"slice {s['name']} ends before it begins")
    return tracks, slices, instants, values


def track_name(d):
    if d.HasField("thread"):
        return d.thread.thread_name
    if d.HasField("process"):
        return d.process.process_name
    return d.name


def compare(expect_path, tracks, slices, instants, values):
    by_name = {}
    for uuid, d in tracks.items():
        check(track_name(d) not in by_name, f"two tracks named {track_name(d)!r}")
        by_name[track_name(d)] = uuid
    expected_slices, expected_instants, expected_values = {}, {}, {}
    with open(expect_path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    for row in rows:
        kind, args = row[0], row[1:]
        if kind == "process":
            pid, name = int(args[0]), args[1]
            check(name in by_name, f"no process track {name!r}")
            d = tracks[by_name[name]]
            check(d.HasField("process") and d.process.pid == pid,
                  f"track {name!r} is not process {pid}: {d}")
        elif kind == "thread":
            pid, tid, name = int(args[0]), int(args[1]), args[2]
            check(name in by_name, f"no thread track {name!r}")
            d = tracks[by_name[name]]
            check(d.HasField("thread") and d.thread.pid == pid and d.thread.tid == tid,
                  f"track {name!r} is not thread {pid}/{tid}: {d}")
            parent = tracks[d.parent_uuid]
            check(parent.HasField("process") and parent.process.pid == pid,
                  f"thread {name!r} is not under process {pid}")
        elif kind == "counter":
            parent_name, name = args
            check(name in by_name, f"no counter track {name!r}")
            d = tracks[by_name[name]]
            check(d.HasField("counter"), f"track {name!r} is not a counter track")
            check(d.parent_uuid == by_name[parent_name],
                  f"counter {name!r} is not under {parent_name!r}")
        elif kind == "slice":
            expected_slices.setdefault(args[0], []).append((int(args[1]), args[2]))
        elif kind == "instant":
            expected_instants.setdefault(args[0], []).append(args[1])
        elif kind == "value":
            expected_values.setdefault(args[0], []).append(float(args[1]))
        else:
            raise CheckFailed(f"bad expectation row {row}")
    for name, want in expected_slices.items():
        got = [(s["depth"], s["name"]) for s in slices.get(by_name[name], [])]
        check(got == want, f"slices on {name!r}: got {got}, expected {want}")
    for name, want in expected_instants.items():
        got = instants.get(by_name[name], [])
        check(got == want, f"instants on {name!r}: got {got}, expected {want}")
    for name, want in expected_values.items():
        got = values.get(by_name[name], [])
        check(got == want, f"values on {name!r}: got {got}, expected {want}")
    # Nothing unexpected either.
    for uuid in set(slices) | set(instants) | set(values):
        name = track_name(tracks[uuid])
        check(name in expected_slices or name in expected_instants or name in expected_values,
              f"events on unexpected track {name!r}")


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--expect"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        trace = decode(argv[1])
        tracks, slices, instants, values = analyse(trace)
        if len(argv) == 4:
            compare(argv[3], tracks, slices, instants, values)
    except CheckFailed as err:
        print(f"{argv[1]}: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # a parse error or unreadable file is a failed check too
        print(f"{argv[1]}: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    n_slices = sum(len(s) for s in slices.values())
    print(f"{argv[1]}: ok: {len(tracks)} tracks, {n_slices} slices, "
          f"{sum(len(i) for i in instants.values())} instants, "
          f"{sum(len(v) for v in values.values())} counter values")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
