// SPDX-License-Identifier: BSD-3-Clause
//
// Shared helpers of the PRM layout golden tests (tests/unit/hca/prm): byte
// buffers the field tables encode into, and byte-for-byte expectations.
// Expected bytes in every test are worked out by hand from mlx5_ifc.h /
// device.h (bit offsets count from the MSB of byte 0; dwords are big endian).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <vector>

namespace kbv::prm::golden {

// Byte i of any contiguous std::byte container, as a number.
template <class B>
uint8_t u8(const B& b, std::size_t i) {
  return static_cast<uint8_t>(b[i]);
}

// A zero-filled (or `fill`-filled) command buffer whose bytes read as numbers.
struct Bytes {
  explicit Bytes(std::size_t n, uint8_t fill = 0) : b(n, std::byte{fill}) {}
  std::vector<std::byte> b;
  uint8_t operator[](std::size_t i) const { return static_cast<uint8_t>(b[i]); }
  void put(std::size_t i, uint8_t v) { b[i] = std::byte{v}; }
  std::byte* data() { return b.data(); }
  const std::byte* data() const { return b.data(); }
  std::size_t size() const { return b.size(); }
};

// Every byte of b equals want[i] where listed and zero elsewhere.
template <class B>
void expect_only(const B& b, const std::map<std::size_t, uint8_t>& want) {
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto it = want.find(i);
    EXPECT_EQ(u8(b, i), it == want.end() ? 0 : it->second) << "byte " << i;
  }
}

// The first want.size() bytes of b are want.
template <class B, class W>
void expect_bytes(const B& b, const W& want) {
  std::size_t i = 0;
  for (uint8_t w : want) {
    EXPECT_EQ(u8(b, i), w) << "byte " << i;
    ++i;
  }
}
template <class B>
void expect_bytes(const B& b, std::initializer_list<uint8_t> want) {
  expect_bytes<B, std::initializer_list<uint8_t>>(b, want);
}

}  // namespace kbv::prm::golden
