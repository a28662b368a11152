// SPDX-License-Identifier: BSD-3-Clause
// Golden tests for the generic command headers and the field accessor.
#include "hca/prm/cmd_hdr.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <array>

namespace kbv::prm {
namespace {

using golden::u8;
using Buf = std::array<std::byte, 16>;

// mlx5_ifc.h mbox_in: opcode is bits 0x00..0x0f (bytes 0-1, big endian),
// uid bits 0x10..0x1f (bytes 2-3), op_mod bits 0x30..0x3f (bytes 6-7).
TEST(PrmCmdHdr, MboxInGolden) {
  Buf b{};
  Ref<mbox_in> in(b.data());
  in.set(mbox_in::opcode, 0x0400);  // CREATE_CQ
  in.set(mbox_in::uid, 0xBEEF);
  in.set(mbox_in::op_mod, 0x1234);
  const uint8_t want[16] = {0x04, 0x00, 0xBE, 0xEF, 0x00, 0x00, 0x12, 0x34};
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(u8(b, i), want[i]) << "byte " << i;
  EXPECT_EQ(in.get(mbox_in::opcode), 0x0400u);
  EXPECT_EQ(in.get(mbox_in::op_mod), 0x1234u);
}

// mbox_out: status is byte 0, syndrome is the big-endian dword at byte 4.
TEST(PrmCmdHdr, MboxOutGolden) {
  Buf b{};
  b[0] = std::byte{0x03};
  b[4] = std::byte{0x11};
  b[5] = std::byte{0x22};
  b[6] = std::byte{0x33};
  b[7] = std::byte{0x44};
  CRef<mbox_out> out(b.data());
  EXPECT_EQ(out.get(mbox_out::status), 0x03u);
  EXPECT_EQ(out.get(mbox_out::syndrome), 0x11223344u);
}

// A narrow field set leaves its neighbours in the same dword untouched and
// truncates the value to its width, as MLX5_SET does.
struct probe {
  static constexpr uint32_t kBits = 0x80;
  static constexpr Field<probe> a{0x00, 4};
  static constexpr Field<probe> b{0x04, 3};
  static constexpr Field<probe> c{0x1f, 1};
  static constexpr Field<probe> q{0x40, 64};
  static constexpr Array<probe> pas{0x40, 64, 0};
};

TEST(PrmField, NarrowFieldsAndMasking) {
  Buf buf{};
  Ref<probe> r(buf.data());
  r.set(probe::a, 0xF);
  r.set(probe::c, 1);
  r.set(probe::b, 0xFF);        // truncated to 3 bits
  EXPECT_EQ(u8(buf, 0), 0xFE);  // a=1111 b=111 then bit 7 of byte 0 clear
  EXPECT_EQ(u8(buf, 3), 0x01);  // c is the least significant bit of dword 0
  EXPECT_EQ(r.get(probe::b), 7u);
  r.set(probe::b, 0);
  EXPECT_EQ(u8(buf, 0), 0xF0);
  EXPECT_EQ(r.get(probe::a), 0xFu);
  EXPECT_EQ(r.get(probe::c), 1u);
}

TEST(PrmField, SixtyFourBitAndArrays) {
  Buf buf{};
  Ref<probe> r(buf.data());
  r.set(probe::q, 0x0102030405060708ull);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(u8(buf, 8 + i), i + 1);
  EXPECT_EQ(r.get(probe::pas, 0), 0x0102030405060708ull);
  EXPECT_TRUE(fits(probe::b, 7));
  EXPECT_FALSE(fits(probe::b, 8));
}

}  // namespace
}  // namespace kbv::prm
