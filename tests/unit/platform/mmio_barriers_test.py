#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The DMA barriers of src/platform/mmio.hpp as compiled, per architecture.

usage: mmio_barriers_test.py OBJDUMP CPU_FAMILY PROBE_MODULE LIBKBV

Disassembles (OBJDUMP: the build's own, the cross file's for aarch64):
  - PROBE_MODULE (mmio_barrier_probe.cpp): one function per barrier; each
    must hold exactly the barrier instructions rdma-core's util/udma_barrier.h
    gives that barrier on this architecture, and no other;
  - LIBKBV: the completion poller (kbv::hca::CqPoller::poll, each instance
    of its template), which must use
    the one barrier rdma-core's mlx5 poll uses (providers/mlx5/cq.c
    mlx5_get_next_cqe: udma_from_device_barrier after the owner check; the
    consumer index store after the batch with none, update_cons_index) and
    no other barrier instruction.
Prints 'N passed, N failed'; exit 1 on any failure.
"""
import re
import subprocess
import sys

# rdma-core util/udma_barrier.h (x86-64 and aarch64 branches; aarch64 after
# 1ec72764 "util/udma_barrier.h: adjust ARMv8 memory barriers", 2024).
EXPECTED = {
    "x86_64": {
        "compiler_barrier": [],
        "udma_to_device_barrier": [],  # asm volatile("" ::: "memory")
        "udma_ordering_write_barrier": [],  # = udma_to_device_barrier()
        "udma_from_device_barrier": ["lfence"],
        "mmio_flush_writes": ["sfence"],
        "mmio_wc_start": ["sfence"],  # = mmio_flush_writes()
    },
    "aarch64": {
        "compiler_barrier": [],
        "udma_to_device_barrier": ["dmb oshst"],
        "udma_ordering_write_barrier": ["dmb oshst"],
        "udma_from_device_barrier": ["dmb oshld"],
        "mmio_flush_writes": ["dsb st"],
        "mmio_wc_start": ["dsb st"],
    },
}
# Every barrier instruction either architecture has, as objdump prints them.
BARRIER_RE = {
    "x86_64": re.compile(r"\b(lfence|sfence|mfence)\b"),
    "aarch64": re.compile(r"\b((?:dmb|dsb)\s+\w+|isb)\b"),
}
# CqPoller::poll, or its instances when it is a template over the CQE
# timestamp (poll_impl<false> for kbv_poll_cq, poll_impl<true> for
# kbv_poll_cq_ts); demangled template names start with the return type.
POLLER = re.compile(r"kbv::hca::CqPoller::poll(?:_impl<\w+>)?\(")


def functions(objdump, path):
    """{demangled name: [instruction text]} for every function in path."""
    out = subprocess.run([objdump, "-d", "-C", "--no-show-raw-insn", path], check=True,
                         capture_output=True, text=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = re.match(r"^\s+[0-9a-f]+:\s+(.*)$", line)
        if m and cur is not None:
            cur.append(" ".join(m.group(1).split("//")[0].split("#")[0].split()))
    return funcs


def barriers(arch, insns):
    found = []
    for i in insns:
        m = BARRIER_RE[arch].search(i)
        if m:
            found.append(" ".join(m.group(1).split()))
    return found


def main():
    objdump, arch, probe, lib = sys.argv[1:5]
    if arch not in EXPECTED:
        print(f"mmio_barriers: no expectations for {arch}")
        print("0 passed, 1 failed")
        return 1
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(("ok   " if ok else "FAIL ") + what)
        passed, failed = passed + ok, failed + (not ok)

    probes = functions(objdump, probe)
    for name, want in EXPECTED[arch].items():
        insns = probes.get("kbv_probe_" + name)
        if insns is None:
            check(False, f"{name}: kbv_probe_{name} not found in {probe}")
            continue
        got = barriers(arch, insns)
        check(got == want, f"{arch} {name}: {got} (rdma-core: {want})")

    polls = {k: v for k, v in functions(objdump, lib).items() if POLLER.search(k)}
    check(len(polls) >= 1, f"CqPoller::poll found in {lib} ({len(polls)})")
    want = EXPECTED[arch]["udma_from_device_barrier"]
    for name, insns in sorted(polls.items()):
        got = barriers(arch, insns)
        # One per CQE inside the loop: the static count is the loop body's.
        check(len(got) >= 1 and set(got) == set(want),
              f"{arch} {name}: barriers {got}: only {want} (mlx5_get_next_cqe)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
