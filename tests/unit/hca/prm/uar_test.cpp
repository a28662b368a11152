// SPDX-License-Identifier: BSD-3-Clause
// Golden tests of ALLOC_UAR / DEALLOC_UAR (mlx5_ifc.h alloc_uar_in/out,
// dealloc_uar_in) and the UAR page constants.
#include "hca/prm/uar.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <array>

#include "hca/prm/opcodes.hpp"

namespace kbv::prm {
namespace {

using golden::u8;
using B16 = std::array<std::byte, 16>;

// alloc_uar_in: opcode bytes 0-1, uid bytes 2-3. alloc_uar_out: uar = low 24
// bits of the dword at byte 8 (bits 0x48..0x5f). dealloc_uar_in: uar likewise.
TEST(PrmUar, AllocDeallocGolden) {
  B16 in{};
  Ref<alloc_uar_in> a(in.data());
  a.set(alloc_uar_in::opcode, to_u16(Opcode::ALLOC_UAR));
  a.set(alloc_uar_in::uid, 0x0042);
  EXPECT_EQ(u8(in, 0), 0x08);
  EXPECT_EQ(u8(in, 1), 0x02);
  EXPECT_EQ(u8(in, 3), 0x42);

  B16 out{};
  out[8] = std::byte{0xFF};  // reserved: not part of the UAR index
  out[9] = std::byte{0x00};
  out[10] = std::byte{0x01};
  out[11] = std::byte{0x02};
  EXPECT_EQ(CRef<alloc_uar_out>(out.data()).get(alloc_uar_out::uar), 0x102u);

  B16 d{};
  Ref<dealloc_uar_in> di(d.data());
  di.set(dealloc_uar_in::opcode, to_u16(Opcode::DEALLOC_UAR));
  di.set(dealloc_uar_in::uar, 0xABCDEF);
  EXPECT_EQ(u8(d, 1), 0x03);
  EXPECT_EQ(u8(d, 8), 0x00);
  EXPECT_EQ(u8(d, 9), 0xAB);
  EXPECT_EQ(u8(d, 11), 0xEF);
}

TEST(PrmUar, PageLayout) {
  EXPECT_EQ(kUarPageSize, 4096u);
  EXPECT_EQ(uar_page_offset(0), 0u);
  EXPECT_EQ(uar_page_offset(3), 3u * 4096);
  EXPECT_EQ(kUarCqDoorbellOff, 0x20u);
  EXPECT_EQ(kUarEqDoorbellArmOff, 0x40u);
  EXPECT_EQ(kUarEqDoorbellOff, 0x48u);
  EXPECT_EQ(kUarBlueflameOff, 0x800u);
}

}  // namespace
}  // namespace kbv::prm
