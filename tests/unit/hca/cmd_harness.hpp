// SPDX-License-Identifier: BSD-3-Clause
// Test fixture for the firmware command functions: a fake device, its
// firmware side and a command queue; helpers to read the single posted input
// and to answer it.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "fake_device.hpp"
#include "hca/cmdq/cmdq.hpp"

namespace kbv::hca::test {

class CmdHarness : public ::testing::Test {
 protected:
  void SetUp() override {
    auto q = CmdQueue::create(dev);
    ASSERT_TRUE(q.has_value());
    cmdq = std::move(*q);
  }
  // The input of the one command posted since the last call.
  std::vector<std::byte> posted() {
    auto r = fw.rung();
    EXPECT_EQ(r.size(), 1u);
    slot = r.empty() ? 0 : r[0];
    return fw.input(slot);
  }
  uint32_t outlen() { return fw.outlen(slot); }
  // Answers the posted command with `out` (padded to outlen) and polls.
  void answer(std::vector<std::byte> out) {
    fw.complete(slot, std::move(out));
    cmdq->poll();
  }
  void answer_ok() { answer(std::vector<std::byte>(16)); }

 public:
  // Big-endian byte helpers (also used by the scripted firmware).
  static unsigned u8(const std::vector<std::byte>& v, size_t i) {
    return static_cast<unsigned>(v.at(i));
  }
  static uint32_t be16(const std::vector<std::byte>& v, size_t i) {
    return u8(v, i) << 8 | u8(v, i + 1);
  }
  static uint32_t be32(const std::vector<std::byte>& v, size_t i) {
    return be16(v, i) << 16 | be16(v, i + 2);
  }
  static uint64_t be64(const std::vector<std::byte>& v, size_t i) {
    return uint64_t{be32(v, i)} << 32 | be32(v, i + 4);
  }
  static void put32(std::vector<std::byte>& v, size_t i, uint32_t x) {
    for (int k = 0; k < 4; ++k) v.at(i + k) = static_cast<std::byte>(x >> (24 - 8 * k));
  }
  static void put64(std::vector<std::byte>& v, size_t i, uint64_t x) {
    put32(v, i, static_cast<uint32_t>(x >> 32));
    put32(v, i + 4, static_cast<uint32_t>(x));
  }

 protected:
  FakeDevice dev;
  FakeFw fw{dev};
  std::unique_ptr<CmdQueue> cmdq;
  uint32_t slot = 0;
};

}  // namespace kbv::hca::test
