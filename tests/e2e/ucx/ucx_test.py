#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# UCX 1.13 and Open MPI 4.1 from Debian on kbv (issue 12), through `kbv-run`
# (tools/kbv-run.in: kbv's libibverbs first on the library path, the sysfs
# view of src/ibverbs/sysfs_view preloaded, one model HCA per process):
#
#   ucx_test.py KBV_RUN info                  ucx_info -d lists mlx5_0 with rc_verbs, ud_verbs
#   ucx_test.py KBV_RUN sysfs                 the sysfs view agrees with libibverbs
#   ucx_test.py KBV_RUN perftest TLS TEST     ucx_perftest server + client
#   ucx_test.py KBV_RUN mpi NP MPI_PINGPONG   mpirun -np NP mpi_pingpong (pml ucx)
#   ucx_test.py KBV_RUN mpi-no-hca MPI_PINGPONG   no rank can create its model HCA
#   ucx_test.py KBV_RUN mpi-peer-dies MPI_PINGPONG  a rank is killed mid-run
#
# TLS is rc (UCX_TLS=rc_v,self: rc_verbs, ud_verbs for wire-up only; UCT
# tests -x rc_verbs) or ud (UCX_TLS=ud_v,self; UCT tests -x ud_verbs).
# ucx_perftest checks no data; mpi_pingpong checks every byte it receives.
# Two-process cases start the server once its TCP port is free and the client
# once the server listens (/proc/net/tcp); every wait has a deadline, a
# process still running when a case ends is killed (its process group, for
# mpirun's ranks).
import ctypes
import errno
import os
import re
import signal
import socket
import subprocess
import sys
import time

DEADLINE = 90.0  # seconds for a whole case on a loaded 2-core machine


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def show(tag, text):
    for line in (text or "").splitlines():
        print("[%s] %s" % (tag, line))


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


def start(cmd, env=None):
    print("$ " + " ".join(cmd))
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)


def kill_group(p):
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.wait()


def finish(procs, end):
    """Waits for every (name, Popen) until `end`; kills all on expiry. Returns outputs."""
    outs = {}
    try:
        for name, p in procs:
            try:
                outs[name], _ = p.communicate(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                for _, q in procs:
                    kill_group(q)
                for n, q in procs:
                    show(n, q.communicate()[0] if n not in outs else outs[n])
                fail("%s did not finish within %.0f s" % (name, DEADLINE))
    finally:
        for _, p in procs:
            kill_group(p)
    for name, p in procs:
        show(name, outs[name])
    return outs


def run_one(kbv_run, args, env=None):
    end = time.monotonic() + DEADLINE
    p = start([kbv_run] + args, env)
    out = finish([(args[0], p)], end)[args[0]]
    if p.returncode != 0:
        fail("%s exited %d" % (" ".join(args), p.returncode))
    return out


def check_info(kbv_run):
    env = dict(os.environ, UCX_LOG_LEVEL="debug")
    out = run_one(kbv_run, ["ucx_info", "-d"], env)
    md = re.search(r"# Memory domain: (mlx5_\d+)\n(.*?)(?=# Memory domain:|\Z)", out, re.S)
    if not md:
        fail("ucx_info -d lists no kbv device (Memory domain: mlx5_<i>)")
    dev = md.group(1)
    for tl in ("rc_verbs", "ud_verbs"):
        if not re.search(r"Transport: %s\n#\s+Device: %s:1\n" % (tl, dev), md.group(2)):
            fail("ucx_info -d: no %s on %s:1" % (tl, dev))
    # UCX found the device's PCI function and GID through the sysfs view.
    for want in (r"%s: PF sysfs path is '/sys/devices/virtual/kbv/sim:0'" % dev,
                 r"%s: vendor_id 0x15b3" % dev, r"%s:1 using gid_index 0" % dev,
                 r"RoCE LAG level on %s:1 \(lo\)" % dev):
        if not re.search(want, out):
            fail("ucx_info's debug log lacks %r" % want)
    print("PASS: ucx_info -d lists %s with rc_verbs and ud_verbs" % dev)


def sysfs_child():
    """Under kbv-run: the view's files against kbv's libibverbs (ctypes)."""
    ib = ctypes.CDLL("libibverbs.so.1", use_errno=True)
    ib.ibv_get_device_list.restype = ctypes.POINTER(ctypes.c_void_p)
    ib.ibv_get_device_name.restype = ctypes.c_char_p
    ib.ibv_get_device_name.argtypes = [ctypes.c_void_p]
    ib.ibv_open_device.restype = ctypes.c_void_p
    ib.ibv_open_device.argtypes = [ctypes.c_void_p]
    ib.ibv_close_device.argtypes = [ctypes.c_void_p]
    ib.ibv_query_device.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    ib.ibv_query_port.argtypes = [ctypes.c_void_p, ctypes.c_uint8, ctypes.c_void_p]
    ib._ibv_query_gid_ex.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32,
                                     ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t]
    n = ctypes.c_int(0)
    devs = ib.ibv_get_device_list(ctypes.byref(n))
    if not devs or n.value < 1:
        fail("no device listed")
    name = ib.ibv_get_device_name(devs[0]).decode()
    ctx = ib.ibv_open_device(devs[0])
    if not ctx:
        fail("ibv_open_device failed")
    base = "/sys/class/infiniband/%s" % name

    def read(rel):
        with open(os.path.join(base, rel)) as f:
            return f.read()

    attr = ctypes.create_string_buffer(512)
    if ib.ibv_query_device(ctx, attr) != 0:
        fail("ibv_query_device failed")
    vendor, part = int.from_bytes(attr.raw[96:100], "little"), int.from_bytes(attr.raw[100:104], "little")
    if int(read("device/vendor"), 16) != vendor or int(read("device/device"), 16) != part:
        fail("device/vendor, device/device %r %r vs ibv_query_device 0x%x %d" %
             (read("device/vendor"), read("device/device"), vendor, part))
    if read("device/numa_node") != "-1\n" or not re.fullmatch(r"[0-9a-f,]+\n", read("device/local_cpus")):
        fail("numa_node %r local_cpus %r" % (read("device/numa_node"), read("device/local_cpus")))
    if read("device/current_link_width") != "16\n" or read("device/current_link_speed") != "8.0 GT/s PCIe\n":
        fail("link files %r %r" % (read("device/current_link_width"), read("device/current_link_speed")))
    port = ctypes.create_string_buffer(256)
    if ib.ibv_query_port(ctx, 1, port) != 0:
        fail("ibv_query_port failed")
    tbl_len = int.from_bytes(port.raw[12:16], "little")
    if read("ports/1/link_layer") != "Ethernet\n":
        fail("ports/1/link_layer %r" % read("ports/1/link_layer"))
    valid = 0
    for i in range(min(tbl_len, 8)):
        entry = ctypes.create_string_buffer(32)
        rc = ib._ibv_query_gid_ex(ctx, 1, i, entry, 0, 32)
        gid = entry.raw[:16]
        if rc == 0:
            valid += 1
            gtype = int.from_bytes(entry.raw[24:28], "little")
            ndev = socket.if_indextoname(int.from_bytes(entry.raw[28:32], "little"))
            want_type = "RoCE v2\n" if gtype == 2 else "IB/RoCE v1\n"  # IBV_GID_TYPE_ROCE_V2
            if read("ports/1/gid_attrs/types/%d" % i) != want_type:
                fail("types/%d %r, libibverbs says %r" % (i, read("ports/1/gid_attrs/types/%d" % i), want_type))
            if read("ports/1/gid_attrs/ndevs/%d" % i) != ndev + "\n":
                fail("ndevs/%d %r, libibverbs says %r" % (i, read("ports/1/gid_attrs/ndevs/%d" % i), ndev))
            want_gid = ":".join(gid[k:k + 2].hex() for k in range(0, 16, 2)) + "\n"
            if read("ports/1/gids/%d" % i) != want_gid:
                fail("gids/%d %r, libibverbs says %r" % (i, read("ports/1/gids/%d" % i), want_gid))
        elif rc == errno.ENODATA:
            try:
                read("ports/1/gid_attrs/types/%d" % i)
                fail("types/%d of an empty entry read without error" % i)
            except OSError as e:
                if e.errno != errno.EINVAL:
                    fail("types/%d of an empty entry: %s, expected EINVAL" % (i, e))
        else:
            fail("_ibv_query_gid_ex(%d) = %d" % (i, rc))
    if valid == 0:
        fail("no valid GID")
    if os.path.exists(os.path.join(base, "ports/1/gid_attrs/types/%d" % tbl_len)):
        fail("types/%d exists past gid_tbl_len" % tbl_len)
    import stat
    st = os.stat("/dev/infiniband/uverbs0")
    if not stat.S_ISCHR(st.st_mode) or not os.access("/dev/infiniband/uverbs0", os.R_OK | os.W_OK):
        fail("/dev/infiniband/uverbs0 is not an accessible character device")
    if not stat.S_ISLNK(os.lstat(base).st_mode) or not stat.S_ISDIR(os.stat(base).st_mode):
        fail("%s is not a symlink to a directory" % base)
    target = os.readlink(base)
    if os.path.basename(target) != name or os.readlink(base + "/device") != os.path.dirname(os.path.dirname(target)):
        fail("links: %s -> %s, device -> %s" % (base, target, os.readlink(base + "/device")))
    if os.path.exists("/sys/class/infiniband/mlx5_%d" % n.value):
        fail("a device past the list exists")
    ib.ibv_close_device(ctx)
    print("PASS: %s: device ids, locality, link, %d GIDs (of %d) as libibverbs reports them" %
          (name, valid, tbl_len))


def check_sysfs(kbv_run):
    out = run_one(kbv_run, [sys.executable, os.path.abspath(__file__), "-", "sysfs-child"])
    if "PASS:" not in out:
        fail("the child reported nothing")


def perftest_env(tls):
    env = dict(os.environ)
    env["UCX_TLS"] = {"rc": "rc_v,self", "ud": "ud_v,self"}[tls]
    return env


def check_perftest(kbv_run, tls, test):
    uct = not test.startswith(("tag_", "ucp_"))
    port = free_tcp_port()
    sizes = {"tag_bw": ["-s", "65536", "-n", "300"], "put_bw": ["-s", "65536", "-n", "300"]}
    args = ["ucx_perftest", "127.0.0.1", "-p", str(port), "-t", test, "-w", "50"]
    args += sizes.get(test, ["-n", "1000"])
    if uct:
        args += ["-x", {"rc": "rc_verbs", "ud": "ud_verbs"}[tls], "-d", "mlx5_0:1"]
        if test == "put_bw":
            args += ["-D", "zcopy"]
    env = perftest_env(tls)
    env["UCX_LOG_LEVEL"] = "info"  # UCP prints its endpoint configurations
    tl = {"rc": "rc_verbs", "ud": "ud_verbs"}[tls]
    end = time.monotonic() + DEADLINE
    server = start([kbv_run, "ucx_perftest", "-p", str(port)], env)
    procs = [("server", server)]
    try:
        while not listening(port):
            if server.poll() is not None:
                show("server", server.communicate()[0])
                fail("the server exited %d before listening" % server.returncode)
            if time.monotonic() > end:
                fail("the server did not listen on port %d within the deadline" % port)
            time.sleep(0.02)  # polls a condition (the listening socket), bounded by `end`
        procs.append(("client", start([kbv_run] + args, env)))
    except BaseException:
        for _, p in procs:
            kill_group(p)
        raise
    outs = finish(procs, end)
    for name, p in procs:
        if p.returncode != 0:
            fail("%s exited %d" % (name, p.returncode))
    if not re.search(r"^Final:\s+\d+", outs["client"], re.M):
        fail("the client printed no Final: line")
    if re.search(r"UCX\s+(ERROR|WARN)", outs["client"] + outs["server"]):
        fail("UCX reported an error or warning")
    if not uct:
        # The endpoints to the peer use the transport asked for (UCT tests name it with -x).
        cfgs = re.findall(r"ep_cfg\[\d+\]: (.*)", outs["client"] + outs["server"])
        remote = [c for c in cfgs if "self/" not in c]
        if not remote or any(("%s/mlx5_0:1" % tl) not in c or
                             re.search(r"(?<![a-z_])(tcp|posix|sysv|cma)/", c) for c in remote):
            fail("UCX endpoint configurations: %s (want %s/mlx5_0:1)" % (cfgs, tl))
    print("PASS: ucx_perftest %s over %s" % (test, tl))


def check_mpi(kbv_run, np_, program):
    env = dict(os.environ, UCX_TLS="rc_v,self", UCX_LOG_LEVEL="info")
    args = ["mpirun", "-np", str(np_), "--allow-run-as-root", "--oversubscribe",
            "--mca", "pml", "ucx", "--mca", "btl", "^vader,tcp,openib",
            "-x", "UCX_TLS", "-x", "UCX_LOG_LEVEL", program, "-n", "100", "-m", "1048576"]
    out = run_one(kbv_run, args, env)
    if "mpi_pingpong: all data checked" not in out:
        fail("mpi_pingpong did not report its data checked")
    rows = re.findall(r"^\s+(\d+)\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+$", out, re.M)
    if [int(r) for r in rows] != [8 << k for k in range(18)]:
        fail("the ping-pong table lacks sizes 8 B .. 1 MiB: %s" % rows)
    # Every rank's endpoints to its peers use rc_verbs on its own kbv device.
    cfgs = re.findall(r"ep_cfg\[\d+\]: tag\(([^)]*)\)", out)
    remote = [c for c in cfgs if "self/" not in c]
    if len(remote) < np_ or any(c != "rc_verbs/mlx5_0:1" for c in remote):
        fail("UCX endpoint configurations: %s (want rc_verbs/mlx5_0:1 for every rank)" % cfgs)
    print("PASS: mpirun -np %d mpi_pingpong over rc_verbs, data checked" % np_)


MPI_ARGS = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "pml", "ucx",
            "--mca", "btl", "^vader,tcp,openib", "-x", "UCX_TLS"]
BAD_DEADLINE = 30.0  # a failing job must end within this (seconds), never hang


def leftovers(before_shm, session_pid):
    """What a finished job left behind: /dev/shm entries, Open MPI's session directory."""
    left = sorted(set(os.listdir("/dev/shm")) - before_shm)
    tmp = os.environ.get("TMPDIR", "/tmp")
    for d in os.listdir(tmp):
        if d.startswith("ompi.") and os.path.exists(os.path.join(tmp, d, "pid.%d" % session_pid)):
            left.append(os.path.join(tmp, d, "pid.%d" % session_pid))
    return left


def run_bad(kbv_run, args, env, act=None):
    """Runs a job that must fail: non-zero exit within BAD_DEADLINE, nothing left
    behind. `act(proc)` runs while the job does. Returns the output."""
    before = set(os.listdir("/dev/shm"))
    t0 = time.monotonic()
    p = start([kbv_run] + args, env)
    try:
        if act:
            act(p)
        out, _ = p.communicate(timeout=BAD_DEADLINE)
    except subprocess.TimeoutExpired:
        kill_group(p)
        show("mpirun", p.communicate()[0])
        fail("the job did not end within %.0f s" % BAD_DEADLINE)
    finally:
        if p.poll() is None:
            kill_group(p)
    took = time.monotonic() - t0
    show("mpirun", out)
    if p.returncode == 0:
        fail("the job exited 0")
    try:  # every process of the job's session has gone
        os.killpg(p.pid, 0)
        kill_group(p)
        fail("processes of the job were still running after mpirun exited")
    except ProcessLookupError:
        pass
    left = leftovers(before, p.pid)
    if left:
        fail("left behind: %s" % left)
    print("the job failed (exit %d) after %.1f s, nothing left behind" % (p.returncode, took))
    return out


def check_mpi_no_hca(kbv_run, program):
    """Every model port address 127.0.0.1..199:4791 is taken: no rank can create
    its model HCA. The job fails at MPI_Init, kbv saying why."""
    held = {}
    end = time.monotonic() + 10
    while len(held) < 199 and time.monotonic() < end:
        for n in range(1, 200):
            if n in held:
                continue
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                s.bind(("127.0.0.%d" % n, 4791))
                held[n] = s
            except OSError:
                s.close()
        if len(held) < 199:
            time.sleep(0.1)  # another process's model holds the rest; bounded by `end`
    if len(held) < 199:
        print("SKIP: other processes keep model ports: %d of 199 held" % len(held))
        sys.exit(77)
    try:
        env = dict(os.environ, UCX_TLS="rc_v,self")
        out = run_bad(kbv_run, MPI_ARGS + ["-np", "2", program, "-n", "10"], env)
    finally:
        for s in held.values():
            s.close()
    for want in ("the model HCA cannot be created", "no free 127.0.0.N",
                 "PML ucx cannot be selected"):
        if want not in out:
            fail("the job's output does not say %r" % want)
    print("PASS: no model HCA: the job fails at MPI_Init with kbv's reason")


def ranks_of(mpirun_pid, program):
    """Pids of `program` processes below mpirun (children or grandchildren)."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            st = open("/proc/%s/stat" % d).read()
        except OSError:
            continue
        comm_end = st.rindex(")")
        kids[int(d)] = (int(st[comm_end + 2:].split()[1]), st[st.index("(") + 1:comm_end])
    below = {mpirun_pid}
    for _ in range(4):
        below |= {pid for pid, (ppid, _) in kids.items() if ppid in below}
    return sorted(pid for pid in below if kids.get(pid, (0, ""))[1] == os.path.basename(program)[:15])


def check_mpi_peer_dies(kbv_run, program):
    """Rank 1 is killed (SIGKILL) during the ping-pong: the job ends within
    seconds with Open MPI naming the dead rank, nothing left behind."""
    env = dict(os.environ, UCX_TLS="rc_v,self")

    def kill_rank(p):
        end = time.monotonic() + DEADLINE
        line = ""
        while "# ping-pong" not in line:  # rank 0 prints it once MPI_Init is done
            line = p.stdout.readline()
            if not line or time.monotonic() > end:
                fail("mpi_pingpong did not start its ping-pong")
            print("[mpirun] " + line.rstrip())
        ranks = ranks_of(p.pid, program)
        if len(ranks) != 2:
            fail("found ranks %s" % ranks)
        os.kill(ranks[1], signal.SIGKILL)
        print("killed rank pid %d" % ranks[1])

    out = run_bad(kbv_run, MPI_ARGS + ["-np", "2", program, "-n", "100000000", "-m", "8"], env,
                  kill_rank)
    if not re.search(r"exited on signal 9|Killed", out):
        fail("mpirun does not say a rank was killed")
    print("PASS: a rank killed mid-run ends the job")


def main():
    if len(sys.argv) >= 3 and sys.argv[2] == "sysfs-child":
        sysfs_child()
        return
    if len(sys.argv) < 3:
        fail("usage: ucx_test.py KBV_RUN info|sysfs|perftest TLS TEST|mpi NP PROGRAM")
    kbv_run, case = sys.argv[1], sys.argv[2]
    if case == "info":
        check_info(kbv_run)
    elif case == "sysfs":
        check_sysfs(kbv_run)
    elif case == "perftest":
        check_perftest(kbv_run, sys.argv[3], sys.argv[4])
    elif case == "mpi":
        check_mpi(kbv_run, int(sys.argv[3]), sys.argv[4])
    elif case == "mpi-no-hca":
        check_mpi_no_hca(kbv_run, sys.argv[3])
    elif case == "mpi-peer-dies":
        check_mpi_peer_dies(kbv_run, sys.argv[3])
    else:
        fail("unknown case " + case)


if __name__ == "__main__":
    main()
