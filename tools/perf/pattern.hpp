// SPDX-License-Identifier: BSD-3-Clause
//
// kbv-perf data patterns: every message carries bytes derived from the
// sender's seed (side and QP) and the byte offset, so the receiver (or the
// requester of an RDMA READ) checks the data it ended with byte for byte.
// The last byte of a ping-pong message carries the iteration's tag instead,
// which the peer waits for (perftest's write_lat polls the last byte the same
// way) and which checks that iterations arrived in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace kbv::perf {

// Seed of the buffer of one side (0 client, 1 server) and QP index.
constexpr uint32_t pattern_seed(unsigned side, uint32_t qp) { return side * 1009u + qp * 7u + 1u; }

constexpr uint8_t pattern_byte(uint32_t seed, size_t offset) {
  return static_cast<uint8_t>(seed * 37u + offset * 13u + (offset >> 8) * 7u + 1u);
}

// Tag of iteration i: 1..255, never 0 (buffers start zeroed).
constexpr uint8_t iteration_tag(uint64_t i) { return static_cast<uint8_t>(i % 255u + 1u); }

inline void fill_pattern(std::span<uint8_t> buf, uint32_t seed) {
  for (size_t j = 0; j < buf.size(); ++j) buf[j] = pattern_byte(seed, j);
}

// Offset of the first byte that differs from the pattern (the last byte is
// compared with last_tag instead when one is given), or nullopt when all match.
inline std::optional<size_t> check_pattern(std::span<const uint8_t> buf, uint32_t seed,
                                           std::optional<uint8_t> last_tag = std::nullopt) {
  for (size_t j = 0; j < buf.size(); ++j) {
    const bool is_last = j + 1 == buf.size();
    const uint8_t want = (is_last && last_tag) ? *last_tag : pattern_byte(seed, j);
    if (buf[j] != want) return j;
  }
  return std::nullopt;
}

}  // namespace kbv::perf
