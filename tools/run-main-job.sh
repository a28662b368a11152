#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# `make run`: the main job — kbv-perf between two processes, each with its own
# model HCA (the model gives each a free 127.0.0.N on loopback): RDMA WRITE
# latency (kbv_write_lat) and bandwidth (kbv_write_bw) across a size sweep,
# tables printed by the client, pictures (--plot, gnuplot) and raw samples
# (--raw) left in the build directory.
#   tools/run-main-job.sh [build-dir] [extra client options for both tests]
set -euo pipefail
build=${1:-build}
shift || true
tools="$build/tools"
for e in kbv_write_lat kbv_write_bw; do
  [ -x "$tools/$e" ] || { echo "run-main-job: $tools/$e not built" >&2; exit 1; }
done

server_log=$(mktemp)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -f "$server_log"
}
trap cleanup EXIT

# One test: the server picks a free TCP port (-p 0) and says which on stderr;
# the client runs against it. $1: the entry point; the rest: client options.
run_pair() {
  local entry=$1
  shift
  "$tools/$entry" -p 0 >"$server_log" 2>&1 &
  server_pid=$!
  local port=""
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*waiting for a client on port \([0-9]*\).*/\1/p' "$server_log")
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "run-main-job: the $entry server did not start:" >&2
    cat "$server_log" >&2
    exit 1
  fi
  echo "make run: $entry server (pid $server_pid, TCP port $port) and client: two processes, each with its own model HCA"
  local rc=0 server_rc=0
  "$tools/$entry" 127.0.0.1 -p "$port" "$@" || rc=$?
  wait "$server_pid" || server_rc=$?
  server_pid=""
  grep "kbv-perf server" "$server_log" | sed "s/^/  [server] /" || true
  if [ "$rc" -ne 0 ] || [ "$server_rc" -ne 0 ]; then
    echo "make run: $entry FAILED (client exit $rc, server exit $server_rc)" >&2
    exit 1
  fi
}

out=$(cd "$build" && pwd)
run_pair kbv_write_lat -a --max-size 1048576 -n 1000 \
  --plot "$out/kbv-perf-write-lat.svg" --raw "$out/kbv-perf-write-lat.raw" "$@"
run_pair kbv_write_bw -a --max-size 1048576 -n 1000 \
  --plot "$out/kbv-perf-write-bw.svg" --raw "$out/kbv-perf-write-bw.raw" "$@"
echo "make run: done (two processes, two model HCAs, data verified)"
echo "make run: plots $out/kbv-perf-write-lat.svg, $out/kbv-perf-write-bw.svg;" \
  "raw samples $out/kbv-perf-write-lat.raw, $out/kbv-perf-write-bw.raw"
