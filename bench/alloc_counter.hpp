// SPDX-License-Identifier: BSD-3-Clause
//
// Heap allocation counter for benchmarks: alloc_counter.cpp replaces the
// global operator new (its own translation unit, so the compiler does not
// pair new-expressions with the malloc/free inside) and counts every call.
// Link it only into benchmark executables that report `allocs`.
#pragma once

#include <cstdint>

namespace kbv::bench {
// Global operator new calls so far (any thread).
uint64_t allocations();
}  // namespace kbv::bench
