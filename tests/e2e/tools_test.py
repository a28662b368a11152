#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# End-to-end tests of the tools and examples on model HCAs, run by meson
# (tests/e2e/meson.build, suite 'e2e'):
#   tools_test.py devinfo  <kbv-devinfo>
#   tools_test.py perf     <kbv-perf> <case>      one --loopback run (--json) through
#                                                 an entry point (kbv_write_lat, ...)
#   tools_test.py perf2p   <kbv-perf>             server and client processes
#   tools_test.py perf_many_qps <kbv-perf>        -q 1000, connected asynchronously
#   tools_test.py perf_usage    <kbv-perf>        range checks, one-line errors, kbv-perf <test>
#   tools_test.py perf_duration <kbv-perf>        -D 1 (latency, atomics on 2 QPs, UD SEND)
#   tools_test.py perf_layout   <kbv-perf>        the same layout as ib_write_lat/_bw, ib_send_bw
#   tools_test.py perf_outputs  <kbv-perf>        --out_json, --raw, --plot (SVG, PNG), -H
#   tools_test.py example  <program>              an example; exit 0 and "ok"
# Each checks the exit status and the shape of the output: devinfo's
# ibv_devinfo fields; kbv-perf's JSON parses, has every field, and says the
# data was verified.
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

TIMEOUT = 120

# Small loopback runs, each through its perftest-style entry point (a
# symlink to kbv-perf): (entry, extra arguments, latency rows, bw rows).
PERF_CASES = {
    "write_lat": ("kbv_write_lat", ["-a", "--max-size", "4096", "-n", "50"], 12, 0),
    "write_bw": ("kbv_write_bw", ["-a", "--max-size", "4096", "-n", "50"], 0, 12),
    "send_lat": ("kbv_send_lat", ["-s", "1024", "-n", "50", "-I", "256"], 1, 0),
    "send_bw": ("kbv_send_bw", ["-s", "1024", "-n", "50", "-I", "256"], 0, 1),
    "read_lat": ("kbv_read_lat", ["-s", "4096", "-n", "50"], 1, 0),
    "read_bw": ("kbv_read_bw", ["-s", "4096", "-n", "50"], 0, 1),
    "atomic_fa": ("kbv_atomic_bw", ["-n", "50"], 0, 1),
    "atomic_cs": ("kbv_atomic_lat", ["-A", "CMP_AND_SWAP", "-n", "50"], 1, 0),
    "ud_send": ("kbv_send_lat", ["-c", "UD", "-s", "512", "-n", "50"], 1, 0),
    "ud_send_bw": ("kbv_send_bw", ["-c", "UD", "-s", "512", "-n", "50"], 0, 1),
    "uc_write": ("kbv_write_bw", ["-c", "UC", "-s", "4096", "-n", "50"], 0, 1),
    "uc_send": ("kbv_send_lat", ["-c", "UC", "-s", "256", "-n", "50"], 1, 0),
    "multi_qp": ("kbv_write_bw", ["-s", "8192", "-n", "64", "-q", "3", "-t", "16", "-Q", "4"],
                 0, 1),
    "mtu_tos_gid": ("kbv_send_bw", ["-s", "1024", "-n", "50", "-m", "1024", "-T", "96", "-x", "0",
                                    "-i", "1", "-F", "--use_old_post_send"], 0, 1),
    "events": ("kbv_send_lat", ["-e", "-s", "64", "-n", "50"], 1, 0),
    # -b: both sides send at once; each checks what the other wrote/sent.
    "bidir_write": ("kbv_write_bw", ["-b", "-q", "2", "-s", "4096", "-n", "50"], 0, 1),
    "bidir_send": ("kbv_send_bw", ["-b", "-q", "2", "-s", "1024", "-n", "50"], 0, 1),
    "bidir_read": ("kbv_read_bw", ["-b", "-s", "4096", "-n", "50"], 0, 1),
    "bidir_atomic": ("kbv_atomic_bw", ["-b", "-q", "2", "-n", "50"], 0, 1),
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


# A cross build runs its programs behind the exe wrapper meson exports
# (MESON_EXE_WRAPPER, e.g. qemu-aarch64; tests/e2e/exe_wrapper.hpp); the
# program still sees its own path (an entry point's name) as argv[0].
WRAPPER = os.environ.get("MESON_EXE_WRAPPER", "").split()


def run(cmd, timeout=TIMEOUT):
    print("$ " + " ".join(cmd))
    p = subprocess.run(WRAPPER + cmd, capture_output=True, text=True, timeout=timeout)
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


def entry(exe, name):
    """The entry point `name`: the symlink beside kbv-perf (tools/meson.build)."""
    path = os.path.join(os.path.dirname(exe), name)
    if not os.path.islink(path) or os.readlink(path) != "kbv-perf":
        fail("%s is not a symlink to kbv-perf" % path)
    return path


def check_perf(exe, case):
    name, args, lat_rows, bw_rows = PERF_CASES[case]
    p = run([entry(exe, name), "--loopback", "--json"] + args)
    if p.returncode != 0:
        fail("kbv-perf exited %d" % p.returncode)
    j = check_perf_json(p.stdout, lat_rows, bw_rows)
    if len(j["device_stats"]) != 2:
        fail("loopback: expected the statistics of both devices")
    if case == "events":
        m = re.search(r"(\d+) completion events", j["verify_detail"])
        if not m or int(m.group(1)) < 1:
            fail("-e: no completion event was used: " + j["verify_detail"])
    if case.startswith("bidir_") and j["params"]["bidirectional"] is not True:
        fail("-b not carried: %s" % j["params"])
    if case == "mtu_tos_gid" and (j["params"]["mtu"] != 1024 or j["params"]["tos"] != 96):
        fail("-m/-T not carried: %s" % j["params"])


def check_many_qps(exe):
    """-q 1000 on the model: every QP created and connected through the
    asynchronous API with many firmware commands in flight at once (kbv
    keeps up to 31 outstanding; a single QP's bring-up reaches 18), data
    verified on all of them."""
    p = run([entry(exe, "kbv_write_bw"), "--loopback", "--json", "-q", "1000", "-s", "64",
             "-n", "5", "-t", "16", "-Q", "4"])
    if p.returncode != 0:
        fail("kbv_write_bw -q 1000 exited %d" % p.returncode)
    j = check_perf_json(p.stdout, 0, 1)
    if j["params"]["num_qps"] != 1000:
        fail("not 1000 QPs: %s" % j["params"])
    for d in j["device_stats"]:
        # 1000 QPs x (CREATE_QP + 3 modifies) = 4000+ commands on each side.
        if d["fw_cmds_completed"] < 4000:
            fail("too few firmware commands for 1000 QPs: %s" % d)
        if d["fw_cmds_in_flight_max"] < 24:
            fail("QPs were not created/connected with many commands in flight: %s" % d)
    # SEND on many QPs: each keeps a shallower receive queue (endpoint.hpp
    # kRxDepthMany), every message still arrives.
    p = run([entry(exe, "kbv_send_bw"), "--loopback", "--json", "-q", "200", "-s", "64",
             "-n", "5", "-t", "16", "-Q", "4"])
    if p.returncode != 0:
        fail("kbv_send_bw -q 200 exited %d" % p.returncode)
    check_perf_json(p.stdout, 0, 1)


def one_stderr_line(p, what):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    if len(lines) != 1:
        fail("%s: expected one line on stderr, got %r" % (what, p.stderr))
    return lines[0]


def check_perf_duration(exe):
    """-D: each run lasts the seconds given (not iterations), both sides agree
    on the count (END), the data is verified; perftest's duration table."""
    for name, args, lat_rows, bw_rows in [
            ("kbv_write_lat", [], 1, 0),
            ("kbv_atomic_bw", ["-q", "2"], 0, 1),
            ("kbv_send_bw", ["-c", "UD", "-s", "256"], 0, 1)]:
        p = run([entry(exe, name), "--loopback", "--json", "-D", "1"] + args)
        if p.returncode != 0:
            fail("%s -D 1 exited %d" % (name, p.returncode))
        j = check_perf_json(p.stdout, lat_rows, bw_rows)
        rows = j["latency"] + j["bandwidth"]
        if j["params"]["duration_s"] != 1 or rows[0]["iterations"] < 5:
            fail("%s -D 1: %s" % (name, rows[0]))
    p = run([entry(exe, "kbv_send_lat"), "--loopback", "-D", "1"])
    if p.returncode != 0 or "#iterations       t_avg[usec]    tps average" not in p.stdout:
        fail("kbv_send_lat -D 1: no duration table")


def listening(port):
    """True when some socket listens on TCP `port` (state 0A in /proc/net/tcp, tcp6):
    perftest's server takes the first connection as its client, so no probe."""
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


def client_of_pair(server_cmd, client_cmd, port):
    """Runs a server and then its client; returns the client's stdout."""
    server = subprocess.Popen(WRAPPER + server_cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        end = time.monotonic() + TIMEOUT
        while not listening(port):
            if server.poll() is not None or time.monotonic() > end:
                fail("%s did not listen on port %d" % (server_cmd[:2], port))
            time.sleep(0.02)  # polls a condition (the listening socket), bounded by `end`
        client = run(client_cmd)
        server.communicate(timeout=TIMEOUT)
        if client.returncode != 0 or server.returncode != 0:
            fail("%s: client %d, server %d" % (client_cmd[:2], client.returncode,
                                               server.returncode))
        return client.stdout
    finally:
        if server.poll() is None:
            server.kill()


def layout(text):
    """perftest's output from the banner to the table heading, with the
    values (numbers, device names, ON/OFF) replaced: what must be the same."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("-----"))
    end = next(i for i, l in enumerate(lines) if l.startswith(" #bytes"))
    out = []
    for l in lines[start:end + 1]:
        l = re.sub(r"(Device\s+: )\S+", r"\1DEV", l)
        l = re.sub(r"(PCIe relax order|ibv_wr\* API)(\s*): \S+", r"\1\2: X", l)
        out.append(re.sub(r"0x[0-9a-f]+|\d+", "N", l))
    return out


def check_perf_layout(exe):
    """kbv_write_lat/_bw print what Debian's ib_write_lat/_bw (perftest 4.5)
    print, run through kbv-run on model HCAs: the banner, the address lines
    and the table heading, line for line, the values aside."""
    kbv_run = os.path.join(os.path.dirname(exe), "kbv-run")
    for test, args in (("write_lat", ["-s", "64", "-n", "20"]),
                       ("write_bw", ["-s", "64", "-n", "20"]),
                       ("send_bw", ["-s", "64", "-n", "20", "-q", "2"])):
        ib = "/usr/bin/ib_" + test
        if not os.access(ib, os.X_OK):
            fail(ib + " missing (Debian package perftest)")
        port = free_port()
        theirs = client_of_pair([kbv_run, ib, "-p", str(port)] + args,
                                [kbv_run, ib, "-p", str(port), "127.0.0.1"] + args, port)
        port = free_port()
        ours = client_of_pair([entry(exe, "kbv_" + test), "-p", str(port)],
                              [entry(exe, "kbv_" + test), "-p", str(port), "127.0.0.1",
                               "--no-progress"] + args, port)
        a, b = layout(theirs), layout(ours)
        if a != b:
            fail("%s: the layout differs from ib_%s:\n%s" % (test, test, "\n".join(
                "%s %r\n  %r" % ("==" if x == y else "!=", x, y) for x, y in zip(a, b))))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_perf_usage(exe):
    """Range checks, refusals and the multi-call binary."""
    for args, expect in [(["-s", "-5"], "-s (message size): -5 is out of range"),
                         (["-n", "0"], "-n (iterations): 0 is out of range"),
                         (["-T", "write"], "-T (ToS): 'write' is not a number"),
                         (["-m", "1000"], "-m (MTU): 1000 is not one of"),
                         (["-c", "UD"], "UD connection only possible in SEND verb")]:
        p = run([entry(exe, "kbv_write_lat"), "--loopback"] + args)
        if p.returncode != 2:
            fail("%s: exit %d, expected 2" % (args, p.returncode))
        if expect not in one_stderr_line(p, " ".join(args)):
            fail("%s: message lacks %r" % (args, expect))
    # A bad URI: one clear line naming it, not a second about the exchange.
    p = run([entry(exe, "kbv_write_lat"), "--loopback", "-d", "nosuch:dev", "-n", "5"])
    if p.returncode != 1:
        fail("bad URI: exit %d" % p.returncode)
    line = one_stderr_line(p, "bad URI")
    if "nosuch:dev" not in line or "exchange" in line:
        fail("bad URI message: " + line)
    p = run([entry(exe, "kbv_write_lat"), "--loopback", "--peer-dev", "nosuch:peer", "-n", "5"])
    line = one_stderr_line(p, "bad peer URI")
    if p.returncode != 1 or "nosuch:peer" not in line:
        fail("bad peer URI: exit %d, %s" % (p.returncode, line))
    # Run as kbv-perf, the test is the first argument; without one, a usage error.
    p = run([exe, "read_lat", "--loopback", "--json", "-n", "20"])
    if p.returncode != 0:
        fail("kbv-perf read_lat exited %d" % p.returncode)
    if check_perf_json(p.stdout, 1, 0)["test"] != "read":
        fail("kbv-perf read_lat did not run a read test")
    p = run([exe, "--loopback"])
    if p.returncode != 2 or "kbv_write_lat" not in p.stderr:
        fail("kbv-perf without a test: exit %d, %r" % (p.returncode, p.stderr))


def check_perf_outputs(exe, tmp):
    """--out_json, --raw, --plot (SVG and PNG) and -H."""
    js, raw, svg, png = (os.path.join(tmp, f) for f in ("r.json", "raw.txt", "lat.svg", "bw.png"))
    p = run([entry(exe, "kbv_write_lat"), "--loopback", "-a", "--max-size", "8", "-n", "40",
             "-H", "--out_json", "--out_json_file", js, "--raw", raw, "--plot", svg])
    if p.returncode != 0:
        fail("kbv_write_lat with outputs exited %d" % p.returncode)
    with open(js) as f:
        check_perf_json(f.read(), 3, 0)
    with open(raw) as f:
        rows = [l.split() for l in f if not l.startswith("#")]
    if len(rows) != 3 * 39 or any(len(r) != 3 or float(r[2]) <= 0 for r in rows):
        fail("--raw: expected 3 sizes x 39 samples of 'bytes iteration usec'")
    with open(svg, "rb") as f:
        head = f.read(400)
    if b"<svg" not in head:
        fail("--plot .svg is not SVG: %r" % head[:80])
    if p.stdout.count("#, usec") != 3 or "\n37, " not in p.stdout:
        fail("-H: no sample list per size (39 samples, 2 dropped)")
    p = run([entry(exe, "kbv_write_bw"), "--loopback", "-a", "--max-size", "64", "-n", "20",
             "-q", "2", "--plot", png, "--report_gbits", "--raw", raw])
    if p.returncode != 0:
        fail("kbv_write_bw --plot exited %d" % p.returncode)
    with open(raw) as f:
        rows = [[float(x) for x in l.split()] for l in f if not l.startswith("#")]
    # 6 sizes x 20 iterations x 2 QPs, each completed after it was posted.
    if len(rows) != 6 * 40 or any(len(r) != 4 or r[3] < r[2] for r in rows):
        fail("--raw (bandwidth): expected 240 lines of 'bytes wr posted completed'")
    with open(png, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            fail("--plot .png is not PNG")
    if "BW average[Gb/sec]" not in p.stdout:
        fail("--report_gbits: no Gb/sec column")
    bad = run([entry(exe, "kbv_write_lat"), "--loopback", "-n", "10", "--plot",
               os.path.join(tmp, "x.gif")])
    if bad.returncode == 0 or ".svg or .png" not in bad.stderr:
        fail("--plot x.gif accepted")


def start_server(exe, name="kbv_write_lat"):
    """Starts `kbv_write_lat -p 0` (perftest: no host = server); returns
    (process, the TCP port it chose)."""
    server = subprocess.Popen(WRAPPER + [entry(exe, name), "-p", "0"], stdout=subprocess.PIPE,
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
        client = run([entry(exe, "kbv_write_lat"), "127.0.0.1", "-p", port, "--json", "-a",
                      "--max-size", "1024", "-n", "50"])
        out, err = server.communicate(timeout=TIMEOUT)
        sys.stdout.write(out)
        sys.stderr.write(err)
        if client.returncode != 0:
            fail("client exited %d" % client.returncode)
        if server.returncode != 0:
            fail("server exited %d" % server.returncode)
        j = check_perf_json(client.stdout, 10, 0)
        if len(j["device_stats"]) != 2:
            fail("two processes: expected the server's statistics too")
        if "verified" not in out:
            fail("the server did not report its checks")
        # The text tables, as perftest prints them.
        server, port = start_server(exe, "kbv_write_bw")
        text = run([entry(exe, "kbv_write_bw"), "127.0.0.1", "-p", port, "-s", "64", "-n", "50"])
        sout, _ = server.communicate(timeout=TIMEOUT)
        if text.returncode != 0:
            fail("text client exited %d" % text.returncode)
        # perftest's layout: banner, address lines, table.
        for h in ["RDMA_Write BW Test", " Number of qps   : 1", " local address: LID 0000 QPN 0x",
                  " remote address: LID 0000 QPN 0x", " GID: 00:00:", "BW peak[MB/sec]",
                  "BW average[MB/sec]", "MsgRate[Mpps]", "Data verified"]:
            if h not in text.stdout:
                fail("text output lacks " + h)
        if "RDMA_Write BW Test" not in sout or " local address: " not in sout:
            fail("the server did not print perftest's banner and addresses")
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
    elif mode == "perf_many_qps":
        check_many_qps(sys.argv[2])
    elif mode == "perf_layout":
        check_perf_layout(sys.argv[2])
    elif mode == "perf_duration":
        check_perf_duration(sys.argv[2])
    elif mode == "perf_usage":
        check_perf_usage(sys.argv[2])
    elif mode == "perf_outputs":
        with tempfile.TemporaryDirectory() as tmp:
            check_perf_outputs(sys.argv[2], tmp)
    elif mode == "example":
        check_example(sys.argv[2])
    else:
        fail("unknown mode " + mode)
    print("PASS")


if __name__ == "__main__":
    main()
