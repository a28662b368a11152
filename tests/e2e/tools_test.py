#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# End-to-end tests of the tools and examples on model HCAs, run by meson
# (tests/e2e/meson.build, suite 'e2e'):
#   tools_test.py devinfo  <kbv-devinfo>
#   tools_test.py perf     <kbv-perf> <case>      one --loopback run (--json)
#   tools_test.py perf2p   <kbv-perf>             server and client processes
#   tools_test.py example  <program>              an example; exit 0 and "ok"
# Each checks the exit status and the shape of the output: devinfo's
# ibv_devinfo fields; kbv-perf's JSON parses, has every field, and says the
# data was verified.
import json
import re
import subprocess
import sys

TIMEOUT = 120

# Small loopback runs: (name, extra arguments, expect latency rows, bw rows).
PERF_CASES = {
    "write": (["-T", "write", "-a", "--max-size", "4096", "-n", "50"], 12, 12),
    "send": (["-T", "send", "-s", "1024", "-n", "50", "-I", "256"], 1, 1),
    "read": (["-T", "read", "-s", "4096", "-n", "50"], 1, 1),
    "atomic_fa": (["-T", "atomic", "-n", "50"], 1, 1),
    "atomic_cs": (["-T", "atomic", "-A", "CMP_AND_SWAP", "-n", "50", "--mode", "lat"], 1, 0),
    "ud_send": (["-T", "send", "-c", "UD", "-s", "512", "-n", "50"], 1, 1),
    "multi_qp": (["-T", "write", "--mode", "bw", "-s", "8192", "-n", "64", "-q", "3", "-t", "16",
                  "-Q", "4"], 0, 1),
}

LAT_KEYS = ["bytes", "iterations", "t_min_usec", "t_max_usec", "t_typical_usec", "t_avg_usec",
            "t_stdev_usec", "p99_usec", "p99_9_usec"]
BW_KEYS = ["bytes", "iterations", "bw_peak_mbs", "bw_avg_mbs", "msg_rate_mpps", "peak_computed"]
STAT_KEYS = ["device", "fw_cmds_in_flight", "fw_cmds_in_flight_max", "fw_cmds_completed"]
TOP_KEYS = ["test", "connection", "role", "device", "params", "latency", "bandwidth",
            "device_stats", "verified", "verify_detail"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, timeout=TIMEOUT):
    print("$ " + " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    return p


def check_devinfo(exe):
    p = run([exe])
    if p.returncode != 0:
        fail("kbv-devinfo exited %d" % p.returncode)
    for field in ["hca_id:", "fw_ver:", "node_guid:", "sys_image_guid:", "vendor_id:",
                  "phys_port_cnt:", "port:", "state:", "max_mtu:", "active_mtu:", "link_layer:"]:
        if field not in p.stdout:
            fail("kbv-devinfo output lacks " + field)
    if not re.search(r"node_guid:\s+[0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{4}", p.stdout):
        fail("node_guid not in ibv_devinfo form")
    if not re.search(r"GID\[\s*\d+\]:\s+\S+, RoCE v2", p.stdout):
        fail("no RoCE v2 GID listed")
    if "PORT_ACTIVE" not in p.stdout:
        fail("the model's port is not shown active")
    v = run([exe, "-v"])
    if v.returncode != 0:
        fail("kbv-devinfo -v exited %d" % v.returncode)
    for field in ["max_qp:", "max_qp_wr:", "max_cqe:", "max_mr_size:", "device_cap_flags:",
                  "max_srq:", "max_inline_data:", "phys_state:"]:
        if field not in v.stdout:
            fail("kbv-devinfo -v lacks " + field)
    l = run([exe, "-l"])
    if l.returncode != 0 or not re.search(r"\d+ HCAs? found:", l.stdout):
        fail("kbv-devinfo -l")
    bad = run([exe, "-d", "sim:0", "-i", "9"])
    if bad.returncode == 0:
        fail("kbv-devinfo accepted port 9 of a one-port device")


def check_perf_json(text, lat_rows, bw_rows):
    try:
        j = json.loads(text)
    except json.JSONDecodeError as e:
        fail("kbv-perf --json is not JSON: %s" % e)
    for k in TOP_KEYS:
        if k not in j:
            fail("JSON lacks " + k)
    if j["verified"] is not True:
        fail("data not verified: " + str(j.get("verify_detail")))
    if len(j["latency"]) != lat_rows or len(j["bandwidth"]) != bw_rows:
        fail("expected %d latency and %d bandwidth rows, got %d and %d" %
             (lat_rows, bw_rows, len(j["latency"]), len(j["bandwidth"])))
    for row in j["latency"]:
        for k in LAT_KEYS:
            if k not in row or row[k] is None:
                fail("latency row lacks " + k)
        if not (0 < row["t_min_usec"] <= row["t_typical_usec"] <= row["t_max_usec"]):
            fail("latency figures out of order: %s" % row)
        if not (row["t_typical_usec"] <= row["p99_usec"] <= row["p99_9_usec"]):
            fail("percentiles out of order: %s" % row)
    for row in j["bandwidth"]:
        for k in BW_KEYS:
            if k not in row or row[k] is None:
                fail("bandwidth row lacks " + k)
        if not (row["bw_avg_mbs"] > 0 and row["msg_rate_mpps"] > 0):
            fail("bandwidth figures not positive: %s" % row)
        if row["peak_computed"] and row["bw_peak_mbs"] < row["bw_avg_mbs"] * 0.999:
            fail("peak below average: %s" % row)
    if not j["device_stats"]:
        fail("no device statistics")
    for d in j["device_stats"]:
        for k in STAT_KEYS:
            if k not in d:
                fail("device_stats lacks " + k)
        if d["fw_cmds_in_flight_max"] < 1 or d["fw_cmds_completed"] < 1:
            fail("device statistics show no firmware command: %s" % d)
    return j


def check_perf(exe, case):
    args, lat_rows, bw_rows = PERF_CASES[case]
    p = run([exe, "--loopback", "--json"] + args)
    if p.returncode != 0:
        fail("kbv-perf exited %d" % p.returncode)
    j = check_perf_json(p.stdout, lat_rows, bw_rows)
    if len(j["device_stats"]) != 2:
        fail("loopback: expected the statistics of both devices")


def start_server(exe):
    """Starts `kbv-perf --server -p 0`; returns (process, the TCP port it chose)."""
    server = subprocess.Popen([exe, "--server", "-p", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    seen = []
    for _ in range(50):  # anything logged before the port line is skipped
        line = server.stderr.readline()
        if not line:
            break
        seen.append(line)
        m = re.search(r"waiting for a client on port (\d+)", line)
        if m:
            return server, m.group(1)
    server.kill()
    fail("the server did not say its port: " + "".join(seen))


def check_perf_two_processes(exe):
    server, port = start_server(exe)
    try:
        client = run([exe, "127.0.0.1", "-p", port, "--json", "-T", "write", "-a",
                      "--max-size", "1024", "-n", "50"])
        out, err = server.communicate(timeout=TIMEOUT)
        sys.stdout.write(out)
        sys.stderr.write(err)
        if client.returncode != 0:
            fail("client exited %d" % client.returncode)
        if server.returncode != 0:
            fail("server exited %d" % server.returncode)
        j = check_perf_json(client.stdout, 10, 10)
        if len(j["device_stats"]) != 2:
            fail("two processes: expected the server's statistics too")
        if "verified" not in out:
            fail("the server did not report its checks")
        # The text tables, as perftest prints them.
        server, port = start_server(exe)
        text = run([exe, "127.0.0.1", "-p", port, "-s", "64", "-n", "50"])
        server.communicate(timeout=TIMEOUT)
        if text.returncode != 0:
            fail("text client exited %d" % text.returncode)
        for h in ["t_typical[usec]", "99.9% percentile[usec]", "BW average[MB/sec]",
                  "MsgRate[Mpps]", "Data verified"]:
            if h not in text.stdout:
                fail("text output lacks " + h)
    finally:
        if server.poll() is None:
            server.kill()


def check_example(exe):
    p = run([exe])
    if p.returncode != 0:
        fail("example exited %d" % p.returncode)
    if ": ok" not in p.stdout:
        fail("example did not report ok")


def main():
    mode = sys.argv[1]
    if mode == "devinfo":
        check_devinfo(sys.argv[2])
    elif mode == "perf":
        check_perf(sys.argv[2], sys.argv[3])
    elif mode == "perf2p":
        check_perf_two_processes(sys.argv[2])
    elif mode == "example":
        check_example(sys.argv[2])
    else:
        fail("unknown mode " + mode)
    print("PASS")


if __name__ == "__main__":
    main()
