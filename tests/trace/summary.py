#!/usr/bin/env python3
"""Decodes a marvin trace with Perfetto's published schema and prints a JSON summary.

Usage: summary.py TRACE

The structural checks of runtime/tests/decode_trace.py run first (one writer sequence,
descriptors before events, sorted timestamps, known tracks, every slice closed and properly
nested per track, counters on counter tracks). Then it prints
{"tracks": [{"uuid", "kind", "name", "pid", "tid", "parent"}],
 "slices": {track name: [[depth, name, begin, end]]},
 "instants": {track name: [name]}, "values": {track name: [value]}}.
Exit status: 0 on success, 1 when a check fails, 3 when the perfetto package is missing.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "tests"))
import decode_trace  # noqa: E402  (exits 3 itself when perfetto is missing)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        trace = decode_trace.decode(argv[1])
        tracks, slices, instants, values = decode_trace.analyse(trace)
    except decode_trace.CheckFailed as err:
        print(f"{argv[1]}: {err}", file=sys.stderr)
        return 1
    except Exception as err:
        print(f"{argv[1]}: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    out = {"tracks": [], "slices": {}, "instants": {}, "values": {}}
    for uuid, d in tracks.items():
        kind = ("thread" if d.HasField("thread") else
                "process" if d.HasField("process") else
                "counter" if d.HasField("counter") else "other")
        out["tracks"].append({
            "uuid": str(uuid),
            "kind": kind,
            "name": decode_trace.track_name(d),
            "pid": d.thread.pid if kind == "thread" else d.process.pid if kind == "process" else None,
            "tid": d.thread.tid if kind == "thread" else None,
            "parent": str(d.parent_uuid) if d.HasField("parent_uuid") else None,
        })
    name = {uuid: decode_trace.track_name(d) for uuid, d in tracks.items()}
    for uuid, s in slices.items():
        out["slices"][name[uuid]] = [[x["depth"], x["name"], x["ts"], x["end"]] for x in s]
    for uuid, i in instants.items():
        out["instants"][name[uuid]] = i
    for uuid, v in values.items():
        out["values"][name[uuid]] = v
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
