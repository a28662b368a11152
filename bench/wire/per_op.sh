#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Load-independent evidence for the model's wire figures (issue 14): system
# calls and context switches per operation of a kbv-perf test between two
# processes (each its own model HCA), server and client summed, counted by
# `perf stat` (context-switches and syscall tracepoints; needs perf and
# tracepoint access, e.g. root or kernel.perf_event_paranoid <= -1).
#
#   bench/wire/per_op.sh [build-dir] [test (write_lat)] [size (2)] [n (10000)]
#
# Two runs, of n/5 and n iterations; the difference divided by the extra
# iterations cancels set-up and tear-down. An operation is one iteration:
# a round trip for the latency tests, one message for the bandwidth tests.
# Prints `figure per_op_<event> <value>` lines (context switches, all
# system calls, and the calls the model's engine makes: epoll_wait,
# recvmmsg, sendmmsg, eventfd/timerfd writes, futex, sched_yield, poll)
# and the t_typical / bandwidth the client reported for each run. Counts
# such as sched_yield and poll grow with the time spent waiting (they come
# from spinning), so they do depend on the load; the engine's calls per
# operation do not. Not a test.
set -euo pipefail
build=${1:-build}
test=${2:-write_lat}
size=${3:-2}
n=${4:-10000}
perf_bin="$build/tools/kbv-perf"
[ -x "$perf_bin" ] || { echo "per_op: $perf_bin not built" >&2; exit 1; }
command -v perf >/dev/null || { echo "per_op: perf not installed" >&2; exit 1; }
events=context-switches,raw_syscalls:sys_enter
for s in epoll_wait recvmmsg sendmmsg write read futex sched_yield poll timerfd_settime; do
  events="$events,syscalls:sys_enter_$s"
done
tmp=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# $1: iterations, $2: output prefix. Leaves <prefix>.counts ("event total").
run() {
  perf stat -x, -e "$events" -o "$tmp/$2.server" "$perf_bin" "$test" --server -p 0 \
    >"$tmp/server.log" 2>&1 &
  server_pid=$!
  local port=""
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*waiting for a client on port \([0-9]*\).*/\1/p' "$tmp/server.log")
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$tmp/server.log" >&2; return 1; }
  perf stat -x, -e "$events" -o "$tmp/$2.client" "$perf_bin" "$test" 127.0.0.1 -p "$port" \
    -s "$size" -n "$1" --json --no-progress >"$tmp/$2.json"
  wait "$server_pid"
  server_pid=""
  grep -q '"verified": true' "$tmp/$2.json" || { echo "per_op: data not verified" >&2; return 1; }
  awk -F, 'NF > 3 && $1 ~ /^[0-9]+$/ {s[$3] += $1} END {for (k in s) print k, s[k]}' \
    "$tmp/$2.server" "$tmp/$2.client" | sort >"$tmp/$2.counts"
  sed -n 's/.*"\(t_typical_usec\|bw_avg_mbs\|msg_rate_mpps\)": \([0-9.e+-]*\).*/\1 \2/p' \
    "$tmp/$2.json" | sed "s/^/# $2 ($1 iterations): /"
}
short=$((n / 5))
run "$short" short
run "$n" long
join "$tmp/short.counts" "$tmp/long.counts" | awk -v d=$((n - short)) '{
  name = $1; sub(/^syscalls:sys_enter_/, "", name); sub(/^raw_syscalls:sys_enter$/, "syscalls", name)
  gsub(/-/, "_", name)
  printf "figure per_op_%s %.3f\n", name, ($3 - $2) / d
}'
