#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The model's sysfs and /dev/vfio files read by Python (CPython's os / io
modules: open64, fstat, read, opendir/readdir, scandir, readlink, stat,
lstat, statx-free os.stat, ioctl through fcntl, dup, poll, epoll) under
LD_PRELOAD=libkbv-sim-preload.so KBV_SIM_DEVICES=2, as a new user's script
would. Expects exactly the two model functions fffe:00:01.0 and fffe:00:02.0
(vfio_kernel.hpp: sysfs layout of a function bound to vfio-pci). Exit 0 on
success; each failed check prints a line and makes it 1."""
import errno
import fcntl
import os
import select
import stat
import sys

failures = 0


def check(cond, what):
    global failures
    if not cond:
        print("FAIL:", what, file=sys.stderr)
        failures += 1


def read_attr(bdf, name):
    with open(f"/sys/bus/pci/devices/{bdf}/{name}") as f:
        return f.read()


# linux/vfio.h: VFIO_TYPE ';' (0x3B), VFIO_BASE 100; _IO(type, nr).
VFIO_GET_API_VERSION = (0x3B << 8) | 100
VFIO_CHECK_EXTENSION = (0x3B << 8) | 101
VFIO_API_VERSION = 0
VFIO_TYPE1v2_IOMMU = 3

listed = sorted(e for e in os.listdir("/sys/bus/pci/devices") if e.startswith("fffe:"))
check(listed == ["fffe:00:01.0", "fffe:00:02.0"], f"model functions listed: {listed}")
scanned = sorted(e.name for e in os.scandir("/sys/bus/pci/devices") if e.name.startswith("fffe:"))
check(scanned == listed, f"os.scandir agrees with os.listdir: {scanned}")

for bdf in listed:
    base = f"/sys/bus/pci/devices/{bdf}"
    check(os.path.exists(base) and os.path.isdir(base), f"{base} is a directory")
    check(read_attr(bdf, "vendor") == "0x15b3\n", f"{bdf} vendor")
    check(read_attr(bdf, "device") == "0x1017\n", f"{bdf} device (ConnectX-5)")
    check(read_attr(bdf, "class").startswith("0x02"), f"{bdf} class: network controller")
    check(int(read_attr(bdf, "numa_node")) >= -1, f"{bdf} numa_node")
    check(read_attr(bdf, "subsystem_vendor") == "0x15b3\n", f"{bdf} subsystem_vendor")
    # The config space, binary: vendor and device ids little-endian at 0.
    with open(f"{base}/config", "rb") as f:
        head = f.read(64)
    check(len(head) == 64 and head[0:4] == bytes([0xB3, 0x15, 0x17, 0x10]),
          f"{bdf} config space ids: {head[:4].hex()}")
    st = os.stat(f"{base}/vendor")
    check(stat.S_ISREG(st.st_mode), f"{bdf}/vendor is a regular file")
    # Links: driver -> vfio-pci, iommu_group -> .../iommu_groups/<n>.
    check(os.path.basename(os.readlink(f"{base}/driver")) == "vfio-pci", f"{bdf} driver link")
    check(stat.S_ISLNK(os.lstat(f"{base}/iommu_group").st_mode), f"{bdf} iommu_group is a link")
    group = os.path.basename(os.readlink(f"{base}/iommu_group"))
    check(group.isdigit(), f"{bdf} iommu group {group}")
    members = os.listdir(f"/sys/kernel/iommu_groups/{group}/devices")
    check(members == [bdf], f"group {group} holds {members}")
    real = os.path.realpath(base)
    check(real == f"/sys/devices/pcifffe:00/{bdf}", f"{bdf} realpath {real}")
    dev = os.stat(f"/dev/vfio/{group}")
    check(stat.S_ISCHR(dev.st_mode), f"/dev/vfio/{group} is a character device")
    # Directory descriptors: openat-relative reads, fstat, fdopendir (os.listdir(fd)).
    dfd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        check(stat.S_ISDIR(os.fstat(dfd).st_mode), f"{bdf} directory fd fstat")
        vfd = os.open("vendor", os.O_RDONLY, dir_fd=dfd)
        check(os.read(vfd, 64) == b"0x15b3\n", f"{bdf} vendor through openat(dirfd)")
        os.close(vfd)
        check("vendor" in os.listdir(dfd), f"{bdf} listing through fdopendir")
        check(os.stat("device", dir_fd=dfd).st_size > 0, f"{bdf} fstatat(dirfd)")
    finally:
        os.close(dfd)
    try:
        os.open(f"{base}/vendor", os.O_RDONLY | os.O_DIRECTORY)
        check(False, f"{bdf}/vendor opened as a directory")
    except OSError as e:
        check(e.errno == errno.ENOTDIR, f"{bdf}/vendor O_DIRECTORY: {e}")

# /dev/vfio/vfio: a container; ioctl through fcntl.ioctl; dup keeps it open.
c = os.open("/dev/vfio/vfio", os.O_RDWR)
check(stat.S_ISCHR(os.fstat(c).st_mode), "container fstat: character device")
check(fcntl.ioctl(c, VFIO_GET_API_VERSION) == VFIO_API_VERSION, "VFIO_GET_API_VERSION")
check(fcntl.ioctl(c, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) == 1, "TYPE1v2 supported")
d = os.dup(c)
os.close(c)
check(fcntl.ioctl(d, VFIO_GET_API_VERSION) == VFIO_API_VERSION, "ioctl on a dup after close")
d2 = fcntl.fcntl(d, fcntl.F_DUPFD_CLOEXEC, 100)
check(d2 >= 100 and fcntl.ioctl(d2, VFIO_GET_API_VERSION) == 0, "F_DUPFD_CLOEXEC")
check(fcntl.fcntl(d2, fcntl.F_GETFD) & fcntl.FD_CLOEXEC, "F_DUPFD_CLOEXEC sets close-on-exec")
# Readiness as Linux reports a file without poll: readable and writable for
# poll(2); epoll refuses it (EPERM).
p = select.poll()
p.register(d, select.POLLIN | select.POLLOUT)
ready = dict(p.poll(0))
check(ready.get(d, 0) & select.POLLIN and ready.get(d, 0) & select.POLLOUT,
      f"poll on a container: {ready}")
ep = select.epoll()
try:
    ep.register(d, select.EPOLLIN)
    check(False, "epoll accepted a VFIO descriptor")
except OSError as e:
    check(e.errno == errno.EPERM, f"epoll_ctl: {e}")
ep.close()
os.close(d)
os.close(d2)
try:
    fcntl.ioctl(d, VFIO_GET_API_VERSION)
    check(False, "ioctl on a closed descriptor")
except OSError as e:
    check(e.errno == errno.EBADF, f"closed: {e}")

print("sysfs and /dev/vfio through Python:", "FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
