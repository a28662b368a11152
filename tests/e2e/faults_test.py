#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# Programs on model HCAs under KBV_SIM_FAULTS (src/sim/fault_spec.hpp, README
# "Fault injection"), run by meson (tests/e2e/meson.build, suite 'e2e'):
#   faults_test.py perf     <kbv-perf>     --loopback WRITE, SEND, READ: data verified
#   faults_test.py perf2p   <kbv-perf>     server and client processes: data verified
#   faults_test.py example  <program>      an RC example exits 0 with "ok"
#   faults_test.py badspec  <kbv-perf>     a malformed spec: exit != 0, item named
#   faults_test.py cmdfail  <kbv-perf>     ALLOC_PD failed by the firmware: exit != 0
# Every model in each process logs that the spec is in effect (KBV_LOG_LEVEL
# =info); the case checks that line, so a spec that is silently ignored fails.
import json
import os
import re
import subprocess
import sys

TIMEOUT = 150  # a bound against hangs on a loaded machine, not a synchronisation
# The example: 5% drop, 5% reorder, 1% duplicate, 0.1% corrupt.
WIRE = "drop=0.05,reorder=0.05,dup=0.01,corrupt=0.001,seed=7"

# A cross build runs its programs behind the exe wrapper meson exports
# (MESON_EXE_WRAPPER, e.g. qemu-aarch64; tests/e2e/exe_wrapper.hpp).
WRAPPER = os.environ.get("MESON_EXE_WRAPPER", "").split()


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def env_with(spec):
    e = dict(os.environ)
    e["KBV_SIM_FAULTS"] = spec
    e["KBV_LOG_LEVEL"] = "info"
    return e


def run(cmd, spec):
    print("$ KBV_SIM_FAULTS=%s %s" % (spec, " ".join(cmd)))
    p = subprocess.run(WRAPPER + cmd, capture_output=True, text=True, timeout=TIMEOUT,
                       env=env_with(spec))
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr[-4000:])
    return p


def check_in_effect(err, spec, models):
    n = err.count("KBV_SIM_FAULTS=%s in effect" % spec)
    if n < models:
        fail("expected %d model(s) to say the spec is in effect, saw %d" % (models, n))


def check_verified(stdout):
    try:
        j = json.loads(stdout)
    except json.JSONDecodeError as e:
        fail("kbv-perf --json is not JSON: %s" % e)
    if j.get("verified") is not True:
        fail("data not verified: " + str(j.get("verify_detail")))


def check_perf(exe):
    # kbv-perf <test>: the multi-call binary's first argument names the test.
    for args in (["write_lat", "-a", "--max-size", "16384", "-n", "40"],
                 ["write_bw", "-a", "--max-size", "16384", "-n", "40"],
                 ["send_lat", "-s", "4096", "-n", "100"],
                 ["send_bw", "-s", "4096", "-n", "100"],
                 ["read_bw", "-s", "8192", "-n", "100"]):
        p = run([exe] + args[:1] + ["--loopback", "--json"] + args[1:], WIRE)
        if p.returncode != 0:
            fail("kbv-perf exited %d" % p.returncode)
        check_verified(p.stdout)
        check_in_effect(p.stderr, WIRE, 2)


def check_perf_two_processes(exe):
    server = subprocess.Popen(WRAPPER + [exe, "write_bw", "-p", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env_with(WIRE))
    try:
        port, seen = None, []
        for _ in range(200):  # anything logged before the port line is skipped
            line = server.stderr.readline()
            if not line:
                break
            seen.append(line)
            m = re.search(r"waiting for a client on port (\d+)", line)
            if m:
                port = m.group(1)
                break
        if port is None:
            fail("the server did not say its port: " + "".join(seen))
        client = run([exe, "write_bw", "127.0.0.1", "-p", port, "--json", "-a",
                      "--max-size", "65536", "-n", "40"], WIRE)
        out, err = server.communicate(timeout=TIMEOUT)
        sys.stderr.write(err[-2000:])
        if client.returncode != 0:
            fail("client exited %d" % client.returncode)
        if server.returncode != 0:
            fail("server exited %d" % server.returncode)
        check_verified(client.stdout)
        check_in_effect(client.stderr, WIRE, 1)
        check_in_effect("".join(seen) + err, WIRE, 1)
    finally:
        if server.poll() is None:
            server.kill()


def check_example(exe):
    spec = WIRE + ",cmd_delay_us=500"
    p = run([exe], spec)
    if p.returncode != 0:
        fail("example exited %d" % p.returncode)
    if ": ok" not in p.stdout:
        fail("example did not report ok")
    check_in_effect(p.stderr, spec, 2)


def check_badspec(exe):
    for spec, item in (("drop=0.05,reorder=often", "reorder=often"), ("drop=2", "drop=2"),
                       ("loss=0.1", "loss"), ("drop=0.1,drop=0.2", "twice")):
        p = run([exe, "write_lat", "--loopback", "-n", "10"], spec)
        if p.returncode == 0:
            fail("kbv-perf ran with the malformed spec " + spec)
        if "KBV_SIM_FAULTS" not in p.stderr or item not in p.stderr:
            fail("the error does not name KBV_SIM_FAULTS and %r" % item)


def check_cmdfail(exe):
    spec = "cmd_fail=0x800"  # ALLOC_PD, BAD_PARAM every time
    p = run([exe, "write_lat", "--loopback", "-n", "10"], spec)
    if p.returncode == 0:
        fail("kbv-perf ran although every ALLOC_PD fails")
    if "KBV_ERR_FW_BAD_PARAM" not in p.stderr:
        fail("the firmware's status is not reported")


def main():
    mode, exe = sys.argv[1], sys.argv[2]
    {"perf": check_perf, "perf2p": check_perf_two_processes, "example": check_example,
     "badspec": check_badspec, "cmdfail": check_cmdfail}[mode](exe)
    print("PASS")


if __name__ == "__main__":
    main()
