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
    maps = subprocess.run(["ldd", exe], env=env, capture_output=True, text=True).stdout
    if os.path.join(d, "libkbv.so.0") not in maps:
        print("the program does not load the copied libkbv.so.0:\n" + maps)
        sys.exit(1)
    sys.exit(subprocess.run([exe], env=env).returncode)
