// SPDX-License-Identifier: BSD-3-Clause
// Golden tests for hca/prm/mcg.hpp. Expected bytes are worked out by hand from
// Linux 6.1 include/linux/mlx5/mlx5_ifc.h (attach_to_mcg_in,
// detach_from_mcg_in): bit offsets count from the MSB of byte 0.
#include "hca/prm/mcg.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <vector>

namespace kbv::prm {
namespace {

using golden::expect_only;
using golden::u8;
using Buf = std::vector<std::byte>;

// IPv4-mapped multicast group ::ffff:239.1.2.3.
std::array<std::byte, 16> mgid() {
  std::array<std::byte, 16> g{};
  g[10] = g[11] = std::byte{0xFF};
  g[12] = std::byte{239};
  g[13] = std::byte{1};
  g[14] = std::byte{2};
  g[15] = std::byte{3};
  return g;
}

// attach_to_mcg_in (32 bytes): opcode bytes 0-1, qpn bits 0x48-0x5f (bytes
// 9-11), multicast_gid bits 0x80-0xff (bytes 16-31).
TEST(PrmMcg, AttachGolden) {
  Buf b(attach_to_mcg_in::kBits / 8);
  ASSERT_EQ(b.size(), 32u);
  Ref<attach_to_mcg_in> in(b.data());
  in.set(attach_to_mcg_in::opcode, 0x806);  // ATTACH_TO_MCG
  in.set(attach_to_mcg_in::qpn, 0x000123);
  in.set_bytes(attach_to_mcg_in::multicast_gid, mgid());
  expect_only(b, {{0, 0x08},
                  {1, 0x06},
                  {10, 0x01},
                  {11, 0x23},
                  {26, 0xFF},
                  {27, 0xFF},
                  {28, 239},
                  {29, 1},
                  {30, 2},
                  {31, 3}});
}

// detach_from_mcg_in has the same shape; decode it back; the outputs are the
// bare status/syndrome header.
TEST(PrmMcg, DetachDecode) {
  Buf b(detach_from_mcg_in::kBits / 8);
  b[0] = std::byte{0x08};
  b[1] = std::byte{0x07};
  b[9] = std::byte{0xFF};
  b[10] = std::byte{0xFF};
  b[11] = std::byte{0xFE};
  const auto g = mgid();
  for (std::size_t i = 0; i < 16; ++i) b[16 + i] = g[i];
  CRef<detach_from_mcg_in> in(b.data());
  EXPECT_EQ(in.get(detach_from_mcg_in::opcode), 0x807u);
  EXPECT_EQ(in.get(detach_from_mcg_in::qpn), 0xFFFFFEu);
  const auto got = in.bytes(detach_from_mcg_in::multicast_gid);
  ASSERT_EQ(got.size(), 16u);
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(got[i], g[i]) << i;

  Buf o(16);
  o[0] = std::byte{0x03};
  o[7] = std::byte{0x01};
  CRef<detach_from_mcg_out> out(o.data());
  EXPECT_EQ(out.get(detach_from_mcg_out::status), 3u);
  EXPECT_EQ(out.get(detach_from_mcg_out::syndrome), 1u);
  static_assert(attach_to_mcg_out::kBits == 0x80);
}

}  // namespace
}  // namespace kbv::prm
