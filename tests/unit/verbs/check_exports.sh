#!/bin/sh
# libkbv.so exports exactly the C API (src/libkbv.map): every symbol it
# defines in KBV_0.1 is kbv_* (plus the version nodes), every function
# declared in the public C headers is exported, and the private node
# KBV_PRIVATE_0 (what libkbv-sim.so and libkbv-dpdk.so take from libkbv.so;
# the dpdk: transport parses PCI addresses) holds exactly the
# symbols listed below and nothing of the public API.
# Usage: check_exports.sh <libkbv.so> <header>...
set -eu
lib=$1
shift
all=$(nm -D --defined-only "$lib" | awk '{print $3}')
syms=$(printf '%s\n' "$all" | grep -v '@@KBV_PRIVATE_0$' | sed 's/@.*//')
bad=$(printf '%s\n' "$syms" | grep -v '^kbv_' | grep -v '^KBV_0\.1$' | grep -v '^KBV_PRIVATE_0$' || true)
if [ -n "$bad" ]; then
  echo "exported outside the C API:"
  printf '%s\n' "$bad"
  exit 1
fi
private=$(printf '%s\n' "$all" | grep '@@KBV_PRIVATE_0$' | sed 's/@.*//' | c++filt | sort)
expected='kbv::Status::to_string[abi:cxx11]() const
kbv::log::detail::emit(kbv_log_level, char const*, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)
kbv::log::detail::g_level
kbv::log::detail::init_level()
kbv::platform::PciAddress::parse(std::basic_string_view<char, std::char_traits<char> >)
kbv::platform::PciAddress::to_string[abi:cxx11]() const
kbv::platform::real_sys()
kbv::platform::register_transport(kbv::platform::Transport const&)'
if [ "$private" != "$(printf '%s\n' "$expected" | sort)" ]; then
  echo "KBV_PRIVATE_0 differs from the expected set:"
  printf '%s\n' "$private"
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
