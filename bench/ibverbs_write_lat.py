#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# RDMA WRITE latency through kbv's libibverbs ABI against kbv's own API, in
# the same run (issue 11, goal: within 10 %):
#   - Debian's perftest `ib_write_lat`, unmodified, through `kbv-run`
#     (src/ibverbs: libibverbs.so.1 on kbv's verbs);
#   - `kbv_write_lat` (kbv-perf write_lat: kbv.h directly).
# Both run as two processes (server, client), each with its own model HCA,
# at 2 B and 4 KiB, with the same inline threshold (the one ib_write_lat
# reports, "Max inline data", passed to kbv-perf as -I), alternating ROUNDS
# times so that machine load falls on both alike. The figure compared is
# t_typical (the median of the run's iterations); the ratio printed is the
# best run of ib_write_lat against the best run of kbv-perf (the runs least
# disturbed by other load), the median of the per-round ratios beside it:
#
#   bench/ibverbs_write_lat.py [BUILD_DIR] [--rounds N] [--iters N]
#   ratio ib_write_lat_vs_kbv_perf_2B <v>
#   ratio ib_write_lat_vs_kbv_perf_4096B <v>
#
# Not a test: results depend on the machine and its load (bench/README.md).
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

DEADLINE = 120.0
SIZES = [2, 4096]


def die(msg):
    print("ibverbs_write_lat: " + msg, file=sys.stderr)
    sys.exit(1)


def free_tcp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(f).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[1].endswith(":%04X" % port) and fields[3] == "0A":
                return True
    return False


def pair(server_cmd, client_cmd, port):
    """Runs a server and a client (bounded by DEADLINE); returns the client's stdout."""
    end = time.monotonic() + DEADLINE
    server = subprocess.Popen(server_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    client = None
    try:
        while not listening(port):
            if server.poll() is not None:
                die("server %s exited %d: %s" % (server_cmd[0], server.returncode,
                                                 server.stdout.read()))
            if time.monotonic() > end:
                die("server %s did not listen on %d" % (server_cmd[0], port))
            time.sleep(0.02)  # polls the listening socket, bounded by `end`
        client = subprocess.run(client_cmd, capture_output=True, text=True,
                                timeout=max(1.0, end - time.monotonic()))
        sout, _ = server.communicate(timeout=max(1.0, end - time.monotonic()))
        if client.returncode != 0 or server.returncode != 0:
            die("%s: client exited %d, server %d\n%s\n%s%s" %
                (" ".join(client_cmd), client.returncode, server.returncode, sout, client.stdout,
                 client.stderr))
        return client.stdout
    except subprocess.TimeoutExpired:
        die("%s did not finish within %.0f s" % (" ".join(client_cmd), DEADLINE))
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def kbv_perf_typical(build, size, iters, inline):
    perf = os.path.join(build, "tools", "kbv-perf")
    port = free_tcp_port()
    out = pair([perf, "write_lat", "--server", "-p", str(port)],
               [perf, "write_lat", "127.0.0.1", "-p", str(port), "-s",
                str(size), "-n", str(iters), "-I", str(inline), "--json", "--no-progress"], port)
    j = json.loads(out)
    if j.get("verified") is not True:
        die("kbv-perf did not verify its data")
    return j["latency"][0]["t_typical_usec"]


def ib_write_lat_typical(build, size, iters):
    """Returns (t_typical in us, the inline threshold ib_write_lat used)."""
    run = [os.path.join(build, "tools", "kbv-run"), "ib_write_lat"]
    port = free_tcp_port()
    args = ["-p", str(port), "-s", str(size), "-n", str(iters)]
    out = pair(run + args, run + args + ["127.0.0.1"], port)
    m = re.search(r"Max inline data\s*:\s*(\d+)\[B\]", out)
    if not m:
        die("ib_write_lat did not print its inline threshold:\n" + out)
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if re.search(r"#bytes\s+#iterations\s+t_min\[usec\]\s+t_max\[usec\]\s+t_typical\[usec\]",
                     line):
            return float(lines[i + 1].split()[4]), int(m.group(1))
    die("ib_write_lat printed no result row:\n" + out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=5000)
    a = ap.parse_args()
    runs = {s: [] for s in SIZES}
    print("%-6s %-5s %7s %22s %22s %8s" % ("size", "round", "inline", "ib_write_lat t_typ[us]",
                                           "kbv-perf t_typ[us]", "ratio"))
    for r in range(a.rounds):
        for s in SIZES:
            ibv, inline = ib_write_lat_typical(a.build, s, a.iters)
            kbv = kbv_perf_typical(a.build, s, a.iters, inline)
            runs[s].append((ibv, kbv))
            print("%-6d %-5d %7d %22.2f %22.2f %8.3f" % (s, r, inline, ibv, kbv, ibv / kbv),
                  flush=True)
    for s in SIZES:
        best_ibv = min(i for i, _ in runs[s])
        best_kbv = min(k for _, k in runs[s])
        med = statistics.median(i / k for i, k in runs[s])
        print("best of %d: ib_write_lat %.2f us, kbv-perf %.2f us; median of the round ratios %.3f" %
              (a.rounds, best_ibv, best_kbv, med))
        print("ratio ib_write_lat_vs_kbv_perf_%dB %.3f" % (s, best_ibv / best_kbv))


if __name__ == "__main__":
    main()
