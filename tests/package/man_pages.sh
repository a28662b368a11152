#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The tools' man pages (man/meson.build, help2man): each was generated from
# the program's own --help (an option only the program knows is in it), has
# the sections of man/<tool>.h2m, formats without groff warnings, and is in
# meson's install plan under <mandir>/man1 (with kbv_write_lat.1 ...
# kbv_atomic_bw.1 for kbv-perf's entry points).
# Usage: man_pages.sh BUILD_DIR (meson test man_pages, suite package).
set -euo pipefail
build=$1
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
installed=$(meson introspect "$build" --installed)
# page, an option from its --help, a word from its .h2m
for spec in "kbv-devinfo:\\-\\-ib\\-dev:KBV_SIM_LIBRARY" "kbv-perf:\\-\\-loopback:KBV_SIM_FAULTS" \
  "kbv-run:PROGRAM:KBV_RUN_VERBOSE"; do
  IFS=: read -r page option word <<<"$spec"
  f=$build/man/$page.1
  [ -s "$f" ] || fail "$f was not generated"
  grep -qF -- "$option" "$f" || fail "$page.1 lacks $option (from $page --help)"
  for section in NAME DESCRIPTION ENVIRONMENT EXAMPLES "SEE ALSO"; do
    grep -q "^\.SH \"\?$section\"\?" "$f" || fail "$page.1 has no $section section"
  done
  grep -qF "$word" "$f" || fail "$page.1 lacks $word (man/$page.h2m)"
  warnings=$(groff -man -ww -z -Tutf8 "$f" 2>&1) || fail "groff failed on $page.1"
  [ -z "$warnings" ] || fail "groff warns on $page.1: $warnings"
  grep -q "share/man/man1/$page.1\"" <<<"$installed" || fail "$page.1 is not installed"
  echo "$page.1: ok"
done
# kbv-perf's entry points share its page.
for entry in kbv_write_lat kbv_write_bw kbv_send_lat kbv_send_bw kbv_read_lat kbv_read_bw \
  kbv_atomic_lat kbv_atomic_bw; do
  grep -q "share/man/man1/$entry.1\"" <<<"$installed" || fail "$entry.1 is not installed"
done
echo "kbv_*.1 (kbv-perf's entry points): ok"
