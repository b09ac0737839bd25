#!/usr/bin/env bash
# Installs the interpreters `marvin bench interp` compares against (Debian's packages):
# Lua 5.4, LuaJIT (run as `luajit -joff`, its interpreter alone) and CPython. The bench
# and its tests skip a missing one with a note, so this is for the machines that measure.
# Needs root (or sudo); safe to run again.
set -euo pipefail
need=()
command -v lua5.4 >/dev/null 2>&1 || need+=(lua5.4)
command -v luajit >/dev/null 2>&1 || need+=(luajit)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -eq 0 ]; then
    echo "peers: lua5.4, luajit and python3 are installed"
    exit 0
fi
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q "${need[@]}"
