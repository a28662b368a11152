// SPDX-License-Identifier: BSD-3-Clause
// MMIO accessors and Bar: byte order of stores/loads and the model trap.
#include "platform/mmio.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "fake_sys.hpp"

namespace kbv::platform {
namespace {

using test::RecordingTrap;

struct alignas(64) Region {
  std::array<unsigned char, 4096> bytes{};
};

TEST(Mmio, Write32BePutsMostSignificantByteFirst) {
  Region r;
  mmio_write32_be(&r.bytes[8], 0x11223344u);
  EXPECT_EQ(r.bytes[8], 0x11);
  EXPECT_EQ(r.bytes[9], 0x22);
  EXPECT_EQ(r.bytes[10], 0x33);
  EXPECT_EQ(r.bytes[11], 0x44);
  EXPECT_EQ(r.bytes[7], 0);
  EXPECT_EQ(r.bytes[12], 0);
}

TEST(Mmio, Write64BePutsMostSignificantByteFirst) {
  Region r;
  mmio_write64_be(&r.bytes[16], 0x0102030405060708ull);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r.bytes[16 + i], i + 1) << i;
}

TEST(Mmio, ReadsSwapBack) {
  Region r;
  const unsigned char be[8] = {0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04};
  std::memcpy(&r.bytes[0], be, 8);
  EXPECT_EQ(mmio_read32_be(&r.bytes[0]), 0xdeadbeefu);
  EXPECT_EQ(mmio_read32_be(&r.bytes[4]), 0x01020304u);
  EXPECT_EQ(mmio_read64_be(&r.bytes[0]), 0xdeadbeef01020304ull);
}

TEST(Mmio, BlueFlameCopyIsByteExact) {
  Region r;
  unsigned char src[64];
  for (int i = 0; i < 64; ++i) src[i] = static_cast<unsigned char>(0x80 + i);
  mmio_bf_copy64(&r.bytes[0x800], src);
  EXPECT_EQ(std::memcmp(&r.bytes[0x800], src, 64), 0);
  EXPECT_EQ(r.bytes[0x800 + 64], 0);
}

TEST(Bar, WritesReachMemoryAndTrapOncePerWrite) {
  Region r;
  RecordingTrap trap;
  const Bar bar(r.bytes.data(), r.bytes.size(), &trap);
  bar.write32_be(0x18, 0x80000001u);
  ASSERT_EQ(trap.writes.size(), 1u);
  EXPECT_EQ(trap.writes[0].offset, 0x18u);
  EXPECT_EQ(trap.writes[0].value, 0x80000001u);
  EXPECT_EQ(trap.writes[0].width, 4u);
  EXPECT_EQ(bar.read32_be(0x18), 0x80000001u);
  EXPECT_EQ(r.bytes[0x18], 0x80);

  bar.write64_be(0x20, 0x1234567890abcdefull);
  ASSERT_EQ(trap.writes.size(), 2u);
  EXPECT_EQ(trap.writes[1].offset, 0x20u);
  EXPECT_EQ(trap.writes[1].value, 0x1234567890abcdefull);
  EXPECT_EQ(trap.writes[1].width, 8u);
  EXPECT_EQ(bar.read64_be(0x20), 0x1234567890abcdefull);
  EXPECT_EQ(r.bytes[0x20], 0x12);

  // The same value twice is two writes (a model cannot see that from memory).
  bar.write32_be(0x18, 0x80000001u);
  EXPECT_EQ(trap.writes.size(), 3u);
}

TEST(Bar, NoTrapMeansPlainStores) {
  Region r;
  const Bar bar(r.bytes.data(), r.bytes.size(), nullptr);
  bar.write32_be(4, 0xa0b0c0d0u);
  bar.write64_be(8, 0x1ull);
  EXPECT_EQ(bar.read32_be(4), 0xa0b0c0d0u);
  EXPECT_EQ(r.bytes[15], 1);
  EXPECT_EQ(bar.trap(), nullptr);
}

TEST(Bar, BlueFlameCopyTrapsEachDoubleword) {
  Region r;
  RecordingTrap trap;
  const Bar bar(r.bytes.data(), r.bytes.size(), &trap);
  unsigned char src[64];
  for (int i = 0; i < 64; ++i) src[i] = static_cast<unsigned char>(i);
  bar.bf_copy64(0x900, src);
  EXPECT_EQ(std::memcmp(&r.bytes[0x900], src, 64), 0);
  ASSERT_EQ(trap.writes.size(), 8u);
  for (unsigned i = 0; i < 8; ++i) {
    EXPECT_EQ(trap.writes[i].offset, 0x900u + 8 * i);
    EXPECT_EQ(trap.writes[i].width, 8u);
    // The reported value is the big-endian reading of what is now stored.
    EXPECT_EQ(trap.writes[i].value, bar.read64_be(0x900 + 8 * i));
  }
}

TEST(Bar, ContainsChecksBoundsWithoutOverflow) {
  Region r;
  const Bar bar(r.bytes.data(), 4096, nullptr);
  EXPECT_TRUE(bar.contains(0, 4096));
  EXPECT_TRUE(bar.contains(4092, 4));
  EXPECT_FALSE(bar.contains(4093, 4));
  EXPECT_FALSE(bar.contains(8, UINT64_MAX));
  EXPECT_FALSE(bar.contains(UINT64_MAX, 1));
  EXPECT_FALSE(Bar().mapped());
}

}  // namespace
}  // namespace kbv::platform
