#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Runs the transport test with libkbv.so.0 alone: copied into an empty
directory put first on LD_LIBRARY_PATH, so neither "beside libkbv.so" nor
the loader's search finds libkbv-sim.so.0 (src/platform/transport.hpp).

Usage: transport_missing.py <unit_transport> <libkbv.so.0>
"""
import os
import shutil
import subprocess
import sys
import tempfile

exe, lib = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as d:
    shutil.copy(lib, os.path.join(d, "libkbv.so.0"))
    env = dict(os.environ, LD_LIBRARY_PATH=d, KBV_TEST_NO_SIM_LIBRARY="1")
    env.pop("KBV_SIM_LIBRARY", None)
    # Which libkbv the program loads: the copy, or the test proves nothing.
    # A cross build (MESON_EXE_WRAPPER, e.g. qemu-aarch64: tests/e2e/
    # exe_wrapper.hpp) runs the program behind the wrapper and asks the
    # program's own dynamic loader (ld.so --list, what ldd runs) instead of
    # the host's ldd.
    wrapper = os.environ.get("MESON_EXE_WRAPPER", "").split()
    if wrapper:
        interp = subprocess.run(["readelf", "-p", ".interp", exe], capture_output=True,
                                text=True, check=True).stdout.split()[-1]
        lister = wrapper + [interp, "--list", exe]
    else:
        lister = ["ldd", exe]
    maps = subprocess.run(lister, env=env, capture_output=True, text=True).stdout
    if os.path.join(d, "libkbv.so.0") not in maps:
        print("the program does not load the copied libkbv.so.0:\n" + maps)
        sys.exit(1)
    sys.exit(subprocess.run(wrapper + [exe], env=env).returncode)
