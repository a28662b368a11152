#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""libkbv.so carries no HCA model code; libkbv-sim.so carries the model.

Usage: check_no_model.py <libkbv.so> <libkbv-sim.so>

libkbv.so (what an application on silicon links) reaches "sim:" devices only
by loading libkbv-sim.so (src/platform/transport.hpp). Checked on the built
files:
- no dynamic symbol of libkbv.so names anything in a sim:: namespace, and
  its full symbol table (when not stripped) has no kbv::sim:: function;
- none of the model's own strings is in libkbv.so: the environment knobs only
  the model reads and its log components (src/sim);
- libkbv.so does not depend on libkbv-sim.so; libkbv-sim.so depends on
  libkbv.so, defines the model (kbv::sim:: functions) and exports nothing.
"""
import subprocess
import sys

# Strings only the model has (src/sim): its environment knobs and log
# components. A model object linked into libkbv.so brings at least one.
MODEL_STRINGS = [
    b"KBV_SIM_CMD_TRACE",
    b"sim.fw.cmdq",
    b"sim.engine",
    b"sim.wire",
    b"sim.iommu",
]


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def symbols(lib, dynamic):
    args = ["nm", "-C", "--defined-only"] + (["-D"] if dynamic else []) + [lib]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:  # "no symbols" (stripped)
        return []
    return [line.split(" ", 2)[-1] for line in r.stdout.splitlines() if line.count(" ") >= 2]


def needed(lib):
    out = run("readelf", "-d", "-W", lib)
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def main():
    libkbv, libsim = sys.argv[1], sys.argv[2]
    errors = []

    dyn = [s for s in symbols(libkbv, True) if "sim::" in s]
    if dyn:
        errors.append("libkbv.so exports model symbols: " + ", ".join(dyn[:5]))
    full = [s for s in symbols(libkbv, False) if "kbv::sim::" in s]
    if full:
        errors.append(f"libkbv.so defines {len(full)} kbv::sim:: symbols, e.g. {full[0]}")
    data = open(libkbv, "rb").read()
    found = [s.decode() for s in MODEL_STRINGS if s in data]
    if found:
        errors.append("libkbv.so holds model strings: " + ", ".join(found))
    if any(n.startswith("libkbv-sim") for n in needed(libkbv)):
        errors.append("libkbv.so depends on libkbv-sim.so")

    if not any(n.startswith("libkbv.so") for n in needed(libsim)):
        errors.append("libkbv-sim.so does not depend on libkbv.so: " + ", ".join(needed(libsim)))
    model = [s for s in symbols(libsim, False) if s.startswith("kbv::sim::")]
    if not model:
        errors.append("libkbv-sim.so defines no kbv::sim:: symbols (is it the model?)")
    exported = [s for s in symbols(libsim, True) if not s.startswith("KBV_SIM_PRIVATE_0")]
    if exported:
        errors.append("libkbv-sim.so exports: " + ", ".join(exported[:5]))
    simdata = open(libsim, "rb").read()
    if not all(s in simdata for s in MODEL_STRINGS):
        errors.append("libkbv-sim.so lacks a model string (update MODEL_STRINGS)")

    for e in errors:
        print("FAIL:", e)
    if not errors:
        print(f"libkbv.so: no model code; libkbv-sim.so: {len(model)} model symbols")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
