#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# The exported ABI of one of kbv's drop-in libraries (libibverbs.so.1, and the
# provider stubs libmlx5.so.1 / libefa.so.1) against the symbol list it must
# match, run by meson (tests/e2e/ibverbs/meson.build, suite 'e2e'):
#
#   abi_symbols.py LIB MAP --system SYSTEM_LIB [--subset-node REGEX] [--soname SONAME]
#
# MAP is a linker version script in rdma-core's form (nodes `NAME { global:
# sym; ... } PARENT;`), kept in the tree. LIB must match SYSTEM_LIB (a path,
# or a soname found with ldconfig -p), the distribution's build of the same
# library: Debian 12's rdma-core 44, the independent judge of which symbols
# are defined, in which node, and which version is the default (sym@@NODE)
# or a compatibility one (sym@NODE, rdma-core's COMPAT_SYMVER_FUNC).
# Checks, each a failure with the difference printed:
#   - LIB carries the soname given with --soname;
#   - every symbol LIB exports is listed in MAP under its version node;
#   - LIB exports every (symbol, version, default or compatibility) that
#     SYSTEM_LIB exports and nothing more, except in nodes matching
#     --subset-node, where LIB's symbols are a subset of SYSTEM_LIB's
#     (libibverbs' IBVERBS_PRIVATE_34 holds rdma-core's provider interface;
#     kbv exports only what programs import from it);
#   - LIB defines the same version nodes as MAP.
# What MAP lists and SYSTEM_LIB does not export (functions the public headers
# define inline, e.g. ibv_query_device_ex, efadv_wc_read_sgid, or gone from
# the library, ibv_cmd_query_device) LIB may export or not; it is printed.
import argparse
import re
import subprocess
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def parse_map(path):
    """Returns {(name, node)} listed in a version script, and its node names in order."""
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"#[^\n]*", "", text)
    nodes = []
    listed = set()
    for m in re.finditer(r"([A-Za-z0-9_.]+)\s*\{(.*?)\}\s*([A-Za-z0-9_.]*)\s*;", text, flags=re.S):
        node, body = m.group(1), m.group(2)
        nodes.append(node)
        body = re.sub(r"local\s*:\s*\*\s*;", "", body)
        body = re.sub(r"global\s*:", "", body)
        for sym in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*;", body):
            listed.add((sym, node))
    if not nodes:
        fail("%s: no version node found" % path)
    return listed, nodes


def exported(lib):
    """Returns ({(name, version, is_default)} of defined symbols, version-node names, soname)."""
    out = subprocess.run(["readelf", "--dyn-syms", "--wide", lib], capture_output=True, text=True,
                         check=True).stdout
    syms = set()
    node_syms = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].endswith(":") or f[4] not in ("GLOBAL", "WEAK"):
            continue
        if f[6] == "UND":
            continue
        name = f[7]
        if f[6] == "ABS" and "@" not in name:
            node_syms.add(name)  # a version node's own symbol (readelf omits its version)
            continue
        if "@@" in name:
            sym, ver = name.split("@@", 1)
            default = True
        elif "@" in name:
            sym, ver = name.split("@", 1)
            default = False
        else:
            fail("%s: %s is exported without a version" % (lib, name))
        if f[6] == "ABS" and sym == ver:
            node_syms.add(ver)  # the version node's own symbol
            continue
        # readelf may append " (N)" to a version name; keep the name only
        syms.add((sym, ver.split()[0], default))
    dyn = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dyn)
    return syms, node_syms, m.group(1) if m else None


def system_lib(name):
    """A path as given, or a bare soname resolved in the dynamic linker's cache (ldconfig -p)."""
    if "/" in name:
        return name
    out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
        if m and m.group(1) == name and "x86-64" in m.group(2):
            return m.group(3)
    fail("%s is not in the dynamic linker's cache (ldconfig -p): install its Debian package" % name)


def show(title, items):
    if not items:
        return
    print(title)
    for sym, ver, default in sorted(items, key=lambda t: (t[1], t[0])):
        print("  %s%s%s" % (sym, "@@" if default else "@", ver))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("map")
    ap.add_argument("--system", required=True,
                    help="the distribution's build of the library: a path or a soname")
    ap.add_argument("--subset-node", help="nodes in which LIB exports a subset of SYSTEM")
    ap.add_argument("--soname", help="the soname LIB must carry")
    a = ap.parse_args()

    listed, nodes = parse_map(a.map)
    built, built_nodes, soname = exported(a.lib)
    a.system = system_lib(a.system)
    system, _, _ = exported(a.system)
    sub = re.compile(a.subset_node) if a.subset_node else None
    print("%s: %d symbols in %d version nodes; %s lists %d in %d nodes (%s .. %s); %s exports %d" %
          (a.lib, len(built), len(built_nodes), a.map, len(listed), len(nodes), nodes[0], nodes[-1],
           a.system, len(system)))
    if a.soname and soname != a.soname:
        fail("soname is %s, not %s" % (soname, a.soname))

    unlisted = {t for t in built if (t[0], t[1]) not in listed}
    show("exported by %s but not listed in %s:" % (a.lib, a.map), unlisted)

    def exact(t):
        return not (sub and sub.fullmatch(t[1]))

    # Listed in MAP, not exported by SYSTEM_LIB: defined inline by the public
    # headers (ibv_query_device_ex, efadv_wc_read_sgid) or gone from the
    # library (ibv_cmd_query_device). LIB may export them or not.
    unexported = {(n, v) for n, v in listed if not any(t[0] == n and t[1] == v for t in system)}
    missing = {t for t in system if exact(t)} - built
    extra = {t for t in built if exact(t) and (t[0], t[1]) not in unexported} - system
    beyond = {t for t in built if not exact(t) and (t[0], t[1]) not in unexported} - system
    show("exported by %s but not by %s:" % (a.system, a.lib), missing)
    show("exported by %s but not by %s:" % (a.lib, a.system), extra | beyond)
    if unexported:
        print("listed in %s, not exported by %s (inline in the headers or gone): %s" %
              (a.map, a.system, ", ".join("%s@%s%s" % (n, v, " (exported here)" if any(
                  t[0] == n and t[1] == v for t in built) else "") for n, v in sorted(unexported))))
    if unlisted or missing or extra or beyond:
        fail("%s does not export the symbol set of %s / %s" % (a.lib, a.map, a.system))
    if set(nodes) != built_nodes:
        fail("version nodes differ: map %s, library %s" % (sorted(nodes), sorted(built_nodes)))
    print("matches: every symbol with its version%s" %
          (" (a subset in %s)" % a.subset_node if sub else ""))
    print("PASS")


if __name__ == "__main__":
    main()
