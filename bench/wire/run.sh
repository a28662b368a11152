#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The HCA model against the raw UDP wire it runs on (issue 14), measured in
# the same run: each repetition runs a raw UDP reference (kbv-udp-ref, two
# processes) and the model (kbv-perf, two processes, each with its own model
# HCA) back to back; the medians over the repetitions are printed as
#   figure <name> <value>      absolute figures (us, MB/s, Mpps, us per QP)
#   ratio <name> <value>       model / reference (latency: lower is better,
#                              throughput: higher is better)
#
#   bench/wire/run.sh [build-dir] [repetitions (default 5)] [--no-scale]
#
# Latency: RC RDMA WRITE round trip (2 x kbv-perf's t_typical, perftest's
# write_lat convention) against the median UDP ping-pong round trip of the
# same payload, busy-polling (recv MSG_DONTWAIT) and blocking. kbv-perf
# busy-polls; the model's engine threads sleep in epoll_wait between
# packets, so the blocking ping-pong is the like-for-like reference for the
# model's side and the busy one for the application's.
# Throughput: 64 KiB RDMA WRITE bandwidth against a UDP stream of
# 4112-byte datagrams (a 4096-MTU RoCEv2 middle packet: BTH + payload +
# ICRC); the 2-byte WRITE message rate against the 2-byte datagram rate.
# Scale: kbv-qp-scale at 256 and 10000 QP pairs (create + connect, data).
# Not a test: the figures depend on the machine and its load; ratios are
# what to compare across machines.
set -euo pipefail
build=${1:-build}
reps=${2:-5}
scale=1
[ "${3:-}" = "--no-scale" ] && scale=0
perf="$build/tools/kbv-perf"
ref="$build/bench/wire/kbv-udp-ref"
qps="$build/bench/wire/kbv-qp-scale"
for b in "$perf" "$ref" "$qps"; do
  [ -x "$b" ] || { echo "bench/wire: $b not built (ninja -C $build)" >&2; exit 1; }
done
tmp=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# kbv-perf between two processes; prints the client's JSON. $1: the test
# (write_lat, write_bw: kbv-perf's first argument); the rest: client options.
model() {
  local test=$1
  shift
  "$perf" "$test" --server -p 0 >"$tmp/server.log" 2>&1 &
  server_pid=$!
  local port=""
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*waiting for a client on port \([0-9]*\).*/\1/p' "$tmp/server.log")
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$tmp/server.log" >&2; return 1; }
  "$perf" "$test" 127.0.0.1 -p "$port" --json --no-progress "$@" >"$tmp/client.json"
  wait "$server_pid"
  server_pid=""
  grep -q '"verified": true' "$tmp/client.json" || { echo "bench/wire: data not verified" >&2; return 1; }
  cat "$tmp/client.json"
}
json_num() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" | head -1; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) exit 1; print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
record() { echo "$2" >>"$tmp/$1"; }

for r in $(seq 1 "$reps"); do
  echo "bench/wire: repetition $r of $reps" >&2
  for size in 2 64; do
    for mode in busy block; do
      record "udp_rtt_${size}B_$mode" "$("$ref" pingpong "$mode" "$size" 20000 | awk '{print $2}')"
    done
    t=$(model write_lat -s "$size" -n 20000 | json_num t_typical_usec)
    record "model_rtt_${size}B" "$(awk -v t="$t" 'BEGIN {print 2 * t}')"
  done
  record udp_stream_MBps "$("$ref" stream 4112 2 | awk '{print $3}')"
  record model_bw_64KiB_MBps "$(model write_bw -s 65536 -n 20000 | json_num bw_avg_mbs)"
  record udp_rate_2B_Mpps "$("$ref" stream 2 2 | awk '{print $5}')"
  record model_rate_2B_Mpps "$(model write_bw -s 2 -n 200000 | json_num msg_rate_mpps)"
done

m() { median <"$tmp/$1"; }
for f in udp_rtt_2B_busy udp_rtt_2B_block model_rtt_2B udp_rtt_64B_busy udp_rtt_64B_block \
  model_rtt_64B udp_stream_MBps model_bw_64KiB_MBps udp_rate_2B_Mpps model_rate_2B_Mpps; do
  echo "figure $f $(m $f)"
done
ratio() { awk -v a="$2" -v b="$3" -v n="$1" 'BEGIN {printf "ratio %s %.2f\n", n, a / b}'; }
for size in 2 64; do
  ratio "rtt_${size}B_busy" "$(m model_rtt_${size}B)" "$(m udp_rtt_${size}B_busy)"
  ratio "rtt_${size}B_block" "$(m model_rtt_${size}B)" "$(m udp_rtt_${size}B_block)"
done
ratio bw_64KiB "$(m model_bw_64KiB_MBps)" "$(m udp_stream_MBps)"
ratio rate_2B "$(m model_rate_2B_Mpps)" "$(m udp_rate_2B_Mpps)"

if [ "$scale" = 1 ]; then
  for n in 256 10000; do
    "$qps" "$n" 2>/dev/null | grep '^figure' | sed "s/^figure \([a-z_]*\)/figure \1_$n/" >"$tmp/scale_$n"
    cat "$tmp/scale_$n"
  done
  for k in qp_create_us qp_connect_us qp_data_us; do
    ratio "${k%_us}_per_qp_10000_vs_256" "$(awk -v k="${k}_10000" '$2 == k {print $3}' "$tmp/scale_10000")" \
      "$(awk -v k="${k}_256" '$2 == k {print $3}' "$tmp/scale_256")"
  done
fi
