#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# Unmodified Debian libibverbs programs (ibverbs-utils, perftest) on kbv,
# through `kbv-run` (tools/kbv-run.in), run by meson (tests/e2e/ibverbs):
#
#   programs_test.py KBV_RUN kbv-run          kbv-run itself: library path, model HCA
#   programs_test.py KBV_RUN devices          ibv_devices
#   programs_test.py KBV_RUN devinfo          ibv_devinfo and ibv_devinfo -v
#   programs_test.py KBV_RUN pingpong rc|uc|ud|rc-ts   (rc-ts: ibv_rc_pingpong -t, completion timestamps)
#   programs_test.py KBV_RUN perftest PROGRAM [FLAGS...]
#   programs_test.py KBV_RUN ud-qp-mismatch   ib_send_bw -c UD, -q 4 against -q 2
#
# Two-process cases start a server and a client, each through kbv-run and so
# each with its own model HCA (its own 127.0.0.N). The server gets a free TCP
# port; the client starts once the server listens on it (seen in
# /proc/net/tcp{,6}); every wait has a deadline, and a process still running
# when the case ends is killed. A case passes when both sides exit 0 and the
# figures the program exists to print are there (pingpong's bytes/iters
# lines, perftest's table rows). pingpong runs with -c, its own check of the
# received data (rdma-core 44 examples: the server compares the first byte of
# every page of the buffer, which both sides set to 0, and prints "invalid
# data in page N" without failing; the test fails on that line. A weak
# check, the only one these programs have).
import os
import re
import socket
import subprocess
import sys
import time

# Seconds for a whole two-process case on a loaded 2-core machine: a bound
# against hangs, not a synchronisation. A size sweep (-a) runs 23 sizes, and
# perftest samples the CPU clock by busy-waiting about 0.2 s twice per size
# in each process (get_clock.c sample_get_cpu_mhz, from run_iter_lat_* and
# the report): it gets a longer bound.
DEADLINE = 90.0
DEADLINE_SWEEP = 240.0


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def free_tcp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    """True when some socket listens on TCP `port` (state 0A in /proc/net/tcp, tcp6)."""
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


def show(tag, text):
    for line in text.splitlines():
        print("[%s] %s" % (tag, line))


def run_one(kbv_run, args, deadline=DEADLINE):
    cmd = [kbv_run] + args
    print("$ " + " ".join(cmd))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=deadline)
    except subprocess.TimeoutExpired as e:
        show("out", e.stdout or "")
        fail("%s did not finish within %.0f s" % (args[0], deadline))
    show("out", p.stdout)
    show("err", p.stderr)
    if p.returncode != 0:
        fail("%s exited %d" % (" ".join(args), p.returncode))
    return p.stdout


def run_pair(kbv_run, server_args, client_args, deadline=DEADLINE, check=True):
    """Runs server and client; returns (server stdout+stderr, client stdout+stderr).
    With check=False, returns (server, client) Popen objects with .out set instead of
    failing on a non-zero exit."""
    end = time.monotonic() + deadline
    procs = []
    try:
        print("$ " + " ".join([kbv_run] + server_args))
        server = subprocess.Popen([kbv_run] + server_args, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        procs.append(server)
        port = int(server_args[server_args.index("-p") + 1])
        while not listening(port):
            if server.poll() is not None:
                out = server.stdout.read()
                show("server", out)
                fail("the server exited %d before listening on port %d" %
                     (server.returncode, port))
            if time.monotonic() > end:
                fail("the server did not listen on port %d within the deadline" % port)
            time.sleep(0.02)  # polls a condition (the listening socket), bounded by `end`
        print("$ " + " ".join([kbv_run] + client_args))
        client = subprocess.Popen([kbv_run] + client_args, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        procs.append(client)
        outs = {}
        for name, p in (("client", client), ("server", server)):
            try:
                outs[name], _ = p.communicate(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                for n, q in (("client", client), ("server", server)):
                    out, _ = q.communicate()
                    show(n, out)
                fail("the %s did not finish within %.0f s" % (name, deadline))
            if check and name == "client" and client.returncode != 0 and server.poll() is None:
                # A server whose client failed waits for it forever: stop it
                # now rather than at the deadline.
                server.kill()
        show("server", outs["server"])
        show("client", outs["client"])
        if not check:
            server.out, client.out = outs["server"], outs["client"]
            return server, client
        if client.returncode != 0 or server.returncode != 0:
            fail("client exited %d, server exited %d" % (client.returncode, server.returncode))
        return outs["server"], outs["client"]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def roce_v2_gid_index(kbv_run):
    """The GID index of the first RoCE v2 GID on port 1, as ibv_devinfo -v shows it."""
    out = run_one(kbv_run, ["ibv_devinfo", "-v", "-i", "1"])
    m = re.search(r"GID\[\s*(\d+)\]:\s+\S+, RoCE v2", out)
    if not m:
        fail("ibv_devinfo -v lists no RoCE v2 GID")
    return m.group(1)


def check_kbv_run(kbv_run):
    """kbv-run's environment, exit status and the libraries a perftest binary resolves."""
    p = subprocess.run([kbv_run], capture_output=True, text=True, timeout=DEADLINE)
    if p.returncode != 2 or "usage: kbv-run" not in p.stderr:
        fail("kbv-run without a program: exit %d, %r" % (p.returncode, p.stderr))
    env = dict(os.environ)
    env.pop("KBV_SIM_DEVICES", None)
    env["LD_LIBRARY_PATH"] = "/nonexistent"
    p = subprocess.run([kbv_run, "env"], capture_output=True, text=True, timeout=DEADLINE, env=env)
    got = dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)
    path = got.get("LD_LIBRARY_PATH", "").split(":")
    ibverbs_dir = path[0]
    if not os.path.exists(os.path.join(ibverbs_dir, "libibverbs.so.1")) or path[-1] != "/nonexistent":
        fail("LD_LIBRARY_PATH should start with kbv's libibverbs directory and keep the "
             "caller's at the end: %s" % got.get("LD_LIBRARY_PATH"))
    vfio = any(open(os.path.join(d, "vendor")).read().strip() == "0x15b3" and
               os.path.basename(os.path.realpath(os.path.join(d, "driver"))) == "vfio-pci"
               for d in (os.path.join("/sys/bus/pci/devices", x)
                         for x in os.listdir("/sys/bus/pci/devices"))
               if os.path.exists(os.path.join(d, "driver")))
    if not vfio and got.get("KBV_SIM_DEVICES") != "0":
        fail("no ConnectX on vfio-pci: KBV_SIM_DEVICES should be 0 (one model HCA), is %r" %
             got.get("KBV_SIM_DEVICES"))
    env["KBV_SIM_DEVICES"] = "a,b"
    p = subprocess.run([kbv_run, "env"], capture_output=True, text=True, timeout=DEADLINE, env=env)
    if "KBV_SIM_DEVICES=a,b" not in p.stdout.splitlines():
        fail("kbv-run changed a KBV_SIM_DEVICES the caller set")
    p = subprocess.run([kbv_run, "sh", "-c", "exit 7"], timeout=DEADLINE)
    if p.returncode != 7:
        fail("kbv-run should exit with the program's status (7), exited %d" % p.returncode)
    # The loader resolves every RDMA library perftest links to kbv's directory.
    out = run_one(kbv_run, ["ldd", "/usr/bin/ib_write_lat"])
    for lib in ("libibverbs.so.1", "libmlx5.so.1", "libefa.so.1"):
        m = re.search(r"%s => (\S+)" % re.escape(lib), out)
        if not m or os.path.dirname(m.group(1)) != ibverbs_dir:
            fail("ib_write_lat's %s does not resolve to %s" % (lib, ibverbs_dir))


def check_devices(kbv_run):
    out = run_one(kbv_run, ["ibv_devices"])
    rows = [l for l in out.splitlines() if re.match(r"\s+\S+\s+[0-9a-f]{16}\s*$", l)]
    if "node GUID" not in out or len(rows) != 1:
        fail("ibv_devices should list exactly this process's model HCA with its node GUID")


def check_devinfo(kbv_run):
    out = run_one(kbv_run, ["ibv_devinfo"])
    for field in ["hca_id:", "transport:", "fw_ver:", "node_guid:", "sys_image_guid:",
                  "vendor_id:", "vendor_part_id:", "phys_port_cnt:", "port:", "max_mtu:",
                  "active_mtu:", "link_layer:"]:
        if field not in out:
            fail("ibv_devinfo lacks " + field)
    if not re.search(r"state:\s+PORT_ACTIVE", out):
        fail("the model's port is not shown active")
    if not re.search(r"link_layer:\s+Ethernet", out):
        fail("the port's link layer is not Ethernet")
    v = run_one(kbv_run, ["ibv_devinfo", "-v"])
    for field in ["max_qp:", "max_qp_wr:", "max_cqe:", "max_mr_size:", "device_cap_flags:",
                  "max_srq:", "max_pkeys:", "phys_state:", "active_speed:", "GID["]:
        if field not in v:
            fail("ibv_devinfo -v lacks " + field)
    if not re.search(r"GID\[\s*\d+\]:\s+::ffff:127\.0\.0\.\d+, RoCE v2", v):
        fail("ibv_devinfo -v shows no RoCE v2 GID ::ffff:127.0.0.N")


# ibv_*_pingpong: -c checks every received buffer; small -n keeps it short.
PINGPONG = {
    "rc": ["ibv_rc_pingpong", "-n", "200"],
    "uc": ["ibv_uc_pingpong", "-n", "200"],
    "ud": ["ibv_ud_pingpong", "-n", "200"],
    # -t: completion timestamps (ibv_query_device_ex's
    # completion_timestamp_mask, ibv_create_cq_ex with
    # IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, ibv_wc_read_completion_ts); each
    # side prints the max / min / average clock cycles between receive
    # completions.
    "rc-ts": ["ibv_rc_pingpong", "-n", "200", "-t"],
}


def check_pingpong(kbv_run, kind):
    gid = roce_v2_gid_index(kbv_run)
    port = str(free_tcp_port())
    args = PINGPONG[kind] + ["-g", gid, "-c", "-p", port]
    server, client = run_pair(kbv_run, args, args + ["127.0.0.1"])
    if "invalid data" in server:
        fail("the server's -c check found invalid data")
    for side, out in (("server", server), ("client", client)):
        if not re.search(r"remote address:.*GID ::ffff:127\.0\.0\.\d+", out):
            fail("the %s did not print the peer's RoCE v2 GID" % side)
        if not re.search(r"\d+ bytes in [\d.]+ seconds = [\d.]+ Mbit/sec", out):
            fail("the %s printed no bandwidth figure" % side)
        if not re.search(r"\d+ iters in [\d.]+ seconds = [\d.]+ usec/iter", out):
            fail("the %s printed no latency figure" % side)
        if kind == "rc-ts":
            m = re.search(r"Max receive completion clock cycles = (\d+)", out)
            a = re.search(r"Average receive completion clock cycles = ([\d.]+)", out)
            # Timestamps that move: the receives are apart in time.
            if not m or not a or int(m.group(1)) == 0 or float(a.group(1)) <= 0:
                fail("the %s printed no moving completion timestamps" % side)


LAT_HEAD = re.compile(r"#bytes\s+#iterations\s+t_min\[usec\]")
BW_HEAD = re.compile(r"#bytes\s+#iterations\s+BW peak\[MB/sec\]\s+BW average\[MB/sec\]")


def table_rows(out):
    """The numeric rows after the header of perftest's result table."""
    rows = []
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if LAT_HEAD.search(line) or BW_HEAD.search(line):
            for row in lines[i + 1:]:
                f = row.split()
                if not f or not re.fullmatch(r"\d+", f[0]):
                    break
                rows.append(f)
            break
    return rows


def check_perftest(kbv_run, program, flags):
    port = str(free_tcp_port())
    lat = program.endswith("_lat")
    sweep = "-a" in flags
    # perftest's minimum is 5 iterations; a sweep's cost is mostly per size.
    iters = ["-n", "5" if lat else "20"] if sweep else ["-n", "200"]
    args = [program, "-p", port] + iters + flags
    server, client = run_pair(kbv_run, args, args + ["127.0.0.1"],
                              DEADLINE_SWEEP if sweep else DEADLINE)
    rows = table_rows(client)
    if not rows:
        fail("the client printed no result table")
    for f in rows:
        nums = [float(x) for x in f]
        if lat and not (len(nums) >= 9 and 0 < nums[2] <= nums[4] <= nums[3]):
            fail("latency row malformed or out of order (t_min <= t_typical <= t_max): %s" % f)
        # BW is printed with 2 decimals (MB/s): small sizes over few
        # iterations show 0.00; the message rate (6 decimals) is never 0.
        if not lat and not (len(nums) >= 5 and nums[3] >= 0 and nums[4] > 0):
            fail("bandwidth row malformed or message rate not positive: %s" % f)
    if "-a" in flags and len(rows) < 2:
        fail("-a: expected one row per size, got %d" % len(rows))
    print("%d result row(s): %s" % (len(rows), ", ".join(r[0] + " B" for r in rows)))


def check_ud_qp_mismatch(kbv_run):
    """UD pairs QPs 0-0, 1-1, ...: differing -q is a user error that must end
    cleanly, within the deadline and without a crash (ECOSYSTEM.md)."""
    port = str(free_tcp_port())
    base = ["ib_send_bw", "-c", "UD", "-n", "50", "-p", port]
    server, client = run_pair(kbv_run, base + ["-q", "4"], base + ["-q", "2", "127.0.0.1"],
                              check=False)
    for name, p in (("server", server), ("client", client)):
        if p.returncode < 0:
            fail("the %s was killed by signal %d" % (name, -p.returncode))
    if server.returncode == 0:
        fail("the server with 4 QPs, whose client had 2, reported success")


def main():
    kbv_run, mode = sys.argv[1], sys.argv[2]
    if not os.access(kbv_run, os.X_OK):
        fail("kbv-run not found at " + kbv_run)
    if mode == "kbv-run":
        check_kbv_run(kbv_run)
    elif mode == "devices":
        check_devices(kbv_run)
    elif mode == "devinfo":
        check_devinfo(kbv_run)
    elif mode == "pingpong":
        check_pingpong(kbv_run, sys.argv[3])
    elif mode == "ud-qp-mismatch":
        check_ud_qp_mismatch(kbv_run)
    elif mode == "perftest":
        check_perftest(kbv_run, sys.argv[3], sys.argv[4:])
    else:
        fail("unknown mode " + mode)
    print("PASS")


if __name__ == "__main__":
    main()
