#!/bin/sh
# libkbv.so exports exactly the C API (src/libkbv.map): every symbol it
# defines is kbv_* (plus the version node), and every function declared in
# the public C headers is exported.
# Usage: check_exports.sh <libkbv.so> <header>...
set -eu
lib=$1
shift
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//')
bad=$(printf '%s\n' "$syms" | grep -v '^kbv_' | grep -v '^KBV_0\.1$' || true)
if [ -n "$bad" ]; then
  echo "exported outside the C API:"
  printf '%s\n' "$bad"
  exit 1
fi
missing=0
for f in $(grep -hE '^[a-z_][a-z0-9_ ]*[ *]kbv_[a-z0-9_]+\(' "$@" | grep -v '^static' |
           sed -E 's/.*[ *](kbv_[a-z0-9_]+)\(.*/\1/' | sort -u); do
  if ! printf '%s\n' "$syms" | grep -qx "$f"; then
    echo "declared but not exported: $f"
    missing=1
  fi
done
n=$(printf '%s\n' "$syms" | grep -c '^kbv_')
echo "$n kbv_* symbols exported"
exit $missing
