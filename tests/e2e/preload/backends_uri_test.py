#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kbv's vfio: and iommufd: URIs through libkbv's own transports and the real
system calls, routed to the model's kernel by LD_PRELOAD (issue 17): an
unmodified kbv-devinfo brings a model HCA up over iommufd and over type1, and
the wrong backend for a function fails with a clear message.

Usage: backends_uri_test.py <kbv-devinfo> <LD_PRELOAD list: [sanitizer runtime:]libkbv-sim-preload.so>
"""
import os
import subprocess
import sys

devinfo, preload = sys.argv[1], sys.argv[2]
BDF = "fffe:00:01.0"
failures = []


def run(uri, iommufd, extra=None):
    env = dict(os.environ)
    env.update({"LD_PRELOAD": preload, "KBV_SIM_DEVICES": "1", "KBV_LOG_LEVEL": "info",
                "KBV_SIM_DBELL_POLL_US": "100"})
    if iommufd:
        env["KBV_SIM_IOMMUFD"] = "1"
    env.update(extra or {})
    p = subprocess.run([devinfo, "-d", uri], env=env, capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


for uri, iommufd, backend in [(f"iommufd:{BDF}", True, "iommufd"),
                              (f"vfio:{BDF}", True, "iommufd"),
                              (f"vfio:{BDF}", False, "type1")]:
    rc, out, err = run(uri, iommufd)
    label = f"{uri} (iommufd {'on' if iommufd else 'off'})"
    check(rc == 0 and f"hca_id:\t{uri}" in out and "PORT_ACTIVE" in out,
          f"{label}: brought up, port active (rc {rc})")
    check(f"opened with {backend}" in err, f"{label}: backend {backend}")

rc, out, err = run(f"iommufd:{BDF}", False)
check(rc != 0 and "no VFIO device cdev with iommufd" in err,
      f"iommufd: without /dev/iommu fails and says why (rc {rc})")
rc, out, err = run(f"uio:{BDF}", True)
check(rc != 0 and "not uio_pci_generic" in err,
      f"uio: on a vfio-pci function fails and says why (rc {rc})")

# UIO: the function bound to uio_pci_generic in a machine with huge pages.
uio = {"KBV_SIM_DRIVER": "uio_pci_generic", "KBV_SIM_HUGE_PAGES": "32"}
rc, out, err = run(f"uio:{BDF}", False, uio)
check(rc == 0 and f"hca_id:\tuio:{BDF}" in out and "PORT_ACTIVE" in out,
      f"uio:{BDF}: brought up, port active (rc {rc})")
check("opened with uio" in err and "can read and write ALL of this machine's memory" in err,
      f"uio:{BDF}: backend uio, with the warning")
rc, out, err = run(f"uio:{BDF}", False, {"KBV_SIM_DRIVER": "uio_pci_generic"})
check(rc != 0 and "no 2 MiB huge page" in err,
      f"uio: without huge pages fails and says why (rc {rc})")
rc, out, err = run(f"vfio:{BDF}", True, uio)
check(rc != 0 and "not vfio-pci" in err,
      f"vfio: on a uio_pci_generic function fails and says why (rc {rc})")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
