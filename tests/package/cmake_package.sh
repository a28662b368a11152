#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The installed package is relocatable and usable (issue 20): stages
# `meson install --destdir` into a scratch directory, moves the staged prefix
# elsewhere (no path of the build or of the prefix is left to lean on), then
#  - builds examples/ with CMake through find_package(kbv 0.1 REQUIRED) and
#    CMAKE_PREFIX_PATH, and runs rc_pingpong and ud_example_cpp from it
#    (libkbv.so.0 and libkbv-sim.so.0 come from the moved prefix);
#  - checks kbvConfigVersion.cmake: 0.1.0 EXACT and the range 0.1...<1 are
#    found, 0.2 and 1 are not;
#  - runs the moved kbv-run (kbv's libibverbs found from its own directory)
#    with ibv_devinfo;
#  - builds examples/ud_example.c with `pkg-config --cflags --libs kbv` from
#    the moved kbv.pc and runs it.
# Usage: cmake_package.sh BUILD_DIR SOURCE_DIR PREFIX LIBDIR INCLUDEDIR
# (meson test cmake_package, suite package). Skips (exit 77) only when cmake
# is not installed (Debian package cmake; `make deps` installs it).
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
prefix=$3 libdir=$4 includedir=$5

if ! command -v cmake >/dev/null 2>&1; then
  echo "SKIP: cmake is not installed (Debian package cmake; make deps installs it)"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kbv-cmake-package.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/stage" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "meson install --destdir"; }
[ -d "$tmp/stage$prefix" ] || fail "nothing staged under $tmp/stage$prefix"
mv "$tmp/stage$prefix" "$tmp/moved"
root=$tmp/moved
# A relative libdir/includedir is under the prefix; an absolute one is not
# relocatable and stays where it was staged.
case $libdir in /*) lib=$tmp/stage$libdir ;; *) lib=$root/$libdir ;; esac
case $includedir in /*) inc=$tmp/stage$includedir ;; *) inc=$root/$includedir ;; esac
for f in "$lib/cmake/kbv/kbvConfig.cmake" "$lib/cmake/kbv/kbvConfigVersion.cmake" \
  "$lib/pkgconfig/kbv.pc" "$lib/libkbv.so" "$lib/libkbv-sim.so.0" "$inc/kbv/kbv.h"; do
  [ -e "$f" ] || fail "$f not installed"
done
if grep -rqs -- "$build\|$src" "$lib/cmake/kbv" "$lib/pkgconfig/kbv.pc"; then
  fail "the installed package files name the build or source tree"
fi

# 1. examples/ with CMake from the moved install.
echo "== cmake -S examples -DCMAKE_PREFIX_PATH=$root"
cmake -S "$src/examples" -B "$tmp/examples" -DCMAKE_PREFIX_PATH="$root" \
  -DCMAKE_BUILD_TYPE=Release >"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log" >&2; fail "configuring examples/ with find_package(kbv 0.1 REQUIRED)"; }
grep -q "kbv" "$tmp/examples/CMakeCache.txt" || fail "kbv_DIR not in the cache"
grep -q "^kbv_DIR:PATH=$lib/cmake/kbv$" "$tmp/examples/CMakeCache.txt" ||
  fail "kbv found elsewhere: $(grep '^kbv_DIR' "$tmp/examples/CMakeCache.txt")"
cmake --build "$tmp/examples" -j 2 >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log" >&2; fail "building examples/ with CMake"; }
for ex in rc_pingpong ud_example_cpp; do
  rc=0
  out=$(env -u LD_LIBRARY_PATH -u KBV_SIM_LIBRARY "$tmp/examples/$ex" 2>&1) || rc=$?
  [ "$rc" = 0 ] || { echo "$out" >&2; fail "$ex (CMake build) exited $rc"; }
  grep -q ": ok" <<<"$out" || { echo "$out" >&2; fail "$ex did not report ok"; }
  echo "$ex (CMake, moved install): ok"
done

# 2. kbvConfigVersion.cmake: which requests match.
probe() {  # probe NAME 'find_package arguments' -> exit status of the configure
  mkdir -p "$tmp/probe-$1"
  cat >"$tmp/probe-$1/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.19)
project(probe C)  # C: CMAKE_LIBRARY_ARCHITECTURE, so lib/<arch>/cmake is searched
find_package($2)
if(NOT kbv_FOUND)
  message(FATAL_ERROR "kbv not found")
endif()
message(STATUS "kbv \${kbv_VERSION} found")
CMAKE
  cmake -S "$tmp/probe-$1" -B "$tmp/probe-$1/b" -DCMAKE_PREFIX_PATH="$root" \
    >"$tmp/probe-$1.log" 2>&1
}
probe exact "kbv 0.1.0 EXACT" || { cat "$tmp/probe-exact.log" >&2; fail "kbv 0.1.0 EXACT not found"; }
grep -q "kbv 0.1.0 found" "$tmp/probe-exact.log" || fail "kbv_VERSION is not 0.1.0"
probe range "kbv 0.1...<1" || { cat "$tmp/probe-range.log" >&2; fail "kbv 0.1...<1 not found"; }
if probe newer "kbv 0.2"; then fail "find_package(kbv 0.2) accepted 0.1.0"; fi
if probe major "kbv 1"; then fail "find_package(kbv 1) accepted 0.1.0"; fi
grep -q "0.1.0" "$tmp/probe-major.log" || fail "the refusal does not name the version found"
echo "kbvConfigVersion.cmake: 0.1.0 EXACT and 0.1...<1 found; 0.2 and 1 refused"

# 2b. The moved kbv-run finds kbv's libibverbs relative to itself.
if command -v ibv_devinfo >/dev/null 2>&1; then
  rc=0
  out=$(env -u LD_LIBRARY_PATH -u KBV_SIM_DEVICES KBV_RUN_VERBOSE=1 "$root/bin/kbv-run" ibv_devinfo 2>&1) ||
    rc=$?
  [ "$rc" = 0 ] || { echo "$out" >&2; fail "kbv-run ibv_devinfo (moved install) exited $rc"; }
  grep -q "LD_LIBRARY_PATH=$lib/kbv/ibverbs:" <<<"$out" ||
    { echo "$out" >&2; fail "kbv-run does not use the moved $lib/kbv/ibverbs"; }
  grep -Eq "state:[[:space:]]+PORT_ACTIVE" <<<"$out" || { echo "$out" >&2; fail "kbv-run ibv_devinfo: no active port"; }
  echo "kbv-run ibv_devinfo (moved install): ok"
else
  echo "SKIP: kbv-run ibv_devinfo (ibverbs-utils is not installed)"
fi

# 3. pkg-config from the moved kbv.pc.
cflags=$(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --cflags kbv)
libs=$(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --libs kbv)
case "$cflags $libs" in
  *"$root"*) ;;
  *) fail "kbv.pc does not point into the moved prefix: $cflags $libs" ;;
esac
# shellcheck disable=SC2086 # word splitting of the flags is intended
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/ud_example_pc" "$src/examples/ud_example.c" $cflags $libs
out=$(env -u KBV_SIM_LIBRARY LD_LIBRARY_PATH="$lib" "$tmp/ud_example_pc" 2>&1) ||
  { echo "$out" >&2; fail "ud_example (pkg-config build) failed"; }
grep -q ": ok" <<<"$out" || { echo "$out" >&2; fail "ud_example did not report ok"; }
echo "ud_example (pkg-config, moved install): ok"
echo "cmake_package: ok"
