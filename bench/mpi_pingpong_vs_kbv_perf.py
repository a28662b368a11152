#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# Issue 12's bench: MPI ping-pong 8 B one-way latency through Open MPI's pml
# ucx, UCX's rc_verbs and kbv's libibverbs (examples/mpi_pingpong under
# `kbv-run mpirun -np 2`) against kbv-perf's SEND latency at 8 B (kbv's own
# API), both between two processes with their own model HCAs, measured in
# this run, alternating, the best of REPS kept for each:
#
#   bench/mpi_pingpong_vs_kbv_perf.py [BUILD_DIR] [REPS (default 5)]
#
# Both figures are medians of one-way latency (round trip / 2), which the
# preemptions of a loaded machine move less than averages: kbv-perf's
# t_typical of `kbv_send_lat -s 8`, mpi_pingpong's 8-byte median. Prints
# `ratio mpi_pingpong_8B_vs_kbv_perf_send <mpi / kbv-perf>` (goal <= 1.3).
# Every wait is bounded; a process still running at the end is killed.
import os
import re
import signal
import socket
import subprocess
import sys
import time

DEADLINE = 120.0
ITERS = 1000


def free_tcp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    """True when a socket listens on TCP `port` (state 0A in /proc/net/tcp, tcp6)."""
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


def run(cmd, env=None):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        sys.exit("bench: %s did not finish within %.0f s:\n%s" % (cmd[0], DEADLINE, out))
    if p.returncode != 0:
        sys.exit("bench: %s exited %d:\n%s" % (" ".join(cmd), p.returncode, out))
    return out


def kbv_perf_send_8b(build):
    perf = os.path.join(build, "tools", "kbv-perf")
    port = free_tcp_port()
    server = subprocess.Popen([perf, "send_lat", "--server", "-p", str(port)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        end = time.monotonic() + DEADLINE
        while not listening(port):
            if server.poll() is not None or time.monotonic() > end:
                sys.exit("bench: the kbv-perf server did not listen on port %d" % port)
            time.sleep(0.02)  # polls a condition (the listening socket), bounded by `end`
        out = run([perf, "send_lat", "127.0.0.1", "-p", str(port), "-s", "8",
                   "-n", str(ITERS), "--no-progress"])
        server.communicate(timeout=DEADLINE)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    m = re.search(r"^\s*8\s+\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
    if not m:
        sys.exit("bench: no 8-byte row in kbv-perf's output:\n" + out)
    return float(m.group(3))  # t_typical (the median)


def mpi_pingpong_8b(build):
    env = dict(os.environ, UCX_TLS="rc_v,self")
    out = run([os.path.join(build, "tools", "kbv-run"), "mpirun", "-np", "2",
               "--allow-run-as-root", "--oversubscribe", "--mca", "pml", "ucx",
               "--mca", "btl", "^vader,tcp,openib", "-x", "UCX_TLS",
               os.path.join(build, "examples", "mpi_pingpong"), "-n", str(ITERS), "-w", "100",
               "-m", "8"], env)
    m = re.search(r"^\s+8\s+\d+\s+[\d.]+\s+([\d.]+)\s+[\d.]+$", out, re.M)
    if not m or "all data checked" not in out:
        sys.exit("bench: no checked 8-byte row in mpi_pingpong's output:\n" + out)
    return float(m.group(1))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    if not os.path.exists(os.path.join(build, "examples", "mpi_pingpong")):
        print("bench: %s/examples/mpi_pingpong not built (no MPI found): skipped" % build)
        return
    perf, mpi = [], []
    for _ in range(reps):
        perf.append(kbv_perf_send_8b(build))
        mpi.append(mpi_pingpong_8b(build))
    print("kbv-perf SEND 8 B one-way latency (t_typical, us): %s" %
          " ".join("%.2f" % v for v in perf))
    print("MPI ping-pong 8 B one-way latency (median, us):    %s" %
          " ".join("%.2f" % v for v in mpi))
    print("ratio mpi_pingpong_8B_vs_kbv_perf_send %.2f" % (min(mpi) / min(perf)))


if __name__ == "__main__":
    main()
