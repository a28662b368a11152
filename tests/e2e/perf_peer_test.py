#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kbv-perf and its peer (issue 16), each case a separate meson test:

  kill    the server is SIGKILLed while the latency loop runs (seen as the
          client's progress bar being redrawn from inside the loop, on a
          pty): the client exits non-zero within 2 s naming the completion
          error that ended the run and "(peer gone?)".
  bind    `--server --bind 127.0.0.2`: a connection to 127.0.0.1 on that
          port is refused; a client to 127.0.0.2 runs and verifies its data.
  escape  peer-supplied text with terminal escape sequences (a fake server's
          answer to the test parameters; a fake client's parameters) is
          printed escaped (\\x1b...), never as raw control bytes.

Usage: perf_peer_test.py MODE KBV_PERF
"""
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time

TIMEOUT = 120

# A cross build runs its programs behind the exe wrapper meson exports
# (MESON_EXE_WRAPPER, e.g. qemu-aarch64; tests/e2e/exe_wrapper.hpp).
WRAPPER = os.environ.get("MESON_EXE_WRAPPER", "").split()


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def start_server(exe, extra=()):
    server = subprocess.Popen(WRAPPER + [exe, "write_lat", "--server", "-p", "0"] + list(extra),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    for _ in range(50):
        line = server.stderr.readline()
        if not line:
            break
        seen.append(line)
        m = re.search(r"waiting for a client on port (\d+)", line)
        if m:
            return server, m.group(1)
    server.kill()
    fail("the server did not say its port: " + "".join(seen))


def check_kill(exe):
    server, port = start_server(exe)
    master, slave = pty.openpty()
    client = subprocess.Popen(WRAPPER + [exe, "write_lat", "127.0.0.1", "-p", port,
                               "-s", "64", "-n", "2000000"],
                              stdout=slave, stderr=subprocess.PIPE, text=True)
    os.close(slave)
    try:
        # The progress bar is drawn once when the phase starts and again only
        # from inside the latency loop (tools/perf/progress.cpp): the second
        # drawing means both sides are in the loop.
        out = b""
        deadline = time.monotonic() + 60
        while out.count(b"\rlatency 64 B") < 2:
            if time.monotonic() > deadline or client.poll() is not None:
                fail("the client never entered the latency loop: %r" % out[-300:])
            r, _, _ = select.select([master], [], [], 1.0)
            if r:
                try:
                    out += os.read(master, 4096)
                except OSError:
                    break
        server.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        try:
            _, err = client.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            client.kill()
            fail("the client still runs 30 s after the server died")
        took = time.monotonic() - killed
        sys.stderr.write(err)
        print("client exited %d %.2f s after the server's SIGKILL" % (client.returncode, took))
        if client.returncode == 0:
            fail("the client exited 0 after its peer died")
        if "completion error" not in err or "(peer gone?)" not in err:
            fail("the client did not name the completion error: " + err)
        if "no RESULT from the peer" in err:
            fail("the old message: " + err)
        if took > 2.0:
            fail("the client took %.2f s (more than 2 s) to report the peer's death" % took)
    finally:
        for p in (client, server):
            if p.poll() is None:
                p.kill()
        os.close(master)


def check_bind(exe):
    server, port = start_server(exe, ["--bind", "127.0.0.2"])
    try:
        s = socket.socket()
        try:
            s.connect(("127.0.0.1", int(port)))
            fail("a connection to 127.0.0.1:%s was accepted" % port)
        except ConnectionRefusedError:
            pass
        finally:
            s.close()
        client = subprocess.run(
            WRAPPER + [exe, "write_lat", "127.0.0.2", "-p", port, "-s", "64", "-n", "50"],
            capture_output=True, text=True, timeout=TIMEOUT)
        out, err = server.communicate(timeout=TIMEOUT)
        if client.returncode != 0 or server.returncode != 0:
            fail("client %d server %d: %s %s" % (client.returncode, server.returncode,
                                                 client.stderr, err))
        if "Data verified" not in client.stdout:
            fail("no data check: " + client.stdout)
    finally:
        if server.poll() is None:
            server.kill()
    bad = subprocess.run(
        WRAPPER + [exe, "write_lat", "--server", "-p", "0", "--bind", "not-an-address"],
        capture_output=True, text=True, timeout=TIMEOUT)
    if bad.returncode == 0 or "cannot listen on not-an-address" not in bad.stderr:
        fail("a bad --bind address: %d %s" % (bad.returncode, bad.stderr))


EVIL = "\x1b[31mEVIL\x07\x1b]0;title\x07"


def check_escape(exe):
    # A fake server answers the client's test parameters with escape sequences.
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    port = ls.getsockname()[1]

    def fake_server():
        c, _ = ls.accept()
        c.recv(4096)  # PARAMS ...
        c.sendall((EVIL + "\n").encode())
        c.close()

    t = threading.Thread(target=fake_server)
    t.start()
    p = subprocess.run(
        WRAPPER + [exe, "write_lat", "127.0.0.1", "-p", str(port), "-s", "64", "-n", "50"],
        capture_output=True, text=True, timeout=TIMEOUT)
    t.join()
    ls.close()
    sys.stderr.write(p.stderr)
    if p.returncode == 0:
        fail("the client accepted the fake server")
    if "\x1b" in p.stderr or "\x07" in p.stderr:
        fail("raw control bytes from the peer reached stderr: %r" % p.stderr)
    if "\\x1b[31mEVIL\\x07" not in p.stderr:
        fail("the peer's text is not shown escaped: %r" % p.stderr)

    # A fake client sends parameters with escape sequences to a real server.
    server, port = start_server(exe)
    c = socket.create_connection(("127.0.0.1", int(port)))
    c.sendall(("PARAMS " + EVIL + "\n").encode())
    out, err = server.communicate(timeout=TIMEOUT)
    c.close()
    sys.stderr.write(err)
    if server.returncode == 0:
        fail("the server accepted bad parameters")
    if "\x1b" in err or "\x07" in err:
        fail("raw control bytes from the peer reached the server's stderr: %r" % err)
    if "\\x1b[31mEVIL" not in err:
        fail("the server does not show the peer's text escaped: %r" % err)


def main():
    mode, exe = sys.argv[1], sys.argv[2]
    {"kill": check_kill, "bind": check_bind, "escape": check_escape}[mode](exe)
    print("PASS")


if __name__ == "__main__":
    main()
