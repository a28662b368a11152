#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# `make run`: the main job — kbv-perf between two processes, each with its own
# model HCA (the model gives each a free 127.0.0.N on loopback), RDMA WRITE
# latency and bandwidth across a size sweep, tables printed by the client.
#   tools/run-main-job.sh [build-dir] [extra kbv-perf client options]
set -euo pipefail
build=${1:-build}
shift || true
perf="$build/tools/kbv-perf"
[ -x "$perf" ] || { echo "run-main-job: $perf not built" >&2; exit 1; }

server_log=$(mktemp)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -f "$server_log"
}
trap cleanup EXIT

# The server picks a free TCP port (-p 0) and says which on stderr.
"$perf" --server -p 0 >"$server_log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's/.*waiting for a client on port \([0-9]*\).*/\1/p' "$server_log")
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$port" ]; then
  echo "run-main-job: the kbv-perf server did not start:" >&2
  cat "$server_log" >&2
  exit 1
fi

echo "make run: kbv-perf server (pid $server_pid, TCP port $port) and client: two processes, each with its own model HCA"
rc=0
"$perf" 127.0.0.1 -p "$port" -T write -a --max-size 1048576 -n 1000 "$@" || rc=$?
server_rc=0
wait "$server_pid" || server_rc=$?
server_pid=""
sed 's/^/  [server] /' "$server_log"
if [ "$rc" -ne 0 ] || [ "$server_rc" -ne 0 ]; then
  echo "make run: FAILED (client exit $rc, server exit $server_rc)" >&2
  exit 1
fi
echo "make run: done (two processes, two model HCAs, data verified)"
