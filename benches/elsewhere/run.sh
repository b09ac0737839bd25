#!/bin/sh
# Held-out programs: integer programs written apart from the interpreter's own suites,
# the same algorithm in MASM (programs/) and Lua 5.4 (peers/). Checks that both print the
# same, then times both with hyperfine and prints each program's medians and ratio to Lua.
#
# Usage: benches/elsewhere/run.sh [MARVIN] [RUNS] [PROGRAM...]
#   MARVIN   the marvin binary (default target/release/marvin)
#   RUNS     hyperfine runs per command (default 5)
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
marvin=${1:-target/release/marvin}
runs=${2:-5}
shift 2 2>/dev/null || shift $#
progs=${*:-"xorsum bubble collatz matmul gcd linked insertion digits hashtab tree"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-8s %10s %10s %7s\n' program marvin lua5.4 'x lua'
for p in $progs; do
  m="$marvin run $dir/programs/$p.masm"
  l="lua5.4 $dir/peers/$p.lua"
  if [ "$($m)" != "$($l)" ]; then
    echo "$p: marvin and lua5.4 print different results" >&2
    exit 1
  fi
  hyperfine -N --warmup 1 --runs "$runs" --export-json "$tmp/$p.json" "$m" "$l" >/dev/null
  python3 - "$tmp/$p.json" "$p" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
m, l = r[0]["median"], r[1]["median"]
print(f"{sys.argv[2]:<8} {m * 1000:8.1f}ms {l * 1000:8.1f}ms {m / l:7.2f}")
PY
done
