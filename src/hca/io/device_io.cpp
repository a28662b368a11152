// SPDX-License-Identifier: BSD-3-Clause
#include "hca/io/device_io.hpp"

#include <time.h>

namespace kbv::hca {

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace kbv::hca
