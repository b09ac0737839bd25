#!/bin/bash
# ir.sh DIR "prog:N prog:N ..." bin... : instruction counts (cachegrind I refs) per program and binary
d=$1; progs=$2; shift 2
for pn in $progs; do p=${pn%%:*}; n=${pn##*:}; line="$p($n)"
  for b in "$@"; do
    ir=$(nice -n 19 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null $b run $d/programs/$p.masm -D N=$n 2>&1 >/dev/null | grep "I *refs" | awk '{print $NF}' | tr -d ,)
    line="$line $(basename $b)=$ir"
  done; echo "$line"; done
