#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The Debian packages built by `make deb` (debian/), installed and used
# (`make test-deb`; not in `make test`: building them takes minutes).
#  1. Each of libkbv0, libkbv-dev, kbv-tools and kbv-ibverbs has its files
#     (libraries, headers, kbv.pc, the CMake package, tools, man pages) and
#     the dependencies on libkbv0 of the same version.
#  2. Scratch root (dpkg -x, nothing on the machine changes): kbv-devinfo
#     lists and shows the model HCA sim:0 with libkbv.so.0 and
#     libkbv-sim.so.0 from the unpacked libkbv0, kbv_write_lat --loopback
#     measures, the unpacked kbv-run runs ibv_devinfo; examples/ build against the
#     unpacked libkbv-dev with CMake (find_package(kbv 0.1 REQUIRED)) and
#     with pkg-config, and run.
#  3. Real install, as root and only when no kbv package is installed
#     already (KBV_DEB_TEST_INSTALL=0 turns it off): dpkg -i of the four
#     packages, kbv-devinfo, kbv_send_lat --plot (with gnuplot) and
#     `kbv-run ibv_devinfo` from PATH, an example
#     built with the system's pkg-config, man pages in place; then
#     dpkg --purge (also when a step fails), and the files are gone.
# Usage: deb_test.sh DEB_DIR (the directory with the .deb files).
set -euo pipefail
# No `cmd | grep -q` under pipefail: grep -q's early exit can fail the
# writer with SIGPIPE; outputs are captured first.
debdir=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
pkgs=(libkbv0 libkbv-dev kbv-tools kbv-ibverbs)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kbv-deb-test.XXXXXX")
installed_here=0
cleanup() {
  if [ "$installed_here" = 1 ]; then
    dpkg --purge "${pkgs[@]}" >/dev/null 2>&1 || echo "deb_test: dpkg --purge failed" >&2
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# run_ok NAME PATTERN CMD...: CMD exits 0 and prints PATTERN (grep -E).
run_ok() {
  local name=$1 pattern=$2 out
  shift 2
  out=$("$@" 2>&1) || { echo "$out" >&2; fail "$name exited non-zero"; }
  grep -Eq -- "$pattern" <<<"$out" || { echo "$out" >&2; fail "$name: no '$pattern' in its output"; }
  echo "$name: ok"
}

# 1. The packages and their contents.
declare -A deb
for p in "${pkgs[@]}"; do
  f=$(find "$debdir" -maxdepth 1 -name "${p}_*.deb" | sort | tail -n 1)
  [ -n "$f" ] || fail "no ${p}_*.deb in $debdir (make deb)"
  deb[$p]=$f
done
version=$(dpkg-deb -f "${deb[libkbv0]}" Version)
expect() {
  local p=$1 list f
  shift
  list=$(dpkg-deb -c "${deb[$p]}" | awk '{print $6}' | sed 's|^\./|/|')
  for f in "$@"; do
    grep -qxF -- "$f" <<<"$list" || fail "$p lacks $f"
  done
}
L=/usr/lib/$arch
expect libkbv0 "$L/libkbv.so.0" "$L/libkbv-sim.so.0"
expect libkbv-dev /usr/include/kbv/kbv.h /usr/include/kbv/kbv.hpp /usr/include/kbv/compat/ib_verbs.h \
  "$L/libkbv.so" "$L/pkgconfig/kbv.pc" "$L/cmake/kbv/kbvConfig.cmake" \
  "$L/cmake/kbv/kbvConfigVersion.cmake"
expect kbv-tools /usr/bin/kbv-devinfo /usr/bin/kbv-perf /usr/bin/kbv-lab /usr/bin/kbv_write_lat \
  /usr/bin/kbv_atomic_bw /usr/share/kbv/kbv-perf-plot.gp \
  /usr/share/man/man1/kbv-devinfo.1.gz /usr/share/man/man1/kbv-perf.1.gz \
  /usr/share/man/man1/kbv_write_lat.1.gz
expect kbv-ibverbs /usr/bin/kbv-run "$L/kbv/ibverbs/libibverbs.so.1" "$L/kbv/ibverbs/libmlx5.so.1" \
  "$L/kbv/ibverbs/libefa.so.1" "$L/kbv/ibverbs/libkbv-ibverbs-sysfs.so" \
  /usr/share/man/man1/kbv-run.1.gz
for p in libkbv-dev kbv-tools kbv-ibverbs; do
  grep -qF "libkbv0 (= $version)" <<<"$(dpkg-deb -f "${deb[$p]}" Depends)" ||
    fail "$p does not depend on libkbv0 (= $version)"
done
echo "packages $version: contents and dependencies ok"

# 2. Unpacked into a scratch root.
root=$tmp/root
for p in "${pkgs[@]}"; do dpkg -x "${deb[$p]}" "$root"; done
unset KBV_SIM_LIBRARY KBV_SIM_DEVICES
grep -qF "libkbv.so.0 => $root$L/" <<<"$(LD_LIBRARY_PATH=$root$L ldd "$root/usr/bin/kbv-devinfo")" ||
  fail "kbv-devinfo does not take libkbv.so.0 from the unpacked libkbv0"
run_ok "kbv-devinfo -l (scratch root)" '^[[:space:]]*sim:0[[:space:]]' env LD_LIBRARY_PATH="$root$L" "$root/usr/bin/kbv-devinfo" -l
run_ok "kbv-devinfo (scratch root)" 'PORT_ACTIVE' env LD_LIBRARY_PATH="$root$L" "$root/usr/bin/kbv-devinfo"
run_ok "kbv_write_lat --loopback (scratch root)" 't_avg' env LD_LIBRARY_PATH="$root$L" \
  "$root/usr/bin/kbv_write_lat" --loopback -s 64 -n 200 --no-progress
if command -v ibv_devinfo >/dev/null 2>&1; then
  run_ok "kbv-run ibv_devinfo (scratch root)" 'state:[[:space:]]+PORT_ACTIVE' \
    env -u LD_LIBRARY_PATH "$root/usr/bin/kbv-run" ibv_devinfo
else
  echo "SKIP: kbv-run ibv_devinfo (ibverbs-utils is not installed)"
fi
if command -v cmake >/dev/null 2>&1; then
  cmake -S "$src/examples" -B "$tmp/examples" -DCMAKE_PREFIX_PATH="$root/usr" >"$tmp/cmake.log" 2>&1 ||
    { cat "$tmp/cmake.log" >&2; fail "examples/: find_package(kbv 0.1 REQUIRED) from libkbv-dev"; }
  grep -q "^kbv_DIR:PATH=$root$L/cmake/kbv$" "$tmp/examples/CMakeCache.txt" ||
    fail "CMake found kbv elsewhere: $(grep '^kbv_DIR' "$tmp/examples/CMakeCache.txt")"
  cmake --build "$tmp/examples" -j 2 >"$tmp/build.log" 2>&1 ||
    { cat "$tmp/build.log" >&2; fail "building examples/ against libkbv-dev"; }
  run_ok "rc_pingpong (CMake, scratch root)" ': ok' env LD_LIBRARY_PATH="$root$L" "$tmp/examples/rc_pingpong"
  run_ok "ud_example_cpp (CMake, scratch root)" ': ok' env LD_LIBRARY_PATH="$root$L" "$tmp/examples/ud_example_cpp"
else
  echo "SKIP: the CMake build of examples/ (cmake is not installed; make deps installs it)"
fi
# shellcheck disable=SC2046 # the flags are words
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/nt_rc_pingpong" "$src/examples/nt_rc_pingpong.c" \
  $(PKG_CONFIG_PATH="$root$L/pkgconfig" pkg-config --cflags --libs kbv)
run_ok "nt_rc_pingpong (pkg-config, scratch root)" ': ok' env LD_LIBRARY_PATH="$root$L" "$tmp/nt_rc_pingpong"

# 3. A real install, purged at the end.
if [ "${KBV_DEB_TEST_INSTALL:-1}" = 0 ]; then
  echo "SKIP: real install (KBV_DEB_TEST_INSTALL=0)"
elif [ "$(id -u)" != 0 ]; then
  echo "SKIP: real install (needs root for dpkg -i)"
else
  for p in "${pkgs[@]}"; do
    if grep -q "ok installed" <<<"$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)"; then
      echo "SKIP: real install ($p is installed on this machine; not touching it)"
      echo "deb_test: ok"
      exit 0
    fi
  done
  installed_here=1
  dpkg -i "${deb[@]}" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg -i"; }
  run_ok "kbv-devinfo (installed)" 'PORT_ACTIVE' env -u LD_LIBRARY_PATH kbv-devinfo
  if command -v gnuplot >/dev/null 2>&1; then
    # --plot finds the installed script in /usr/share/kbv.
    run_ok "kbv_send_lat --loopback --plot (installed)" 't_avg' env -u LD_LIBRARY_PATH \
      kbv_send_lat --loopback -s 64 -n 200 --no-progress --plot "$tmp/lat.svg"
    grep -q '<svg' "$tmp/lat.svg" || fail "kbv_send_lat --plot wrote no SVG"
  else
    echo "SKIP: kbv-perf --plot (gnuplot is not installed)"
  fi
  if command -v ibv_devinfo >/dev/null 2>&1; then
    run_ok "kbv-run ibv_devinfo (installed)" 'state:[[:space:]]+PORT_ACTIVE' env -u LD_LIBRARY_PATH kbv-run ibv_devinfo
  else
    echo "SKIP: kbv-run ibv_devinfo (ibverbs-utils is not installed)"
  fi
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Wextra -Werror -o "$tmp/ud_example" "$src/examples/ud_example.c" $(pkg-config --cflags --libs kbv)
  run_ok "ud_example (system pkg-config, installed)" ': ok' env -u LD_LIBRARY_PATH "$tmp/ud_example"
  for page in kbv-devinfo kbv-perf kbv-run; do
    grep -q '^\.SH NAME' <<<"$(zcat "/usr/share/man/man1/$page.1.gz")" || fail "man page $page(1) not installed"
  done
  echo "man pages kbv-devinfo(1) kbv-perf(1) kbv-run(1) (installed): ok"
  dpkg --purge "${pkgs[@]}" >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log" >&2; fail "dpkg --purge"; }
  installed_here=0
  if [ -e /usr/bin/kbv-devinfo ] || [ -e "$L/libkbv.so.0" ]; then fail "files left after dpkg --purge"; fi
  echo "real install and purge: ok"
fi
echo "deb_test: ok"
