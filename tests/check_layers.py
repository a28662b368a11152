#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The include rules of docs/ARCHITECTURE.md, checked on every source file.

Usage: check_layers.py <source root>

Each directory of src/ is a layer; a file may include (with "...") only the
layers its own may use. Public headers (<kbv/...>) and system headers are
always allowed. Dependencies point down:

    compat -> verbs -> hca -> platform -> common;  hca/prm and common below all
    sim    -> sim, hca/prm, common, and the platform seam only
              (platform/sys.hpp, platform/transport.hpp,
              platform/linux_uapi.hpp: kernel uAPI both sides speak)
    ibverbs -> the public API only (its own files aside)
    tools, examples, bench/wire -> the public API and hca/prm (header-only
              layouts: kbv-lab decodes registers with them), never a layer's code

libkbv.so's sources (common, hca/prm, platform, hca, verbs, compat) never
include sim/: the model is libkbv-sim.so (src/platform/transport.hpp).
Prints every violation as file:line and exits 1 if there is one.
"""
import pathlib
import re
import sys

# layer -> the layers (path prefixes of included files) it may include.
ALLOWED = {
    "common": ["common/"],
    "hca/prm": ["hca/prm/", "common/"],
    "platform": ["platform/", "common/"],
    "hca": ["hca/", "platform/", "common/"],  # hca/ includes hca/prm/
    "verbs": ["verbs/", "hca/", "platform/", "common/"],
    "compat": ["compat/", "verbs/", "common/"],
    "sim": ["sim/", "hca/prm/", "common/", "platform/sys.hpp", "platform/transport.hpp",
            "platform/linux_uapi.hpp"],
    "ibverbs": ["ibverbs/"],
}
# Program directories: their own files (relative includes) and nothing of src/.
PROGRAMS = ["tools", "examples", "bench/wire"]
SRC_LAYERS = ["common", "hca", "platform", "verbs", "compat", "sim", "ibverbs"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = (".c", ".cc", ".cpp", ".h", ".hpp")


def layer_of(rel):
    """The layer of a path relative to src/ ("hca/prm/eq.hpp" -> "hca/prm")."""
    if rel.startswith("hca/prm/"):
        return "hca/prm"
    return rel.split("/", 1)[0]


def allowed(layer, inc):
    return any(inc == a or (a.endswith("/") and inc.startswith(a)) for a in ALLOWED[layer])


def main():
    root = pathlib.Path(sys.argv[1])
    src = root / "src"
    bad = []
    checked = 0
    for path in sorted(src.rglob("*")):
        if path.suffix not in SOURCES:
            continue
        rel = path.relative_to(src).as_posix()
        layer = layer_of(rel)
        if layer not in ALLOWED:
            bad.append(f"src/{rel}: in no known layer (add it to tests/check_layers.py)")
            continue
        checked += 1
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            if (path.parent / inc).exists():
                continue  # a file next to this one ("view.hpp" in src/ibverbs/sysfs_view)
            if inc.split("/", 1)[0] not in SRC_LAYERS:
                continue  # a header of a dependency (infiniband/..., gtest/...)
            if not allowed(layer, inc):
                bad.append(f"src/{rel}:{n}: {layer} may not include \"{inc}\"")
    for prog in PROGRAMS:
        for path in sorted((root / prog).rglob("*")):
            if path.suffix not in SOURCES:
                continue
            checked += 1
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if m and m.group(1).startswith("hca/prm/"):
                    continue
                if m and m.group(1).split("/", 1)[0] in SRC_LAYERS:
                    rel = path.relative_to(root).as_posix()
                    bad.append(f"{rel}:{n}: programs use the public API (and hca/prm), not \"{m.group(1)}\"")
    for b in bad:
        print(b)
    print(f"{checked} files checked, {len(bad)} include rule violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
