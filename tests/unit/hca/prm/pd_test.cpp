// SPDX-License-Identifier: BSD-3-Clause
// Golden tests for hca/prm/pd.hpp. Expected bytes are worked out by hand from
// Linux 6.1 include/linux/mlx5/mlx5_ifc.h (bit offsets counted from the MSB of
// byte 0; every dword big endian).
#include "hca/prm/pd.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <array>

namespace kbv::prm {
namespace {

using golden::u8;
using Buf16 = std::array<std::byte, 16>;

void expect_bytes(const Buf16& b, const std::array<uint8_t, 16>& want) {
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(u8(b, i), want[i]) << "byte " << i;
}

// alloc_pd_in: opcode bits 0x00..0x0f (bytes 0-1), uid 0x10..0x1f (bytes 2-3),
// op_mod 0x30..0x3f (bytes 6-7); the rest is reserved and must stay zero.
TEST(PrmPd, AllocPdInGolden) {
  Buf16 b{};
  Ref<alloc_pd_in> in(b.data());
  in.set(alloc_pd_in::opcode, 0x800);  // ALLOC_PD (mlx5_ifc.h MLX5_CMD_OP_ALLOC_PD)
  in.set(alloc_pd_in::uid, 0x0102);
  in.set(alloc_pd_in::op_mod, 0);
  expect_bytes(b, {0x08, 0x00, 0x01, 0x02});
  EXPECT_EQ(CRef<alloc_pd_in>(b.data()).get(alloc_pd_in::opcode), 0x800u);
}

// alloc_pd_out: pd is reserved_at_40[0x8] then pd[0x18] -> bits 0x48..0x5f =
// the low 24 bits of dword 2 = bytes 9..11.
TEST(PrmPd, AllocPdOutDecode) {
  Buf16 b{};
  b[0] = std::byte{0x00};  // status OK
  b[8] = std::byte{0xFF};  // reserved byte in front of pd: must not leak into it
  b[9] = std::byte{0xAB};
  b[10] = std::byte{0xCD};
  b[11] = std::byte{0xEF};
  CRef<alloc_pd_out> out(b.data());
  EXPECT_EQ(out.get(alloc_pd_out::status), 0u);
  EXPECT_EQ(out.get(alloc_pd_out::pd), 0xABCDEFu);
}

// dealloc_pd_in: opcode 0x801 in bytes 0-1, pd in bytes 9..11 (bit 0x48).
// A value wider than 24 bits is truncated (MLX5_SET semantics) and byte 8
// stays zero.
TEST(PrmPd, DeallocPdInGolden) {
  Buf16 b{};
  Ref<dealloc_pd_in> in(b.data());
  in.set(dealloc_pd_in::opcode, 0x801);
  in.set(dealloc_pd_in::pd, 0x7F123456);
  expect_bytes(b, {0x08, 0x01, 0, 0, 0, 0, 0, 0, 0x00, 0x12, 0x34, 0x56});
  EXPECT_EQ(in.get(dealloc_pd_in::pd), 0x123456u);
}

// Transport domains: the same shape, transport_domain at bit 0x48.
TEST(PrmPd, TransportDomainGolden) {
  Buf16 b{};
  Ref<dealloc_transport_domain_in> in(b.data());
  in.set(dealloc_transport_domain_in::opcode, 0x817);
  in.set(dealloc_transport_domain_in::op_mod, 0x0003);
  in.set(dealloc_transport_domain_in::transport_domain, 0x000102);
  expect_bytes(b, {0x08, 0x17, 0, 0, 0, 0, 0x00, 0x03, 0, 0x00, 0x01, 0x02});

  Buf16 o{};
  o[0] = std::byte{0x05};  // BAD_RES
  o[4] = std::byte{0x12};
  o[7] = std::byte{0x34};
  o[11] = std::byte{0x09};
  CRef<alloc_transport_domain_out> out(o.data());
  EXPECT_EQ(out.get(alloc_transport_domain_out::status), 0x05u);
  EXPECT_EQ(out.get(alloc_transport_domain_out::syndrome), 0x12000034u);
  EXPECT_EQ(out.get(alloc_transport_domain_out::transport_domain), 0x09u);
}

}  // namespace
}  // namespace kbv::prm
